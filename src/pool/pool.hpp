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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "pool/stream_state.hpp"
#include "pool/upstream.hpp"
#include "base/clock.hpp"
#include "base/error.hpp"

namespace gpumem::detail {

namespace pool {

class Pool;

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

// Creating and destroying pools (registry.cpp).

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

// A pool's attributes, trimming and what the core asks of one pool (attributes.cpp).

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

// Read-only views of every pool, for snapshots and out-of-memory reports (snapshots.cpp)
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

// The observers (observers.cpp).

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

// Sharing between processes (ipc.cpp).
status_t export_fd(Pool *pool, int *fd);
status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data);
status_t import_pointer(Pool *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr);

} // namespace pool
} // namespace gpumem::detail
