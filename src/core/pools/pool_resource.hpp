// One interface for stream-ordered pools, two implementations: the vendor's
// pools (native_pool.cpp, with their block table) and gpumem's own allocator
// (builtin_pool.cpp, over src/pool).  Which one serves a pool is decided in
// one place, choose_implementation() in pools.cpp; statistics and tracing
// wrap either once (counted.hpp), as RMM's adaptors wrap any resource.
//
// One object per implementation serves every pool of its kind: a pool is the
// opaque `impl` it made (a vendor pool handle, or a pool::Pool *), and frees
// come by pointer alone, so each implementation finds its own blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/error.hpp"
#include "gpumem/gpumem.h"
#include "pool/pool.hpp"

namespace gpumem::detail {

struct PoolObject;

// A live stream-ordered block, as the pointer directory reports it.
struct PoolBlock {
    void *base = nullptr;
    size_t size = 0;       // bytes asked for (0 for a vendor pool's imported block)
    int32_t device = 0;
    uint64_t pool = 0;     // the pool's handle (0 once the pool is gone)
    bool imported = false; // mapped from another process's pool
    int32_t memory = GPUMEM_POOL_MEMORY_DEVICE; // the pool's GPUMEM_POOL_MEMORY_*
    uint64_t graph = 0; // gpumem's own pool: the capture whose graph owns it (0: none; snapshots)
};

// A live block with when, by which thread and on which stream it was made (snapshots).
struct LiveBlock {
    PoolBlock block;
    Birth birth;
};

// The stream a call names: the pool's view and the user's handle (for traces).
struct StreamRef {
    StreamState &state;
    gpumem_stream_t handle;
};

class PoolResource {
public:
    virtual ~PoolResource() = default;

    // Hot path: a block of `size` bytes from `pool` in `stream`'s order.
    virtual status_t allocate(PoolObject &pool, uint64_t handle, size_t size, StreamRef stream, void **ptr) = 0;
    // Hot path: free `ptr` in `stream`'s order when it is the base of one of
    // this implementation's blocks; *mine false (nothing changed) otherwise.
    virtual status_t deallocate(void *ptr, StreamRef stream, bool *mine, PoolBlock *freed) = 0;
    // Free one of this implementation's blocks synchronously: the device's
    // work first, so nothing pending still touches it (gpumem_free).
    virtual status_t free_now(void *ptr, const PoolBlock &block) = 0;
    // The block holding `ptr`.  `interior` false: only a block starting at
    // `ptr` where finding interior pointers would cost a scan (the vendor's
    // table is hashed by base).
    virtual bool find(const void *ptr, PoolBlock *out, bool interior) const = 0;
    // The block starting at `ptr`: one hash probe.
    virtual bool find_base(const void *ptr, PoolBlock *out) const { return find(ptr, out, false); }
    // True when [ptr, ptr+size) meets memory this implementation holds, live
    // blocks or not, where it knows (gpumem's own pool knows its chunks; the
    // vendor's memory is not gpumem's to map).
    virtual bool holds(const void *ptr, size_t size) const = 0;
    // False when `ptr` cannot lie inside one of this implementation's blocks
    // (true: it may; ask the runtime).  For interior pointers that find()
    // does not look up.
    virtual bool may_hold(const void *) const { return false; }
    // Append every live block of this implementation (snapshots, reports; not for hot paths).
    virtual void list_blocks(std::vector<LiveBlock> *out) const = 0;

    // Pools.  `impl` is what create/import made; the PoolObject holds it.
    virtual status_t create(const gpumem_pool_props_t &props, bool is_default, void **impl) = 0;
    virtual status_t import(int fd, int32_t device, void **impl) = 0;
    // Once the handle is known (gpumem_pool_t), so blocks can name their pool.
    virtual void adopt(void *impl, uint64_t handle) = 0;
    // `handle` was the pool's (its blocks name it); it is retired already.
    virtual status_t destroy(PoolObject &pool, uint64_t handle) = 0;
    virtual status_t set_attribute(PoolObject &pool, int32_t attr, const void *value) = 0;
    virtual status_t get_attribute(PoolObject &pool, int32_t attr, void *value) = 0;
    virtual status_t trim_to(PoolObject &pool, size_t min_bytes_to_keep) = 0;
    // Another device's access (the owner always has READWRITE).
    virtual status_t set_access(PoolObject &pool, int32_t device, int32_t flags) = 0;
    virtual status_t export_fd(PoolObject &pool, int *fd) = 0;
    virtual status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data) = 0;
    virtual status_t import_pointer(PoolObject &pool, uint64_t handle, const gpumem_pool_ptr_export_data_t *data,
                                    void **ptr, size_t *size) = 0;

    // gpumem_finalize, in this order: the blocks this implementation must
    // give back one by one (how many there were); then each pool (how many of
    // its blocks were still live); then whatever is left.
    virtual size_t release_blocks() = 0;
    virtual size_t release_pool(PoolObject &pool) = 0;
    virtual void release_all() = 0;
};

} // namespace gpumem::detail
