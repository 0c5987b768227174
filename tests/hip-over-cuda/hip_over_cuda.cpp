// libhipovercuda: the HIP runtime ABI gpumem's HIP backend loads, implemented over CUDA, so
// that the backend runs on an NVIDIA GPU (GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=<this>).
//
// Why.  The HIP backend had run only against the fake HIP runtime, which answers as HIP is
// documented but executes nothing.  HIP has a second platform, NVIDIA, whose headers
// (hip/nvidia_detail) map every hip* call onto the CUDA runtime: AMD's own statement of what
// each call means on CUDA.  Exported under the AMD ABI, that mapping lets the backend's real
// code paths (loading, versions, attributes, placement, pools, VMM, IPC, capture) drive real
// memory and real kernels, and gives the GPU suite a third column next to cuda and the fake.
//
// How.  Two halves (see nvidia_side.hpp): nvidia_side.cpp is compiled on HIP's NVIDIA
// platform and calls AMD's wrappers unchanged wherever they exist, build on CUDA 13 (after
// hip_nvidia_headers.py's edits) and agree with the AMD ABI; this file is compiled on HIP's
// AMD platform, exports every entry of src/backends/hip/hip_symbols.def with the AMD ABI's C
// signatures, and translates, in the one table below, whatever the AMD ABI lays out or numbers
// otherwise.  The ROCm 6 layouts and values come from the fake HIP runtime's
// tests/fakes/fake_hip_types.hpp (the backend's hip_types.hpp declares the same): this runtime
// writes none of them a third time.
//
// Which HIP it claims to be.  hipRuntimeGetVersion and hipDriverGetVersion answer
// HIP_OVER_CUDA_VERSION (HIP_VERSION encoding), by default 70100000, ROCm 7.1: ROCm 6's
// layouts (VMM, hipMemoryType, attributes 89..91) and HIP 7.1's batched calls, so every path
// of the backend runs.  Below 60000000 it answers as ROCm 5 does: ROCm 5's hipMemoryType
// numbers, unregistered memory an error, attributes past 88 unknown, VMM hipErrorNotSupported.
// (ROCm releases below 7.3 also switch on gpumem's workaround for the release threshold that
// ROCm ignores, vendor_bugs.def: it trims pools at synchronisation; CUDA honours the threshold,
// so the workaround only runs, it never has anything to repair here.)
//
// What it cannot show (it is CUDA underneath): XNACK and the migration of managed pages on AMD
// GPUs (managed memory behaves as CUDA's: concurrent managed access on an H100); coarse- and
// fine-grained memory (the coherence advice 100/101 and hipHostMallocCoherent/NonCoherent are
// accepted and do nothing); ROCm's own bugs and its differences from CUDA (e.g. clr refusing
// synchronous hipMemcpy during a capture, hipMallocAsync in relaxed capture mode, its IPC
// descriptors, its pool and VMM granularities); AMD's driver, /dev/kfd and gfx names.  What
// passes here proves gpumem's HIP backend correct as far as HIP's documented semantics equal
// CUDA's, and nothing about AMD silicon.
//
// SPDX-License-Identifier: MIT
#include "nvidia_side.hpp"

#include "fake_hip_types.hpp" // tests/fakes: ROCm 6 layouts and values

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if !defined(__HIP_PLATFORM_AMD__)
#error "hip_over_cuda.cpp is compiled on HIP's AMD platform (-D__HIP_PLATFORM_AMD__): it exports the AMD ABI"
#endif

#define HIP_OVER_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
namespace nv = hipovercuda::nv;
using namespace fakehip; // fh_ layouts and values (fake_hip_types.hpp)

// The version this runtime claims, read once.
int claimed_version()
{
    static const int version = [] {
        const char *v = std::getenv("HIP_OVER_CUDA_VERSION");
        return v != nullptr && *v != '\0' ? std::atoi(v) : 70100000;
    }();
    return version;
}
bool rocm6() { return claimed_version() >= 60000000; }

hipError_t result(int r) { return static_cast<hipError_t>(r); }

// =============================================================================================
// The translation table: everything the AMD ABI lays out or numbers otherwise than AMD's
// NVIDIA mapping (or CUDA) does.  Every entry not named here goes through AMD's mapping as it
// is (nvidia_side.cpp), its results mapped by AMD's hipCUDAErrorTohipError/hipCUResultTohipError.
//
//  what                          AMD ABI (this library's callers)      CUDA underneath
//  ----------------------------  ------------------------------------  ------------------------------
//  1 hipRuntimeGetVersion,       HIP_VERSION of the claimed ROCm       (cudaRuntimeGetVersion is not
//    hipDriverGetVersion         (HIP_OVER_CUDA_VERSION, 70100000)      a HIP version: never shown)
//  2 device attribute 89 VMM     ROCm 6 only (ROCm 5: InvalidValue)    CU_..._VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
//    90 HostRegisterSupported    ROCm 6 only                           cudaDevAttrHostRegisterSupported
//    91 PoolSupportedHandleTypes ROCm 6 only                           cudaDevAttrMemoryPoolSupportedHandleTypes
//    (0..88: AMD's switch in hipDeviceGetAttribute; its hipDeviceAttribute_t is the same enum)
//  3 hipPointerAttribute_t       {type, device, devicePointer,         cudaPointerAttributes {type,
//                                 hostPointer, isManaged, flags}       device, devicePointer, hostPointer}
//    .type unregistered          ROCm 6: 0, device -2; ROCm 5: error   cudaMemoryTypeUnregistered 0
//          host / device         ROCm 6: 1 / 2; ROCm 5: 0 / 1          1 / 2
//          managed               ROCm 6: 3; ROCm 5: 3 (Unified),        3
//                                isManaged 1
//    .allocationFlags            the hipHostMalloc flags               cudaHostGetFlags (host memory)
//    (AMD's wrapper writes ROCm 5 numbers and refuses managed and unregistered memory)
//  4 host allocation flags       Portable 1, Mapped 2, WriteCombined 4  the same bits
//                                NumaUser 0x20000000, Coherent          dropped: CUDA has no such
//                                0x40000000, NonCoherent 0x80000000     choice, cudaHostAlloc refuses them
//  5 hipMemAdvise 100/101        Set/UnsetCoarseGrain                  nothing (success); AMD's mapping
//                                                                       would turn them into SetReadMostly
//  6 hipMemAllocationProp        ROCm 6 {type, requestedHandleTypes,   CUmemAllocationProp (the same order
//                                 location, win32, allocFlags}          and 8 reserved bytes more)
//    hipMemGenericAllocationHandle_t  a pointer                        CUmemGenericAllocationHandle (u64)
//  7 hipMemPoolProps             ROCm 6 {..., maxSize, reserved[56]}   cudaMemPoolProps {..., maxSize,
//                                                                       usage, reserved[54]}
//  8 hipMemcpyBatchAsync         HIP 7.1: failIdx argument             CUDA 13 has none: failIdx keeps
//                                                                       what the caller set
//  9 hipGetErrorName/String      hipErrorInvalidValue, ...             AMD's mapping answers CUDA's names
//                                (the fakes' table, fake_errors.def)    (cudaErrorInvalidValue): not used
// 10 hipStreamGetCaptureInfo_v2  HIP's form                            cudaStreamGetCaptureInfo (CUDA 13;
//                                                                       edge data not asked)
// 11 VMM, hipStreamGetDevice,    not in AMD's 5.2 mapping              the driver's cuMem* (VMM),
//    user objects, capture                                              cudaStreamGetDevice, cudaUserObject*,
//    mode, batched calls                                                cudaThreadExchangeStreamCaptureMode,
//                                                                       cudaMem{cpy,PrefetchBatch,DiscardBatch}Async
// 12 hipMemcpy3DAsync            hipMemcpy3DParms (AMD's layout:       cudaMemcpy3DParms (CUDA's layout),
//                                arrays first, positions in bytes)     positions folded into the pointers
//    hipMemsetD16/D32Async       AMD's calls                           cuMemsetD16Async/cuMemsetD32Async
//                                                                       (the runtime has none)
//    stream priorities, flags,   not all in AMD's 5.2 mapping          cudaStreamCreateWithPriority & co.,
//    host functions, IPC events,                                        cudaLaunchHostFunc, cudaIpc*EventHandle,
//    pitched allocations, 2-D                                           cudaMallocPitch, cudaMemcpy2DAsync,
//    copies and fills (0.5)                                             cudaMemset2DAsync
// hipExtHostAlloc and hipFreeHost (absent from AMD's 5.2 mapping) are its hipHostMalloc and
// hipHostFree, as they are on AMD.  Shared without translation (checked in nvidia_side.cpp or
// here): hipError_t (one enum on both platforms), hipMemcpyKind, hipMemLocation,
// hipMemAccessDesc, hipMemcpyAttributes, the pool attributes, handle types, capture modes and
// statuses, user-object flags, the 64-byte pointer export data, host-registration flags.
// =============================================================================================

// 2: the device attributes AMD's 5.2 mapping does not know.
struct AttributeRow {
    int hip;            // hipDeviceAttribute_t
    bool driver;        // read from the driver (CUdevice_attribute) rather than the runtime
    int cuda;           // the CUDA attribute
};
constexpr AttributeRow k_attribute_rows[] = {
    {fh_DeviceAttributeVirtualMemoryManagementSupported, true, nv::k_cu_attr_vmm_supported},
    {fh_DeviceAttributeHostRegisterSupported, false, nv::k_cuda_attr_host_register_supported},
    {fh_DeviceAttributeMemoryPoolSupportedHandleTypes, false, nv::k_cuda_attr_pool_supported_handle_types},
};

// 3: cudaMemoryType -> hipMemoryType, by ROCm generation (-1: ROCm 5 has no answer but an error).
struct MemoryTypeRow {
    int cuda, rocm6, rocm5;
};
constexpr MemoryTypeRow k_memory_type_rows[] = {
    {nv::k_cuda_memory_unregistered, fh6_Unregistered, -1},
    {nv::k_cuda_memory_host, fh6_Host, fh5_Host},
    {nv::k_cuda_memory_device, fh6_Device, fh5_Device},
    {nv::k_cuda_memory_managed, fh6_Managed, fh5_Unified},
};

// 4: the AMD host-allocation bits CUDA has no meaning for.
constexpr unsigned k_host_flags_dropped = hipHostMallocNumaUser | hipHostMallocCoherent | hipHostMallocNonCoherent;

// 5: the AMD-only advice.
bool coherence_advice(int advice) { return advice == hipMemAdviseSetCoarseGrain || advice == hipMemAdviseUnsetCoarseGrain; }

// 6: ROCm 6's hipMemAllocationProp, field by field.
static_assert(sizeof(fh_MemAllocationProp) == sizeof(hipMemAllocationProp), "ROCm 6 and 5.2 sizes agree");
nv::AllocationProp allocation_prop(const void *amd)
{
    const auto &in = *static_cast<const fh_MemAllocationProp *>(amd);
    nv::AllocationProp p{};
    p.type = in.type;
    p.handle_types = in.requestedHandleType;
    p.location = {in.location.type, in.location.id};
    p.win32_metadata = in.win32HandleMetaData;
    p.compression = in.allocFlags.compressionType;
    p.rdma_capable = in.allocFlags.gpuDirectRDMACapable;
    p.usage = in.allocFlags.usage;
    return p;
}
uint64_t handle_value(hipMemGenericAllocationHandle_t h) { return reinterpret_cast<uintptr_t>(h); }
hipMemGenericAllocationHandle_t handle_of(uint64_t v)
{
    return reinterpret_cast<hipMemGenericAllocationHandle_t>(static_cast<uintptr_t>(v));
}

// 7: ROCm 6's hipMemPoolProps, field by field (maxSize only where ROCm 6 has it).
nv::PoolProps pool_props(const hipMemPoolProps *amd)
{
    const auto &in = *reinterpret_cast<const fh_MemPoolProps *>(amd);
    nv::PoolProps p{};
    p.alloc_type = in.allocType;
    p.handle_types = in.handleTypes;
    p.location = {in.location.type, in.location.id};
    p.win32_security_attributes = in.win32SecurityAttributes;
    p.max_size = rocm6() ? in.maxSize : 0;
    return p;
}

// 9: error names and descriptions, the HIP column of the fakes' table (fake_errors.def).
struct ErrorText {
    hipError_t code;
    const char *name;
    const char *text;
};
#define FAKE_ERROR(cuda, hip, text) {hip, #hip, text},
#define FAKE_ERROR_CUDA(code, text)
#define FAKE_ERROR_HIP(code, text) {code, #code, text},
constexpr ErrorText k_errors[] = {
#include "fake_errors.def"
};
#undef FAKE_ERROR
#undef FAKE_ERROR_CUDA
#undef FAKE_ERROR_HIP
const ErrorText *error_text(hipError_t error)
{
    for (const ErrorText &e : k_errors)
        if (e.code == error)
            return &e;
    return nullptr;
}
const char *unknown_error_name(hipError_t error)
{
    thread_local char name[32];
    snprintf(name, sizeof name, "hipError_%d", static_cast<int>(error));
    return name;
}

// Layouts passed through as they are.
static_assert(sizeof(hipMemLocation) == sizeof(nv::Location) && sizeof(hipMemAccessDesc) == sizeof(nv::AccessDesc),
              "hipMemLocation, hipMemAccessDesc");
static_assert(sizeof(fh_MemcpyAttributes) == sizeof(nv::MemcpyAttributes), "hipMemcpyAttributes");
static_assert(sizeof(fh_PointerAttribute) == sizeof(hipPointerAttribute_t), "hipPointerAttribute_t");
static_assert(hipMemcpyHostToHost == 0 && hipMemcpyDeviceToDevice == 3 && hipMemcpyDefault == 4, "hipMemcpyKind");
static_assert(hipMemPoolAttrReleaseThreshold == 4 && hipMemPoolAttrUsedMemHigh == 8, "hipMemPoolAttr");
static_assert(hipMemHandleTypePosixFileDescriptor == 1 && hipMemLocationTypeDevice == 1, "handle and location types");

// Features a claimed ROCm 5 lacks keep their entry points, as ROCm 5's libamdhip64 does.
#define NEEDS_ROCM6()                                                                                              \
    do {                                                                                                           \
        if (!rocm6())                                                                                              \
            return hipErrorNotSupported;                                                                           \
    } while (0)

} // namespace

// --- Start, versions, errors, devices --------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipInit(unsigned int flags) { return result(nv::hipInit(flags)); }
HIP_OVER_CUDA_EXPORT hipError_t hipRuntimeGetVersion(int *version)
{
    if (version == nullptr)
        return hipErrorInvalidValue;
    *version = claimed_version();
    return hipSuccess;
}
HIP_OVER_CUDA_EXPORT hipError_t hipDriverGetVersion(int *version) { return hipRuntimeGetVersion(version); }
HIP_OVER_CUDA_EXPORT const char *hipGetErrorName(hipError_t error)
{
    const ErrorText *e = error_text(error);
    return e != nullptr ? e->name : unknown_error_name(error);
}
HIP_OVER_CUDA_EXPORT const char *hipGetErrorString(hipError_t error)
{
    const ErrorText *e = error_text(error);
    return e != nullptr ? e->text : "unknown error";
}
HIP_OVER_CUDA_EXPORT hipError_t hipGetDeviceCount(int *count) { return result(nv::hipGetDeviceCount(count)); }
HIP_OVER_CUDA_EXPORT hipError_t hipSetDevice(int device) { return result(nv::hipSetDevice(device)); }
HIP_OVER_CUDA_EXPORT hipError_t hipGetDevice(int *device) { return result(nv::hipGetDevice(device)); }
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attribute, int device)
{
    for (const AttributeRow &row : k_attribute_rows)
        if (row.hip == static_cast<int>(attribute)) {
            if (!rocm6())
                return hipErrorInvalidValue; // ROCm 5's enum ends at MemoryPoolsSupported (88)
            return result(row.driver ? nv::driver_device_attribute(value, row.cuda, device)
                                     : nv::cuda_device_attribute(value, row.cuda, device));
        }
    return result(nv::hipDeviceGetAttribute(value, attribute, device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceGetName(char *name, int length, hipDevice_t device)
{
    return result(nv::hipDeviceGetName(name, length, device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device)
{
    if (uuid == nullptr)
        return hipErrorInvalidValue;
    return result(nv::device_uuid(reinterpret_cast<unsigned char *>(uuid->bytes), device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceGetPCIBusId(char *bus_id, int length, int device)
{
    if (bus_id == nullptr || length <= 0)
        return hipErrorInvalidValue;
    return result(nv::device_pci_bus_id(bus_id, length, device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device)
{
    return result(nv::hipDeviceTotalMem(bytes, device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    return result(nv::hipMemGetInfo(free_bytes, total_bytes));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceSynchronize() { return result(nv::hipDeviceSynchronize()); }
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceCanAccessPeer(int *can_access, int device, int peer)
{
    return result(nv::hipDeviceCanAccessPeer(can_access, device, peer));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    return result(nv::hipDeviceEnablePeerAccess(peer, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceDisablePeerAccess(int peer) { return result(nv::hipDeviceDisablePeerAccess(peer)); }

// --- Memory, copies, fills -------------------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipMalloc(void **ptr, size_t size) { return result(nv::hipMalloc(ptr, size)); }
HIP_OVER_CUDA_EXPORT hipError_t hipFree(void *ptr) { return result(nv::hipFree(ptr)); }
HIP_OVER_CUDA_EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t size, hipMemcpyKind kind)
{
    return result(nv::hipMemcpy(dst, src, size, kind));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size, hipMemcpyKind kind,
                                               hipStream_t stream)
{
    return result(nv::hipMemcpyAsync(dst, src, size, kind, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                                   size_t size, hipStream_t stream)
{
    return result(nv::hipMemcpyPeerAsync(dst, dst_device, src, src_device, size, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemset(void *dst, int value, size_t size) { return result(nv::hipMemset(dst, value, size)); }
HIP_OVER_CUDA_EXPORT hipError_t hipMemsetAsync(void *dst, int value, size_t size, hipStream_t stream)
{
    return result(nv::hipMemsetAsync(dst, value, size, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemGetAddressRange(hipDeviceptr_t *base, size_t *size, hipDeviceptr_t ptr)
{
    return result(nv::hipMemGetAddressRange(base, size, ptr));
}
HIP_OVER_CUDA_EXPORT hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attributes, const void *ptr)
{
    if (attributes == nullptr)
        return hipErrorInvalidValue;
    nv::PointerInfo info{};
    unsigned int host_flags = 0;
    if (hipError_t r = result(nv::pointer_info(&info, ptr, &host_flags)); r != hipSuccess)
        return r;
    for (const MemoryTypeRow &row : k_memory_type_rows)
        if (row.cuda == info.cuda_type) {
            const int type = rocm6() ? row.rocm6 : row.rocm5;
            if (type < 0)
                return hipErrorInvalidValue; // ROCm 5: memory the runtime does not know is an error
            auto *out = reinterpret_cast<fh_PointerAttribute *>(attributes);
            *out = {};
            out->type = type;
            out->device = info.device;
            out->devicePointer = info.device_pointer;
            out->hostPointer = info.host_pointer;
            out->isManaged = info.cuda_type == nv::k_cuda_memory_managed;
            out->allocationFlags = host_flags;
            return hipSuccess;
        }
    return hipErrorInvalidValue;
}

// --- Host memory -----------------------------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
    return result(nv::hipHostMalloc(ptr, size, flags & ~k_host_flags_dropped));
}
HIP_OVER_CUDA_EXPORT hipError_t hipExtHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    return hipHostMalloc(ptr, size, flags);
}
HIP_OVER_CUDA_EXPORT hipError_t hipHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    return hipHostMalloc(ptr, size, flags);
}
HIP_OVER_CUDA_EXPORT hipError_t hipHostFree(void *ptr) { return result(nv::hipHostFree(ptr)); }
HIP_OVER_CUDA_EXPORT hipError_t hipFreeHost(void *ptr) { return result(nv::hipHostFree(ptr)); }
HIP_OVER_CUDA_EXPORT hipError_t hipHostRegister(void *ptr, size_t size, unsigned int flags)
{
    return result(nv::hipHostRegister(ptr, size, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipHostUnregister(void *ptr) { return result(nv::hipHostUnregister(ptr)); }
HIP_OVER_CUDA_EXPORT hipError_t hipHostGetDevicePointer(void **device_ptr, void *host_ptr, unsigned int flags)
{
    return result(nv::hipHostGetDevicePointer(device_ptr, host_ptr, flags));
}

// --- Managed memory --------------------------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags)
{
    return result(nv::hipMallocManaged(ptr, size, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPrefetchAsync(const void *ptr, size_t count, int device, hipStream_t stream)
{
    return result(nv::hipMemPrefetchAsync(ptr, count, device, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemAdvise(const void *ptr, size_t count, hipMemoryAdvise advice, int device)
{
    if (coherence_advice(advice))
        return hipSuccess;
    if (advice < hipMemAdviseSetReadMostly || advice > hipMemAdviseUnsetAccessedBy)
        return hipErrorInvalidValue; // AMD's mapping would make any other value SetReadMostly
    return result(nv::hipMemAdvise(ptr, count, advice, device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipStreamAttachMemAsync(hipStream_t stream, void *ptr, size_t length, unsigned int flags)
{
    return result(nv::hipStreamAttachMemAsync(stream, ptr, length, flags));
}

// --- Streams and events ----------------------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipStreamCreate(hipStream_t *stream)
{
    return result(nv::hipStreamCreate(reinterpret_cast<void **>(stream)));
}
HIP_OVER_CUDA_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) { return result(nv::hipStreamDestroy(stream)); }
HIP_OVER_CUDA_EXPORT hipError_t hipStreamSynchronize(hipStream_t stream) { return result(nv::hipStreamSynchronize(stream)); }
HIP_OVER_CUDA_EXPORT hipError_t hipStreamQuery(hipStream_t stream) { return result(nv::hipStreamQuery(stream)); }
HIP_OVER_CUDA_EXPORT hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags)
{
    return result(nv::hipStreamWaitEvent(stream, event, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device)
{
    return result(nv::stream_get_device(stream, device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipEventCreate(hipEvent_t *event)
{
    return result(nv::hipEventCreate(reinterpret_cast<void **>(event)));
}
HIP_OVER_CUDA_EXPORT hipError_t hipEventDestroy(hipEvent_t event) { return result(nv::hipEventDestroy(event)); }
HIP_OVER_CUDA_EXPORT hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream)
{
    return result(nv::hipEventRecord(event, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipEventSynchronize(hipEvent_t event) { return result(nv::hipEventSynchronize(event)); }
HIP_OVER_CUDA_EXPORT hipError_t hipEventQuery(hipEvent_t event) { return result(nv::hipEventQuery(event)); }
HIP_OVER_CUDA_EXPORT hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop)
{
    return result(nv::hipEventElapsedTime(ms, start, stop));
}

// --- Pools -----------------------------------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *pool, int device)
{
    return result(nv::hipDeviceGetDefaultMemPool(reinterpret_cast<void **>(pool), device));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t *pool, const hipMemPoolProps *props)
{
    if (pool == nullptr || props == nullptr)
        return hipErrorInvalidValue;
    const nv::PoolProps p = pool_props(props);
    return result(nv::pool_create(reinterpret_cast<void **>(pool), &p));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t pool) { return result(nv::hipMemPoolDestroy(pool)); }
HIP_OVER_CUDA_EXPORT hipError_t hipMallocFromPoolAsync(void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream)
{
    return result(nv::hipMallocFromPoolAsync(ptr, size, pool, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipFreeAsync(void *ptr, hipStream_t stream) { return result(nv::hipFreeAsync(ptr, stream)); }
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    return result(nv::hipMemPoolSetAttribute(pool, attr, value));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    return result(nv::hipMemPoolGetAttribute(pool, attr, value));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolTrimTo(hipMemPool_t pool, size_t min_bytes_to_hold)
{
    return result(nv::hipMemPoolTrimTo(pool, min_bytes_to_hold));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *descs, size_t count)
{
    return result(nv::hipMemPoolSetAccess(pool, reinterpret_cast<const nv::AccessDesc *>(descs), count));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolExportToShareableHandle(void *shared_handle, hipMemPool_t pool,
                                                                  hipMemAllocationHandleType handle_type,
                                                                  unsigned int flags)
{
    return result(nv::hipMemPoolExportToShareableHandle(shared_handle, pool, handle_type, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolImportFromShareableHandle(hipMemPool_t *pool, void *shared_handle,
                                                                    hipMemAllocationHandleType handle_type,
                                                                    unsigned int flags)
{
    return result(
        nv::hipMemPoolImportFromShareableHandle(reinterpret_cast<void **>(pool), shared_handle, handle_type, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolExportPointer(hipMemPoolPtrExportData *export_data, void *ptr)
{
    return result(nv::hipMemPoolExportPointer(export_data, ptr));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPoolImportPointer(void **ptr, hipMemPool_t pool,
                                                        hipMemPoolPtrExportData *export_data)
{
    return result(nv::hipMemPoolImportPointer(ptr, pool, export_data));
}

// --- Virtual memory management (ROCm 6 layouts) ----------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipMemGetAllocationGranularity(size_t *granularity, const hipMemAllocationProp *prop,
                                                               hipMemAllocationGranularity_flags option)
{
    NEEDS_ROCM6();
    if (granularity == nullptr || prop == nullptr)
        return hipErrorInvalidValue;
    const nv::AllocationProp p = allocation_prop(prop);
    return result(nv::vmm_granularity(granularity, &p, option));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                                             const hipMemAllocationProp *prop, unsigned long long flags)
{
    NEEDS_ROCM6();
    if (handle == nullptr || prop == nullptr)
        return hipErrorInvalidValue;
    const nv::AllocationProp p = allocation_prop(prop);
    uint64_t h = 0;
    const hipError_t r = result(nv::vmm_create(&h, size, &p, flags));
    if (r == hipSuccess)
        *handle = handle_of(h);
    return r;
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle)
{
    NEEDS_ROCM6();
    return result(nv::vmm_release(handle_value(handle)));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemRetainAllocationHandle(hipMemGenericAllocationHandle_t *handle, void *addr)
{
    NEEDS_ROCM6();
    if (handle == nullptr)
        return hipErrorInvalidValue;
    uint64_t h = 0;
    const hipError_t r = result(nv::vmm_retain(&h, addr));
    if (r == hipSuccess)
        *handle = handle_of(h);
    return r;
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                                     unsigned long long flags)
{
    NEEDS_ROCM6();
    return result(nv::vmm_reserve(ptr, size, alignment, addr, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemAddressFree(void *ptr, size_t size)
{
    NEEDS_ROCM6();
    return result(nv::vmm_free(ptr, size));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                                          unsigned long long flags)
{
    NEEDS_ROCM6();
    return result(nv::vmm_map(ptr, size, offset, handle_value(handle), flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemUnmap(void *ptr, size_t size)
{
    NEEDS_ROCM6();
    return result(nv::vmm_unmap(ptr, size));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *descs, size_t count)
{
    NEEDS_ROCM6();
    return result(nv::vmm_set_access(ptr, size, reinterpret_cast<const nv::AccessDesc *>(descs), count));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemExportToShareableHandle(void *shared_handle, hipMemGenericAllocationHandle_t handle,
                                                              hipMemAllocationHandleType handle_type,
                                                              unsigned long long flags)
{
    NEEDS_ROCM6();
    return result(nv::vmm_export(shared_handle, handle_value(handle), handle_type, flags));
}
// HIP 7.0 (absent from the ROCm 5 and 6 headers): a dma-buf of device memory.
HIP_OVER_CUDA_EXPORT hipError_t hipMemGetHandleForAddressRange(void *handle, void *ptr, size_t size, int handle_type,
                                                               unsigned long long flags)
{
    return result(nv::range_handle(handle, ptr, size, handle_type, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemImportFromShareableHandle(hipMemGenericAllocationHandle_t *handle, void *os_handle,
                                                                hipMemAllocationHandleType handle_type)
{
    NEEDS_ROCM6();
    if (handle == nullptr)
        return hipErrorInvalidValue;
    uint64_t h = 0;
    const hipError_t r = result(nv::vmm_import(&h, os_handle, handle_type));
    if (r == hipSuccess)
        *handle = handle_of(h);
    return r;
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemGetAllocationPropertiesFromHandle(hipMemAllocationProp *prop,
                                                                        hipMemGenericAllocationHandle_t handle)
{
    NEEDS_ROCM6();
    if (prop == nullptr)
        return hipErrorInvalidValue;
    nv::AllocationProp p{};
    const hipError_t r = result(nv::vmm_properties(&p, handle_value(handle)));
    if (r != hipSuccess)
        return r;
    auto &out = *reinterpret_cast<fh_MemAllocationProp *>(prop);
    out = {};
    out.type = static_cast<hipMemAllocationType>(p.type);
    out.requestedHandleType = static_cast<hipMemAllocationHandleType>(p.handle_types);
    out.location.type = static_cast<hipMemLocationType>(p.location.type);
    out.location.id = p.location.id;
    out.win32HandleMetaData = p.win32_metadata;
    out.allocFlags.compressionType = p.compression;
    out.allocFlags.gpuDirectRDMACapable = p.rdma_capable;
    out.allocFlags.usage = p.usage;
    return hipSuccess;
}

// --- Batched calls (HIP 7.1) ------------------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                                                    fh_MemcpyAttributes *attrs, size_t *attrs_idxs, size_t num_attrs,
                                                    size_t *fail_idx, hipStream_t stream)
{
    if (claimed_version() < fh_batch_runtime)
        return hipErrorNotSupported;
    (void)fail_idx; // CUDA 13 does not say which copy failed: the caller's value stays
    return result(nv::memcpy_batch(dsts, srcs, sizes, count, reinterpret_cast<nv::MemcpyAttributes *>(attrs),
                                   attrs_idxs, num_attrs, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemPrefetchBatchAsync(void **ptrs, size_t *sizes, size_t count,
                                                         hipMemLocation *locations, size_t *location_idxs,
                                                         size_t num_locations, unsigned long long flags,
                                                         hipStream_t stream)
{
    if (claimed_version() < fh_batch_runtime)
        return hipErrorNotSupported;
    return result(nv::prefetch_batch(ptrs, sizes, count, reinterpret_cast<nv::Location *>(locations), location_idxs,
                                     num_locations, flags, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemDiscardBatchAsync(void **ptrs, size_t *sizes, size_t count,
                                                        unsigned long long flags, hipStream_t stream)
{
    if (claimed_version() < fh_batch_runtime)
        return hipErrorNotSupported;
    return result(nv::discard_batch(ptrs, sizes, count, flags, stream));
}

// --- Stream capture and user objects ----------------------------------------------------------

HIP_OVER_CUDA_EXPORT hipError_t hipStreamGetCaptureInfo_v2(hipStream_t stream, hipStreamCaptureStatus *status,
                                                           unsigned long long *id, hipGraph_t *graph,
                                                           const hipGraphNode_t **dependencies, size_t *count)
{
    int s = hipStreamCaptureStatusNone;
    const hipError_t r =
        result(nv::capture_info(stream, &s, id, reinterpret_cast<void **>(graph), dependencies, count));
    if (status != nullptr)
        *status = static_cast<hipStreamCaptureStatus>(s);
    return r;
}
HIP_OVER_CUDA_EXPORT hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode)
{
    if (mode == nullptr)
        return hipErrorInvalidValue;
    int m = *mode;
    const hipError_t r = result(nv::exchange_capture_mode(&m));
    *mode = static_cast<hipStreamCaptureMode>(m);
    return r;
}
HIP_OVER_CUDA_EXPORT hipError_t hipUserObjectCreate(fh_UserObject_t *object, void *data, void (*destroy)(void *),
                                                    unsigned int refcount, unsigned int flags)
{
    return result(nv::user_object_create(reinterpret_cast<void **>(object), data, destroy, refcount, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipUserObjectRelease(fh_UserObject_t object, unsigned int count)
{
    return result(nv::user_object_release(object, count));
}
HIP_OVER_CUDA_EXPORT hipError_t hipGraphRetainUserObject(hipGraph_t graph, fh_UserObject_t object, unsigned int count,
                                                         unsigned int flags)
{
    return result(nv::graph_retain_user_object(graph, object, count, flags));
}
static_assert(hipStreamCaptureModeRelaxed == 2 && hipStreamCaptureStatusInvalidated == 2, "capture modes and statuses");

// --- Streams and events as programs create them, rows and boxes (gpumem 0.5; table row 12) ---

HIP_OVER_CUDA_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags)
{
    return result(nv::stream_create_with_flags(reinterpret_cast<void **>(stream), flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipStreamCreateWithPriority(hipStream_t *stream, unsigned int flags, int priority)
{
    return result(nv::stream_create_with_priority(reinterpret_cast<void **>(stream), flags, priority));
}
HIP_OVER_CUDA_EXPORT hipError_t hipStreamGetPriority(hipStream_t stream, int *priority)
{
    return result(nv::stream_get_priority(stream, priority));
}
HIP_OVER_CUDA_EXPORT hipError_t hipStreamGetFlags(hipStream_t stream, unsigned int *flags)
{
    return result(nv::stream_get_flags(stream, flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    return result(nv::priority_range(leastPriority, greatestPriority));
}
HIP_OVER_CUDA_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned flags)
{
    return result(nv::event_create_with_flags(reinterpret_cast<void **>(event), flags));
}
HIP_OVER_CUDA_EXPORT hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void *userData)
{
    return result(nv::launch_host_func(stream, fn, userData));
}
HIP_OVER_CUDA_EXPORT hipError_t hipIpcGetEventHandle(hipIpcEventHandle_t *handle, hipEvent_t event)
{
    static_assert(sizeof(hipIpcEventHandle_t) == 64, "hipIpcEventHandle_t");
    if (handle == nullptr)
        return hipErrorInvalidValue;
    return result(nv::ipc_get_event_handle(handle, event));
}
HIP_OVER_CUDA_EXPORT hipError_t hipIpcOpenEventHandle(hipEvent_t *event, hipIpcEventHandle_t handle)
{
    return result(nv::ipc_open_event_handle(reinterpret_cast<void **>(event), &handle));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
    return result(nv::malloc_pitch(ptr, pitch, width, height));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                                 size_t height, hipMemcpyKind kind, hipStream_t stream)
{
    return result(nv::memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemcpy3DAsync(const hipMemcpy3DParms *p, hipStream_t stream)
{
    if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr)
        return hipErrorInvalidValue; // (arrays: gpumem never passes one)
    nv::Box box{};
    box.src = static_cast<const char *>(p->srcPtr.ptr) + (p->srcPos.z * p->srcPtr.ysize + p->srcPos.y) * p->srcPtr.pitch +
              p->srcPos.x;
    box.src_pitch = p->srcPtr.pitch;
    box.src_rows = p->srcPtr.ysize;
    box.dst = static_cast<char *>(p->dstPtr.ptr) + (p->dstPos.z * p->dstPtr.ysize + p->dstPos.y) * p->dstPtr.pitch +
              p->dstPos.x;
    box.dst_pitch = p->dstPtr.pitch;
    box.dst_rows = p->dstPtr.ysize;
    box.width = p->extent.width;
    box.height = p->extent.height;
    box.depth = p->extent.depth;
    box.kind = p->kind;
    return result(nv::memcpy_3d_async(&box, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemset2DAsync(void *dst, size_t pitch, int value, size_t width, size_t height,
                                                 hipStream_t stream)
{
    return result(nv::memset_2d_async(dst, pitch, value, width, height, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemsetD16Async(hipDeviceptr_t dest, unsigned short value, size_t count,
                                                  hipStream_t stream)
{
    return result(nv::memset_d16_async(dest, value, count, stream));
}
HIP_OVER_CUDA_EXPORT hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream)
{
    return result(nv::memset_d32_async(dst, static_cast<unsigned int>(value), count, stream));
}
