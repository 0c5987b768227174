// Explicit device memory, copies, pinned host memory and managed memory.
#include <cstdio>

#include "api/entry.hpp"

using namespace gpumem::detail;

namespace {

constexpr uint32_t k_host_alloc_flags = GPUMEM_HOST_PORTABLE | GPUMEM_HOST_MAPPED | GPUMEM_HOST_WRITE_COMBINED |
                                        GPUMEM_HOST_COHERENT | GPUMEM_HOST_NONCOHERENT;
constexpr uint32_t k_host_register_flags =
    GPUMEM_HOST_REGISTER_PORTABLE | GPUMEM_HOST_REGISTER_MAPPED | GPUMEM_HOST_REGISTER_READ_ONLY;

status_t copy(Runtime &rt, void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async)
{
    if (n == 0)
        return GPUMEM_SUCCESS;
    GPUMEM_REQUIRE(dst && src, "dst and src must be non-NULL when n > 0 (dst %p, src %p)", dst, src);
    return rt.memory.copy(dst, src, n, stream, async);
}

status_t fill(Runtime &rt, void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async)
{
    if (n == 0)
        return GPUMEM_SUCCESS;
    GPUMEM_REQUIRE(dst, "dst is NULL");
    return rt.memory.fill(dst, value, n, stream, async);
}

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
    return rt.managed.range_attribute(data, data_size, attribute, ptr, count);
}

} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_malloc(void **ptr, size_t size)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_malloc");
    return entry("gpumem_malloc", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        if (size == 0)
            return GPUMEM_SUCCESS;
        return oom::note_current(rt.memory.device_alloc(size, ptr), GPUMEM_KIND_DEVICE, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_free(void *ptr)
{
    return entry("gpumem_free", [&](Runtime &rt) {
        if (!ptr)
            return GPUMEM_SUCCESS;
        return rt.memory.free(ptr);
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
        return oom::note_current(rt.pinned.alloc(size, flags, ptr), GPUMEM_KIND_HOST_PINNED, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_free(void *ptr)
{
    return entry("gpumem_host_free", [&](Runtime &rt) {
        if (!ptr)
            return GPUMEM_SUCCESS;
        return rt.pinned.free(ptr);
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
        return rt.pinned.register_range(ptr, size, flags);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_unregister(void *ptr)
{
    return entry("gpumem_host_unregister", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return rt.pinned.unregister_range(ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_host_get_device_pointer(void **dptr, void *hptr)
{
    return entry("gpumem_host_get_device_pointer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(dptr, "dptr is NULL: pass the address of a pointer");
        GPUMEM_REQUIRE(hptr, "hptr is NULL");
        return rt.pinned.device_pointer(hptr, dptr);
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
        return oom::note_current(rt.managed.alloc(size, flags, ptr), GPUMEM_KIND_MANAGED, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_prefetch_async(const void *ptr, size_t count, int32_t device, gpumem_stream_t stream)
{
    return entry("gpumem_prefetch_async",
                 [&](Runtime &rt) { return rt.managed.prefetch(ptr, count, device, stream); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    return entry("gpumem_advise", [&](Runtime &rt) { return rt.managed.advise(ptr, count, advice, device); });
}

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
        // CUDA refuses SINGLE on the default stream; every backend does, so
        // that what runs on a laptop runs on a GPU.
        GPUMEM_REQUIRE(stream || flags != GPUMEM_ATTACH_SINGLE,
                       "GPUMEM_ATTACH_SINGLE needs a stream of your own: the default stream (NULL) is shared by "
                       "the whole device; create one with gpumem_stream_create");
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return rt.managed.attach(stream, ptr, length, flags);
    });
}
