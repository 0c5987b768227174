// The pools service's hot path, inline so that an entry point pays one
// virtual call (into the pool implementation) and nothing more.  The api
// reaches it through the runtime's header.
#pragma once

#include "core/capture.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools.hpp"
#include "core/streams.hpp"

namespace gpumem::detail {

inline status_t Pools::current(int32_t device, PoolObject **p, uint64_t *handle)
{
    if (status_t st = parts_.devices.check(device))
        return st;
    DeviceState &dev = parts_.devices[device];
    uint64_t h = dev.current_pool.load(std::memory_order_acquire);
    if (!h)
        return no_pools(device);
    PoolObject *obj = pool_table().get(h);
    if (!obj) {
        // The current pool was destroyed under us: the default takes over.
        h = dev.default_pool;
        obj = pool_table().get(h);
        if (!obj)
            return no_pools(device);
    }
    *p = obj;
    *handle = h;
    return GPUMEM_SUCCESS;
}

// The hot path: a block from `p` in `stream`'s order.
inline status_t Pools::allocate_in(PoolObject &p, uint64_t handle, size_t size, gpumem_stream_t stream, void **ptr,
                                   Caller caller)
{
    StreamObject *s = nullptr;
    // A pool allocation runs on the pool's device: NULL is its default stream.
    if (status_t st = resolve_stream_fast(parts_.devices, stream, p.device, &s))
        return st;
    const StreamRef ref{s->state, stream};
    if (caller == Caller::framework_hook && p.resource == native_.get()) {
        capture::Relaxed relaxed(parts_.capture);
        if (status_t st = p.resource->allocate(p, handle, size, ref, ptr))
            return st;
    } else if (status_t st = p.resource->allocate(p, handle, size, ref, ptr)) {
        return st;
    }
    if (p.emulated) [[unlikely]]
        note_emulated(p);
    return GPUMEM_SUCCESS;
}

inline status_t Pools::allocate(int32_t device, size_t size, gpumem_stream_t stream, void **ptr, Caller caller)
{
    PoolObject *p = nullptr;
    uint64_t handle = 0;
    if (status_t st = current(device, &p, &handle))
        return st;
    return allocate_in(*p, handle, size, stream, ptr, caller);
}

inline status_t Pools::allocate_from(gpumem_pool_t pool, size_t size, gpumem_stream_t stream, void **ptr)
{
    PoolObject *p = pool ? pool_table().get(handle_bits(pool)) : nullptr;
    if (!p) [[unlikely]] {
        if (status_t st = resolve_pool(pool, &p)) // says why
            return st;
    }
    if (size == 0)
        return GPUMEM_SUCCESS;
    return allocate_in(*p, handle_bits(pool), size, stream, ptr, Caller::application);
}

inline status_t Pools::free_async(void *ptr, gpumem_stream_t stream, Caller caller)
{
    if (!ptr)
        return GPUMEM_SUCCESS;
    StreamObject *s = nullptr;
    // NULL: the current device's default stream (resolve_stream).
    if (status_t st = resolve_stream_fast(parts_.devices, stream, stream ? 0 : current_device(), &s))
        return st;
    StreamRef ref{s->state, stream};
    bool mine = false;
    PoolBlock freed;
    // Ask gpumem's own pools first once there are any (their lookup is the
    // cheaper one, and its hot path the one that counts); never before.
    const bool own_first = pool::ordering_in_use();
    if (own_first) {
        status_t st = builtin_->deallocate(ptr, ref, &mine, &freed);
        if (mine)
            return st;
    }
    if (native_) {
        status_t st;
        if (caller == Caller::framework_hook) {
            capture::Relaxed relaxed(parts_.capture);
            st = native_->deallocate(ptr, ref, &mine, &freed);
        } else {
            st = native_->deallocate(ptr, ref, &mine, &freed);
        }
        if (mine)
            return st;
    }
    if (!own_first) {
        status_t st = builtin_->deallocate(ptr, ref, &mine, &freed);
        if (mine)
            return st;
    }
    return parts_.pointers.explain_bad(ptr, "stream-ordered memory from gpumem_malloc_async");
}

} // namespace gpumem::detail
