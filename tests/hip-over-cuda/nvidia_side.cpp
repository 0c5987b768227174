// The NVIDIA half of libhipovercuda: compiled on HIP's NVIDIA platform, against HIP's headers
// as hip_nvidia_headers.py adapted them to CUDA 12/13.  The first block only calls AMD's own
// inline wrappers (hip* -> cuda*), with their CUDA -> HIP error mapping; the second is written
// over the CUDA runtime and driver where the wrappers lack the call or cannot serve it (see
// the table in hip_over_cuda.cpp).  Nothing here knows the AMD ABI's layouts.
//
// SPDX-License-Identifier: MIT
#include "nvidia_side.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#if !defined(__HIP_PLATFORM_NVIDIA__)
#error "nvidia_side.cpp is compiled on HIP's NVIDIA platform (-D__HIP_PLATFORM_NVIDIA__)"
#endif

namespace hipovercuda::nv {

// The structures the AMD side hands over as they are.
static_assert(sizeof(Location) == sizeof(cudaMemLocation) && offsetof(cudaMemLocation, id) == offsetof(Location, id),
              "cudaMemLocation layout");
static_assert(sizeof(AccessDesc) == sizeof(cudaMemAccessDesc) && offsetof(cudaMemAccessDesc, flags) == offsetof(AccessDesc, flags),
              "cudaMemAccessDesc layout");
static_assert(sizeof(AccessDesc) == sizeof(CUmemAccessDesc), "CUmemAccessDesc layout");
static_assert(cudaMemLocationTypeDevice == 1 && cudaMemLocationTypeHost == 2, "memory location types");
static_assert(cudaMemAccessFlagsProtRead == 1 && cudaMemAccessFlagsProtReadWrite == 3, "access flags");
static_assert(sizeof(MemcpyAttributes) == sizeof(cudaMemcpyAttributes) &&
                  offsetof(cudaMemcpyAttributes, flags) == offsetof(MemcpyAttributes, flags) &&
                  offsetof(cudaMemcpyAttributes, dstLocHint) == offsetof(MemcpyAttributes, dst_location_hint),
              "cudaMemcpyAttributes layout");
static_assert(cudaMemcpySrcAccessOrderStream == 1, "cudaMemcpySrcAccessOrderStream");
static_assert(cudaMemoryTypeUnregistered == k_cuda_memory_unregistered && cudaMemoryTypeHost == k_cuda_memory_host &&
                  cudaMemoryTypeDevice == k_cuda_memory_device && cudaMemoryTypeManaged == k_cuda_memory_managed,
              "cudaMemoryType");
static_assert(cudaDevAttrHostRegisterSupported == k_cuda_attr_host_register_supported &&
                  cudaDevAttrMemoryPoolsSupported == k_cuda_attr_memory_pools_supported &&
                  cudaDevAttrMemoryPoolSupportedHandleTypes == k_cuda_attr_pool_supported_handle_types &&
                  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED == k_cu_attr_vmm_supported,
              "CUDA device attributes");
static_assert(sizeof(CUmemGenericAllocationHandle) == sizeof(uint64_t), "CUmemGenericAllocationHandle");
static_assert(sizeof(hipMemPoolPtrExportData) == 64, "cudaMemPoolPtrExportData");

namespace {
inline cudaStream_t stream_of(void *s) { return static_cast<cudaStream_t>(s); }
inline cudaEvent_t event_of(void *e) { return static_cast<cudaEvent_t>(e); }
inline cudaMemPool_t pool_of(void *p) { return static_cast<cudaMemPool_t>(p); }
inline int cuda_result(cudaError_t e) { return hipCUDAErrorTohipError(e); }
inline int driver_result(CUresult r) { return hipCUResultTohipError(r); }

// HIP has no contexts: a HIP call works on any thread.  The driver API calls below need the
// CUDA context current, which the CUDA runtime makes so only on a thread's first runtime call
// (a thread whose device never changed may have made none): make it so first.  Returns a HIP
// result; hipSuccess when a context is current.
int ensure_context()
{
    CUcontext current = nullptr;
    if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr)
        return hipSuccess;
    return cuda_result(cudaFree(nullptr)); // starts the current device's primary context
}
} // namespace

// --- AMD's mapping ---------------------------------------------------------------------------

int hipInit(unsigned int flags) { return ::hipInit(flags); }
int cuda_versions(int *runtime, int *driver)
{
    const hipError_t r = ::hipRuntimeGetVersion(runtime);
    return r != hipSuccess ? r : ::hipDriverGetVersion(driver);
}
int hipGetDeviceCount(int *count) { return ::hipGetDeviceCount(count); }
int hipSetDevice(int device) { return ::hipSetDevice(device); }
int hipGetDevice(int *device) { return ::hipGetDevice(device); }
int hipDeviceGetAttribute(int *value, int hip_attribute, int device)
{
    return ::hipDeviceGetAttribute(value, static_cast<hipDeviceAttribute_t>(hip_attribute), device);
}
int hipDeviceGetName(char *name, int length, int device) { return ::hipDeviceGetName(name, length, device); }
int hipDeviceTotalMem(size_t *bytes, int device) { return ::hipDeviceTotalMem(bytes, device); }
int hipMemGetInfo(size_t *free_bytes, size_t *total_bytes) { return ::hipMemGetInfo(free_bytes, total_bytes); }
int hipDeviceSynchronize() { return ::hipDeviceSynchronize(); }
int hipMalloc(void **ptr, size_t size) { return ::hipMalloc(ptr, size); }
int hipFree(void *ptr) { return ::hipFree(ptr); }
int hipMemcpy(void *dst, const void *src, size_t size, int kind)
{
    return ::hipMemcpy(dst, src, size, static_cast<hipMemcpyKind>(kind));
}
int hipMemcpyAsync(void *dst, const void *src, size_t size, int kind, void *stream)
{
    return ::hipMemcpyAsync(dst, src, size, static_cast<hipMemcpyKind>(kind), stream_of(stream));
}
int hipMemset(void *dst, int value, size_t size) { return ::hipMemset(dst, value, size); }
int hipMemsetAsync(void *dst, int value, size_t size, void *stream)
{
    return ::hipMemsetAsync(dst, value, size, stream_of(stream));
}
int hipHostGetDevicePointer(void **device_ptr, void *host_ptr, unsigned int flags)
{
    return ::hipHostGetDevicePointer(device_ptr, host_ptr, flags);
}
int hipStreamCreate(void **stream) { return ::hipStreamCreate(reinterpret_cast<hipStream_t *>(stream)); }
int hipStreamDestroy(void *stream) { return ::hipStreamDestroy(stream_of(stream)); }
int hipStreamSynchronize(void *stream) { return ::hipStreamSynchronize(stream_of(stream)); }
int hipStreamQuery(void *stream) { return ::hipStreamQuery(stream_of(stream)); }
int hipStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
    return ::hipStreamWaitEvent(stream_of(stream), event_of(event), flags);
}
int hipEventCreate(void **event) { return ::hipEventCreate(reinterpret_cast<hipEvent_t *>(event)); }
int hipEventDestroy(void *event) { return ::hipEventDestroy(event_of(event)); }
int hipEventRecord(void *event, void *stream) { return ::hipEventRecord(event_of(event), stream_of(stream)); }
int hipEventSynchronize(void *event) { return ::hipEventSynchronize(event_of(event)); }
int hipEventQuery(void *event) { return ::hipEventQuery(event_of(event)); }
int hipEventElapsedTime(float *ms, void *start, void *stop)
{
    return ::hipEventElapsedTime(ms, event_of(start), event_of(stop));
}
int hipHostMalloc(void **ptr, size_t size, unsigned int cuda_flags) { return ::hipHostMalloc(ptr, size, cuda_flags); }
int hipHostFree(void *ptr) { return ::hipHostFree(ptr); }
int hipHostRegister(void *ptr, size_t size, unsigned int flags) { return ::hipHostRegister(ptr, size, flags); }
int hipHostUnregister(void *ptr) { return ::hipHostUnregister(ptr); }
int hipMemGetAddressRange(void **base, size_t *size, void *ptr)
{
    // On this platform hipDeviceptr_t is CUdeviceptr, a number.
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    hipDeviceptr_t b = 0;
    const hipError_t r = ::hipMemGetAddressRange(&b, size, reinterpret_cast<hipDeviceptr_t>(ptr));
    if (base != nullptr)
        *base = r == hipSuccess ? reinterpret_cast<void *>(b) : nullptr;
    return r;
}
int hipMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t size, void *stream)
{
    return ::hipMemcpyPeerAsync(dst, dst_device, src, src_device, size, stream_of(stream));
}
int hipMallocManaged(void **ptr, size_t size, unsigned int flags) { return ::hipMallocManaged(ptr, size, flags); }
int hipMemPrefetchAsync(const void *ptr, size_t count, int device, void *stream)
{
    return ::hipMemPrefetchAsync(ptr, count, device, stream_of(stream));
}
int hipMemAdvise(const void *ptr, size_t count, int advice, int device)
{
    return ::hipMemAdvise(ptr, count, static_cast<hipMemoryAdvise>(advice), device);
}
int hipStreamAttachMemAsync(void *stream, void *ptr, size_t length, unsigned int flags)
{
    // The wrapper's hipDeviceptr_t * is handed to cudaStreamAttachMemAsync as the address.
    return ::hipStreamAttachMemAsync(stream_of(stream), static_cast<hipDeviceptr_t *>(ptr), length, flags);
}
int hipDeviceGetDefaultMemPool(void **pool, int device)
{
    return ::hipDeviceGetDefaultMemPool(reinterpret_cast<hipMemPool_t *>(pool), device);
}
int hipMemPoolDestroy(void *pool) { return ::hipMemPoolDestroy(pool_of(pool)); }
int hipMallocFromPoolAsync(void **ptr, size_t size, void *pool, void *stream)
{
    return ::hipMallocFromPoolAsync(ptr, size, pool_of(pool), stream_of(stream));
}
int hipFreeAsync(void *ptr, void *stream) { return ::hipFreeAsync(ptr, stream_of(stream)); }
int hipMemPoolSetAttribute(void *pool, int attr, void *value)
{
    return ::hipMemPoolSetAttribute(pool_of(pool), static_cast<hipMemPoolAttr>(attr), value);
}
int hipMemPoolGetAttribute(void *pool, int attr, void *value)
{
    return ::hipMemPoolGetAttribute(pool_of(pool), static_cast<hipMemPoolAttr>(attr), value);
}
int hipMemPoolTrimTo(void *pool, size_t min_bytes_to_hold) { return ::hipMemPoolTrimTo(pool_of(pool), min_bytes_to_hold); }
int hipMemPoolSetAccess(void *pool, const AccessDesc *descs, size_t count)
{
    return ::hipMemPoolSetAccess(pool_of(pool), reinterpret_cast<const hipMemAccessDesc *>(descs), count);
}
int hipMemPoolExportToShareableHandle(void *shared_handle, void *pool, int handle_type, unsigned int flags)
{
    return ::hipMemPoolExportToShareableHandle(shared_handle, pool_of(pool),
                                               static_cast<hipMemAllocationHandleType>(handle_type), flags);
}
int hipMemPoolImportFromShareableHandle(void **pool, void *shared_handle, int handle_type, unsigned int flags)
{
    return ::hipMemPoolImportFromShareableHandle(reinterpret_cast<hipMemPool_t *>(pool), shared_handle,
                                                 static_cast<hipMemAllocationHandleType>(handle_type), flags);
}
int hipMemPoolExportPointer(void *export_data, void *ptr)
{
    return ::hipMemPoolExportPointer(static_cast<hipMemPoolPtrExportData *>(export_data), ptr);
}
int hipMemPoolImportPointer(void **ptr, void *pool, void *export_data)
{
    return ::hipMemPoolImportPointer(ptr, pool_of(pool), static_cast<hipMemPoolPtrExportData *>(export_data));
}
int hipDeviceCanAccessPeer(int *can_access, int device, int peer)
{
    return ::hipDeviceCanAccessPeer(can_access, device, peer);
}
int hipDeviceEnablePeerAccess(int peer, unsigned int flags) { return ::hipDeviceEnablePeerAccess(peer, flags); }
int hipDeviceDisablePeerAccess(int peer) { return ::hipDeviceDisablePeerAccess(peer); }

// --- Written over CUDA -----------------------------------------------------------------------

int cuda_device_attribute(int *value, int cuda_attribute, int device)
{
    return cuda_result(cudaDeviceGetAttribute(value, static_cast<cudaDeviceAttr>(cuda_attribute), device));
}

int driver_device_attribute(int *value, int cu_attribute, int device)
{
    CUdevice dev = 0;
    CUresult r = cuDeviceGet(&dev, device);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(cu_attribute), dev);
    return driver_result(r);
}

int device_uuid(unsigned char bytes[16], int device)
{
    CUdevice dev = 0;
    CUuuid uuid{};
    CUresult r = cuDeviceGet(&dev, device);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetUuid(&uuid, dev);
    if (r == CUDA_SUCCESS)
        std::memcpy(bytes, uuid.bytes, sizeof uuid.bytes);
    return driver_result(r);
}

int pointer_info(PointerInfo *info, const void *ptr, unsigned int *host_flags)
{
    cudaPointerAttributes a{};
    const cudaError_t r = cudaPointerGetAttributes(&a, ptr);
    if (r != cudaSuccess)
        return cuda_result(r);
    info->cuda_type = a.type;
    info->device = a.device;
    info->device_pointer = a.devicePointer;
    info->host_pointer = a.hostPointer;
    *host_flags = 0;
    // Only page-locked memory has flags; cudaHostGetFlags wants the allocation's own address.
    if (a.type == cudaMemoryTypeHost && a.hostPointer == ptr && cudaHostGetFlags(host_flags, a.hostPointer) != cudaSuccess)
        *host_flags = 0;
    return hipSuccess;
}

int stream_get_device(void *stream, int *device) { return cuda_result(cudaStreamGetDevice(stream_of(stream), device)); }

int pool_create(void **pool, const PoolProps *props)
{
    cudaMemPoolProps p{};
    p.allocType = static_cast<cudaMemAllocationType>(props->alloc_type);
    p.handleTypes = static_cast<cudaMemAllocationHandleType>(props->handle_types);
    p.location.type = static_cast<cudaMemLocationType>(props->location.type);
    p.location.id = props->location.id;
    p.win32SecurityAttributes = props->win32_security_attributes;
    p.maxSize = props->max_size;
    return cuda_result(cudaMemPoolCreate(reinterpret_cast<cudaMemPool_t *>(pool), &p));
}

namespace {
CUmemAllocationProp driver_prop(const AllocationProp &in)
{
    CUmemAllocationProp p{};
    p.type = static_cast<CUmemAllocationType>(in.type);
    p.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(in.handle_types);
    p.location.type = static_cast<CUmemLocationType>(in.location.type);
    p.location.id = in.location.id;
    p.win32HandleMetaData = in.win32_metadata;
    p.allocFlags.compressionType = in.compression;
    p.allocFlags.gpuDirectRDMACapable = in.rdma_capable;
    p.allocFlags.usage = in.usage;
    return p;
}
CUdeviceptr address(void *p) { return reinterpret_cast<CUdeviceptr>(p); }
} // namespace

int vmm_granularity(size_t *granularity, const AllocationProp *prop, int option)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    const CUmemAllocationProp p = driver_prop(*prop);
    return driver_result(
        cuMemGetAllocationGranularity(granularity, &p, static_cast<CUmemAllocationGranularity_flags>(option)));
}
int vmm_create(uint64_t *handle, size_t size, const AllocationProp *prop, unsigned long long flags)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    const CUmemAllocationProp p = driver_prop(*prop);
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemCreate(&h, size, &p, flags);
    if (r == CUDA_SUCCESS)
        *handle = h;
    return driver_result(r);
}
int device_pci_bus_id(char *bus_id, int length, int device)
{
    CUdevice dev = 0;
    CUresult r = cuDeviceGet(&dev, device);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetPCIBusId(bus_id, length, dev);
    return driver_result(r);
}
int vmm_retain(uint64_t *handle, void *ptr)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemRetainAllocationHandle(&h, ptr);
    *handle = h;
    return driver_result(r);
}
int vmm_release(uint64_t handle)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemRelease(handle));
}
int vmm_reserve(void **ptr, size_t size, size_t alignment, void *addr, unsigned long long flags)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    CUdeviceptr p = 0;
    const CUresult r = cuMemAddressReserve(&p, size, alignment, address(addr), flags);
    if (r == CUDA_SUCCESS)
        *ptr = reinterpret_cast<void *>(p);
    return driver_result(r);
}
int vmm_free(void *ptr, size_t size)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemAddressFree(address(ptr), size));
}
int vmm_map(void *ptr, size_t size, size_t offset, uint64_t handle, unsigned long long flags)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemMap(address(ptr), size, offset, handle, flags));
}
int vmm_unmap(void *ptr, size_t size)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemUnmap(address(ptr), size));
}
int vmm_set_access(void *ptr, size_t size, const AccessDesc *descs, size_t count)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemSetAccess(address(ptr), size, reinterpret_cast<const CUmemAccessDesc *>(descs), count));
}
int vmm_export(void *shared_handle, uint64_t handle, int handle_type, unsigned long long flags)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(
        cuMemExportToShareableHandle(shared_handle, handle, static_cast<CUmemAllocationHandleType>(handle_type), flags));
}
int range_handle(void *handle, void *ptr, size_t size, int handle_type, unsigned long long flags)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(
        cuMemGetHandleForAddressRange(handle, address(ptr), size, static_cast<CUmemRangeHandleType>(handle_type), flags));
}
int vmm_import(uint64_t *handle, void *os_handle, int handle_type)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    CUmemGenericAllocationHandle h = 0;
    const CUresult r =
        cuMemImportFromShareableHandle(&h, os_handle, static_cast<CUmemAllocationHandleType>(handle_type));
    if (r == CUDA_SUCCESS)
        *handle = h;
    return driver_result(r);
}
int vmm_properties(AllocationProp *prop, uint64_t handle)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    CUmemAllocationProp p{};
    const CUresult r = cuMemGetAllocationPropertiesFromHandle(&p, handle);
    if (r != CUDA_SUCCESS)
        return driver_result(r);
    prop->type = p.type;
    prop->handle_types = p.requestedHandleTypes;
    prop->location.type = p.location.type;
    prop->location.id = p.location.id;
    prop->win32_metadata = p.win32HandleMetaData;
    prop->compression = p.allocFlags.compressionType;
    prop->rdma_capable = p.allocFlags.gpuDirectRDMACapable;
    prop->usage = p.allocFlags.usage;
    return hipSuccess;
}

int memcpy_batch(void **dsts, void **srcs, size_t *sizes, size_t count, MemcpyAttributes *attrs, size_t *attrs_idxs,
                 size_t num_attrs, void *stream)
{
    return cuda_result(cudaMemcpyBatchAsync(dsts, srcs, sizes, count, reinterpret_cast<cudaMemcpyAttributes *>(attrs),
                                            attrs_idxs, num_attrs, stream_of(stream)));
}
int prefetch_batch(void **ptrs, size_t *sizes, size_t count, Location *locations, size_t *location_idxs,
                   size_t num_locations, unsigned long long flags, void *stream)
{
    return cuda_result(cudaMemPrefetchBatchAsync(ptrs, sizes, count, reinterpret_cast<cudaMemLocation *>(locations),
                                                 location_idxs, num_locations, flags, stream_of(stream)));
}
int discard_batch(void **ptrs, size_t *sizes, size_t count, unsigned long long flags, void *stream)
{
    return cuda_result(cudaMemDiscardBatchAsync(ptrs, sizes, count, flags, stream_of(stream)));
}

int capture_info(void *stream, int *status, unsigned long long *id, void **graph, void *dependencies,
                 size_t *count)
{
    cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
    // CUDA 13's form adds per-edge data; gpumem's calls never ask for it.
    const cudaError_t r = cudaStreamGetCaptureInfo(stream_of(stream), &s, id, reinterpret_cast<cudaGraph_t *>(graph),
                                                   static_cast<const cudaGraphNode_t **>(dependencies), nullptr,
                                                   count);
    if (status != nullptr)
        *status = s;
    return cuda_result(r);
}
int exchange_capture_mode(int *mode)
{
    cudaStreamCaptureMode m = static_cast<cudaStreamCaptureMode>(*mode);
    const cudaError_t r = cudaThreadExchangeStreamCaptureMode(&m);
    *mode = m;
    return cuda_result(r);
}
static_assert(cudaStreamCaptureModeGlobal == 0 && cudaStreamCaptureModeThreadLocal == 1 &&
                  cudaStreamCaptureModeRelaxed == 2 && cudaStreamCaptureStatusActive == 1 &&
                  cudaStreamCaptureStatusInvalidated == 2,
              "capture modes and statuses");
int user_object_create(void **object, void *data, void (*destroy)(void *), unsigned int refcount, unsigned int flags)
{
    return cuda_result(cudaUserObjectCreate(reinterpret_cast<cudaUserObject_t *>(object), data, destroy, refcount, flags));
}
int user_object_release(void *object, unsigned int count)
{
    return cuda_result(cudaUserObjectRelease(static_cast<cudaUserObject_t>(object), count));
}
int graph_retain_user_object(void *graph, void *object, unsigned int count, unsigned int flags)
{
    return cuda_result(cudaGraphRetainUserObject(static_cast<cudaGraph_t>(graph), static_cast<cudaUserObject_t>(object),
                                                 count, flags));
}
static_assert(cudaUserObjectNoDestructorSync == 1 && cudaGraphUserObjectMove == 1, "user object flags");

// --- Streams and events as programs create them, rows and boxes (gpumem 0.5) ------------------

int stream_create_with_flags(void **stream, unsigned int flags)
{
    return cuda_result(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t *>(stream), flags));
}
int stream_create_with_priority(void **stream, unsigned int flags, int priority)
{
    return cuda_result(cudaStreamCreateWithPriority(reinterpret_cast<cudaStream_t *>(stream), flags, priority));
}
int stream_get_priority(void *stream, int *priority) { return cuda_result(cudaStreamGetPriority(stream_of(stream), priority)); }
int stream_get_flags(void *stream, unsigned int *flags) { return cuda_result(cudaStreamGetFlags(stream_of(stream), flags)); }
int priority_range(int *least, int *greatest) { return cuda_result(cudaDeviceGetStreamPriorityRange(least, greatest)); }
int event_create_with_flags(void **event, unsigned int flags)
{
    return cuda_result(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t *>(event), flags));
}
int launch_host_func(void *stream, void (*fn)(void *), void *user)
{
    return cuda_result(cudaLaunchHostFunc(stream_of(stream), fn, user));
}
static_assert(sizeof(cudaIpcEventHandle_t) == 64, "cudaIpcEventHandle_t");
int ipc_get_event_handle(void *handle64, void *event)
{
    cudaIpcEventHandle_t h;
    const cudaError_t e = cudaIpcGetEventHandle(&h, event_of(event));
    if (e == cudaSuccess)
        std::memcpy(handle64, &h, sizeof h);
    return cuda_result(e);
}
int ipc_open_event_handle(void **event, const void *handle64)
{
    cudaIpcEventHandle_t h;
    std::memcpy(&h, handle64, sizeof h);
    return cuda_result(cudaIpcOpenEventHandle(reinterpret_cast<cudaEvent_t *>(event), h));
}
int malloc_pitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
    return cuda_result(cudaMallocPitch(ptr, pitch, width, height));
}
int memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, int kind,
                    void *stream)
{
    return cuda_result(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, static_cast<cudaMemcpyKind>(kind),
                                         stream_of(stream)));
}
int memcpy_3d_async(const Box *box, void *stream)
{
    cudaMemcpy3DParms p{};
    p.srcPtr.ptr = const_cast<void *>(box->src);
    p.srcPtr.pitch = p.srcPtr.xsize = box->src_pitch;
    p.srcPtr.ysize = box->src_rows;
    p.dstPtr.ptr = box->dst;
    p.dstPtr.pitch = p.dstPtr.xsize = box->dst_pitch;
    p.dstPtr.ysize = box->dst_rows;
    p.extent.width = box->width;
    p.extent.height = box->height;
    p.extent.depth = box->depth;
    p.kind = static_cast<cudaMemcpyKind>(box->kind);
    return cuda_result(cudaMemcpy3DAsync(&p, stream_of(stream)));
}
int memset_2d_async(void *dst, size_t pitch, int value, size_t width, size_t height, void *stream)
{
    return cuda_result(cudaMemset2DAsync(dst, pitch, value, width, height, stream_of(stream)));
}
int memset_d16_async(void *dst, unsigned short value, size_t count, void *stream)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count, stream_of(stream)));
}
int memset_d32_async(void *dst, unsigned int value, size_t count, void *stream)
{
    if (const int r = ensure_context(); r != hipSuccess)
        return r;
    return driver_result(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count, stream_of(stream)));
}

} // namespace hipovercuda::nv
