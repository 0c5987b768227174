// GpuBackend<Vendor>: devices, the memory kinds, streams, events, copies.
// Included once per vendor by the file that instantiates the template.
#pragma once

#include <cstring>
#include <new>
#include <string>

#include <unistd.h>

#include "backends/gpu/gpu_backend.hpp"
#include "base/log.hpp"

namespace gpumem::detail::gpu {

namespace {

inline uint64_t physical_host_memory()
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

} // namespace

template <typename Vendor> status_t GpuBackend<Vendor>::init()
{
    if (status_t st = v_.init())
        return st;
    host_memory_ = physical_host_memory();
    workarounds_ = vendor_bugs_in_force(Vendor::id, v_.runtime_version(), &bugs_);
    for (const VendorBugInfo &b : bugs_)
        log(LogLevel::info, "%s runtime version %d: known bug %s (%s): %s", Vendor::name, v_.runtime_version(), b.name,
            b.bug, b.workaround);
    return GPUMEM_SUCCESS;
}

// --- Devices ----------------------------------------------------------------------

template <typename Vendor> GpuBackend<Vendor>::Placed::~Placed()
{
    if (switched_ && v_.restore(caller_) != GPUMEM_SUCCESS)
        log(LogLevel::error, "%s", last_error_message()); // nothing to return it through
}

template <typename Vendor> status_t GpuBackend<Vendor>::Placed::enter(int32_t device, int32_t count)
{
    if (device < 0 || device >= count)
        return fail(GPUMEM_ERROR_INVALID_DEVICE, "device %d does not exist: the %s backend has %d device(s)", device,
                    Vendor::name, count);
    caller_ = v_.current();
    entered_ = true;
    if (v_.is_current(caller_, device)) [[likely]]
        return GPUMEM_SUCCESS;
    if (status_t st = v_.bind(device))
        return st;
    switched_ = true;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::Placed::enter_for_query(int32_t device, int32_t count)
{
    if (device >= 0 && device < count && !v_.started(device))
        return GPUMEM_SUCCESS;
    return enter(device, count); // which refuses a device out of range
}

template <typename Vendor> int32_t GpuBackend<Vendor>::current_device() const
{
    const int32_t d = v_.device_of(v_.current());
    return d >= 0 && d < device_count() ? d : 0;
}

template <typename Vendor> status_t GpuBackend<Vendor>::set_current_device(int32_t device)
{
    if (device < 0 || device >= device_count())
        return fail(GPUMEM_ERROR_INVALID_DEVICE, "device %d does not exist: the %s backend has %d device(s)", device,
                    Vendor::name, device_count());
    return v_.bind(device);
}

template <typename Vendor> size_t GpuBackend<Vendor>::largest_device() const
{
    size_t largest = 0;
    for (int32_t i = 0; i < device_count(); ++i)
        largest = v_.device(i).total_memory > largest ? v_.device(i).total_memory : largest;
    return largest;
}

template <typename Vendor> status_t GpuBackend<Vendor>::get_caps(int32_t device, DeviceCaps *caps)
{
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    char name[256] = {};
    if (status_t st = check(api(), v_.device_name(name, sizeof name - 1, device), "read the name of device %d",
                            device))
        return st;
    caps->vendor_name = Vendor::vendor_name;
    // The architecture and what the device supports: the vendor's to say.
    if (status_t st = v_.device_caps(device, caps))
        return st;
    // Free memory is the one answer that needs the device's context: 0 (not
    // read) for a device not started.
    size_t free_bytes = 0, total_bytes = 0;
    if (here.entered())
        if (status_t st = check(api(), v_.mem_get_info(&free_bytes, &total_bytes),
                                "read the free memory of device %d", device))
            return st;
    caps->name = name;
    caps->driver_version = v_.runtime_version();
    // A runtime whose loader did not resolve the call (an optional entry)
    // tells no UUID: the self-test's cache is then keyed by the device's name.
    caps->uuid.clear();
    if (v_.has_uuid()) {
        unsigned char bytes[16] = {};
        if (status_t st = check(api(), v_.device_uuid(bytes, device), "read the UUID of device %d", device))
            return st;
        static const char k_hex[] = "0123456789abcdef";
        for (unsigned char b : bytes) {
            caps->uuid += k_hex[b >> 4];
            caps->uuid += k_hex[b & 15];
        }
    }
    // The PCI address needs no context either; a runtime without the call tells none.
    caps->pci_bus_id.clear();
    if (v_.has_pci_bus_id()) {
        char bus_id[32] = {};
        if (status_t st = check(api(), v_.pci_bus_id(bus_id, static_cast<int>(sizeof bus_id), device),
                                "read the PCI address of device %d", device))
            return st;
        caps->pci_bus_id = bus_id;
    }
    caps->peer_access = peer_access() != nullptr && device_count() > 1;
    caps->stream_priorities = api().has_stream_priority();
    caps->host_funcs = api().has_host_func();
    caps->ipc_events = api().has_ipc_events() && v_.has_event_flags();
    caps->coarse_grain_advice = caps->managed && Vendor::takes_advice(GPUMEM_ADVISE_SET_COARSE_GRAIN);
    caps->total_memory = v_.device(device).total_memory;
    caps->free_memory = free_bytes;
    caps->vmm_granularity = caps->vmm_recommended_granularity = 0;
    if (caps->vmm) {
        if (status_t st = check(api(), v_.granularity(&caps->vmm_granularity, device, false),
                                "read the VMM granularity of device %d", device))
            return st;
        if (status_t st = check(api(), v_.granularity(&caps->vmm_recommended_granularity, device, true),
                                "read the VMM granularity of device %d", device))
            return st;
    }
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.mem_get_info(free_bytes, total_bytes), "read the free memory of device %d", device);
}

// --- Peer access ----------------------------------------------------------------------
//
// The vendors keep peer access per current device (CUDA: per context, the
// primary one here).  The peer is entered first (CUDA retains the peer's
// primary context that way), then the call runs in `device`'s.  "Already
// enabled" and "not enabled" are what the caller asked for: SUCCESS.

template <typename Vendor>
status_t GpuBackend<Vendor>::can_access_peer(int32_t device, int32_t peer, int32_t *can_access)
{
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    int can = 0;
    if (status_t st = check(api(), v_.can_access_peer(&can, device, peer),
                            "ask whether device %d can access device %d", device, peer))
        return st;
    *can_access = can ? 1 : 0;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::enable_peer_access(int32_t device, int32_t peer, bool *enabled_now)
{
    if (enabled_now)
        *enabled_now = false;
    int32_t can = 0;
    if (status_t st = can_access_peer(device, peer, &can))
        return st;
    if (!can)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot enable peer access from device %d to device %d: %s says the devices cannot reach each "
                    "other's memory (no NVLink/PCIe peer path, or IOMMU settings); copy through gpumem_memcpy, "
                    "which needs no peer access",
                    device, peer, Vendor::runtime_words);
    {
        Placed peer_context(v_);
        if (status_t st = peer_context.enter(peer, device_count()))
            return st;
    }
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const Call<Result> c = v_.enable_peer(peer);
    if (c.r == Vendor::peer_already_enabled)
        return GPUMEM_SUCCESS;
    if (status_t st = check(api(), c, "enable peer access from device %d to device %d", device, peer))
        return st;
    if (enabled_now)
        *enabled_now = true;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::disable_peer_access(int32_t device, int32_t peer)
{
    {
        Placed peer_context(v_);
        if (status_t st = peer_context.enter(peer, device_count()))
            return st;
    }
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const Call<Result> c = v_.disable_peer(peer);
    if (c.r == Vendor::peer_not_enabled)
        return GPUMEM_SUCCESS;
    return check(api(), c, "disable peer access from device %d to device %d", device, peer);
}

// --- Device, pinned and managed memory ------------------------------------------

template <typename Vendor> status_t GpuBackend<Vendor>::device_alloc(int32_t device, size_t size, void **ptr)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    // Refused up front: the answer is certain, and no runtime sees SIZE_MAX.
    const size_t total = v_.device(device).total_memory;
    if (size > total)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes on device %d: more than its %zu bytes of memory; allocate less", size,
                    device, total);
    void *p = nullptr;
    if (status_t st = check(api(), v_.malloc(&p, size), "allocate %zu bytes on device %d", size, device))
        return st;
    *ptr = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::device_free(int32_t device, void *ptr, size_t)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.free(ptr), "free device memory at %p", ptr);
}

template <typename Vendor> status_t GpuBackend<Vendor>::host_alloc(int32_t device, size_t size, uint32_t flags, void **ptr)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    if (size > host_memory_)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of pinned host memory: more than this machine's %llu bytes; allocate "
                    "less",
                    size, static_cast<unsigned long long>(host_memory_));
    // Always portable and mapped (the vendor's flags): one pointer then works
    // on every device, whichever asked.
    return check(api(), v_.host_alloc(ptr, size, flags), "allocate %zu bytes of pinned host memory", size);
}

template <typename Vendor> status_t GpuBackend<Vendor>::host_free(int32_t device, void *ptr, size_t)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.host_free(ptr), "free pinned host memory at %p", ptr);
}

template <typename Vendor> status_t GpuBackend<Vendor>::host_register(int32_t device, void *ptr, size_t size, uint32_t flags)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.host_register(ptr, size, flags), "register %zu bytes of host memory at %p", size, ptr);
}

template <typename Vendor> status_t GpuBackend<Vendor>::host_unregister(int32_t device, void *ptr, size_t)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.host_unregister(ptr), "unregister host memory at %p", ptr);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::host_device_pointer(int32_t device, void *host_ptr, void **device_ptr)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *p = nullptr;
    if (status_t st = check(api(), v_.host_device_pointer(&p, host_ptr),
                            "find the device address of pinned host memory at %p", host_ptr))
        return st;
    *device_ptr = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    // Managed memory may oversubscribe a device, but not host and devices together.
    uint64_t ceiling = host_memory_;
    for (int32_t i = 0; i < device_count(); ++i) {
        const size_t total = v_.device(i).total_memory;
        ceiling = ceiling > UINT64_MAX - total ? UINT64_MAX : ceiling + total;
    }
    if (size > ceiling)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of managed memory: more than host and device memory together (%llu "
                    "bytes); allocate less",
                    size, static_cast<unsigned long long>(ceiling));
    void *p = nullptr;
    if (status_t st = check(api(), v_.managed_alloc(&p, size, (flags & GPUMEM_ATTACH_HOST) != 0),
                            "allocate %zu bytes of managed memory", size))
        return st;
    *ptr = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::managed_free(int32_t device, void *ptr, size_t)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.free(ptr), "free managed memory at %p", ptr);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::prefetch(int32_t device, const void *ptr, size_t count, int32_t target, void *stream)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return v_.prefetch(ptr, count, target, stream);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::advise(int32_t device, const void *ptr, size_t count, int32_t advice, int32_t location)
{
    if (!Vendor::takes_advice(advice))
        return GPUMEM_SUCCESS; // another vendor's advice
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    // Advice that ignores the location: any valid one will do.
    if (location != GPUMEM_DEVICE_HOST && (location < 0 || location >= device_count()))
        location = Vendor::advice_on_selected ? device : 0;
    return v_.advise(ptr, count, advice, location);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::stream_attach(int32_t device, void *stream, void *ptr, size_t length, uint32_t flags)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.stream_attach(stream, ptr, length, flags),
                 "attach %zu bytes of managed memory at %p to stream %p", length, ptr, stream);
}

// --- Streams and events -----------------------------------------------------------

template <typename Vendor>
status_t GpuBackend<Vendor>::stream_create(int32_t device, uint32_t flags, int32_t priority, void **stream)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *s = nullptr;
    if (status_t st = check(api(), v_.stream_create(&s, flags, priority),
                            "create a stream on device %d (flags 0x%x, priority %d)", device, flags, priority))
        return st;
    *stream = s;
    return GPUMEM_SUCCESS;
}

// A stream names its context: the queries enter a device only for the default stream.
template <typename Vendor> status_t GpuBackend<Vendor>::stream_flags(int32_t device, void *stream, uint32_t *flags)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    unsigned int f = 0;
    if (status_t st = check(api(), v_.stream_get_flags(stream, &f), "read the flags of stream %p", stream))
        return st;
    *flags = f & GPUMEM_STREAM_NON_BLOCKING;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::stream_priority(int32_t device, void *stream, int32_t *priority)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    int p = 0;
    if (status_t st = check(api(), v_.stream_get_priority(stream, &p), "read the priority of stream %p", stream))
        return st;
    *priority = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::priority_range(int32_t device, int32_t *least, int32_t *greatest)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    int lo = 0, hi = 0;
    if (status_t st = check(api(), v_.priority_range(&lo, &hi), "read the stream priorities of device %d", device))
        return st;
    *least = lo;
    *greatest = hi;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::launch_host_func(int32_t device, void *stream, void (*fn)(void *), void *user)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    return check(api(), v_.launch_host_func(stream, fn, user), "run a host function on stream %p", stream);
}

// A stream or event handle names its own context: the vendors act on it
// whatever is current (driver 580: from another device's context, and with
// none: tests/fakes/probe/h100x4-placement.txt), so the thin paths enter a
// device only for the default stream (nullptr), which means the current one's.
template <typename Vendor>
status_t GpuBackend<Vendor>::enter_for_stream(Placed &here, int32_t device, const void *stream)
{
    return stream ? GPUMEM_SUCCESS : here.enter(device, device_count());
}

template <typename Vendor> status_t GpuBackend<Vendor>::stream_device(void *stream, int32_t *device)
{
    const int32_t d = v_.stream_device(stream);
    if (d >= 0 && d < device_count())
        *device = d;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::stream_destroy(int32_t device, void *stream)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.stream_destroy(stream), "destroy stream %p", stream);
}

template <typename Vendor> status_t GpuBackend<Vendor>::stream_synchronize(int32_t device, void *stream)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    return check(api(), v_.stream_synchronize(stream), "wait for stream %p", stream);
}

template <typename Vendor> status_t GpuBackend<Vendor>::stream_query(int32_t device, void *stream)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    const Call<Result> c = v_.stream_query(stream);
    if (c.r == Vendor::codes.not_ready)
        return fail(GPUMEM_ERROR_BUSY, "the stream still has pending work");
    return check(api(), c, "query stream %p", stream);
}

template <typename Vendor> status_t GpuBackend<Vendor>::event_create(int32_t device, uint32_t flags, void **event)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *e = nullptr;
    if (status_t st = check(api(), v_.event_create(&e, flags), "create an event on device %d (flags 0x%x)", device,
                            flags))
        return st;
    *event = e;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::event_ipc_handle(int32_t device, void *event, gpumem_ipc_event_handle_t *handle)
{
    // The event names its context, yet CUDA answers INVALID_CONTEXT when none is current
    // (cuda_probe rows: ipc_handle_no_context): the event's device is entered.
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.ipc_event_handle(handle, event), "share event %p with other processes", event);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::event_ipc_open(int32_t device, const gpumem_ipc_event_handle_t *handle, void **event)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *e = nullptr;
    const Call<Result> c = v_.ipc_event_open(&e, handle);
    // The driver's answer for a handle of this process (cuda_probe rows: ipc_event_open_same_process).
    if (c.r == Vendor::codes.invalid_context)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot open an event handle on device %d: %s failed with %s; a handle made in this process is "
                    "not opened here (use the event itself), only in another process",
                    device, c.name, error_name(api(), c.r));
    if (status_t st = check(api(), c, "open an event handle on device %d", device))
        return st;
    *event = e;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::event_destroy(int32_t device, void *event)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.event_destroy(event), "destroy event %p", event);
}

template <typename Vendor> status_t GpuBackend<Vendor>::event_record(int32_t device, void *event, void *stream)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    return check(api(), v_.event_record(event, stream), "record event %p on stream %p", event, stream);
}

template <typename Vendor> status_t GpuBackend<Vendor>::event_synchronize(int32_t, void *event)
{
    // The event names its context; none needs to be current.
    return check(api(), v_.event_synchronize(event), "wait for event %p", event);
}

template <typename Vendor> status_t GpuBackend<Vendor>::event_query(int32_t, void *event)
{
    // The event names its context; none needs to be current.
    const Call<Result> c = v_.event_query(event);
    if (c.r == Vendor::codes.not_ready)
        return fail(GPUMEM_ERROR_BUSY, "the event has not completed yet");
    return check(api(), c, "query event %p", event);
}

template <typename Vendor> status_t GpuBackend<Vendor>::stream_wait_event(int32_t device, void *stream, void *event)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    return check(api(), v_.stream_wait_event(stream, event), "make stream %p wait for event %p", stream, event);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::event_elapsed_ms(int32_t device, float *ms, void *start, void *end)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.event_elapsed(ms, start, end), "time events %p to %p", start, end);
}

template <typename Vendor> status_t GpuBackend<Vendor>::device_synchronize(int32_t device)
{
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    if (!here.entered())
        return GPUMEM_SUCCESS; // no context, so no work to wait for
    return check(api(), v_.device_synchronize(), "wait for device %d", device);
}

// --- Copies and fills ---------------------------------------------------------------
//
// The synchronous forms return with the bytes in place.  The runtimes' own
// synchronous calls do not promise that for every pair (a device-to-device
// copy or a fill of device memory may still run), so they are followed by a
// wait on their stream, which costs nothing when the work is already done.

// The driver checks a copy's pointers against the current context, whatever
// the stream (tests/fakes/probe/h100x4-placement.txt): the core names the
// device that reaches them.
template <typename Vendor>
status_t GpuBackend<Vendor>::copy(int32_t device, void *dst, const void *src, size_t n, void *stream, CopyMode mode)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const bool runtime_sync = mode != CopyMode::async && !stream;
    const Call<Result> c = runtime_sync ? v_.memcpy(dst, src, n) : v_.memcpy_async(dst, src, n, stream);
    if (status_t st = check(api(), c, "copy %zu bytes from %p to %p on device %d", n, src, dst, device))
        return st;
    if (mode == CopyMode::async || (runtime_sync && mode == CopyMode::sync_into_host))
        return GPUMEM_SUCCESS;
    return check(api(), v_.stream_synchronize(stream), "wait for the copy of %zu bytes to %p", n, dst);
}

// The vendor's pointer query, and where it tells no range (HIP's
// hipPointerAttribute_t has none) the address-range query, asked from the
// memory's device, which reaches it (host memory: from the current one).  A
// range the runtime does not find there is left untold (base nullptr): the
// kind of memory is still its answer.
template <typename Vendor> status_t GpuBackend<Vendor>::vendor_pointer(const void *ptr, VendorPointer *out)
{
    if (status_t st = v_.vendor_pointer(ptr, out))
        return st;
    if (!out->known || out->base || !v_.has_address_range())
        return GPUMEM_SUCCESS;
    const int32_t where = out->device >= 0 && out->device < device_count() ? out->device : current_device();
    Placed here(v_);
    if (status_t st = here.enter(where, device_count()))
        return st;
    void *base = nullptr;
    size_t size = 0;
    if (v_.address_range(&base, &size, const_cast<void *>(ptr)).r == Api::success) {
        out->base = base;
        out->size = size;
    }
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::copy_peer(int32_t dst_device, void *dst, int32_t src_device, const void *src, size_t n,
                                       void *stream, bool async)
{
    Placed here(v_);
    if (status_t st = here.enter(dst_device, device_count()))
        return st;
    if (src_device < 0 || src_device >= device_count())
        return fail(GPUMEM_ERROR_INVALID_DEVICE, "device %d does not exist: the %s backend has %d device(s)",
                    src_device, Vendor::name, device_count());
    if (!v_.has_peer_copy())
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot copy %zu bytes from device %d to device %d: %s has no peer copy, and each device "
                    "reaches only its own pool or VMM memory; grant access (gpumem_pool_set_access, "
                    "gpumem_mem_set_access) so that one device reaches both",
                    n, src_device, dst_device, Vendor::runtime_words);
    if (status_t st = v_.memcpy_peer(dst, dst_device, src, src_device, n, stream))
        return st;
    if (async)
        return GPUMEM_SUCCESS;
    return check(api(), v_.stream_synchronize(stream), "wait for the copy of %zu bytes to %p", n, dst);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::fill(int32_t device, void *dst, int32_t value, size_t n, void *stream, bool async)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const unsigned char byte = static_cast<unsigned char>(value);
    const Call<Result> c = async || stream ? v_.memset_async(dst, byte, n, stream) : v_.memset(dst, byte, n);
    if (v_.refused_host_memory(c.r, dst))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "cannot set %zu bytes at %p: %s failed with %s, and %s does not know the address (host memory "
                    "it cannot write, or none)",
                    n, dst, c.name, error_name(api(), c.r), Vendor::runtime_words);
    if (status_t st = check(api(), c, "set %zu bytes at %p", n, dst))
        return st;
    if (async)
        return GPUMEM_SUCCESS;
    return check(api(), v_.stream_synchronize(stream), "wait for the fill of %zu bytes at %p", n, dst);
}

// --- Rows and boxes ----------------------------------------------------------------------
//
// The core checked every row and placed the call on the device whose memory
// the rows are.  The synchronous forms enqueue on their stream and wait for
// it, as copy() does where the runtime's synchronous call would not.

template <typename Vendor>
status_t GpuBackend<Vendor>::alloc_pitch(int32_t device, size_t width, size_t height, void **ptr, size_t *pitch)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *p = nullptr;
    size_t got = 0;
    if (status_t st = check(api(), v_.malloc_pitch(&p, &got, width, height),
                            "allocate %zu rows of %zu bytes on device %d", height, width, device))
        return st;
    *ptr = p;
    *pitch = got;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::copy_rows(int32_t device, const RowsCopy &c, void *stream, CopyMode mode)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    if (status_t st = check(api(), v_.memcpy_rows_async(c, stream),
                            "copy %zu x %zu x %zu bytes from %p (pitch %zu) to %p (pitch %zu) on device %d", c.width,
                            c.height, c.depth, c.src, c.src_pitch, c.dst, c.dst_pitch, device))
        return st;
    if (mode == CopyMode::async)
        return GPUMEM_SUCCESS;
    return check(api(), v_.stream_synchronize(stream), "wait for the copy of rows to %p", c.dst);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::fill_rows(int32_t device, void *dst, size_t pitch, unsigned char byte, size_t width,
                                       size_t height, void *stream, bool async)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const Call<Result> c = v_.memset_2d_async(dst, pitch, byte, width, height, stream);
    if (v_.refused_host_memory(c.r, dst))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "cannot set %zu rows of %zu bytes at %p: %s failed with %s, and %s does not know the address "
                    "(host memory it cannot write, or none)",
                    height, width, dst, c.name, error_name(api(), c.r), Vendor::runtime_words);
    if (status_t st = check(api(), c, "set %zu rows of %zu bytes at %p (pitch %zu)", height, width, dst, pitch))
        return st;
    if (async)
        return GPUMEM_SUCCESS;
    return check(api(), v_.stream_synchronize(stream), "wait for the fill of rows at %p", dst);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::fill_elements(int32_t device, void *dst, uint32_t value, unsigned size, size_t count,
                                           void *stream, bool async)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    const Call<Result> c = size == 2 ? v_.memset_d16_async(dst, static_cast<unsigned short>(value), count, stream)
                                     : v_.memset_d32_async(dst, value, count, stream);
    if (v_.refused_host_memory(c.r, dst))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "cannot set %zu %u-byte elements at %p: %s failed with %s, and %s does not know the address "
                    "(host memory it cannot write, or none)",
                    count, size * 8, dst, c.name, error_name(api(), c.r), Vendor::runtime_words);
    if (status_t st = check(api(), c, "set %zu %u-bit elements at %p", count, size * 8, dst))
        return st;
    if (async)
        return GPUMEM_SUCCESS;
    return check(api(), v_.stream_synchronize(stream), "wait for the fill of %zu elements at %p", count, dst);
}

// --- gpumem's own pool ------------------------------------------------------------------

template <typename Vendor>
status_t GpuBackend<Vendor>::pool_upstream(int32_t device, bool shareable, size_t page, uint64_t, bool rdma,
                                           std::unique_ptr<PoolUpstream> *out)
{
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    if (shareable)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "gpumem's own pool cannot share memory between processes on the %s backend; use a native pool "
                    "(GPUMEM_POOL_NATIVE or AUTO, and do not disable pools with GPUMEM_DISABLE)",
                    Vendor::name);
    // max_size is the pool's to enforce.  Paged chunks give back the memory
    // under free holes (VMM pages); else chunks are plain allocations.
    const bool paged = page && (page & (page - 1)) == 0 && page <= k_chunk_granule;
    if (rdma && !paged)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "memory for GPUDirect RDMA and NCCL (GPUMEM_POOL_RDMA) is VMM memory, and device %d's VMM page "
                    "of %zu bytes does not fit gpumem's %zu-byte pool chunks",
                    device, page, k_chunk_granule);
    if (paged)
        *out = make_paged_device_upstream(*this, device, page, k_chunk_granule, rdma);
    else
        *out = make_device_chunk_upstream(*this, device, k_chunk_granule);
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::pool_upstream_import(int32_t, int, std::unique_ptr<PoolUpstream> *)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "the %s backend imports only native pools; export the pool from a native pool (GPUMEM_POOL_NATIVE "
                "or AUTO) in the other process",
                Vendor::name);
}

// --- Starting ----------------------------------------------------------------------

// Loads the vendor's runtime with `load` (once per process) and starts a
// backend over it; BACKEND_UNAVAILABLE with the reason when it cannot start.
template <typename Vendor>
status_t make_gpu_backend(const char *library, status_t (*load)(const char *, const typename Vendor::Api **),
                          std::unique_ptr<Backend> *out)
{
    try {
        const typename Vendor::Api *api = nullptr;
        if (status_t st = load(library, &api))
            return st;
        auto backend = std::make_unique<GpuBackend<Vendor>>(*api);
        if (backend->init() != GPUMEM_SUCCESS) {
            const std::string why = last_error_message(); // fail() overwrites it
            return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE, "the %s backend is unavailable: %s", Vendor::name,
                        why.c_str());
        }
        *out = std::move(backend);
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot start the %s backend: out of host memory", Vendor::name);
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "cannot start the %s backend: unexpected failure", Vendor::name);
    }
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::gpu
