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
// The driver's traits for the shared front-end (fake_api.hpp, fake_api_*.cpp) and its own
// entry points; include fake_api.hpp, which includes this one.
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

// Spellings (see fake_api.hpp).
#define FAKE_NS fakecuda
#define FAKE_API_PREFIX "cu"
#define FAKE_ENV "FAKE_CUDA_"
#define FAKE_ERROR_FALLBACK "CUDA_ERROR_%d"
#define FAKE_NO_CURRENT "no usable current context"
#define FAKE_SYNC_NAME "cuCtxSynchronize"
#define FAKE_N_ALLOC_PINNED "CU_MEM_ALLOCATION_TYPE_PINNED"
#define FAKE_N_LOC_DEVICE "CU_MEM_LOCATION_TYPE_DEVICE"
#define FAKE_N_HOST_ALLOC "cuMemHostAlloc"
#define FAKE_N_IOMEMORY "CU_MEMHOSTREGISTER_IOMEMORY"
#define FAKE_N_ATTACH_GLOBAL "CU_MEM_ATTACH_GLOBAL"
#define FAKE_N_ATTACH_HOST "CU_MEM_ATTACH_HOST"
#define FAKE_N_ATTACH_SINGLE "CU_MEM_ATTACH_SINGLE"
#define FAKE_N_EVENT_INTERPROCESS "CU_EVENT_INTERPROCESS"
#define FAKE_N_EVENT_DISABLE_TIMING "CU_EVENT_DISABLE_TIMING"
#define FAKE_MAX_SIZE_WHY "maxSize needs a 12.2 driver (this one is %d): reserved bytes must be 0"

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
// _NO_HOST_REGISTER, _POOL_GRANULE, _HOST_ACCESS, _DEFER, _UUID_SEED, _NO_DEVICE, _INIT_FAIL, _TRACE).
struct Config : EngineConfig {
    int driver_version = 13000;     // FAKE_CUDA_DRIVER_VERSION; FAKE_CUDA_OLD_DRIVER=1 -> 11080
                                    // FAKE_CUDA_NO_CONCURRENT_MANAGED=1 turns concurrent_managed off
                                    // FAKE_CUDA_PAGEABLE=1: the device reads plain malloc memory
    bool host_pools = true;         // FAKE_CUDA_NO_HOST_POOLS=1: no pools of location HOST / HOST_NUMA, nor of
                                    // allocation type MANAGED (the device says no; the driver refuses them)
    bool rows = true;               // FAKE_CUDA_NO_ROWS=1: no pitched allocation, 2-D/3-D copies, 2-D and
                                    // 16/32-bit fills (their entry points NOT_FOUND: gpumem emulates them)
    bool stream_extras = true;      // FAKE_CUDA_NO_STREAM_EXTRAS=1: no stream priorities and queries, host
                                    // functions or IPC events (entry points NOT_FOUND)
    bool stub = false;              // FAKE_CUDA_STUB=1: every call is CUDA_ERROR_STUB_LIBRARY
                                    // FAKE_CUDA_NO_DEVICE=1: cuInit is CUDA_ERROR_NO_DEVICE
                                    // FAKE_CUDA_INIT_FAIL=1: cuInit is CUDA_ERROR_UNKNOWN
};
const Config &config();

// ---------------------------------------------------------------------------------------------
// The traits fake_api.hpp's shared bodies are written in (see there).
// ---------------------------------------------------------------------------------------------
using Result = CUresult;
// handles
using StreamH = CUstream; using EventH = CUevent; using PoolH = CUmemoryPool;
using MemHandle = CUmemGenericAllocationHandle;
// structures
using AllocProp = CUmemAllocationProp; using PoolProps = CUmemPoolProps;
using AccessDesc = CUmemAccessDesc; using MemLocation = CUmemLocation; using PtrExportData = CUmemPoolPtrExportData;
// enums
using HandleType = CUmemAllocationHandleType; using PoolAttr = CUmemPool_attribute; using AccessFlags = CUmemAccess_flags;
using GranularityFlags = CUmemAllocationGranularity_flags; using Advice = CUmem_advise;

// Fabric handles (multi-node NVLink): made only where an IMEX channel exists, which the fake
// has not (check_prop); HIP has no such handle type here (0: never asked for).
constexpr unsigned kHandleTypeFabric = CU_MEM_HANDLE_TYPE_FABRIC;
// dma-buf export: the one range handle type and the one flag the driver defines.
constexpr int kRangeHandleDmaBufFd = CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
constexpr unsigned long long kRangeFlagDmaBufPcie = CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE;
#define FAKE_N_RANGE_HANDLE_DMA_BUF_FD "CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD"
constexpr Result kOk = CUDA_SUCCESS, kErrInvalidValue = CUDA_ERROR_INVALID_VALUE, kErrNotPermitted = CUDA_ERROR_NOT_PERMITTED,
                 kErrOutOfMemory = CUDA_ERROR_OUT_OF_MEMORY, kErrNotSupported = CUDA_ERROR_NOT_SUPPORTED,
                 kErrInvalidDevice = CUDA_ERROR_INVALID_DEVICE, kErrOperatingSystem = CUDA_ERROR_OPERATING_SYSTEM,
                 kErrUnknown = CUDA_ERROR_UNKNOWN, kErrNotFound = CUDA_ERROR_NOT_FOUND,
                 kErrInvalidHandle = CUDA_ERROR_INVALID_HANDLE, kErrNotReady = CUDA_ERROR_NOT_READY,
                 kErrHostMemoryAlreadyRegistered = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                 kErrHostMemoryNotRegistered = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                 kErrPeerAccessAlreadyEnabled = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                 kErrPeerAccessNotEnabled = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                 kErrPeerAccessUnsupported = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
// stream capture and graphs (fake_api_graphs.cpp)
using GraphH = CUgraph; using GraphExecH = CUgraphExec; using GraphNodeH = CUgraphNode; using UserObjectH = CUuserObject;
using CaptureModeT = CUstreamCaptureMode; using CaptureStatusT = CUstreamCaptureStatus; using CaptureIdT = cuuint64_t;
using HostFnT = CUhostFn;
constexpr Result kErrIllegalState = CUDA_ERROR_ILLEGAL_STATE, kErrIllegalAddress = CUDA_ERROR_ILLEGAL_ADDRESS,
                 kErrCaptureUnsupported = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                 kErrCaptureInvalidated = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                 kErrCaptureMerge = CUDA_ERROR_STREAM_CAPTURE_MERGE,
                 kErrCaptureUnmatched = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                 kErrCaptureUnjoined = CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                 kErrCaptureIsolation = CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                 kErrCaptureImplicit = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, kErrCapturedEvent = CUDA_ERROR_CAPTURED_EVENT,
                 kErrCaptureWrongThread = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
constexpr unsigned kUserObjectNoDestructorSync = CU_USER_OBJECT_NO_DESTRUCTOR_SYNC,
                   kGraphUserObjectMove = CU_GRAPH_USER_OBJECT_MOVE, kEventWaitExternal = CU_EVENT_WAIT_EXTERNAL;
constexpr CUmemLocationType kLocDevice = CU_MEM_LOCATION_TYPE_DEVICE;
constexpr int kLocHost = CU_MEM_LOCATION_TYPE_HOST, kLocHostNuma = CU_MEM_LOCATION_TYPE_HOST_NUMA,
              kLocHostNumaCurrent = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
constexpr CUmemAllocationType kAllocPinned = CU_MEM_ALLOCATION_TYPE_PINNED;
constexpr int kAllocManaged = CU_MEM_ALLOCATION_TYPE_MANAGED, kLocNone = CU_MEM_LOCATION_TYPE_NONE;
constexpr GranularityFlags kGranularityMinimum = CU_MEM_ALLOC_GRANULARITY_MINIMUM,
                           kGranularityRecommended = CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
constexpr PoolAttr kPoolReuseFollowEventDeps = CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, kPoolReuseAllowOpportunistic = CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                   kPoolReuseAllowInternalDeps = CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, kPoolReleaseThreshold = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                   kPoolReservedMemCurrent = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, kPoolReservedMemHigh = CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                   kPoolUsedMemCurrent = CU_MEMPOOL_ATTR_USED_MEM_CURRENT, kPoolUsedMemHigh = CU_MEMPOOL_ATTR_USED_MEM_HIGH;
constexpr unsigned kEventDisableTiming = CU_EVENT_DISABLE_TIMING, kEventInterprocess = CU_EVENT_INTERPROCESS,
                   kEventBlockingSync = CU_EVENT_BLOCKING_SYNC, kEventWaitFlags = CU_EVENT_WAIT_EXTERNAL;
constexpr unsigned kAttachGlobal = CU_MEM_ATTACH_GLOBAL, kAttachHost = CU_MEM_ATTACH_HOST,
                   kAttachSingle = CU_MEM_ATTACH_SINGLE;
constexpr Advice kAdviseSetReadMostly = CU_MEM_ADVISE_SET_READ_MOSTLY,
                 kAdviseUnsetReadMostly = CU_MEM_ADVISE_UNSET_READ_MOSTLY,
                 kAdviseUnsetAccessedBy = CU_MEM_ADVISE_UNSET_ACCESSED_BY;
constexpr int kDeviceCpu = CU_DEVICE_CPU;
constexpr unsigned kHostAllocFlags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
constexpr unsigned kHostRegisterIoMemory = CU_MEMHOSTREGISTER_IOMEMORY;
constexpr unsigned kHostRegisterReadOnly = CU_MEMHOSTREGISTER_READ_ONLY;
inline unsigned requested_handle_types(const AllocProp &p) { return p.requestedHandleTypes; }
inline void set_requested_handle_types(AllocProp &p, unsigned t) { p.requestedHandleTypes = (HandleType)t; }
// Where the driver and the HIP runtime answer differently.
constexpr bool kZeroAllocIsNull = false;           // cuMemAlloc(0) is INVALID_VALUE
// Stream priorities (cuCtxGetStreamPriorityRange on an H100: least 0, greatest -5).
constexpr int kPriorityLeast = 0, kPriorityGreatest = -5;
constexpr Result kErrInvalidContext = CUDA_ERROR_INVALID_CONTEXT;
constexpr bool kPrefetchNeedsConcurrent = true;    // no GPU prefetch without concurrent managed access
// cuMemPoolTrimTo(pool, UINT64_MAX) gives every free granule back; 2^63 keeps them (driver
// 580, tools/device/pool-trim-probe.py): the floor is rounded up to a granule and wraps.
constexpr bool kTrimFloorWraps = true;
inline bool advice_known(int a) { return a >= kAdviseSetReadMostly && a <= kAdviseUnsetAccessedBy; }
inline bool advice_takes_device(int a) { return a != kAdviseSetReadMostly && a != kAdviseUnsetReadMostly; }
inline const char *host_alloc_flags_why(unsigned f) { return (f & ~kHostAllocFlags) ? "unknown flags" : nullptr; }
inline unsigned pool_usage(const PoolProps &p) { return p.usage; }
// Before CUDA 12.2 maxSize was part of the reserved bytes, which had to be 0.
inline bool pool_max_size_ok() { return config().driver_version >= 12020; }
inline int vendor_version() { return config().driver_version; }
// Pools of host memory come with driver 12.6 (location HOST, HOST_NUMA; one NUMA node here),
// pools of managed memory with driver 13.0.
inline bool host_pools_ok() { return config().pools && config().host_pools && config().driver_version >= 12060; }
inline bool managed_pools_ok()
{
    return config().pools && config().host_pools && config().managed && config().driver_version >= 13000;
}
#define FAKE_HOST_POOLS_WHY "host pools need driver 12.6 (FAKE_CUDA_NO_HOST_POOLS unset)"
#define FAKE_MANAGED_POOLS_WHY "managed pools need driver 13.0 and managed memory (FAKE_CUDA_NO_HOST_POOLS unset)"

inline bool is_default_stream(StreamH h) { return h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD; }
// The batched calls refuse the legacy default stream ("must not be legacy NULL stream").
inline bool batch_refuses_stream(StreamH h) { return h == nullptr || h == CU_STREAM_LEGACY; }

static_assert(kAccessNone == CU_MEM_ACCESS_FLAGS_PROT_NONE && kAccessRead == CU_MEM_ACCESS_FLAGS_PROT_READ &&
                  kAccessReadWrite == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
              "access flags");
static_assert(kHandleTypeNone == CU_MEM_HANDLE_TYPE_NONE && kHandleTypePosixFd == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
              "handle types");
static_assert(kStreamNonBlocking == CU_STREAM_NON_BLOCKING, "stream flags");
static_assert(kCaptureGlobal == CU_STREAM_CAPTURE_MODE_GLOBAL && kCaptureThreadLocal == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                  kCaptureRelaxed == CU_STREAM_CAPTURE_MODE_RELAXED,
              "capture modes");
static_assert(kCaptureNone == CU_STREAM_CAPTURE_STATUS_NONE && kCaptureActive == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
                  kCaptureInvalidated == CU_STREAM_CAPTURE_STATUS_INVALIDATED,
              "capture statuses");
static_assert(kInstantiateAutoFree == CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH &&
                  kInstantiateUpload == CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD &&
                  kInstantiateDeviceLaunch == CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH &&
                  kInstantiateNodePriority == CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY,
              "instantiation flags");
static_assert(sizeof(PtrExport) == sizeof(CUmemPoolPtrExportData), "export data is 64 bytes");
static_assert(sizeof(DevPtr) == sizeof(CUdeviceptr), "device pointers");

} // namespace fakecuda

// The driver's own entry points (fake_cuda.cpp); the shared ones are declared in fake_api.hpp.
// The cuGetProcAddress table in fake_cuda.cpp checks each against <cuda.h>'s prototype.
#define FAKE_CUDA_API extern "C" CUresult
FAKE_CUDA_API fake_cuGetErrorName(CUresult error, const char **pStr);
FAKE_CUDA_API fake_cuGetErrorString(CUresult error, const char **pStr);
FAKE_CUDA_API fake_cuDeviceGetCount(int *count);
FAKE_CUDA_API fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxRelease(CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
FAKE_CUDA_API fake_cuCtxSetCurrent(CUcontext ctx);
FAKE_CUDA_API fake_cuCtxGetCurrent(CUcontext *pctx);
FAKE_CUDA_API fake_cuCtxGetDevice(CUdevice *device);
FAKE_CUDA_API fake_cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
FAKE_CUDA_API fake_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags);
FAKE_CUDA_API fake_cuCtxDisablePeerAccess(CUcontext peerContext);
FAKE_CUDA_API fake_cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                                size_t ByteCount);
FAKE_CUDA_API fake_cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                     CUcontext srcContext, size_t ByteCount, CUstream hStream);
// cuDeviceGetUuid: the CUDA 9.2 form and 11.4's (_v2), which cuGetProcAddress gives by version.
FAKE_CUDA_API fake_cuDeviceGetUuid_v1(CUuuid *uuid, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
FAKE_CUDA_API fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                         CUstream hStream);
FAKE_CUDA_API fake_cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location);
// The batched calls (fake_cuda.cpp): cuMemcpyBatchAsync in its CUDA 12.8 form (failIdx before
// the stream) and its 13.0 form, and 13.0's batched prefetch and discard.
FAKE_CUDA_API fake_cuMemcpyBatchAsync_v1(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                         size_t *failIdx, CUstream hStream);
FAKE_CUDA_API fake_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                         CUstream hStream);
FAKE_CUDA_API fake_cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                           CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                           size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
// Stream capture forms of other CUDA versions (fake_cuda.cpp; the 12.0 forms are shared:
// fake_api.hpp): cuStreamBeginCapture without a mode (10.0), cuStreamGetCaptureInfo with only
// status and id (10.1) and with edge data (12.3).
FAKE_CUDA_API fake_cuStreamBeginCapture_v1(CUstream hStream);
FAKE_CUDA_API fake_cuStreamGetCaptureInfo_v1(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out);
FAKE_CUDA_API fake_cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out, CUgraph *graph_out,
                                             const CUgraphNode **dependencies_out,
                                             const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out);
// Streams with priorities, host functions, IPC events, rows and boxes (fake_cuda.cpp, over the
// shared bodies of fake_api_rows.cpp).
FAKE_CUDA_API fake_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
FAKE_CUDA_API fake_cuStreamGetPriority(CUstream hStream, int *priority);
FAKE_CUDA_API fake_cuStreamGetFlags(CUstream hStream, unsigned int *flags);
FAKE_CUDA_API fake_cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
FAKE_CUDA_API fake_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
FAKE_CUDA_API fake_cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event);
FAKE_CUDA_API fake_cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle);
FAKE_CUDA_API fake_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes);
FAKE_CUDA_API fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream);
FAKE_CUDA_API fake_cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream);
FAKE_CUDA_API fake_cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                     size_t Height, CUstream hStream);
FAKE_CUDA_API fake_cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
FAKE_CUDA_API fake_cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
FAKE_CUDA_API fake_cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                          CUstream hStream);
