// The fake HIP runtime (ported from the fake CUDA driver): memory pools and stream-ordered allocation.
//
// A pool is an arena in a memfd (so another process can map it), mapped into the device
// address range.  Like a real driver it reserves device memory in granules
// (FAKE_HIP_POOL_GRANULE, 32 MiB by default): RESERVED_MEM_* move in granules, maxSize is
// rounded up to one.  Allocations are carved out of reserved granules; a freed block stays
// in the pool's cache and is handed out again under CUDA's stream-order rules: at once to
// the stream that freed it, to another stream when the reuse attributes allow it (the
// fake's work is always complete, so opportunistic reuse is always possible), and to any
// stream once the host synchronised with the free.  After a stream, event or device
// synchronisation, wholly free granules above the release threshold go back to the device.
//
// SPDX-License-Identifier: MIT
#include "fake_hip.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

// The pools themselves (arenas, granules, stream-ordered reuse, release threshold) are the
// engine's: fake_gpu_pools.cpp.  Here: the entry points.

using namespace fakehip;

FAKE_HIP_API fake_cuDeviceGetDefaultMemPool(hipMemPool_t *pool_out, int dev)
{
    FAKE_ENTER("hipDeviceGetDefaultMemPool", "dev=%d", (int)dev);
    if (pool_out == nullptr)
        FAIL(hipErrorInvalidValue, "pool_out is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    std::shared_ptr<Pool> p = default_pool_locked(dev);
    if (!p)
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    *pool_out = reinterpret_cast<hipMemPool_t>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceGetMemPool(hipMemPool_t *pool, int dev)
{
    FAKE_ENTER("hipDeviceGetMemPool", "dev=%d", (int)dev);
    if (pool == nullptr)
        FAIL(hipErrorInvalidValue, "pool is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    if (!default_pool_locked(dev))
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    *pool = reinterpret_cast<hipMemPool_t>(state().devices[(size_t)dev].current_pool);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceSetMemPool(int dev, hipMemPool_t pool)
{
    FAKE_ENTER("hipDeviceSetMemPool", "dev=%d, pool=%p", (int)dev, (void *)pool);
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->device != dev || p->imported)
        FAIL(hipErrorInvalidDevice, "the pool is not device %d's", (int)dev);
    default_pool_locked(dev);
    state().devices[(size_t)dev].current_pool = p->id;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolCreate(hipMemPool_t *pool, const fh_MemPoolProps *poolProps)
{
    FAKE_ENTER("hipMemPoolCreate", "poolProps=%p", (const void *)poolProps);
    if (pool == nullptr || poolProps == nullptr)
        FAIL(hipErrorInvalidValue, "pool or poolProps is NULL");
    const fh_MemPoolProps &pp = *poolProps;
    if (config().trace)
        call_.args("allocType=%d, handleTypes=0x%x, location={%d,%d}, maxSize=%zu", (int)pp.allocType,
                   (unsigned)pp.handleTypes, (int)pp.location.type, pp.location.id, pp.maxSize);
    if (pp.allocType != hipMemAllocationTypePinned)
        FAIL(hipErrorInvalidValue, "allocType must be hipMemAllocationTypePinned");
    if ((int)pp.location.type == fh_MemLocationTypeHost || (int)pp.location.type == fh_MemLocationTypeHostNuma ||
        (int)pp.location.type == fh_MemLocationTypeHostNumaCurrent)
        FAIL(hipErrorNotSupported, "host pools are not modelled");
    if (pp.location.type != hipMemLocationTypeDevice)
        FAIL(hipErrorInvalidValue, "location.type must be hipMemLocationTypeDevice");
    if (!valid_device(pp.location.id))
        FAIL(hipErrorInvalidDevice, "no device %d", pp.location.id);
    if (pp.handleTypes & ~(unsigned)hipMemHandleTypePosixFileDescriptor)
        FAIL(hipErrorNotSupported, "handle types 0x%x are not available on Linux", (unsigned)pp.handleTypes);
    if ((pp.handleTypes & hipMemHandleTypePosixFileDescriptor) && !config().ipc)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_IPC is set: no shareable pools");
    if (pp.win32SecurityAttributes != nullptr)
        FAIL(hipErrorInvalidValue, "win32SecurityAttributes must be NULL");
    for (unsigned char b : pp.reserved)
        if (b != 0)
            FAIL(hipErrorInvalidValue, "reserved bytes must be 0");
    // Before ROCm 6 maxSize was part of the reserved bytes, which had to be 0.
    if (pp.maxSize != 0 && !config().v6())
        FAIL(hipErrorInvalidValue, "maxSize needs ROCm 6 (this runtime is %d): reserved bytes must be 0",
             config().runtime_version);
    if (!default_pool_locked(pp.location.id))
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    std::shared_ptr<Pool> p;
    std::string why;
    if (hipError_t r = vendor_error(create_pool_locked(pp.location.id, pp.handleTypes, pp.maxSize, false, &p, &why)))
        FAIL(r, "%s", why.c_str());
    *pool = reinterpret_cast<hipMemPool_t>(p->id);
    OUT("*pool=%p", (void *)*pool);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolDestroy(hipMemPool_t pool)
{
    FAKE_ENTER("hipMemPoolDestroy", "pool=%p", (void *)pool);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->is_default)
        FAIL(hipErrorInvalidValue, "a device's default pool cannot be destroyed");
    State &s = state();
    s.pools.erase(p->id);
    for (Device &d : s.devices)
        if (d.current_pool == p->id)
            d.current_pool = d.default_pool;
    p->destroyed = true;
    if (!p->imported)
        release_cached_locked(*p, 0, false);
    if (!p->live.empty())
        OUT("%zu allocations outstanding: the pool goes when they are freed", p->live.size());
    RET(hipSuccess); // outstanding allocations keep it (through their segments) until freed
}

FAKE_HIP_API fake_cuMemAllocFromPoolAsync(fh_devptr *dptr, size_t bytesize, hipMemPool_t pool, hipStream_t hStream)
{
    FAKE_ENTER("hipMemAllocFromPoolAsync", "bytesize=%zu, pool=%p, hStream=%p", bytesize, (void *)pool,
               (void *)hStream);
    if (dptr == nullptr)
        FAIL(hipErrorInvalidValue, "dptr is NULL");
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (bytesize == 0) {
        *dptr = 0; // as driver 580 does
        RET(hipSuccess);
    }
    std::string why;
    if (hipError_t r = vendor_error(pool_alloc_locked(*p, p, bytesize, *st, dptr, &why)))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemAllocAsync(fh_devptr *dptr, size_t bytesize, hipStream_t hStream)
{
    FAKE_ENTER("hipMemAllocAsync", "bytesize=%zu, hStream=%p", bytesize, (void *)hStream);
    if (dptr == nullptr)
        FAIL(hipErrorInvalidValue, "dptr is NULL");
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (bytesize == 0) {
        *dptr = 0;
        RET(hipSuccess);
    }
    if (!default_pool_locked(st->device))
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    std::shared_ptr<Pool> p = state().pools.at(state().devices[(size_t)st->device].current_pool);
    std::string why;
    if (hipError_t r = vendor_error(pool_alloc_locked(*p, p, bytesize, *st, dptr, &why)))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemFreeAsync(fh_devptr dptr, hipStream_t hStream)
{
    FAKE_ENTER("hipMemFreeAsync", "dptr=0x%llx, hStream=%p", (unsigned long long)dptr, (void *)hStream);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (dptr == 0)
        RET(hipSuccess);
    uint64_t start = 0;
    Segment *seg = find_segment_locked(dptr, &start);
    if (seg == nullptr || start != dptr)
        FAIL(hipErrorInvalidValue, "not the start of a live allocation");
    if (seg->kind == SegKind::PoolBlock) {
        std::shared_ptr<Pool> p = seg->pool;
        pool_free_block_locked(p, dptr, st);
        RET(hipSuccess);
    }
    if (seg->kind == SegKind::PoolImport) {
        enqueue_locked(*st);
        if (--seg->imports == 0)
            state().segments.erase(start);
        RET(hipSuccess);
    }
    if (seg->kind == SegKind::Device) {
        // Driver 580 takes cuMemAlloc memory too.  (Its work is complete in the fake; with
        // FAKE_HIP_DEFER pending operations keep their own view of the bytes.)
        enqueue_locked(*st);
        free_device_allocation_locked(start);
        RET(hipSuccess);
    }
    FAIL(hipErrorInvalidValue, "VMM-mapped memory is not freed with cuMemFreeAsync");
}

FAKE_HIP_API fake_cuMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    FAKE_ENTER("hipMemPoolSetAttribute", "pool=%p, attr=%d", (void *)pool, (int)attr);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (value == nullptr)
        FAIL(hipErrorInvalidValue, "value is NULL");
    switch (attr) {
    case hipMemPoolReuseFollowEventDependencies:
    case hipMemPoolReuseAllowOpportunistic:
    case hipMemPoolReuseAllowInternalDependencies: {
        int v = *static_cast<int *>(value) != 0; // any non-zero is 1, as with driver 580
        int &field = attr == hipMemPoolReuseFollowEventDependencies ? p->follow_event_deps
                     : attr == hipMemPoolReuseAllowOpportunistic    ? p->opportunistic
                                                                            : p->internal_deps;
        field = v;
        RET(hipSuccess);
    }
    case hipMemPoolAttrReleaseThreshold:
        p->release_threshold = *static_cast<uint64_t *>(value);
        RET(hipSuccess);
    case hipMemPoolAttrReservedMemHigh:
    case hipMemPoolAttrUsedMemHigh:
        if (*static_cast<uint64_t *>(value) != 0)
            FAIL(hipErrorInvalidValue, "a high-water mark can only be reset (set to 0)");
        if (attr == hipMemPoolAttrReservedMemHigh)
            p->reserved_high = p->reserved;
        else
            p->used_high = p->used;
        RET(hipSuccess);
    case hipMemPoolAttrReservedMemCurrent:
    case hipMemPoolAttrUsedMemCurrent:
        FAIL(hipErrorInvalidValue, "read-only attribute");
    default:
        FAIL(hipErrorInvalidValue, "unknown attribute");
    }
}

FAKE_HIP_API fake_cuMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    FAKE_ENTER("hipMemPoolGetAttribute", "pool=%p, attr=%d", (void *)pool, (int)attr);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (value == nullptr)
        FAIL(hipErrorInvalidValue, "value is NULL");
    uint64_t *u64 = static_cast<uint64_t *>(value);
    switch (attr) {
    case hipMemPoolReuseFollowEventDependencies: *static_cast<int *>(value) = p->follow_event_deps; break;
    case hipMemPoolReuseAllowOpportunistic: *static_cast<int *>(value) = p->opportunistic; break;
    case hipMemPoolReuseAllowInternalDependencies: *static_cast<int *>(value) = p->internal_deps; break;
    case hipMemPoolAttrReleaseThreshold: *u64 = p->release_threshold; break;
    case hipMemPoolAttrReservedMemCurrent: *u64 = p->reserved; break;
    case hipMemPoolAttrReservedMemHigh: *u64 = p->reserved_high; break;
    case hipMemPoolAttrUsedMemCurrent: *u64 = p->used; break;
    case hipMemPoolAttrUsedMemHigh: *u64 = p->used_high; break;
    default: FAIL(hipErrorInvalidValue, "unknown attribute");
    }
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolTrimTo(hipMemPool_t pool, size_t minBytesToKeep)
{
    FAKE_ENTER("hipMemPoolTrimTo", "pool=%p, minBytesToKeep=%zu", (void *)pool, minBytesToKeep);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (!p->imported)
        release_cached_locked(*p, minBytesToKeep, false); // the fake's frees have all completed
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *map, size_t count)
{
    FAKE_ENTER("hipMemPoolSetAccess", "pool=%p, count=%zu", (void *)pool, count);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (map == nullptr && count != 0)
        FAIL(hipErrorInvalidValue, "map is NULL");
    for (size_t i = 0; i < count; ++i) {
        const hipMemAccessDesc &d = map[i];
        if (d.location.type != hipMemLocationTypeDevice)
            FAIL(hipErrorInvalidValue, "desc %zu: location.type must be DEVICE", i);
        if (!valid_device(d.location.id))
            FAIL(hipErrorInvalidDevice, "desc %zu: no device %d", i, d.location.id);
        if (d.flags != hipMemAccessFlagsProtNone && d.flags != hipMemAccessFlagsProtRead &&
            d.flags != hipMemAccessFlagsProtReadWrite)
            FAIL(hipErrorInvalidValue, "desc %zu: unknown flags %d", i, (int)d.flags);
        if (d.location.id == p->device && d.flags != hipMemAccessFlagsProtReadWrite)
            FAIL(hipErrorNotSupported, "desc %zu: the owning device keeps read-write access", i);
    }
    for (size_t i = 0; i < count; ++i)
        p->access[(size_t)map[i].location.id] = map[i].flags;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t memPool, hipMemLocation *location)
{
    FAKE_ENTER("hipMemPoolGetAccess", "memPool=%p", (void *)memPool);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(memPool, &p)))
        FAIL(r, "not a live pool");
    if (flags == nullptr || location == nullptr)
        FAIL(hipErrorInvalidValue, "flags or location is NULL");
    if (location->type != hipMemLocationTypeDevice)
        FAIL(hipErrorInvalidValue, "location.type must be DEVICE");
    if (!valid_device(location->id))
        FAIL(hipErrorInvalidDevice, "no device %d", location->id);
    *flags = static_cast<hipMemAccessFlags>(p->access[(size_t)location->id]);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolExportToShareableHandle(void *handle_out, hipMemPool_t pool,
                                                    hipMemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("hipMemPoolExportToShareableHandle", "pool=%p, handleType=%d, flags=%llu", (void *)pool, (int)handleType,
               flags);
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (handle_out == nullptr || flags != 0)
        FAIL(hipErrorInvalidValue, "handle_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_IPC is set");
    if (handleType != hipMemHandleTypePosixFileDescriptor || !(p->handle_types & handleType) || p->imported)
        FAIL(hipErrorInvalidValue, "the pool was not made with handle type %d", (int)handleType);
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        FAIL(hipErrorOperatingSystem, "dup: %s", strerror(errno));
    p->exported = true;
    *static_cast<int *>(handle_out) = fd;
    OUT("fd=%d", fd);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolImportFromShareableHandle(hipMemPool_t *pool_out, void *handle,
                                                      hipMemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("hipMemPoolImportFromShareableHandle", "handle=%p, handleType=%d, flags=%llu", handle, (int)handleType,
               flags);
    if (pool_out == nullptr || flags != 0)
        FAIL(hipErrorInvalidValue, "pool_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_IPC is set");
    if (handleType != hipMemHandleTypePosixFileDescriptor)
        FAIL(hipErrorInvalidValue, "handle type %d is not POSIX_FILE_DESCRIPTOR", (int)handleType);
    const int fd = (int)reinterpret_cast<intptr_t>(handle);
    FdHeader hdr;
    if (!read_shared_header(fd, kFdPool, &hdr))
        FAIL(hipErrorUnknown, "fd %d is not an exported pool (driver 580 says UNKNOWN)", fd);
    if (!valid_device(hdr.device))
        FAIL(hipErrorInvalidDevice, "the pool is on device %d, which this process does not have", hdr.device);
    std::shared_ptr<Pool> p = std::make_shared<Pool>();
    p->id = new_handle(kPoolTag);
    p->uid = hdr.uid;
    p->device = hdr.device;
    p->imported = true;
    p->handle_types = hdr.handle_types;
    p->capacity = hdr.size;
    p->access.assign(state().devices.size(), hipMemAccessFlagsProtNone);
    p->access[(size_t)p->device] = hipMemAccessFlagsProtReadWrite;
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); // the caller keeps its descriptor
    if (p->fd < 0)
        FAIL(hipErrorOperatingSystem, "dup: %s", strerror(errno));
    uint64_t base = 0;
    if (!region_alloc_locked(p->capacity, kGranularity, 0, &base))
        FAIL(hipErrorOutOfMemory, "no device address space left to map the pool");
    p->base = base;
    void *shadow = mmap(nullptr, p->capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED || !region_map_fd_locked(base, p->capacity, p->fd, kFdHeader)) {
        if (shadow != MAP_FAILED)
            munmap(shadow, p->capacity);
        FAIL(hipErrorOutOfMemory, "mmap: %s", strerror(errno));
    }
    p->shadow = static_cast<char *>(shadow);
    state().pools[p->id] = p;
    *pool_out = reinterpret_cast<hipMemPool_t>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolExportPointer(hipMemPoolPtrExportData *shareData_out, fh_devptr ptr)
{
    FAKE_ENTER("hipMemPoolExportPointer", "ptr=0x%llx", (unsigned long long)ptr);
    if (shareData_out == nullptr)
        FAIL(hipErrorInvalidValue, "shareData_out is NULL");
    uint64_t start = 0;
    Segment *seg = find_segment_locked(ptr, &start);
    if (seg == nullptr || seg->kind != SegKind::PoolBlock || start != ptr)
        FAIL(hipErrorInvalidValue, "not the start of a pool allocation");
    const Pool &p = *seg->pool;
    if (!(p.handle_types & hipMemHandleTypePosixFileDescriptor))
        FAIL(hipErrorInvalidValue, "the pool is not shareable");
    if (!p.exported) // driver 580 refuses until the pool itself was exported
        FAIL(hipErrorInvalidValue, "export the pool (cuMemPoolExportToShareableHandle) before its pointers");
    PtrExport e;
    memset(&e, 0, sizeof e);
    memcpy(e.magic, k_ptr_magic, sizeof e.magic);
    e.uid = p.uid;
    e.offset = ptr - p.base;
    e.size = seg->size;
    e.check = ptr_check(e);
    memcpy(shareData_out, &e, sizeof e);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolImportPointer(fh_devptr *ptr_out, hipMemPool_t pool, hipMemPoolPtrExportData *shareData)
{
    FAKE_ENTER("hipMemPoolImportPointer", "pool=%p", (void *)pool);
    if (ptr_out == nullptr || shareData == nullptr)
        FAIL(hipErrorInvalidValue, "ptr_out or shareData is NULL");
    std::shared_ptr<Pool> p;
    if (hipError_t r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (!p->imported)
        FAIL(hipErrorInvalidValue, "the pool was not imported");
    PtrExport e;
    memcpy(&e, shareData, sizeof e);
    if (memcmp(e.magic, k_ptr_magic, sizeof e.magic) != 0 || e.check != ptr_check(e))
        FAIL(hipErrorInvalidValue, "not export data of a pool pointer");
    if (e.uid != p->uid)
        FAIL(hipErrorInvalidValue, "the pointer belongs to another pool");
    if (e.size == 0 || e.offset > p->capacity || e.size > p->capacity - e.offset)
        FAIL(hipErrorInvalidValue, "the pointer lies outside the pool");
    const uint64_t addr = p->base + e.offset;
    uint64_t start = 0;
    Segment *seg = find_segment_locked(addr, &start);
    if (seg != nullptr) {
        if (start != addr || seg->kind != SegKind::PoolImport || seg->size != e.size)
            FAIL(hipErrorInvalidValue, "overlaps another imported pointer");
        ++seg->imports; // each import is freed on its own
    } else {
        Segment s;
        s.size = e.size;
        s.shadow = p->shadow + e.offset;
        s.kind = SegKind::PoolImport;
        s.device = p->device;
        s.pool = p;
        s.imports = 1;
        state().segments[addr] = std::move(s);
    }
    *ptr_out = addr;
    OUT("*ptr_out=0x%llx", (unsigned long long)addr);
    RET(hipSuccess);
}
