// The CUDA backend: contexts, device information, the memory kinds, streams,
// events, copies.  VMM lives in cuda_vmm.cpp, pools in cuda_pools.cpp.
#include "backends/cuda/cuda_backend.hpp"

#include <cstring>
#include <new>
#include <string>

#include <unistd.h>

#include "base/log.hpp"

namespace gpumem::detail {

namespace cuda {

namespace {

CUevent native_event(void *e) { return static_cast<CUevent>(e); }

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

CudaBackend::~CudaBackend()
{
    // Other users of a primary context (the CUDA runtime) hold their own
    // reference: it is destroyed only when the last one lets go.
    if (!contexts_)
        return; // init() did not get that far
    for (size_t i = 0; i < devices_.size(); ++i) {
        if (!contexts_[i].load(std::memory_order_acquire))
            continue;
        CUresult r = d_.cuDevicePrimaryCtxRelease(devices_[i].handle);
        if (r != CUDA_SUCCESS)
            log(LogLevel::warn, "cuda: cuDevicePrimaryCtxRelease of device %zu failed with %s", i,
                error_name(d_, r));
    }
}

status_t CudaBackend::init()
{
    const int32_t count = d_.device_count;
    devices_.resize(static_cast<size_t>(count));
    contexts_ = std::make_unique<std::atomic<CUcontext>[]>(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
        contexts_[i].store(nullptr, std::memory_order_relaxed);
        DeviceInfo &dev = devices_[i];
        if (status_t st = check(d_, d_.cuDeviceGet(&dev.handle, i), "cuDeviceGet", "open CUDA device %d", i))
            return st;
        if (status_t st = check(d_, d_.cuDeviceTotalMem(&dev.total_memory, dev.handle), "cuDeviceTotalMem",
                                "read the memory size of device %d", i))
            return st;
        dev.concurrent_managed = attribute(i, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0) != 0;
    }
    host_memory_ = physical_host_memory();
    return GPUMEM_SUCCESS;
}

// --- Contexts -------------------------------------------------------------------

status_t CudaBackend::retain(int32_t device, CUcontext *ctx)
{
    std::lock_guard<std::mutex> lock(retain_mutex_);
    CUcontext c = contexts_[device].load(std::memory_order_relaxed);
    if (!c) {
        if (status_t st = check(d_, d_.cuDevicePrimaryCtxRetain(&c, devices_[device].handle),
                                "cuDevicePrimaryCtxRetain", "start device %d (retain its primary context)", device))
            return st;
        contexts_[device].store(c, std::memory_order_release);
    }
    *ctx = c;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::bind(int32_t device)
{
    if (device < 0 || device >= device_count())
        return fail(GPUMEM_ERROR_INVALID_DEVICE, "device %d does not exist: the cuda backend has %d device(s)", device,
                    device_count());
    CUcontext ctx = contexts_[device].load(std::memory_order_acquire);
    if (!ctx)
        if (status_t st = retain(device, &ctx))
            return st;
    // Runs before most operations: a thread-local read in the driver, and
    // the switch only when another context is current.
    CUcontext current = nullptr;
    if (d_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx)
        return GPUMEM_SUCCESS;
    return check(d_, d_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", "make device %d current on this thread", device);
}

namespace {
// The device gpumem_set_device chose on this thread (the core's current
// device).  Calls that name another device bind its context for their own
// work; calls that name none come back to this one.
thread_local int32_t t_selected = 0;
} // namespace

status_t CudaBackend::activate(int32_t device)
{
    status_t st = bind(device);
    if (st == GPUMEM_SUCCESS)
        t_selected = device;
    return st;
}

status_t CudaBackend::ensure_context()
{
    return bind(t_selected < device_count() ? t_selected : 0);
}

int CudaBackend::attribute(int32_t device, CUdevice_attribute attr, int fallback) const
{
    int value = 0;
    if (d_.cuDeviceGetAttribute(&value, attr, devices_[device].handle) != CUDA_SUCCESS)
        return fallback; // an attribute newer than this driver
    return value;
}

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

// --- Device information -------------------------------------------------------

status_t CudaBackend::get_caps(int32_t device, DeviceCaps *caps)
{
    if (status_t st = bind(device))
        return st;
    const DeviceInfo &dev = devices_[device];
    char name[256] = {};
    if (status_t st = check(d_, d_.cuDeviceGetName(name, sizeof name - 1, dev.handle), "cuDeviceGetName",
                            "read the name of device %d", device))
        return st;
    int major = 0, minor = 0;
    if (status_t st = check(d_, d_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev.handle),
                            "cuDeviceGetAttribute", "read the compute capability of device %d", device))
        return st;
    if (status_t st = check(d_, d_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev.handle),
                            "cuDeviceGetAttribute", "read the compute capability of device %d", device))
        return st;
    size_t free_bytes = 0, total_bytes = 0;
    if (status_t st = check(d_, d_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo",
                            "read the free memory of device %d", device))
        return st;

    caps->name = name;
    caps->arch = "sm_" + std::to_string(major) + std::to_string(minor);
    caps->compute_capability = major * 10 + minor;
    caps->total_memory = dev.total_memory;
    caps->free_memory = free_bytes;
    caps->managed = attribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0) && d_.has_managed();
    caps->managed_migrates = caps->managed && dev.concurrent_managed;
    caps->pageable_access = attribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0) != 0;
    caps->pools = attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0) && d_.has_pools();
    caps->vmm = attribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) && d_.has_vmm();
    // Older drivers do not know the attribute and always allowed registration.
    caps->host_register = attribute(device, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1) && d_.has_host_register();

    // gpumem shares both VMM handles and pools by descriptor: both must work.
    const bool vmm_fd = caps->vmm && d_.has_vmm_ipc() &&
                        attribute(device, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0);
    const bool pool_fd = caps->pools && d_.has_pool_ipc() &&
                         (attribute(device, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0) &
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    caps->ipc_handle_types = vmm_fd && pool_fd ? GPUMEM_HANDLE_POSIX_FD : 0;

    caps->vmm_granularity = caps->vmm_recommended_granularity = 0;
    if (caps->vmm) {
        if (status_t st = granularity(device, CU_MEM_ALLOC_GRANULARITY_MINIMUM, &caps->vmm_granularity))
            return st;
        if (status_t st = granularity(device, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                                      &caps->vmm_recommended_granularity))
            return st;
    }
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes)
{
    if (status_t st = bind(device))
        return st;
    return check(d_, d_.cuMemGetInfo(free_bytes, total_bytes), "cuMemGetInfo", "read the free memory of device %d",
                 device);
}

// --- Device, pinned and managed memory ------------------------------------------

status_t CudaBackend::device_alloc(int32_t device, size_t size, void **ptr)
{
    if (status_t st = bind(device))
        return st;
    // Refused up front: the answer is certain, and no driver sees SIZE_MAX.
    if (size > devices_[device].total_memory)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes on device %d: more than its %zu bytes of memory; allocate less", size,
                    device, devices_[device].total_memory);
    CUdeviceptr p = 0;
    if (status_t st = check(d_, d_.cuMemAlloc(&p, size), "cuMemAlloc", "allocate %zu bytes on device %d", size, device))
        return st;
    *ptr = as_pointer(p);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::device_free(int32_t device, void *ptr, size_t)
{
    if (status_t st = bind(device))
        return st;
    return check(d_, d_.cuMemFree(dptr(ptr)), "cuMemFree", "free device memory at %p", ptr);
}

status_t CudaBackend::host_alloc(size_t size, uint32_t flags, void **ptr)
{
    if (status_t st = ensure_context())
        return st;
    const size_t page = page_size();
    if (size > host_memory_ || size > SIZE_MAX - page)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of pinned host memory: more than this machine's %llu bytes; allocate "
                    "less",
                    size, static_cast<unsigned long long>(host_memory_));
    // Whole pages: the core's pinned cache hands a freed block to any request
    // of the same page-rounded size, and the driver would otherwise carve
    // small requests out of shared pages, exactly as large as asked.
    size = (size + page - 1) / page * page;
    // Always portable and mapped: under unified addressing one pointer then
    // works in every context, whichever device asked.
    unsigned int cu_flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
    if (flags & GPUMEM_HOST_WRITE_COMBINED)
        cu_flags |= CU_MEMHOSTALLOC_WRITECOMBINED;
    // GPUMEM_HOST_COHERENT / _NONCOHERENT are AMD hints: nothing to say here.
    return check(d_, d_.cuMemHostAlloc(ptr, size, cu_flags), "cuMemHostAlloc",
                 "allocate %zu bytes of pinned host memory", size);
}

status_t CudaBackend::host_free(void *ptr, size_t)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemFreeHost(ptr), "cuMemFreeHost", "free pinned host memory at %p", ptr);
}

status_t CudaBackend::host_register(void *ptr, size_t size, uint32_t flags)
{
    if (status_t st = ensure_context())
        return st;
    // Portable and mapped for the same reason as host_alloc.
    unsigned int cu_flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
    if (flags & GPUMEM_HOST_REGISTER_READ_ONLY)
        cu_flags |= CU_MEMHOSTREGISTER_READ_ONLY;
    return check(d_, d_.cuMemHostRegister(ptr, size, cu_flags), "cuMemHostRegister",
                 "register %zu bytes of host memory at %p", size, ptr);
}

status_t CudaBackend::host_unregister(void *ptr, size_t)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemHostUnregister(ptr), "cuMemHostUnregister", "unregister host memory at %p", ptr);
}

status_t CudaBackend::host_device_pointer(void *host_ptr, void **device_ptr)
{
    if (status_t st = ensure_context())
        return st;
    CUdeviceptr p = 0;
    if (status_t st = check(d_, d_.cuMemHostGetDevicePointer(&p, host_ptr, 0), "cuMemHostGetDevicePointer",
                            "find the device address of pinned host memory at %p", host_ptr))
        return st;
    *device_ptr = as_pointer(p);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr)
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
    const unsigned int attach = (flags & GPUMEM_ATTACH_HOST) ? CU_MEM_ATTACH_HOST : CU_MEM_ATTACH_GLOBAL;
    CUdeviceptr p = 0;
    if (status_t st = check(d_, d_.cuMemAllocManaged(&p, size, attach), "cuMemAllocManaged",
                            "allocate %zu bytes of managed memory", size))
        return st;
    *ptr = as_pointer(p);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::managed_free(void *ptr, size_t)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemFree(dptr(ptr)), "cuMemFree", "free managed memory at %p", ptr);
}

status_t CudaBackend::prefetch(const void *ptr, size_t count, int32_t device, void *stream)
{
    if (status_t st = ensure_context())
        return st;
    // A hint the device cannot take: without concurrent managed access the
    // driver refuses GPU prefetches, and migrates at kernel launch anyway.
    if (device != GPUMEM_DEVICE_HOST && !devices_[device].concurrent_managed)
        return GPUMEM_SUCCESS;
    CUresult r;
    if (d_.prefetch_location) {
        r = d_.prefetch_location(dptr(ptr), count, location_of(device), 0, native_stream(stream));
    } else if (d_.prefetch_device) {
        CUdevice dev = device == GPUMEM_DEVICE_HOST ? CU_DEVICE_CPU : devices_[device].handle;
        r = d_.prefetch_device(dptr(ptr), count, dev, native_stream(stream));
    } else {
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this CUDA driver has no cuMemPrefetchAsync");
    }
    return check(d_, r, "cuMemPrefetchAsync", "prefetch %zu bytes at %p to %s %d", count, ptr,
                 device == GPUMEM_DEVICE_HOST ? "the host" : "device", device);
}

status_t CudaBackend::advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    if (advice == GPUMEM_ADVISE_SET_COARSE_GRAIN || advice == GPUMEM_ADVISE_UNSET_COARSE_GRAIN)
        return GPUMEM_SUCCESS; // AMD only
    if (status_t st = ensure_context())
        return st;
    // Read-mostly and unset-preferred ignore the location: any valid one will do.
    if (device != GPUMEM_DEVICE_HOST && (device < 0 || device >= device_count()))
        device = 0;
    if (device != GPUMEM_DEVICE_HOST && !devices_[device].concurrent_managed &&
        advice != GPUMEM_ADVISE_SET_READ_MOSTLY && advice != GPUMEM_ADVISE_UNSET_READ_MOSTLY)
        return GPUMEM_SUCCESS; // a GPU-located hint the device cannot take, as for prefetch
    CUresult r;
    if (d_.advise_location) {
        r = d_.advise_location(dptr(ptr), count, advice_of(advice), location_of(device));
    } else if (d_.advise_device) {
        CUdevice dev = device == GPUMEM_DEVICE_HOST ? CU_DEVICE_CPU : devices_[device].handle;
        r = d_.advise_device(dptr(ptr), count, advice_of(advice), dev);
    } else {
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this CUDA driver has no cuMemAdvise");
    }
    return check(d_, r, "cuMemAdvise", "apply advice %d to %zu bytes at %p", advice, count, ptr);
}

status_t CudaBackend::stream_attach(void *stream, void *ptr, size_t length, uint32_t flags)
{
    if (status_t st = ensure_context())
        return st;
    unsigned int attach = CU_MEM_ATTACH_GLOBAL;
    if (flags & GPUMEM_ATTACH_HOST)
        attach = CU_MEM_ATTACH_HOST;
    else if (flags & GPUMEM_ATTACH_SINGLE)
        attach = CU_MEM_ATTACH_SINGLE;
    return check(d_, d_.cuStreamAttachMemAsync(native_stream(stream), dptr(ptr), length, attach),
                 "cuStreamAttachMemAsync", "attach %zu bytes of managed memory at %p to stream %p", length, ptr,
                 stream);
}

// --- Streams and events -----------------------------------------------------------

status_t CudaBackend::stream_create(int32_t device, void **stream)
{
    if (status_t st = bind(device))
        return st;
    // A blocking stream: ordered with the legacy default stream, as
    // cudaStreamCreate makes them.
    CUstream s = nullptr;
    if (status_t st = check(d_, d_.cuStreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate",
                            "create a stream on device %d", device))
        return st;
    *stream = s;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::stream_destroy(void *stream)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuStreamDestroy(native_stream(stream)), "cuStreamDestroy", "destroy stream %p", stream);
}

status_t CudaBackend::stream_synchronize(void *stream)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuStreamSynchronize(native_stream(stream)), "cuStreamSynchronize",
                 "wait for stream %p", stream);
}

status_t CudaBackend::stream_query(void *stream)
{
    if (status_t st = ensure_context())
        return st;
    CUresult r = d_.cuStreamQuery(native_stream(stream));
    if (r == CUDA_ERROR_NOT_READY)
        return fail(GPUMEM_ERROR_BUSY, "the stream still has pending work");
    return check(d_, r, "cuStreamQuery", "query stream %p", stream);
}

status_t CudaBackend::event_create(int32_t device, void **event)
{
    if (status_t st = bind(device))
        return st;
    // Timing stays enabled: gpumem_event_elapsed_ms needs it.
    CUevent e = nullptr;
    if (status_t st = check(d_, d_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate",
                            "create an event on device %d", device))
        return st;
    *event = e;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::event_destroy(void *event)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuEventDestroy(native_event(event)), "cuEventDestroy", "destroy event %p", event);
}

status_t CudaBackend::event_record(void *event, void *stream)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuEventRecord(native_event(event), native_stream(stream)), "cuEventRecord",
                 "record event %p on stream %p", event, stream);
}

status_t CudaBackend::event_synchronize(void *event)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuEventSynchronize(native_event(event)), "cuEventSynchronize", "wait for event %p", event);
}

status_t CudaBackend::event_query(void *event)
{
    if (status_t st = ensure_context())
        return st;
    CUresult r = d_.cuEventQuery(native_event(event));
    if (r == CUDA_ERROR_NOT_READY)
        return fail(GPUMEM_ERROR_BUSY, "the event has not completed yet");
    return check(d_, r, "cuEventQuery", "query event %p", event);
}

status_t CudaBackend::stream_wait_event(void *stream, void *event)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuStreamWaitEvent(native_stream(stream), native_event(event), 0), "cuStreamWaitEvent",
                 "make stream %p wait for event %p", stream, event);
}

status_t CudaBackend::event_elapsed_ms(float *ms, void *start, void *end)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuEventElapsedTime(ms, native_event(start), native_event(end)), "cuEventElapsedTime",
                 "time events %p to %p", start, end);
}

status_t CudaBackend::device_synchronize(int32_t device)
{
    if (status_t st = bind(device))
        return st;
    return check(d_, d_.cuCtxSynchronize(), "cuCtxSynchronize", "wait for device %d", device);
}

// --- Copies and fills ---------------------------------------------------------------
//
// The synchronous forms return with the bytes in place.  The driver's own
// synchronous calls do not promise that (a device-to-device cuMemcpy or a
// cuMemsetD8 of device memory may still run), so they are followed by a
// wait on their stream, which costs nothing when the work is already done.

status_t CudaBackend::copy(void *dst, const void *src, size_t n, void *stream, bool async)
{
    if (status_t st = ensure_context())
        return st;
    CUstream s = native_stream(stream);
    if (async || s) {
        if (status_t st = check(d_, d_.cuMemcpyAsync(dptr(dst), dptr(src), n, s), "cuMemcpyAsync",
                                "copy %zu bytes from %p to %p", n, src, dst))
            return st;
    } else if (status_t st = check(d_, d_.cuMemcpy(dptr(dst), dptr(src), n), "cuMemcpy",
                                   "copy %zu bytes from %p to %p", n, src, dst)) {
        return st;
    }
    if (async)
        return GPUMEM_SUCCESS;
    return check(d_, d_.cuStreamSynchronize(s), "cuStreamSynchronize", "wait for the copy of %zu bytes to %p", n,
                 dst);
}

status_t CudaBackend::fill(void *dst, int32_t value, size_t n, void *stream, bool async)
{
    if (status_t st = ensure_context())
        return st;
    CUstream s = native_stream(stream);
    const unsigned char byte = static_cast<unsigned char>(value);
    const bool ordered = async || s;
    CUresult r = ordered ? d_.cuMemsetD8Async(dptr(dst), byte, n, s) : d_.cuMemsetD8(dptr(dst), byte, n);
    if (r == CUDA_ERROR_INVALID_VALUE && unknown_to_driver(dst)) {
        // Plain (pageable) host memory, which this device cannot write: the
        // CPU fills it once the stream's earlier work is done, so stream
        // order holds (the fill is simply complete on return).
        if (status_t st = check(d_, d_.cuStreamSynchronize(s), "cuStreamSynchronize",
                                "wait for stream %p before filling host memory at %p", stream, dst))
            return st;
        std::memset(dst, byte, n);
        return GPUMEM_SUCCESS;
    }
    if (status_t st = check(d_, r, ordered ? "cuMemsetD8Async" : "cuMemsetD8", "set %zu bytes at %p", n, dst))
        return st;
    if (async)
        return GPUMEM_SUCCESS;
    return check(d_, d_.cuStreamSynchronize(s), "cuStreamSynchronize", "wait for the fill of %zu bytes at %p", n,
                 dst);
}

bool CudaBackend::unknown_to_driver(const void *ptr) const
{
    if (!d_.cuPointerGetAttribute)
        return false;
    unsigned int type = 0;
    return d_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(ptr)) == CUDA_ERROR_INVALID_VALUE;
}

} // namespace cuda

status_t make_cuda_backend(const char *library, std::unique_ptr<Backend> *out)
{
    try {
        const cuda::Driver *driver = nullptr;
        if (status_t st = cuda::load_driver(library, &driver))
            return st;
        auto backend = std::make_unique<cuda::CudaBackend>(*driver);
        if (backend->init() != GPUMEM_SUCCESS) {
            const std::string why = last_error_message(); // fail() overwrites it
            return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE, "the cuda backend is unavailable: %s", why.c_str());
        }
        *out = std::move(backend);
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot start the cuda backend: out of host memory");
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "cannot start the cuda backend: unexpected failure");
    }
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
