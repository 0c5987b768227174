#include "core/streams.hpp"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "base/host_fn.hpp"
#include "core/capture.hpp"
#include "core/devices.hpp"
#include "core/pools/own_pools.hpp"
#include "core/pools/pools.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {

EventTable &event_table() { static EventTable table; return table; }

namespace {

std::atomic<uint64_t> g_next_stream_id{1};

// A stream object's identity (its slot's handle, state.id, device, native)
// changes only under this lock held exclusively: when a stream is published
// and when it is retired.  Whoever reaches a stream by a handle it does not own
// (gpumem_device_synchronize walking every stream, an event whose stream may
// be gone) holds it shared while it reads that identity and acts on it, so it
// never reads a stream being born, nor moves a newer stream's epochs in the
// same slot.  Destruction itself (pool bookkeeping, the backend) runs outside.
std::shared_mutex g_lifecycle;

// What an event held at one moment (event_record writes it on other threads).
struct EventSnapshot {
    bool recorded = false;
    EventMark mark;
};

EventSnapshot snapshot(EventObject &e)
{
    std::lock_guard<std::mutex> lock(e.mutex);
    return EventSnapshot{e.recorded.load(std::memory_order_relaxed), e.mark};
}

// Frees up to the mark have finished, if its stream still is the one marked.
void complete_mark(const EventMark &mark)
{
    std::shared_lock<std::shared_mutex> lock(g_lifecycle);
    if (mark.stream && mark.stream->id == mark.stream_id)
        own_pools::stream_passed(*mark.stream, mark.epoch);
}

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

} // namespace

status_t StreamHandles::new_stream(void *native, int32_t device, bool owned, gpumem_stream_t *stream,
                                   uint32_t flags, int32_t priority)
{
    StreamTable::Reservation s(stream_table());
    s->owned = owned;
    s->flags = flags;
    s->priority = priority;
    uint64_t handle;
    {
        // The slot's previous stream may still be named by events (complete_mark).
        std::unique_lock<std::shared_mutex> lock(g_lifecycle);
        init_stream_state(s->state, device, native, runtime_.synchronous_streams());
        s->state.handle = handle_from_bits<void *>(s.handle());
        // Live only now that it is written: device-wide walks read every live stream.
        handle = s.publish();
    }
    *stream = handle_from_bits<gpumem_stream_t>(handle);
    return GPUMEM_SUCCESS;
}

status_t resolve_stream(const Devices &devices, gpumem_stream_t stream, StreamObject **out)
{
    return resolve_stream_on(devices, stream, stream ? 0 : current_device(), out);
}

status_t resolve_stream_on(const Devices &devices, gpumem_stream_t stream, int32_t device, StreamObject **out)
{
    if (!stream) {
        if (status_t st = devices.check(device))
            return st;
        *out = &devices[device].default_stream;
        return GPUMEM_SUCCESS;
    }
    StreamObject *s = stream_table().get(handle_bits(stream));
    if (!s)
        return fail(GPUMEM_ERROR_INVALID_HANDLE,
                    "stream %p is not a live gpumem stream (destroyed, never created, or from before gpumem_finalize)",
                    static_cast<void *>(stream));
    *out = s;
    return GPUMEM_SUCCESS;
}

void init_stream_state(StreamState &state, int32_t device, void *native, bool synchronous)
{
    state.id = g_next_stream_id.fetch_add(1, std::memory_order_relaxed);
    state.device = device;
    state.native = native;
    state.synchronous = synchronous;
    // on_stream_destroyed reset them; an event of the slot's previous stream may have moved them since.
    state.free_epoch.store(0, std::memory_order_relaxed);
    state.completed_epoch.store(0, std::memory_order_relaxed);
}

status_t StreamHandles::synchronize_device(int32_t device, const std::function<status_t(StreamState &)> &while_idle)
{
    if (status_t st = devices_.check(device))
        return st;
    // The epochs before the backend synchronises are the ones it completes.
    struct Seen {
        StreamState *state;
        uint64_t handle; // 0: the default stream, never destroyed
        uint64_t epoch;
    };
    std::vector<Seen> snapshot;
    StreamState &def = devices_[device].default_stream.state;
    snapshot.push_back({&def, 0, def.close_epoch()});
    {
        // Other threads create and destroy streams meanwhile (g_lifecycle).
        std::shared_lock<std::shared_mutex> lock(g_lifecycle);
        for (uint64_t h : stream_table().live_handles())
            if (StreamObject *s = stream_table().get(h))
                if (s->state.device == device)
                    snapshot.push_back({&s->state, h, s->state.close_epoch()});
    }
    if (status_t st = runtime_.device_synchronize(device))
        return st;
    if (while_idle) {
        if (status_t st = while_idle(def))
            return st;
        snapshot.push_back({&def, 0, def.close_epoch()});
    }
    {
        // A stream destroyed since has had its epochs reset, or its slot reused.
        std::shared_lock<std::shared_mutex> lock(g_lifecycle);
        for (const Seen &seen : snapshot)
            if (!seen.handle || stream_table().get(seen.handle))
                own_pools::stream_passed(*seen.state, seen.epoch);
    }
    pools_.apply_release_thresholds(device);
    trace::on_sync(nullptr, device);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::create(gpumem_stream_t *stream, uint32_t flags, int32_t priority)
{
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    // Without the runtime's priorities every stream gets the one priority, 0.
    if (!devices_[device].caps.stream_priorities)
        priority = 0;
    void *native = nullptr;
    if (status_t st = runtime_.stream_create(device, flags, priority, &native))
        return st;
    return new_stream(native, device, true, stream, flags, priority);
}

int32_t StreamHandles::priorities_level(int32_t device) const
{
    const DeviceCaps &caps = devices_[device].caps;
    if (!caps.stream_priorities)
        return GPUMEM_SUPPORT_NONE;
    return caps.cpu_device ? GPUMEM_SUPPORT_EMULATED : GPUMEM_SUPPORT_NATIVE;
}

int32_t StreamHandles::host_funcs_level(int32_t device) const
{
    const DeviceCaps &caps = devices_[device].caps;
    return caps.host_funcs && !caps.cpu_device ? GPUMEM_SUPPORT_NATIVE : GPUMEM_SUPPORT_EMULATED;
}

int32_t StreamHandles::ipc_events_level(int32_t device) const
{
    const DeviceCaps &caps = devices_[device].caps;
    if (!caps.ipc_events)
        return GPUMEM_SUPPORT_NONE;
    return caps.cpu_device ? GPUMEM_SUPPORT_EMULATED : GPUMEM_SUPPORT_NATIVE;
}

// The default stream is the legacy one: blocking, priority 0, the device's.
// A stream of a runtime that can say is asked (a wrapped stream's flags are
// the application's; a priority is the one the runtime clamped); otherwise
// what gpumem made it with is the answer.
status_t StreamHandles::get_flags(gpumem_stream_t stream, uint32_t *flags)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    if (!stream || !devices_[s->state.device].caps.stream_priorities) {
        *flags = stream ? s->flags : GPUMEM_STREAM_DEFAULT;
        return GPUMEM_SUCCESS;
    }
    return runtime_.stream_flags(s->state.device, s->state.native, flags);
}

status_t StreamHandles::get_priority(gpumem_stream_t stream, int32_t *priority)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    if (!stream || !devices_[s->state.device].caps.stream_priorities) {
        *priority = stream ? s->priority : 0;
        return GPUMEM_SUCCESS;
    }
    return runtime_.stream_priority(s->state.device, s->state.native, priority);
}

status_t StreamHandles::get_device(gpumem_stream_t stream, int32_t *device)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    *device = s->state.device;
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::priority_range(int32_t device, int32_t *least, int32_t *greatest)
{
    if (status_t st = devices_.check(device))
        return st;
    if (!devices_[device].caps.stream_priorities) {
        *least = *greatest = 0;
        return GPUMEM_SUCCESS;
    }
    return runtime_.priority_range(device, least, greatest);
}

// Where the runtime runs no host function (DeviceCaps::host_funcs), gpumem
// waits for the stream's work and calls `fn` before returning: it runs after
// the earlier work, and the later work is enqueued after it ran.  A capturing
// stream cannot record that: refused, before the wait (which the capture
// would refuse, and end invalidated).
status_t StreamHandles::launch_host_func(gpumem_stream_t stream, void (*fn)(void *), void *user)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    if (devices_[s->state.device].caps.host_funcs)
        return runtime_.launch_host_func(s->state.device, s->state.native, fn, user);
    if (status_t st = capture_.refuse_if_capturing(s->state, "a host function this runtime cannot run in stream "
                                                             "order (gpumem would wait for the stream and call it)"))
        return st;
    if (status_t st = synchronize(stream))
        return st;
    run_host_fn(fn, user);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::wrap(void *native, int32_t device, gpumem_stream_t *stream)
{
    if (status_t st = devices_.check(device))
        return st;
    // A native stream names its device; the caller's guess serves only where
    // the runtime cannot say.
    if (status_t st = runtime_.stream_device(native, &device))
        return st;
    return new_stream(native, device, false, stream);
}

namespace {
// The wrappers this thread used last: a framework allocates and frees on the
// same few streams, and the hot path then takes no lock.  A hit is checked
// against the live table (the wrapper may have been destroyed since).
struct WrapMemo {
    void *native = nullptr;
    gpumem_stream_t wrapper = nullptr;
};
constexpr unsigned k_wrap_memos = 4;
__attribute__((tls_model("initial-exec"))) thread_local WrapMemo t_wraps[k_wrap_memos];
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_next_wrap = 0;
} // namespace

// The wrapper of `native`, made on first use (one per native stream).
status_t StreamHandles::wrap_once(void *native, int32_t device, gpumem_stream_t *out)
{
    if (!native) {
        *out = nullptr;
        return GPUMEM_SUCCESS;
    }
    for (const WrapMemo &m : t_wraps) {
        if (m.native != native)
            continue;
        StreamObject *s = stream_table().get(handle_bits(m.wrapper));
        if (s && s->state.native == native) {
            *out = m.wrapper;
            return GPUMEM_SUCCESS;
        }
    }
    static std::mutex wrap_mutex;
    static std::unordered_map<void *, gpumem_stream_t> wrapped; // native stream -> wrapper
    gpumem_stream_t stream = nullptr;
    {
        std::lock_guard<std::mutex> lock(wrap_mutex);
        auto it = wrapped.find(native);
        if (it != wrapped.end() && stream_table().get(handle_bits(it->second))) {
            stream = it->second;
        } else {
            if (status_t st = wrap(native, device, &stream))
                return st;
            wrapped[native] = stream;
        }
    }
    t_wraps[t_next_wrap++ % k_wrap_memos] = WrapMemo{native, stream};
    *out = stream;
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::destroy(gpumem_stream_t stream)
{
    if (!stream)
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "the default stream (NULL) cannot be destroyed");
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    // Its work must finish before its cached pool blocks serve others.
    if (status_t st = runtime_.stream_synchronize(s->state.device, s->state.native))
        return st;
    bool retired;
    {
        std::unique_lock<std::shared_mutex> lock(g_lifecycle);
        retired = stream_table().retire(handle_bits(stream));
    }
    if (!retired)
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "stream %p was destroyed by another thread", static_cast<void *>(stream));
    int32_t device = s->state.device;
    own_pools::stream_destroyed(s->state);
    status_t st = s->owned ? runtime_.stream_destroy(device, s->state.native) : GPUMEM_SUCCESS;
    s->state.native = nullptr;
    stream_table().recycle(handle_bits(stream));
    pools_.apply_release_thresholds(device);
    return st;
}

status_t StreamHandles::synchronize(gpumem_stream_t stream)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    if (!pools_.work_at_sync()) [[likely]] {
        status_t st = runtime_.stream_synchronize(s->state.device, s->state.native);
        if (st == GPUMEM_SUCCESS)
            trace::on_sync(stream, s->state.device);
        return st;
    }
    uint64_t epoch = s->state.close_epoch();
    if (status_t st = runtime_.stream_synchronize(s->state.device, s->state.native))
        return st;
    own_pools::stream_passed(s->state, epoch);
    pools_.apply_release_thresholds(s->state.device);
    trace::on_sync(stream, s->state.device);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::query(gpumem_stream_t stream)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    const bool ordering = own_pools::ordering_in_use();
    uint64_t epoch = ordering ? s->state.close_epoch() : 0;
    status_t st = runtime_.stream_query(s->state.device, s->state.native);
    if (st == GPUMEM_SUCCESS && ordering)
        own_pools::stream_passed(s->state, epoch);
    return st;
}

void *StreamHandles::native_of(gpumem_stream_t stream)
{
    StreamObject *s = stream ? stream_table().get(handle_bits(stream)) : nullptr;
    return s ? s->state.native : nullptr;
}

void StreamHandles::new_event(void *native, int32_t device, uint32_t flags, gpumem_event_t *event)
{
    EventTable::Reservation e(event_table());
    e->native = native;
    e->device = device;
    e->flags = flags;
    {
        std::lock_guard<std::mutex> lock(e->mutex);
        e->recorded.store(false, std::memory_order_relaxed);
        e->mark = EventMark{};
    }
    *event = handle_from_bits<gpumem_event_t>(e.publish());
}

status_t StreamHandles::event_create(gpumem_event_t *event, uint32_t flags)
{
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    if ((flags & GPUMEM_EVENT_INTERPROCESS) && !devices_[device].caps.ipc_events)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "device %d cannot share events between processes (GPUMEM_EVENT_INTERPROCESS): the %s runtime has "
                    "no IPC events; order the processes another way",
                    device, devices_.backend_id() == GPUMEM_BACKEND_HIP ? "HIP" : "CUDA");
    void *native = nullptr;
    if (status_t st = runtime_.event_create(device, flags, &native))
        return st;
    new_event(native, device, flags, event);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::ipc_get_event_handle(gpumem_ipc_event_handle_t *handle, gpumem_event_t event)
{
    EventObject *e = nullptr;
    if (status_t st = resolve_event(event, &e))
        return st;
    if (!(e->flags & GPUMEM_EVENT_INTERPROCESS))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "event %p was made without GPUMEM_EVENT_INTERPROCESS: only such an event is shared; create it "
                    "with gpumem_event_create_with_flags(&event, GPUMEM_EVENT_INTERPROCESS | "
                    "GPUMEM_EVENT_DISABLE_TIMING)",
                    static_cast<void *>(event));
    return runtime_.event_ipc_handle(e->device, e->native, handle);
}

status_t StreamHandles::ipc_open_event_handle(gpumem_event_t *event, const gpumem_ipc_event_handle_t *handle)
{
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    if (!devices_[device].caps.ipc_events)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "device %d cannot open events of other processes: the runtime has no IPC events", device);
    void *native = nullptr;
    if (status_t st = runtime_.event_ipc_open(device, handle, &native))
        return st;
    new_event(native, device, GPUMEM_EVENT_INTERPROCESS | GPUMEM_EVENT_DISABLE_TIMING, event);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::event_destroy(gpumem_event_t event)
{
    EventObject *e = nullptr;
    if (status_t st = resolve_event(event, &e))
        return st;
    if (!event_table().retire(handle_bits(event)))
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "event %p was destroyed by another thread", static_cast<void *>(event));
    status_t st = runtime_.event_destroy(e->device, e->native);
    e->native = nullptr;
    event_table().recycle(handle_bits(event));
    return st;
}

status_t StreamHandles::event_record(gpumem_event_t event, gpumem_stream_t stream)
{
    EventObject *e = nullptr;
    StreamObject *s = nullptr;
    if (status_t st = resolve_event(event, &e))
        return st;
    // NULL: the event's device's default stream (the event's device decides).
    if (status_t st = resolve_stream_on(devices_, stream, e->device, &s))
        return st;
    if (s->state.device != e->device)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "event %p belongs to device %d and stream %p to device %d; the runtime records an event only on "
                    "a stream of its own device: create the event while device %d is current",
                    static_cast<void *>(event), e->device, static_cast<void *>(stream), s->state.device,
                    s->state.device);
    if (!own_pools::ordering_in_use()) [[likely]] {
        if (status_t st = runtime_.event_record(e->device, e->native, s->state.native))
            return st;
        e->recorded.store(true, std::memory_order_release);
        return GPUMEM_SUCCESS;
    }
    // The mark is taken before the record: frees enqueued before it are covered.
    // Held across both, so that the mark readers see is that of the latest
    // record (two threads recording the same event cannot cross).
    std::lock_guard<std::mutex> lock(e->mutex);
    EventMark mark = own_pools::event_recorded(s->state);
    if (status_t st = runtime_.event_record(e->device, e->native, s->state.native))
        return st;
    e->mark = mark;
    e->recorded.store(true, std::memory_order_release);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::event_synchronize(gpumem_event_t event)
{
    EventObject *e = nullptr;
    if (status_t st = resolve_event(event, &e))
        return st;
    if (!pools_.work_at_sync()) [[likely]] {
        status_t st = runtime_.event_synchronize(e->device, e->native);
        if (st == GPUMEM_SUCCESS)
            trace::on_sync(nullptr, e->device);
        return st;
    }
    // Read before the vendor call: a record racing it only makes the
    // vendor wait for more than the mark claims, never less.
    EventSnapshot seen = snapshot(*e);
    if (status_t st = runtime_.event_synchronize(e->device, e->native))
        return st;
    if (seen.recorded) {
        complete_mark(seen.mark);
        pools_.apply_release_thresholds(e->device);
    }
    // The stream the event was recorded on (its handle then; NULL: a default stream).
    void *recorded_on = seen.recorded && seen.mark.stream ? seen.mark.stream->handle : nullptr;
    trace::on_sync(static_cast<gpumem_stream_t>(recorded_on), e->device);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::event_query(gpumem_event_t event)
{
    EventObject *e = nullptr;
    if (status_t st = resolve_event(event, &e))
        return st;
    if (!own_pools::ordering_in_use()) [[likely]]
        return runtime_.event_query(e->device, e->native);
    EventSnapshot seen = snapshot(*e); // before the vendor call, as in event_synchronize
    status_t st = runtime_.event_query(e->device, e->native);
    if (st == GPUMEM_SUCCESS && seen.recorded)
        complete_mark(seen.mark);
    return st;
}

status_t StreamHandles::wait_event(gpumem_stream_t stream, gpumem_event_t event)
{
    EventObject *e = nullptr;
    StreamObject *s = nullptr;
    if (status_t st = resolve_event(event, &e))
        return st;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    if (!own_pools::ordering_in_use()) [[likely]]
        return runtime_.stream_wait_event(s->state.device, s->state.native, e->native);
    EventSnapshot seen = snapshot(*e); // before the vendor call, as in event_synchronize
    if (status_t st = runtime_.stream_wait_event(s->state.device, s->state.native, e->native))
        return st;
    if (seen.recorded)
        own_pools::stream_waited(s->state, seen.mark);
    return GPUMEM_SUCCESS;
}

status_t StreamHandles::elapsed_ms(float *ms, gpumem_event_t start, gpumem_event_t end)
{
    EventObject *a = nullptr, *b = nullptr;
    if (status_t st = resolve_event(start, &a))
        return st;
    if (status_t st = resolve_event(end, &b))
        return st;
    // A timing-free event has no timestamps: said here on every backend (the
    // runtimes answer INVALID_HANDLE, cuda_probe rows: elapsed_disable_timing).
    for (const EventObject *t : {a, b})
        if (t->flags & GPUMEM_EVENT_DISABLE_TIMING)
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "the %s event %p was made with GPUMEM_EVENT_DISABLE_TIMING (or opened from another "
                        "process): it has no timestamps; time with events made without that flag",
                        t == a ? "start" : "end", static_cast<void *>(t == a ? start : end));
    if (!(snapshot(*a).recorded && snapshot(*b).recorded))
        return fail(GPUMEM_ERROR_INVALID_VALUE, "both events must be recorded (gpumem_event_record) before their "
                    "elapsed time can be read");
    return runtime_.event_elapsed_ms(a->device, ms, a->native, b->native);
}

void StreamHandles::release_all(size_t *leaked)
{
    for (uint64_t h : event_table().live_handles()) {
        if (EventObject *e = event_table().get(h)) {
            ++*leaked;
            runtime_.event_destroy(e->device, e->native);
            event_table().destroy(h);
        }
    }
    for (uint64_t h : stream_table().live_handles()) {
        if (StreamObject *s = stream_table().get(h)) {
            ++*leaked;
            {
                std::unique_lock<std::shared_mutex> lock(g_lifecycle);
                if (!stream_table().retire(h))
                    continue;
            }
            own_pools::stream_destroyed(s->state);
            if (s->owned)
                runtime_.stream_destroy(s->state.device, s->state.native);
            stream_table().recycle(h);
        }
    }
}

} // namespace gpumem::detail
