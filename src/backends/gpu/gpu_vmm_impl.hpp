// GpuBackend<Vendor>: virtual memory management (create / reserve / map).
//
// A physical allocation is a Phys (gpu_backend.hpp) owned by the core's
// memory handle.  Sharing uses POSIX file descriptors only (a dma-buf on AMD).
#pragma once

#include <new>

#include <sys/stat.h>
#include <unistd.h>

#include "backends/gpu/gpu_backend.hpp"

namespace gpumem::detail::gpu {

template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_granularity(int32_t device, int32_t option, size_t *out)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.granularity(out, device, option == GPUMEM_GRANULARITY_RECOMMENDED),
                 "read the VMM granularity of device %d", device);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_create(int32_t device, size_t size, uint32_t handle_types, bool rdma, void **phys)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const size_t total = v_.device(device).total_memory;
    if (size > total)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot create %zu bytes of physical memory on device %d: more than its %zu bytes; ask for less",
                    size, device, total);
    PhysT *p = new (std::nothrow) PhysT;
    if (!p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create physical memory: out of host memory");
    // RDMA-capable memory carries a POSIX handle too: NCCL exports it to map
    // it in its peers' processes when the buffer is registered.
    const uint32_t types = rdma ? handle_types | GPUMEM_HANDLE_POSIX_FD : handle_types;
    status_t st = check(api(), v_.mem_create(&p->handle, size, device, types, rdma),
                        "create %zu bytes of %sphysical memory on device %d", size, rdma ? "RDMA-capable " : "",
                        device);
    if (st != GPUMEM_SUCCESS && (handle_types & GPUMEM_HANDLE_FABRIC))
        st = fabric_refused(st);
    if (st != GPUMEM_SUCCESS) {
        delete p;
        return st;
    }
    p->size = size;
    p->device = device;
    *phys = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::vmm_release(int32_t device, void *phys)
{
    PhysT *p = static_cast<PhysT *>(phys);
    Placed here(v_);
    status_t st = here.enter(device, device_count());
    if (st == GPUMEM_SUCCESS)
        st = check(api(), v_.mem_release(p->handle), "release %zu bytes of physical memory", p->size);
    delete p; // the core forgets the handle whatever the runtime said
    return st;
}

// The runtime's handle of the allocation mapped at `ptr` (a new reference,
// which vmm_release gives back), its device from the runtime's properties and
// its size from the address range of the mapping (0 where the runtime does not
// find one from `device`: the core knows the size of gpumem's own mappings).
template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_retain(int32_t device, void *ptr, int32_t *owner, size_t *size, void **phys)
{
    if (!v_.has_retain())
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot retain the allocation handle of %p: %s has no %s (CUDA 11.0, ROCm 6.0 or newer has it)",
                    ptr, Vendor::runtime_words, Vendor::retain_name);
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    PhysT *p = new (std::nothrow) PhysT;
    if (!p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot retain an allocation handle: out of host memory");
    if (status_t st = check(api(), v_.mem_retain(&p->handle, ptr),
                            "retain the allocation handle of %p (is it inside a VMM mapping?)", ptr)) {
        delete p;
        return st;
    }
    int32_t d = device;
    uint32_t types = 0;
    bool rdma = false;
    if (v_.has_allocation_properties()) {
        if (status_t st = check(api(), v_.allocation_properties(p->handle, &d, &types, &rdma),
                                "read the properties of the allocation mapped at %p", ptr)) {
            (void)v_.mem_release(p->handle); // the reference just taken; the first failure is the one to report
            delete p;
            return st;
        }
    }
    void *base = nullptr;
    size_t n = 0;
    if (!v_.has_address_range() || v_.address_range(&base, &n, ptr).r != Api::success)
        n = 0;
    p->size = n;
    p->device = d >= 0 && d < device_count() ? d : device;
    *owner = p->device;
    *size = n;
    *phys = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_properties(int32_t device, void *phys, int32_t *owner, uint32_t *handle_types,
                                            uint32_t *flags)
{
    PhysT *p = static_cast<PhysT *>(phys);
    if (!v_.has_allocation_properties())
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "cannot read the properties of a physical allocation: %s has no %s",
                    Vendor::runtime_words, Vendor::allocation_properties_name);
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    int32_t d = -1;
    bool rdma = false;
    if (status_t st = check(api(), v_.allocation_properties(p->handle, &d, handle_types, &rdma),
                            "read the properties of a physical allocation of device %d", device))
        return st;
    *owner = d >= 0 && d < device_count() ? d : p->device;
    *flags = rdma ? GPUMEM_POOL_RDMA : 0;
    return GPUMEM_SUCCESS;
}

// One reservation; the runtime takes the hint as a hint (the core's VMM
// service decides what to do when it is not honoured).
template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_reserve(int32_t device, size_t size, size_t alignment, void *hint, void **ptr)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *p = nullptr;
    if (status_t st = check(api(), v_.address_reserve(&p, size, alignment, hint),
                            "reserve %zu bytes of address space", size))
        return st;
    *ptr = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::vmm_free(int32_t device, void *ptr, size_t size)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.address_free(ptr, size), "free the reservation of %zu bytes at %p", size, ptr);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_map(int32_t device, void *ptr, size_t size, size_t offset, void *phys)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const PhysT *p = static_cast<const PhysT *>(phys);
    const Call<Result> c = v_.mem_map(ptr, size, offset, p->handle);
    // Both vendors document offsets and partial mappings but (as of CUDA
    // 13.0) refuse them: say so rather than leave a bare "not supported".
    if (c.r == Vendor::codes.not_supported && (offset != 0 || size != p->size))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot map %zu bytes at offset %zu of a %zu-byte physical allocation at %p: %s "
                    "maps only whole allocations (offset 0, the allocation's full size); create one handle per "
                    "mapping",
                    size, offset, p->size, ptr, Vendor::runtime_words);
    return check(api(), c, "map %zu bytes at %p (offset %zu of the physical memory)", size, ptr, offset);
}

template <typename Vendor> status_t GpuBackend<Vendor>::vmm_unmap(int32_t device, void *ptr, size_t size)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.mem_unmap(ptr, size), "unmap %zu bytes at %p", size, ptr);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_set_access(int32_t device, void *ptr, size_t size, int32_t accessor, int32_t flags)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.mem_set_access(ptr, size, &accessor, 1, flags),
                 "set access %d for device %d on %zu bytes at %p", flags, accessor, size, ptr);
}

// Every device's descriptor in one call (k_access_batch at a time): the
// driver charges per call, about as much for several devices as for one.
template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_set_access_all(int32_t device, void *ptr, size_t size, const int32_t *accessors,
                                                size_t count, int32_t flags)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    for (size_t at = 0; at < count; at += k_access_batch) {
        const size_t n = count - at < k_access_batch ? count - at : k_access_batch;
        if (status_t st = check(api(), v_.mem_set_access(ptr, size, accessors + at, n, flags),
                                "set access %d for %zu devices (device %d first) on %zu bytes at %p", flags, count,
                                accessors[0], size, ptr))
            return st;
    }
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::vmm_export(int32_t device, void *phys, int32_t, int *fd)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const PhysT *p = static_cast<const PhysT *>(phys);
    int out = -1;
    if (status_t st = check_ipc(api(), v_.mem_export(&out, p->handle), Sharing::exporting,
                                "export %zu bytes of physical memory", p->size))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::vmm_import(int32_t device, int fd, int32_t, int32_t *owner, size_t *size, void **phys)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    PhysT *p = new (std::nothrow) PhysT;
    if (!p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot import physical memory: out of host memory");
    // The descriptor travels as the handle's value; it stays the caller's.
    if (status_t st = check_ipc(api(), v_.mem_import(&p->handle, fd), Sharing::importing_descriptor,
                                "import physical memory from descriptor %d", fd)) {
        delete p;
        return st;
    }
    status_t st = check_ipc(api(), v_.allocation_device(p->handle, &p->device), Sharing::importing_descriptor,
                            "read the properties of imported memory");
    if (p->device < 0 || p->device >= device_count())
        p->device = 0; // numbered differently in the exporter (CUDA_ / HIP_VISIBLE_DEVICES)
    if (st == GPUMEM_SUCCESS)
        st = imported_size(fd, p->handle, p->device, &p->size);
    if (st != GPUMEM_SUCCESS) {
        (void)v_.mem_release(p->handle); // the failure already recorded is the one to report
        delete p;
        return st;
    }
    *owner = p->device;
    *size = p->size;
    *phys = p;
    return GPUMEM_SUCCESS;
}

// The core has checked the range: page-aligned device memory of one gpumem
// allocation of `device`.  What the runtime still refuses (a driver without
// the open kernel module, memory it cannot export) comes back as it says.
template <typename Vendor>
status_t GpuBackend<Vendor>::export_dmabuf(int32_t device, const void *ptr, size_t size, int *fd)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    int out = -1;
    if (status_t st = check(api(), v_.range_dmabuf(&out, ptr, size), "export %zu bytes at %p as a dma-buf", size, ptr))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

// The runtime tells an importer nothing of an allocation's size.  A
// descriptor that is a file (a memfd, as the fakes use) has the size as its
// length; a dma-buf (what ROCm exports) reports it to lseek(SEEK_END), while
// CUDA's descriptor is no file whose length could tell (/dev/nvidiactl).
// Otherwise mapping finds it: only a whole allocation maps at offset 0, so the
// first size that maps, counting up in granules, is the size (a failing
// cuMemMap costs about 1.5 us: a GiB is found in under a millisecond, a whole
// 141 GB device in about 0.1 s).  Should a runtime accept partial mappings,
// the largest size that maps is the size: bisection finds it.
template <typename Vendor>
status_t GpuBackend<Vendor>::imported_size(int fd, typename Vendor::Handle handle, int32_t device, size_t *size)
{
    size_t g = 0;
    if (status_t st = check(api(), v_.granularity(&g, device, false), "read the VMM granularity of device %d", device))
        return st;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        static_cast<uint64_t>(sb.st_size) % g == 0) {
        *size = static_cast<size_t>(sb.st_size);
        return GPUMEM_SUCCESS;
    }
    if (Vendor::dmabuf_size) {
        const off_t at = lseek(fd, 0, SEEK_CUR);
        const off_t end = lseek(fd, 0, SEEK_END);
        if (at >= 0)
            (void)lseek(fd, at, SEEK_SET); // the descriptor is the caller's: leave it as it was
        if (end > 0 && static_cast<uint64_t>(end) % g == 0) {
            *size = static_cast<size_t>(end);
            return GPUMEM_SUCCESS;
        }
    }

    const size_t units = largest_device() / g + 1; // no allocation is larger than its device
    void *scratch = nullptr;
    if (status_t st = check_ipc(api(), v_.address_reserve(&scratch, units * g, g, nullptr), Sharing::importing_descriptor,
                                "reserve address space to measure imported memory"))
        return st;
    auto maps = [&](size_t k, Call<Result> *c) {
        *c = v_.mem_map(scratch, k * g, 0, handle);
        if (c->r != Api::success)
            return false;
        (void)v_.mem_unmap(scratch, k * g); // a probe: the mapping is not kept
        return true;
    };
    status_t st = GPUMEM_SUCCESS;
    Call<Result> c{Api::success, nullptr};
    size_t found = 0;
    for (size_t k = 1; k <= units; ++k) {
        if (maps(k, &c)) {
            found = k;
            break;
        }
        if (c.r != Vendor::codes.not_supported && c.r != Vendor::codes.invalid_value) {
            st = check_ipc(api(), c, Sharing::importing_descriptor, "map imported memory to find its size");
            break;
        }
    }
    if (found && found < units && maps(found + 1, &c)) {
        // Partial mappings work: the largest size that maps.
        size_t lo = found + 1, hi = units;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo + 1) / 2;
            if (maps(mid, &c))
                lo = mid;
            else
                hi = mid - 1;
        }
        found = lo;
    }
    (void)v_.address_free(scratch, units * g); // the scratch range only
    if (st == GPUMEM_SUCCESS && !found)
        st = fail(GPUMEM_ERROR_IPC,
                  "cannot import memory from descriptor %d: no size of it maps, so its size cannot be found; pass a "
                  "descriptor from gpumem_mem_export_to_shareable_handle",
                  fd);
    if (st == GPUMEM_SUCCESS)
        *size = found * g;
    return st;
}

} // namespace gpumem::detail::gpu
