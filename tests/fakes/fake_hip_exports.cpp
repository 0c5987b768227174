// The fake HIP runtime's exported entry points: every name of src/backends/hip/hip_symbols.def
// (and a few neighbours) with extern "C" and the HIP runtime's C signatures, over the fake's
// implementations.  Where ROCm 5.2's header declares a function its prototype is the one
// defined here (the compiler checks it); the others (VMM, hipExtHostAlloc, hipFreeHost,
// hipStreamGetDevice) are declared below with ROCm 6's prototypes.
//
// Features turned off (FAKE_HIP_NO_POOLS, FAKE_HIP_NO_VMM, FAKE_HIP_NO_MANAGED) keep their
// entry points, as ROCm 5.x's libamdhip64 does: they answer hipErrorNotSupported and the
// device attributes say 0.
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

// A kernel on the current device read a bad address (the fake runs no kernels): the device's
// sticky error from here on (sticky_fault).
FAKE_EXPORT void fake_hip_device_fault(void);
void fake_hip_device_fault(void) { fakehip::device_fault(); }

// ROCm 6 prototypes absent from ROCm 5.2's header.  (ROCm 5.2 declares the VMM functions, with
// a hipMemAllocationProp of another layout: the definitions below take the header's type and
// read it with ROCm 6's layout, fh_MemAllocationProp, of the same size.)
FAKE_EXPORT hipError_t hipExtHostAlloc(void **ptr, size_t size, unsigned int flags);
FAKE_EXPORT hipError_t hipFreeHost(void *ptr);
FAKE_EXPORT hipError_t hipMemRelease(fh_MemGenericAllocationHandle_t handle);
FAKE_EXPORT hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                            unsigned long long flags);
FAKE_EXPORT hipError_t hipMemAddressFree(void *devPtr, size_t size);
FAKE_EXPORT hipError_t hipMemMap(void *ptr, size_t size, size_t offset, fh_MemGenericAllocationHandle_t handle,
                                 unsigned long long flags);
FAKE_EXPORT hipError_t hipMemUnmap(void *ptr, size_t size);
FAKE_EXPORT hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc, size_t count);
FAKE_EXPORT hipError_t hipMemGetAccess(unsigned long long *flags, const hipMemLocation *location, void *ptr);
FAKE_EXPORT hipError_t hipMemExportToShareableHandle(void *shareableHandle, fh_MemGenericAllocationHandle_t handle,
                                                     hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_EXPORT hipError_t hipMemImportFromShareableHandle(fh_MemGenericAllocationHandle_t *handle, void *osHandle,
                                                       hipMemAllocationHandleType shHandleType);
FAKE_EXPORT hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device);
// HIP 7.0 (handleType: a hipMemRangeHandleType).
FAKE_EXPORT hipError_t hipMemGetHandleForAddressRange(void *handle, void *dptr, size_t size, int handleType,
                                                      unsigned long long flags);

namespace {
inline fh_devptr D(const void *p) { return (fh_devptr)reinterpret_cast<uintptr_t>(p); }
inline void *P(fh_devptr d) { return reinterpret_cast<void *>((uintptr_t)d); }

// A feature the configuration turned off: the entry point exists and says so.
hipError_t off(const char *name, const char *why)
{
    if (config().trace)
        fprintf(stderr, "fakehip[%d]: %s -> hipErrorNotSupported: %s\n", (int)getpid(), name, why);
    return hipErrorNotSupported;
}
#define NEED_POOLS(name)                                                                                     \
    do {                                                                                                     \
        if (!config().pools)                                                                                 \
            return off(name, "FAKE_HIP_NO_POOLS is set (as ROCm 5.x)");                                      \
    } while (0)
#define NEED_VMM(name)                                                                                       \
    do {                                                                                                     \
        if (!config().vmm || !config().v6())                                                                 \
            return off(name, "FAKE_HIP_NO_VMM is set, or ROCm 5 (FAKE_HIP_VERSION)");                        \
    } while (0)
} // namespace

// ---------------------------------------------------------------------------------------------
// Init, versions, errors, devices
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipInit(unsigned int flags) { return fake_hipInit(flags); }
FAKE_EXPORT hipError_t hipDriverGetVersion(int *v) { return fake_hipDriverGetVersion(v); }
FAKE_EXPORT hipError_t hipRuntimeGetVersion(int *v) { return fake_hipRuntimeGetVersion(v); }
FAKE_EXPORT const char *hipGetErrorName(hipError_t e) { return fake_hipGetErrorName(e); }
FAKE_EXPORT const char *hipGetErrorString(hipError_t e) { return fake_hipGetErrorString(e); }
FAKE_EXPORT hipError_t hipGetDeviceCount(int *count) { return fake_cuDeviceGetCount(count); }
FAKE_EXPORT hipError_t hipSetDevice(int dev) { return fake_hipSetDevice(dev); }
FAKE_EXPORT hipError_t hipGetDevice(int *dev) { return fake_hipGetDevice(dev); }
FAKE_EXPORT hipError_t hipDeviceGet(hipDevice_t *device, int ordinal) { return fake_cuDeviceGet(device, ordinal); }
FAKE_EXPORT hipError_t hipDeviceGetAttribute(int *pi, hipDeviceAttribute_t attr, int dev)
{
    return fake_cuDeviceGetAttribute(pi, (int)attr, dev);
}
FAKE_EXPORT hipError_t hipDeviceGetName(char *name, int len, hipDevice_t dev) { return fake_cuDeviceGetName(name, len, dev); }
FAKE_EXPORT hipError_t hipDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    return fake_cuDeviceGetPCIBusId(pciBusId, len, device);
}
FAKE_EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t dev) { return fake_cuDeviceTotalMem(bytes, dev); }
FAKE_EXPORT hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device) { return fake_hipDeviceGetUuid(uuid, device); }
FAKE_EXPORT hipError_t hipMemGetInfo(size_t *free, size_t *total) { return fake_cuMemGetInfo(free, total); }
FAKE_EXPORT hipError_t hipDeviceSynchronize(void) { return fake_cuCtxSynchronize(); }
FAKE_EXPORT hipError_t hipDeviceCanAccessPeer(int *canAccess, int deviceId, int peerDeviceId)
{
    return fake_cuDeviceCanAccessPeer(canAccess, deviceId, peerDeviceId);
}
FAKE_EXPORT hipError_t hipDeviceEnablePeerAccess(int peerDeviceId, unsigned int flags)
{
    return fake_peer_enable("hipDeviceEnablePeerAccess", peerDeviceId, flags);
}
FAKE_EXPORT hipError_t hipDeviceDisablePeerAccess(int peerDeviceId)
{
    return fake_peer_disable("hipDeviceDisablePeerAccess", peerDeviceId);
}

// ---------------------------------------------------------------------------------------------
// Device memory, copies, fills
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipMalloc(void **ptr, size_t size)
{
    fh_devptr d = 0;
    hipError_t r = fake_cuMemAlloc(ptr ? &d : nullptr, size);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}
FAKE_EXPORT hipError_t hipFree(void *ptr) { return fake_cuMemFree(D(ptr)); }
FAKE_EXPORT hipError_t hipMemGetAddressRange(void **pbase, size_t *psize, void *dptr)
{
    fh_devptr b = 0;
    hipError_t r = fake_cuMemGetAddressRange(pbase ? &b : nullptr, psize, D(dptr));
    if (r == hipSuccess && pbase)
        *pbase = P(b);
    return r;
}
// dma-buf export, answered as the CUDA fake answers (fake_mem_range_handle).
hipError_t hipMemGetHandleForAddressRange(void *handle, void *dptr, size_t size, int handleType,
                                          unsigned long long flags)
{
    return fake_mem_range_handle("hipMemGetHandleForAddressRange", handle, D(dptr), size, handleType, flags);
}

static hipError_t check_kind(hipMemcpyKind kind)
{
    return (unsigned)kind <= (unsigned)hipMemcpyDefault ? hipSuccess : hipErrorInvalidMemcpyDirection;
}
FAKE_EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t n, hipMemcpyKind kind)
{
    if (hipError_t r = check_kind(kind))
        return r;
    return fake_cuMemcpy(D(dst), D(src), n); // unified addressing: the pointers say the direction
}
FAKE_EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, hipMemcpyKind kind, hipStream_t stream)
{
    if (hipError_t r = check_kind(kind))
        return r;
    return fake_cuMemcpyAsync(D(dst), D(src), n, stream);
}
FAKE_EXPORT hipError_t hipMemcpyPeer(void *dst, int dstDeviceId, const void *src, int srcDeviceId, size_t sizeBytes)
{
    return fake_hipMemcpyPeer(D(dst), dstDeviceId, D(src), srcDeviceId, sizeBytes);
}
FAKE_EXPORT hipError_t hipMemcpyPeerAsync(void *dst, int dstDeviceId, const void *src, int srcDevice, size_t sizeBytes,
                                          hipStream_t stream)
{
    return fake_hipMemcpyPeerAsync(D(dst), dstDeviceId, D(src), srcDevice, sizeBytes, stream);
}
FAKE_EXPORT hipError_t hipMemset(void *dst, int value, size_t n) { return fake_cuMemsetD8(D(dst), (unsigned char)value, n); }
FAKE_EXPORT hipError_t hipMemsetAsync(void *dst, int value, size_t n, hipStream_t stream)
{
    return fake_cuMemsetD8Async(D(dst), (unsigned char)value, n, stream);
}
FAKE_EXPORT hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attributes, const void *ptr)
{
    static_assert(sizeof(hipPointerAttribute_t) == sizeof(fh_PointerAttribute), "hipPointerAttribute_t layout");
    return fake_hipPointerGetAttributes(reinterpret_cast<fh_PointerAttribute *>(attributes), D(ptr));
}

// ---------------------------------------------------------------------------------------------
// Pinned host memory: libfakehip.so has ROCm 5.2/6's names (hipHostMalloc, hipHostAlloc,
// hipHostFree, hipFreeHost), libfakehip_newnames.so only the new ones (hipExtHostAlloc, hipFreeHost)
// ---------------------------------------------------------------------------------------------
#if !FAKE_HIP_NEW_NAMES
FAKE_EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) { return fake_cuMemHostAlloc(ptr, size, flags); }
FAKE_EXPORT hipError_t hipHostAlloc(void **ptr, size_t size, unsigned int flags) { return fake_cuMemHostAlloc(ptr, size, flags); }
FAKE_EXPORT hipError_t hipHostFree(void *ptr) { return fake_cuMemFreeHost(ptr); }
FAKE_EXPORT hipError_t hipFreeHost(void *ptr) { return fake_cuMemFreeHost(ptr); } // ROCm 5.2 and 6 have both
#else
FAKE_EXPORT hipError_t hipExtHostAlloc(void **ptr, size_t size, unsigned int flags) { return fake_cuMemHostAlloc(ptr, size, flags); }
FAKE_EXPORT hipError_t hipFreeHost(void *ptr) { return fake_cuMemFreeHost(ptr); }
#endif
FAKE_EXPORT hipError_t hipHostGetDevicePointer(void **devPtr, void *hstPtr, unsigned int flags)
{
    fh_devptr d = 0;
    hipError_t r = fake_cuMemHostGetDevicePointer(devPtr ? &d : nullptr, hstPtr, flags);
    if (r == hipSuccess)
        *devPtr = P(d);
    return r;
}
FAKE_EXPORT hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags)
{
    return fake_cuMemHostRegister(hostPtr, sizeBytes, flags);
}
FAKE_EXPORT hipError_t hipHostUnregister(void *hostPtr) { return fake_cuMemHostUnregister(hostPtr); }

// ---------------------------------------------------------------------------------------------
// Managed memory
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags)
{
    if (ptr != nullptr && size == 0 && config().managed) {
        *ptr = nullptr; // as hipMalloc: nothing to allocate
        return check_initialized();
    }
    fh_devptr d = 0;
    hipError_t r = fake_cuMemAllocManaged(ptr ? &d : nullptr, size, flags);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}
FAKE_EXPORT hipError_t hipMemPrefetchAsync(const void *ptr, size_t count, int device, hipStream_t stream)
{
    if (!config().managed)
        return off("hipMemPrefetchAsync", "FAKE_HIP_NO_MANAGED is set");
    return fake_cuMemPrefetchAsync_v1(D(ptr), count, device, stream);
}
FAKE_EXPORT hipError_t hipMemAdvise(const void *ptr, size_t count, hipMemoryAdvise advice, int device)
{
    if (!config().managed)
        return off("hipMemAdvise", "FAKE_HIP_NO_MANAGED is set");
    return fake_cuMemAdvise_v1(D(ptr), count, (int)advice, device);
}
FAKE_EXPORT hipError_t hipStreamAttachMemAsync(hipStream_t stream, void *ptr, size_t length, unsigned int flags)
{
    if (!config().managed)
        return off("hipStreamAttachMemAsync", "FAKE_HIP_NO_MANAGED is set");
    return fake_cuStreamAttachMemAsync(stream, D(ptr), length, flags);
}

// ---------------------------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipStreamCreate(hipStream_t *stream) { return fake_cuStreamCreate(stream, 0); }
FAKE_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags) { return fake_cuStreamCreate(stream, flags); }
FAKE_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) { return fake_cuStreamDestroy(stream); }
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device)
{
    return fake_stream_device("hipStreamGetDevice", stream, device);
}
FAKE_EXPORT hipError_t hipStreamSynchronize(hipStream_t stream) { return fake_cuStreamSynchronize(stream); }
FAKE_EXPORT hipError_t hipStreamQuery(hipStream_t stream) { return fake_cuStreamQuery(stream); }
FAKE_EXPORT hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags)
{
    return fake_cuStreamWaitEvent(stream, event, flags);
}
FAKE_EXPORT hipError_t hipEventCreate(hipEvent_t *event) { return fake_cuEventCreate(event, 0); }
FAKE_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned flags) { return fake_cuEventCreate(event, flags); }
FAKE_EXPORT hipError_t hipEventDestroy(hipEvent_t event) { return fake_cuEventDestroy(event); }
FAKE_EXPORT hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) { return fake_cuEventRecord(event, stream); }
FAKE_EXPORT hipError_t hipEventSynchronize(hipEvent_t event) { return fake_cuEventSynchronize(event); }
FAKE_EXPORT hipError_t hipEventQuery(hipEvent_t event) { return fake_cuEventQuery(event); }
FAKE_EXPORT hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop)
{
    if (ms == nullptr)
        return hipErrorInvalidValue;
    return fake_cuEventElapsedTime(ms, start, stop);
}

// ---------------------------------------------------------------------------------------------
// Stream-ordered allocation and pools
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *pool, int device)
{
    NEED_POOLS("hipDeviceGetDefaultMemPool");
    return fake_cuDeviceGetDefaultMemPool(pool, device);
}
FAKE_EXPORT hipError_t hipDeviceGetMemPool(hipMemPool_t *pool, int device)
{
    NEED_POOLS("hipDeviceGetMemPool");
    return fake_cuDeviceGetMemPool(pool, device);
}
FAKE_EXPORT hipError_t hipDeviceSetMemPool(int device, hipMemPool_t pool)
{
    NEED_POOLS("hipDeviceSetMemPool");
    return fake_cuDeviceSetMemPool(device, pool);
}
FAKE_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t *pool, const hipMemPoolProps *props)
{
    NEED_POOLS("hipMemPoolCreate");
    return fake_cuMemPoolCreate(pool, reinterpret_cast<const fh_MemPoolProps *>(props));
}
FAKE_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t pool)
{
    NEED_POOLS("hipMemPoolDestroy");
    return fake_cuMemPoolDestroy(pool);
}
FAKE_EXPORT hipError_t hipMallocFromPoolAsync(void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream)
{
    NEED_POOLS("hipMallocFromPoolAsync");
    fh_devptr d = 0;
    hipError_t r = fake_cuMemAllocFromPoolAsync(ptr ? &d : nullptr, size, pool, stream);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}
FAKE_EXPORT hipError_t hipMallocAsync(void **ptr, size_t size, hipStream_t stream)
{
    NEED_POOLS("hipMallocAsync");
    fh_devptr d = 0;
    hipError_t r = fake_cuMemAllocAsync(ptr ? &d : nullptr, size, stream);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}
FAKE_EXPORT hipError_t hipFreeAsync(void *ptr, hipStream_t stream)
{
    NEED_POOLS("hipFreeAsync");
    return fake_cuMemFreeAsync(D(ptr), stream);
}
FAKE_EXPORT hipError_t hipMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    NEED_POOLS("hipMemPoolSetAttribute");
    return fake_cuMemPoolSetAttribute(pool, attr, value);
}
FAKE_EXPORT hipError_t hipMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    NEED_POOLS("hipMemPoolGetAttribute");
    return fake_cuMemPoolGetAttribute(pool, attr, value);
}
FAKE_EXPORT hipError_t hipMemPoolTrimTo(hipMemPool_t pool, size_t min_bytes_to_hold)
{
    NEED_POOLS("hipMemPoolTrimTo");
    return fake_cuMemPoolTrimTo(pool, min_bytes_to_hold);
}
FAKE_EXPORT hipError_t hipMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *desc, size_t count)
{
    NEED_POOLS("hipMemPoolSetAccess");
    return fake_cuMemPoolSetAccess(pool, desc, count);
}
FAKE_EXPORT hipError_t hipMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t pool, hipMemLocation *location)
{
    NEED_POOLS("hipMemPoolGetAccess");
    return fake_cuMemPoolGetAccess(flags, pool, location);
}
// The descriptor is written as an int at *shared_handle; import takes it as (void *)(intptr_t)fd.
FAKE_EXPORT hipError_t hipMemPoolExportToShareableHandle(void *shared_handle, hipMemPool_t pool,
                                                         hipMemAllocationHandleType type, unsigned int flags)
{
    NEED_POOLS("hipMemPoolExportToShareableHandle");
    return fake_cuMemPoolExportToShareableHandle(shared_handle, pool, type, flags);
}
FAKE_EXPORT hipError_t hipMemPoolImportFromShareableHandle(hipMemPool_t *pool, void *shared_handle,
                                                           hipMemAllocationHandleType type, unsigned int flags)
{
    NEED_POOLS("hipMemPoolImportFromShareableHandle");
    return fake_cuMemPoolImportFromShareableHandle(pool, shared_handle, type, flags);
}
FAKE_EXPORT hipError_t hipMemPoolExportPointer(hipMemPoolPtrExportData *export_data, void *ptr)
{
    NEED_POOLS("hipMemPoolExportPointer");
    return fake_cuMemPoolExportPointer(export_data, D(ptr));
}
FAKE_EXPORT hipError_t hipMemPoolImportPointer(void **ptr, hipMemPool_t pool, hipMemPoolPtrExportData *export_data)
{
    NEED_POOLS("hipMemPoolImportPointer");
    fh_devptr d = 0;
    hipError_t r = fake_cuMemPoolImportPointer(ptr ? &d : nullptr, pool, export_data);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}

// ---------------------------------------------------------------------------------------------
// Virtual memory management
// ---------------------------------------------------------------------------------------------
static fh_memhandle H(fh_MemGenericAllocationHandle_t h) { return (fh_memhandle)reinterpret_cast<uintptr_t>(h); }

static_assert(sizeof(hipMemAllocationProp) == sizeof(fh_MemAllocationProp), "hipMemAllocationProp size");
static const fh_MemAllocationProp *R6(const hipMemAllocationProp *p) { return reinterpret_cast<const fh_MemAllocationProp *>(p); }

FAKE_EXPORT hipError_t hipMemGetAllocationGranularity(size_t *granularity, const hipMemAllocationProp *prop,
                                                      hipMemAllocationGranularity_flags option)
{
    NEED_VMM("hipMemGetAllocationGranularity");
    return fake_cuMemGetAllocationGranularity(granularity, R6(prop), (fh_MemAllocationGranularity_flags)option);
}
FAKE_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size, const hipMemAllocationProp *prop,
                                    unsigned long long flags)
{
    NEED_VMM("hipMemCreate");
    fh_memhandle h = 0;
    hipError_t r = fake_cuMemCreate(handle ? &h : nullptr, size, R6(prop), flags);
    if (r == hipSuccess)
        *handle = reinterpret_cast<fh_MemGenericAllocationHandle_t>((uintptr_t)h);
    return r;
}
hipError_t hipMemRelease(fh_MemGenericAllocationHandle_t handle)
{
    NEED_VMM("hipMemRelease");
    return fake_cuMemRelease(H(handle));
}
hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr, unsigned long long flags)
{
    NEED_VMM("hipMemAddressReserve");
    fh_devptr d = 0;
    hipError_t r = fake_cuMemAddressReserve(ptr ? &d : nullptr, size, alignment, D(addr), flags);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}
hipError_t hipMemAddressFree(void *devPtr, size_t size)
{
    NEED_VMM("hipMemAddressFree");
    return fake_cuMemAddressFree(D(devPtr), size);
}
hipError_t hipMemMap(void *ptr, size_t size, size_t offset, fh_MemGenericAllocationHandle_t handle,
                     unsigned long long flags)
{
    NEED_VMM("hipMemMap");
    return fake_cuMemMap(D(ptr), size, offset, H(handle), flags);
}
hipError_t hipMemUnmap(void *ptr, size_t size)
{
    NEED_VMM("hipMemUnmap");
    return fake_cuMemUnmap(D(ptr), size);
}
hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc, size_t count)
{
    NEED_VMM("hipMemSetAccess");
    return fake_cuMemSetAccess(D(ptr), size, desc, count);
}
hipError_t hipMemGetAccess(unsigned long long *flags, const hipMemLocation *location, void *ptr)
{
    NEED_VMM("hipMemGetAccess");
    return fake_cuMemGetAccess(flags, location, D(ptr));
}
// The descriptor is written as an int at *shareableHandle; import takes (void *)(intptr_t)fd.
hipError_t hipMemExportToShareableHandle(void *shareableHandle, fh_MemGenericAllocationHandle_t handle,
                                         hipMemAllocationHandleType handleType, unsigned long long flags)
{
    NEED_VMM("hipMemExportToShareableHandle");
    return fake_cuMemExportToShareableHandle(shareableHandle, H(handle), handleType, flags);
}
hipError_t hipMemImportFromShareableHandle(fh_MemGenericAllocationHandle_t *handle, void *osHandle,
                                           hipMemAllocationHandleType shHandleType)
{
    NEED_VMM("hipMemImportFromShareableHandle");
    fh_memhandle h = 0;
    hipError_t r = fake_cuMemImportFromShareableHandle(handle ? &h : nullptr, osHandle, shHandleType);
    if (r == hipSuccess)
        *handle = reinterpret_cast<fh_MemGenericAllocationHandle_t>((uintptr_t)h);
    return r;
}
FAKE_EXPORT hipError_t hipMemRetainAllocationHandle(hipMemGenericAllocationHandle_t *handle, void *addr)
{
    NEED_VMM("hipMemRetainAllocationHandle");
    fh_memhandle h = 0;
    hipError_t r = fake_cuMemRetainAllocationHandle(handle ? &h : nullptr, addr);
    if (r == hipSuccess)
        *handle = reinterpret_cast<hipMemGenericAllocationHandle_t>((uintptr_t)h);
    return r;
}
FAKE_EXPORT hipError_t hipMemGetAllocationPropertiesFromHandle(hipMemAllocationProp *prop,
                                                               hipMemGenericAllocationHandle_t handle)
{
    NEED_VMM("hipMemGetAllocationPropertiesFromHandle");
    return fake_cuMemGetAllocationPropertiesFromHandle(reinterpret_cast<fh_MemAllocationProp *>(prop), H(handle));
}

// ---------------------------------------------------------------------------------------------
// Batched calls (HIP 7.1; hipErrorNotSupported below that FAKE_HIP_VERSION)
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                                           fh_MemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                           size_t *failIdx, hipStream_t stream)
{
    return fake_hipMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, stream);
}
FAKE_EXPORT hipError_t hipMemPrefetchBatchAsync(void **dptrs, size_t *sizes, size_t count, hipMemLocation *prefetchLocs,
                                                size_t *prefetchLocIdxs, size_t numPrefetchLocs,
                                                unsigned long long flags, hipStream_t stream)
{
    return fake_hipMemPrefetchBatchAsync(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                                         stream);
}
FAKE_EXPORT hipError_t hipMemDiscardBatchAsync(void **dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                               hipStream_t stream)
{
    return fake_hipMemDiscardBatchAsync(dptrs, sizes, count, flags, stream);
}

// ---------------------------------------------------------------------------------------------
// Stream capture, graphs and user objects (fake_api_graphs.cpp).  ROCm 5.2's header declares the
// capture and graph calls (the compiler checks these definitions against it); the user-object
// calls are ROCm 6's, declared here.
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipUserObjectCreate(fh_UserObject_t *object_out, void *ptr, hipHostFn_t destroy,
                                           unsigned int initialRefcount, unsigned int flags);
FAKE_EXPORT hipError_t hipUserObjectRelease(fh_UserObject_t object, unsigned int count);
FAKE_EXPORT hipError_t hipUserObjectRetain(fh_UserObject_t object, unsigned int count);
FAKE_EXPORT hipError_t hipGraphRetainUserObject(hipGraph_t graph, fh_UserObject_t object, unsigned int count,
                                                unsigned int flags);
FAKE_EXPORT hipError_t hipGraphReleaseUserObject(hipGraph_t graph, fh_UserObject_t object, unsigned int count);
// Fake-only: waits until the user-object destructors already due have run (they run on the fake's
// own thread when a completed launch released the last reference; those released by a call ran
// within it: fake_gpu_graphs.cpp).
FAKE_EXPORT void fakehip_flush_callbacks(void);

FAKE_EXPORT hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode)
{
    return fake_cuStreamBeginCapture_v2(stream, mode);
}
FAKE_EXPORT hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *pGraph)
{
    return fake_cuStreamEndCapture(stream, pGraph);
}
FAKE_EXPORT hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus *pCaptureStatus)
{
    return fake_cuStreamIsCapturing(stream, pCaptureStatus);
}
FAKE_EXPORT hipError_t hipStreamGetCaptureInfo(hipStream_t stream, hipStreamCaptureStatus *pCaptureStatus,
                                               unsigned long long *pId)
{
    return fake_cuStreamGetCaptureInfo_v2(stream, pCaptureStatus, pId, nullptr, nullptr, nullptr);
}
FAKE_EXPORT hipError_t hipStreamGetCaptureInfo_v2(hipStream_t stream, hipStreamCaptureStatus *captureStatus_out,
                                                  unsigned long long *id_out, hipGraph_t *graph_out,
                                                  const hipGraphNode_t **dependencies_out, size_t *numDependencies_out)
{
    return fake_cuStreamGetCaptureInfo_v2(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                                          numDependencies_out);
}
FAKE_EXPORT hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode)
{
    return fake_cuThreadExchangeStreamCaptureMode(mode);
}
FAKE_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t *pGraphExec, hipGraph_t graph, hipGraphNode_t *pErrorNode,
                                           char *pLogBuffer, size_t bufferSize)
{
    return fake_cuGraphInstantiate_v1(pGraphExec, graph, pErrorNode, pLogBuffer, bufferSize);
}
FAKE_EXPORT hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *pGraphExec, hipGraph_t graph,
                                                    unsigned long long flags)
{
    return fake_cuGraphInstantiateWithFlags(pGraphExec, graph, flags);
}
FAKE_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t stream)
{
    return fake_cuGraphLaunch(graphExec, stream);
}
FAKE_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t graphExec) { return fake_cuGraphExecDestroy(graphExec); }
FAKE_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) { return fake_cuGraphDestroy(graph); }
FAKE_EXPORT hipError_t hipGraphGetNodes(hipGraph_t graph, hipGraphNode_t *nodes, size_t *numNodes)
{
    return fake_cuGraphGetNodes(graph, nodes, numNodes);
}
hipError_t hipUserObjectCreate(fh_UserObject_t *object_out, void *ptr, hipHostFn_t destroy, unsigned int initialRefcount,
                               unsigned int flags)
{
    return fake_cuUserObjectCreate(object_out, ptr, destroy, initialRefcount, flags);
}
hipError_t hipUserObjectRelease(fh_UserObject_t object, unsigned int count)
{
    return fake_cuUserObjectRelease(object, count);
}
hipError_t hipUserObjectRetain(fh_UserObject_t object, unsigned int count)
{
    return fake_cuUserObjectRetain(object, count);
}
hipError_t hipGraphRetainUserObject(hipGraph_t graph, fh_UserObject_t object, unsigned int count, unsigned int flags)
{
    return fake_cuGraphRetainUserObject(graph, object, count, flags);
}
hipError_t hipGraphReleaseUserObject(hipGraph_t graph, fh_UserObject_t object, unsigned int count)
{
    return fake_cuGraphReleaseUserObject(graph, object, count);
}
void fakehip_flush_callbacks(void) { fakegpu::flush_callbacks(); }

// Streams with priorities, host functions, IPC events, rows and boxes (fake_api_rows.cpp).
FAKE_EXPORT hipError_t hipStreamCreateWithPriority(hipStream_t *stream, unsigned int flags, int priority)
{
    return fake_stream_create_priority("hipStreamCreateWithPriority", stream, flags, priority);
}
FAKE_EXPORT hipError_t hipStreamGetPriority(hipStream_t stream, int *priority)
{
    return fake_stream_get_priority("hipStreamGetPriority", stream, priority);
}
FAKE_EXPORT hipError_t hipStreamGetFlags(hipStream_t stream, unsigned int *flags)
{
    return fake_stream_get_flags("hipStreamGetFlags", stream, flags);
}
FAKE_EXPORT hipError_t hipDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    return fake_priority_range("hipDeviceGetStreamPriorityRange", leastPriority, greatestPriority);
}
FAKE_EXPORT hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void *userData)
{
    return fake_launch_host_func("hipLaunchHostFunc", stream, fn, userData);
}
FAKE_EXPORT hipError_t hipIpcGetEventHandle(hipIpcEventHandle_t *handle, hipEvent_t event)
{
    static_assert(sizeof(hipIpcEventHandle_t) == 64, "hipIpcEventHandle_t");
    return fake_ipc_get_event_handle("hipIpcGetEventHandle", handle, event);
}
FAKE_EXPORT hipError_t hipIpcOpenEventHandle(hipEvent_t *event, hipIpcEventHandle_t handle)
{
    return fake_ipc_open_event_handle("hipIpcOpenEventHandle", event, &handle);
}
FAKE_EXPORT hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
    fh_devptr d = 0;
    hipError_t r = fake_malloc_pitch("hipMallocPitch", ptr ? &d : nullptr, pitch, width, height, 0);
    if (r == hipSuccess)
        *ptr = P(d);
    return r;
}
FAKE_EXPORT hipError_t hipMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                        size_t height, hipMemcpyKind kind, hipStream_t stream)
{
    if (hipError_t r = check_kind(kind))
        return r;
    if (dpitch < width || spitch < width)
        return hipErrorInvalidPitchValue; // HIP's error for it (hipMemcpy2D's documentation)
    RowsGeom g;
    g.height = height;
    g.dst_pitch = dpitch;
    g.src_pitch = spitch;
    g.dst_rows = g.src_rows = height;
    return fake_memcpy_rows("hipMemcpy2DAsync", D(dst), D(src), width, g, stream);
}
FAKE_EXPORT hipError_t hipMemcpy3DAsync(const hipMemcpy3DParms *p, hipStream_t stream)
{
    if (p == nullptr || p->srcArray || p->dstArray)
        return hipErrorInvalidValue; // (arrays are not modelled)
    if (hipError_t r = check_kind(p->kind))
        return r;
    const hipExtent &e = p->extent;
    if (p->srcPtr.pitch < p->srcPos.x + e.width || p->dstPtr.pitch < p->dstPos.x + e.width)
        return hipErrorInvalidPitchValue;
    if (e.depth > 1 && (p->srcPtr.ysize < p->srcPos.y + e.height || p->dstPtr.ysize < p->dstPos.y + e.height))
        return hipErrorInvalidValue;
    RowsGeom g;
    g.height = e.height;
    g.depth = e.depth;
    g.src_pitch = p->srcPtr.pitch;
    g.dst_pitch = p->dstPtr.pitch;
    g.src_rows = p->srcPtr.ysize;
    g.dst_rows = p->dstPtr.ysize;
    const fh_devptr s = D(p->srcPtr.ptr) + (p->srcPos.z * g.src_rows + p->srcPos.y) * g.src_pitch + p->srcPos.x;
    const fh_devptr d = D(p->dstPtr.ptr) + (p->dstPos.z * g.dst_rows + p->dstPos.y) * g.dst_pitch + p->dstPos.x;
    return fake_memcpy_rows("hipMemcpy3DAsync", d, s, e.width, g, stream);
}
FAKE_EXPORT hipError_t hipMemset2DAsync(void *dst, size_t pitch, int value, size_t width, size_t height,
                                        hipStream_t stream)
{
    if (pitch < width)
        return hipErrorInvalidPitchValue;
    RowsGeom g;
    g.height = height;
    g.dst_pitch = pitch;
    return fake_memset_rows("hipMemset2DAsync", D(dst), (unsigned char)value, width, g, stream);
}
FAKE_EXPORT hipError_t hipMemsetD16Async(hipDeviceptr_t dest, unsigned short value, size_t count, hipStream_t stream)
{
    RowsGeom g;
    g.elem = 2;
    return fake_memset_rows("hipMemsetD16Async", D(dest), value, count, g, stream);
}
FAKE_EXPORT hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream)
{
    RowsGeom g;
    g.elem = 4;
    return fake_memset_rows("hipMemsetD32Async", D(dst), (uint32_t)value, count, g, stream);
}
