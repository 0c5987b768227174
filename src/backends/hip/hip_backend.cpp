// The HIP backend: devices, device information, the memory kinds, streams,
// events, copies.  VMM lives in hip_vmm.cpp, pools in hip_pools.cpp.
#include "backends/hip/hip_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <unistd.h>

#include "base/log.hpp"

namespace gpumem::detail {

namespace hip {

namespace {

hipEvent_t native_event(void *e) { return static_cast<hipEvent_t>(e); }

size_t page_size()
{
    static const size_t page = [] {
        long v = sysconf(_SC_PAGESIZE);
        return v > 0 ? static_cast<size_t>(v) : size_t{4096};
    }();
    return page;
}

uint64_t physical_host_memory()
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

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

// A managed-memory hint the runtime refused on a device whose pages do not
// migrate (XNACK off): hints change nothing there, so it is not an error.
bool refused_hint(hipError_t r) { return r == hipErrorNotSupported || r == hipErrorInvalidValue; }

// The device the core selected on this thread (gpumem_set_device).  Calls
// that name another device make it current for their own work; calls that
// name none come back to this one.
thread_local int32_t t_selected = 0;

} // namespace

// --- Devices ----------------------------------------------------------------------

status_t HipBackend::init()
{
    const int32_t count = rt_.device_count;
    devices_.resize(static_cast<size_t>(count));
    const bool xnack = xnack_requested();
    for (int32_t i = 0; i < count; ++i) {
        DeviceInfo &dev = devices_[i];
        if (status_t st = check(rt_, rt_.hipDeviceTotalMem(&dev.total_memory, i), "hipDeviceTotalMem",
                                "read the memory size of device %d", i))
            return st;
        dev.managed = attribute(i, k_attr_managed_memory, 0) != 0 && rt_.has_managed();
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
    host_memory_ = physical_host_memory();
    return GPUMEM_SUCCESS;
}

bool HipBackend::probe_pools(int32_t device) const
{
    if (!rt_.has_pools() || attribute(device, k_attr_pools_supported, 0) == 0)
        return false;
    // Some runtimes report the attribute yet refuse the calls.
    hipMemPool_t pool = nullptr;
    const hipError_t r = rt_.hipDeviceGetDefaultMemPool(&pool, device);
    if (r != hipSuccess) {
        log(LogLevel::debug, "hip: device %d reports memory pools, but hipDeviceGetDefaultMemPool gave %s: no pools",
            device, error_name(rt_, r));
        return false;
    }
    return pool != nullptr;
}

bool HipBackend::probe_vmm(int32_t device) const
{
    // ROCm 5 runtimes lay hipMemAllocationProp out differently (hip_types.hpp)
    // and implement VMM only in part: gpumem uses it from ROCm 6 on.
    if (!rt_.rocm6() || !rt_.has_vmm())
        return false;
    int supported = 0;
    if (rt_.hipDeviceGetAttribute(&supported, k_attr_vmm_supported, device) == hipSuccess)
        return supported != 0;
    // A runtime without the attribute: ask for a granularity instead.
    MemAllocationProp6 prop{};
    prop.type = hipMemAllocationTypePinned;
    prop.location = location_of(device);
    size_t g = 0;
    return rt_.hipMemGetAllocationGranularity(&g, &prop, hipMemAllocationGranularityMinimum) == hipSuccess && g > 0;
}

status_t HipBackend::bind(int32_t device)
{
    if (device < 0 || device >= device_count())
        return fail(GPUMEM_ERROR_INVALID_DEVICE, "device %d does not exist: the hip backend has %d device(s)", device,
                    device_count());
    // Runs before most operations: a thread-local read in the runtime, and
    // the switch only when another device is current.
    int current = -1;
    if (rt_.hipGetDevice(&current) == hipSuccess && current == device)
        return GPUMEM_SUCCESS;
    return check(rt_, rt_.hipSetDevice(device), "hipSetDevice", "make device %d current on this thread", device);
}

status_t HipBackend::activate(int32_t device)
{
    status_t st = bind(device);
    if (st == GPUMEM_SUCCESS)
        t_selected = device;
    return st;
}

status_t HipBackend::ensure_device()
{
    return bind(t_selected < device_count() ? t_selected : 0);
}

int HipBackend::attribute(int32_t device, int attr, int fallback) const
{
    int value = 0;
    if (rt_.hipDeviceGetAttribute(&value, attr, device) != hipSuccess)
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

// --- Device information -------------------------------------------------------

status_t HipBackend::get_caps(int32_t device, DeviceCaps *caps)
{
    if (status_t st = bind(device))
        return st;
    const DeviceInfo &dev = devices_[device];
    char name[256] = {};
    if (status_t st = check(rt_, rt_.hipDeviceGetName(name, sizeof name - 1, device), "hipDeviceGetName",
                            "read the name of device %d", device))
        return st;
    size_t free_bytes = 0, total_bytes = 0;
    if (status_t st = check(rt_, rt_.hipMemGetInfo(&free_bytes, &total_bytes), "hipMemGetInfo",
                            "read the free memory of device %d", device))
        return st;

    caps->name = name;
    // The gfx name lives only in hipDeviceProp_t, whose layout changed between
    // ROCm 5 and 6: gpumem does not read it.
    caps->arch = "gfx";
    caps->compute_capability = 0; // a CUDA notion (the public header says 0 elsewhere)
    caps->total_memory = dev.total_memory;
    caps->free_memory = free_bytes;
    caps->managed = dev.managed;
    caps->managed_migrates = dev.managed_migrates;
    caps->pageable_access = attribute(device, k_attr_pageable_access, 0) != 0;
    caps->pools = dev.pools;
    caps->vmm = dev.vmm;
    // ROCm 5 does not know the attribute and always allowed registration.
    caps->host_register = attribute(device, k_attr_host_register, 1) != 0 && rt_.has_host_register();

    // gpumem shares both VMM handles and pools by descriptor: both must work.
    const bool vmm_fd = dev.vmm && rt_.has_vmm_ipc();
    const bool pool_fd = dev.pools && rt_.has_pool_ipc() &&
                         (attribute(device, k_attr_pool_handle_types, 0) & hipMemHandleTypePosixFileDescriptor);
    caps->ipc_handle_types = vmm_fd && pool_fd ? GPUMEM_HANDLE_POSIX_FD : 0;

    caps->vmm_granularity = caps->vmm_recommended_granularity = 0;
    if (dev.vmm) {
        if (status_t st = granularity(device, hipMemAllocationGranularityMinimum, &caps->vmm_granularity))
            return st;
        if (status_t st = granularity(device, hipMemAllocationGranularityRecommended,
                                      &caps->vmm_recommended_granularity))
            return st;
    }
    return GPUMEM_SUCCESS;
}

status_t HipBackend::mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes)
{
    if (status_t st = bind(device))
        return st;
    return check(rt_, rt_.hipMemGetInfo(free_bytes, total_bytes), "hipMemGetInfo",
                 "read the free memory of device %d", device);
}

// --- Device, pinned and managed memory ------------------------------------------

status_t HipBackend::device_alloc(int32_t device, size_t size, void **ptr)
{
    if (status_t st = bind(device))
        return st;
    // Refused up front: the answer is certain, and no runtime sees SIZE_MAX.
    if (size > devices_[device].total_memory)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes on device %d: more than its %zu bytes of memory; allocate less", size,
                    device, devices_[device].total_memory);
    return check(rt_, rt_.hipMalloc(ptr, size), "hipMalloc", "allocate %zu bytes on device %d", size, device);
}

status_t HipBackend::device_free(int32_t device, void *ptr, size_t)
{
    if (status_t st = bind(device))
        return st;
    return check(rt_, rt_.hipFree(ptr), "hipFree", "free device memory at %p", ptr);
}

status_t HipBackend::host_alloc(size_t size, uint32_t flags, void **ptr)
{
    if (status_t st = ensure_device())
        return st;
    const size_t page = page_size();
    if (size > host_memory_ || size > SIZE_MAX - page)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of pinned host memory: more than this machine's %llu bytes; allocate "
                    "less",
                    size, static_cast<unsigned long long>(host_memory_));
    // Whole pages: the core's pinned cache hands a freed block to any request
    // of the same page-rounded size.
    size = (size + page - 1) / page * page;
    // Always portable and mapped: one pointer then works on every device,
    // whichever asked.
    unsigned int hip_flags = k_host_portable | k_host_mapped;
    if (flags & GPUMEM_HOST_WRITE_COMBINED)
        hip_flags |= k_host_write_combined;
    // Coherence is an AMD choice (fine-grained, coherent during kernels, or
    // coarse-grained, coherent at kernel boundaries); only hipHostMalloc and
    // hipExtHostAlloc take it.  Unset, the runtime's default applies
    // (HIP_HOST_COHERENT).
    if (rt_.host_alloc_coherence) {
        if (flags & GPUMEM_HOST_COHERENT)
            hip_flags |= k_host_coherent;
        else if (flags & GPUMEM_HOST_NONCOHERENT)
            hip_flags |= k_host_noncoherent;
    }
    return check(rt_, rt_.host_alloc(ptr, size, hip_flags), rt_.host_alloc_name,
                 "allocate %zu bytes of pinned host memory", size);
}

status_t HipBackend::host_free(void *ptr, size_t)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.host_free(ptr), rt_.host_free_name, "free pinned host memory at %p", ptr);
}

status_t HipBackend::host_register(void *ptr, size_t size, uint32_t)
{
    if (status_t st = ensure_device())
        return st;
    // Portable and mapped for the same reason as host_alloc.  READ_ONLY is a
    // hint gpumem drops here: hipHostRegisterReadOnly is the same bit (0x8) as
    // hipExtHostRegisterCoarseGrained, which would change coherence.
    return check(rt_, rt_.hipHostRegister(ptr, size, k_register_portable | k_register_mapped), "hipHostRegister",
                 "register %zu bytes of host memory at %p", size, ptr);
}

status_t HipBackend::host_unregister(void *ptr, size_t)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipHostUnregister(ptr), "hipHostUnregister", "unregister host memory at %p", ptr);
}

status_t HipBackend::host_device_pointer(void *host_ptr, void **device_ptr)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipHostGetDevicePointer(device_ptr, host_ptr, 0), "hipHostGetDevicePointer",
                 "find the device address of pinned host memory at %p", host_ptr);
}

status_t HipBackend::managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr)
{
    if (status_t st = bind(device))
        return st;
    // Managed memory may oversubscribe a device, but not host and devices together.
    uint64_t ceiling = host_memory_;
    for (const DeviceInfo &dev : devices_)
        ceiling = ceiling > UINT64_MAX - dev.total_memory ? UINT64_MAX : ceiling + dev.total_memory;
    if (size > ceiling)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of managed memory: more than host and device memory together (%llu "
                    "bytes); allocate less",
                    size, static_cast<unsigned long long>(ceiling));
    const unsigned int attach = (flags & GPUMEM_ATTACH_HOST) ? hipMemAttachHost : hipMemAttachGlobal;
    return check(rt_, rt_.hipMallocManaged(ptr, size, attach), "hipMallocManaged",
                 "allocate %zu bytes of managed memory", size);
}

status_t HipBackend::managed_free(void *ptr, size_t)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipFree(ptr), "hipFree", "free managed memory at %p", ptr);
}

status_t HipBackend::prefetch(const void *ptr, size_t count, int32_t device, void *stream)
{
    if (status_t st = ensure_device())
        return st;
    // GPUMEM_DEVICE_HOST is hipCpuDeviceId (-1).
    const hipError_t r = rt_.hipMemPrefetchAsync(ptr, count, device, native_stream(stream));
    if (r != hipSuccess && device != GPUMEM_DEVICE_HOST && !devices_[device].managed_migrates && refused_hint(r)) {
        log(LogLevel::debug, "hip: prefetch to device %d refused (%s): its pages do not migrate", device,
            error_name(rt_, r));
        return GPUMEM_SUCCESS;
    }
    return check(rt_, r, "hipMemPrefetchAsync", "prefetch %zu bytes at %p to %s %d", count, ptr,
                 device == GPUMEM_DEVICE_HOST ? "the host" : "device", device);
}

status_t HipBackend::advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    if (status_t st = ensure_device())
        return st;
    // Read-mostly, coarse grain and the unsets ignore the location: any valid one will do.
    if (device != GPUMEM_DEVICE_HOST && (device < 0 || device >= device_count()))
        device = t_selected < device_count() ? t_selected : 0;
    const hipError_t r = rt_.hipMemAdvise(ptr, count, advice_of(advice), device);
    if (r != hipSuccess && device != GPUMEM_DEVICE_HOST && !devices_[device].managed_migrates && refused_hint(r)) {
        log(LogLevel::debug, "hip: advice %d for device %d refused (%s): its pages do not migrate", advice, device,
            error_name(rt_, r));
        return GPUMEM_SUCCESS;
    }
    return check(rt_, r, "hipMemAdvise", "apply advice %d to %zu bytes at %p", advice, count, ptr);
}

status_t HipBackend::stream_attach(void *stream, void *ptr, size_t length, uint32_t flags)
{
    if (status_t st = ensure_device())
        return st;
    unsigned int attach = hipMemAttachGlobal;
    if (flags & GPUMEM_ATTACH_HOST)
        attach = hipMemAttachHost;
    else if (flags & GPUMEM_ATTACH_SINGLE)
        attach = hipMemAttachSingle;
    return check(rt_, rt_.hipStreamAttachMemAsync(native_stream(stream), ptr, length, attach),
                 "hipStreamAttachMemAsync", "attach %zu bytes of managed memory at %p to stream %p", length, ptr,
                 stream);
}

// --- Streams and events -----------------------------------------------------------

status_t HipBackend::stream_create(int32_t device, void **stream)
{
    if (status_t st = bind(device))
        return st;
    // A blocking stream (hipStreamDefault): ordered with the null stream.
    hipStream_t s = nullptr;
    if (status_t st = check(rt_, rt_.hipStreamCreate(&s), "hipStreamCreate", "create a stream on device %d", device))
        return st;
    *stream = s;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::stream_destroy(void *stream)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipStreamDestroy(native_stream(stream)), "hipStreamDestroy", "destroy stream %p", stream);
}

status_t HipBackend::stream_synchronize(void *stream)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipStreamSynchronize(native_stream(stream)), "hipStreamSynchronize", "wait for stream %p",
                 stream);
}

status_t HipBackend::stream_query(void *stream)
{
    if (status_t st = ensure_device())
        return st;
    const hipError_t r = rt_.hipStreamQuery(native_stream(stream));
    if (r == hipErrorNotReady)
        return fail(GPUMEM_ERROR_BUSY, "the stream still has pending work");
    return check(rt_, r, "hipStreamQuery", "query stream %p", stream);
}

status_t HipBackend::event_create(int32_t device, void **event)
{
    if (status_t st = bind(device))
        return st;
    // Timing stays enabled: gpumem_event_elapsed_ms needs it.
    hipEvent_t e = nullptr;
    if (status_t st = check(rt_, rt_.hipEventCreate(&e), "hipEventCreate", "create an event on device %d", device))
        return st;
    *event = e;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::event_destroy(void *event)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipEventDestroy(native_event(event)), "hipEventDestroy", "destroy event %p", event);
}

status_t HipBackend::event_record(void *event, void *stream)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipEventRecord(native_event(event), native_stream(stream)), "hipEventRecord",
                 "record event %p on stream %p", event, stream);
}

status_t HipBackend::event_synchronize(void *event)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipEventSynchronize(native_event(event)), "hipEventSynchronize", "wait for event %p",
                 event);
}

status_t HipBackend::event_query(void *event)
{
    if (status_t st = ensure_device())
        return st;
    const hipError_t r = rt_.hipEventQuery(native_event(event));
    if (r == hipErrorNotReady)
        return fail(GPUMEM_ERROR_BUSY, "the event has not completed yet");
    return check(rt_, r, "hipEventQuery", "query event %p", event);
}

status_t HipBackend::stream_wait_event(void *stream, void *event)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipStreamWaitEvent(native_stream(stream), native_event(event), 0), "hipStreamWaitEvent",
                 "make stream %p wait for event %p", stream, event);
}

status_t HipBackend::event_elapsed_ms(float *ms, void *start, void *end)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipEventElapsedTime(ms, native_event(start), native_event(end)), "hipEventElapsedTime",
                 "time events %p to %p", start, end);
}

status_t HipBackend::device_synchronize(int32_t device)
{
    if (status_t st = bind(device))
        return st;
    return check(rt_, rt_.hipDeviceSynchronize(), "hipDeviceSynchronize", "wait for device %d", device);
}

// --- Copies and fills ---------------------------------------------------------------
//
// The synchronous forms return with the bytes in place.  The runtime's own
// synchronous calls do not promise that for every pair (a device-to-device
// hipMemcpy or a hipMemset of device memory may still run), so they are
// followed by a wait on their stream, which costs nothing when the work is
// already done.

status_t HipBackend::copy(void *dst, const void *src, size_t n, void *stream, bool async)
{
    if (status_t st = ensure_device())
        return st;
    hipStream_t s = native_stream(stream);
    // hipMemcpyDefault: the runtime infers the direction (unified addressing).
    if (async || s) {
        if (status_t st = check(rt_, rt_.hipMemcpyAsync(dst, src, n, hipMemcpyDefault, s), "hipMemcpyAsync",
                                "copy %zu bytes from %p to %p", n, src, dst))
            return st;
    } else if (status_t st = check(rt_, rt_.hipMemcpy(dst, src, n, hipMemcpyDefault), "hipMemcpy",
                                   "copy %zu bytes from %p to %p", n, src, dst)) {
        return st;
    }
    if (async)
        return GPUMEM_SUCCESS;
    return check(rt_, rt_.hipStreamSynchronize(s), "hipStreamSynchronize", "wait for the copy of %zu bytes to %p", n,
                 dst);
}

status_t HipBackend::fill(void *dst, int32_t value, size_t n, void *stream, bool async)
{
    if (status_t st = ensure_device())
        return st;
    hipStream_t s = native_stream(stream);
    const unsigned char byte = static_cast<unsigned char>(value);
    const bool ordered = async || s;
    const hipError_t r = ordered ? rt_.hipMemsetAsync(dst, byte, n, s) : rt_.hipMemset(dst, byte, n);
    if ((r == hipErrorInvalidValue || r == hipErrorInvalidDevicePointer || r == hipErrorNotSupported) &&
        unknown_to_runtime(dst)) {
        // Plain (pageable) host memory, which this GPU cannot write (no
        // XNACK/HMM): the CPU fills it once the stream's earlier work is done,
        // so stream order holds (the fill is simply complete on return).
        if (status_t st = check(rt_, rt_.hipStreamSynchronize(s), "hipStreamSynchronize",
                                "wait for stream %p before filling host memory at %p", stream, dst))
            return st;
        std::memset(dst, byte, n);
        return GPUMEM_SUCCESS;
    }
    if (status_t st = check(rt_, r, ordered ? "hipMemsetAsync" : "hipMemset", "set %zu bytes at %p", n, dst))
        return st;
    if (async)
        return GPUMEM_SUCCESS;
    return check(rt_, rt_.hipStreamSynchronize(s), "hipStreamSynchronize", "wait for the fill of %zu bytes at %p", n,
                 dst);
}

bool HipBackend::unknown_to_runtime(const void *ptr) const
{
    if (!rt_.hipPointerGetAttributes)
        return false;
    PointerAttributes attr{};
    const hipError_t r = rt_.hipPointerGetAttributes(&attr, ptr);
    // ROCm 5 refuses pointers it does not know; ROCm 6 answers
    // hipMemoryTypeUnregistered (0, which was hipMemoryTypeHost in ROCm 5).
    if (r == hipErrorInvalidValue)
        return true;
    return r == hipSuccess && rt_.rocm6() && attr.type == k_memory_type_unregistered_rocm6;
}

} // namespace hip

status_t make_hip_backend(const char *library, std::unique_ptr<Backend> *out)
{
    try {
        const hip::Runtime *runtime = nullptr;
        if (status_t st = hip::load_runtime(library, &runtime))
            return st;
        auto backend = std::make_unique<hip::HipBackend>(*runtime);
        if (backend->init() != GPUMEM_SUCCESS) {
            const std::string why = last_error_message(); // fail() overwrites it
            return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE, "the hip backend is unavailable: %s", why.c_str());
        }
        *out = std::move(backend);
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot start the hip backend: out of host memory");
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "cannot start the hip backend: unexpected failure");
    }
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
