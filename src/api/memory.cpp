// Explicit device memory, copies, pinned host memory and managed memory.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "api/entry.hpp"
#include "core/stats.hpp"

using namespace gpumem::detail;

namespace {

constexpr uint32_t k_host_alloc_flags = GPUMEM_HOST_PORTABLE | GPUMEM_HOST_MAPPED | GPUMEM_HOST_WRITE_COMBINED |
                                        GPUMEM_HOST_COHERENT | GPUMEM_HOST_NONCOHERENT;
constexpr uint32_t k_host_register_flags =
    GPUMEM_HOST_REGISTER_PORTABLE | GPUMEM_HOST_REGISTER_MAPPED | GPUMEM_HOST_REGISTER_READ_ONLY;

const char *kind_name(int32_t kind)
{
    static const char *const names[] = {"unknown",        "device memory",        "pinned host memory",
                                        "registered host memory", "managed memory",
                                        "stream-ordered memory", "a VMM range", "growable-buffer data"};
    return kind >= 0 && kind < GPUMEM_KIND_COUNT ? names[kind] : "unknown";
}

} // namespace

// Why a pointer is not something a call can take: the most useful message.
status_t gpumem::detail::explain_bad_pointer(Runtime &rt, const void *ptr, const char *expected)
{
    Allocation a;
    pool::Allocation block;
    if (rt.registry.find_containing(ptr, &a)) {
        if (reinterpret_cast<uintptr_t>(ptr) != a.base)
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%p points %" PRIuPTR " bytes inside %s at %p; pass the pointer the allocation returned",
                        ptr, reinterpret_cast<uintptr_t>(ptr) - a.base, kind_name(a.kind), reinterpret_cast<void *>(a.base));
        const char *how = a.kind == GPUMEM_KIND_HOST_REGISTERED ? "gpumem_host_unregister"
                          : a.kind == GPUMEM_KIND_BUFFER        ? "gpumem_buffer_destroy on its buffer"
                          : a.kind == GPUMEM_KIND_HOST_PINNED   ? "gpumem_host_free or gpumem_free"
                                                                : "gpumem_free";
        return fail(GPUMEM_ERROR_INVALID_POINTER, "%p is %s, not %s; release it with %s", ptr, kind_name(a.kind),
                    expected, how);
    }
    void *native_base = nullptr;
    NativeBlock native;
    bool stream_ordered = pool::lookup(ptr, &block);
    if (!stream_ordered && rt.native_pools && rt.native_blocks.find_containing(ptr, &native_base, &native)) {
        stream_ordered = true;
        block.base = native_base;
    }
    if (stream_ordered)
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is %s %s; release it with gpumem_free_async (or gpumem_free) on the pointer returned",
                    ptr, block.base == ptr ? "" : "inside", kind_name(GPUMEM_KIND_STREAM_ORDERED));
    {
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
        auto it = rt.reservations.upper_bound(p);
        if (it != rt.reservations.begin() && p < std::prev(it)->first + std::prev(it)->second.size)
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%p lies in a VMM reservation; release it with gpumem_mem_unmap and gpumem_mem_address_free", ptr);
    }
    return fail(GPUMEM_ERROR_INVALID_POINTER,
                "%p is not a live gpumem allocation (never allocated by gpumem, already freed, or from before "
                "gpumem_finalize); expected %s", ptr, expected);
}

namespace {

size_t page_rounded(size_t n)
{
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return n > SIZE_MAX - page ? n : (n + page - 1) / page * page;
}

// The pinned cache: a freed block of the same flags and page-rounded size
// serves the next allocation without page-locking memory again.
bool pinned_from_cache(Runtime &rt, size_t size, uint32_t flags, void **ptr, void **device_ptr)
{
    if (!rt.options.pinned_cache_bytes)
        return false;
    PinnedCache &cache = rt.pinned_cache;
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.blocks.find({flags, page_rounded(size)});
    if (it == cache.blocks.end())
        return false;
    *ptr = it->second.ptr;
    *device_ptr = it->second.device_pointer;
    cache.bytes -= it->first.second;
    cache.blocks.erase(it);
    return true;
}

bool pinned_to_cache(Runtime &rt, const Allocation &a)
{
    PinnedCache &cache = rt.pinned_cache;
    size_t rounded = page_rounded(a.size);
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.bytes + rounded > rt.options.pinned_cache_bytes)
        return false;
    cache.blocks.emplace(std::make_pair(a.flags, rounded),
                         PinnedCache::Block{reinterpret_cast<void *>(a.base), a.device_pointer});
    cache.bytes += rounded;
    return true;
}

// Out of pinned memory: give the cached blocks back first.
bool pinned_cache_flush(Runtime &rt)
{
    PinnedCache &cache = rt.pinned_cache;
    std::lock_guard<std::mutex> lock(cache.mutex);
    bool any = !cache.blocks.empty();
    for (auto &[key, block] : cache.blocks)
        rt.backend->host_free(block.ptr, key.second);
    cache.blocks.clear();
    cache.bytes = 0;
    return any;
}

// Give back what the backend holds for a registry allocation.
status_t release(Runtime &rt, const Allocation &a)
{
    void *ptr = reinterpret_cast<void *>(a.base);
    switch (a.kind) {
    case GPUMEM_KIND_DEVICE: return rt.backend->device_free(a.device, ptr, a.size);
    case GPUMEM_KIND_HOST_PINNED:
        return pinned_to_cache(rt, a) ? GPUMEM_SUCCESS : rt.backend->host_free(ptr, a.size);
    case GPUMEM_KIND_MANAGED: return a.emulated ? rt.backend->host_free(ptr, a.size) : rt.backend->managed_free(ptr, a.size);
    case GPUMEM_KIND_HOST_REGISTERED: return a.locked ? rt.backend->host_unregister(ptr, a.size) : GPUMEM_SUCCESS;
    default: return fail(GPUMEM_ERROR_INVALID_POINTER, "%s cannot be released here", kind_name(a.kind));
    }
}

// Remove a registry allocation of an accepted kind and free it; on a backend
// failure the record goes back so nothing is lost.
template <class Accept>
status_t take_and_release(Runtime &rt, void *ptr, Accept accept, const char *expected)
{
    Allocation a;
    if (!rt.registry.take(ptr, accept, &a))
        return explain_bad_pointer(rt, ptr, expected);
    if (status_t st = release(rt, a)) {
        rt.registry.insert(a);
        return st;
    }
    account_free(a.kind, ptr, a.size, a.device, a.emulated);
    return GPUMEM_SUCCESS;
}

void record(Runtime &rt, Allocation a)
{
    rt.registry.insert(a);
    account_alloc(a.kind, reinterpret_cast<void *>(a.base), a.size, a.device, a.emulated);
}

// A copy or fill must not run past the end of a gpumem allocation it starts in.
status_t check_range(Runtime &rt, const void *ptr, size_t n, const char *what)
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    Allocation a;
    pool::Allocation block;
    if (rt.registry.find_containing(ptr, &a)) {
        if (n > a.size - (p - a.base))
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "%s %p + %zu bytes runs past the end of %s at %p of %zu bytes", what, ptr, n, kind_name(a.kind),
                        reinterpret_cast<void *>(a.base), a.size);
        return GPUMEM_SUCCESS;
    }
    if (pool::lookup(ptr, &block)) {
        if (n > block.size - (p - reinterpret_cast<uintptr_t>(block.base)))
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s %p + %zu bytes runs past the end of %s at %p of %zu bytes",
                        what, ptr, n, kind_name(GPUMEM_KIND_STREAM_ORDERED), block.base, block.size);
        return GPUMEM_SUCCESS;
    }
    std::lock_guard<std::mutex> lock(rt.vmm_mutex);
    auto it = rt.reservations.upper_bound(p);
    if (it == rt.reservations.begin() || p >= std::prev(it)->first + std::prev(it)->second.size)
        return GPUMEM_SUCCESS; // memory gpumem did not make: the caller's to vouch for
    --it;
    // Every byte must be mapped with access set.
    uintptr_t at = p, end = p + n;
    while (at < end) {
        auto m = it->second.mappings.upper_bound(at);
        if (m == it->second.mappings.begin() || at >= std::prev(m)->first + std::prev(m)->second.size)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s range %p + %zu bytes includes unmapped VMM address space at %p",
                        what, ptr, n, reinterpret_cast<void *>(at));
        --m;
        auto granted = m->second.access.find(m->second.device);
        if (granted == m->second.access.end() || granted->second == GPUMEM_ACCESS_NONE)
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "%s range %p + %zu bytes includes VMM memory without access; call gpumem_mem_set_access first",
                        what, ptr, n);
        at = m->first + m->second.size;
    }
    return GPUMEM_SUCCESS;
}

status_t copy(Runtime &rt, void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async)
{
    if (n == 0)
        return GPUMEM_SUCCESS;
    GPUMEM_REQUIRE(dst && src, "dst and src must be non-NULL when n > 0 (dst %p, src %p)", dst, src);
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    if (status_t st = check_range(rt, dst, n, "destination"))
        return st;
    if (status_t st = check_range(rt, src, n, "source"))
        return st;
    return rt.backend->copy(dst, src, n, s->state.native, async);
}

status_t fill(Runtime &rt, void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async)
{
    if (n == 0)
        return GPUMEM_SUCCESS;
    GPUMEM_REQUIRE(dst, "dst is NULL");
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    if (status_t st = check_range(rt, dst, n, "destination"))
        return st;
    return rt.backend->fill(dst, value, n, s->state.native, async);
}

// A managed range for advice, prefetch and queries.
status_t managed_range(Runtime &rt, const void *ptr, size_t count, std::shared_ptr<ManagedAttributes> *attrs,
                       size_t *offset, bool *emulated)
{
    GPUMEM_REQUIRE(ptr, "ptr is NULL");
    GPUMEM_REQUIRE(count > 0, "count is 0: give the number of bytes of the range");
    Allocation a;
    if (!rt.registry.find_containing(ptr, &a) || a.kind != GPUMEM_KIND_MANAGED)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is not managed memory (gpumem_managed_alloc)", ptr);
    size_t off = reinterpret_cast<uintptr_t>(ptr) - a.base;
    if (count > a.size - off)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "range %p + %zu bytes runs past the end of the managed allocation at %p "
                    "of %zu bytes", ptr, count, reinterpret_cast<void *>(a.base), a.size);
    *attrs = a.managed;
    *offset = off;
    *emulated = a.emulated;
    return GPUMEM_SUCCESS;
}

// Pinned host memory and the address the device uses for it.
status_t pinned_with_device_pointer(Runtime &rt, size_t size, uint32_t flags, void **ptr, void **device_ptr)
{
    if (status_t st = rt.backend->host_alloc(size, flags, ptr))
        return st;
    *device_ptr = *ptr;
    if (status_t st = rt.backend->host_device_pointer(*ptr, device_ptr)) {
        rt.backend->host_free(*ptr, size);
        return st;
    }
    return GPUMEM_SUCCESS;
}

status_t check_location(Runtime &rt, int32_t device)
{
    if (device == GPUMEM_DEVICE_HOST)
        return GPUMEM_SUCCESS;
    return check_device(rt, device);
}

int64_t location_bit(int32_t device) { return int64_t{1} << (device + 1); }

} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_malloc(void **ptr, size_t size)
{
    return entry("gpumem_malloc", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        if (size == 0)
            return GPUMEM_SUCCESS;
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
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
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_free(void *ptr)
{
    return entry("gpumem_free", [&](Runtime &rt) {
        if (!ptr)
            return GPUMEM_SUCCESS;
        auto freeable = [](const Allocation &a) {
            return a.kind == GPUMEM_KIND_DEVICE || a.kind == GPUMEM_KIND_HOST_PINNED || a.kind == GPUMEM_KIND_MANAGED;
        };
        Allocation a;
        if (rt.registry.find_base(ptr, &a) && freeable(a))
            return take_and_release(rt, ptr, freeable, "memory from gpumem_malloc, _host_alloc or _managed_alloc");
        pool::Allocation block;
        if (pool::lookup(ptr, &block) && block.base == ptr) {
            // Stream-ordered memory freed synchronously: wait for the device's
            // work first so nothing pending still touches it.
            if (status_t st = check_device(rt, block.device))
                return st;
            EpochSnapshot snapshot = snapshot_epochs(rt, block.device);
            if (status_t st = rt.backend->device_synchronize(block.device))
                return st;
            StreamObject &def = rt.devices[block.device]->default_stream;
            pool::Allocation freed;
            if (status_t st = pool::deallocate(ptr, def.state, &freed))
                return st;
            gpumem_pool_t handle = handle_from_bits<gpumem_pool_t>(pool_handle_of(rt, freed.pool));
            account_free(GPUMEM_KIND_STREAM_ORDERED, ptr, freed.size, freed.device, false, nullptr, handle);
            snapshot.emplace_back(&def, def.state.free_epoch.load(std::memory_order_acquire));
            after_device_sync(snapshot, block.device);
            return GPUMEM_SUCCESS;
        }
        NativeBlock native;
        if (rt.native_pools && rt.native_blocks.take(ptr, &native)) {
            // A vendor pool's block, freed synchronously: in order on the
            // default stream once the device is idle, then waited for.
            status_t st = rt.backend->device_synchronize(native.device);
            if (st == GPUMEM_SUCCESS)
                st = rt.backend->native_pools()->free(ptr, nullptr);
            if (st != GPUMEM_SUCCESS) {
                rt.native_blocks.insert(ptr, native);
                return st;
            }
            account_free(GPUMEM_KIND_STREAM_ORDERED, ptr, native.size, native.device, false, nullptr,
                         handle_from_bits<gpumem_pool_t>(native.pool));
            return rt.backend->device_synchronize(native.device);
        }
        return explain_bad_pointer(rt, ptr, "memory from gpumem_malloc, _host_alloc, _managed_alloc or _malloc_async");
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy(void *dst, const void *src, size_t n)
{
    return entry("gpumem_memcpy", [&](Runtime &rt) { return copy(rt, dst, src, n, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy_async(void *dst, const void *src, size_t n, gpumem_stream_t stream)
{
    return entry("gpumem_memcpy_async", [&](Runtime &rt) { return copy(rt, dst, src, n, stream, true); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset(void *dst, int32_t value, size_t n)
{
    return entry("gpumem_memset", [&](Runtime &rt) { return fill(rt, dst, value, n, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_async(void *dst, int32_t value, size_t n, gpumem_stream_t stream)
{
    return entry("gpumem_memset_async", [&](Runtime &rt) { return fill(rt, dst, value, n, stream, true); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_alloc(void **ptr, size_t size, uint32_t flags)
{
    return entry("gpumem_host_alloc", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        GPUMEM_REQUIRE(!(flags & ~k_host_alloc_flags), "flags 0x%x has unknown bits; use GPUMEM_HOST_* flags", flags);
        GPUMEM_REQUIRE(!((flags & GPUMEM_HOST_COHERENT) && (flags & GPUMEM_HOST_NONCOHERENT)),
                       "GPUMEM_HOST_COHERENT and GPUMEM_HOST_NONCOHERENT exclude each other");
        if (size == 0)
            return GPUMEM_SUCCESS;
        void *p = nullptr, *dptr = nullptr;
        if (!pinned_from_cache(rt, size, flags, &p, &dptr)) {
            status_t st = pinned_with_device_pointer(rt, size, flags, &p, &dptr);
            if (st == GPUMEM_ERROR_OUT_OF_MEMORY && pinned_cache_flush(rt))
                st = pinned_with_device_pointer(rt, size, flags, &p, &dptr);
            if (st)
                return st;
        }
        Allocation a;
        a.base = reinterpret_cast<uintptr_t>(p);
        a.size = size;
        a.kind = GPUMEM_KIND_HOST_PINNED;
        a.device = GPUMEM_DEVICE_HOST;
        a.flags = flags;
        a.device_pointer = dptr;
        record(rt, a);
        *ptr = p;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_free(void *ptr)
{
    return entry("gpumem_host_free", [&](Runtime &rt) {
        if (!ptr)
            return GPUMEM_SUCCESS;
        return take_and_release(
            rt, ptr, [](const Allocation &a) { return a.kind == GPUMEM_KIND_HOST_PINNED; },
            "pinned host memory from gpumem_host_alloc");
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_register(void *ptr, size_t size, uint32_t flags)
{
    return entry("gpumem_host_register", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        GPUMEM_REQUIRE(size > 0, "size is 0: give the number of bytes to register");
        GPUMEM_REQUIRE(!(flags & ~k_host_register_flags), "flags 0x%x has unknown bits; use GPUMEM_HOST_REGISTER_* flags",
                       flags);
        GPUMEM_REQUIRE(reinterpret_cast<uintptr_t>(ptr) + size > reinterpret_cast<uintptr_t>(ptr),
                       "range %p + %zu bytes wraps around the address space", ptr, size);
        GPUMEM_REQUIRE(!rt.registry.overlaps(ptr, size),
                       "range %p + %zu bytes overlaps memory that is already registered or allocated by gpumem", ptr,
                       size);
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        int32_t level = rt.devices[device]->host_register_level;
        if (level == GPUMEM_SUPPORT_NONE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "host_register is %s on device %d and GPUMEM_FALLBACK=deny refuses to emulate it",
                        rt.disabled(feature_host_register) ? "disabled by GPUMEM_DISABLE" : "not supported", device);
        Allocation a;
        a.base = reinterpret_cast<uintptr_t>(ptr);
        a.size = size;
        a.kind = GPUMEM_KIND_HOST_REGISTERED;
        a.device = GPUMEM_DEVICE_HOST;
        a.flags = flags;
        a.device_pointer = ptr;
        if (level == GPUMEM_SUPPORT_NATIVE) {
            if (status_t st = rt.backend->host_register(ptr, size, flags))
                return st;
            a.locked = true;
            void *dptr = ptr;
            if (rt.backend->host_device_pointer(ptr, &dptr) == GPUMEM_SUCCESS)
                a.device_pointer = dptr;
        } else {
            // Recorded but not page-locked: copies work, just not at pinned speed.
            a.emulated = true;
            note_fallback(rt, feature_host_register, device, "registered memory stays pageable (recorded only)");
        }
        record(rt, a);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_unregister(void *ptr)
{
    return entry("gpumem_host_unregister", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return take_and_release(
            rt, ptr, [](const Allocation &a) { return a.kind == GPUMEM_KIND_HOST_REGISTERED; },
            "host memory registered with gpumem_host_register");
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_get_device_pointer(void **dptr, void *hptr)
{
    return entry("gpumem_host_get_device_pointer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(dptr, "dptr is NULL: pass the address of a pointer");
        GPUMEM_REQUIRE(hptr, "hptr is NULL");
        Allocation a;
        if (!rt.registry.find_containing(hptr, &a) ||
            !(a.kind == GPUMEM_KIND_HOST_PINNED || a.kind == GPUMEM_KIND_HOST_REGISTERED ||
              (a.kind == GPUMEM_KIND_MANAGED && a.emulated)))
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "%p is not pinned or registered host memory (gpumem_host_alloc / gpumem_host_register)", hptr);
        *dptr = static_cast<char *>(a.device_pointer) + (reinterpret_cast<uintptr_t>(hptr) - a.base);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_managed_alloc(void **ptr, size_t size, uint32_t flags)
{
    return entry("gpumem_managed_alloc", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        if (flags == 0)
            flags = GPUMEM_ATTACH_GLOBAL;
        GPUMEM_REQUIRE(flags == GPUMEM_ATTACH_GLOBAL || flags == GPUMEM_ATTACH_HOST,
                       "flags 0x%x: managed allocations take GPUMEM_ATTACH_GLOBAL or GPUMEM_ATTACH_HOST "
                       "(GPUMEM_ATTACH_SINGLE is for gpumem_stream_attach)", flags);
        if (size == 0)
            return GPUMEM_SUCCESS;
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        int32_t level = rt.devices[device]->managed_level;
        if (level == GPUMEM_SUPPORT_NONE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "managed memory is %s on device %d and GPUMEM_FALLBACK=deny refuses to emulate it with mapped "
                        "pinned memory", rt.disabled(feature_managed) ? "disabled by GPUMEM_DISABLE" : "not supported",
                        device);
        Allocation a;
        a.kind = GPUMEM_KIND_MANAGED;
        a.device = device;
        a.size = size;
        a.flags = flags;
        a.managed = std::make_shared<ManagedAttributes>();
        a.managed->attach_flags = flags;
        void *p = nullptr;
        if (level == GPUMEM_SUPPORT_NATIVE) {
            if (status_t st = rt.backend->managed_alloc(device, size, flags, &p))
                return st;
            a.device_pointer = p;
        } else {
            // One pointer valid on host and device: mapped, portable pinned memory.
            if (status_t st = pinned_with_device_pointer(rt, size, GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE, &p,
                                                         &a.device_pointer))
                return st;
            a.emulated = true;
            note_fallback(rt, feature_managed, device, "emulating managed memory with mapped pinned host memory");
        }
        a.base = reinterpret_cast<uintptr_t>(p);
        record(rt, a);
        *ptr = p;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_prefetch_async(const void *ptr, size_t count, int32_t device, gpumem_stream_t stream)
{
    return entry("gpumem_prefetch_async", [&](Runtime &rt) {
        std::shared_ptr<ManagedAttributes> attrs;
        size_t offset = 0;
        bool emulated = false;
        if (status_t st = managed_range(rt, ptr, count, &attrs, &offset, &emulated))
            return st;
        if (status_t st = check_location(rt, device))
            return st;
        StreamObject *s = nullptr;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        // Emulated managed memory lives in host memory: nothing moves.
        if (!emulated)
            if (status_t st = rt.backend->prefetch(ptr, count, device, s->state.native))
                return st;
        std::lock_guard<std::mutex> lock(attrs->mutex);
        attrs->last_prefetch.set(offset, offset + count, device);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    return entry("gpumem_advise", [&](Runtime &rt) {
        std::shared_ptr<ManagedAttributes> attrs;
        size_t offset = 0;
        bool emulated = false;
        if (status_t st = managed_range(rt, ptr, count, &attrs, &offset, &emulated))
            return st;
        switch (advice) {
        case GPUMEM_ADVISE_SET_READ_MOSTLY:
        case GPUMEM_ADVISE_UNSET_READ_MOSTLY:
        case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION:
            break; // the device is ignored, as by the vendors
        case GPUMEM_ADVISE_SET_PREFERRED_LOCATION:
        case GPUMEM_ADVISE_SET_ACCESSED_BY:
        case GPUMEM_ADVISE_UNSET_ACCESSED_BY:
            if (status_t st = check_location(rt, device))
                return st;
            break;
        case GPUMEM_ADVISE_SET_COARSE_GRAIN:
        case GPUMEM_ADVISE_UNSET_COARSE_GRAIN:
            // AMD only: accepted elsewhere and without effect.
            if (rt.backend_id != GPUMEM_BACKEND_HIP || emulated)
                return GPUMEM_SUCCESS;
            break;
        default:
            return fail(GPUMEM_ERROR_INVALID_VALUE, "advice %d is not a GPUMEM_ADVISE_* value", advice);
        }
        if (!emulated)
            if (status_t st = rt.backend->advise(ptr, count, advice, device))
                return st;
        std::lock_guard<std::mutex> lock(attrs->mutex);
        size_t end = offset + count;
        switch (advice) {
        case GPUMEM_ADVISE_SET_READ_MOSTLY: attrs->read_mostly.set(offset, end, 1); break;
        case GPUMEM_ADVISE_UNSET_READ_MOSTLY: attrs->read_mostly.set(offset, end, 0); break;
        case GPUMEM_ADVISE_SET_PREFERRED_LOCATION: attrs->preferred_location.set(offset, end, device); break;
        case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION:
            attrs->preferred_location.set(offset, end, GPUMEM_LOCATION_INVALID);
            break;
        case GPUMEM_ADVISE_SET_ACCESSED_BY:
            attrs->accessed_by.update(offset, end, [&](int64_t v) { return v | location_bit(device); });
            break;
        case GPUMEM_ADVISE_UNSET_ACCESSED_BY:
            attrs->accessed_by.update(offset, end, [&](int64_t v) { return v & ~location_bit(device); });
            break;
        default: break;
        }
        return GPUMEM_SUCCESS;
    });
}

namespace {

status_t range_attribute(Runtime &rt, void *data, size_t data_size, int32_t attribute, const void *ptr, size_t count)
{
    GPUMEM_REQUIRE(data, "data is NULL: pass a buffer for the attribute's value");
    switch (attribute) {
    case GPUMEM_RANGE_READ_MOSTLY:
    case GPUMEM_RANGE_PREFERRED_LOCATION:
    case GPUMEM_RANGE_LAST_PREFETCH_LOCATION:
        GPUMEM_REQUIRE(data_size == sizeof(int32_t), "attribute %d is an int32_t: data_size must be 4, not %zu",
                       attribute, data_size);
        break;
    case GPUMEM_RANGE_ACCESSED_BY:
        GPUMEM_REQUIRE(data_size >= sizeof(int32_t) && data_size % sizeof(int32_t) == 0,
                       "GPUMEM_RANGE_ACCESSED_BY fills an int32_t array: data_size must be a non-zero multiple of 4, "
                       "not %zu", data_size);
        break;
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE, "attribute %d is not a GPUMEM_RANGE_* value", attribute);
    }
    std::shared_ptr<ManagedAttributes> attrs;
    size_t offset = 0;
    bool emulated = false;
    if (status_t st = managed_range(rt, ptr, count, &attrs, &offset, &emulated))
        return st;
    std::lock_guard<std::mutex> lock(attrs->mutex);
    size_t end = offset + count;
    int32_t *out = static_cast<int32_t *>(data);
    int64_t v = 0;
    switch (attribute) {
    case GPUMEM_RANGE_READ_MOSTLY:
        *out = attrs->read_mostly.all_of(offset, end) ? 1 : 0;
        break;
    case GPUMEM_RANGE_PREFERRED_LOCATION:
        *out = attrs->preferred_location.uniform(offset, end, &v) ? static_cast<int32_t>(v) : GPUMEM_LOCATION_INVALID;
        break;
    case GPUMEM_RANGE_LAST_PREFETCH_LOCATION:
        *out = attrs->last_prefetch.uniform(offset, end, &v) ? static_cast<int32_t>(v) : GPUMEM_LOCATION_INVALID;
        break;
    case GPUMEM_RANGE_ACCESSED_BY: {
        int64_t mask = attrs->accessed_by.all_of(offset, end);
        size_t slots = data_size / sizeof(int32_t), n = 0;
        for (int32_t d = GPUMEM_DEVICE_HOST; d < rt.device_count() && n < slots; ++d)
            if (mask & location_bit(d))
                out[n++] = d;
        for (; n < slots; ++n)
            out[n] = GPUMEM_LOCATION_INVALID;
        break;
    }
    }
    return GPUMEM_SUCCESS;
}

} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_range_get_attribute(void *data, size_t data_size, int32_t attribute,
                                                         const void *ptr, size_t count)
{
    return entry("gpumem_range_get_attribute",
                 [&](Runtime &rt) { return range_attribute(rt, data, data_size, attribute, ptr, count); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_range_get_attributes(void **data, size_t *data_sizes, int32_t *attributes,
                                                          size_t n, const void *ptr, size_t count)
{
    return entry("gpumem_range_get_attributes", [&](Runtime &rt) {
        GPUMEM_REQUIRE(data && data_sizes && attributes, "data, data_sizes and attributes must be non-NULL arrays");
        GPUMEM_REQUIRE(n > 0, "n is 0: ask for at least one attribute");
        for (size_t i = 0; i < n; ++i)
            if (status_t st = range_attribute(rt, data[i], data_sizes[i], attributes[i], ptr, count)) {
                char context[48];
                std::snprintf(context, sizeof context, "attribute %zu", i);
                prefix_error(context);
                return st;
            }
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_stream_attach(gpumem_stream_t stream, void *ptr, size_t length, uint32_t flags)
{
    return entry("gpumem_stream_attach", [&](Runtime &rt) {
        GPUMEM_REQUIRE(flags == GPUMEM_ATTACH_GLOBAL || flags == GPUMEM_ATTACH_HOST || flags == GPUMEM_ATTACH_SINGLE,
                       "flags 0x%x: give exactly one of GPUMEM_ATTACH_GLOBAL, _HOST or _SINGLE", flags);
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        StreamObject *s = nullptr;
        if (status_t st = resolve_stream(rt, stream, &s))
            return st;
        Allocation a;
        if (!rt.registry.find_base(ptr, &a) || a.kind != GPUMEM_KIND_MANAGED)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is not the start of a managed allocation", ptr);
        GPUMEM_REQUIRE(length == 0 || length == a.size,
                       "length %zu: managed memory attaches whole (give 0 or the allocation's size %zu)", length, a.size);
        if (!a.emulated)
            if (status_t st = rt.backend->stream_attach(s->state.native, ptr, a.size, flags))
                return st;
        std::lock_guard<std::mutex> lock(a.managed->mutex);
        a.managed->attach_flags = flags;
        return GPUMEM_SUCCESS;
    });
}
