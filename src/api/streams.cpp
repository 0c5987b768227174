// Streams, events and device synchronisation.
#include "api/entry.hpp"

using namespace gpumem::detail;

namespace {

status_t resolve_event(gpumem_event_t event, EventObject **out)
{
    EventObject *e = event ? event_table().get(handle_bits(event)) : nullptr;
    if (!e)
        return fail(GPUMEM_ERROR_INVALID_HANDLE,
                    "event %p is not a live gpumem event (destroyed, never created, or from before gpumem_finalize)",
                    static_cast<void *>(event));
    *out = e;
    return GPUMEM_SUCCESS;
}

status_t new_stream(Runtime &rt, void *native, bool owned, gpumem_stream_t *stream)
{
    int32_t device = current_device();
    uint64_t handle = 0;
    StreamObject *s = stream_table().create(&handle);
    s->owned = owned;
    init_stream_state(s->state, device, native, rt.backend->synchronous_streams());
    *stream = handle_from_bits<gpumem_stream_t>(handle);
    return GPUMEM_SUCCESS;
}

// Synchronise a stream and tell the pools what completed.
status_t sync_stream(Runtime &rt, StreamObject &s)
{
    uint64_t epoch = s.state.free_epoch.load(std::memory_order_acquire);
    if (status_t st = rt.backend->stream_synchronize(s.state.native))
        return st;
    after_stream_sync(s, epoch);
    return GPUMEM_SUCCESS;
}

} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_stream_create(gpumem_stream_t *stream)
{
    return entry("gpumem_stream_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(stream, "stream is NULL: pass the address of a gpumem_stream_t");
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        void *native = nullptr;
        if (status_t st = rt.backend->stream_create(device, &native))
            return st;
        return new_stream(rt, native, true, stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_wrap(void *native, gpumem_stream_t *stream)
{
    return entry("gpumem_stream_wrap", [&](Runtime &rt) {
        GPUMEM_REQUIRE(stream, "stream is NULL: pass the address of a gpumem_stream_t");
        GPUMEM_REQUIRE(native, "native is NULL: the default stream needs no wrapper, pass NULL as the gpumem_stream_t");
        if (status_t st = check_device(rt, current_device()))
            return st;
        return new_stream(rt, native, false, stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_destroy(gpumem_stream_t stream)
{
    return entry("gpumem_stream_destroy", [&](Runtime &rt) {
        if (!stream)
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "the default stream (NULL) cannot be destroyed");
        StreamObject *s = nullptr;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        // Its work must finish before its cached pool blocks serve others.
        if (status_t st = rt.backend->stream_synchronize(s->state.native))
            return st;
        if (!stream_table().retire(handle_bits(stream)))
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "stream %p was destroyed by another thread", static_cast<void *>(stream));
        int32_t device = s->state.device;
        pool::on_stream_destroyed(s->state);
        status_t st = s->owned ? rt.backend->stream_destroy(s->state.native) : GPUMEM_SUCCESS;
        s->state.native = nullptr;
        stream_table().recycle(handle_bits(stream));
        pool::apply_release_thresholds(device);
        return st;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_synchronize(gpumem_stream_t stream)
{
    return entry("gpumem_stream_synchronize", [&](Runtime &rt) {
        StreamObject *s = nullptr;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        return sync_stream(rt, *s);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_query(gpumem_stream_t stream)
{
    return entry("gpumem_stream_query", [&](Runtime &rt) {
        StreamObject *s = nullptr;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        uint64_t epoch = s->state.free_epoch.load(std::memory_order_acquire);
        status_t st = rt.backend->stream_query(s->state.native);
        if (st == GPUMEM_SUCCESS)
            pool::on_completed(s->state, epoch);
        else if (st == GPUMEM_ERROR_BUSY)
            fail(GPUMEM_ERROR_BUSY, "the stream still has pending work");
        return st;
    });
}

GPUMEM_EXPORT void *gpumem_stream_native(gpumem_stream_t stream)
{
    try {
        Runtime *rt = runtime_if_ready();
        if (!rt || !stream)
            return nullptr;
        StreamObject *s = stream_table().get(handle_bits(stream));
        return s ? s->state.native : nullptr;
    } catch (...) {
        return nullptr;
    }
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_create(gpumem_event_t *event)
{
    return entry("gpumem_event_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(event, "event is NULL: pass the address of a gpumem_event_t");
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        void *native = nullptr;
        if (status_t st = rt.backend->event_create(device, &native))
            return st;
        uint64_t handle = 0;
        EventObject *e = event_table().create(&handle);
        e->native = native;
        e->device = device;
        e->recorded = false;
        e->mark = EventMark{};
        *event = handle_from_bits<gpumem_event_t>(handle);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_destroy(gpumem_event_t event)
{
    return entry("gpumem_event_destroy", [&](Runtime &rt) {
        EventObject *e = nullptr;
        if (status_t st = resolve_event(event, &e))
            return st;
        if (!event_table().retire(handle_bits(event)))
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "event %p was destroyed by another thread", static_cast<void *>(event));
        status_t st = rt.backend->event_destroy(e->native);
        e->native = nullptr;
        event_table().recycle(handle_bits(event));
        return st;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_record(gpumem_event_t event, gpumem_stream_t stream)
{
    return entry("gpumem_event_record", [&](Runtime &rt) {
        EventObject *e = nullptr;
        StreamObject *s = nullptr;
        if (status_t st = resolve_event(event, &e))
            return st;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        // The mark is taken before the record: frees enqueued before it are covered.
        EventMark mark = pool::mark(s->state);
        if (status_t st = rt.backend->event_record(e->native, s->state.native))
            return st;
        e->mark = mark;
        e->recorded = true;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_synchronize(gpumem_event_t event)
{
    return entry("gpumem_event_synchronize", [&](Runtime &rt) {
        EventObject *e = nullptr;
        if (status_t st = resolve_event(event, &e))
            return st;
        if (status_t st = rt.backend->event_synchronize(e->native))
            return st;
        if (e->recorded && e->mark.stream && e->mark.stream->id == e->mark.stream_id) {
            pool::on_completed(*e->mark.stream, e->mark.epoch);
            pool::apply_release_thresholds(e->device);
        }
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_query(gpumem_event_t event)
{
    return entry("gpumem_event_query", [&](Runtime &rt) {
        EventObject *e = nullptr;
        if (status_t st = resolve_event(event, &e))
            return st;
        status_t st = rt.backend->event_query(e->native);
        if (st == GPUMEM_SUCCESS && e->recorded && e->mark.stream && e->mark.stream->id == e->mark.stream_id)
            pool::on_completed(*e->mark.stream, e->mark.epoch);
        else if (st == GPUMEM_ERROR_BUSY)
            fail(GPUMEM_ERROR_BUSY, "the event has not completed yet");
        return st;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_wait_event(gpumem_stream_t stream, gpumem_event_t event)
{
    return entry("gpumem_stream_wait_event", [&](Runtime &rt) {
        EventObject *e = nullptr;
        StreamObject *s = nullptr;
        if (status_t st = resolve_event(event, &e))
            return st;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        if (status_t st = rt.backend->stream_wait_event(s->state.native, e->native))
            return st;
        if (e->recorded)
            pool::add_dependency(s->state, e->mark);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_event_elapsed_ms(float *ms, gpumem_event_t start, gpumem_event_t end)
{
    return entry("gpumem_event_elapsed_ms", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ms, "ms is NULL: pass the address of a float");
        EventObject *a = nullptr, *b = nullptr;
        if (status_t st = resolve_event(start, &a))
            return st;
        if (status_t st = resolve_event(end, &b))
            return st;
        GPUMEM_REQUIRE(a->recorded && b->recorded, "both events must be recorded (gpumem_event_record) before "
                                                   "their elapsed time can be read");
        return rt.backend->event_elapsed_ms(ms, a->native, b->native);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_synchronize(void)
{
    return entry("gpumem_device_synchronize", [&](Runtime &rt) {
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        EpochSnapshot snapshot = snapshot_epochs(rt, device);
        if (status_t st = rt.backend->device_synchronize(device))
            return st;
        after_device_sync(snapshot, device);
        return GPUMEM_SUCCESS;
    });
}
