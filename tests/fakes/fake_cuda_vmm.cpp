// The fake CUDA driver: virtual memory management.
//
// cuMemCreate makes a memfd (header page + the allocation) and maps it read-write once for
// the fake (the shadow); cuMemAddressReserve takes a range of the device address range and
// maps it PROT_NONE; cuMemMap maps the memfd there with MAP_FIXED | MAP_SHARED;
// cuMemSetAccess records the access per device (and, with FAKE_CUDA_HOST_ACCESS=1,
// mprotects).  A released handle lives on while mapped.  Export is a dup of the memfd.
//
// SPDX-License-Identifier: MIT
#include "fake_cuda.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

// Phys (a physical allocation) is the engine's: fake_gpu_engine.cpp.

using namespace fakecuda;

namespace {

CUresult find_phys_locked(CUmemGenericAllocationHandle h, std::shared_ptr<Phys> *out)
{
    auto it = state().phys.find(h);
    if (it == state().phys.end())
        return CUDA_ERROR_INVALID_VALUE;
    *out = it->second;
    return CUDA_SUCCESS;
}

// The props cuMemCreate and cuMemGetAllocationGranularity take.
CUresult check_prop(const CUmemAllocationProp &p, const char **why)
{
    if (p.type != CU_MEM_ALLOCATION_TYPE_PINNED) {
        *why = "type must be CU_MEM_ALLOCATION_TYPE_PINNED";
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (p.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        *why = "location.type must be CU_MEM_LOCATION_TYPE_DEVICE";
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!valid_device(p.location.id)) {
        *why = "no such device";
        return CUDA_ERROR_INVALID_DEVICE;
    }
    if (p.requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        *why = "handle types other than POSIX_FILE_DESCRIPTOR are not available on Linux";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if ((p.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) && !config().ipc) {
        *why = "FAKE_CUDA_NO_IPC is set";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

// The reservation holding [ptr, ptr+size), or false.
bool in_reservation_locked(uint64_t ptr, uint64_t size)
{
    auto &res = state().reservations;
    auto it = res.upper_bound(ptr);
    if (it == res.begin())
        return false;
    --it;
    return ptr - it->first < it->second && size <= it->second - (ptr - it->first);
}

// The mappings that make up [ptr, ptr+size): whole mappings, no holes (cuMemSetAccess), or
// with `holes` unmapped stretches between them (cuMemUnmap, as driver 580 allows).
bool whole_mappings_locked(uint64_t ptr, uint64_t size, std::vector<uint64_t> *starts, const char **why,
                           bool holes = false)
{
    uint64_t cur = ptr, start = 0;
    if (ptr > UINT64_MAX - size) {
        *why = "the range wraps around";
        return false;
    }
    while (cur < ptr + size) {
        Segment *seg = find_segment_locked(cur, &start);
        if (holes && seg == nullptr && in_reservation_locked(cur, kGranularity)) {
            cur += kGranularity; // an unmapped granule of the reservation
            continue;
        }
        if (seg == nullptr || seg->kind != SegKind::VmmMap) {
            *why = "part of the range is not mapped";
            return false;
        }
        if (start != cur) {
            *why = "the range starts inside a mapping (mappings are unmapped/changed whole)";
            return false;
        }
        if (seg->size > ptr + size - cur) {
            *why = "the range ends inside a mapping (mappings are unmapped/changed whole)";
            return false;
        }
        starts->push_back(cur);
        cur += seg->size;
    }
    if (starts->empty() && !(holes && in_reservation_locked(ptr, size))) {
        *why = "nothing in the range is mapped";
        return false;
    }
    return true; // (driver 580 unmaps an unmapped stretch of a reservation without complaint)
}

} // namespace

FAKE_CUDA_API fake_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option)
{
    FAKE_ENTER("cuMemGetAllocationGranularity", "option=%d", (int)option);
    if (granularity == nullptr || prop == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "granularity or prop is NULL");
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown option");
    const char *why = "";
    if (CUresult r = check_prop(*prop, &why))
        FAIL(r, "%s", why);
    *granularity = kGranularity;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags)
{
    FAKE_ENTER("cuMemCreate", "size=%zu, flags=%llu", size, flags);
    if (handle == nullptr || prop == nullptr || flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "handle or prop is NULL, or flags is not 0");
    const char *why = "";
    if (CUresult r = check_prop(*prop, &why))
        FAIL(r, "%s", why);
    if (size == 0 || !aligned(size, kGranularity))
        FAIL(CUDA_ERROR_INVALID_VALUE, "size %zu is not a positive multiple of the granularity", size);
    const int dev = prop->location.id;
    Device &d = state().devices[(size_t)dev];
    const uint64_t mem = config().memory;
    if (d.used > mem || size > mem - d.used)
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes asked, %llu free", size, (unsigned long long)(mem - std::min(d.used, mem)));
    std::shared_ptr<Phys> p = std::make_shared<Phys>();
    p->id = new_handle(kMemTag);
    p->device = dev;
    p->size = size;
    p->handle_types = prop->requestedHandleTypes;
    p->imported = true; // until the memory is counted
    p->fd = make_shared_memfd("vmm", kFdVmm, random_uid(), dev, size, prop->requestedHandleTypes);
    if (p->fd < 0)
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "memfd: %s", strerror(errno));
    void *shadow = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED)
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "mmap: %s", strerror(errno));
    p->shadow = static_cast<char *>(shadow);
    p->imported = false;
    d.used += size;
    state().phys[p->id] = p;
    *handle = p->id;
    OUT("*handle=0x%llx", (unsigned long long)p->id);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FAKE_ENTER("cuMemRelease", "handle=0x%llx", (unsigned long long)handle);
    std::shared_ptr<Phys> p;
    if (CUresult r = find_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    state().phys.erase(handle); // mappings keep the memory until unmapped
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags)
{
    FAKE_ENTER("cuMemAddressReserve", "size=%zu, alignment=%zu, addr=0x%llx, flags=%llu", size, alignment,
               (unsigned long long)addr, flags);
    if (ptr == nullptr || flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "ptr is NULL or flags is not 0");
    if (size == 0 || !aligned(size, kGranularity))
        FAIL(CUDA_ERROR_INVALID_VALUE, "size %zu is not a positive multiple of the granularity", size);
    if (alignment & (alignment - 1))
        FAIL(CUDA_ERROR_INVALID_VALUE, "alignment %zu is not a power of two", alignment);
    const uint64_t align = std::max<uint64_t>(alignment, kGranularity);
    uint64_t va = 0;
    // A hint that is not free (or not in the device range) is not honoured: the caller compares.
    if (!region_alloc_locked(size, align, addr, &va))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "no device address space left for %zu bytes", size);
    region_map_none_locked(va, size);
    state().reservations[va] = size;
    *ptr = va;
    OUT("*ptr=0x%llx", (unsigned long long)va);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    FAKE_ENTER("cuMemAddressFree", "ptr=0x%llx, size=%zu", (unsigned long long)ptr, size);
    auto &res = state().reservations;
    auto it = res.find(ptr);
    if (it == res.end() || it->second != size)
        FAIL(CUDA_ERROR_INVALID_VALUE, "not a whole reservation (start and size as reserved)");
    auto seg = state().segments.lower_bound(ptr);
    if (seg != state().segments.end() && seg->first < ptr + size)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the reservation still has mappings (cuMemUnmap first)");
    res.erase(it);
    region_release_locked(ptr, size);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags)
{
    FAKE_ENTER("cuMemMap", "ptr=0x%llx, size=%zu, offset=%zu, handle=0x%llx, flags=%llu", (unsigned long long)ptr, size,
               offset, (unsigned long long)handle, flags);
    if (flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags is not 0");
    std::shared_ptr<Phys> p;
    if (CUresult r = find_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    if (size == 0 || !aligned(size, kGranularity) || !aligned(offset, kGranularity) || !aligned(ptr, kGranularity))
        FAIL(CUDA_ERROR_INVALID_VALUE, "ptr, size and offset must be multiples of the granularity (size > 0)");
    if (!in_reservation_locked(ptr, size)) {
        if (in_reservation_locked(ptr, kGranularity)) // starts in one, runs past its end
            FAIL(CUDA_ERROR_NOT_SUPPORTED, "the range runs past the end of its reservation (driver 580's answer)");
        FAIL(CUDA_ERROR_INVALID_VALUE, "the range is not inside a reservation");
    }
    if (offset > p->size || size > p->size - offset)
        FAIL(CUDA_ERROR_INVALID_VALUE, "offset + size exceeds the allocation's %llu bytes", (unsigned long long)p->size);
    auto seg = state().segments.lower_bound(ptr);
    if (seg != state().segments.begin()) {
        auto prev = std::prev(seg);
        if (prev->first + prev->second.size > ptr)
            FAIL(CUDA_ERROR_INVALID_VALUE, "the range is already mapped");
    }
    if (seg != state().segments.end() && seg->first < ptr + size)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the range is already mapped");
    if (!region_map_fd_locked(ptr, size, p->fd, kFdHeader + offset))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "mmap: %s", strerror(errno));
    region_set_prot_locked(ptr, size, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    Segment s;
    s.size = size;
    s.shadow = p->shadow + offset;
    s.kind = SegKind::VmmMap;
    s.device = p->device;
    s.phys = p;
    s.phys_offset = offset;
    s.access.assign(state().devices.size(), CU_MEM_ACCESS_FLAGS_PROT_NONE); // nothing until cuMemSetAccess
    state().segments[ptr] = std::move(s);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    FAKE_ENTER("cuMemUnmap", "ptr=0x%llx, size=%zu", (unsigned long long)ptr, size);
    if (size == 0 || !aligned(size, kGranularity) || !aligned(ptr, kGranularity))
        FAIL(CUDA_ERROR_INVALID_VALUE, "ptr and size must be multiples of the granularity (size > 0)");
    std::vector<uint64_t> starts;
    const char *why = "";
    if (!whole_mappings_locked(ptr, size, &starts, &why, true))
        FAIL(CUDA_ERROR_INVALID_VALUE, "%s", why);
    for (uint64_t s : starts) {
        region_map_none_locked(s, state().segments.at(s).size);
        state().segments.erase(s); // a released handle goes with its last mapping
    }
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    FAKE_ENTER("cuMemSetAccess", "ptr=0x%llx, size=%zu, count=%zu", (unsigned long long)ptr, size, count);
    if (desc == nullptr || count == 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "desc is NULL or count is 0");
    if (size == 0 || !aligned(size, kGranularity) || !aligned(ptr, kGranularity))
        FAIL(CUDA_ERROR_INVALID_VALUE, "ptr and size must be multiples of the granularity (size > 0)");
    for (size_t i = 0; i < count; ++i) {
        const CUmemAccessDesc &d = desc[i];
        if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            FAIL(CUDA_ERROR_INVALID_VALUE, "desc %zu: location.type must be DEVICE", i);
        if (!valid_device(d.location.id))
            FAIL(CUDA_ERROR_INVALID_DEVICE, "desc %zu: no device %d", i, d.location.id);
        if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            FAIL(CUDA_ERROR_INVALID_VALUE, "desc %zu: unknown flags %d", i, (int)d.flags);
    }
    std::vector<uint64_t> starts;
    const char *why = "";
    if (!whole_mappings_locked(ptr, size, &starts, &why))
        FAIL(CUDA_ERROR_INVALID_VALUE, "%s", why);
    for (uint64_t s : starts) {
        Segment &seg = state().segments.at(s);
        int most = 0;
        for (size_t i = 0; i < count; ++i)
            seg.access[(size_t)desc[i].location.id] = desc[i].flags;
        for (int a : seg.access)
            most = std::max(most, a);
        region_set_prot_locked(s, seg.size, most);
    }
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    FAKE_ENTER("cuMemGetAccess", "ptr=0x%llx", (unsigned long long)ptr);
    if (flags == nullptr || location == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags or location is NULL");
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        FAIL(CUDA_ERROR_INVALID_VALUE, "location.type must be DEVICE");
    if (!valid_device(location->id))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", location->id);
    Segment *seg = find_segment_locked(ptr, nullptr);
    if (seg == nullptr || seg->kind != SegKind::VmmMap)
        FAIL(CUDA_ERROR_INVALID_VALUE, "not a mapped address");
    *flags = (unsigned long long)seg->access[(size_t)location->id];
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("cuMemExportToShareableHandle", "handle=0x%llx, handleType=%d, flags=%llu", (unsigned long long)handle,
               (int)handleType, flags);
    if (shareableHandle == nullptr || flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "shareableHandle is NULL or flags is not 0");
    std::shared_ptr<Phys> p;
    if (CUresult r = find_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    if (!config().ipc)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_IPC is set");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || !(p->handle_types & handleType))
        FAIL(CUDA_ERROR_INVALID_VALUE, "the allocation was not made with handle type %d", (int)handleType);
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        FAIL(CUDA_ERROR_OPERATING_SYSTEM, "dup: %s", strerror(errno));
    *static_cast<int *>(shareableHandle) = fd;
    OUT("fd=%d", fd);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                  CUmemAllocationHandleType shHandleType)
{
    FAKE_ENTER("cuMemImportFromShareableHandle", "osHandle=%p, shHandleType=%d", osHandle, (int)shHandleType);
    if (handle == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "handle is NULL");
    if (!config().ipc)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_IPC is set");
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        FAIL(CUDA_ERROR_INVALID_VALUE, "handle type %d is not POSIX_FILE_DESCRIPTOR", (int)shHandleType);
    const int fd = (int)reinterpret_cast<intptr_t>(osHandle);
    FdHeader hdr;
    if (!read_shared_header(fd, kFdVmm, &hdr))
        FAIL(CUDA_ERROR_UNKNOWN, "fd %d is not an exported allocation (driver 580 says UNKNOWN)", fd);
    if (!valid_device(hdr.device))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "the allocation is on device %d, which this process does not have", hdr.device);
    std::shared_ptr<Phys> p = std::make_shared<Phys>();
    p->id = new_handle(kMemTag);
    p->device = hdr.device;
    p->size = hdr.size;
    p->handle_types = hdr.handle_types;
    p->imported = true; // the exporter's memory: not counted here
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); // the caller keeps its descriptor
    if (p->fd < 0)
        FAIL(CUDA_ERROR_OPERATING_SYSTEM, "dup: %s", strerror(errno));
    void *shadow = mmap(nullptr, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED)
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "mmap: %s", strerror(errno));
    p->shadow = static_cast<char *>(shadow);
    state().phys[p->id] = p;
    *handle = p->id;
    OUT("*handle=0x%llx", (unsigned long long)p->id);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                          CUmemGenericAllocationHandle handle)
{
    FAKE_ENTER("cuMemGetAllocationPropertiesFromHandle", "handle=0x%llx", (unsigned long long)handle);
    if (prop == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "prop is NULL");
    std::shared_ptr<Phys> p;
    if (CUresult r = find_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = static_cast<CUmemAllocationHandleType>(p->handle_types);
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = p->device;
    RET(CUDA_SUCCESS);
}
