// A fake HIP runtime (libfakehip.so) for testing gpumem's HIP backend without a GPU.
//
// It exports, with extern "C" and the HIP runtime's C signatures, every function of
// src/backends/hip/hip_symbols.def (and a few neighbours), as libamdhip64 does.  Memory
// lives in host memory: device allocations come from a reserved "device address range" that
// the CPU cannot touch (as on a real GPU; FAKE_HIP_HOST_ACCESS=1 lifts that), backed by
// memfds the fake reads and writes through a second mapping.  The environment variables
// (FAKE_HIP_*) turn features off so every fallback path of the backend runs in CI; see
// README.md next to this file.  Ported from the fake CUDA driver (fake_cuda*.cpp): the same
// memory, stream, pool and VMM model behind the HIP runtime's entry points.
//
// Internal header shared by the fake's translation units.  Every API function takes the
// one global mutex (state().mu) after the init check; helpers named *_locked expect it held.
//
// SPDX-License-Identifier: MIT
#pragma once

#include "fake_hip_types.hpp"

#include "fake_gpu_engine.hpp"

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

typedef unsigned long long fh_devptr;   // a device address, as the internals do arithmetic on it
typedef unsigned long long fh_memhandle; // a VMM handle (hipMemGenericAllocationHandle_t) as a number

namespace fakehip {
using namespace ::fakegpu; // the shared engine
using namespace ::fakehip; // (the fh_ types of fake_hip_types.hpp)

// Built as libfakehip_newnames.so with FAKE_HIP_NEW_NAMES=1: pinned host memory is
// hipExtHostAlloc/hipFreeHost only (no hipHostMalloc, hipHostAlloc or hipHostFree).
#ifndef FAKE_HIP_NEW_NAMES
#define FAKE_HIP_NEW_NAMES 0
#endif



// ---------------------------------------------------------------------------------------------
// Configuration: the environment, read once.
// ---------------------------------------------------------------------------------------------
// Configuration: the environment, read once.  What means the same in both fakes is the
// engine's (EngineConfig: FAKE_HIP_DEVICES, _MEMORY, _NO_MANAGED, _NO_POOLS, _NO_VMM, _NO_IPC,
// _NO_HOST_REGISTER, _POOL_GRANULE, _HOST_ACCESS, _DEFER, _NO_DEVICE, _INIT_FAIL, _TRACE).
// FAKE_HIP_NO_DEVICE=1: hipInit/hipGetDeviceCount are hipErrorNoDevice; FAKE_HIP_INIT_FAIL=1:
// hipInit (and every call) is hipErrorNotInitialized.
struct Config : EngineConfig {
    int runtime_version = 60241133; // FAKE_HIP_VERSION (HIP_VERSION: major*10^7+minor*10^5+patch; ROCm 6.2)
    bool xnack = true;              // FAKE_HIP_NO_XNACK=1: managed memory without XNACK (pages do not migrate);
                                    // concurrent_managed and pageable follow it
    bool v6() const { return runtime_version >= 60000000; }
};
const Config &config();

// ---------------------------------------------------------------------------------------------
// Tracing.  Each API function opens a Call; its result goes through done()/fail(), which
// print one line with FAKE_HIP_TRACE=1 (and the reason for a failure).
// ---------------------------------------------------------------------------------------------
class Call {
public:
    explicit Call(const char *name) : name_(name) {}
    void args(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    void out(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    hipError_t done(hipError_t r);
    hipError_t fail(hipError_t r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

private:
    const char *name_;
    std::string args_, out_, why_;
};

const char *error_name(hipError_t r); // "CUDA_ERROR_..." or "CUDA_ERROR_<n>"

// hipSuccess when the driver may be used: the stub refuses everything, and nothing but
// hipGetErrorName/String and the versions; the first other call initialises, as hipInit would.
hipError_t check_initialized();

#define FAKE_ENTER(name, ...)                                                                                \
    ::fakehip::Call call_(name);                                                                            \
    if (::fakehip::config().trace)                                                                          \
        call_.args(__VA_ARGS__);                                                                             \
    if (hipError_t init_rc_ = ::fakehip::check_initialized())                                                 \
        return call_.done(init_rc_);                                                                         \
    std::lock_guard<std::mutex> state_lock_(::fakehip::state().mu)

#define RET(r) return call_.done(r)
#define FAIL(r, ...) return call_.fail((r), __VA_ARGS__)
#define OUT(...)                                                                                             \
    do {                                                                                                     \
        if (::fakehip::config().trace)                                                                      \
            call_.out(__VA_ARGS__);                                                                          \
    } while (0)


// ---------------------------------------------------------------------------------------------
// Runtime-specific helpers (the engine's are in fake_gpu_engine.hpp).
// ---------------------------------------------------------------------------------------------
// The engine's status as this runtime's error code.
inline hipError_t vendor_error(Status s)
{
    switch (s) {
    case kStatusOk: return hipSuccess;
    case kStatusInvalidValue: return hipErrorInvalidValue;
    case kStatusOutOfMemory: return hipErrorOutOfMemory;
    }
    return hipErrorInvalidValue;
}
static_assert(kAccessNone == hipMemAccessFlagsProtNone && kAccessRead == hipMemAccessFlagsProtRead &&
                  kAccessReadWrite == hipMemAccessFlagsProtReadWrite,
              "access flags");
static_assert(kHandleTypeNone == hipMemHandleTypeNone && kHandleTypePosixFd == hipMemHandleTypePosixFileDescriptor,
              "handle types");
static_assert(kStreamNonBlocking == hipStreamNonBlocking, "stream flags");
static_assert(sizeof(PtrExport) == sizeof(hipMemPoolPtrExportData), "export data is 64 bytes");
// The device of the calling thread's current context: hipErrorInvalidContext without
// one, hipErrorContextIsDestroyed when its primary context is released.
hipError_t current_device_locked(int *dev);
// A stream handle (NULL and CU_STREAM_LEGACY: the current context's NULL stream).
hipError_t find_stream_locked(hipStream_t h, Stream **out);

} // namespace fakehip
using namespace ::fakehip;

// The fake's implementations (hidden; named after the CUDA driver call each was ported from,
// prefixed fake_).  fake_hip_exports.cpp exports them under the HIP runtime's names and C
// signatures.
#define FAKE_HIP_API extern "C" hipError_t
// fake_hip.cpp
FAKE_HIP_API fake_hipInit(unsigned int flags);
FAKE_HIP_API fake_hipDriverGetVersion(int *v);
FAKE_HIP_API fake_hipRuntimeGetVersion(int *v);
FAKE_HIP_API fake_hipSetDevice(int dev);
FAKE_HIP_API fake_hipGetDevice(int *dev);
extern "C" const char *fake_hipGetErrorName(hipError_t e);
extern "C" const char *fake_hipGetErrorString(hipError_t e);
FAKE_HIP_API fake_cuDeviceGetCount(int *count);
FAKE_HIP_API fake_cuDeviceGet(int *device, int ordinal);
FAKE_HIP_API fake_cuDeviceGetName(char *name, int len, int dev);
FAKE_HIP_API fake_cuDeviceTotalMem(size_t *bytes, int dev);
FAKE_HIP_API fake_cuDeviceGetAttribute(int *pi, int attrib, int dev);
FAKE_HIP_API fake_cuCtxSynchronize(void);
FAKE_HIP_API fake_cuStreamCreate(hipStream_t *phStream, unsigned int Flags);
FAKE_HIP_API fake_cuStreamDestroy(hipStream_t hStream);
FAKE_HIP_API fake_cuStreamSynchronize(hipStream_t hStream);
FAKE_HIP_API fake_cuStreamQuery(hipStream_t hStream);
FAKE_HIP_API fake_cuStreamWaitEvent(hipStream_t hStream, hipEvent_t hEvent, unsigned int Flags);
FAKE_HIP_API fake_cuEventCreate(hipEvent_t *phEvent, unsigned int Flags);
FAKE_HIP_API fake_cuEventDestroy(hipEvent_t hEvent);
FAKE_HIP_API fake_cuEventRecord(hipEvent_t hEvent, hipStream_t hStream);
FAKE_HIP_API fake_cuEventSynchronize(hipEvent_t hEvent);
FAKE_HIP_API fake_cuEventQuery(hipEvent_t hEvent);
FAKE_HIP_API fake_cuEventElapsedTime(float *pMilliseconds, hipEvent_t hStart, hipEvent_t hEnd);
// fake_hip_memory.cpp
FAKE_HIP_API fake_cuMemGetInfo(size_t *free, size_t *total);
FAKE_HIP_API fake_cuMemAlloc(fh_devptr *dptr, size_t bytesize);
FAKE_HIP_API fake_cuMemFree(fh_devptr dptr);
FAKE_HIP_API fake_cuMemGetAddressRange(fh_devptr *pbase, size_t *psize, fh_devptr dptr);
FAKE_HIP_API fake_hipPointerGetAttributes(fh_PointerAttribute *attr, fh_devptr ptr);
FAKE_HIP_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
FAKE_HIP_API fake_cuMemFreeHost(void *p);
FAKE_HIP_API fake_cuMemHostGetDevicePointer(fh_devptr *pdptr, void *p, unsigned int Flags);
FAKE_HIP_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FAKE_HIP_API fake_cuMemHostUnregister(void *p);
FAKE_HIP_API fake_cuMemcpy(fh_devptr dst, fh_devptr src, size_t ByteCount);
FAKE_HIP_API fake_cuMemcpyAsync(fh_devptr dst, fh_devptr src, size_t ByteCount, hipStream_t hStream);
FAKE_HIP_API fake_cuMemsetD8(fh_devptr dstDevice, unsigned char uc, size_t N);
FAKE_HIP_API fake_cuMemsetD8Async(fh_devptr dstDevice, unsigned char uc, size_t N, hipStream_t hStream);
FAKE_HIP_API fake_cuMemAllocManaged(fh_devptr *dptr, size_t bytesize, unsigned int flags);
FAKE_HIP_API fake_cuStreamAttachMemAsync(hipStream_t hStream, fh_devptr dptr, size_t length, unsigned int flags);
FAKE_HIP_API fake_cuMemPrefetchAsync_v1(fh_devptr devPtr, size_t count, int dstDevice, hipStream_t hStream);
FAKE_HIP_API fake_cuMemAdvise_v1(fh_devptr devPtr, size_t count, int advice, int device);
// fake_hip_pools.cpp
FAKE_HIP_API fake_cuDeviceGetDefaultMemPool(hipMemPool_t *pool_out, int dev);
FAKE_HIP_API fake_cuDeviceGetMemPool(hipMemPool_t *pool, int dev);
FAKE_HIP_API fake_cuDeviceSetMemPool(int dev, hipMemPool_t pool);
FAKE_HIP_API fake_cuMemPoolCreate(hipMemPool_t *pool, const fh_MemPoolProps *poolProps);
FAKE_HIP_API fake_cuMemPoolDestroy(hipMemPool_t pool);
FAKE_HIP_API fake_cuMemAllocFromPoolAsync(fh_devptr *dptr, size_t bytesize, hipMemPool_t pool, hipStream_t hStream);
FAKE_HIP_API fake_cuMemAllocAsync(fh_devptr *dptr, size_t bytesize, hipStream_t hStream);
FAKE_HIP_API fake_cuMemFreeAsync(fh_devptr dptr, hipStream_t hStream);
FAKE_HIP_API fake_cuMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value);
FAKE_HIP_API fake_cuMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value);
FAKE_HIP_API fake_cuMemPoolTrimTo(hipMemPool_t pool, size_t minBytesToKeep);
FAKE_HIP_API fake_cuMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *map, size_t count);
FAKE_HIP_API fake_cuMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t memPool, hipMemLocation *location);
FAKE_HIP_API fake_cuMemPoolExportToShareableHandle(void *handle_out, hipMemPool_t pool,
                                                    hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_HIP_API fake_cuMemPoolImportFromShareableHandle(hipMemPool_t *pool_out, void *handle,
                                                      hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_HIP_API fake_cuMemPoolExportPointer(hipMemPoolPtrExportData *shareData_out, fh_devptr ptr);
FAKE_HIP_API fake_cuMemPoolImportPointer(fh_devptr *ptr_out, hipMemPool_t pool, hipMemPoolPtrExportData *shareData);
// fake_hip_vmm.cpp
FAKE_HIP_API fake_cuMemGetAllocationGranularity(size_t *granularity, const fh_MemAllocationProp *prop,
                                                 fh_MemAllocationGranularity_flags option);
FAKE_HIP_API fake_cuMemCreate(fh_memhandle *handle, size_t size, const fh_MemAllocationProp *prop,
                               unsigned long long flags);
FAKE_HIP_API fake_cuMemRelease(fh_memhandle handle);
FAKE_HIP_API fake_cuMemAddressReserve(fh_devptr *ptr, size_t size, size_t alignment, fh_devptr addr,
                                       unsigned long long flags);
FAKE_HIP_API fake_cuMemAddressFree(fh_devptr ptr, size_t size);
FAKE_HIP_API fake_cuMemMap(fh_devptr ptr, size_t size, size_t offset, fh_memhandle handle,
                            unsigned long long flags);
FAKE_HIP_API fake_cuMemUnmap(fh_devptr ptr, size_t size);
FAKE_HIP_API fake_cuMemSetAccess(fh_devptr ptr, size_t size, const hipMemAccessDesc *desc, size_t count);
FAKE_HIP_API fake_cuMemGetAccess(unsigned long long *flags, const hipMemLocation *location, fh_devptr ptr);
FAKE_HIP_API fake_cuMemExportToShareableHandle(void *shareableHandle, fh_memhandle handle,
                                                hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_HIP_API fake_cuMemImportFromShareableHandle(fh_memhandle *handle, void *osHandle,
                                                  hipMemAllocationHandleType shHandleType);
FAKE_HIP_API fake_cuMemGetAllocationPropertiesFromHandle(fh_MemAllocationProp *prop,
                                                          fh_memhandle handle);
