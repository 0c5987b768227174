// What the pool knows of each stream (StreamState, held in the core's stream
// object), what gpumem_event_record captures (EventMark), and what the core
// tells the pools about streams and events (defined in stream_order.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace gpumem::detail {

namespace pool {
struct StreamCache;
} // namespace pool

// Design note: stream order in gpumem's own pool
//
// Why.  A block freed on stream S may still be used by work queued on S
// before the free.  Work later on S runs after it, so S may reuse the block
// at once; another stream may only once the free has run on the device, or
// once that stream waits for an event recorded after the free.  The vendor
// pools know this from events of their own; an event per free would put a
// driver call on every free.
//
// How.  Order is counted, not recorded.  Each stream has an epoch counter:
// a free is tagged (stream id, free_epoch + 1) with one plain load, and each
// point of the stream's order that gpumem sees (a synchronisation, a query,
// gpumem_event_record) closes an epoch (close_epoch), so
// every free before the point has a tag at or below the point's epoch.  When
// the core learns that the point has passed (a stream, event or device
// synchronisation, a query answering idle or done) it calls on_completed,
// which raises completed_epoch and bumps a generation so that each pool
// re-checks its tagged blocks once (sweep).  gpumem_stream_wait_event
// records (stream, epoch) in the waiter's deps: the waiter may reuse blocks
// of that stream freed up to that epoch (REUSE_FOLLOW_EVENT_DEPENDENCIES).
// A stream cache holds only blocks freed on its own stream, so the hot path
// checks nothing; the slow path's best fit takes a block that is untagged,
// freed on the asking stream or ordered before it, or whose free completed
// (REUSE_ALLOW_OPPORTUNISTIC).  A synchronisation makes every completed free
// safe for all streams even without opportunistic reuse (released_epoch,
// apply_release_thresholds).
//
// When it waits.  Never to reuse a block: a block not yet safe serves only
// streams ordered after its free, and otherwise the pool grows.  A paged pool
// (see "Design note: paging of pool chunks", pages.cpp) gives pages
// back only under completed frees, and frees complete only where gpumem sees
// the stream pass them; a framework that synchronises through the vendor
// never shows it.  So on its slow path a paged pool asks the streams whose
// frees are still tagged (learn_completed_frees, at most 8 per look): an idle
// one completes all its frees; on a busy one the pool records a mark (an
// event of its own through PoolUpstream::record_mark, one per stream and
// pool, reused) and at its next look completes the frees before it if it
// passed.  It waits for a busy stream (stream_wait) only when what completed
// leaves it 64 MiB or more short of its budget, and before a growth that
// failed for lack of memory is tried again; a pool going away waits for its
// device (quiesce) before it unbacks pages.
//
// Limits.  Completion is known only through gpumem's own calls and, for
// paged pools on a GPU, the stream questions above; an unpaged GPU pool keeps
// a free tagged until the program synchronises through gpumem (its upstream
// answers no stream question).  The host backend's streams are synchronous:
// there a free has completed when it returns.  Dependencies are learned only from gpumem_stream_wait_event,
// one (stream, epoch) per stream pair.  REUSE_ALLOW_INTERNAL_DEPENDENCIES is
// stored and reported, but the pool never inserts a wait into a stream.

// What the pool knows of one stream.  Embedded in the core's stream object,
// which lives as long as the library (stream objects are recycled, never
// freed), so a StreamState reference is always safe to touch.
struct StreamState {
    uint64_t id = 0;         // unique for each stream ever created; never reused
    int32_t device = 0;
    void *native = nullptr;  // backend stream (nullptr = the default stream)
    bool synchronous = false; // work has finished when the enqueue call returns
    void *handle = nullptr;   // the core's gpumem_stream_t (NULL: a default stream), for snapshots

    // Frees are tagged free_epoch + 1 (a plain load: no locked instruction
    // on the free path); each mark (a synchronisation, an event) advances
    // free_epoch and so closes the frees before it.  Frees up to
    // completed_epoch are known to have finished on the device.
    std::atomic<uint64_t> free_epoch{0};
    std::atomic<uint64_t> completed_epoch{0};

    // The tag of a free made now.
    uint64_t free_tag() const { return free_epoch.load(std::memory_order_acquire) + 1; }
    // An epoch covering every free made so far (and none made after).
    uint64_t close_epoch() { return free_epoch.fetch_add(1, std::memory_order_acq_rel) + 1; }

    // Ordering learned from gpumem_stream_wait_event: frees on stream `first`
    // up to epoch `second` happen before later work on this stream.
    std::mutex deps_mutex;
    std::vector<std::pair<uint64_t, uint64_t>> deps;

    // This stream's per-pool caches (owned by the pool module).
    std::mutex caches_mutex;
    std::vector<pool::StreamCache *> caches;
};

// What gpumem_event_record captured: the stream and its free epoch then.
struct EventMark {
    StreamState *stream = nullptr;
    uint64_t stream_id = 0;
    uint64_t epoch = 0;
};

namespace pool {

// What the core learns about streams and events.
// True once this process has made one of gpumem's own pools.  Until then the
// stream-order bookkeeping below has nothing to do, and the thin paths
// (event record and query, stream synchronise and wait) skip it: a program
// on the vendor's pools pays nothing for it.  It never goes back to false,
// so an event recorded without a mark is never read as having one.
inline std::atomic<bool> g_ordering_in_use{false};
inline bool ordering_in_use() { return g_ordering_in_use.load(std::memory_order_acquire); }
// A free on `stream` up to `epoch` has completed (stream/event synchronised).
void on_completed(StreamState &stream, uint64_t epoch);
// After a stream, event or device synchronisation: release memory above
// each pool's release threshold (device < 0: every pool).
void apply_release_thresholds(int32_t device);
// gpumem_event_record / gpumem_stream_wait_event.
EventMark mark(StreamState &stream);
void add_dependency(StreamState &waiter, const EventMark &mark);
// The stream is going away (its work has finished): its cached blocks
// become free for every stream.  Also resets the state for reuse.
void on_stream_destroyed(StreamState &stream);

} // namespace pool
} // namespace gpumem::detail
