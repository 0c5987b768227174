// What the HIP backend does its own way (gpu/gpu_backend.hpp has the rest).
//
// The runtime API has no contexts to manage: a device is made current on the
// calling thread with hipSetDevice, and gpumem shares the application's
// runtime, so its memory and streams mix freely with hipMalloc'ed memory and
// hipStream_t.  The backend makes the device a call names current for that
// call and puts the caller's back (GpuBackend::Placed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/backend.hpp"
#include "backends/gpu/gpu_backend.hpp"
#include "backends/hip/hip_runtime.hpp"

namespace gpumem::detail::hip {

// What is fixed about a device, read once.
struct DeviceInfo {
    size_t total_memory = 0;
    bool managed = false;          // hipMallocManaged works
    bool managed_migrates = false; // XNACK: pages move on access
    bool pools = false;            // stream-ordered pools work
    bool vmm = false;              // hipMemCreate and friends work
};

// A device ordinal as the runtime's location.
hipMemLocation location_of(int32_t device);
// GPUMEM_ACCESS_* as the runtime's protection flags.
hipMemAccessFlags access_flags(int32_t flags);
// GPUMEM_POOL_ATTR_* (checked by the caller) as the runtime's attribute.
int pool_attribute(int32_t attr);

class Vendor : public gpu::VendorBase<Runtime, DeviceInfo> {
public:
    static constexpr const char *name = "hip";
    static constexpr int32_t id = GPUMEM_BACKEND_HIP;
    static constexpr const char *runtime_words = "the HIP runtime";
    static constexpr const char *vendor_name = "HIP";
    static constexpr gpu::Codes<hipError_t> codes{hipErrorNotReady, hipErrorOutOfMemory, hipErrorNotSupported,
                                                  hipErrorInvalidValue, hipErrorInvalidContext};
    // ROCm exports a dma-buf, whose size lseek(SEEK_END) tells.
    static constexpr bool dmabuf_size = true;
    // Location-free advice with no valid device goes to the selected device.
    static constexpr bool advice_on_selected = true;
    static bool takes_advice(int32_t) { return true; }

    using VendorBase::VendorBase;

    // Reads the devices and probes what each really supports.
    status_t init();
    // HIP_VERSION of the loaded runtime (hipRuntimeGetVersion).
    int runtime_version() const { return api_.runtime_version; }
    // What is current on a thread: a device ordinal (-1 when it cannot be read).
    using Current = int;
    Current current() const
    {
        int d = -1;
        return api_.hipGetDevice(&d) == hipSuccess ? d : -1;
    }
    static bool is_current(Current c, int32_t device) { return c == device; }
    // Make `device` current on the calling thread.
    status_t bind(int32_t device);
    // Whether gpumem may leave `device` alone until it is used (the cuda
    // backend's Vendor::started).  HIP queries run on the current device, and
    // whether ROCm makes per-device state on hipSetDevice was never asked of
    // an AMD GPU: every device counts as started and is entered for every query.
    static bool started(int32_t) { return true; }
    // Put back what current() read (nothing to put back when it could not be read).
    status_t restore(Current c) const
    {
        if (c < 0)
            return GPUMEM_SUCCESS;
        return check(api_, api_.hipSetDevice(c), "hipSetDevice", "put back the caller's device %d", c);
    }
    static int32_t device_of(Current c) { return c; }
    // `src` (on src_device) to `dst` (on dst_device) on `stream`, where has_peer_copy().
    bool has_peer_copy() const { return api_.hipMemcpyPeerAsync != nullptr; }
    status_t memcpy_peer(void *dst, int32_t dst_device, const void *src, int32_t src_device, size_t n,
                         void *stream);
    // The device's 16-byte UUID, where has_uuid().
    bool has_uuid() const { return api_.hipDeviceGetUuid != nullptr; }
    Call device_uuid(unsigned char out[16], int32_t device) const
    {
        hipUUID u{};
        const hipError_t r = api_.hipDeviceGetUuid(&u, native_device(device));
        static_assert(sizeof u.bytes == 16, "hipUUID");
        std::memcpy(out, u.bytes, sizeof u.bytes);
        return {r, "hipDeviceGetUuid"};
    }
    // The device the runtime says `ptr`'s memory is on.
    status_t pointer_device(const void *ptr, int32_t *device) const;
    // What the runtime knows of an address gpumem did not make: its memory
    // type and device (hipPointerAttribute_t tells no range: the backend asks
    // hipMemGetAddressRange for it).
    status_t vendor_pointer(const void *ptr, VendorPointer *out) const;
    // The device's PCI address, where has_pci_bus_id().
    bool has_pci_bus_id() const { return api_.hipDeviceGetPCIBusId != nullptr; }
    Call pci_bus_id(char *out, int length, int32_t device) const
    {
        return {api_.hipDeviceGetPCIBusId(out, length, native_device(device)), "hipDeviceGetPCIBusId"};
    }
    // The device of a stream (-1: the null stream, or unknown).
    int32_t stream_device(void *stream) const
    {
        int d = -1;
        if (!stream || !api_.hipStreamGetDevice || api_.hipStreamGetDevice(native_stream(stream), &d) != hipSuccess)
            return -1;
        return d;
    }
    status_t device_caps(int32_t device, DeviceCaps *caps);
    status_t prefetch(const void *ptr, size_t count, int32_t device, void *stream);
    status_t advise(const void *ptr, size_t count, int32_t advice, int32_t device);
    // True when a fill failed because `dst` is plain (pageable) host memory.
    bool refused_host_memory(hipError_t r, const void *dst) const;
    // Whether a native pool can be given `max_size`.
    status_t pool_max_size(uint64_t max_size) const;
    // Whether a native pool of `memory` (GPUMEM_POOL_MEMORY_*) can be made:
    // device memory only (the HIP headers gpumem builds with name no host or
    // managed pool locations).
    status_t pool_memory(int32_t device, int32_t memory, int32_t numa_node) const;

    // Batched calls (gpu_batch_impl.hpp), used only where caps say so.  The
    // null stream is kept out of them, as CUDA's legacy stream is.
    static bool batch_refuses_stream(void *s) { return s == nullptr; }
    // `failed`: the entry the runtime blamed, else SIZE_MAX.
    Call memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, void *stream,
                      size_t *failed) const;
    Call prefetch_batch(const void *const *ptrs, const size_t *sizes, size_t count, const int32_t *devices,
                        void *stream) const;
    Call discard_batch(void *const *ptrs, const size_t *sizes, size_t count, void *stream) const;

    // --- The calls, in the runtime's spelling -------------------------------------
    // One runtime call each: the HIP column of gpu/vendor_calls.def.
#define GPUMEM_VENDOR_COLUMN(cuda, hip) hip
#include "backends/gpu/vendor_calls.def"
#undef GPUMEM_VENDOR_COLUMN
    // Optional (hip_symbols.def): pool blocks' sizes are unknown without it.
    bool has_address_range() const { return api_.hipMemGetAddressRange != nullptr; }

    // The rest differ from CUDA's in more than their arguments: flags to map,
    // structs the runtime fills, a spelling chosen at load, descriptors read back.
    Call host_alloc(void **ptr, size_t size, uint32_t flags) const;
    Call host_free(void *ptr) const { return {api_.host_free(ptr), api_.host_free_name}; }
    Call host_register(void *ptr, size_t size, uint32_t) const
    {
        // Portable and mapped for the same reason as host_alloc.  READ_ONLY is a
        // hint gpumem drops here: hipHostRegisterReadOnly is the same bit (0x8) as
        // hipExtHostRegisterCoarseGrained, which would change coherence.
        return {api_.hipHostRegister(ptr, size, k_register_portable | k_register_mapped), "hipHostRegister"};
    }
    Call stream_attach(void *stream, void *ptr, size_t length, uint32_t flags) const
    {
        unsigned int attach = hipMemAttachGlobal;
        if (flags & GPUMEM_ATTACH_HOST)
            attach = hipMemAttachHost;
        else if (flags & GPUMEM_ATTACH_SINGLE)
            attach = hipMemAttachSingle;
        return {api_.hipStreamAttachMemAsync(native_stream(stream), ptr, length, attach), "hipStreamAttachMemAsync"};
    }

    // A stream with GPUMEM_STREAM_* flags (HIP's values) and a priority (non-zero
    // only where has_stream_priority()); hipStreamCreate where neither is asked.
    // (A runtime with neither optional call makes every stream blocking: more
    // ordered than asked, never less.)
    Call stream_create(void **stream, uint32_t flags, int32_t priority) const
    {
        hipStream_t s = nullptr;
        hipError_t r;
        const char *name;
        if (priority != 0 || (flags != 0 && !api_.hipStreamCreateWithFlags && api_.hipStreamCreateWithPriority)) {
            r = api_.hipStreamCreateWithPriority(&s, flags, priority);
            name = "hipStreamCreateWithPriority";
        } else if (flags != 0 && api_.hipStreamCreateWithFlags) {
            r = api_.hipStreamCreateWithFlags(&s, flags);
            name = "hipStreamCreateWithFlags";
        } else {
            r = api_.hipStreamCreate(&s);
            name = "hipStreamCreate";
        }
        *stream = s;
        return {r, name};
    }
    // GPUMEM_EVENT_* are HIP's values.  Without hipEventCreateWithFlags (an
    // optional entry) every event is hipEventCreate's: the flags are then
    // gpumem's bookkeeping alone (DISABLE_TIMING its own check), and no event
    // is shared between processes (caps).
    Call event_create(void **event, uint32_t flags) const
    {
        hipEvent_t e = nullptr;
        const bool plain = flags == 0 || !api_.hipEventCreateWithFlags;
        const hipError_t r = plain ? api_.hipEventCreate(&e) : api_.hipEventCreateWithFlags(&e, flags);
        *event = e;
        return {r, plain ? "hipEventCreate" : "hipEventCreateWithFlags"};
    }
    bool has_event_flags() const { return api_.hipEventCreateWithFlags != nullptr; }
    // Events shared between processes (Feature::ipc_events): the 64 bytes go through unchanged.
    Call ipc_event_handle(gpumem_ipc_event_handle_t *out, void *event) const
    {
        hipIpcEventHandle_t h{};
        const hipError_t r = api_.hipIpcGetEventHandle(&h, native_event(event));
        if (r == hipSuccess)
            std::memcpy(out, &h, sizeof h);
        return {r, "hipIpcGetEventHandle"};
    }
    Call ipc_event_open(void **event, const gpumem_ipc_event_handle_t *in) const
    {
        hipIpcEventHandle_t h;
        std::memcpy(&h, in, sizeof h);
        hipEvent_t e = nullptr;
        const hipError_t r = api_.hipIpcOpenEventHandle(&e, h);
        *event = e;
        return {r, "hipIpcOpenEventHandle"};
    }
    // Rows and boxes (Feature::rows): the direction inferred (hipMemcpyDefault);
    // a box of linear memory names its positions in bytes (folded into the pointers here).
    Call memcpy_rows_async(const RowsCopy &c, void *stream) const
    {
        if (c.depth <= 1)
            return {api_.hipMemcpy2DAsync(c.dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.height, hipMemcpyDefault,
                                          native_stream(stream)),
                    "hipMemcpy2DAsync"};
        hipMemcpy3DParms p{};
        p.srcPtr.ptr = const_cast<void *>(c.src);
        p.srcPtr.pitch = c.src_pitch;
        p.srcPtr.xsize = c.src_pitch;
        p.srcPtr.ysize = c.src_rows;
        p.dstPtr.ptr = c.dst;
        p.dstPtr.pitch = c.dst_pitch;
        p.dstPtr.xsize = c.dst_pitch;
        p.dstPtr.ysize = c.dst_rows;
        p.extent.width = c.width;
        p.extent.height = c.height;
        p.extent.depth = c.depth;
        p.kind = hipMemcpyDefault;
        return {api_.hipMemcpy3DAsync(&p, native_stream(stream)), "hipMemcpy3DAsync"};
    }

    // Stream capture (Feature::capture, Feature::user_objects).
    static constexpr int capture_active = hipStreamCaptureStatusActive;
    static constexpr int capture_invalidated = hipStreamCaptureStatusInvalidated;
    static constexpr int relaxed_capture_mode = hipStreamCaptureModeRelaxed;
    Call capture_info(void *s, int *status, uint64_t *id, void **graph) const
    {
        hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
        unsigned long long capture = 0;
        hipGraph_t g = nullptr;
        const hipError_t r = api_.hipStreamGetCaptureInfo_v2(native_stream(s), &st, &capture, &g, nullptr, nullptr);
        *status = st;
        *id = capture;
        *graph = g;
        return {r, "hipStreamGetCaptureInfo_v2"};
    }
    Call exchange_capture_mode(int *mode) const
    {
        auto m = static_cast<hipStreamCaptureMode>(*mode);
        const hipError_t r = api_.hipThreadExchangeStreamCaptureMode(&m);
        *mode = m;
        return {r, "hipThreadExchangeStreamCaptureMode"};
    }
    // A user object whose destructor calls release(data), its one reference moved to `graph`.
    Call user_object_create(void **object, void (*release)(void *), void *data) const
    {
        return {api_.hipUserObjectCreate(object, data, release, 1, k_user_object_no_destructor_sync),
                "hipUserObjectCreate"};
    }

    // Virtual memory: used only on ROCm 6 runtimes, whose hipMemAllocationProp
    // has the layout of MemAllocationProp6 (hip_types.hpp).  The access of
    // `count` devices (at most gpu::k_access_batch) in one call.
    Call mem_set_access(void *ptr, size_t size, const int32_t *devices, size_t count, int32_t flags) const
    {
        hipMemAccessDesc descs[gpu::k_access_batch];
        for (size_t i = 0; i < count; ++i)
            descs[i] = access_desc(devices[i], flags);
        return {api_.hipMemSetAccess(ptr, size, descs, count), "hipMemSetAccess"};
    }
    Call mem_export(int *fd, Handle h) const
    {
        uint64_t raw = 0;
        const hipError_t r = api_.hipMemExportToShareableHandle(&raw, h, hipMemHandleTypePosixFileDescriptor, 0);
        *fd = fd_from(raw);
        return {r, "hipMemExportToShareableHandle"};
    }
    Call allocation_device(Handle h, int32_t *device) const
    {
        MemAllocationProp6 prop{};
        const hipError_t r = api_.hipMemGetAllocationPropertiesFromHandle(&prop, h);
        *device = prop.location.type == hipMemLocationTypeDevice ? prop.location.id : 0;
        return {r, "hipMemGetAllocationPropertiesFromHandle"};
    }
    // Where has_allocation_properties(): the device, GPUMEM_HANDLE_* types and RDMA flag of `h`.
    bool has_allocation_properties() const { return api_.hipMemGetAllocationPropertiesFromHandle != nullptr; }
    static constexpr const char *allocation_properties_name = "hipMemGetAllocationPropertiesFromHandle";
    Call allocation_properties(Handle h, int32_t *device, uint32_t *handle_types, bool *rdma) const
    {
        MemAllocationProp6 prop{};
        const hipError_t r = api_.hipMemGetAllocationPropertiesFromHandle(&prop, h);
        *device = prop.location.type == hipMemLocationTypeDevice ? prop.location.id : -1;
        *handle_types = (prop.requestedHandleTypes & hipMemHandleTypePosixFileDescriptor) ? GPUMEM_HANDLE_POSIX_FD : 0;
        *rdma = prop.allocFlags.gpuDirectRDMACapable != 0;
        return {r, "hipMemGetAllocationPropertiesFromHandle"};
    }
    // The physical allocation mapped at `ptr`, a new reference, where has_retain().
    bool has_retain() const { return api_.hipMemRetainAllocationHandle != nullptr; }
    static constexpr const char *retain_name = "hipMemRetainAllocationHandle";
    Call mem_retain(Handle *h, void *ptr) const
    {
        return {api_.hipMemRetainAllocationHandle(h, ptr), "hipMemRetainAllocationHandle"};
    }

    // Native pools.
    Call default_pool(void **pool, int32_t device) const
    {
        hipMemPool_t p = nullptr;
        const hipError_t r = api_.hipDeviceGetDefaultMemPool(&p, device);
        *pool = p;
        return {r, "hipDeviceGetDefaultMemPool"};
    }
    Call pool_create(void **pool, int32_t device, uint32_t handle_types, uint64_t, int32_t, int32_t) const
    {
        // pool_memory() admitted device memory only; no fabric handles come here (caps).
        hipMemPoolProps props{};
        props.allocType = hipMemAllocationTypePinned;
        props.location = location_of(device);
        props.handleTypes =
            handle_types & GPUMEM_HANDLE_POSIX_FD ? hipMemHandleTypePosixFileDescriptor : hipMemHandleTypeNone;
        hipMemPool_t p = nullptr;
        const hipError_t r = api_.hipMemPoolCreate(&p, &props);
        *pool = p;
        return {r, "hipMemPoolCreate"};
    }
    Call pool_export(int *fd, void *pool) const
    {
        uint64_t raw = 0;
        const hipError_t r =
            api_.hipMemPoolExportToShareableHandle(&raw, native_pool(pool), hipMemHandleTypePosixFileDescriptor, 0);
        *fd = fd_from(raw);
        return {r, "hipMemPoolExportToShareableHandle"};
    }
    // This backend claims no fabric handles: a pool of fabric memory never comes here.
    static const char *fabric_missing() { return "the hip backend has no fabric handles"; }
    Call pool_import(void **pool, int fd) const
    {
        hipMemPool_t p = nullptr;
        const hipError_t r =
            api_.hipMemPoolImportFromShareableHandle(&p, fd_handle(fd), hipMemHandleTypePosixFileDescriptor, 0);
        *pool = p;
        return {r, "hipMemPoolImportFromShareableHandle"};
    }
    Call export_pointer(gpumem_pool_ptr_export_data_t *data, void *ptr) const
    {
        hipMemPoolPtrExportData out{};
        const hipError_t r = api_.hipMemPoolExportPointer(&out, ptr);
        if (r == hipSuccess)
            std::memcpy(data, &out, sizeof out);
        return {r, "hipMemPoolExportPointer"};
    }
    Call import_pointer(void **ptr, void *pool, const gpumem_pool_ptr_export_data_t *data) const
    {
        hipMemPoolPtrExportData in;
        std::memcpy(&in, data, sizeof in);
        return {api_.hipMemPoolImportPointer(ptr, native_pool(pool), &in), "hipMemPoolImportPointer"};
    }

    // Peer access: the current device reaches `peer`'s memory (enable_peer, disable_peer).
    static constexpr hipError_t peer_already_enabled = hipErrorPeerAccessAlreadyEnabled;
    static constexpr hipError_t peer_not_enabled = hipErrorPeerAccessNotEnabled;

private:
    // gpumem's arguments as the runtime's (gpu/vendor_calls.def): the same
    // ordinals and addresses.
    static int native_device(int32_t device) { return device; }
    static void *native_address(void *p) { return p; }
    static void **out_address(void **p) { return p; }
    // A descriptor written by an export call: the runtime stores an int (or a
    // pointer-sized value) at the address given; read it from a zeroed 8 bytes.
    static int fd_from(uint64_t raw) { return static_cast<int>(static_cast<uint32_t>(raw)); }
    // Pinned device memory on `device`, as every gpumem VMM allocation is,
    // exported as a POSIX descriptor when `handle_types` has GPUMEM_HANDLE_POSIX_FD,
    // GPUDirect RDMA-capable when `rdma`.
    // (GPUMEM_HANDLE_FABRIC never comes here: this backend claims no fabric handles.)
    static MemAllocationProp6 pinned_on(int32_t device, uint32_t handle_types, bool rdma = false)
    {
        MemAllocationProp6 prop{};
        prop.type = hipMemAllocationTypePinned;
        prop.location = location_of(device);
        prop.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
        if (handle_types & GPUMEM_HANDLE_POSIX_FD)
            prop.requestedHandleTypes = hipMemHandleTypePosixFileDescriptor;
        return prop;
    }
    // `device`'s access to memory, as GPUMEM_ACCESS_* `flags` say.
    static hipMemAccessDesc access_desc(int32_t device, int32_t flags)
    {
        hipMemAccessDesc desc{};
        desc.location = location_of(device);
        desc.flags = access_flags(flags);
        return desc;
    }
    // A device attribute, or `fallback` when this runtime does not know it.
    int attribute(int32_t device, int attr, int fallback) const;
    // Probes (init): does the runtime really provide pools / VMM on `device`?
    bool probe_pools(int32_t device) const;
    bool probe_vmm(int32_t device) const;
    // True when the runtime does not know `ptr`: plain (pageable) host memory.
    bool unknown_to_runtime(const void *ptr) const;

    std::atomic<bool> warned_migration_{false};
};

static_assert(sizeof(hipIpcEventHandle_t) == sizeof(gpumem_ipc_event_handle_t), "an event handle is 64 bytes");
static_assert(GPUMEM_STREAM_NON_BLOCKING == hipStreamNonBlocking && GPUMEM_EVENT_BLOCKING_SYNC == hipEventBlockingSync &&
                  GPUMEM_EVENT_DISABLE_TIMING == hipEventDisableTiming &&
                  GPUMEM_EVENT_INTERPROCESS == hipEventInterprocess,
              "gpumem's stream and event flags are HIP's");

static_assert(sizeof(hipMemPoolPtrExportData) == sizeof(gpumem_pool_ptr_export_data_t),
              "an exported pool pointer is copied through unchanged");

} // namespace gpumem::detail::hip
