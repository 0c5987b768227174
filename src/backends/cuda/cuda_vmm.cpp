// Virtual memory management over cuMemCreate / cuMemAddressReserve / cuMemMap.
//
// A physical allocation is a Phys (cuda_backend.hpp) owned by the core's
// memory handle.  Sharing uses POSIX file descriptors only.
#include "backends/cuda/cuda_backend.hpp"

#include <new>

#include <sys/stat.h>

namespace gpumem::detail::cuda {

namespace {

// Pinned device memory on `device`, as every gpumem VMM allocation is.
CUmemAllocationProp pinned_on(int32_t device)
{
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = location_of(device);
    return prop;
}

} // namespace

status_t CudaBackend::granularity(int32_t device, CUmemAllocationGranularity_flags option, size_t *out)
{
    CUmemAllocationProp prop = pinned_on(device);
    return check(d_, d_.cuMemGetAllocationGranularity(out, &prop, option), "cuMemGetAllocationGranularity",
                 "read the VMM granularity of device %d", device);
}

status_t CudaBackend::vmm_granularity(int32_t device, int32_t option, size_t *out)
{
    if (status_t st = bind(device))
        return st;
    return granularity(device,
                       option == GPUMEM_GRANULARITY_RECOMMENDED ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
                                                                : CU_MEM_ALLOC_GRANULARITY_MINIMUM,
                       out);
}

status_t CudaBackend::vmm_create(int32_t device, size_t size, uint32_t handle_types, void **phys)
{
    if (status_t st = bind(device))
        return st;
    if (size > devices_[device].total_memory)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot create %zu bytes of physical memory on device %d: more than its %zu bytes; ask for less",
                    size, device, devices_[device].total_memory);
    Phys *p = new (std::nothrow) Phys;
    if (!p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create physical memory: out of host memory");
    CUmemAllocationProp prop = pinned_on(device);
    if (handle_types & GPUMEM_HANDLE_POSIX_FD)
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (status_t st = check(d_, d_.cuMemCreate(&p->handle, size, &prop, 0), "cuMemCreate",
                            "create %zu bytes of physical memory on device %d", size, device)) {
        delete p;
        return st;
    }
    p->size = size;
    p->device = device;
    *phys = p;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::vmm_release(void *phys)
{
    Phys *p = static_cast<Phys *>(phys);
    status_t st = ensure_context();
    if (st == GPUMEM_SUCCESS)
        st = check(d_, d_.cuMemRelease(p->handle), "cuMemRelease", "release %zu bytes of physical memory", p->size);
    delete p; // the core forgets the handle whatever the driver said
    return st;
}

status_t CudaBackend::vmm_reserve(size_t size, size_t alignment, void *hint, void **ptr)
{
    if (status_t st = ensure_context())
        return st;
    CUdeviceptr p = 0;
    CUresult r = d_.cuMemAddressReserve(&p, size, alignment, dptr(hint), 0);
    // A hint that cannot be honoured is not an error: try anywhere.
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_OUT_OF_MEMORY && hint)
        r = d_.cuMemAddressReserve(&p, size, alignment, 0, 0);
    if (status_t st = check(d_, r, "cuMemAddressReserve", "reserve %zu bytes of address space", size))
        return st;
    *ptr = as_pointer(p);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::vmm_free(void *ptr, size_t size)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemAddressFree(dptr(ptr), size), "cuMemAddressFree",
                 "free the reservation of %zu bytes at %p", size, ptr);
}

status_t CudaBackend::vmm_map(void *ptr, size_t size, size_t offset, void *phys)
{
    if (status_t st = ensure_context())
        return st;
    const Phys *p = static_cast<const Phys *>(phys);
    CUresult r = d_.cuMemMap(dptr(ptr), size, offset, p->handle, 0);
    // CUDA documents offsets and partial mappings but (as of 13.0) refuses
    // them: say so rather than leave a bare CUDA_ERROR_NOT_SUPPORTED.
    if (r == CUDA_ERROR_NOT_SUPPORTED && (offset != 0 || size != p->size))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot map %zu bytes at offset %zu of a %zu-byte physical allocation at %p: this CUDA driver "
                    "maps only whole allocations (offset 0, the allocation's full size); create one handle per "
                    "mapping",
                    size, offset, p->size, ptr);
    return check(d_, r, "cuMemMap", "map %zu bytes at %p (offset %zu of the physical memory)", size, ptr, offset);
}

status_t CudaBackend::vmm_unmap(void *ptr, size_t size)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemUnmap(dptr(ptr), size), "cuMemUnmap", "unmap %zu bytes at %p", size, ptr);
}

status_t CudaBackend::vmm_set_access(void *ptr, size_t size, int32_t device, int32_t flags)
{
    if (status_t st = ensure_context())
        return st;
    CUmemAccessDesc desc{};
    desc.location = location_of(device);
    desc.flags = access_flags(flags);
    return check(d_, d_.cuMemSetAccess(dptr(ptr), size, &desc, 1), "cuMemSetAccess",
                 "set access %d for device %d on %zu bytes at %p", flags, device, size, ptr);
}

status_t CudaBackend::vmm_export(void *phys, int32_t, int *fd)
{
    if (status_t st = ensure_context())
        return st;
    const Phys *p = static_cast<const Phys *>(phys);
    int out = -1; // a POSIX descriptor is written as an int
    if (status_t st = check_ipc(d_, d_.cuMemExportToShareableHandle(&out, p->handle,
                                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                                "cuMemExportToShareableHandle", "export %zu bytes of physical memory", p->size))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::vmm_import(int fd, int32_t, int32_t *device, size_t *size, void **phys)
{
    if (status_t st = ensure_context())
        return st;
    Phys *p = new (std::nothrow) Phys;
    if (!p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot import physical memory: out of host memory");
    // The descriptor travels as the handle's value; it stays the caller's.
    void *shared = reinterpret_cast<void *>(static_cast<uintptr_t>(fd));
    if (status_t st = check_ipc(d_, d_.cuMemImportFromShareableHandle(&p->handle, shared,
                                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                                "cuMemImportFromShareableHandle", "import physical memory from descriptor %d", fd)) {
        delete p;
        return st;
    }
    CUmemAllocationProp prop{};
    status_t st = check_ipc(d_, d_.cuMemGetAllocationPropertiesFromHandle(&prop, p->handle),
                            "cuMemGetAllocationPropertiesFromHandle", "read the properties of imported memory");
    p->device = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop.location.id : 0;
    if (p->device < 0 || p->device >= device_count())
        p->device = 0; // numbered differently in the exporter (CUDA_VISIBLE_DEVICES)
    if (st == GPUMEM_SUCCESS)
        st = imported_size(fd, p->handle, p->device, &p->size);
    if (st != GPUMEM_SUCCESS) {
        d_.cuMemRelease(p->handle);
        delete p;
        return st;
    }
    *device = p->device;
    *size = p->size;
    *phys = p;
    return GPUMEM_SUCCESS;
}

// The driver tells an importer nothing of an allocation's size, and its
// descriptor is no file whose length could tell (/dev/nvidiactl).  A
// descriptor that is a file (a memfd, as the fake driver uses) has the size
// as its length.  Otherwise cuMemMap finds it: CUDA 13 maps only a whole
// allocation at offset 0, so the first size that maps, counting up in
// granules, is the size (a failing cuMemMap costs about 1.5 us: a GiB is
// found in under a millisecond, a whole 141 GB device in about 0.1 s).  Should
// a driver accept partial mappings, the largest size that maps is the size:
// bisection finds it.
status_t CudaBackend::imported_size(int fd, CUmemGenericAllocationHandle handle, int32_t device, size_t *size)
{
    size_t g = 0;
    if (status_t st = granularity(device, CU_MEM_ALLOC_GRANULARITY_MINIMUM, &g))
        return st;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        static_cast<uint64_t>(sb.st_size) % g == 0) {
        *size = static_cast<size_t>(sb.st_size);
        return GPUMEM_SUCCESS;
    }

    size_t largest = 0;
    for (const DeviceInfo &dev : devices_)
        largest = dev.total_memory > largest ? dev.total_memory : largest;
    const size_t units = largest / g + 1; // no allocation is larger than its device
    CUdeviceptr scratch = 0;
    if (status_t st = check_ipc(d_, d_.cuMemAddressReserve(&scratch, units * g, g, 0, 0), "cuMemAddressReserve",
                                "reserve address space to measure imported memory"))
        return st;
    auto maps = [&](size_t k, CUresult *r) {
        *r = d_.cuMemMap(scratch, k * g, 0, handle, 0);
        if (*r != CUDA_SUCCESS)
            return false;
        d_.cuMemUnmap(scratch, k * g);
        return true;
    };
    status_t st = GPUMEM_SUCCESS;
    CUresult r = CUDA_SUCCESS;
    size_t found = 0;
    for (size_t k = 1; k <= units; ++k) {
        if (maps(k, &r)) {
            found = k;
            break;
        }
        if (r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_INVALID_VALUE) {
            st = check_ipc(d_, r, "cuMemMap", "map imported memory to find its size");
            break;
        }
    }
    if (found && found < units && maps(found + 1, &r)) {
        // Partial mappings work: the largest size that maps.
        size_t lo = found + 1, hi = units;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo + 1) / 2;
            if (maps(mid, &r))
                lo = mid;
            else
                hi = mid - 1;
        }
        found = lo;
    }
    d_.cuMemAddressFree(scratch, units * g);
    if (st == GPUMEM_SUCCESS && !found)
        st = fail(GPUMEM_ERROR_IPC,
                  "cannot import memory from descriptor %d: no size of it maps, so its size cannot be found; pass a "
                  "descriptor from gpumem_mem_export_to_shareable_handle",
                  fd);
    if (st == GPUMEM_SUCCESS)
        *size = found * g;
    return st;
}

} // namespace gpumem::detail::cuda
