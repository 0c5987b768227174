// A fake HIP runtime (libfakehip.so) for testing gpumem's HIP backend without a GPU.
//
// It exports, with extern "C" and the HIP runtime's C signatures, every function of
// src/backends/hip/hip_symbols.def (and a few neighbours), as libamdhip64 does.  Memory
// lives in host memory: device allocations come from a reserved "device address range" that
// the CPU cannot touch (as on a real GPU; FAKE_HIP_HOST_ACCESS=1 lifts that), backed by
// memfds the fake reads and writes through a second mapping.  The environment variables
// (FAKE_HIP_*) turn features off so every fallback path of the backend runs in CI; see
// README.md next to this file.  The bodies are the CUDA fake's (fake_api_*.cpp).
//
// The runtime's traits for the shared front-end (fake_api.hpp, fake_api_*.cpp) and its own
// entry points; include fake_api.hpp, which includes this one.
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

// Spellings (see fake_api.hpp).
#define FAKE_NS fakehip
#define FAKE_API_PREFIX "hip"
#define FAKE_ENV "FAKE_HIP_"
#define FAKE_ERROR_FALLBACK "hipError_%d"
#define FAKE_NO_CURRENT "no current device"
#define FAKE_SYNC_NAME "hipDeviceSynchronize"
#define FAKE_N_ALLOC_PINNED "hipMemAllocationTypePinned"
#define FAKE_N_LOC_DEVICE "hipMemLocationTypeDevice"
#define FAKE_N_HOST_ALLOC "hipHostMalloc"
#define FAKE_N_IOMEMORY "hipHostRegisterIoMemory"
#define FAKE_N_ATTACH_GLOBAL "hipMemAttachGlobal"
#define FAKE_N_ATTACH_HOST "hipMemAttachHost"
#define FAKE_N_ATTACH_SINGLE "hipMemAttachSingle"
#define FAKE_N_EVENT_INTERPROCESS "hipEventInterprocess"
#define FAKE_N_EVENT_DISABLE_TIMING "hipEventDisableTiming"
#define FAKE_MAX_SIZE_WHY "maxSize needs ROCm 6 (this runtime is %d): reserved bytes must be 0"

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
// _NO_HOST_REGISTER, _POOL_GRANULE, _HOST_ACCESS, _DEFER, _UUID_SEED, _NO_DEVICE, _INIT_FAIL, _TRACE).
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
// The traits fake_api.hpp's shared bodies are written in (see there).
// ---------------------------------------------------------------------------------------------
using Result = hipError_t;
// handles
using StreamH = hipStream_t; using EventH = hipEvent_t; using PoolH = hipMemPool_t;
using MemHandle = fh_memhandle;
// structures
using AllocProp = fh_MemAllocationProp; using PoolProps = fh_MemPoolProps;
using AccessDesc = hipMemAccessDesc; using MemLocation = hipMemLocation; using PtrExportData = hipMemPoolPtrExportData;
// enums
using HandleType = hipMemAllocationHandleType; using PoolAttr = hipMemPoolAttr; using AccessFlags = hipMemAccessFlags;
using GranularityFlags = fh_MemAllocationGranularity_flags; using Advice = int;

// Fabric handles: CUDA's only here (fake_cuda.hpp); 0 never matches a requested type.
constexpr unsigned kHandleTypeFabric = 0;
// dma-buf export (HIP 7.0; absent from the ROCm headers the fake builds with): the values of
// hipMemRangeHandleTypeDmaBufFd and hipMemRangeFlagDmaBufMappingTypePcie, CUDA's too.
constexpr int kRangeHandleDmaBufFd = 0x1;
constexpr unsigned long long kRangeFlagDmaBufPcie = 0x1;
#define FAKE_N_RANGE_HANDLE_DMA_BUF_FD "hipMemRangeHandleTypeDmaBufFd"
constexpr Result kOk = hipSuccess, kErrInvalidValue = hipErrorInvalidValue, kErrNotPermitted = hipErrorNotSupported, kErrOutOfMemory = hipErrorOutOfMemory,
                 kErrNotSupported = hipErrorNotSupported, kErrInvalidDevice = hipErrorInvalidDevice,
                 kErrOperatingSystem = hipErrorOperatingSystem, kErrUnknown = hipErrorUnknown,
                 kErrNotFound = hipErrorNotFound, kErrInvalidHandle = hipErrorInvalidHandle,
                 kErrNotReady = hipErrorNotReady, kErrHostMemoryAlreadyRegistered = hipErrorHostMemoryAlreadyRegistered,
                 kErrHostMemoryNotRegistered = hipErrorHostMemoryNotRegistered,
                 kErrPeerAccessAlreadyEnabled = hipErrorPeerAccessAlreadyEnabled,
                 kErrPeerAccessNotEnabled = hipErrorPeerAccessNotEnabled,
                 kErrPeerAccessUnsupported = hipErrorPeerAccessUnsupported;
// stream capture and graphs (fake_api_graphs.cpp)
using GraphH = hipGraph_t; using GraphExecH = hipGraphExec_t; using GraphNodeH = hipGraphNode_t;
using UserObjectH = fh_UserObject_t; using CaptureModeT = hipStreamCaptureMode;
using CaptureStatusT = hipStreamCaptureStatus; using CaptureIdT = unsigned long long; using HostFnT = hipHostFn_t;
constexpr Result kErrIllegalState = hipErrorIllegalState, kErrIllegalAddress = hipErrorIllegalAddress,
                 kErrCaptureUnsupported = hipErrorStreamCaptureUnsupported,
                 kErrCaptureInvalidated = hipErrorStreamCaptureInvalidated,
                 kErrCaptureMerge = hipErrorStreamCaptureMerge, kErrCaptureUnmatched = hipErrorStreamCaptureUnmatched,
                 kErrCaptureUnjoined = hipErrorStreamCaptureUnjoined,
                 kErrCaptureIsolation = hipErrorStreamCaptureIsolation,
                 kErrCaptureImplicit = hipErrorStreamCaptureImplicit, kErrCapturedEvent = hipErrorCapturedEvent,
                 kErrCaptureWrongThread = hipErrorStreamCaptureWrongThread;
// (HIP's hipStreamWaitEvent takes no external-wait flag: every wait across a capture's boundary isolates.)
constexpr unsigned kUserObjectNoDestructorSync = fh_UserObjectNoDestructorSync,
                   kGraphUserObjectMove = fh_GraphUserObjectMove, kEventWaitExternal = 0;
constexpr hipMemLocationType kLocDevice = hipMemLocationTypeDevice;
constexpr int kLocHost = fh_MemLocationTypeHost, kLocHostNuma = fh_MemLocationTypeHostNuma,
              kLocHostNumaCurrent = fh_MemLocationTypeHostNumaCurrent;
constexpr hipMemAllocationType kAllocPinned = hipMemAllocationTypePinned;
constexpr int kAllocManaged = -1, kLocNone = -1; // the HIP headers name neither
constexpr GranularityFlags kGranularityMinimum = fh_MemAllocationGranularityMinimum,
                           kGranularityRecommended = fh_MemAllocationGranularityRecommended;
constexpr PoolAttr kPoolReuseFollowEventDeps = hipMemPoolReuseFollowEventDependencies, kPoolReuseAllowOpportunistic = hipMemPoolReuseAllowOpportunistic,
                   kPoolReuseAllowInternalDeps = hipMemPoolReuseAllowInternalDependencies, kPoolReleaseThreshold = hipMemPoolAttrReleaseThreshold,
                   kPoolReservedMemCurrent = hipMemPoolAttrReservedMemCurrent, kPoolReservedMemHigh = hipMemPoolAttrReservedMemHigh,
                   kPoolUsedMemCurrent = hipMemPoolAttrUsedMemCurrent, kPoolUsedMemHigh = hipMemPoolAttrUsedMemHigh;
constexpr unsigned kEventDisableTiming = hipEventDisableTiming, kEventInterprocess = hipEventInterprocess,
                   kEventBlockingSync = hipEventBlockingSync, kEventWaitFlags = 0;
constexpr unsigned kAttachGlobal = hipMemAttachGlobal, kAttachHost = hipMemAttachHost,
                   kAttachSingle = hipMemAttachSingle;
constexpr Advice kAdviseSetReadMostly = hipMemAdviseSetReadMostly, kAdviseUnsetReadMostly = hipMemAdviseUnsetReadMostly,
                 kAdviseUnsetAccessedBy = hipMemAdviseUnsetAccessedBy;
constexpr int kDeviceCpu = hipCpuDeviceId;
constexpr unsigned kHostRegisterIoMemory = hipHostRegisterIoMemory;
constexpr unsigned kHostRegisterReadOnly = 0x8u; // hipHostRegisterReadOnly (not in every ROCm header)
constexpr unsigned kHostRegisterFlags = hipHostRegisterPortable | hipHostRegisterMapped | hipHostRegisterIoMemory | 0x8u;
inline unsigned requested_handle_types(const AllocProp &p) { return p.requestedHandleType; }
inline void set_requested_handle_types(AllocProp &p, unsigned t) { p.requestedHandleType = (HandleType)t; }
// Where the HIP runtime and the CUDA driver answer differently.
constexpr bool kZeroAllocIsNull = true;            // hipMalloc(0) is hipSuccess with NULL
// Stream priorities: HIP's runtime names three (high -1, normal 0, low 1) and reports [0, -1]
// here (not asked of an AMD GPU).
constexpr int kPriorityLeast = 0, kPriorityGreatest = -1;
constexpr Result kErrInvalidContext = hipErrorInvalidContext;
constexpr bool kPrefetchNeedsConcurrent = false;   // without XNACK ROCm still accepts a prefetch (the pages stay put)
// What ROCm does with hipMemPoolTrimTo(pool, UINT64_MAX) is not known here (CUDA's driver
// releases everything): the fake keeps everything, and gpumem never asks (Pools::trim_to).
constexpr bool kTrimFloorWraps = false;
inline bool is_coarse_grain(int a) { return a == hipMemAdviseSetCoarseGrain || a == hipMemAdviseUnsetCoarseGrain; }
inline bool advice_known(int a) { return (a >= kAdviseSetReadMostly && a <= kAdviseUnsetAccessedBy) || is_coarse_grain(a); }
inline bool advice_takes_device(int a)
{
    return a != kAdviseSetReadMostly && a != kAdviseUnsetReadMostly && !is_coarse_grain(a);
}
inline const char *host_alloc_flags_why(unsigned f)
{
    if (f & ~(unsigned)(hipHostMallocPortable | hipHostMallocMapped | hipHostMallocWriteCombined | hipHostMallocNumaUser |
                        hipHostMallocCoherent | hipHostMallocNonCoherent))
        return "unknown flags";
    if ((f & hipHostMallocCoherent) && (f & hipHostMallocNonCoherent))
        return "hipHostMallocCoherent together with hipHostMallocNonCoherent";
    return nullptr;
}
inline unsigned pool_usage(const PoolProps &) { return 0; } // ROCm's props have no usage
// Before ROCm 6 maxSize was part of the reserved bytes, which had to be 0.
inline bool pool_max_size_ok() { return config().v6(); }
inline int vendor_version() { return config().runtime_version; }
// The HIP headers gpumem builds with name no host or managed pool: the fake models none.
inline bool host_pools_ok() { return false; }
inline bool managed_pools_ok() { return false; }
#define FAKE_HOST_POOLS_WHY "host pools are not modelled"
#define FAKE_MANAGED_POOLS_WHY "managed pools are not modelled"

// The per-thread default stream is modelled as the NULL stream.
inline bool is_default_stream(StreamH h) { return h == nullptr || h == hipStreamPerThread; }
// The batched calls are refused on the null stream, as CUDA's on its legacy stream.
inline bool batch_refuses_stream(StreamH h) { return h == nullptr; }

static_assert(kAccessNone == hipMemAccessFlagsProtNone && kAccessRead == hipMemAccessFlagsProtRead &&
                  kAccessReadWrite == hipMemAccessFlagsProtReadWrite,
              "access flags");
static_assert(kHandleTypeNone == hipMemHandleTypeNone && kHandleTypePosixFd == hipMemHandleTypePosixFileDescriptor,
              "handle types");
static_assert(kStreamNonBlocking == hipStreamNonBlocking, "stream flags");
static_assert(kCaptureGlobal == hipStreamCaptureModeGlobal && kCaptureThreadLocal == hipStreamCaptureModeThreadLocal &&
                  kCaptureRelaxed == hipStreamCaptureModeRelaxed,
              "capture modes");
static_assert(kCaptureNone == hipStreamCaptureStatusNone && kCaptureActive == hipStreamCaptureStatusActive &&
                  kCaptureInvalidated == hipStreamCaptureStatusInvalidated,
              "capture statuses");
static_assert(kInstantiateAutoFree == hipGraphInstantiateFlagAutoFreeOnLaunch, "instantiation flags");
static_assert(sizeof(PtrExport) == sizeof(hipMemPoolPtrExportData), "export data is 64 bytes");

} // namespace fakehip
using namespace ::fakehip;

// The runtime's own entry points (fake_hip.cpp, fake_hip_memory.cpp); the shared ones are
// declared in fake_api.hpp.  fake_hip_exports.cpp exports them under the HIP runtime's names
// and C signatures.
#define FAKE_HIP_API extern "C" hipError_t
FAKE_HIP_API fake_hipInit(unsigned int flags);
FAKE_HIP_API fake_hipDriverGetVersion(int *v);
FAKE_HIP_API fake_hipRuntimeGetVersion(int *v);
FAKE_HIP_API fake_hipSetDevice(int dev);
FAKE_HIP_API fake_hipGetDevice(int *dev);
extern "C" const char *fake_hipGetErrorName(hipError_t e);
extern "C" const char *fake_hipGetErrorString(hipError_t e);
FAKE_HIP_API fake_cuDeviceGetCount(int *count);
FAKE_HIP_API fake_cuDeviceGetAttribute(int *pi, int attrib, int dev);
FAKE_HIP_API fake_hipPointerGetAttributes(fh_PointerAttribute *attr, fh_devptr ptr);
FAKE_HIP_API fake_hipDeviceGetUuid(hipUUID *uuid, int dev);
FAKE_HIP_API fake_hipMemcpyPeer(fh_devptr dst, int dstDevice, fh_devptr src, int srcDevice, size_t sizeBytes);
FAKE_HIP_API fake_hipMemcpyPeerAsync(fh_devptr dst, int dstDevice, fh_devptr src, int srcDevice, size_t sizeBytes,
                                     hipStream_t stream);
// The batched calls of HIP 7.1 (fake_hip.cpp); hipErrorNotSupported below FAKE_HIP_VERSION 7.1.
FAKE_HIP_API fake_hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                                      fh_MemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                      hipStream_t stream);
FAKE_HIP_API fake_hipMemPrefetchBatchAsync(void **dptrs, size_t *sizes, size_t count, hipMemLocation *prefetchLocs,
                                           size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                           hipStream_t stream);
FAKE_HIP_API fake_hipMemDiscardBatchAsync(void **dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                          hipStream_t stream);
