// Streams and events: handles over the backend's, and what the built-in pool
// learns from them (frees that completed, event dependencies).
#pragma once

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "core/handles.hpp"
#include "pool/stream_state.hpp"
#include "base/error.hpp"

namespace gpumem::detail {

struct Runtime;
class Devices;

struct StreamObject {
    StreamState state;
    bool owned = false; // false for wrapped native streams
    // What it was made with (GPUMEM_STREAM_*, the priority asked for): the
    // answers where the runtime cannot say (DeviceCaps::stream_priorities).
    uint32_t flags = 0;
    int32_t priority = 0;
};

struct EventObject {
    void *native = nullptr; // set before the handle is published, then read-only
    int32_t device = 0;
    uint32_t flags = 0; // GPUMEM_EVENT_*, set with `native`
    // gpumem_event_record writes these while other threads query, synchronise
    // or wait on the event: the mark always under the mutex (snapshot()).
    // Before any own pool exists there is no mark, and `recorded` alone is
    // written, without the mutex.
    std::mutex mutex;
    std::atomic<bool> recorded{false};
    EventMark mark;
};

using StreamTable = HandleTable<StreamObject, HandleType::stream>;
using EventTable = HandleTable<EventObject, HandleType::event>;
// Tables outlive runtimes, so a handle from before gpumem_finalize is still
// decodable (and dead) afterwards.  The stream table's lookup is inline: the
// stream-ordered allocation and free look a stream up on every call.
inline StreamTable &stream_table()
{
    static StreamTable table;
    return table;
}
EventTable &event_table();

// A stream handle (NULL = the current device's default stream).
status_t resolve_stream(const Devices &devices, gpumem_stream_t stream, StreamObject **out);
// The same, with NULL meaning `device`'s default stream (a call placed on
// `device`: core/placement.hpp).
status_t resolve_stream_on(const Devices &devices, gpumem_stream_t stream, int32_t device, StreamObject **out);
// The hot paths' form of resolve_stream_on: a live handle is found inline;
// NULL (a default stream) and a dead handle (its message) take the call.
inline status_t resolve_stream_fast(const Devices &devices, gpumem_stream_t stream, int32_t device, StreamObject **out)
{
    if (stream) [[likely]] {
        if (StreamObject *s = stream_table().get(handle_bits(stream))) [[likely]] {
            *out = s;
            return GPUMEM_SUCCESS;
        }
    }
    return resolve_stream_on(devices, stream, device, out);
}
// A fresh identity for a stream object (new or recycled), with no epochs.
void init_stream_state(StreamState &state, int32_t device, void *native, bool synchronous);

class Pools;
class Streams;
class Capture;

// gpumem's stream and event handles over the backend's, and what the own
// pool learns from them.
class StreamHandles {
public:
    // `runtime`: the backend's streams and events; `pools`: told when work
    // completed (release thresholds, trims at a synchronisation); `devices`:
    // checks and each device's default stream.
    // `capture`: whether a stream captures (a host function gpumem would run
    // itself cannot be recorded in a graph).
    StreamHandles(Streams &runtime, Pools &pools, const Devices &devices, const Capture &capture)
        : runtime_(runtime), pools_(pools), devices_(devices), capture_(capture)
    {
    }
    StreamHandles(const StreamHandles &) = delete;
    StreamHandles &operator=(const StreamHandles &) = delete;

    // `flags` GPUMEM_STREAM_*, checked by the caller.
    status_t create(gpumem_stream_t *stream, uint32_t flags = 0, int32_t priority = 0);
    status_t get_flags(gpumem_stream_t stream, uint32_t *flags);
    status_t get_priority(gpumem_stream_t stream, int32_t *priority);
    status_t get_device(gpumem_stream_t stream, int32_t *device);
    status_t priority_range(int32_t device, int32_t *least, int32_t *greatest);
    // A stream's level of priorities, host functions and shared events (GPUMEM_SUPPORT_*).
    int32_t priorities_level(int32_t device) const;
    int32_t host_funcs_level(int32_t device) const;
    int32_t ipc_events_level(int32_t device) const;
    status_t launch_host_func(gpumem_stream_t stream, void (*fn)(void *), void *user);
    // `device`: the native stream's, where the runtime cannot say (the current
    // device for gpumem_stream_wrap; the framework's for its hooks).
    status_t wrap(void *native, int32_t device, gpumem_stream_t *stream);
    // Framework hooks: each native stream is wrapped once and the wrapper kept.
    status_t wrap_once(void *native, int32_t device, gpumem_stream_t *stream);
    status_t destroy(gpumem_stream_t stream);
    status_t synchronize(gpumem_stream_t stream);
    status_t query(gpumem_stream_t stream);
    static void *native_of(gpumem_stream_t stream);

    // `flags` GPUMEM_EVENT_*, checked by the caller.
    status_t event_create(gpumem_event_t *event, uint32_t flags = 0);
    status_t ipc_get_event_handle(gpumem_ipc_event_handle_t *handle, gpumem_event_t event);
    status_t ipc_open_event_handle(gpumem_event_t *event, const gpumem_ipc_event_handle_t *handle);
    status_t event_destroy(gpumem_event_t event);
    status_t event_record(gpumem_event_t event, gpumem_stream_t stream);
    status_t event_synchronize(gpumem_event_t event);
    status_t event_query(gpumem_event_t event);
    status_t wait_event(gpumem_stream_t stream, gpumem_event_t event);
    status_t elapsed_ms(float *ms, gpumem_event_t start, gpumem_event_t end);

    // Wait for `device`'s work; `while_idle` (if any) then runs with the default
    // stream's state; then the pools learn what completed.
    status_t synchronize_device(int32_t device, const std::function<status_t(StreamState &)> &while_idle = nullptr);

    // gpumem_finalize: events and streams never destroyed (counted in *leaked).
    void release_all(size_t *leaked);

private:
    status_t new_stream(void *native, int32_t device, bool owned, gpumem_stream_t *stream, uint32_t flags = 0,
                        int32_t priority = 0);
    // A new event handle over `native` of `device`.
    void new_event(void *native, int32_t device, uint32_t flags, gpumem_event_t *event);

    Streams &runtime_;
    Pools &pools_;
    const Devices &devices_;
    const Capture &capture_;
};

} // namespace gpumem::detail
