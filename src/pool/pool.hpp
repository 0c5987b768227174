// gpumem's own stream-ordered pool allocator.
//
// Used by the host backend, and by GPU backends where native pools are absent
// (GPUMEM_DISABLE=pools) or asked for (GPUMEM_POOL_BUILTIN).  The core owns
// streams and events and tells the pool what it learns about them (frees that
// completed, event dependencies, synchronisations); the pool owns blocks.
//
// Stream-order rule: a block freed on stream S serves S again at once; another
// stream only once the free has completed (REUSE_ALLOW_OPPORTUNISTIC), or an
// event wait ordered the two (REUSE_FOLLOW_EVENT_DEPENDENCIES).  Memory that
// pending work may still touch is never handed out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "pool/upstream.hpp"
#include "base/clock.hpp"
#include "base/error.hpp"

namespace gpumem::detail {

namespace pool {
class Pool;
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

struct Config {
    int32_t device = 0;
    uint64_t max_size = 0; // 0 = unlimited
    // Strict host mode: freed blocks wait in a FIFO of this many bytes before
    // they can serve again (0 = off), so a stale pointer finds the freed
    // bytes (poisoned by the core), not a newer allocation's.  The FIFO
    // gives way when the pool would otherwise grow, trim or release memory.
    size_t quarantine_bytes = 0;
    int32_t memory = GPUMEM_POOL_MEMORY_DEVICE; // what the upstream's chunks are (reported with each block)
    // Paged pools: the decay window in periods of one second (GPUMEM_POOL_DECAY),
    // 1 to Pool::kMaxDecayWindow.
    unsigned decay_periods = 4;
};

// A live block as the core sees it.
struct Allocation {
    Pool *pool = nullptr;
    void *base = nullptr;
    size_t size = 0;       // bytes the user asked for
    int32_t device = 0;
    bool imported = false; // mapped from another process's pool
    uint64_t owner = 0;    // the pool's tag (set_owner)
    int32_t memory = GPUMEM_POOL_MEMORY_DEVICE; // the pool's Config::memory
    Birth birth;           // when, by which thread and on which stream it was allocated
};

// Create a pool over `upstream` (an imported upstream makes an imported pool,
// which only maps pointers: allocate gives INVALID_VALUE).
status_t create(std::unique_ptr<PoolUpstream> upstream, const Config &config, Pool **out);
// The pool handle is gone: no new allocations; the memory goes back to the
// upstream when the last outstanding allocation is freed.
void destroy(Pool *pool);
// Free everything of every pool at once (gpumem_finalize).
void destroy_all();
// Forget every pool without releasing anything (a fork child: the memory and
// the pools' upstreams are the parent's).  The pools are leaked on purpose.
void forget_all();

// While this thread allocates a capture's blocks (graph-private memory,
// core/pools/graph_blocks.cpp): the pools give nothing back by decay or to
// keep within their budget, so no unmap lands inside a capture; a deadline
// that falls then waits for the thread's next call outside it.  Memory still
// goes back when backing fails for lack of memory.
class CaptureScope {
public:
    CaptureScope();
    ~CaptureScope();
    CaptureScope(const CaptureScope &) = delete;
    CaptureScope &operator=(const CaptureScope &) = delete;
};
// True inside a CaptureScope on this thread.
bool in_capture_scope();

// Hot path: a block of at least `size` bytes (256-byte aligned) in `stream`'s order.
status_t allocate(Pool *pool, size_t size, StreamState &stream, void **ptr);
// Hot path: free the block starting at `ptr` (any pool) in `stream`'s order.
// INVALID_POINTER (nothing changed, and no message: the caller explains) when ptr is not the base of a live block.
status_t deallocate(void *ptr, StreamState &stream, Allocation *freed);
// Live block containing `ptr` (interior pointers too).
bool lookup(const void *ptr, Allocation *out);
// Live block starting at `ptr` (one hash probe).
bool lookup_base(const void *ptr, Allocation *out);
// True when [ptr, ptr+size) meets memory of any pool, live blocks or not.
bool overlaps(const void *ptr, size_t size);

// "GPUMEM_POOL_ATTR_..." for messages; nullptr for a value that is none of them.
const char *attribute_name(int32_t attr);
status_t set_attribute(Pool *pool, int32_t attr, const void *value);
status_t get_attribute(Pool *pool, int32_t attr, void *value);
status_t trim_to(Pool *pool, size_t min_bytes_to_keep);
// `device` gets read-write access to the pool's memory, now and as it grows
// (PoolUpstream::grant_access).
status_t grant_access(Pool *pool, int32_t device);
size_t outstanding(Pool *pool);
int32_t device_of(Pool *pool);
// Tag a pool with the core's name for it (its handle), reported with every block.
void set_owner(Pool *pool, uint64_t owner);
bool is_imported(Pool *pool);

// Read-only views of every pool, for snapshots and out-of-memory reports
// (taken under the pools' locks; a moment's picture while other threads allocate).
struct PoolView {
    uint64_t owner = 0; // the core's tag (0: the pool's handle is gone)
    int32_t device = 0;
    uint64_t reserved = 0;
    uint64_t used = 0;
    // The pool's own rules, for what-would-fit questions: growth is rounded
    // to `granularity` and the chunks' address space stays within max_size.
    uint64_t max_size = 0; // 0 = unlimited
    uint64_t address_bytes = 0;
    size_t granularity = 0;
};
struct FreeBlockView {
    size_t offset = 0; // from the segment's base
    size_t bytes = 0;
    // Freed on a stream whose free is not yet known to be safe for every
    // stream: only that stream (or one ordered after it) may take it now.
    bool pending = false;
    void *pending_stream = nullptr; // that stream's handle (NULL: a default stream)
};
struct SegmentView {
    uint64_t owner = 0;
    int32_t device = 0;
    void *base = nullptr;
    size_t bytes = 0;  // address space
    size_t backed = 0; // memory under it (a paged pool's backed pages; else bytes)
    std::vector<FreeBlockView> free_blocks; // in address order; cached blocks count as free
};
void inspect(std::vector<PoolView> *pools, std::vector<SegmentView> *segments);
// Every live block of every pool (throws std::bad_alloc).
void live_blocks(std::vector<Allocation> *out);

// Growth and release of a pool's memory as they happen (the core's trace):
// `memory` the pool's Config::memory, `bytes` > 0 a new chunk, < 0 a chunk
// given back; reserved and used after it.  Called with the pool's lock held:
// the observer must not call the pool.
using GrowthObserver = void (*)(uint64_t owner, int32_t device, int32_t memory, int64_t bytes, uint64_t reserved,
                                uint64_t used);
void set_growth_observer(GrowthObserver observer);
// A chunk's address range going back to the upstream (a trim, a release
// threshold, the last block of a destroyed pool), so that the core's pointer
// directory can still say that an address there was freed once no pool holds
// it.  Called with the pool's lock held: the observer must not call the pool.
using ReleaseObserver = void (*)(void *base, size_t size, int32_t device, int32_t memory);
void set_release_observer(ReleaseObserver observer);

// Sharing between processes.
status_t export_fd(Pool *pool, int *fd);
status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data);
status_t import_pointer(Pool *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr);

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
