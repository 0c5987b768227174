// Both fakes: memory pools and stream-ordered allocation (compiled once per vendor; see fake_api.hpp).
//
// A pool is an arena in a memfd (so another process can map it), mapped into the device
// address range.  Like a real driver it reserves device memory in granules
// (FAKE_*_POOL_GRANULE, 32 MiB by default): RESERVED_MEM_* move in granules, maxSize is
// rounded up to one.  Allocations are carved out of reserved granules; a freed block stays
// in the pool's cache and is handed out again under CUDA's stream-order rules: at once to
// the stream that freed it, to another stream when the reuse attributes allow it (the
// fake's work is always complete, so opportunistic reuse is always possible), and to any
// stream once the host synchronised with the free.  After a stream, event or device
// synchronisation, wholly free granules above the release threshold go back to the device.
//
// Stream capture: on a capturing stream, stream-ordered allocation makes alloc nodes and
// cuMemFreeAsync free nodes (fake_api_graphs.cpp).  On a stream that does not capture they are
// potentially unsafe calls (cuThreadExchangeStreamCaptureMode's rules): driver 580 refused
// cuMemFreeAsync on the legacy stream while a non-blocking stream of the thread captured in
// GLOBAL mode, invalidating the capture, and made it during a RELAXED capture (probe group
// capture; mlx#2850 met the same refusal).  cuMemAllocAsync and cuMemAllocFromPoolAsync are
// treated alike (not yet asked of a driver in GLOBAL mode).
//
// An imported pool (cuMemPoolImportFromShareableHandle, in another process or the exporting one)
// maps what its pointers import and nothing else: driver 580 refuses every attribute, read or set,
// and the trim with INVALID_VALUE, and the export of the pool or of a pointer imported into it
// (probe group imported, probe/h100-imported.txt: the refusals of RESERVED_MEM_CURRENT, the reuse
// flags, RELEASE_THRESHOLD and the trim were seen on an H100; the other attributes are PREDICTED
// alike until the group runs there).  Access is the importer's to grant, as CUDA documents.
//
// A pool of fabric memory whose export was refused (no IMEX channel) is poisoned, as on driver
// 580.159.04 (H200): the next calls on it crash the process, and the fake crashes too
// (crash_as_the_driver) rather than be more lenient than the driver it stands for.
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>

// The pools themselves (arenas, granules, stream-ordered reuse, release threshold) are the
// engine's: fake_gpu_pools.cpp.  Here: the entry points.

using namespace FAKE_NS;

namespace {
// The driver's crash after a refused fabric export (the design note above): the process dies of
// SIGSEGV, whatever handler it has (the engine's device-memory hint would return from a raised
// signal, and the call with it).  Which calls crash, in cuda_probe export (probe/h200-export.txt,
// each asked in a process of its own on the H200):
//   cuMemPoolExportPointer of a block            crashes
//   cuMemFreeAsync of a block (and the sync)     crashes (the fake crashes in the free)
//   cuMemPoolDestroy, with or without a block    crashes
//   the refused export of an empty pool itself   does not crash: NOT_PERMITTED
[[noreturn]] void crash_as_the_driver(const char *call)
{
    fprintf(stderr, "%s: %s on a pool whose fabric export was refused: the driver crashes here (SIGSEGV, "
                    "H200 driver 580, cuda_probe export), and so does the fake\n",
            engine_config().name, call);
    signal(SIGSEGV, SIG_DFL);
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    sigprocmask(SIG_UNBLOCK, &segv, nullptr);
    raise(SIGSEGV);
    abort(); // not reached
}
} // namespace

FAKE_API fake_cuDeviceGetDefaultMemPool(PoolH *pool_out, int dev)
{
    FAKE_ENTER(API("DeviceGetDefaultMemPool"), "dev=%d", (int)dev);
    if (pool_out == nullptr)
        FAIL(kErrInvalidValue, "pool_out is NULL");
    if (!valid_device(dev))
        FAIL(kErrInvalidDevice, "no device %d", (int)dev);
    std::shared_ptr<Pool> p = default_pool_locked(dev);
    if (!p)
        FAIL(kErrOutOfMemory, "could not make the default pool");
    *pool_out = reinterpret_cast<PoolH>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(kOk);
}

FAKE_API fake_cuDeviceGetMemPool(PoolH *pool, int dev)
{
    FAKE_ENTER(API("DeviceGetMemPool"), "dev=%d", (int)dev);
    if (pool == nullptr)
        FAIL(kErrInvalidValue, "pool is NULL");
    if (!valid_device(dev))
        FAIL(kErrInvalidDevice, "no device %d", (int)dev);
    if (!default_pool_locked(dev))
        FAIL(kErrOutOfMemory, "could not make the default pool");
    *pool = reinterpret_cast<PoolH>(state().devices[(size_t)dev].current_pool);
    RET(kOk);
}

FAKE_API fake_cuDeviceSetMemPool(int dev, PoolH pool)
{
    FAKE_ENTER(API("DeviceSetMemPool"), "dev=%d, pool=%p", (int)dev, (void *)pool);
    if (!valid_device(dev))
        FAIL(kErrInvalidDevice, "no device %d", (int)dev);
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->device != dev || p->imported)
        FAIL(kErrInvalidDevice, "the pool is not device %d's", (int)dev);
    default_pool_locked(dev);
    state().devices[(size_t)dev].current_pool = p->id;
    RET(kOk);
}

FAKE_API fake_cuMemPoolCreate(PoolH *pool, const PoolProps *poolProps)
{
    FAKE_ENTER(API("MemPoolCreate"), "poolProps=%p", (const void *)poolProps);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    if (pool == nullptr || poolProps == nullptr)
        FAIL(kErrInvalidValue, "pool or poolProps is NULL");
    const PoolProps &pp = *poolProps;
    if (config().trace)
        call_.args("allocType=%d, handleTypes=0x%x, location={%d,%d}, maxSize=%zu", (int)pp.allocType,
                   (unsigned)pp.handleTypes, (int)pp.location.type, pp.location.id, pp.maxSize);
    // What the pool holds: device memory; host memory (location HOST or HOST_NUMA, driver
    // 12.6); managed memory (allocation type MANAGED, driver 13.0; its location is the
    // preferred one, or NONE).  Host and managed pools are not shareable.
    PoolMemory memory = PoolMemory::Device;
    int dev = 0;
    const int loc = (int)pp.location.type;
    if ((int)pp.allocType == kAllocManaged) {
        if (!managed_pools_ok())
            FAIL(kErrNotSupported, FAKE_MANAGED_POOLS_WHY);
        if (loc != (int)kLocDevice && loc != kLocNone)
            FAIL(kErrInvalidValue, "a managed pool's location.type must be DEVICE or NONE");
        if (loc == (int)kLocDevice && !valid_device(pp.location.id))
            FAIL(kErrInvalidDevice, "no device %d", pp.location.id);
        memory = PoolMemory::Managed;
        dev = loc == (int)kLocDevice ? pp.location.id : 0;
    } else if (pp.allocType != kAllocPinned) {
        FAIL(kErrInvalidValue, "allocType must be " FAKE_N_ALLOC_PINNED);
    } else if (loc == kLocHost || loc == kLocHostNuma || loc == kLocHostNumaCurrent) {
        if (!host_pools_ok())
            FAIL(kErrNotSupported, FAKE_HOST_POOLS_WHY);
        if (loc == kLocHostNumaCurrent)
            FAIL(kErrInvalidValue, "HOST_NUMA_CURRENT is not a pool location");
        if (loc == kLocHostNuma && pp.location.id != 0)
            FAIL(kErrInvalidValue, "no host NUMA node %d (the fake has node 0)", pp.location.id);
        memory = PoolMemory::Host;
    } else {
        if (pp.location.type != kLocDevice)
            FAIL(kErrInvalidValue, "location.type must be " FAKE_N_LOC_DEVICE);
        if (!valid_device(pp.location.id))
            FAIL(kErrInvalidDevice, "no device %d", pp.location.id);
        dev = pp.location.id;
    }
    if (memory != PoolMemory::Device && pp.handleTypes != kHandleTypeNone)
        FAIL(kErrInvalidValue, "host and managed pools are not IPC capable: handleTypes must be 0");
    // A pool of fabric memory is made, and serves allocations, on an H200 with no IMEX channel,
    // where cuMemCreate refuses fabric handles (probe group export: fabric_pool_create and
    // fabric_pool_alloc succeed, fabric_create is NOT_PERMITTED).
    if (pp.handleTypes & ~(unsigned)(kHandleTypePosixFd | kHandleTypeFabric))
        FAIL(kErrNotSupported, "handle types 0x%x are not available on Linux", (unsigned)pp.handleTypes);
    if ((pp.handleTypes & kHandleTypePosixFd) && !config().ipc)
        FAIL(kErrNotSupported, FAKE_ENV "NO_IPC is set: no shareable pools");
    if (pp.win32SecurityAttributes != nullptr)
        FAIL(kErrInvalidValue, "win32SecurityAttributes must be NULL");
    if (pool_usage(pp) != 0)
        FAIL(kErrNotSupported, "usage 0x%x is not modelled", pool_usage(pp));
    for (unsigned char b : pp.reserved)
        if (b != 0)
            FAIL(kErrInvalidValue, "reserved bytes must be 0");
    if (pp.maxSize != 0 && !pool_max_size_ok())
        FAIL(kErrInvalidValue, FAKE_MAX_SIZE_WHY, vendor_version());
    if (!default_pool_locked(dev))
        FAIL(kErrOutOfMemory, "could not make the default pool");
    std::shared_ptr<Pool> p;
    std::string why;
    if (Result r = vendor_error(create_pool_locked(dev, pp.handleTypes, pp.maxSize, false, &p, &why, memory)))
        FAIL(r, "%s", why.c_str());
    *pool = reinterpret_cast<PoolH>(p->id);
    OUT("*pool=%p", (void *)*pool);
    RET(kOk);
}

FAKE_API fake_cuMemPoolDestroy(PoolH pool)
{
    FAKE_ENTER(API("MemPoolDestroy"), "pool=%p", (void *)pool);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->is_default)
        FAIL(kErrInvalidValue, "a device's default pool cannot be destroyed");
    if (p->fabric_export_refused)
        crash_as_the_driver("cuMemPoolDestroy"); // PREDICTED (crash_as_the_driver)
    if (engine_config().bug_pool_destroy_deferred && !p->live.empty()) {
        fprintf(stderr, "%s: a pool destroyed with %zu live allocations: the deferred destruction crashes the "
                        "process (%sBUG_POOL_DESTROY_DEFERRED)\n",
                engine_config().name, p->live.size(), engine_config().env_prefix);
        abort();
    }
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
    RET(kOk); // outstanding allocations keep it (through their segments) until freed
}

namespace {
// pool_alloc_locked, with bug_double_free_on_failed_alloc: a failed allocation freed memory it
// did not own, so retrying the same size on the same pool frees it again (caught and reported).
Status alloc_reproducing_bugs_locked(Pool &p, const std::shared_ptr<Pool> &ref, uint64_t size, Stream &st,
                                     DevPtr *dptr, std::string *why)
{
    const bool bug = engine_config().bug_double_free_on_failed_alloc;
    if (bug && p.failed_size == size) {
        p.failed_size = 0;
        ++bug_counters().double_frees;
        fprintf(stderr, "%s: double free: a failed allocation of %llu bytes was retried on the same pool "
                        "(%sBUG_DOUBLE_FREE_ON_FAILED_ALLOC)\n",
                engine_config().name, (unsigned long long)size, engine_config().env_prefix);
        *why = "double free: a failed allocation retried on the same pool";
        return kStatusInvalidValue;
    }
    Status r = pool_alloc_locked(p, ref, size, st, dptr, why);
    if (bug)
        p.failed_size = r == kStatusOutOfMemory ? size : 0;
    return r;
}
} // namespace

FAKE_API fake_cuMemAllocFromPoolAsync(DevPtr *dptr, size_t bytesize, PoolH pool, StreamH hStream)
{
    FAKE_ENTER(API("MemAllocFromPoolAsync"), "bytesize=%zu, pool=%p, hStream=%p", bytesize, (void *)pool,
               (void *)hStream);
    if (dptr == nullptr)
        FAIL(kErrInvalidValue, "dptr is NULL");
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    Capture *cap = nullptr;
    if (Result r = stream_ordered_gate_locked(call_, *st, &cap))
        return r;
    if (bytesize == 0) {
        *dptr = 0; // as driver 580 does
        RET(kOk);
    }
    if (cap) {
        // An alloc node: the graph owns the allocation, made with the pool's properties.
        if (p->imported || p->memory != PoolMemory::Device)
            FAIL(kErrNotSupported, "a graph allocation from an imported, host or managed pool is not modelled");
        return capture_alloc_locked(call_, *st, p->device, bytesize, dptr);
    }
    std::string why;
    if (Result r = vendor_error(alloc_reproducing_bugs_locked(*p, p, bytesize, *st, dptr, &why)))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(kOk);
}

FAKE_API fake_cuMemAllocAsync(DevPtr *dptr, size_t bytesize, StreamH hStream)
{
    FAKE_ENTER(API("MemAllocAsync"), "bytesize=%zu, hStream=%p", bytesize, (void *)hStream);
    if (dptr == nullptr)
        FAIL(kErrInvalidValue, "dptr is NULL");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    Capture *cap = nullptr;
    if (Result r = stream_ordered_gate_locked(call_, *st, &cap))
        return r;
    if (bytesize == 0) {
        *dptr = 0;
        RET(kOk);
    }
    if (!default_pool_locked(st->device))
        FAIL(kErrOutOfMemory, "could not make the default pool");
    std::shared_ptr<Pool> p = state().pools.at(state().devices[(size_t)st->device].current_pool);
    if (cap) {
        if (p->memory != PoolMemory::Device)
            FAIL(kErrNotSupported, "a graph allocation from a host or managed pool is not modelled");
        return capture_alloc_locked(call_, *st, p->device, bytesize, dptr);
    }
    std::string why;
    if (Result r = vendor_error(alloc_reproducing_bugs_locked(*p, p, bytesize, *st, dptr, &why)))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(kOk);
}

FAKE_API fake_cuMemFreeAsync(DevPtr dptr, StreamH hStream)
{
    FAKE_ENTER(API("MemFreeAsync"), "dptr=0x%llx, hStream=%p", (unsigned long long)dptr, (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    Capture *cap = nullptr;
    if (Result r = stream_ordered_gate_locked(call_, *st, &cap))
        return r;
    if (dptr == 0)
        RET(kOk);
    if (cap)
        return capture_free_locked(call_, *st, dptr);
    uint64_t start = 0;
    Segment *seg = find_segment_locked(dptr, &start);
    if (seg == nullptr || start != dptr)
        FAIL(kErrInvalidValue, "not the start of a live allocation");
    if (seg->kind == SegKind::PoolBlock) {
        std::shared_ptr<Pool> p = seg->pool;
        if (p->fabric_export_refused)
            crash_as_the_driver("cuMemFreeAsync");
        pool_free_block_locked(p, dptr, st);
        RET(kOk);
    }
    if (seg->kind == SegKind::PoolImport) {
        enqueue_locked(*st);
        state().segments.erase(start);
        RET(kOk);
    }
    if (seg->kind == SegKind::Device) {
        // Driver 580 takes cuMemAlloc memory too.  (Its work is complete in the fake; with
        // FAKE_*_DEFER pending operations keep their own view of the bytes.)
        enqueue_locked(*st);
        free_device_allocation_locked(start);
        RET(kOk);
    }
    if (seg->kind == SegKind::GraphAlloc) {
        // A graph's allocation that outlived its launch: freed in stream order.
        std::shared_ptr<GraphMem> m = seg->gmem;
        enqueue_locked(*st);
        graph_mem_set_live_locked(m, false);
        RET(kOk);
    }
    FAIL(kErrInvalidValue, "VMM-mapped memory is not freed with cuMemFreeAsync");
}

FAKE_API fake_cuMemPoolSetAttribute(PoolH pool, PoolAttr attr, void *value)
{
    FAKE_ENTER(API("MemPoolSetAttribute"), "pool=%p, attr=%d", (void *)pool, (int)attr);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->imported)
        FAIL(kErrInvalidValue, "an imported pool's attributes are refused (driver 580)");
    if (value == nullptr)
        FAIL(kErrInvalidValue, "value is NULL");
    switch (attr) {
    case kPoolReuseFollowEventDeps:
    case kPoolReuseAllowOpportunistic:
    case kPoolReuseAllowInternalDeps: {
        int v = *static_cast<int *>(value) != 0; // any non-zero is 1, as with driver 580
        int &field = attr == kPoolReuseFollowEventDeps ? p->follow_event_deps
                     : attr == kPoolReuseAllowOpportunistic    ? p->opportunistic
                                                                            : p->internal_deps;
        field = v;
        RET(kOk);
    }
    case kPoolReleaseThreshold:
        p->release_threshold = *static_cast<uint64_t *>(value);
        RET(kOk);
    case kPoolReservedMemHigh:
    case kPoolUsedMemHigh:
        if (*static_cast<uint64_t *>(value) != 0)
            FAIL(kErrInvalidValue, "a high-water mark can only be reset (set to 0)");
        if (attr == kPoolReservedMemHigh)
            p->reserved_high = p->reserved;
        else
            p->used_high = p->used;
        RET(kOk);
    case kPoolReservedMemCurrent:
    case kPoolUsedMemCurrent:
        FAIL(kErrInvalidValue, "read-only attribute");
    default:
        FAIL(kErrInvalidValue, "unknown attribute");
    }
}

FAKE_API fake_cuMemPoolGetAttribute(PoolH pool, PoolAttr attr, void *value)
{
    FAKE_ENTER(API("MemPoolGetAttribute"), "pool=%p, attr=%d", (void *)pool, (int)attr);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->imported)
        FAIL(kErrInvalidValue, "an imported pool's attributes are refused (driver 580)");
    if (value == nullptr)
        FAIL(kErrInvalidValue, "value is NULL");
    uint64_t *u64 = static_cast<uint64_t *>(value);
    switch (attr) {
    case kPoolReuseFollowEventDeps: *static_cast<int *>(value) = p->follow_event_deps; break;
    case kPoolReuseAllowOpportunistic: *static_cast<int *>(value) = p->opportunistic; break;
    case kPoolReuseAllowInternalDeps: *static_cast<int *>(value) = p->internal_deps; break;
    case kPoolReleaseThreshold: *u64 = p->release_threshold; break;
    case kPoolReservedMemCurrent: *u64 = p->reserved; break;
    case kPoolReservedMemHigh: *u64 = p->reserved_high; break;
    case kPoolUsedMemCurrent: *u64 = p->used; break;
    case kPoolUsedMemHigh: *u64 = p->used_high; break;
    default: FAIL(kErrInvalidValue, "unknown attribute");
    }
    RET(kOk);
}

FAKE_API fake_cuMemPoolTrimTo(PoolH pool, size_t minBytesToKeep)
{
    FAKE_ENTER(API("MemPoolTrimTo"), "pool=%p, minBytesToKeep=%zu", (void *)pool, minBytesToKeep);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (p->imported)
        FAIL(kErrInvalidValue, "an imported pool cannot be trimmed (driver 580)");
    uint64_t keep = minBytesToKeep;
    const uint64_t granule = engine_config().pool_granule;
    if (kTrimFloorWraps && keep > UINT64_MAX - (granule - 1))
        keep = 0; // rounded up to a granule, the floor wraps to nothing
    release_cached_locked(*p, keep, false); // the fake's frees have all completed
    RET(kOk);
}

FAKE_API fake_cuMemPoolSetAccess(PoolH pool, const AccessDesc *map, size_t count)
{
    FAKE_ENTER(API("MemPoolSetAccess"), "pool=%p, count=%zu", (void *)pool, count);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (map == nullptr && count != 0)
        FAIL(kErrInvalidValue, "map is NULL");
    for (size_t i = 0; i < count; ++i) {
        const AccessDesc &d = map[i];
        if (d.location.type != kLocDevice)
            FAIL(kErrInvalidValue, "desc %zu: location.type must be DEVICE", i);
        if (!valid_device(d.location.id))
            FAIL(kErrInvalidDevice, "desc %zu: no device %d", i, d.location.id);
        if (d.flags != kAccessNone && d.flags != kAccessRead &&
            d.flags != kAccessReadWrite)
            FAIL(kErrInvalidValue, "desc %zu: unknown flags %d", i, (int)d.flags);
        // The owner keeps read-write access: driver 580 says INVALID_DEVICE when asked to revoke
        // it (PROT_NONE), NOT_SUPPORTED when asked to make it read-only.
        if (p->memory == PoolMemory::Device && d.location.id == p->device && d.flags == kAccessNone)
            FAIL(kErrInvalidDevice, "desc %zu: the owning device's access cannot be revoked", i);
        if (p->memory == PoolMemory::Device && d.location.id == p->device && d.flags != kAccessReadWrite)
            FAIL(kErrNotSupported, "desc %zu: the owning device keeps read-write access", i);
    }
    for (size_t i = 0; i < count; ++i)
        p->access[(size_t)map[i].location.id] = map[i].flags;
    RET(kOk);
}

FAKE_API fake_cuMemPoolGetAccess(AccessFlags *flags, PoolH memPool, MemLocation *location)
{
    FAKE_ENTER(API("MemPoolGetAccess"), "memPool=%p", (void *)memPool);
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(memPool, &p)))
        FAIL(r, "not a live pool");
    if (flags == nullptr || location == nullptr)
        FAIL(kErrInvalidValue, "flags or location is NULL");
    if (location->type != kLocDevice)
        FAIL(kErrInvalidValue, "location.type must be DEVICE");
    if (!valid_device(location->id))
        FAIL(kErrInvalidDevice, "no device %d", location->id);
    *flags = static_cast<AccessFlags>(p->access[(size_t)location->id]);
    RET(kOk);
}

FAKE_API fake_cuMemPoolExportToShareableHandle(void *handle_out, PoolH pool,
                                                    HandleType handleType, unsigned long long flags)
{
    FAKE_ENTER(API("MemPoolExportToShareableHandle"), "pool=%p, handleType=%d, flags=%llu", (void *)pool, (int)handleType,
               flags);
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (handle_out == nullptr || flags != 0)
        FAIL(kErrInvalidValue, "handle_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(kErrNotSupported, FAKE_ENV "NO_IPC is set");
    // A pool of fabric memory is made without an IMEX channel, but its export needs one: the H200
    // says NOT_PERMITTED (probe group export: fabric_pool_export), as the driver's documentation
    // of cuMemPoolCreate does.  The refusal poisons the pool (crash_as_the_driver); an empty pool's
    // refused export itself does not crash (fabric_refused_export_empty_pool).
    if (kHandleTypeFabric && (unsigned)handleType == kHandleTypeFabric && (p->handle_types & kHandleTypeFabric) &&
        !p->imported) {
        p->fabric_export_refused = true;
        FAIL(kErrNotPermitted, "fabric handles need an IMEX channel, and this system has none");
    }
    if (handleType != kHandleTypePosixFd || !(p->handle_types & handleType) || p->imported)
        FAIL(kErrInvalidValue, "the pool was not made with handle type %d", (int)handleType);
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        FAIL(kErrOperatingSystem, "dup: %s", strerror(errno));
    p->exported = true;
    *static_cast<int *>(handle_out) = fd;
    OUT("fd=%d", fd);
    RET(kOk);
}

FAKE_API fake_cuMemPoolImportFromShareableHandle(PoolH *pool_out, void *handle,
                                                      HandleType handleType, unsigned long long flags)
{
    FAKE_ENTER(API("MemPoolImportFromShareableHandle"), "handle=%p, handleType=%d, flags=%llu", handle, (int)handleType,
               flags);
    if (pool_out == nullptr || flags != 0)
        FAIL(kErrInvalidValue, "pool_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(kErrNotSupported, FAKE_ENV "NO_IPC is set");
    // No fabric handle is ever exported here (above); one from elsewhere needs the IMEX channel
    // this system lacks (the driver documents NOT_PERMITTED; not yet asked of one).
    if (kHandleTypeFabric && (unsigned)handleType == kHandleTypeFabric)
        FAIL(kErrNotPermitted, "fabric handles need an IMEX channel, and this system has none");
    if (handleType != kHandleTypePosixFd)
        FAIL(kErrInvalidValue, "handle type %d is not POSIX_FILE_DESCRIPTOR", (int)handleType);
    const int fd = (int)reinterpret_cast<intptr_t>(handle);
    FdHeader hdr;
    if (!read_shared_header(fd, kFdPool, &hdr))
        FAIL(kErrUnknown, "fd %d is not an exported pool (driver 580 says UNKNOWN)", fd);
    if (!valid_device(hdr.device))
        FAIL(kErrInvalidDevice, "the pool is on device %d, which this process does not have", hdr.device);
    std::shared_ptr<Pool> p = std::make_shared<Pool>();
    p->id = new_handle(kPoolTag);
    p->uid = hdr.uid;
    p->device = hdr.device;
    p->imported = true;
    p->handle_types = hdr.handle_types;
    p->capacity = hdr.size;
    p->access.assign(state().devices.size(), kAccessNone);
    p->access[(size_t)p->device] = kAccessReadWrite;
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); // the caller keeps its descriptor
    if (p->fd < 0)
        FAIL(kErrOperatingSystem, "dup: %s", strerror(errno));
    uint64_t base = 0;
    if (!region_alloc_locked(p->capacity, kGranularity, 0, &base))
        FAIL(kErrOutOfMemory, "no device address space left to map the pool");
    p->base = base;
    void *shadow = mmap(nullptr, p->capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED || !region_map_fd_locked(base, p->capacity, p->fd, kFdHeader)) {
        if (shadow != MAP_FAILED)
            munmap(shadow, p->capacity);
        FAIL(kErrOutOfMemory, "mmap: %s", strerror(errno));
    }
    p->shadow = static_cast<char *>(shadow);
    state().pools[p->id] = p;
    *pool_out = reinterpret_cast<PoolH>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(kOk);
}

FAKE_API fake_cuMemPoolExportPointer(PtrExportData *shareData_out, DevPtr ptr)
{
    FAKE_ENTER(API("MemPoolExportPointer"), "ptr=0x%llx", (unsigned long long)ptr);
    if (shareData_out == nullptr)
        FAIL(kErrInvalidValue, "shareData_out is NULL");
    uint64_t start = 0;
    Segment *seg = find_segment_locked(ptr, &start);
    if (seg == nullptr || seg->kind != SegKind::PoolBlock || start != ptr)
        FAIL(kErrInvalidValue, "not the start of a pool allocation");
    const Pool &p = *seg->pool;
    // The H200's driver dies of SIGSEGV here after the pool's fabric export was refused
    // (cuda_probe export: fabric_refused_export_then_export_pointer).
    if (p.fabric_export_refused)
        crash_as_the_driver("cuMemPoolExportPointer");
    if (!(p.handle_types & (kHandleTypePosixFd | kHandleTypeFabric)))
        FAIL(kErrInvalidValue, "the pool is not shareable");
    // Driver 580 refuses until the pool itself was exported (probe/h100-pools.txt).
    if (!p.exported)
        FAIL(kErrInvalidValue, "export the pool (cuMemPoolExportToShareableHandle) before its pointers");
    PtrExport e;
    memset(&e, 0, sizeof e);
    memcpy(e.magic, k_ptr_magic, sizeof e.magic);
    e.uid = p.uid;
    e.offset = ptr - p.base;
    e.size = seg->size;
    e.check = ptr_check(e);
    memcpy(shareData_out, &e, sizeof e);
    RET(kOk);
}

FAKE_API fake_cuMemPoolImportPointer(DevPtr *ptr_out, PoolH pool, PtrExportData *shareData)
{
    FAKE_ENTER(API("MemPoolImportPointer"), "pool=%p", (void *)pool);
    if (ptr_out == nullptr || shareData == nullptr)
        FAIL(kErrInvalidValue, "ptr_out or shareData is NULL");
    std::shared_ptr<Pool> p;
    if (Result r = vendor_error(find_pool_locked(pool, &p)))
        FAIL(r, "not a live pool");
    if (!p->imported)
        FAIL(kErrInvalidValue, "the pool was not imported");
    PtrExport e;
    memcpy(&e, shareData, sizeof e);
    if (memcmp(e.magic, k_ptr_magic, sizeof e.magic) != 0 || e.check != ptr_check(e))
        FAIL(kErrInvalidValue, "not export data of a pool pointer");
    if (e.uid != p->uid)
        FAIL(kErrInvalidValue, "the pointer belongs to another pool");
    if (e.size == 0 || e.offset > p->capacity || e.size > p->capacity - e.offset)
        FAIL(kErrInvalidValue, "the pointer lies outside the pool");
    const uint64_t addr = p->base + e.offset;
    uint64_t start = 0;
    Segment *seg = find_segment_locked(addr, &start);
    if (seg != nullptr) {
        if (start != addr || seg->kind != SegKind::PoolImport || seg->size != e.size)
            FAIL(kErrInvalidValue, "overlaps another imported pointer");
        // The driver maps the same data at the same address again, counting
        // nothing: the first free unmaps it for every import
        // (cuda_probe imported: first_import_survives_second_free).
    } else {
        Segment s;
        s.size = e.size;
        s.shadow = p->shadow + e.offset;
        s.kind = SegKind::PoolImport;
        s.device = p->device;
        s.pool = p;
        state().segments[addr] = std::move(s);
    }
    *ptr_out = addr;
    OUT("*ptr_out=0x%llx", (unsigned long long)addr);
    RET(kOk);
}
