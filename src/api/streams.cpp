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
