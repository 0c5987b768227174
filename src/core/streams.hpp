// Streams and events: handles over the backend's, and what the built-in pool
// learns from them (frees that completed, event dependencies).
#pragma once

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "core/handles.hpp"
#include "pool/pool.hpp"

namespace gpumem::detail {

struct Runtime;
class Devices;

struct StreamObject {
    StreamState state;
    bool owned = false; // false for wrapped native streams
};

struct EventObject {
    void *native = nullptr; // set before the handle is published, then read-only
    int32_t device = 0;
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

// Wait for `device`'s work; `while_idle` (if any) then runs with the default
// stream's state; then the pools learn what completed.
status_t synchronize_device(Runtime &rt, int32_t device,
                            const std::function<status_t(StreamState &)> &while_idle = nullptr);

namespace streams {

status_t create(Runtime &rt, gpumem_stream_t *stream);
// `device`: the native stream's, where the runtime cannot say (the current
// device for gpumem_stream_wrap; the framework's for its hooks).
status_t wrap(Runtime &rt, void *native, int32_t device, gpumem_stream_t *stream);
// Framework hooks: each native stream is wrapped once and the wrapper kept.
status_t wrap_once(Runtime &rt, void *native, int32_t device, gpumem_stream_t *stream);
status_t destroy(Runtime &rt, gpumem_stream_t stream);
status_t synchronize(Runtime &rt, gpumem_stream_t stream);
status_t query(Runtime &rt, gpumem_stream_t stream);
void *native_of(gpumem_stream_t stream);

status_t event_create(Runtime &rt, gpumem_event_t *event);
status_t event_destroy(Runtime &rt, gpumem_event_t event);
status_t event_record(Runtime &rt, gpumem_event_t event, gpumem_stream_t stream);
status_t event_synchronize(Runtime &rt, gpumem_event_t event);
status_t event_query(Runtime &rt, gpumem_event_t event);
status_t wait_event(Runtime &rt, gpumem_stream_t stream, gpumem_event_t event);
status_t elapsed_ms(Runtime &rt, float *ms, gpumem_event_t start, gpumem_event_t end);

// gpumem_finalize: events and streams never destroyed (counted in *leaked).
void release_all(Runtime &rt, size_t *leaked);

} // namespace streams
} // namespace gpumem::detail
