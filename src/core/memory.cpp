#include "core/memory.hpp"

#include "core/limit.hpp"
#include "core/runtime.hpp"
#include "core/stats.hpp"

namespace gpumem::detail::memory {

void record(Runtime &rt, const Allocation &a)
{
    rt.pointers.record(a);
    account_alloc(a.kind, reinterpret_cast<void *>(a.base), a.size, a.device, a.emulated);
}

status_t release(Runtime &rt, const Allocation &a, bool finalizing)
{
    void *ptr = reinterpret_cast<void *>(a.base);
    switch (a.kind) {
    case GPUMEM_KIND_DEVICE: return rt.backend->device_free(a.device, ptr, a.size);
    case GPUMEM_KIND_HOST_PINNED: return rt.pinned.release(rt, a, finalizing);
    case GPUMEM_KIND_MANAGED: return managed::release(rt, a);
    case GPUMEM_KIND_HOST_REGISTERED: return rt.pinned.unregister(rt, a);
    default: return fail(GPUMEM_ERROR_INVALID_POINTER, "%s cannot be released here", kind_name(a.kind));
    }
}

status_t take_and_release(Runtime &rt, void *ptr, bool (*accept)(const Allocation &), const char *expected)
{
    Allocation a;
    if (!rt.pointers.take(ptr, accept, &a))
        return rt.pointers.explain_bad(ptr, expected);
    if (status_t st = release(rt, a, false)) {
        rt.pointers.record(a);
        return st;
    }
    account_free(a.kind, ptr, a.size, a.device, a.emulated);
    return GPUMEM_SUCCESS;
}

status_t device_alloc(Runtime &rt, size_t size, void **ptr)
{
    int32_t device = current_device();
    if (status_t st = check_device(rt, device))
        return st;
    if (status_t st = limit::check(GPUMEM_KIND_DEVICE, device, size))
        return st;
    void *p = nullptr;
    if (status_t st = rt.backend->device_alloc(device, size, &p))
        return st;
    Allocation a;
    a.base = reinterpret_cast<uintptr_t>(p);
    a.size = size;
    a.kind = GPUMEM_KIND_DEVICE;
    a.device = device;
    record(rt, a);
    *ptr = p;
    return GPUMEM_SUCCESS;
}

status_t free(Runtime &rt, void *ptr)
{
    bool (*freeable)(const Allocation &) = [](const Allocation &a) {
        return a.kind == GPUMEM_KIND_DEVICE || a.kind == GPUMEM_KIND_HOST_PINNED || a.kind == GPUMEM_KIND_MANAGED;
    };
    const char *expected = "memory from gpumem_malloc, _host_alloc, _managed_alloc or _malloc_async";
    PointerInfo info;
    if (rt.pointers.find(ptr, &info) && info.base == reinterpret_cast<uintptr_t>(ptr)) {
        if (freeable(info.record) && info.kind != GPUMEM_KIND_STREAM_ORDERED)
            return take_and_release(rt, ptr, freeable, "memory from gpumem_malloc, _host_alloc or _managed_alloc");
        if (info.kind == GPUMEM_KIND_STREAM_ORDERED) {
            PoolBlock block;
            block.base = ptr;
            block.size = info.size;
            block.device = info.device;
            block.pool = info.pool;
            return rt.pools.free_now(ptr, block);
        }
    }
    return rt.pointers.explain_bad(ptr, expected);
}

status_t copy(Runtime &rt, void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    if (status_t st = rt.pointers.check_range(dst, n, true, "destination"))
        return st;
    if (status_t st = rt.pointers.check_range(src, n, false, "source"))
        return st;
    return rt.backend->copy(dst, src, n, s->state.native, async);
}

status_t fill(Runtime &rt, void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    size_t run = n;
    if (status_t st = rt.pointers.check_range(dst, n, true, "destination", &run))
        return st;
    // Across the seam of two VMM mappings (the seed's grown range), one fill per
    // mapping: CUDA's memset refuses a range that spans two reservations.
    char *at = static_cast<char *>(dst);
    while (run < n) {
        if (status_t st = rt.backend->fill(at, value, run, s->state.native, async))
            return st;
        at += run;
        n -= run;
        run = rt.vmm.mapped_run(at, n);
    }
    return rt.backend->fill(at, value, n, s->state.native, async);
}

void release_all(Runtime &rt, size_t *leaked_allocations, uint64_t *leaked_bytes)
{
    for (auto &[base, a] : rt.pointers.take_all()) {
        if (a.kind != GPUMEM_KIND_BUFFER) {
            ++*leaked_allocations;
            *leaked_bytes += a.size;
        }
        if (a.kind != GPUMEM_KIND_BUFFER)
            release(rt, a, true);
    }
}

} // namespace gpumem::detail::memory
