// Virtual memory management: physical handles, reservations, mappings, access (core/vmm).
#include "api/entry.hpp"

using namespace gpumem::detail;

namespace {
// gpumem_alloc_props_t.flags: GPUMEM_POOL_RDMA is the only bit.
status_t check_alloc_flags(uint32_t flags)
{
    if (flags & ~static_cast<uint32_t>(GPUMEM_POOL_RDMA))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "flags 0x%x has unknown bits; use 0 or GPUMEM_POOL_RDMA (and initialise the struct with "
                    "GPUMEM_ALLOC_PROPS_INIT)",
                    flags);
    return GPUMEM_SUCCESS;
}
} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_mem_get_granularity(size_t *granularity, const gpumem_alloc_props_t *props,
                                                         int32_t option)
{
    return entry("gpumem_mem_get_granularity", [&](Runtime &rt) {
        GPUMEM_REQUIRE(granularity, "granularity is NULL: pass the address of a size_t");
        GPUMEM_REQUIRE_STRUCT(props, gpumem_alloc_props_t);
        GPUMEM_REQUIRE(option == GPUMEM_GRANULARITY_MINIMUM || option == GPUMEM_GRANULARITY_RECOMMENDED,
                       "option %d is not GPUMEM_GRANULARITY_MINIMUM or _RECOMMENDED", option);
        const gpumem_alloc_props_t p = read_struct(props);
        if (status_t st = check_alloc_flags(p.flags))
            return st;
        return rt.vmm.granularity(p, option, granularity);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_create(gpumem_mem_handle_t *handle, size_t size,
                                                const gpumem_alloc_props_t *props)
{
    return entry("gpumem_mem_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the address of a gpumem_mem_handle_t");
        GPUMEM_REQUIRE_STRUCT(props, gpumem_alloc_props_t);
        const gpumem_alloc_props_t p = read_struct(props);
        if (status_t st = check_alloc_flags(p.flags))
            return st;
        return oom::note(rt.vmm.create(handle, size, p), p.device, GPUMEM_KIND_VIRTUAL, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_release(gpumem_mem_handle_t handle)
{
    return entry("gpumem_mem_release", [&](Runtime &rt) { return rt.vmm.release(handle); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_retain_allocation_handle(gpumem_mem_handle_t *handle, void *ptr)
{
    return entry("gpumem_mem_retain_allocation_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the address of a gpumem_mem_handle_t");
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass an address inside a VMM mapping (gpumem_mem_map)");
        return rt.vmm.retain(handle, ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_get_allocation_properties(gpumem_alloc_props_t *props,
                                                                   gpumem_mem_handle_t handle)
{
    return entry("gpumem_mem_get_allocation_properties", [&](Runtime &rt) {
        GPUMEM_REQUIRE_STRUCT(props, gpumem_alloc_props_t);
        gpumem_alloc_props_t full = read_struct(props);
        if (status_t st = rt.vmm.properties(&full, handle))
            return st;
        write_struct(props, full);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_address_reserve(void **ptr, size_t size, size_t alignment, void *addr_hint)
{
    return entry("gpumem_mem_address_reserve", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer");
        return rt.vmm.reserve(ptr, size, alignment, addr_hint);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_address_free(void *ptr, size_t size)
{
    return entry("gpumem_mem_address_free", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return rt.vmm.address_free(ptr, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_map(void *ptr, size_t size, size_t offset, gpumem_mem_handle_t handle)
{
    return entry("gpumem_mem_map", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return rt.vmm.map(ptr, size, offset, handle);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_unmap(void *ptr, size_t size)
{
    return entry("gpumem_mem_unmap", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr && size > 0, "ptr is NULL or size is 0");
        return rt.vmm.unmap(ptr, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_set_access(void *ptr, size_t size, const gpumem_access_desc_t *descs,
                                                    size_t count)
{
    return entry("gpumem_mem_set_access", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr && size > 0, "ptr is NULL or size is 0");
        GPUMEM_REQUIRE(descs && count > 0, "descs is NULL or count is 0: give at least one gpumem_access_desc_t");
        return rt.vmm.set_access(ptr, size, descs, count);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_get_access(uint64_t *flags, int32_t device, void *ptr)
{
    return entry("gpumem_mem_get_access", [&](Runtime &rt) {
        GPUMEM_REQUIRE(flags, "flags is NULL: pass the address of a uint64_t");
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return rt.vmm.get_access(flags, device, ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_export_to_shareable_handle(int32_t *fd, gpumem_mem_handle_t handle,
                                                                    int32_t handle_type)
{
    return entry("gpumem_mem_export_to_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(fd, "fd is NULL: pass the address of an int32_t");
        return rt.vmm.export_fd(fd, handle, handle_type);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_import_from_shareable_handle(gpumem_mem_handle_t *handle, int32_t fd,
                                                                      int32_t handle_type)
{
    return entry("gpumem_mem_import_from_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the address of a gpumem_mem_handle_t");
        GPUMEM_REQUIRE(fd >= 0, "fd %d is not a file descriptor", fd);
        return rt.vmm.import_fd(handle, fd, handle_type);
    });
}
