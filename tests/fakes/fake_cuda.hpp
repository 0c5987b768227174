// A fake CUDA driver (libfakecuda.so) for testing gpumem's CUDA backend without a GPU.
//
// It exports what a real libcuda exports and gpumem dlsyms (cuInit, cuDriverGetVersion,
// cuGetProcAddress and cuGetProcAddress_v2); everything else is reached through
// cuGetProcAddress, typed with the prototypes of CUDA 13's <cuda.h>.  Memory lives in host
// memory: device allocations come from a reserved "device address range" that the CPU
// cannot touch (as on a real GPU; FAKE_CUDA_HOST_ACCESS=1 lifts that), backed by memfds
// the fake reads and writes through a second mapping.  Work is synchronous.  The
// environment variables (FAKE_CUDA_*) turn features off so every fallback path of the
// backend runs in CI; see README.md next to this file.
//
// Internal header shared by the fake's translation units.  Every API function takes the
// one global mutex (state().mu) after the init check; helpers named *_locked expect it held.
//
// SPDX-License-Identifier: MIT
#pragma once

#include <cuda.h>

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

namespace fakecuda {
using namespace ::fakegpu; // the shared engine

// Built as libfakecuda_v1.so with FAKE_CUDA_V1_ONLY=1: a CUDA 11.8 driver, which exports
// only the 4-argument cuGetProcAddress.
#ifndef FAKE_CUDA_V1_ONLY
#define FAKE_CUDA_V1_ONLY 0
#endif


// ---------------------------------------------------------------------------------------------
// Configuration: the environment, read once.
// ---------------------------------------------------------------------------------------------
// Configuration: the environment, read once.  What means the same in both fakes is the
// engine's (EngineConfig: FAKE_CUDA_DEVICES, _MEMORY, _NO_MANAGED, _NO_POOLS, _NO_VMM, _NO_IPC,
// _NO_HOST_REGISTER, _POOL_GRANULE, _HOST_ACCESS, _DEFER, _NO_DEVICE, _INIT_FAIL, _TRACE).
struct Config : EngineConfig {
    int driver_version = 13000;     // FAKE_CUDA_DRIVER_VERSION; FAKE_CUDA_OLD_DRIVER=1 -> 11080
                                    // FAKE_CUDA_NO_CONCURRENT_MANAGED=1 turns concurrent_managed off
                                    // FAKE_CUDA_PAGEABLE=1: the device reads plain malloc memory
    bool stub = false;              // FAKE_CUDA_STUB=1: every call is CUDA_ERROR_STUB_LIBRARY
                                    // FAKE_CUDA_NO_DEVICE=1: cuInit is CUDA_ERROR_NO_DEVICE
                                    // FAKE_CUDA_INIT_FAIL=1: cuInit is CUDA_ERROR_UNKNOWN
};
const Config &config();

// ---------------------------------------------------------------------------------------------
// Tracing.  Each API function opens a Call; its result goes through done()/fail(), which
// print one line with FAKE_CUDA_TRACE=1 (and the reason for a failure).
// ---------------------------------------------------------------------------------------------
class Call {
public:
    explicit Call(const char *name) : name_(name) {}
    void args(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    void out(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    CUresult done(CUresult r);
    CUresult fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

private:
    const char *name_;
    std::string args_, out_, why_;
};

const char *error_name(CUresult r); // "CUDA_ERROR_..." or "CUDA_ERROR_<n>"

// CUDA_SUCCESS when the driver may be used: the stub refuses everything, and nothing but
// cuInit, cuDriverGetVersion, cuGetProcAddress and the error strings works before cuInit.
CUresult check_initialized();

#define FAKE_ENTER(name, ...)                                                                                \
    ::fakecuda::Call call_(name);                                                                            \
    if (::fakecuda::config().trace)                                                                          \
        call_.args(__VA_ARGS__);                                                                             \
    if (CUresult init_rc_ = ::fakecuda::check_initialized())                                                 \
        return call_.done(init_rc_);                                                                         \
    std::lock_guard<std::mutex> state_lock_(::fakecuda::state().mu)

#define RET(r) return call_.done(r)
#define FAIL(r, ...) return call_.fail((r), __VA_ARGS__)
#define OUT(...)                                                                                             \
    do {                                                                                                     \
        if (::fakecuda::config().trace)                                                                      \
            call_.out(__VA_ARGS__);                                                                          \
    } while (0)


// ---------------------------------------------------------------------------------------------
// Runtime-specific helpers (the engine's are in fake_gpu_engine.hpp).
// ---------------------------------------------------------------------------------------------
// The engine's status as this runtime's error code.
inline CUresult vendor_error(Status s)
{
    switch (s) {
    case kStatusOk: return CUDA_SUCCESS;
    case kStatusInvalidValue: return CUDA_ERROR_INVALID_VALUE;
    case kStatusOutOfMemory: return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
static_assert(kAccessNone == CU_MEM_ACCESS_FLAGS_PROT_NONE && kAccessRead == CU_MEM_ACCESS_FLAGS_PROT_READ &&
                  kAccessReadWrite == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
              "access flags");
static_assert(kHandleTypeNone == CU_MEM_HANDLE_TYPE_NONE && kHandleTypePosixFd == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
              "handle types");
static_assert(kStreamNonBlocking == CU_STREAM_NON_BLOCKING, "stream flags");
static_assert(sizeof(PtrExport) == sizeof(CUmemPoolPtrExportData), "export data is 64 bytes");
static_assert(sizeof(DevPtr) == sizeof(CUdeviceptr), "device pointers");
// The device of the calling thread's current context: CUDA_ERROR_INVALID_CONTEXT without
// one, CUDA_ERROR_CONTEXT_IS_DESTROYED when its primary context is released.
CUresult current_device_locked(int *dev);
// A stream handle (NULL and CU_STREAM_LEGACY: the current context's NULL stream).
CUresult find_stream_locked(CUstream h, Stream **out);

} // namespace fakecuda

// The API functions the fake implements (names as in <cuda.h>, prefixed fake_).  The
// cuGetProcAddress table in fake_cuda.cpp checks each against <cuda.h>'s prototype.
#define FAKE_CUDA_API extern "C" CUresult
// fake_cuda.cpp
FAKE_CUDA_API fake_cuGetErrorName(CUresult error, const char **pStr);
FAKE_CUDA_API fake_cuGetErrorString(CUresult error, const char **pStr);
FAKE_CUDA_API fake_cuDeviceGetCount(int *count);
FAKE_CUDA_API fake_cuDeviceGet(CUdevice *device, int ordinal);
FAKE_CUDA_API fake_cuDeviceGetName(char *name, int len, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxRelease(CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
FAKE_CUDA_API fake_cuCtxSetCurrent(CUcontext ctx);
FAKE_CUDA_API fake_cuCtxGetCurrent(CUcontext *pctx);
FAKE_CUDA_API fake_cuCtxGetDevice(CUdevice *device);
FAKE_CUDA_API fake_cuCtxSynchronize(void);
FAKE_CUDA_API fake_cuStreamCreate(CUstream *phStream, unsigned int Flags);
FAKE_CUDA_API fake_cuStreamDestroy(CUstream hStream);
FAKE_CUDA_API fake_cuStreamSynchronize(CUstream hStream);
FAKE_CUDA_API fake_cuStreamQuery(CUstream hStream);
FAKE_CUDA_API fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
FAKE_CUDA_API fake_cuEventCreate(CUevent *phEvent, unsigned int Flags);
FAKE_CUDA_API fake_cuEventDestroy(CUevent hEvent);
FAKE_CUDA_API fake_cuEventRecord(CUevent hEvent, CUstream hStream);
FAKE_CUDA_API fake_cuEventSynchronize(CUevent hEvent);
FAKE_CUDA_API fake_cuEventQuery(CUevent hEvent);
FAKE_CUDA_API fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
// fake_cuda_memory.cpp
FAKE_CUDA_API fake_cuMemGetInfo(size_t *free, size_t *total);
FAKE_CUDA_API fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
FAKE_CUDA_API fake_cuMemFree(CUdeviceptr dptr);
FAKE_CUDA_API fake_cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
FAKE_CUDA_API fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
FAKE_CUDA_API fake_cuMemFreeHost(void *p);
FAKE_CUDA_API fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags);
FAKE_CUDA_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FAKE_CUDA_API fake_cuMemHostUnregister(void *p);
FAKE_CUDA_API fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
FAKE_CUDA_API fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
FAKE_CUDA_API fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
FAKE_CUDA_API fake_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
FAKE_CUDA_API fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
FAKE_CUDA_API fake_cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags);
FAKE_CUDA_API fake_cuMemPrefetchAsync_v1(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
FAKE_CUDA_API fake_cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                         CUstream hStream);
FAKE_CUDA_API fake_cuMemAdvise_v1(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
FAKE_CUDA_API fake_cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location);
// fake_cuda_pools.cpp
FAKE_CUDA_API fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
FAKE_CUDA_API fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
FAKE_CUDA_API fake_cuMemPoolDestroy(CUmemoryPool pool);
FAKE_CUDA_API fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
FAKE_CUDA_API fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
FAKE_CUDA_API fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
FAKE_CUDA_API fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
FAKE_CUDA_API fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
FAKE_CUDA_API fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
FAKE_CUDA_API fake_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
FAKE_CUDA_API fake_cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location);
FAKE_CUDA_API fake_cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                    CUmemAllocationHandleType handleType, unsigned long long flags);
FAKE_CUDA_API fake_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                      CUmemAllocationHandleType handleType, unsigned long long flags);
FAKE_CUDA_API fake_cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData);
// fake_cuda_vmm.cpp
FAKE_CUDA_API fake_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option);
FAKE_CUDA_API fake_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags);
FAKE_CUDA_API fake_cuMemRelease(CUmemGenericAllocationHandle handle);
FAKE_CUDA_API fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags);
FAKE_CUDA_API fake_cuMemAddressFree(CUdeviceptr ptr, size_t size);
FAKE_CUDA_API fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags);
FAKE_CUDA_API fake_cuMemUnmap(CUdeviceptr ptr, size_t size);
FAKE_CUDA_API fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
FAKE_CUDA_API fake_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType, unsigned long long flags);
FAKE_CUDA_API fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                  CUmemAllocationHandleType shHandleType);
FAKE_CUDA_API fake_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                          CUmemGenericAllocationHandle handle);
