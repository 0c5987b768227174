// Virtual memory management over hipMemCreate / hipMemAddressReserve / hipMemMap.
//
// A physical allocation is a Phys (hip_backend.hpp) owned by the core's
// memory handle.  Sharing uses POSIX file descriptors only (a dma-buf on
// AMD).  Used only on ROCm 6 runtimes, whose hipMemAllocationProp has the
// layout of MemAllocationProp6 (hip_types.hpp).
#include "backends/hip/hip_backend.hpp"

#include <new>

#include <sys/stat.h>
#include <unistd.h>

namespace gpumem::detail::hip {

namespace {

// Pinned device memory on `device`, as every gpumem VMM allocation is.
MemAllocationProp6 pinned_on(int32_t device)
{
    MemAllocationProp6 prop{};
    prop.type = hipMemAllocationTypePinned;
    prop.location = location_of(device);
    return prop;
}

// A descriptor written by an export call: the runtime stores an int (or a
// pointer-sized value) at the address given; read it from a zeroed 8 bytes.
int fd_from(uint64_t raw) { return static_cast<int>(static_cast<uint32_t>(raw)); }

} // namespace

status_t HipBackend::granularity(int32_t device, int option, size_t *out)
{
    MemAllocationProp6 prop = pinned_on(device);
    return check(rt_, rt_.hipMemGetAllocationGranularity(out, &prop, option), "hipMemGetAllocationGranularity",
                 "read the VMM granularity of device %d", device);
}

status_t HipBackend::vmm_granularity(int32_t device, int32_t option, size_t *out)
{
    if (status_t st = bind(device))
        return st;
    return granularity(device,
                       option == GPUMEM_GRANULARITY_RECOMMENDED ? hipMemAllocationGranularityRecommended
                                                                : hipMemAllocationGranularityMinimum,
                       out);
}

status_t HipBackend::vmm_create(int32_t device, size_t size, uint32_t handle_types, void **phys)
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
    MemAllocationProp6 prop = pinned_on(device);
    if (handle_types & GPUMEM_HANDLE_POSIX_FD)
        prop.requestedHandleTypes = hipMemHandleTypePosixFileDescriptor;
    if (status_t st = check(rt_, rt_.hipMemCreate(&p->handle, size, &prop, 0), "hipMemCreate",
                            "create %zu bytes of physical memory on device %d", size, device)) {
        delete p;
        return st;
    }
    p->size = size;
    p->device = device;
    *phys = p;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::vmm_release(void *phys)
{
    Phys *p = static_cast<Phys *>(phys);
    status_t st = ensure_device();
    if (st == GPUMEM_SUCCESS)
        st = check(rt_, rt_.hipMemRelease(p->handle), "hipMemRelease", "release %zu bytes of physical memory",
                   p->size);
    delete p; // the core forgets the handle whatever the runtime said
    return st;
}

status_t HipBackend::vmm_reserve(size_t size, size_t alignment, void *hint, void **ptr)
{
    if (status_t st = ensure_device())
        return st;
    void *p = nullptr;
    hipError_t r = rt_.hipMemAddressReserve(&p, size, alignment, hint, 0);
    // A hint that cannot be honoured is not an error: try anywhere.
    if (r != hipSuccess && r != hipErrorOutOfMemory && hint)
        r = rt_.hipMemAddressReserve(&p, size, alignment, nullptr, 0);
    if (status_t st = check(rt_, r, "hipMemAddressReserve", "reserve %zu bytes of address space", size))
        return st;
    *ptr = p;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::vmm_free(void *ptr, size_t size)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipMemAddressFree(ptr, size), "hipMemAddressFree", "free the reservation of %zu bytes at %p",
                 size, ptr);
}

status_t HipBackend::vmm_map(void *ptr, size_t size, size_t offset, void *phys)
{
    if (status_t st = ensure_device())
        return st;
    const Phys *p = static_cast<const Phys *>(phys);
    const hipError_t r = rt_.hipMemMap(ptr, size, offset, p->handle, 0);
    // HIP, like CUDA, maps only whole allocations at offset 0.
    if (r == hipErrorNotSupported && (offset != 0 || size != p->size))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot map %zu bytes at offset %zu of a %zu-byte physical allocation at %p: the HIP runtime "
                    "maps only whole allocations (offset 0, the allocation's full size); create one handle per "
                    "mapping",
                    size, offset, p->size, ptr);
    return check(rt_, r, "hipMemMap", "map %zu bytes at %p (offset %zu of the physical memory)", size, ptr, offset);
}

status_t HipBackend::vmm_unmap(void *ptr, size_t size)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipMemUnmap(ptr, size), "hipMemUnmap", "unmap %zu bytes at %p", size, ptr);
}

status_t HipBackend::vmm_set_access(void *ptr, size_t size, int32_t device, int32_t flags)
{
    if (status_t st = ensure_device())
        return st;
    hipMemAccessDesc desc{};
    desc.location = location_of(device);
    desc.flags = access_flags(flags);
    return check(rt_, rt_.hipMemSetAccess(ptr, size, &desc, 1), "hipMemSetAccess",
                 "set access %d for device %d on %zu bytes at %p", flags, device, size, ptr);
}

status_t HipBackend::vmm_export(void *phys, int32_t, int *fd)
{
    if (status_t st = ensure_device())
        return st;
    const Phys *p = static_cast<const Phys *>(phys);
    uint64_t raw = 0;
    if (status_t st = check_ipc(rt_, rt_.hipMemExportToShareableHandle(&raw, p->handle,
                                                                       hipMemHandleTypePosixFileDescriptor, 0),
                                "hipMemExportToShareableHandle", "export %zu bytes of physical memory", p->size))
        return st;
    *fd = fd_from(raw);
    return GPUMEM_SUCCESS;
}

status_t HipBackend::vmm_import(int fd, int32_t, int32_t *device, size_t *size, void **phys)
{
    if (status_t st = ensure_device())
        return st;
    Phys *p = new (std::nothrow) Phys;
    if (!p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot import physical memory: out of host memory");
    // The descriptor travels as the handle's value; it stays the caller's.
    void *shared = reinterpret_cast<void *>(static_cast<uintptr_t>(fd));
    if (status_t st = check_ipc(rt_, rt_.hipMemImportFromShareableHandle(&p->handle, shared,
                                                                         hipMemHandleTypePosixFileDescriptor),
                                "hipMemImportFromShareableHandle", "import physical memory from descriptor %d", fd)) {
        delete p;
        return st;
    }
    MemAllocationProp6 prop{};
    status_t st = check_ipc(rt_, rt_.hipMemGetAllocationPropertiesFromHandle(&prop, p->handle),
                            "hipMemGetAllocationPropertiesFromHandle", "read the properties of imported memory");
    p->device = prop.location.type == hipMemLocationTypeDevice ? prop.location.id : 0;
    if (p->device < 0 || p->device >= device_count())
        p->device = 0; // numbered differently in the exporter (HIP_VISIBLE_DEVICES)
    if (st == GPUMEM_SUCCESS)
        st = imported_size(fd, p->handle, p->device, &p->size);
    if (st != GPUMEM_SUCCESS) {
        (void)rt_.hipMemRelease(p->handle); // the failure already recorded is the one to report
        delete p;
        return st;
    }
    *device = p->device;
    *size = p->size;
    *phys = p;
    return GPUMEM_SUCCESS;
}

// The runtime tells an importer nothing of an allocation's size.  A
// descriptor that is a file (a memfd, as a fake runtime may use) has it as
// its length; a dma-buf (what ROCm exports) reports it to lseek(SEEK_END).
// Otherwise hipMemMap finds it: only a whole allocation maps at offset 0, so
// the first size that maps, counting up in granules, is the size; should a
// runtime accept partial mappings, bisection finds the largest that maps.
status_t HipBackend::imported_size(int fd, hipMemGenericAllocationHandle_t handle, int32_t device, size_t *size)
{
    size_t g = 0;
    if (status_t st = granularity(device, hipMemAllocationGranularityMinimum, &g))
        return st;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        static_cast<uint64_t>(sb.st_size) % g == 0) {
        *size = static_cast<size_t>(sb.st_size);
        return GPUMEM_SUCCESS;
    }
    const off_t at = lseek(fd, 0, SEEK_CUR);
    const off_t end = lseek(fd, 0, SEEK_END);
    if (at >= 0)
        (void)lseek(fd, at, SEEK_SET); // the descriptor is the caller's: leave it as it was
    if (end > 0 && static_cast<uint64_t>(end) % g == 0) {
        *size = static_cast<size_t>(end);
        return GPUMEM_SUCCESS;
    }

    size_t largest = 0;
    for (const DeviceInfo &dev : devices_)
        largest = dev.total_memory > largest ? dev.total_memory : largest;
    const size_t units = largest / g + 1; // no allocation is larger than its device
    void *scratch = nullptr;
    if (status_t st = check_ipc(rt_, rt_.hipMemAddressReserve(&scratch, units * g, g, nullptr, 0),
                                "hipMemAddressReserve", "reserve address space to measure imported memory"))
        return st;
    auto maps = [&](size_t k, hipError_t *r) {
        *r = rt_.hipMemMap(scratch, k * g, 0, handle, 0);
        if (*r != hipSuccess)
            return false;
        (void)rt_.hipMemUnmap(scratch, k * g); // a probe: the mapping is not kept
        return true;
    };
    status_t st = GPUMEM_SUCCESS;
    hipError_t r = hipSuccess;
    size_t found = 0;
    for (size_t k = 1; k <= units; ++k) {
        if (maps(k, &r)) {
            found = k;
            break;
        }
        if (r != hipErrorNotSupported && r != hipErrorInvalidValue) {
            st = check_ipc(rt_, r, "hipMemMap", "map imported memory to find its size");
            break;
        }
    }
    if (found && found < units && maps(found + 1, &r)) {
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
    (void)rt_.hipMemAddressFree(scratch, units * g); // the scratch range only
    if (st == GPUMEM_SUCCESS && !found)
        st = fail(GPUMEM_ERROR_IPC,
                  "cannot import memory from descriptor %d: no size of it maps, so its size cannot be found; pass a "
                  "descriptor from gpumem_mem_export_to_shareable_handle",
                  fd);
    if (st == GPUMEM_SUCCESS)
        *size = found * g;
    return st;
}

} // namespace gpumem::detail::hip
