// The CUDA backend's own parts: primary contexts, device information,
// managed-memory hints, and the driver's flags and enum values.
#include "backends/cuda/cuda_vendor.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "base/log.hpp"

namespace gpumem::detail::cuda {

namespace {

CUmem_advise advice_of(int32_t advice)
{
    switch (advice) {
    case GPUMEM_ADVISE_SET_READ_MOSTLY: return CU_MEM_ADVISE_SET_READ_MOSTLY;
    case GPUMEM_ADVISE_UNSET_READ_MOSTLY: return CU_MEM_ADVISE_UNSET_READ_MOSTLY;
    case GPUMEM_ADVISE_SET_PREFERRED_LOCATION: return CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION: return CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;
    case GPUMEM_ADVISE_SET_ACCESSED_BY: return CU_MEM_ADVISE_SET_ACCESSED_BY;
    default: return CU_MEM_ADVISE_UNSET_ACCESSED_BY;
    }
}

} // namespace

CUmemLocation location_of(int32_t device)
{
    CUmemLocation loc{};
    if (device == GPUMEM_DEVICE_HOST) {
        loc.type = CU_MEM_LOCATION_TYPE_HOST; // the id is ignored
    } else {
        loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = device; // an ordinal, not a CUdevice
    }
    return loc;
}

CUmemAccess_flags access_flags(int32_t flags)
{
    switch (flags) {
    case GPUMEM_ACCESS_READ: return CU_MEM_ACCESS_FLAGS_PROT_READ;
    case GPUMEM_ACCESS_READWRITE: return CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    default: return CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
}

CUmemPool_attribute pool_attribute(int32_t attr)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: return CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: return CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: return CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: return CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    default: return CU_MEMPOOL_ATTR_USED_MEM_HIGH;
    }
}

Vendor::~Vendor()
{
    // Other users of a primary context (the CUDA runtime) hold their own
    // reference: it is destroyed only when the last one lets go.
    if (!contexts_)
        return; // init() did not get that far
    for (size_t i = 0; i < devices_.size(); ++i) {
        if (!contexts_[i].load(std::memory_order_acquire))
            continue;
        CUresult r = api_.cuDevicePrimaryCtxRelease(devices_[i].handle);
        if (r != CUDA_SUCCESS)
            log(LogLevel::warn, "cuda: cuDevicePrimaryCtxRelease of device %zu failed with %s", i,
                error_name(api_, r));
    }
}

status_t Vendor::init()
{
    const int32_t count = api_.device_count;
    devices_.resize(static_cast<size_t>(count));
    contexts_ = std::make_unique<std::atomic<CUcontext>[]>(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
        contexts_[i].store(nullptr, std::memory_order_relaxed);
        DeviceInfo &dev = devices_[i];
        if (status_t st = check(api_, api_.cuDeviceGet(&dev.handle, i), "cuDeviceGet", "open CUDA device %d", i))
            return st;
        if (status_t st = check(api_, api_.cuDeviceTotalMem(&dev.total_memory, dev.handle), "cuDeviceTotalMem",
                                "read the memory size of device %d", i))
            return st;
        dev.concurrent_managed = attribute(i, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0) != 0;
    }
    return GPUMEM_SUCCESS;
}

// --- Contexts -------------------------------------------------------------------

status_t Vendor::retain(int32_t device, CUcontext *ctx)
{
    std::lock_guard<std::mutex> lock(retain_mutex_);
    CUcontext c = contexts_[device].load(std::memory_order_relaxed);
    if (!c) {
        if (status_t st = check(api_, api_.cuDevicePrimaryCtxRetain(&c, devices_[device].handle),
                                "cuDevicePrimaryCtxRetain", "start device %d (retain its primary context)", device))
            return st;
        contexts_[device].store(c, std::memory_order_release);
    }
    *ctx = c;
    return GPUMEM_SUCCESS;
}

status_t Vendor::bind(int32_t device)
{
    CUcontext ctx = contexts_[device].load(std::memory_order_acquire);
    if (!ctx)
        if (status_t st = retain(device, &ctx))
            return st;
    return check(api_, api_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", "make device %d current on this thread", device);
}

bool Vendor::started(int32_t device) const
{
    if (contexts_[device].load(std::memory_order_acquire))
        return true;
    unsigned int flags = 0;
    int active = 0;
    // A driver without the query cannot say: every device counts as started.
    if (!api_.cuDevicePrimaryCtxGetState)
        return true;
    return api_.cuDevicePrimaryCtxGetState(devices_[device].handle, &flags, &active) == CUDA_SUCCESS && active;
}

int32_t Vendor::device_of(Current c) const
{
    if (!c)
        return -1;
    for (int32_t i = 0; i < device_count(); ++i)
        if (contexts_[i].load(std::memory_order_acquire) == c)
            return i;
    // The application's context (cudaSetDevice before gpumem retained that
    // device's primary context, or one it created): its device's ordinal.
    CUdevice d = 0;
    if (!api_.cuCtxGetDevice || api_.cuCtxGetDevice(&d) != CUDA_SUCCESS)
        return -1;
    for (int32_t i = 0; i < device_count(); ++i)
        if (devices_[i].handle == d)
            return i;
    return -1;
}

status_t Vendor::memcpy_peer(void *dst, int32_t dst_device, const void *src, int32_t src_device, size_t n,
                             void *stream)
{
    CUcontext dst_ctx = contexts_[dst_device].load(std::memory_order_acquire);
    CUcontext src_ctx = contexts_[src_device].load(std::memory_order_acquire);
    if (!dst_ctx)
        if (status_t st = retain(dst_device, &dst_ctx))
            return st;
    if (!src_ctx)
        if (status_t st = retain(src_device, &src_ctx))
            return st;
    return check(api_, api_.cuMemcpyPeerAsync(dptr(dst), dst_ctx, dptr(src), src_ctx, n, native_stream(stream)),
                 "cuMemcpyPeerAsync", "copy %zu bytes from %p on device %d to %p on device %d", n, src, src_device,
                 dst, dst_device);
}

int32_t Vendor::stream_device(void *stream)
{
    // The legacy and per-thread default streams (CU_STREAM_LEGACY 0x1,
    // CU_STREAM_PER_THREAD 0x2) mean the current context's: no device of their own.
    if (reinterpret_cast<uintptr_t>(stream) <= 2 || !api_.cuStreamGetCtx)
        return -1;
    CUcontext c = nullptr;
    if (api_.cuStreamGetCtx(native_stream(stream), &c) != CUDA_SUCCESS || !c)
        return -1;
    // Frameworks use the primary contexts, the ones gpumem retains.  A
    // stream's context runs, so devices whose context does not are skipped
    // (retaining them to compare would start them).
    for (int32_t i = 0; i < device_count(); ++i) {
        CUcontext mine = contexts_[i].load(std::memory_order_acquire);
        if (!mine && (!started(i) || retain(i, &mine) != GPUMEM_SUCCESS))
            continue;
        if (mine == c)
            return i;
    }
    return -1;
}

status_t Vendor::pointer_device(const void *ptr, int32_t *device) const
{
    if (!api_.cuPointerGetAttribute)
        return GPUMEM_SUCCESS; // *device stays the caller's guess
    int ordinal = -1;
    if (status_t st = check(api_, api_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr(ptr)),
                            "cuPointerGetAttribute", "find the device of %p", ptr))
        return st;
    *device = ordinal;
    return GPUMEM_SUCCESS;
}

// The driver answers CUDA_ERROR_INVALID_VALUE for an address it does not
// know (plain host memory, freed memory, NULL): that is an answer, not a
// failure.  Host memory it knows (page-locked or registered) belongs to no
// device, as gpumem's own pinned memory does.
status_t Vendor::vendor_pointer(const void *ptr, VendorPointer *out) const
{
    *out = VendorPointer{};
    if (!api_.cuPointerGetAttribute)
        return GPUMEM_SUCCESS;
    unsigned int type = 0;
    const CUresult r = api_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(ptr));
    if (r == CUDA_ERROR_INVALID_VALUE)
        return GPUMEM_SUCCESS;
    if (status_t st = check(api_, r, "cuPointerGetAttribute", "read the memory type of %p", ptr))
        return st;
    unsigned int managed = 0;
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    if (status_t st = check(api_, api_.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dptr(ptr)),
                            "cuPointerGetAttribute", "read whether %p is managed memory", ptr))
        return st;
    if (status_t st = check(api_, api_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr(ptr)),
                            "cuPointerGetAttribute", "read the device of %p", ptr))
        return st;
    if (status_t st = check(api_, api_.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dptr(ptr)),
                            "cuPointerGetAttribute", "read the start of the allocation holding %p", ptr))
        return st;
    if (status_t st = check(api_, api_.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dptr(ptr)),
                            "cuPointerGetAttribute", "read the size of the allocation holding %p", ptr))
        return st;
    out->known = true;
    out->memory = managed ? GPUMEM_POOL_MEMORY_MANAGED
                  : type == CU_MEMORYTYPE_HOST ? GPUMEM_POOL_MEMORY_PINNED
                                                : GPUMEM_POOL_MEMORY_DEVICE;
    out->device = out->memory == GPUMEM_POOL_MEMORY_PINNED ? GPUMEM_DEVICE_HOST : ordinal;
    out->base = as_pointer(start);
    out->size = size;
    return GPUMEM_SUCCESS;
}

int Vendor::attribute(int32_t device, CUdevice_attribute attr, int fallback) const
{
    int value = 0;
    if (api_.cuDeviceGetAttribute(&value, attr, devices_[device].handle) != CUDA_SUCCESS)
        return fallback; // an attribute newer than this driver
    return value;
}

// --- Device information -------------------------------------------------------

status_t Vendor::device_caps(int32_t device, DeviceCaps *caps)
{
    const DeviceInfo &dev = devices_[device];
    int major = 0, minor = 0;
    if (status_t st = check(api_, api_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev.handle),
                            "cuDeviceGetAttribute", "read the compute capability of device %d", device))
        return st;
    if (status_t st = check(api_, api_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev.handle),
                            "cuDeviceGetAttribute", "read the compute capability of device %d", device))
        return st;
    caps->arch = "sm_" + std::to_string(major) + std::to_string(minor);
    caps->compute_capability = major * 10 + minor;
    caps->managed = attribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0) && api_.has_managed();
    caps->managed_migrates = caps->managed && dev.concurrent_managed;
    caps->pageable_access = attribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0) != 0;
    caps->pools = attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0) && api_.has_pools();
    caps->vmm = attribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) && api_.has_vmm();
    // Older drivers do not know the attribute and always allowed registration.
    caps->host_register = attribute(device, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1) && api_.has_host_register();
    caps->host_register_read_only = caps->host_register; // CU_MEMHOSTREGISTER_READ_ONLY

    // gpumem shares both VMM handles and pools by descriptor: both must work.
    const bool vmm_fd = caps->vmm && api_.has_vmm_ipc() &&
                        attribute(device, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0);
    const bool pool_fd = caps->pools && api_.has_pool_ipc() &&
                         (attribute(device, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0) &
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    caps->ipc_handle_types = vmm_fd && pool_fd ? GPUMEM_HANDLE_POSIX_FD : 0;
    // dma-buf export needs the open kernel module, which the attribute reports.
    caps->dmabuf = api_.has_dmabuf() && attribute(device, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0) != 0;
    // What the driver claims: an H200 claims fabric handles and still refuses
    // to make one where the system has no IMEX channel (probe group export).
#if CUDA_VERSION >= 12030
    caps->fabric_handles = caps->vmm && attribute(device, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0) != 0;
#else
    caps->fabric_handles = false; // built with headers before fabric handles (CUDA 12.3)
#endif
    // Memory for GPUDirect RDMA and NCCL: VMM memory with gpuDirectRDMACapable
    // and a POSIX handle, which the driver makes only where it says so.
    caps->rdma_vmm = vmm_fd && attribute(device, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 0);
    if (!caps->rdma_vmm)
        caps->rdma_missing =
            !caps->vmm ? "the device has no virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_"
                         "SUPPORTED is 0, or the driver lacks cuMemCreate)"
            : !vmm_fd ? "the driver cannot export VMM memory as a POSIX file descriptor (CU_DEVICE_ATTRIBUTE_HANDLE_"
                        "TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED is 0), which NCCL needs to map a registered buffer"
                      : "the driver says CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED is 0: this "
                        "GPU, driver or platform cannot make VMM memory that an RDMA NIC reaches";

    caps->batch_copy = api_.has_batch_copy();
    // The driver's batched prefetch and discard refuse to run unless every
    // device has concurrent managed access.
    bool all_concurrent = true;
    for (const DeviceInfo &d : devices_)
        all_concurrent = all_concurrent && d.concurrent_managed;
    caps->batch_prefetch = caps->batch_discard = caps->managed && all_concurrent && api_.has_batch_managed();
    // Pools of host and managed memory: the driver's version says whether it
    // reads the pool properties that ask for them, the attribute whether the
    // device takes them; gpumem's headers must know the names too.
    DeviceInfo &info = devices_[device];
#if CUDA_VERSION >= 12060
    info.host_pools = caps->pools && api_.version >= k_host_pools_version &&
                      attribute(device, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, 0) != 0;
    info.host_numa_pools = info.host_pools && attribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED, 0) != 0;
#endif
#if CUDA_VERSION >= 13000
    // No attribute says whether the device takes managed pools: one made and
    // destroyed at start answers (a refusal means gpumem's own pool serves
    // them).  It needs no context of the device (cuda_probe group lazy).
    if (caps->pools && caps->managed && api_.version >= k_managed_pools_version) {
        void *probe = nullptr;
        if (pool_create(&probe, device, false, 0, GPUMEM_POOL_MEMORY_MANAGED, -1).r == CUDA_SUCCESS) {
            info.managed_pools = true;
            if (status_t st = check(api_, api_.cuMemPoolDestroy(static_cast<CUmemoryPool>(probe)), "cuMemPoolDestroy",
                                    "destroy the pool of managed memory that probed device %d", device))
                return st;
        }
    }
#endif
    caps->pinned_pools = info.host_pools;
    caps->pinned_pools_numa = info.host_numa_pools;
    caps->managed_pools = info.managed_pools;
    return GPUMEM_SUCCESS;
}

// --- Managed memory hints -------------------------------------------------------

status_t Vendor::prefetch(const void *ptr, size_t count, int32_t device, void *stream)
{
    CUresult r;
    if (api_.prefetch_location) {
        r = api_.prefetch_location(dptr(ptr), count, location_of(device), 0, native_stream(stream));
    } else if (api_.prefetch_device) {
        CUdevice dev = device == GPUMEM_DEVICE_HOST ? CU_DEVICE_CPU : devices_[device].handle;
        r = api_.prefetch_device(dptr(ptr), count, dev, native_stream(stream));
    } else {
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this CUDA driver has no cuMemPrefetchAsync");
    }
    return check(api_, r, "cuMemPrefetchAsync", "prefetch %zu bytes at %p to %s %d", count, ptr,
                 device == GPUMEM_DEVICE_HOST ? "the host" : "device", device);
}

status_t Vendor::advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    CUresult r;
    if (api_.advise_location) {
        r = api_.advise_location(dptr(ptr), count, advice_of(advice), location_of(device));
    } else if (api_.advise_device) {
        CUdevice dev = device == GPUMEM_DEVICE_HOST ? CU_DEVICE_CPU : devices_[device].handle;
        r = api_.advise_device(dptr(ptr), count, advice_of(advice), dev);
    } else {
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this CUDA driver has no cuMemAdvise");
    }
    return check(api_, r, "cuMemAdvise", "apply advice %d to %zu bytes at %p", advice, count, ptr);
}

bool Vendor::refused_host_memory(CUresult r, const void *dst) const
{
    return r == CUDA_ERROR_INVALID_VALUE && unknown_to_runtime(dst);
}

bool Vendor::unknown_to_runtime(const void *ptr) const
{
    if (!api_.cuPointerGetAttribute)
        return false;
    unsigned int type = 0;
    return api_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(ptr)) == CUDA_ERROR_INVALID_VALUE;
}

// --- Batched calls -------------------------------------------------------------------
//
// The driver takes arrays of CUdeviceptr (not void *) and non-const arrays it
// does not write: the entries are copied into per-thread scratch arrays, which
// keeps the hot path free of allocations after the first batch.

namespace {

thread_local std::vector<CUdeviceptr> t_dptrs, t_sptrs;
thread_local std::vector<size_t> t_sizes, t_location_starts;
thread_local std::vector<CUmemLocation> t_locations;

void as_dptrs(std::vector<CUdeviceptr> *out, const void *const *ptrs, size_t count)
{
    out->resize(count);
    for (size_t i = 0; i < count; ++i)
        (*out)[i] = dptr(ptrs[i]);
}

} // namespace

Vendor::Call Vendor::memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                  void *stream, size_t *failed) const
{
    *failed = SIZE_MAX;
#if CUDA_VERSION >= 12080
    as_dptrs(&t_dptrs, dsts, count);
    as_dptrs(&t_sptrs, srcs, count);
    t_sizes.assign(sizes, sizes + count);
    // One attribute for every copy: sources read in stream order, like
    // cuMemcpyAsync (the other orders would let a copy read before earlier
    // work on the stream has written).
    CUmemcpyAttributes attrs{};
    attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t first = 0;
    if (api_.memcpy_batch_v2)
        return {api_.memcpy_batch_v2(t_dptrs.data(), t_sptrs.data(), t_sizes.data(), count, &attrs, &first, 1,
                                     native_stream(stream)),
                "cuMemcpyBatchAsync"};
    if (api_.memcpy_batch_v1)
        return {api_.memcpy_batch_v1(t_dptrs.data(), t_sptrs.data(), t_sizes.data(), count, &attrs, &first, 1,
                                     failed, native_stream(stream)),
                "cuMemcpyBatchAsync"};
#else
    (void)dsts, (void)srcs, (void)sizes, (void)count, (void)stream;
#endif
    return {CUDA_ERROR_NOT_SUPPORTED, "cuMemcpyBatchAsync"}; // the core asks only where caps say batch_copy
}

Vendor::Call Vendor::prefetch_batch(const void *const *ptrs, const size_t *sizes, size_t count,
                                    const int32_t *devices, void *stream) const
{
    if (!api_.prefetch_batch)
        return {CUDA_ERROR_NOT_SUPPORTED, "cuMemPrefetchBatchAsync"};
    as_dptrs(&t_dptrs, ptrs, count);
    t_sizes.assign(sizes, sizes + count);
    // One location per run of entries going to the same place.
    t_locations.clear();
    t_location_starts.clear();
    for (size_t i = 0; i < count; ++i)
        if (i == 0 || devices[i] != devices[i - 1]) {
            t_locations.push_back(location_of(devices[i]));
            t_location_starts.push_back(i);
        }
    return {api_.prefetch_batch(t_dptrs.data(), t_sizes.data(), count, t_locations.data(), t_location_starts.data(),
                                t_locations.size(), 0, native_stream(stream)),
            "cuMemPrefetchBatchAsync"};
}

Vendor::Call Vendor::discard_batch(void *const *ptrs, const size_t *sizes, size_t count, void *stream) const
{
    if (!api_.discard_batch)
        return {CUDA_ERROR_NOT_SUPPORTED, "cuMemDiscardBatchAsync"};
    as_dptrs(&t_dptrs, ptrs, count);
    t_sizes.assign(sizes, sizes + count);
    return {api_.discard_batch(t_dptrs.data(), t_sizes.data(), count, 0, native_stream(stream)),
            "cuMemDiscardBatchAsync"};
}

// --- Native pools -----------------------------------------------------------------

status_t Vendor::pool_max_size(uint64_t max_size) const
{
#if CUDA_VERSION >= 12020
    // Older drivers see the field as reserved bytes, which must be zero.
    if (max_size != 0 && api_.version < k_pool_max_size_version)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "a native pool's max_size needs a CUDA 12.2 driver (this one is %d); update the driver, or use "
                    "GPUMEM_POOL_BUILTIN, or max_size = 0",
                    api_.version);
#else
    if (max_size != 0)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "a native pool's max_size needs gpumem built with CUDA 12.2 or newer headers; use "
                    "GPUMEM_POOL_BUILTIN, or max_size = 0");
#endif
    return GPUMEM_SUCCESS;
}

status_t Vendor::pool_memory(int32_t device, int32_t memory, int32_t numa_node) const
{
    const DeviceInfo &dev = devices_[device];
    if (memory == GPUMEM_POOL_MEMORY_PINNED && !dev.host_pools)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "native pools of pinned host memory need a CUDA 12.6 driver (this one is %d) and a device that "
                    "supports them (device %d); use GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN",
                    api_.version, device);
    if (memory == GPUMEM_POOL_MEMORY_PINNED && numa_node >= 0 && !dev.host_numa_pools)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "device %d cannot use native pools on a chosen host NUMA node; create the pool with "
                    "numa_node = -1", device);
    if (memory == GPUMEM_POOL_MEMORY_MANAGED && !dev.managed_pools)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "native pools of managed memory need a CUDA 13.0 driver (this one is %d) and managed memory on "
                    "device %d; use GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN",
                    api_.version, device);
    return GPUMEM_SUCCESS;
}

Vendor::Call Vendor::pool_create(void **pool, int32_t device, uint32_t handle_types, uint64_t max_size, int32_t memory,
                                 int32_t numa_node) const
{
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = location_of(device);
#if CUDA_VERSION >= 12060
    // Host pools cannot be shared (handleTypes must be 0): the core refuses that first.
    if (memory == GPUMEM_POOL_MEMORY_PINNED) {
        props.location.type = numa_node >= 0 ? CU_MEM_LOCATION_TYPE_HOST_NUMA : CU_MEM_LOCATION_TYPE_HOST;
        props.location.id = numa_node >= 0 ? numa_node : 0;
    }
#endif
#if CUDA_VERSION >= 13000
    // The pool's device is the managed memory's preferred location.
    if (memory == GPUMEM_POOL_MEMORY_MANAGED)
        props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
#endif
    (void)memory;
    (void)numa_node;
    props.handleTypes = native_handle_types(handle_types);
#if CUDA_VERSION >= 12020
    // 0 is the driver's default (unlimited); larger than size_t cannot be held anyway.  The driver
    // rounds the limit up to its own reservation granule (32 MiB on an H200).
    props.maxSize = max_size > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(max_size);
#else
    (void)max_size;
#endif
    CUmemoryPool p = nullptr;
    const CUresult r = api_.cuMemPoolCreate(&p, &props);
    *pool = p;
    return {r, "cuMemPoolCreate"};
}

const char *Vendor::fabric_missing()
{
    static const char k_dir[] = "/dev/nvidia-caps-imex-channels";
    DIR *dir = opendir(k_dir);
    if (!dir)
        return "this system has no IMEX channel (/dev/nvidia-caps-imex-channels is absent)";
    const char *missing = "this process may open no IMEX channel in /dev/nvidia-caps-imex-channels";
    while (const struct dirent *e = readdir(dir)) {
        if (std::strncmp(e->d_name, "channel", 7) != 0)
            continue;
        const std::string path = std::string(k_dir) + "/" + e->d_name;
        if (access(path.c_str(), R_OK | W_OK) == 0) {
            missing = nullptr;
            break;
        }
    }
    closedir(dir);
    return missing;
}

} // namespace gpumem::detail::cuda
