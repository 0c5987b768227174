// The fake CUDA driver: memory pools and stream-ordered allocation.
//
// A pool is an arena in a memfd (so another process can map it), mapped into the device
// address range.  Like a real driver it reserves device memory in granules
// (FAKE_CUDA_POOL_GRANULE, 32 MiB by default): RESERVED_MEM_* move in granules, maxSize is
// rounded up to one.  Allocations are carved out of reserved granules; a freed block stays
// in the pool's cache and is handed out again under CUDA's stream-order rules: at once to
// the stream that freed it, to another stream when the reuse attributes allow it (the
// fake's work is always complete, so opportunistic reuse is always possible), and to any
// stream once the host synchronised with the free.  After a stream, event or device
// synchronisation, wholly free granules above the release threshold go back to the device.
//
// SPDX-License-Identifier: MIT
#include "fake_cuda.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

// The pools themselves (arenas, granules, stream-ordered reuse, release threshold) are the
// engine's: fake_gpu_pools.cpp.  Here: the entry points.

using namespace fakecuda;

FAKE_CUDA_API fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetDefaultMemPool", "dev=%d", (int)dev);
    if (pool_out == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pool_out is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    std::shared_ptr<Pool> p = default_pool_locked(dev);
    if (!p)
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "could not make the default pool");
    *pool_out = reinterpret_cast<CUmemoryPool>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetMemPool", "dev=%d", (int)dev);
    if (pool == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pool is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    if (!default_pool_locked(dev))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "could not make the default pool");
    *pool = reinterpret_cast<CUmemoryPool>(state().devices[(size_t)dev].current_pool);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    FAKE_ENTER("cuDeviceSetMemPool", "dev=%d, pool=%p", (int)dev, (void *)pool);
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->device != dev || p->imported)
        FAIL(CUDA_ERROR_INVALID_DEVICE, "the pool is not device %d's", (int)dev);
    default_pool_locked(dev);
    state().devices[(size_t)dev].current_pool = p->id;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    FAKE_ENTER("cuMemPoolCreate", "poolProps=%p", (const void *)poolProps);
    if (pool == nullptr || poolProps == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pool or poolProps is NULL");
    const CUmemPoolProps &pp = *poolProps;
    if (config().trace)
        call_.args("allocType=%d, handleTypes=0x%x, location={%d,%d}, maxSize=%zu", (int)pp.allocType,
                   (unsigned)pp.handleTypes, (int)pp.location.type, pp.location.id, pp.maxSize);
    if (pp.allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        FAIL(CUDA_ERROR_INVALID_VALUE, "allocType must be CU_MEM_ALLOCATION_TYPE_PINNED");
    if (pp.location.type == CU_MEM_LOCATION_TYPE_HOST || pp.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
        pp.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "host pools are not modelled");
    if (pp.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        FAIL(CUDA_ERROR_INVALID_VALUE, "location.type must be CU_MEM_LOCATION_TYPE_DEVICE");
    if (!valid_device(pp.location.id))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", pp.location.id);
    if (pp.handleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "handle types 0x%x are not available on Linux", (unsigned)pp.handleTypes);
    if ((pp.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) && !config().ipc)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_IPC is set: no shareable pools");
    if (pp.win32SecurityAttributes != nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "win32SecurityAttributes must be NULL");
    if (pp.usage != 0)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "usage 0x%x is not modelled", (unsigned)pp.usage);
    for (unsigned char b : pp.reserved)
        if (b != 0)
            FAIL(CUDA_ERROR_INVALID_VALUE, "reserved bytes must be 0");
    // Before CUDA 12.2 maxSize was part of the reserved bytes, which had to be 0.
    if (pp.maxSize != 0 && config().driver_version < 12020)
        FAIL(CUDA_ERROR_INVALID_VALUE, "maxSize needs a 12.2 driver (this one is %d): reserved bytes must be 0",
             config().driver_version);
    if (!default_pool_locked(pp.location.id))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "could not make the default pool");
    std::shared_ptr<Pool> p;
    std::string why;
    if (CUresult r = vendor_error(create_pool_locked(pp.location.id, pp.handleTypes, pp.maxSize, false, &p, &why)))
        FAIL(r, "%s", why.c_str());
    *pool = reinterpret_cast<CUmemoryPool>(p->id);
    OUT("*pool=%p", (void *)*pool);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolDestroy(CUmemoryPool pool)
{
    FAKE_ENTER("cuMemPoolDestroy", "pool=%p", (void *)pool);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->is_default)
        FAIL(CUDA_ERROR_INVALID_VALUE, "a device's default pool cannot be destroyed");
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
    RET(CUDA_SUCCESS); // outstanding allocations keep it (through their segments) until freed
}

FAKE_CUDA_API fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    FAKE_ENTER("cuMemAllocFromPoolAsync", "bytesize=%zu, pool=%p, hStream=%p", bytesize, (void *)pool,
               (void *)hStream);
    if (dptr == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "dptr is NULL");
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (bytesize == 0) {
        *dptr = 0; // as driver 580 does
        RET(CUDA_SUCCESS);
    }
    std::string why;
    if (CUresult r = vendor_error(pool_alloc_locked(*p, p, bytesize, *st, dptr, &why)))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    FAKE_ENTER("cuMemAllocAsync", "bytesize=%zu, hStream=%p", bytesize, (void *)hStream);
    if (dptr == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "dptr is NULL");
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (bytesize == 0) {
        *dptr = 0;
        RET(CUDA_SUCCESS);
    }
    if (!default_pool_locked(st->device))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "could not make the default pool");
    std::shared_ptr<Pool> p = state().pools.at(state().devices[(size_t)st->device].current_pool);
    std::string why;
    if (CUresult r = vendor_error(pool_alloc_locked(*p, p, bytesize, *st, dptr, &why)))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    FAKE_ENTER("cuMemFreeAsync", "dptr=0x%llx, hStream=%p", (unsigned long long)dptr, (void *)hStream);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (dptr == 0)
        RET(CUDA_SUCCESS);
    uint64_t start = 0;
    Segment *seg = find_segment_locked(dptr, &start);
    if (seg == nullptr || start != dptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "not the start of a live allocation");
    if (seg->kind == SegKind::PoolBlock) {
        std::shared_ptr<Pool> p = seg->pool;
        pool_free_block_locked(p, dptr, st);
        RET(CUDA_SUCCESS);
    }
    if (seg->kind == SegKind::PoolImport) {
        enqueue_locked(*st);
        if (--seg->imports == 0)
            state().segments.erase(start);
        RET(CUDA_SUCCESS);
    }
    if (seg->kind == SegKind::Device) {
        // Driver 580 takes cuMemAlloc memory too.  (Its work is complete in the fake; with
        // FAKE_CUDA_DEFER pending operations keep their own view of the bytes.)
        enqueue_locked(*st);
        free_device_allocation_locked(start);
        RET(CUDA_SUCCESS);
    }
    FAIL(CUDA_ERROR_INVALID_VALUE, "VMM-mapped memory is not freed with cuMemFreeAsync");
}

FAKE_CUDA_API fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    FAKE_ENTER("cuMemPoolSetAttribute", "pool=%p, attr=%d", (void *)pool, (int)attr);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (value == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "value is NULL");
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
        int v = *static_cast<int *>(value) != 0; // any non-zero is 1, as with driver 580
        int &field = attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ? p->follow_event_deps
                     : attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC    ? p->opportunistic
                                                                            : p->internal_deps;
        field = v;
        RET(CUDA_SUCCESS);
    }
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->release_threshold = *static_cast<cuuint64_t *>(value);
        RET(CUDA_SUCCESS);
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*static_cast<cuuint64_t *>(value) != 0)
            FAIL(CUDA_ERROR_INVALID_VALUE, "a high-water mark can only be reset (set to 0)");
        if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
            p->reserved_high = p->reserved;
        else
            p->used_high = p->used;
        RET(CUDA_SUCCESS);
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        FAIL(CUDA_ERROR_INVALID_VALUE, "read-only attribute");
    default:
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown attribute");
    }
}

FAKE_CUDA_API fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    FAKE_ENTER("cuMemPoolGetAttribute", "pool=%p, attr=%d", (void *)pool, (int)attr);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (value == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "value is NULL");
    cuuint64_t *u64 = static_cast<cuuint64_t *>(value);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *static_cast<int *>(value) = p->follow_event_deps; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *static_cast<int *>(value) = p->opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *static_cast<int *>(value) = p->internal_deps; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *u64 = p->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *u64 = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *u64 = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *u64 = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *u64 = p->used_high; break;
    default: FAIL(CUDA_ERROR_INVALID_VALUE, "unknown attribute");
    }
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    FAKE_ENTER("cuMemPoolTrimTo", "pool=%p, minBytesToKeep=%zu", (void *)pool, minBytesToKeep);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (!p->imported)
        release_cached_locked(*p, minBytesToKeep, false); // the fake's frees have all completed
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    FAKE_ENTER("cuMemPoolSetAccess", "pool=%p, count=%zu", (void *)pool, count);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (map == nullptr && count != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "map is NULL");
    for (size_t i = 0; i < count; ++i) {
        const CUmemAccessDesc &d = map[i];
        if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            FAIL(CUDA_ERROR_INVALID_VALUE, "desc %zu: location.type must be DEVICE", i);
        if (!valid_device(d.location.id))
            FAIL(CUDA_ERROR_INVALID_DEVICE, "desc %zu: no device %d", i, d.location.id);
        if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            FAIL(CUDA_ERROR_INVALID_VALUE, "desc %zu: unknown flags %d", i, (int)d.flags);
        if (d.location.id == p->device && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            FAIL(CUDA_ERROR_NOT_SUPPORTED, "desc %zu: the owning device keeps read-write access", i);
    }
    for (size_t i = 0; i < count; ++i)
        p->access[(size_t)map[i].location.id] = map[i].flags;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    FAKE_ENTER("cuMemPoolGetAccess", "memPool=%p", (void *)memPool);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(memPool, &p)))
        FAIL(r, "not a live pool");
    if (flags == nullptr || location == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags or location is NULL");
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        FAIL(CUDA_ERROR_INVALID_VALUE, "location.type must be DEVICE");
    if (!valid_device(location->id))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", location->id);
    *flags = static_cast<CUmemAccess_flags>(p->access[(size_t)location->id]);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                    CUmemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("cuMemPoolExportToShareableHandle", "pool=%p, handleType=%d, flags=%llu", (void *)pool, (int)handleType,
               flags);
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (handle_out == nullptr || flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "handle_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_IPC is set");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || !(p->handle_types & handleType) || p->imported)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the pool was not made with handle type %d", (int)handleType);
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        FAIL(CUDA_ERROR_OPERATING_SYSTEM, "dup: %s", strerror(errno));
    p->exported = true;
    *static_cast<int *>(handle_out) = fd;
    OUT("fd=%d", fd);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                      CUmemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("cuMemPoolImportFromShareableHandle", "handle=%p, handleType=%d, flags=%llu", handle, (int)handleType,
               flags);
    if (pool_out == nullptr || flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pool_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_IPC is set");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        FAIL(CUDA_ERROR_INVALID_VALUE, "handle type %d is not POSIX_FILE_DESCRIPTOR", (int)handleType);
    const int fd = (int)reinterpret_cast<intptr_t>(handle);
    FdHeader hdr;
    if (!read_shared_header(fd, kFdPool, &hdr))
        FAIL(CUDA_ERROR_UNKNOWN, "fd %d is not an exported pool (driver 580 says UNKNOWN)", fd);
    if (!valid_device(hdr.device))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "the pool is on device %d, which this process does not have", hdr.device);
    std::shared_ptr<Pool> p = std::make_shared<Pool>();
    p->id = new_handle(kPoolTag);
    p->uid = hdr.uid;
    p->device = hdr.device;
    p->imported = true;
    p->handle_types = hdr.handle_types;
    p->capacity = hdr.size;
    p->access.assign(state().devices.size(), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    p->access[(size_t)p->device] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); // the caller keeps its descriptor
    if (p->fd < 0)
        FAIL(CUDA_ERROR_OPERATING_SYSTEM, "dup: %s", strerror(errno));
    uint64_t base = 0;
    if (!region_alloc_locked(p->capacity, kGranularity, 0, &base))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "no device address space left to map the pool");
    p->base = base;
    void *shadow = mmap(nullptr, p->capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED || !region_map_fd_locked(base, p->capacity, p->fd, kFdHeader)) {
        if (shadow != MAP_FAILED)
            munmap(shadow, p->capacity);
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "mmap: %s", strerror(errno));
    }
    p->shadow = static_cast<char *>(shadow);
    state().pools[p->id] = p;
    *pool_out = reinterpret_cast<CUmemoryPool>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    FAKE_ENTER("cuMemPoolExportPointer", "ptr=0x%llx", (unsigned long long)ptr);
    if (shareData_out == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "shareData_out is NULL");
    uint64_t start = 0;
    Segment *seg = find_segment_locked(ptr, &start);
    if (seg == nullptr || seg->kind != SegKind::PoolBlock || start != ptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "not the start of a pool allocation");
    const Pool &p = *seg->pool;
    if (!(p.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        FAIL(CUDA_ERROR_INVALID_VALUE, "the pool is not shareable");
    if (!p.exported) // driver 580 refuses until the pool itself was exported
        FAIL(CUDA_ERROR_INVALID_VALUE, "export the pool (cuMemPoolExportToShareableHandle) before its pointers");
    PtrExport e;
    memset(&e, 0, sizeof e);
    memcpy(e.magic, k_ptr_magic, sizeof e.magic);
    e.uid = p.uid;
    e.offset = ptr - p.base;
    e.size = seg->size;
    e.check = ptr_check(e);
    memcpy(shareData_out, &e, sizeof e);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData)
{
    FAKE_ENTER("cuMemPoolImportPointer", "pool=%p", (void *)pool);
    if (ptr_out == nullptr || shareData == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "ptr_out or shareData is NULL");
    std::shared_ptr<Pool> p;
    if (CUresult r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (!p->imported)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the pool was not imported");
    PtrExport e;
    memcpy(&e, shareData, sizeof e);
    if (memcmp(e.magic, k_ptr_magic, sizeof e.magic) != 0 || e.check != ptr_check(e))
        FAIL(CUDA_ERROR_INVALID_VALUE, "not export data of a pool pointer");
    if (e.uid != p->uid)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the pointer belongs to another pool");
    if (e.size == 0 || e.offset > p->capacity || e.size > p->capacity - e.offset)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the pointer lies outside the pool");
    const uint64_t addr = p->base + e.offset;
    uint64_t start = 0;
    Segment *seg = find_segment_locked(addr, &start);
    if (seg != nullptr) {
        if (start != addr || seg->kind != SegKind::PoolImport || seg->size != e.size)
            FAIL(CUDA_ERROR_INVALID_VALUE, "overlaps another imported pointer");
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
    RET(CUDA_SUCCESS);
}
