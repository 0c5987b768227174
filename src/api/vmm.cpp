// Virtual memory management: physical handles, reservations, mappings, access.
#include "api/entry.hpp"
#include "core/stats.hpp"

using namespace gpumem::detail;

namespace {

constexpr uint32_t k_handle_types = GPUMEM_HANDLE_POSIX_FD;

status_t require_vmm(Runtime &rt, int32_t device)
{
    if (status_t st = check_device(rt, device))
        return st;
    if (rt.devices[device]->vmm_level != GPUMEM_SUPPORT_NATIVE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "virtual memory management (vmm) is %s on device %d; raw VMM calls cannot be emulated "
                    "(growable buffers still work by allocate-copy-free)",
                    rt.disabled(feature_vmm) ? "disabled by GPUMEM_DISABLE" : "not supported", device);
    return GPUMEM_SUCCESS;
}

size_t granularity_of(Runtime &rt, int32_t device) { return rt.devices[device]->caps.vmm_granularity; }

status_t resolve_mem(gpumem_mem_handle_t handle, MemHandleObject **out)
{
    MemHandleObject *m = mem_handle_table().get(handle);
    if (!m)
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "memory handle 0x%llx is not live (released, never created, or from "
                    "before gpumem_finalize)", static_cast<unsigned long long>(handle));
    *out = m;
    return GPUMEM_SUCCESS;
}

// The reservation holding [p, p+size), under rt.vmm_mutex.
Reservation *reservation_of(Runtime &rt, uintptr_t p, size_t size)
{
    auto it = rt.reservations.upper_bound(p);
    if (it == rt.reservations.begin())
        return nullptr;
    --it;
    if (p - it->first >= it->second.size || size > it->second.size - (p - it->first))
        return nullptr;
    return &it->second;
}

// The mappings that exactly tile [p, p+size), under rt.vmm_mutex; empty if they don't.
std::vector<std::map<uintptr_t, Mapping>::iterator> whole_mappings(Reservation &r, uintptr_t p, size_t size)
{
    std::vector<std::map<uintptr_t, Mapping>::iterator> out;
    uintptr_t at = p, end = p + size;
    auto it = r.mappings.find(p);
    while (it != r.mappings.end() && it->first == at && at < end) {
        out.push_back(it);
        at += it->second.size;
        ++it;
    }
    if (at != end)
        out.clear();
    return out;
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
        gpumem_alloc_props_t p = read_struct(props);
        if (status_t st = require_vmm(rt, p.device))
            return st;
        return rt.backend->vmm_granularity(p.device, option, granularity);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_create(gpumem_mem_handle_t *handle, size_t size,
                                                const gpumem_alloc_props_t *props)
{
    return entry("gpumem_mem_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the address of a gpumem_mem_handle_t");
        GPUMEM_REQUIRE_STRUCT(props, gpumem_alloc_props_t);
        gpumem_alloc_props_t p = read_struct(props);
        if (status_t st = require_vmm(rt, p.device))
            return st;
        GPUMEM_REQUIRE(!(p.handle_types & ~k_handle_types), "handle_types 0x%x has unknown bits", p.handle_types);
        if ((p.handle_types & GPUMEM_HANDLE_POSIX_FD) && !(rt.devices[p.device]->ipc_types & GPUMEM_HANDLE_POSIX_FD))
            return fail(GPUMEM_ERROR_NOT_SUPPORTED, "POSIX file-descriptor handles are %s on device %d",
                        rt.disabled(feature_ipc) ? "disabled by GPUMEM_DISABLE" : "not supported", p.device);
        size_t g = granularity_of(rt, p.device);
        GPUMEM_REQUIRE(size > 0 && size % g == 0,
                       "size %zu is not a non-zero multiple of the granularity %zu (gpumem_mem_get_granularity)", size, g);
        void *phys = nullptr;
        if (status_t st = rt.backend->vmm_create(p.device, size, p.handle_types, &phys))
            return st;
        uint64_t h = 0;
        MemHandleObject *m = mem_handle_table().create(&h);
        m->phys = phys;
        m->size = size;
        m->device = p.device;
        m->handle_types = p.handle_types;
        account_alloc(GPUMEM_KIND_VIRTUAL, nullptr, size, p.device, false);
        *handle = h;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_release(gpumem_mem_handle_t handle)
{
    return entry("gpumem_mem_release", [&](Runtime &rt) {
        MemHandleObject *m = nullptr;
        if (status_t st = resolve_mem(handle, &m))
            return st;
        if (!mem_handle_table().retire(handle))
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "memory handle was released by another thread");
        // Mappings keep the memory alive until they are unmapped.
        status_t st = rt.backend->vmm_release(m->phys);
        account_free(GPUMEM_KIND_VIRTUAL, nullptr, m->size, m->device, false);
        m->phys = nullptr;
        mem_handle_table().recycle(handle);
        return st;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_address_reserve(void **ptr, size_t size, size_t alignment, void *addr_hint)
{
    return entry("gpumem_mem_address_reserve", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer");
        int32_t device = current_device();
        if (status_t st = require_vmm(rt, device))
            return st;
        size_t g = granularity_of(rt, device);
        GPUMEM_REQUIRE(size > 0 && size % g == 0, "size %zu is not a non-zero multiple of the granularity %zu", size, g);
        GPUMEM_REQUIRE(alignment == 0 || (alignment & (alignment - 1)) == 0, "alignment %zu is not a power of two",
                       alignment);
        if (alignment < g)
            alignment = g;
        // A hint that is not aligned cannot be honoured: not an error.
        if (reinterpret_cast<uintptr_t>(addr_hint) % alignment)
            addr_hint = nullptr;
        void *p = nullptr;
        if (status_t st = rt.backend->vmm_reserve(size, alignment, addr_hint, &p))
            return st;
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        Reservation &r = rt.reservations[reinterpret_cast<uintptr_t>(p)];
        r.size = size;
        r.mappings.clear();
        *ptr = p;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_address_free(void *ptr, size_t size)
{
    return entry("gpumem_mem_address_free", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        auto it = rt.reservations.find(reinterpret_cast<uintptr_t>(ptr));
        if (it == rt.reservations.end())
            return fail(GPUMEM_ERROR_INVALID_POINTER, "%p is not the start of a reservation from "
                        "gpumem_mem_address_reserve (or it was freed already)", ptr);
        GPUMEM_REQUIRE(size == it->second.size, "size %zu differs from the reservation's %zu bytes", size,
                       it->second.size);
        if (!it->second.mappings.empty())
            return fail(GPUMEM_ERROR_BUSY, "the reservation at %p still has %zu mapping(s); gpumem_mem_unmap them first",
                        ptr, it->second.mappings.size());
        if (status_t st = rt.backend->vmm_free(ptr, size))
            return st;
        rt.reservations.erase(it);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_map(void *ptr, size_t size, size_t offset, gpumem_mem_handle_t handle)
{
    return entry("gpumem_mem_map", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        MemHandleObject *m = nullptr;
        if (status_t st = resolve_mem(handle, &m))
            return st;
        if (status_t st = require_vmm(rt, m->device))
            return st;
        size_t g = granularity_of(rt, m->device);
        uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
        GPUMEM_REQUIRE(p % g == 0 && size > 0 && size % g == 0 && offset % g == 0,
                       "ptr %p, size %zu and offset %zu must be multiples of the granularity %zu (size non-zero)", ptr,
                       size, offset, g);
        GPUMEM_REQUIRE(offset <= m->size && size <= m->size - offset,
                       "offset %zu + size %zu runs past the end of the %zu-byte physical allocation", offset, size,
                       m->size);
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        Reservation *r = reservation_of(rt, p, size);
        GPUMEM_REQUIRE(r, "range %p + %zu bytes is not inside one reservation from gpumem_mem_address_reserve", ptr, size);
        auto next = r->mappings.lower_bound(p);
        bool overlaps = (next != r->mappings.end() && next->first < p + size) ||
                        (next != r->mappings.begin() && std::prev(next)->first + std::prev(next)->second.size > p);
        GPUMEM_REQUIRE(!overlaps, "range %p + %zu bytes overlaps an existing mapping; unmap it first", ptr, size);
        // CUDA and HIP map whole allocations only; every backend follows them
        // so that code written on one machine runs on the others.
        if (offset != 0 || size != m->size)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "mapping part of a physical allocation (offset %zu, size %zu of %zu bytes) is not supported: "
                        "map whole allocations (offset 0, size = the size given to gpumem_mem_create)", offset, size,
                        m->size);
        if (status_t st = rt.backend->vmm_map(ptr, size, offset, m->phys))
            return st;
        Mapping &mapping = r->mappings[p];
        mapping.size = size;
        mapping.device = m->device;
        mapping.access.clear();
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_unmap(void *ptr, size_t size)
{
    return entry("gpumem_mem_unmap", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr && size > 0, "ptr is NULL or size is 0");
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        Reservation *r = reservation_of(rt, reinterpret_cast<uintptr_t>(ptr), size);
        GPUMEM_REQUIRE(r, "range %p + %zu bytes is not inside a reservation", ptr, size);
        auto covered = whole_mappings(*r, reinterpret_cast<uintptr_t>(ptr), size);
        GPUMEM_REQUIRE(!covered.empty(), "range %p + %zu bytes does not cover whole mappings made by gpumem_mem_map",
                       ptr, size);
        for (auto it : covered) {
            if (status_t st = rt.backend->vmm_unmap(reinterpret_cast<void *>(it->first), it->second.size))
                return st;
            r->mappings.erase(it);
        }
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_set_access(void *ptr, size_t size, const gpumem_access_desc_t *descs,
                                                    size_t count)
{
    return entry("gpumem_mem_set_access", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr && size > 0, "ptr is NULL or size is 0");
        GPUMEM_REQUIRE(descs && count > 0, "descs is NULL or count is 0: give at least one gpumem_access_desc_t");
        for (size_t i = 0; i < count; ++i) {
            if (status_t st = check_device(rt, descs[i].device))
                return st;
            int32_t f = descs[i].flags;
            GPUMEM_REQUIRE(f == GPUMEM_ACCESS_NONE || f == GPUMEM_ACCESS_READ || f == GPUMEM_ACCESS_READWRITE,
                           "descs[%zu].flags %d is not GPUMEM_ACCESS_NONE, _READ or _READWRITE", i, f);
        }
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        Reservation *r = reservation_of(rt, reinterpret_cast<uintptr_t>(ptr), size);
        GPUMEM_REQUIRE(r, "range %p + %zu bytes is not inside a reservation", ptr, size);
        auto covered = whole_mappings(*r, reinterpret_cast<uintptr_t>(ptr), size);
        GPUMEM_REQUIRE(!covered.empty(), "range %p + %zu bytes is not fully mapped by whole gpumem_mem_map mappings",
                       ptr, size);
        for (size_t i = 0; i < count; ++i)
            if (status_t st = rt.backend->vmm_set_access(ptr, size, descs[i].device, descs[i].flags))
                return st;
        for (auto it : covered)
            for (size_t i = 0; i < count; ++i)
                it->second.access[descs[i].device] = descs[i].flags;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_get_access(uint64_t *flags, int32_t device, void *ptr)
{
    return entry("gpumem_mem_get_access", [&](Runtime &rt) {
        GPUMEM_REQUIRE(flags, "flags is NULL: pass the address of a uint64_t");
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        if (status_t st = check_device(rt, device))
            return st;
        std::lock_guard<std::mutex> lock(rt.vmm_mutex);
        uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
        Reservation *r = reservation_of(rt, p, 1);
        if (r) {
            auto m = r->mappings.upper_bound(p);
            if (m != r->mappings.begin() && p < std::prev(m)->first + std::prev(m)->second.size) {
                --m;
                auto a = m->second.access.find(device);
                *flags = a == m->second.access.end() ? GPUMEM_ACCESS_NONE : static_cast<uint64_t>(a->second);
                return GPUMEM_SUCCESS;
            }
        }
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is not in memory mapped with gpumem_mem_map", ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_export_to_shareable_handle(int32_t *fd, gpumem_mem_handle_t handle,
                                                                    int32_t handle_type)
{
    return entry("gpumem_mem_export_to_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(fd, "fd is NULL: pass the address of an int32_t");
        MemHandleObject *m = nullptr;
        if (status_t st = resolve_mem(handle, &m))
            return st;
        if (status_t st = require_ipc(rt, m->device, handle_type, false))
            return st;
        GPUMEM_REQUIRE(m->handle_types & GPUMEM_HANDLE_POSIX_FD,
                       "the handle was created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it cannot be shared");
        int out = -1;
        if (status_t st = rt.backend->vmm_export(m->phys, handle_type, &out))
            return st;
        *fd = out;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_import_from_shareable_handle(gpumem_mem_handle_t *handle, int32_t fd,
                                                                      int32_t handle_type)
{
    return entry("gpumem_mem_import_from_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(handle, "handle is NULL: pass the address of a gpumem_mem_handle_t");
        GPUMEM_REQUIRE(fd >= 0, "fd %d is not a file descriptor", fd);
        if (status_t st = require_ipc(rt, current_device(), handle_type, false))
            return st;
        if (status_t st = require_vmm(rt, current_device()))
            return st;
        void *phys = nullptr;
        int32_t device = 0;
        size_t size = 0;
        if (status_t st = rt.backend->vmm_import(fd, handle_type, &device, &size, &phys))
            return st;
        if (device < 0 || device >= rt.device_count())
            device = current_device();
        uint64_t h = 0;
        MemHandleObject *m = mem_handle_table().create(&h);
        m->phys = phys;
        m->size = size;
        m->device = device;
        m->handle_types = GPUMEM_HANDLE_POSIX_FD;
        account_alloc(GPUMEM_KIND_VIRTUAL, nullptr, size, device, false);
        *handle = h;
        return GPUMEM_SUCCESS;
    });
}
