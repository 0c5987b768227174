// The HIP backend's own parts: devices and what each really supports
// (XNACK, probes), managed-memory hints, host allocation spellings, and the
// runtime's flags and enum values.
#include "backends/hip/hip_vendor.hpp"

#include <cstdlib>
#include <cstring>

#include "base/log.hpp"

namespace gpumem::detail::hip {

namespace {

// HSA_XNACK=1 asks the ROCm runtime to run with XNACK (page-fault retry) on,
// which is what lets managed pages migrate on GPUs that support it.
bool xnack_requested()
{
    const char *v = secure_getenv("HSA_XNACK");
    return v && std::strcmp(v, "1") == 0;
}

int advice_of(int32_t advice)
{
    switch (advice) {
    case GPUMEM_ADVISE_SET_READ_MOSTLY: return hipMemAdviseSetReadMostly;
    case GPUMEM_ADVISE_UNSET_READ_MOSTLY: return hipMemAdviseUnsetReadMostly;
    case GPUMEM_ADVISE_SET_PREFERRED_LOCATION: return hipMemAdviseSetPreferredLocation;
    case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION: return hipMemAdviseUnsetPreferredLocation;
    case GPUMEM_ADVISE_SET_ACCESSED_BY: return hipMemAdviseSetAccessedBy;
    case GPUMEM_ADVISE_UNSET_ACCESSED_BY: return hipMemAdviseUnsetAccessedBy;
    case GPUMEM_ADVISE_SET_COARSE_GRAIN: return hipMemAdviseSetCoarseGrain;
    default: return hipMemAdviseUnsetCoarseGrain;
    }
}

} // namespace

// --- Devices ----------------------------------------------------------------------

status_t Vendor::init()
{
    const int32_t count = api_.device_count;
    devices_.resize(static_cast<size_t>(count));
    const bool xnack = xnack_requested();
    for (int32_t i = 0; i < count; ++i) {
        DeviceInfo &dev = devices_[i];
        if (status_t st = check(api_, api_.hipDeviceTotalMem(&dev.total_memory, i), "hipDeviceTotalMem",
                                "read the memory size of device %d", i))
            return st;
        dev.managed = attribute(i, k_attr_managed_memory, 0) != 0 && api_.has_managed();
        // hipDeviceProp_t (which holds the gcnArchName with its "xnack+") changed
        // layout between ROCm 5 and 6: the attributes and HSA_XNACK decide.
        dev.managed_migrates = dev.managed && (attribute(i, k_attr_pageable_access, 0) != 0 ||
                                               attribute(i, k_attr_concurrent_managed, 0) != 0 || xnack);
        dev.pools = probe_pools(i);
        dev.vmm = probe_vmm(i);
        if (dev.managed && !dev.managed_migrates && !warned_migration_.exchange(true))
            log(LogLevel::info,
                "hip: managed memory on device %d will not migrate: XNACK is off, so its pages stay where they "
                "were first placed and the GPU reaches host-resident pages over the bus; on a GPU with XNACK "
                "(MI200, MI300) run with HSA_XNACK=1 to make pages migrate",
                i);
    }
    return GPUMEM_SUCCESS;
}

bool Vendor::probe_pools(int32_t device) const
{
    if (!api_.has_pools() || attribute(device, k_attr_pools_supported, 0) == 0)
        return false;
    // Some runtimes report the attribute yet refuse the calls.
    hipMemPool_t pool = nullptr;
    const hipError_t r = api_.hipDeviceGetDefaultMemPool(&pool, device);
    if (r != hipSuccess) {
        log(LogLevel::debug, "hip: device %d reports memory pools, but hipDeviceGetDefaultMemPool gave %s: no pools",
            device, error_name(api_, r));
        return false;
    }
    return pool != nullptr;
}

bool Vendor::probe_vmm(int32_t device) const
{
    // ROCm 5 runtimes lay hipMemAllocationProp out differently (hip_types.hpp)
    // and implement VMM only in part: gpumem uses it from ROCm 6 on.
    if (!api_.rocm6() || !api_.has_vmm())
        return false;
    int supported = 0;
    if (api_.hipDeviceGetAttribute(&supported, k_attr_vmm_supported, device) == hipSuccess)
        return supported != 0;
    // A runtime without the attribute: ask for a granularity instead.
    MemAllocationProp6 prop{};
    prop.type = hipMemAllocationTypePinned;
    prop.location = location_of(device);
    size_t g = 0;
    return api_.hipMemGetAllocationGranularity(&g, &prop, hipMemAllocationGranularityMinimum) == hipSuccess && g > 0;
}

status_t Vendor::bind(int32_t device)
{
    return check(api_, api_.hipSetDevice(device), "hipSetDevice", "make device %d current on this thread", device);
}

status_t Vendor::memcpy_peer(void *dst, int32_t dst_device, const void *src, int32_t src_device, size_t n,
                             void *stream)
{
    return check(api_, api_.hipMemcpyPeerAsync(dst, dst_device, src, src_device, n, native_stream(stream)),
                 "hipMemcpyPeerAsync", "copy %zu bytes from %p on device %d to %p on device %d", n, src, src_device,
                 dst, dst_device);
}

status_t Vendor::pointer_device(const void *ptr, int32_t *device) const
{
    if (!api_.hipPointerGetAttributes)
        return GPUMEM_SUCCESS; // *device stays the caller's guess
    PointerAttributes attr{};
    if (status_t st = check(api_, api_.hipPointerGetAttributes(&attr, ptr), "hipPointerGetAttributes",
                            "find the device of %p", ptr))
        return st;
    *device = attr.device;
    return GPUMEM_SUCCESS;
}

// ROCm 5 answers hipErrorInvalidValue for memory it does not know, ROCm 6
// success with hipMemoryTypeUnregistered: both say "not known".  The memory
// type's values changed between them (hip_types.hpp).
status_t Vendor::vendor_pointer(const void *ptr, VendorPointer *out) const
{
    *out = VendorPointer{};
    if (!api_.hipPointerGetAttributes)
        return GPUMEM_SUCCESS;
    PointerAttributes attr{};
    const hipError_t r = api_.hipPointerGetAttributes(&attr, ptr);
    if (r == hipErrorInvalidValue)
        return GPUMEM_SUCCESS;
    if (status_t st = check(api_, r, "hipPointerGetAttributes", "read what the runtime knows of %p", ptr))
        return st;
    int32_t memory = GPUMEM_POOL_MEMORY_UNKNOWN;
    if (api_.rocm6()) {
        switch (attr.type) {
        case 1: memory = GPUMEM_POOL_MEMORY_PINNED; break;   // hipMemoryTypeHost
        case 2: memory = GPUMEM_POOL_MEMORY_DEVICE; break;   // hipMemoryTypeDevice
        case 3:                                              // hipMemoryTypeManaged
        case 11: memory = GPUMEM_POOL_MEMORY_MANAGED; break; // hipMemoryTypeUnified
        default: return GPUMEM_SUCCESS;                      // unregistered (0), arrays: not memory gpumem describes
        }
    } else {
        switch (attr.type) {
        case 0: memory = GPUMEM_POOL_MEMORY_PINNED; break; // hipMemoryTypeHost
        case 1: memory = GPUMEM_POOL_MEMORY_DEVICE; break; // hipMemoryTypeDevice
        case 3: memory = GPUMEM_POOL_MEMORY_MANAGED; break; // hipMemoryTypeUnified
        default: return GPUMEM_SUCCESS;
        }
    }
    if (attr.isManaged)
        memory = GPUMEM_POOL_MEMORY_MANAGED;
    out->known = true;
    out->memory = memory;
    out->device = memory == GPUMEM_POOL_MEMORY_PINNED ? GPUMEM_DEVICE_HOST : attr.device;
    return GPUMEM_SUCCESS;
}

int Vendor::attribute(int32_t device, int attr, int fallback) const
{
    int value = 0;
    if (api_.hipDeviceGetAttribute(&value, attr, device) != hipSuccess)
        return fallback; // an attribute newer than this runtime
    return value;
}

hipMemLocation location_of(int32_t device)
{
    hipMemLocation loc{};
    loc.type = hipMemLocationTypeDevice;
    loc.id = device; // an ordinal
    return loc;
}

hipMemAccessFlags access_flags(int32_t flags)
{
    switch (flags) {
    case GPUMEM_ACCESS_READ: return hipMemAccessFlagsProtRead;
    case GPUMEM_ACCESS_READWRITE: return hipMemAccessFlagsProtReadWrite;
    default: return hipMemAccessFlagsProtNone;
    }
}

int pool_attribute(int32_t attr)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return hipMemPoolReuseFollowEventDependencies;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return hipMemPoolReuseAllowOpportunistic;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return hipMemPoolReuseAllowInternalDependencies;
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: return hipMemPoolAttrReleaseThreshold;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: return hipMemPoolAttrReservedMemCurrent;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: return hipMemPoolAttrReservedMemHigh;
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: return hipMemPoolAttrUsedMemCurrent;
    default: return hipMemPoolAttrUsedMemHigh;
    }
}

status_t Vendor::device_caps(int32_t device, DeviceCaps *caps)
{
    const DeviceInfo &dev = devices_[device];
    // The gfx name lives only in hipDeviceProp_t, whose layout changed between
    // ROCm 5 and 6: gpumem does not read it.
    caps->arch = "gfx";
    caps->compute_capability = 0; // a CUDA notion (the public header says 0 elsewhere)
    caps->managed = dev.managed;
    caps->managed_migrates = dev.managed_migrates;
    caps->pageable_access = attribute(device, k_attr_pageable_access, 0) != 0;
    caps->pools = dev.pools;
    caps->vmm = dev.vmm;
    // ROCm 5 does not know the attribute and always allowed registration.
    caps->host_register = attribute(device, k_attr_host_register, 1) != 0 && api_.has_host_register();

    // gpumem shares both VMM handles and pools by descriptor: both must work.
    const bool vmm_fd = dev.vmm && api_.has_vmm_ipc();
    const bool pool_fd = dev.pools && api_.has_pool_ipc() &&
                         (attribute(device, k_attr_pool_handle_types, 0) & hipMemHandleTypePosixFileDescriptor);
    caps->ipc_handle_types = vmm_fd && pool_fd ? GPUMEM_HANDLE_POSIX_FD : 0;
    // No device attribute says whether HIP exports dma-bufs: the entry point's
    // presence is the answer.  gpumem asks HIP for no fabric handles.
    caps->dmabuf = api_.has_dmabuf();
    caps->fabric_handles = false;
    // Memory for GPUDirect RDMA and RCCL: VMM memory with gpuDirectRDMACapable
    // and a POSIX handle.  ROCm has no attribute that says whether the flag
    // is honoured: a runtime that refuses it refuses at hipMemCreate.
    caps->rdma_vmm = vmm_fd;
    if (!caps->rdma_vmm)
        caps->rdma_missing = !dev.vmm ? "the device has no virtual memory management (hipMemCreate does not work there)"
                                      : "the runtime cannot export VMM memory as a POSIX file descriptor, which RCCL "
                                        "needs to map a registered buffer";

    // The batched calls are trusted from HIP 7.1, where they appeared.  Batched
    // prefetches and discards only where every device's pages migrate (XNACK),
    // as CUDA's need concurrent managed access on every device; elsewhere
    // gpumem makes one call per entry, which tolerates pages that stay put.
    const bool batch_runtime = api_.runtime_version >= k_batch_runtime;
    bool all_migrate = true;
    for (const DeviceInfo &d : devices_)
        all_migrate = all_migrate && d.managed_migrates;
    caps->batch_copy = batch_runtime && api_.has_batch_copy();
    caps->batch_prefetch = caps->batch_discard = batch_runtime && api_.has_batch_managed() && dev.managed && all_migrate;
    return GPUMEM_SUCCESS;
}

// --- Host and managed memory ----------------------------------------------------

Vendor::Call Vendor::host_alloc(void **ptr, size_t size, uint32_t flags) const
{
    // Always portable and mapped: one pointer then works on every device,
    // whichever asked.
    unsigned int hip_flags = k_host_portable | k_host_mapped;
    if (flags & GPUMEM_HOST_WRITE_COMBINED)
        hip_flags |= k_host_write_combined;
    // Coherence is an AMD choice (fine-grained, coherent during kernels, or
    // coarse-grained, coherent at kernel boundaries); only hipHostMalloc and
    // hipExtHostAlloc take it.  Unset, the runtime's default applies
    // (HIP_HOST_COHERENT).
    if (api_.host_alloc_coherence) {
        if (flags & GPUMEM_HOST_COHERENT)
            hip_flags |= k_host_coherent;
        else if (flags & GPUMEM_HOST_NONCOHERENT)
            hip_flags |= k_host_noncoherent;
    }
    return {api_.host_alloc(ptr, size, hip_flags), api_.host_alloc_name};
}

status_t Vendor::prefetch(const void *ptr, size_t count, int32_t device, void *stream)
{
    // GPUMEM_DEVICE_HOST is hipCpuDeviceId (-1).
    const hipError_t r = api_.hipMemPrefetchAsync(ptr, count, device, native_stream(stream));
    return check(api_, r, "hipMemPrefetchAsync", "prefetch %zu bytes at %p to %s %d", count, ptr,
                 device == GPUMEM_DEVICE_HOST ? "the host" : "device", device);
}

status_t Vendor::advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    // A location-free advice without a valid device was given the selected one (GpuBackend::advise).
    const hipError_t r = api_.hipMemAdvise(ptr, count, advice_of(advice), device);
    return check(api_, r, "hipMemAdvise", "apply advice %d to %zu bytes at %p", advice, count, ptr);
}

bool Vendor::refused_host_memory(hipError_t r, const void *dst) const
{
    return (r == hipErrorInvalidValue || r == hipErrorInvalidDevicePointer || r == hipErrorNotSupported) &&
           unknown_to_runtime(dst);
}

bool Vendor::unknown_to_runtime(const void *ptr) const
{
    if (!api_.hipPointerGetAttributes)
        return false;
    PointerAttributes attr{};
    const hipError_t r = api_.hipPointerGetAttributes(&attr, ptr);
    // ROCm 5 refuses pointers it does not know; ROCm 6 answers
    // hipMemoryTypeUnregistered (0, which was hipMemoryTypeHost in ROCm 5).
    if (r == hipErrorInvalidValue)
        return true;
    return r == hipSuccess && api_.rocm6() && attr.type == k_memory_type_unregistered_rocm6;
}

// --- Batched calls -------------------------------------------------------------------

namespace {

// The runtime takes non-const arrays it does not write.
template <typename T> T *writable(const T *p) { return const_cast<T *>(p); }

thread_local std::vector<hipMemLocation> t_locations;
thread_local std::vector<size_t> t_location_starts;

} // namespace

Vendor::Call Vendor::memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                  void *stream, size_t *failed) const
{
    *failed = SIZE_MAX;
    // Sources read in stream order, like hipMemcpyAsync.
    MemcpyAttributes attrs{};
    attrs.srcAccessOrder = k_src_access_order_stream;
    size_t first = 0;
    return {api_.hipMemcpyBatchAsync(const_cast<void **>(dsts), const_cast<void **>(srcs), writable(sizes), count,
                                     &attrs, &first, 1, failed, native_stream(stream)),
            "hipMemcpyBatchAsync"};
}

Vendor::Call Vendor::prefetch_batch(const void *const *ptrs, const size_t *sizes, size_t count,
                                    const int32_t *devices, void *stream) const
{
    // One location per run of entries going to the same place.
    t_locations.clear();
    t_location_starts.clear();
    for (size_t i = 0; i < count; ++i)
        if (i == 0 || devices[i] != devices[i - 1]) {
            hipMemLocation loc{};
            loc.type = static_cast<hipMemLocationType>(devices[i] == GPUMEM_DEVICE_HOST ? k_location_type_host
                                                                                        : k_location_type_device);
            loc.id = devices[i] == GPUMEM_DEVICE_HOST ? 0 : devices[i];
            t_locations.push_back(loc);
            t_location_starts.push_back(i);
        }
    return {api_.hipMemPrefetchBatchAsync(const_cast<void **>(ptrs), writable(sizes), count, t_locations.data(),
                                          t_location_starts.data(), t_locations.size(), 0, native_stream(stream)),
            "hipMemPrefetchBatchAsync"};
}

Vendor::Call Vendor::discard_batch(void *const *ptrs, const size_t *sizes, size_t count, void *stream) const
{
    return {api_.hipMemDiscardBatchAsync(const_cast<void **>(ptrs), writable(sizes), count, 0, native_stream(stream)),
            "hipMemDiscardBatchAsync"};
}

// --- Native pools -----------------------------------------------------------------

status_t Vendor::pool_max_size(uint64_t max_size) const
{
    // ROCm 6 carved hipMemPoolProps::maxSize out of bytes older runtimes
    // ignore as reserved, and no release says which runtime first honours it:
    // a limited pool is gpumem's own (AUTO), which keeps the limit exactly.
    if (max_size != 0)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "a native HIP pool cannot be given a max_size gpumem can rely on; use GPUMEM_POOL_AUTO or "
                    "GPUMEM_POOL_BUILTIN (gpumem's own pool enforces it), or max_size = 0");
    return GPUMEM_SUCCESS;
}

status_t Vendor::pool_memory(int32_t device, int32_t memory, int32_t) const
{
    if (memory != GPUMEM_POOL_MEMORY_DEVICE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "native HIP pools hold device memory only (device %d); use GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN "
                    "for a pool of %s memory (gpumem's own pool)",
                    device, memory == GPUMEM_POOL_MEMORY_PINNED ? "pinned" : "managed");
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::hip
