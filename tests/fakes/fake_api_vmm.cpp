// Both fakes: virtual memory management (compiled once per vendor; see fake_api.hpp).
//
// cuMemCreate makes a memfd (header page + the allocation) and maps it read-write once for
// the fake (the shadow); cuMemAddressReserve takes a range of the device address range and
// maps it PROT_NONE; cuMemMap maps the memfd there with MAP_FIXED | MAP_SHARED;
// cuMemSetAccess records the access per device (and, with FAKE_*_HOST_ACCESS=1,
// mprotects).  A released handle lives on while mapped.  Export is a dup of the memfd.
// None of these calls is potentially unsafe during a stream capture: driver 580 accepted
// cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap and cuMemSetAccess in every capture mode,
// from the capturing thread and from others, and the captures went on (probe group capture).
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

// Phys (a physical allocation) is the engine's: fake_gpu_engine.cpp.

using namespace FAKE_NS;

namespace {

// Calls of the entry points that cost a GPU driver the most, counted for tests that check
// how many a loop makes (fake_vmm_call_counts below).
enum VmmCall { kCountCreate, kCountRelease, kCountMap, kCountUnmap, kCountSetAccess, kCountCalls };
std::atomic<unsigned long long> g_vmm_calls[kCountCalls];
void count_call(VmmCall c) { g_vmm_calls[c].fetch_add(1, std::memory_order_relaxed); }

// A handle the table knows: one still held, or one every holder released while a mapping
// keeps its memory, which the driver still describes (cuda_probe foreign: props_all_released).
Result find_phys_locked(MemHandle h, std::shared_ptr<Phys> *out)
{
    auto it = state().phys.find(h);
    if (it == state().phys.end())
        return kErrInvalidValue;
    *out = it->second;
    return kOk;
}

// A handle somebody still holds: what release, map and export take (release_once_more).
Result find_held_phys_locked(MemHandle h, std::shared_ptr<Phys> *out)
{
    if (Result r = find_phys_locked(h, out))
        return r;
    return (*out)->refs > 0 ? kOk : kErrInvalidValue;
}

bool mapped(const std::shared_ptr<Phys> &p) { return p->mappings > 0; }

// The props cuMemCreate and cuMemGetAllocationGranularity take.
Result check_prop(const AllocProp &p, const char **why)
{
    if (p.type != kAllocPinned) {
        *why = "type must be " FAKE_N_ALLOC_PINNED;
        return kErrInvalidValue;
    }
    if (p.location.type != kLocDevice) {
        *why = "location.type must be " FAKE_N_LOC_DEVICE;
        return kErrInvalidValue;
    }
    if (!valid_device(p.location.id)) {
        *why = "no such device";
        return kErrInvalidDevice;
    }
    if (kHandleTypeFabric && (requested_handle_types(p) & kHandleTypeFabric)) {
        // Driver 580 on an H200 with no /dev/nvidia-caps-imex-channels (probe group export).
        *why = "fabric handles need an IMEX channel, and this system has none";
        return kErrNotPermitted;
    }
    if (requested_handle_types(p) & ~(unsigned)kHandleTypePosixFd) {
        *why = "handle types other than POSIX_FILE_DESCRIPTOR are not available on Linux";
        return kErrNotSupported;
    }
    if ((requested_handle_types(p) & kHandleTypePosixFd) && !config().ipc) {
        *why = FAKE_ENV "NO_IPC is set";
        return kErrNotSupported;
    }
    // An H200 makes RDMA-capable VMM memory (probe group export: vmm_rdma_create).  Where
    // the device says it cannot (CUDA's GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED 0), the fake
    // refuses the flag rather than ignore it: never more lenient than a driver.
    if (p.allocFlags.gpuDirectRDMACapable && !config().rdma) {
        *why = "GPUDirect RDMA with VMM memory is not supported on this device (" FAKE_ENV "NO_RDMA is set)";
        return kErrNotSupported;
    }
    return kOk;
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

// [hint, hint+size) when it is free address space.  Like driver 580 (seen on an H100), the
// fake keeps no room after a reservation: any allocation may take the address right after it.
bool reserve_at_hint_locked(uint64_t hint, uint64_t size) { return region_take_at_locked(hint, size); }

} // namespace

FAKE_API fake_cuMemGetAllocationGranularity(size_t *granularity, const AllocProp *prop,
                                                 GranularityFlags option)
{
    FAKE_ENTER(API("MemGetAllocationGranularity"), "option=%d", (int)option);
    if (granularity == nullptr || prop == nullptr)
        FAIL(kErrInvalidValue, "granularity or prop is NULL");
    if (option != kGranularityMinimum && option != kGranularityRecommended)
        FAIL(kErrInvalidValue, "unknown option");
    const char *why = "";
    if (Result r = check_prop(*prop, &why))
        FAIL(r, "%s", why);
    *granularity = kGranularity;
    RET(kOk);
}

FAKE_API fake_cuMemCreate(MemHandle *handle, size_t size, const AllocProp *prop,
                               unsigned long long flags)
{
    FAKE_ENTER(API("MemCreate"), "size=%zu, flags=%llu", size, flags);
    count_call(kCountCreate);
    if (handle == nullptr || prop == nullptr || flags != 0)
        FAIL(kErrInvalidValue, "handle or prop is NULL, or flags is not 0");
    const char *why = "";
    if (Result r = check_prop(*prop, &why))
        FAIL(r, "%s", why);
    if (size == 0 || !aligned(size, kGranularity))
        FAIL(kErrInvalidValue, "size %zu is not a positive multiple of the granularity", size);
    const int dev = prop->location.id;
    Device &d = state().devices[(size_t)dev];
    const uint64_t mem = config().memory;
    if (d.used > mem || size > mem - d.used)
        FAIL(kErrOutOfMemory, "%zu bytes asked, %llu free", size, (unsigned long long)(mem - std::min(d.used, mem)));
    std::shared_ptr<Phys> p = std::make_shared<Phys>();
    p->id = new_handle(kMemTag);
    p->device = dev;
    p->size = size;
    p->handle_types = requested_handle_types(*prop);
    p->rdma = prop->allocFlags.gpuDirectRDMACapable != 0;
    p->imported = true; // until the memory is counted
    p->fd = make_shared_memfd("vmm", kFdVmm, random_uid(), dev, size, requested_handle_types(*prop));
    if (p->fd < 0)
        FAIL(kErrOutOfMemory, "memfd: %s", strerror(errno));
    void *shadow = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED)
        FAIL(kErrOutOfMemory, "mmap: %s", strerror(errno));
    p->shadow = static_cast<char *>(shadow);
    p->imported = false;
    d.used += size;
    state().phys[p->id] = p;
    *handle = p->id;
    OUT("*handle=0x%llx", (unsigned long long)p->id);
    RET(kOk);
}

FAKE_API fake_cuMemRelease(MemHandle handle)
{
    FAKE_ENTER(API("MemRelease"), "handle=0x%llx", (unsigned long long)handle);
    count_call(kCountRelease);
    std::shared_ptr<Phys> p;
    if (Result r = find_held_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    // Each retain took a reference of its own; mappings keep the memory until unmapped.
    if (--p->refs == 0 && !mapped(p))
        state().phys.erase(handle);
    RET(kOk);
}

// The handle an address was mapped with (any address of the mapping), one more reference that
// cuMemRelease gives back, as the driver documents it.  An address in no mapping (cuMemAlloc's
// memory, a pool block, host memory, unmapped or freed address space) is INVALID_VALUE: the
// fake's prediction (probe/h100-foreign.txt).
FAKE_API fake_cuMemRetainAllocationHandle(MemHandle *handle, void *addr)
{
    FAKE_ENTER(API("MemRetainAllocationHandle"), "addr=%p", addr);
    if (handle == nullptr)
        FAIL(kErrInvalidValue, "handle is NULL");
    uint64_t start = 0;
    Segment *seg = find_segment_locked((DevPtr) reinterpret_cast<uintptr_t>(addr), &start);
    if (seg == nullptr || seg->kind != SegKind::VmmMap)
        FAIL(kErrInvalidValue, "%p is not in a VMM mapping", addr);
    std::shared_ptr<Phys> p = seg->phys;
    ++p->refs;
    state().phys[p->id] = p; // back in the table where every handle to it was released
    *handle = p->id;
    OUT("*handle=0x%llx", (unsigned long long)p->id);
    RET(kOk);
}

FAKE_API fake_cuMemAddressReserve(DevPtr *ptr, size_t size, size_t alignment, DevPtr addr,
                                       unsigned long long flags)
{
    FAKE_ENTER(API("MemAddressReserve"), "size=%zu, alignment=%zu, addr=0x%llx, flags=%llu", size, alignment,
               (unsigned long long)addr, flags);
    if (ptr == nullptr || flags != 0)
        FAIL(kErrInvalidValue, "ptr is NULL or flags is not 0");
    if (size == 0 || !aligned(size, kGranularity))
        FAIL(kErrInvalidValue, "size %zu is not a positive multiple of the granularity", size);
    if (alignment & (alignment - 1))
        FAIL(kErrInvalidValue, "alignment %zu is not a power of two", alignment);
    const uint64_t align = std::max<uint64_t>(alignment, kGranularity);
    uint64_t va = 0;
    // A hint that is not free (or not in the device range) is not honoured: the caller compares.
    if (addr != 0 && aligned(addr, align) && addr <= UINT64_MAX - size && reserve_at_hint_locked(addr, size)) {
        va = addr;
    } else if (!region_alloc_locked(size, align, 0, &va)) {
        FAIL(kErrOutOfMemory, "no device address space left for %zu bytes", size);
    }
    region_map_none_locked(va, size);
    state().reservations[va] = size;
    *ptr = va;
    OUT("*ptr=0x%llx", (unsigned long long)va);
    RET(kOk);
}

FAKE_API fake_cuMemAddressFree(DevPtr ptr, size_t size)
{
    FAKE_ENTER(API("MemAddressFree"), "ptr=0x%llx, size=%zu", (unsigned long long)ptr, size);
    auto &res = state().reservations;
    auto it = res.find(ptr);
    if (it == res.end() || it->second != size)
        FAIL(kErrInvalidValue, "not a whole reservation (start and size as reserved)");
    auto seg = state().segments.lower_bound(ptr);
    if (seg != state().segments.end() && seg->first < ptr + size)
        FAIL(kErrInvalidValue, "the reservation still has mappings (cuMemUnmap first)");
    res.erase(it);
    region_release_locked(ptr, size);
    RET(kOk);
}

FAKE_API fake_cuMemMap(DevPtr ptr, size_t size, size_t offset, MemHandle handle,
                            unsigned long long flags)
{
    FAKE_ENTER(API("MemMap"), "ptr=0x%llx, size=%zu, offset=%zu, handle=0x%llx, flags=%llu", (unsigned long long)ptr, size,
               offset, (unsigned long long)handle, flags);
    count_call(kCountMap);
    if (flags != 0)
        FAIL(kErrInvalidValue, "flags is not 0");
    std::shared_ptr<Phys> p;
    if (Result r = find_held_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    if (size == 0 || !aligned(size, kGranularity) || !aligned(offset, kGranularity) || !aligned(ptr, kGranularity))
        FAIL(kErrInvalidValue, "ptr, size and offset must be multiples of the granularity (size > 0)");
    if (!in_reservation_locked(ptr, size)) {
        if (in_reservation_locked(ptr, kGranularity)) // starts in one, runs past its end
            FAIL(kErrNotSupported, "the range runs past the end of its reservation (driver 580's answer)");
        FAIL(kErrInvalidValue, "the range is not inside a reservation");
    }
    if (offset > p->size || size > p->size - offset)
        FAIL(kErrInvalidValue, "offset + size exceeds the allocation's %llu bytes", (unsigned long long)p->size);
    auto seg = state().segments.lower_bound(ptr);
    if (seg != state().segments.begin()) {
        auto prev = std::prev(seg);
        if (prev->first + prev->second.size > ptr)
            FAIL(kErrInvalidValue, "the range is already mapped");
    }
    if (seg != state().segments.end() && seg->first < ptr + size)
        FAIL(kErrInvalidValue, "the range is already mapped");
    if (!region_map_fd_locked(ptr, size, p->fd, kFdHeader + offset))
        FAIL(kErrOutOfMemory, "mmap: %s", strerror(errno));
    region_set_prot_locked(ptr, size, kAccessNone);
    Segment s;
    s.size = size;
    s.shadow = p->shadow + offset;
    s.kind = SegKind::VmmMap;
    s.device = p->device;
    s.phys = p;
    ++p->mappings;
    s.phys_offset = offset;
    s.access.assign(state().devices.size(), kAccessNone); // nothing until cuMemSetAccess
    state().segments[ptr] = std::move(s);
    RET(kOk);
}

FAKE_API fake_cuMemUnmap(DevPtr ptr, size_t size)
{
    FAKE_ENTER(API("MemUnmap"), "ptr=0x%llx, size=%zu", (unsigned long long)ptr, size);
    count_call(kCountUnmap);
    if (size == 0 || !aligned(size, kGranularity) || !aligned(ptr, kGranularity))
        FAIL(kErrInvalidValue, "ptr and size must be multiples of the granularity (size > 0)");
    std::vector<uint64_t> starts;
    const char *why = "";
    if (!whole_mappings_locked(ptr, size, &starts, &why, true))
        FAIL(kErrInvalidValue, "%s", why);
    for (uint64_t s : starts) {
        region_map_none_locked(s, state().segments.at(s).size);
        std::shared_ptr<Phys> p = state().segments.at(s).phys;
        state().segments.erase(s);
        if (p)
            --p->mappings;
        // A handle every holder released goes with its last mapping.
        if (p && p->refs == 0 && !mapped(p))
            state().phys.erase(p->id);
    }
    RET(kOk);
}

FAKE_API fake_cuMemSetAccess(DevPtr ptr, size_t size, const AccessDesc *desc, size_t count)
{
    FAKE_ENTER(API("MemSetAccess"), "ptr=0x%llx, size=%zu, count=%zu", (unsigned long long)ptr, size, count);
    count_call(kCountSetAccess);
    if (desc == nullptr || count == 0)
        FAIL(kErrInvalidValue, "desc is NULL or count is 0");
    if (size == 0 || !aligned(size, kGranularity) || !aligned(ptr, kGranularity))
        FAIL(kErrInvalidValue, "ptr and size must be multiples of the granularity (size > 0)");
    for (size_t i = 0; i < count; ++i) {
        const AccessDesc &d = desc[i];
        if (d.location.type != kLocDevice)
            FAIL(kErrInvalidValue, "desc %zu: location.type must be DEVICE", i);
        if (!valid_device(d.location.id))
            FAIL(kErrInvalidDevice, "desc %zu: no device %d", i, d.location.id);
        if (d.flags != kAccessNone && d.flags != kAccessRead &&
            d.flags != kAccessReadWrite)
            FAIL(kErrInvalidValue, "desc %zu: unknown flags %d", i, (int)d.flags);
    }
    std::vector<uint64_t> starts;
    const char *why = "";
    if (!whole_mappings_locked(ptr, size, &starts, &why))
        FAIL(kErrInvalidValue, "%s", why);
    for (uint64_t s : starts) {
        Segment &seg = state().segments.at(s);
        int most = 0;
        for (size_t i = 0; i < count; ++i)
            seg.access[(size_t)desc[i].location.id] = desc[i].flags;
        for (int a : seg.access)
            most = std::max(most, a);
        region_set_prot_locked(s, seg.size, most);
    }
    RET(kOk);
}

FAKE_API fake_cuMemGetAccess(unsigned long long *flags, const MemLocation *location, DevPtr ptr)
{
    FAKE_ENTER(API("MemGetAccess"), "ptr=0x%llx", (unsigned long long)ptr);
    if (flags == nullptr || location == nullptr)
        FAIL(kErrInvalidValue, "flags or location is NULL");
    if (location->type != kLocDevice)
        FAIL(kErrInvalidValue, "location.type must be DEVICE");
    if (!valid_device(location->id))
        FAIL(kErrInvalidDevice, "no device %d", location->id);
    Segment *seg = find_segment_locked(ptr, nullptr);
    if (seg == nullptr || seg->kind != SegKind::VmmMap)
        FAIL(kErrInvalidValue, "not a mapped address");
    *flags = (unsigned long long)seg->access[(size_t)location->id];
    RET(kOk);
}

FAKE_API fake_cuMemExportToShareableHandle(void *shareableHandle, MemHandle handle,
                                                HandleType handleType, unsigned long long flags)
{
    FAKE_ENTER(API("MemExportToShareableHandle"), "handle=0x%llx, handleType=%d, flags=%llu", (unsigned long long)handle,
               (int)handleType, flags);
    if (shareableHandle == nullptr || flags != 0)
        FAIL(kErrInvalidValue, "shareableHandle is NULL or flags is not 0");
    std::shared_ptr<Phys> p;
    if (Result r = find_held_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    if (!config().ipc)
        FAIL(kErrNotSupported, FAKE_ENV "NO_IPC is set");
    if (handleType != kHandleTypePosixFd || !(p->handle_types & handleType))
        FAIL(kErrInvalidValue, "the allocation was not made with handle type %d", (int)handleType);
    // Driver 580 refuses to export a handle it imported (H100, seen by an outside fuzzer; PREDICTED
    // for cuda_probe imported: probe/h100-imported.txt, same.mem_export and child.mem_export).
    if (p->imported)
        FAIL(kErrInvalidValue, "the handle was imported: only the process that created the allocation exports it");
    if (config().break_vmm_export)
        FAIL(kErrNotPermitted, FAKE_ENV "BREAK=vmm_export: sharing is not permitted here (a container)");
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        FAIL(kErrOperatingSystem, "dup: %s", strerror(errno));
    *static_cast<int *>(shareableHandle) = fd;
    OUT("fd=%d", fd);
    RET(kOk);
}

FAKE_API fake_cuMemImportFromShareableHandle(MemHandle *handle, void *osHandle,
                                                  HandleType shHandleType)
{
    FAKE_ENTER(API("MemImportFromShareableHandle"), "osHandle=%p, shHandleType=%d", osHandle, (int)shHandleType);
    if (handle == nullptr)
        FAIL(kErrInvalidValue, "handle is NULL");
    if (!config().ipc)
        FAIL(kErrNotSupported, FAKE_ENV "NO_IPC is set");
    if (shHandleType != kHandleTypePosixFd)
        FAIL(kErrInvalidValue, "handle type %d is not POSIX_FILE_DESCRIPTOR", (int)shHandleType);
    const int fd = (int)reinterpret_cast<intptr_t>(osHandle);
    FdHeader hdr;
    if (!read_shared_header(fd, kFdVmm, &hdr))
        FAIL(kErrUnknown, "fd %d is not an exported allocation (driver 580 says UNKNOWN)", fd);
    if (!valid_device(hdr.device))
        FAIL(kErrInvalidDevice, "the allocation is on device %d, which this process does not have", hdr.device);
    std::shared_ptr<Phys> p = std::make_shared<Phys>();
    p->id = new_handle(kMemTag);
    p->device = hdr.device;
    p->size = hdr.size;
    p->handle_types = hdr.handle_types;
    p->imported = true; // the exporter's memory: not counted here
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); // the caller keeps its descriptor
    if (p->fd < 0)
        FAIL(kErrOperatingSystem, "dup: %s", strerror(errno));
    void *shadow = mmap(nullptr, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED)
        FAIL(kErrOutOfMemory, "mmap: %s", strerror(errno));
    p->shadow = static_cast<char *>(shadow);
    state().phys[p->id] = p;
    *handle = p->id;
    OUT("*handle=0x%llx", (unsigned long long)p->id);
    RET(kOk);
}

FAKE_API fake_cuMemGetAllocationPropertiesFromHandle(AllocProp *prop,
                                                          MemHandle handle)
{
    FAKE_ENTER(API("MemGetAllocationPropertiesFromHandle"), "handle=0x%llx", (unsigned long long)handle);
    if (prop == nullptr)
        FAIL(kErrInvalidValue, "prop is NULL");
    std::shared_ptr<Phys> p;
    if (Result r = find_phys_locked(handle, &p))
        FAIL(r, "not a live allocation handle");
    memset(prop, 0, sizeof *prop);
    prop->type = kAllocPinned;
    set_requested_handle_types(*prop, p->handle_types);
    prop->allocFlags.gpuDirectRDMACapable = p->rdma ? 1 : 0;
    prop->location.type = kLocDevice;
    prop->location.id = p->device;
    RET(kOk);
}

// The calls counted so far: cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap, cuMemSetAccess
// (the hip* ones in the HIP fake), failed calls included.  Exported for tests, which find it
// with dlsym in the fake they loaded; no driver has it.
extern "C" __attribute__((visibility("default"))) void fake_vmm_call_counts(unsigned long long counts[5])
{
    for (int i = 0; i < kCountCalls; ++i)
        counts[i] = g_vmm_calls[i].load(std::memory_order_relaxed);
}

// dma-buf export (cuMemGetHandleForAddressRange, hipMemGetHandleForAddressRange), both fakes
// answering as driver 580 on an H200 answers cuda_probe export
// (tests/fakes/probe/h200-export.txt): page-aligned ranges of device memory of one allocation or
// pool block, or of VMM mappings back to back; pinned, managed, freed and unknown memory, an
// unaligned or empty range and unknown flags are refused, and the PCIe mapping is not supported.
// The descriptor is a memfd of the range's size: a stand-in whose bytes are not the memory's.
// No AMD runtime was asked: the fake HIP gives the H200's answers, no more lenient than them.
FAKE_API fake_mem_range_handle(const char *name, void *handle, DevPtr dptr, size_t size, int handleType,
                               unsigned long long flags)
{
    FAKE_ENTER(name, "dptr=0x%llx, size=%zu, handleType=%d, flags=0x%llx",
               (unsigned long long)dptr, size, (int)handleType, flags);
    if (handle == nullptr || handleType != kRangeHandleDmaBufFd)
        FAIL(kErrInvalidValue, "handle is NULL, or handleType is not " FAKE_N_RANGE_HANDLE_DMA_BUF_FD);
    if (flags == kRangeFlagDmaBufPcie)
        FAIL(kErrNotSupported, "the PCIe mapping of a dma-buf is not supported here");
    if (flags != 0)
        FAIL(kErrInvalidValue, "flags 0x%llx are unknown", flags);
    if (config().break_dmabuf)
        FAIL(kErrNotSupported, FAKE_ENV "BREAK=dmabuf: the kernel module refuses dma-buf export");
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (size == 0 || dptr % page != 0 || size % page != 0)
        FAIL(kErrInvalidValue, "the range must be non-empty and page-aligned");
    bool vmm = false;
    for (uint64_t at = dptr, end = dptr + size; at < end;) {
        uint64_t start = 0;
        const Segment *seg = find_segment_locked(at, &start);
        if (seg == nullptr)
            FAIL(kErrInvalidValue, "0x%llx is not device memory", (unsigned long long)at);
        // Only VMM mappings may follow one another within the range.
        if (at != dptr && !(vmm && seg->kind == SegKind::VmmMap))
            FAIL(kErrInvalidValue, "the range runs past its allocation");
        vmm = seg->kind == SegKind::VmmMap;
        at = start + seg->size;
    }
    const int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
        if (fd >= 0)
            close(fd);
        FAIL(kErrOutOfMemory, "memfd: %s", strerror(errno));
    }
    *static_cast<int *>(handle) = fd;
    OUT("*handle=%d", fd);
    RET(kOk);
}
