// The narrow interface between the two halves of libhipovercuda (see hip_over_cuda.cpp).
//
// nvidia_side.cpp is compiled on HIP's NVIDIA platform (__HIP_PLATFORM_NVIDIA__): there each
// hip* call is AMD's inline wrapper over the CUDA runtime, and HIP's types are CUDA's.
// hip_over_cuda.cpp is compiled on HIP's AMD platform, as gpumem's HIP backend and the fake
// HIP runtime are: there HIP's types are the AMD ABI the library exports.  The two halves
// cannot share a translation unit (each platform defines hipMalloc & co. its own way), so
// they meet here, in types both understand: results are hipError_t values as ints (one enum
// on both platforms), handles are void *, enums are ints, and the few structures are spelled
// out below with their layout checked against CUDA's on one side and AMD's on the other.
//
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>

namespace hipovercuda::nv {

// hipMemLocation / cudaMemLocation and hipMemAccessDesc / cudaMemAccessDesc: the same layout on
// both platforms (checked on each side), so arrays of them pass through as they are.
struct Location {
    int type; // 1 device, 2 host (HIP and CUDA agree)
    int id;
};
struct AccessDesc {
    Location location;
    int flags; // 0 none, 1 read, 3 read-write (HIP and CUDA agree)
};
// hipMemcpyAttributes (HIP 7.1) / cudaMemcpyAttributes: the same layout too.
struct MemcpyAttributes {
    int src_access_order;
    Location src_location_hint;
    Location dst_location_hint;
    unsigned int flags;
};

// What cudaPointerGetAttributes says, before the AMD side renumbers it.
struct PointerInfo {
    int cuda_type; // cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed
    int device;
    void *device_pointer;
    void *host_pointer;
};
constexpr int k_cuda_memory_unregistered = 0, k_cuda_memory_host = 1, k_cuda_memory_device = 2,
              k_cuda_memory_managed = 3;

// A VMM allocation's properties, field by field: ROCm 6's hipMemAllocationProp and CUDA's
// CUmemAllocationProp order these the same but differ in size (CUDA keeps reserved bytes).
struct AllocationProp {
    int type;         // 1 pinned
    int handle_types; // 0 none, 1 POSIX file descriptor
    Location location;
    void *win32_metadata;
    unsigned char compression;
    unsigned char rdma_capable;
    unsigned short usage;
};

// A pool's properties (hipMemPoolProps / cudaMemPoolProps), field by field.
struct PoolProps {
    int alloc_type;
    int handle_types;
    Location location;
    void *win32_security_attributes;
    size_t max_size;
};

// CUDA's numbers for the device attributes the AMD side translates itself (checked on the
// NVIDIA side against cudaDeviceAttr and CUdevice_attribute).
constexpr int k_cuda_attr_host_register_supported = 99;        // cudaDevAttrHostRegisterSupported
constexpr int k_cuda_attr_memory_pools_supported = 115;        // cudaDevAttrMemoryPoolsSupported
constexpr int k_cuda_attr_pool_supported_handle_types = 119;   // cudaDevAttrMemoryPoolSupportedHandleTypes
constexpr int k_cu_attr_vmm_supported = 102;                   // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED

// Through AMD's mapping (nvidia_detail/nvidia_hip_runtime_api.h), unchanged.
int hipInit(unsigned int flags);
int cuda_versions(int *runtime, int *driver);
int hipGetDeviceCount(int *count);
int hipSetDevice(int device);
int hipGetDevice(int *device);
int hipDeviceGetAttribute(int *value, int hip_attribute, int device);
int hipDeviceGetName(char *name, int length, int device);
int hipDeviceTotalMem(size_t *bytes, int device);
int hipMemGetInfo(size_t *free_bytes, size_t *total_bytes);
int hipDeviceSynchronize();
int hipMalloc(void **ptr, size_t size);
int hipFree(void *ptr);
int hipMemcpy(void *dst, const void *src, size_t size, int kind);
int hipMemcpyAsync(void *dst, const void *src, size_t size, int kind, void *stream);
int hipMemset(void *dst, int value, size_t size);
int hipMemsetAsync(void *dst, int value, size_t size, void *stream);
int hipHostGetDevicePointer(void **device_ptr, void *host_ptr, unsigned int flags);
int hipStreamCreate(void **stream);
int hipStreamDestroy(void *stream);
int hipStreamSynchronize(void *stream);
int hipStreamQuery(void *stream);
int hipStreamWaitEvent(void *stream, void *event, unsigned int flags);
int hipEventCreate(void **event);
int hipEventDestroy(void *event);
int hipEventRecord(void *event, void *stream);
int hipEventSynchronize(void *event);
int hipEventQuery(void *event);
int hipEventElapsedTime(float *ms, void *start, void *stop);
int hipHostMalloc(void **ptr, size_t size, unsigned int cuda_flags);
int hipHostFree(void *ptr);
int hipHostRegister(void *ptr, size_t size, unsigned int flags);
int hipHostUnregister(void *ptr);
int hipMemGetAddressRange(void **base, size_t *size, void *ptr);
int hipMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t size, void *stream);
int hipMallocManaged(void **ptr, size_t size, unsigned int flags);
int hipMemPrefetchAsync(const void *ptr, size_t count, int device, void *stream);
int hipMemAdvise(const void *ptr, size_t count, int advice, int device);
int hipStreamAttachMemAsync(void *stream, void *ptr, size_t length, unsigned int flags);
int hipDeviceGetDefaultMemPool(void **pool, int device);
int hipMemPoolDestroy(void *pool);
int hipMallocFromPoolAsync(void **ptr, size_t size, void *pool, void *stream);
int hipFreeAsync(void *ptr, void *stream);
int hipMemPoolSetAttribute(void *pool, int attr, void *value);
int hipMemPoolGetAttribute(void *pool, int attr, void *value);
int hipMemPoolTrimTo(void *pool, size_t min_bytes_to_hold);
int hipMemPoolSetAccess(void *pool, const AccessDesc *descs, size_t count);
int hipMemPoolExportToShareableHandle(void *shared_handle, void *pool, int handle_type, unsigned int flags);
int hipMemPoolImportFromShareableHandle(void **pool, void *shared_handle, int handle_type, unsigned int flags);
int hipMemPoolExportPointer(void *export_data, void *ptr);
int hipMemPoolImportPointer(void **ptr, void *pool, void *export_data);
int hipDeviceCanAccessPeer(int *can_access, int device, int peer);
int hipDeviceEnablePeerAccess(int peer, unsigned int flags);
int hipDeviceDisablePeerAccess(int peer);

// Written here over CUDA: AMD's mapping lacks the call, or its wrapper does not build or
// translate correctly on CUDA 13 (hip_over_cuda.cpp's table says which and why).
int cuda_device_attribute(int *value, int cuda_attribute, int device);
int driver_device_attribute(int *value, int cu_attribute, int device);
// The device's 16-byte UUID (cuDeviceGetUuid: AMD's mapping has no hipDeviceGetUuid).
int device_uuid(unsigned char bytes[16], int device);
// The device's PCI address (cuDeviceGetPCIBusId) and the allocation mapped at an address
// (cuMemRetainAllocationHandle).
int device_pci_bus_id(char *bus_id, int length, int device);
int vmm_retain(uint64_t *handle, void *ptr);
// host_flags: the flags pinned host memory was allocated or registered with (else 0).
int pointer_info(PointerInfo *info, const void *ptr, unsigned int *host_flags);
int stream_get_device(void *stream, int *device);
int pool_create(void **pool, const PoolProps *props);
int vmm_granularity(size_t *granularity, const AllocationProp *prop, int option);
int vmm_create(uint64_t *handle, size_t size, const AllocationProp *prop, unsigned long long flags);
int vmm_release(uint64_t handle);
int vmm_reserve(void **ptr, size_t size, size_t alignment, void *addr, unsigned long long flags);
int vmm_free(void *ptr, size_t size);
int vmm_map(void *ptr, size_t size, size_t offset, uint64_t handle, unsigned long long flags);
int vmm_unmap(void *ptr, size_t size);
int vmm_set_access(void *ptr, size_t size, const AccessDesc *descs, size_t count);
int vmm_export(void *shared_handle, uint64_t handle, int handle_type, unsigned long long flags);
int vmm_import(uint64_t *handle, void *os_handle, int handle_type);
int vmm_properties(AllocationProp *prop, uint64_t handle);
// cuMemGetHandleForAddressRange: HIP's range handle types and flags have CUDA's values.
int range_handle(void *handle, void *ptr, size_t size, int handle_type, unsigned long long flags);
int memcpy_batch(void **dsts, void **srcs, size_t *sizes, size_t count, MemcpyAttributes *attrs,
                 size_t *attrs_idxs, size_t num_attrs, void *stream);
int prefetch_batch(void **ptrs, size_t *sizes, size_t count, Location *locations, size_t *location_idxs,
                   size_t num_locations, unsigned long long flags, void *stream);
int discard_batch(void **ptrs, size_t *sizes, size_t count, unsigned long long flags, void *stream);
int capture_info(void *stream, int *status, unsigned long long *id, void **graph, void *dependencies,
                 size_t *count);
int exchange_capture_mode(int *mode);
int user_object_create(void **object, void *data, void (*destroy)(void *), unsigned int refcount,
                       unsigned int flags);
int user_object_release(void *object, unsigned int count);
int graph_retain_user_object(void *graph, void *object, unsigned int count, unsigned int flags);

// Streams and events as programs create them, host functions, IPC events, rows and boxes
// (gpumem 0.5): the CUDA runtime's calls of the same meaning (flags and priorities are HIP's
// and CUDA's alike; the 16- and 32-bit fills are the driver's, which the runtime lacks).
int stream_create_with_flags(void **stream, unsigned int flags);
int stream_create_with_priority(void **stream, unsigned int flags, int priority);
int stream_get_priority(void *stream, int *priority);
int stream_get_flags(void *stream, unsigned int *flags);
int priority_range(int *least, int *greatest);
int event_create_with_flags(void **event, unsigned int flags);
int launch_host_func(void *stream, void (*fn)(void *), void *user);
// The 64 bytes of an event handle, as they are on both platforms.
int ipc_get_event_handle(void *handle64, void *event);
int ipc_open_event_handle(void **event, const void *handle64);
int malloc_pitch(void **ptr, size_t *pitch, size_t width, size_t height);
int memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, int kind,
                    void *stream);
// A box of linear memory, its positions folded into the pointers by the AMD side.
struct Box {
    void *dst;
    size_t dst_pitch, dst_rows;
    const void *src;
    size_t src_pitch, src_rows;
    size_t width, height, depth;
    int kind;
};
int memcpy_3d_async(const Box *box, void *stream);
int memset_2d_async(void *dst, size_t pitch, int value, size_t width, size_t height, void *stream);
int memset_d16_async(void *dst, unsigned short value, size_t count, void *stream);
int memset_d32_async(void *dst, unsigned int value, size_t count, void *stream);

} // namespace hipovercuda::nv
