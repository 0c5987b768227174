// The HIP runtime's types and the prototypes of every entry point gpumem uses
// (hip_symbols.def), declared by gpumem so that one build works with the HIP
// runtimes of ROCm 5, 6 and 7 alike.
//
// The types come from <hip/hip_runtime_api.h> (Debian's ROCm 5.2 headers, or
// a ROCm install) where their layout and values are the same in every ROCm
// gpumem supports: hipError_t, hipStream_t, hipEvent_t, hipMemPool_t,
// hipMemLocation, hipMemAccessDesc, hipMemPoolProps (gpumem never sets the
// maxSize that ROCm 6 carved out of its reserved bytes), hipMemPoolPtrExportData,
// hipMemGenericAllocationHandle_t, hipDeviceAttribute_t (the values gpumem
// reads are checked below).  Where a type changed between ROCm versions, or
// the ROCm 5.2 header lacks it, gpumem declares its own here, with the value
// or layout of ROCm 6 and a note on what changed:
//   - hipMemAllocationProp: ROCm 5.2 orders its fields compressionType,
//     location, requestedHandleType, type, usage, win32HandleMetaData; ROCm 6
//     uses CUDA's order (type, requestedHandleType(s), location,
//     win32HandleMetaData, allocFlags).  gpumem uses VMM only on ROCm 6 runtimes
//     and passes MemAllocationProp6.
//   - hipMemoryType (hipPointerAttribute_t's first field): ROCm 5 Host 0,
//     Device 1, Array 2, Unified 3 (and unregistered memory is an error);
//     ROCm 6 Unregistered 0, Host 1, Device 2, Managed 3, Array 10, Unified 11.
//     gpumem reads it only to recognise unregistered host memory, by version.
//   - hipDeviceAttribute_t: VirtualMemoryManagementSupported (89),
//     HostRegisterSupported (90) and MemoryPoolSupportedHandleTypes (91) are
//     ROCm 6 additions after MemoryPoolsSupported (88).
//   - host allocation: hipHostMalloc/hipHostFree (ROCm 5, 6; deprecated in 7),
//     hipExtHostAlloc (ROCm 6.x+), hipHostAlloc/hipFreeHost (old spellings).
//   - hipHostRegisterReadOnly (ROCm 6) is 0x8, the same bit as
//     hipExtHostRegisterCoarseGrained: gpumem never passes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include <hip/hip_runtime_api.h>

namespace gpumem::detail::hip {

// hipRuntimeGetVersion: major * 10000000 + minor * 100000 + patch
// (HIP_VERSION), e.g. 50221153 for ROCm 5.2, 60032831 for ROCm 6.0.
constexpr int k_rocm6_runtime = 60000000;

// --- Values the ROCm 5.2 header lacks or that changed -------------------------

// Device attributes, by value (hipDeviceAttribute_t).  The CUDA-compatible
// block is append-only, so a value stays valid across versions.
constexpr int k_attr_concurrent_managed = 9;  // hipDeviceAttributeConcurrentManagedAccess
constexpr int k_attr_managed_memory = 24;     // hipDeviceAttributeManagedMemory
constexpr int k_attr_pageable_access = 65;    // hipDeviceAttributePageableMemoryAccess
constexpr int k_attr_pools_supported = 88;    // hipDeviceAttributeMemoryPoolsSupported
constexpr int k_attr_vmm_supported = 89;      // hipDeviceAttributeVirtualMemoryManagementSupported (ROCm 6)
constexpr int k_attr_host_register = 90;      // hipDeviceAttributeHostRegisterSupported (ROCm 6)
constexpr int k_attr_pool_handle_types = 91;  // hipDeviceAttributeMemoryPoolSupportedHandleTypes (ROCm 6)

static_assert(hipDeviceAttributeConcurrentManagedAccess == k_attr_concurrent_managed, "HIP attribute moved");
static_assert(hipDeviceAttributeManagedMemory == k_attr_managed_memory, "HIP attribute moved");
static_assert(hipDeviceAttributePageableMemoryAccess == k_attr_pageable_access, "HIP attribute moved");
static_assert(hipDeviceAttributeMemoryPoolsSupported == k_attr_pools_supported, "HIP attribute moved");
#if HIP_VERSION_MAJOR >= 6
static_assert(hipDeviceAttributeVirtualMemoryManagementSupported == k_attr_vmm_supported, "HIP attribute moved");
static_assert(hipDeviceAttributeHostRegisterSupported == k_attr_host_register, "HIP attribute moved");
static_assert(hipDeviceAttributeMemoryPoolSupportedHandleTypes == k_attr_pool_handle_types, "HIP attribute moved");
#endif

// hipMemRangeHandleTypeDmaBufFd (HIP 7.0+; the value of CUDA's CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD).
constexpr int k_range_handle_dmabuf_fd = 0x1;

// hipMemoryType values gpumem reads (see above).
constexpr int k_memory_type_unregistered_rocm6 = 0; // hipMemoryTypeUnregistered, ROCm 6+

// Host allocation and registration flags: the same values in every ROCm.
constexpr unsigned int k_host_portable = 0x1;            // hipHostMallocPortable / hipHostAllocPortable
constexpr unsigned int k_host_mapped = 0x2;              // hipHostMallocMapped / hipHostAllocMapped
constexpr unsigned int k_host_write_combined = 0x4;      // hipHostMallocWriteCombined
constexpr unsigned int k_host_coherent = 0x40000000u;    // hipHostMallocCoherent (hipHostMalloc, hipExtHostAlloc)
constexpr unsigned int k_host_noncoherent = 0x80000000u; // hipHostMallocNonCoherent
constexpr unsigned int k_register_portable = 0x1;        // hipHostRegisterPortable
constexpr unsigned int k_register_mapped = 0x2;          // hipHostRegisterMapped
static_assert(hipHostMallocPortable == k_host_portable && hipHostMallocMapped == k_host_mapped &&
                  hipHostMallocWriteCombined == k_host_write_combined && hipHostMallocCoherent == k_host_coherent &&
                  hipHostMallocNonCoherent == k_host_noncoherent,
              "HIP host allocation flags moved");
static_assert(hipHostRegisterPortable == k_register_portable && hipHostRegisterMapped == k_register_mapped,
              "HIP host registration flags moved");

// hipMemAdvise's AMD coherence advice (ROCm 5 and 6).
static_assert(hipMemAdviseSetCoarseGrain == 100 && hipMemAdviseUnsetCoarseGrain == 101, "HIP advice moved");

// hipMemPoolPtrExportData travels through gpumem_pool_ptr_export_data_t unchanged.
static_assert(sizeof(hipMemPoolPtrExportData) == 64, "hipMemPoolPtrExportData is 64 bytes");

// hipPointerAttribute_t: the same layout in ROCm 5 and 6 (the first field is
// named memoryType in 5, type in 6, and its values differ: see above).
struct PointerAttributes {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned allocationFlags;
};
static_assert(sizeof(PointerAttributes) == sizeof(hipPointerAttribute_t), "hipPointerAttribute_t layout");

// hipMemAllocationProp as ROCm 6 lays it out (CUDA's CUmemAllocationProp
// without its trailing reserved bytes).
struct MemAllocationProp6 {
    int type;                 // hipMemAllocationType (Pinned = 1)
    int requestedHandleTypes; // hipMemAllocationHandleType (PosixFileDescriptor = 1)
    hipMemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
    } allocFlags;
};

// --- Prototypes ----------------------------------------------------------------
//
// The batched calls (HIP 7.1; the ROCm 5.2 header has none of this).
// gpumem uses them only from this runtime version on.
constexpr int k_batch_runtime = 70100000;
// hipMemcpyAttributes as HIP 7.1 declares it (CUDA's CUmemcpyAttributes).
struct MemcpyAttributes {
    int srcAccessOrder; // hipMemcpySrcAccessOrder
    hipMemLocation srcLocHint;
    hipMemLocation dstLocHint;
    unsigned int flags;
};
constexpr int k_src_access_order_stream = 1;   // hipMemcpySrcAccessOrderStream
constexpr int k_location_type_device = 1;      // hipMemLocationTypeDevice
constexpr int k_location_type_host = 2;        // hipMemLocationTypeHost (ROCm 6)

// One function type per entry of hip_symbols.def, named after it.  The VMM
// entries that take a hipMemAllocationProp take it as `const void *`: the
// layout depends on the runtime's version.
namespace sig {
using hipInit = hipError_t(unsigned int flags);
using hipDriverGetVersion = hipError_t(int *version);
using hipRuntimeGetVersion = hipError_t(int *version);
using hipGetErrorName = const char *(hipError_t error);
using hipGetErrorString = const char *(hipError_t error);
using hipGetDeviceCount = hipError_t(int *count);
using hipSetDevice = hipError_t(int device);
using hipGetDevice = hipError_t(int *device);
using hipDeviceGetAttribute = hipError_t(int *value, int attribute, int device);
using hipDeviceGetName = hipError_t(char *name, int length, int device);
using hipDeviceGetUuid = hipError_t(hipUUID *uuid, int device);
using hipDeviceGetPCIBusId = hipError_t(char *bus_id, int length, int device);
using hipDeviceTotalMem = hipError_t(size_t *bytes, int device);
using hipMemGetInfo = hipError_t(size_t *free_bytes, size_t *total_bytes);
using hipDeviceSynchronize = hipError_t();
using hipMalloc = hipError_t(void **ptr, size_t size);
using hipFree = hipError_t(void *ptr);
using hipMemcpy = hipError_t(void *dst, const void *src, size_t size, hipMemcpyKind kind);
using hipMemcpyAsync = hipError_t(void *dst, const void *src, size_t size, hipMemcpyKind kind, hipStream_t stream);
using hipMemset = hipError_t(void *dst, int value, size_t size);
using hipMemsetAsync = hipError_t(void *dst, int value, size_t size, hipStream_t stream);
using hipHostGetDevicePointer = hipError_t(void **device_ptr, void *host_ptr, unsigned int flags);
using hipStreamCreate = hipError_t(hipStream_t *stream);
using hipStreamDestroy = hipError_t(hipStream_t stream);
using hipStreamSynchronize = hipError_t(hipStream_t stream);
using hipStreamQuery = hipError_t(hipStream_t stream);
using hipStreamWaitEvent = hipError_t(hipStream_t stream, hipEvent_t event, unsigned int flags);
using hipEventCreate = hipError_t(hipEvent_t *event);
using hipEventDestroy = hipError_t(hipEvent_t event);
using hipEventRecord = hipError_t(hipEvent_t event, hipStream_t stream);
using hipEventSynchronize = hipError_t(hipEvent_t event);
using hipEventQuery = hipError_t(hipEvent_t event);
using hipEventElapsedTime = hipError_t(float *ms, hipEvent_t start, hipEvent_t stop);

using hipHostMalloc = hipError_t(void **ptr, size_t size, unsigned int flags);
using hipExtHostAlloc = hipError_t(void **ptr, size_t size, unsigned int flags);
using hipHostAlloc = hipError_t(void **ptr, size_t size, unsigned int flags);
using hipHostFree = hipError_t(void *ptr);
using hipFreeHost = hipError_t(void *ptr);
using hipHostRegister = hipError_t(void *ptr, size_t size, unsigned int flags);
using hipHostUnregister = hipError_t(void *ptr);
using hipPointerGetAttributes = hipError_t(PointerAttributes *attributes, const void *ptr);
using hipMemGetAddressRange = hipError_t(void **base, size_t *size, void *ptr);
using hipStreamGetDevice = hipError_t(hipStream_t stream, int *device);
using hipMemcpyPeerAsync = hipError_t(void *dst, int dst_device, const void *src, int src_device, size_t size,
                                     hipStream_t stream);

using hipMallocManaged = hipError_t(void **ptr, size_t size, unsigned int flags);
using hipMemPrefetchAsync = hipError_t(const void *ptr, size_t count, int device, hipStream_t stream);
using hipMemAdvise = hipError_t(const void *ptr, size_t count, int advice, int device);
using hipStreamAttachMemAsync = hipError_t(hipStream_t stream, void *ptr, size_t length, unsigned int flags);

using hipDeviceGetDefaultMemPool = hipError_t(hipMemPool_t *pool, int device);
using hipMemPoolCreate = hipError_t(hipMemPool_t *pool, const hipMemPoolProps *props);
using hipMemPoolDestroy = hipError_t(hipMemPool_t pool);
using hipMallocFromPoolAsync = hipError_t(void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream);
using hipFreeAsync = hipError_t(void *ptr, hipStream_t stream);
using hipMemPoolSetAttribute = hipError_t(hipMemPool_t pool, int attr, void *value);
using hipMemPoolGetAttribute = hipError_t(hipMemPool_t pool, int attr, void *value);
using hipMemPoolTrimTo = hipError_t(hipMemPool_t pool, size_t min_bytes_to_hold);
using hipMemPoolSetAccess = hipError_t(hipMemPool_t pool, const hipMemAccessDesc *descs, size_t count);
using hipMemPoolExportToShareableHandle = hipError_t(void *shared_handle, hipMemPool_t pool, int handle_type,
                                                     unsigned int flags);
using hipMemPoolImportFromShareableHandle = hipError_t(hipMemPool_t *pool, void *shared_handle, int handle_type,
                                                       unsigned int flags);
using hipMemPoolExportPointer = hipError_t(hipMemPoolPtrExportData *data, void *ptr);
using hipMemPoolImportPointer = hipError_t(void **ptr, hipMemPool_t pool, hipMemPoolPtrExportData *data);

using hipMemGetAllocationGranularity = hipError_t(size_t *granularity, const void *prop, int option);
using hipMemCreate = hipError_t(hipMemGenericAllocationHandle_t *handle, size_t size, const void *prop,
                                unsigned long long flags);
using hipMemRelease = hipError_t(hipMemGenericAllocationHandle_t handle);
using hipMemAddressReserve = hipError_t(void **ptr, size_t size, size_t alignment, void *addr,
                                        unsigned long long flags);
using hipMemAddressFree = hipError_t(void *ptr, size_t size);
using hipMemMap = hipError_t(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                             unsigned long long flags);
using hipMemUnmap = hipError_t(void *ptr, size_t size);
using hipMemSetAccess = hipError_t(void *ptr, size_t size, const hipMemAccessDesc *descs, size_t count);
using hipMemExportToShareableHandle = hipError_t(void *shared_handle, hipMemGenericAllocationHandle_t handle,
                                                 int handle_type, unsigned long long flags);
using hipMemImportFromShareableHandle = hipError_t(hipMemGenericAllocationHandle_t *handle, void *os_handle,
                                                   int handle_type);
using hipMemGetAllocationPropertiesFromHandle = hipError_t(void *prop, hipMemGenericAllocationHandle_t handle);
using hipMemRetainAllocationHandle = hipError_t(hipMemGenericAllocationHandle_t *handle, void *addr);
// HIP 7.0+ (absent from the ROCm 5 and 6 headers): handle_type is a hipMemRangeHandleType.
using hipMemGetHandleForAddressRange = hipError_t(void *handle, void *ptr, size_t size, int handle_type,
                                                  unsigned long long flags);

using hipDeviceCanAccessPeer = hipError_t(int *can_access, int device, int peer);
using hipDeviceEnablePeerAccess = hipError_t(int peer, unsigned int flags);
using hipDeviceDisablePeerAccess = hipError_t(int peer);

using hipMemcpyBatchAsync = hipError_t(void **dsts, void **srcs, size_t *sizes, size_t count, MemcpyAttributes *attrs,
                                       size_t *attrs_idxs, size_t num_attrs, size_t *fail_idx, hipStream_t stream);
using hipMemPrefetchBatchAsync = hipError_t(void **ptrs, size_t *sizes, size_t count, hipMemLocation *locations,
                                            size_t *location_idxs, size_t num_locations, unsigned long long flags,
                                            hipStream_t stream);
using hipMemDiscardBatchAsync = hipError_t(void **ptrs, size_t *sizes, size_t count, unsigned long long flags,
                                           hipStream_t stream);

// Stream capture (hipGraph_t, hipStreamCaptureStatus and hipStreamCaptureMode
// are in every ROCm gpumem supports; user objects came after ROCm 5.2, whose
// header lacks them: declared here as ROCm 6 has them).
using hipStreamGetCaptureInfo_v2 = hipError_t(hipStream_t stream, hipStreamCaptureStatus *status,
                                              unsigned long long *id, hipGraph_t *graph,
                                              const hipGraphNode_t **dependencies, size_t *count);
using hipThreadExchangeStreamCaptureMode = hipError_t(hipStreamCaptureMode *mode);
using hipUserObjectCreate = hipError_t(void **object, void *data, void (*destroy)(void *), unsigned int refcount,
                                       unsigned int flags);
using hipUserObjectRelease = hipError_t(void *object, unsigned int count);
using hipGraphRetainUserObject = hipError_t(hipGraph_t graph, void *object, unsigned int count, unsigned int flags);

// Streams and events as programs create them, host functions, IPC events, rows and boxes (0.5;
// all in ROCm 5.2's header, with these types: hipIpcEventHandle_t is 64 bytes, hipMemcpy3DParms
// of linear memory names positions in bytes).
using hipStreamCreateWithPriority = hipError_t(hipStream_t *stream, unsigned int flags, int priority);
using hipStreamGetPriority = hipError_t(hipStream_t stream, int *priority);
using hipStreamGetFlags = hipError_t(hipStream_t stream, unsigned int *flags);
using hipDeviceGetStreamPriorityRange = hipError_t(int *least, int *greatest);
using hipStreamCreateWithFlags = hipError_t(hipStream_t *stream, unsigned int flags);
using hipEventCreateWithFlags = hipError_t(hipEvent_t *event, unsigned int flags);
using hipLaunchHostFunc = hipError_t(hipStream_t stream, void (*fn)(void *), void *user);
using hipIpcGetEventHandle = hipError_t(hipIpcEventHandle_t *handle, hipEvent_t event);
using hipIpcOpenEventHandle = hipError_t(hipEvent_t *event, hipIpcEventHandle_t handle);
using hipMallocPitch = hipError_t(void **ptr, size_t *pitch, size_t width, size_t height);
using hipMemcpy2DAsync = hipError_t(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                    size_t height, hipMemcpyKind kind, hipStream_t stream);
using hipMemcpy3DAsync = hipError_t(const hipMemcpy3DParms *params, hipStream_t stream);
using hipMemset2DAsync = hipError_t(void *dst, size_t pitch, int value, size_t width, size_t height,
                                    hipStream_t stream);
using hipMemsetD16Async = hipError_t(void *dst, unsigned short value, size_t count, hipStream_t stream);
using hipMemsetD32Async = hipError_t(void *dst, int value, size_t count, hipStream_t stream);
} // namespace sig

static_assert(sizeof(hipIpcEventHandle_t) == 64, "hipIpcEventHandle_t is 64 bytes");

// User objects' flags (ROCm 6's hipUserObjectNoDestructorSync, hipGraphUserObjectMove).
constexpr unsigned int k_user_object_no_destructor_sync = 0x1;
constexpr unsigned int k_graph_user_object_move = 0x1;

} // namespace gpumem::detail::hip
