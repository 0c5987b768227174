#include "core/memory.hpp"

#include <string>

#include "core/limit.hpp"
#include "core/placement.hpp"
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
    case GPUMEM_KIND_HOST_PINNED: return rt.pinned.release(rt, a, a.flags, finalizing);
    case GPUMEM_KIND_MANAGED: return managed::release(rt, a, finalizing);
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

namespace {

// Work that must run on `device` (the memory's owner) in the order of stream
// `s` of another device.  The runtime runs a fill in its stream's context,
// which reaches no other device's memory without peer access or a grant
// (cuda_probe bridge: refused even for plain memory); a copy is checked
// against the current context and runs on any stream, so only fills need
// this.  The work goes on the owner's default stream instead, after
// everything enqueued on `s` so far and before anything enqueued on it later
// (two events).
template <class Work> status_t in_order_of(Runtime &rt, int32_t device, const StreamState &s, Work &&work)
{
    Backend &b = *rt.backend;
    void *before = nullptr, *after = nullptr;
    status_t st = b.event_create(s.device, &before);
    if (st == GPUMEM_SUCCESS)
        st = b.event_record(s.device, before, s.native);
    if (st == GPUMEM_SUCCESS)
        st = b.stream_wait_event(device, nullptr, before);
    if (st == GPUMEM_SUCCESS)
        st = work();
    if (st == GPUMEM_SUCCESS)
        st = b.event_create(device, &after);
    if (st == GPUMEM_SUCCESS)
        st = b.event_record(device, after, nullptr);
    if (st == GPUMEM_SUCCESS)
        st = b.stream_wait_event(s.device, s.native, after);
    // An event destroyed after its record and waits still orders them.
    const std::string why = st ? last_error_message() : std::string();
    if (before)
        b.event_destroy(s.device, before);
    if (after)
        b.event_destroy(device, after);
    return st ? fail(st, "%s", why.c_str()) : GPUMEM_SUCCESS;
}

} // namespace

status_t copy(Runtime &rt, void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    int32_t dst_owner = GPUMEM_DEVICE_HOST, src_owner = GPUMEM_DEVICE_HOST;
    if (status_t st = rt.pointers.check_range(dst, n, true, "destination", nullptr, &dst_owner))
        return st;
    if (status_t st = rt.pointers.check_range(src, n, false, "source", nullptr, &src_owner))
        return st;
    const placement::CopyPlace at = placement::for_copy(dst_owner, src_owner, s->state.device);
    return copy_at(rt, at, dst, src, n, s->state.native, async);
}

status_t copy_at(Runtime &rt, const placement::CopyPlace &at, void *dst, const void *src, size_t n, void *stream,
                 bool async)
{
    // Both take a stream of another device (cuda_probe placement and bridge:
    // accepted, and the copy runs).
    if (at.peer)
        return rt.backend->copy_peer(at.device, dst, at.src_device, src, n, stream, async);
    return rt.backend->copy(at.device, dst, src, n, stream, async);
}

status_t fill(Runtime &rt, void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    size_t run = n;
    int32_t owner = GPUMEM_DEVICE_HOST;
    if (status_t st = rt.pointers.check_range(dst, n, true, "destination", &run, &owner))
        return st;
    const int32_t device = placement::for_range(owner, s->state.device);
    // An explicit stream of another device than the memory's (NULL is already the owner's).
    const bool bridged = stream != nullptr && s->state.device != device;
    void *on = bridged ? nullptr : s->state.native;
    // Across the seam of two VMM mappings (the seed's grown range), one fill per
    // mapping: CUDA's memset refuses a range that spans two reservations.
    auto fill_all = [&] {
        char *at = static_cast<char *>(dst);
        size_t left = n, first = run;
        while (first < left) {
            if (status_t st = rt.backend->fill(device, at, value, first, on, async))
                return st;
            at += first;
            left -= first;
            first = rt.vmm.mapped_run(at, left);
        }
        return rt.backend->fill(device, at, value, left, on, async);
    };
    return bridged ? in_order_of(rt, device, s->state, fill_all) : fill_all();
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
