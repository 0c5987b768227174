// Streams, events and device synchronisation.
#include "api/entry.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT gpumem_status_t gpumem_stream_create(gpumem_stream_t *stream)
{
    return entry("gpumem_stream_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(stream, "stream is NULL: pass the address of a gpumem_stream_t");
        return rt.streams.create(stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_wrap(void *native, gpumem_stream_t *stream)
{
    return entry("gpumem_stream_wrap", [&](Runtime &rt) {
        GPUMEM_REQUIRE(stream, "stream is NULL: pass the address of a gpumem_stream_t");
        GPUMEM_REQUIRE(native, "native is NULL: the default stream needs no wrapper, pass NULL as the gpumem_stream_t");
        return rt.streams.wrap(native, current_device(), stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_destroy(gpumem_stream_t stream)
{
    return entry("gpumem_stream_destroy", [&](Runtime &rt) { return rt.streams.destroy(stream); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_synchronize(gpumem_stream_t stream)
{
    return entry("gpumem_stream_synchronize", [&](Runtime &rt) { return rt.streams.synchronize(stream); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_query(gpumem_stream_t stream)
{
    return entry("gpumem_stream_query", [&](Runtime &rt) { return rt.streams.query(stream); });
}

GPUMEM_EXPORT void *gpumem_stream_native(gpumem_stream_t stream)
{
    try {
        if (!runtime_if_ready() || !stream)
            return nullptr;
        return StreamHandles::native_of(stream);
    } catch (...) {
        return nullptr;
    }
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_create(gpumem_event_t *event)
{
    return entry("gpumem_event_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(event, "event is NULL: pass the address of a gpumem_event_t");
        return rt.streams.event_create(event);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_destroy(gpumem_event_t event)
{
    return entry("gpumem_event_destroy", [&](Runtime &rt) { return rt.streams.event_destroy(event); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_record(gpumem_event_t event, gpumem_stream_t stream)
{
    return entry("gpumem_event_record", [&](Runtime &rt) { return rt.streams.event_record(event, stream); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_synchronize(gpumem_event_t event)
{
    return entry("gpumem_event_synchronize", [&](Runtime &rt) { return rt.streams.event_synchronize(event); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_query(gpumem_event_t event)
{
    return entry("gpumem_event_query", [&](Runtime &rt) { return rt.streams.event_query(event); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_wait_event(gpumem_stream_t stream, gpumem_event_t event)
{
    return entry("gpumem_stream_wait_event", [&](Runtime &rt) { return rt.streams.wait_event(stream, event); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_elapsed_ms(float *ms, gpumem_event_t start, gpumem_event_t end)
{
    return entry("gpumem_event_elapsed_ms", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ms, "ms is NULL: pass the address of a float");
        return rt.streams.elapsed_ms(ms, start, end);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_synchronize(void)
{
    return entry("gpumem_device_synchronize", [&](Runtime &rt) { return devices::synchronize(rt); });
}

// --- Streams and events as programs create them (0.5) ---------------------------

namespace {
constexpr uint32_t k_stream_flags = GPUMEM_STREAM_NON_BLOCKING;
constexpr uint32_t k_event_flags = GPUMEM_EVENT_BLOCKING_SYNC | GPUMEM_EVENT_DISABLE_TIMING | GPUMEM_EVENT_INTERPROCESS;
} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_stream_create_with_flags(gpumem_stream_t *stream, uint32_t flags,
                                                              int32_t priority)
{
    return entry("gpumem_stream_create_with_flags", [&](Runtime &rt) {
        GPUMEM_REQUIRE(stream, "stream is NULL: pass the address of a gpumem_stream_t");
        GPUMEM_REQUIRE(!(flags & ~k_stream_flags),
                       "flags 0x%x has unknown bits: give GPUMEM_STREAM_DEFAULT or GPUMEM_STREAM_NON_BLOCKING", flags);
        return rt.streams.create(stream, flags, priority);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_stream_priority_range(int32_t *least, int32_t *greatest,
                                                                      int32_t device)
{
    return entry("gpumem_device_get_stream_priority_range", [&](Runtime &rt) {
        int32_t lo = 0, hi = 0;
        if (status_t st = rt.streams.priority_range(device, &lo, &hi))
            return st;
        if (least)
            *least = lo;
        if (greatest)
            *greatest = hi;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_get_flags(uint32_t *flags, gpumem_stream_t stream)
{
    return entry("gpumem_stream_get_flags", [&](Runtime &rt) {
        GPUMEM_REQUIRE(flags, "flags is NULL: pass the address of a uint32_t");
        return rt.streams.get_flags(stream, flags);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_get_priority(int32_t *priority, gpumem_stream_t stream)
{
    return entry("gpumem_stream_get_priority", [&](Runtime &rt) {
        GPUMEM_REQUIRE(priority, "priority is NULL: pass the address of an int32_t");
        return rt.streams.get_priority(stream, priority);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_get_device(int32_t *device, gpumem_stream_t stream)
{
    return entry("gpumem_stream_get_device", [&](Runtime &rt) {
        GPUMEM_REQUIRE(device, "device is NULL: pass the address of an int32_t");
        return rt.streams.get_device(stream, device);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_create_with_flags(gpumem_event_t *event, uint32_t flags)
{
    return entry("gpumem_event_create_with_flags", [&](Runtime &rt) {
        GPUMEM_REQUIRE(event, "event is NULL: pass the address of a gpumem_event_t");
        GPUMEM_REQUIRE(!(flags & ~k_event_flags),
                       "flags 0x%x has unknown bits: use GPUMEM_EVENT_BLOCKING_SYNC, _DISABLE_TIMING and _INTERPROCESS",
                       flags);
        GPUMEM_REQUIRE(!(flags & GPUMEM_EVENT_INTERPROCESS) || (flags & GPUMEM_EVENT_DISABLE_TIMING),
                       "GPUMEM_EVENT_INTERPROCESS needs GPUMEM_EVENT_DISABLE_TIMING: an event shared between processes "
                       "has no timestamps; pass both");
        return rt.streams.event_create(event, flags);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_ipc_get_event_handle(gpumem_ipc_event_handle_t *handle, gpumem_event_t event)
{
    return entry("gpumem_ipc_get_event_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the address of a gpumem_ipc_event_handle_t");
        return rt.streams.ipc_get_event_handle(handle, event);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_ipc_open_event_handle(gpumem_event_t *event,
                                                           const gpumem_ipc_event_handle_t *handle)
{
    return entry("gpumem_ipc_open_event_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(event, "event is NULL: pass the address of a gpumem_event_t");
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the bytes gpumem_ipc_get_event_handle gave");
        return rt.streams.ipc_open_event_handle(event, handle);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_launch_host_func(gpumem_stream_t stream, gpumem_host_fn_t fn, void *user)
{
    return entry("gpumem_launch_host_func", [&](Runtime &rt) {
        GPUMEM_REQUIRE(fn, "fn is NULL: pass the function to run in the stream's order");
        return rt.streams.launch_host_func(stream, fn, user);
    });
}
