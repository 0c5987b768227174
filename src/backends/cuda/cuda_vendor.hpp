// What the CUDA backend does its own way (gpu/gpu_backend.hpp has the rest).
//
// Each device is used through its primary context, the one the CUDA runtime
// uses too, so gpumem memory and streams mix freely with cudaMalloc'ed memory
// and cudaStream_t.  The backend makes the context of the device a call names
// current for that call and puts the caller's back (GpuBackend::Placed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/cuda_driver.hpp"
#include "backends/gpu/gpu_backend.hpp"

namespace gpumem::detail::cuda {

// What is fixed about a device, read once.
struct DeviceInfo {
    CUdevice handle = 0;
    size_t total_memory = 0;
    bool concurrent_managed = false; // GPU prefetch and GPU-targeted advice need it
    bool host_pools = false;         // pools of location HOST (driver 12.6+)
    bool host_numa_pools = false;    // pools of location HOST_NUMA
    bool managed_pools = false;      // pools of allocation type MANAGED (driver 13.0+)
};

// A device ordinal or GPUMEM_DEVICE_HOST as the driver's location.
CUmemLocation location_of(int32_t device);
// GPUMEM_ACCESS_* as the driver's protection flags.
CUmemAccess_flags access_flags(int32_t flags);
// GPUMEM_POOL_ATTR_* (checked by the caller) as the driver's attribute.
CUmemPool_attribute pool_attribute(int32_t attr);
// A pointer as the driver's address type, and back.
inline CUdeviceptr dptr(const void *p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
inline void *as_pointer(CUdeviceptr p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); }

// Where the driver writes an address: a CUdeviceptr (`slot`), stored into the
// caller's void * when the full expression that made this ends, after the
// call.  The slot is an object of its own, so that only it escapes to the
// driver and `to_` stays in a register across the call.
class OutAddress {
public:
    OutAddress(void **to, CUdeviceptr *slot) : to_(to), slot_(slot) {}
    OutAddress(const OutAddress &) = delete;
    OutAddress &operator=(const OutAddress &) = delete;
    ~OutAddress() { *to_ = as_pointer(*slot_); }
    operator CUdeviceptr *() const { return slot_; }

private:
    void **to_;
    CUdeviceptr *slot_;
};

class Vendor : public gpu::VendorBase<Driver, DeviceInfo> {
public:
    static constexpr const char *name = "cuda";
    static constexpr int32_t id = GPUMEM_BACKEND_CUDA;
    static constexpr const char *runtime_words = "this CUDA driver";
    static constexpr const char *vendor_name = "CUDA";
    static constexpr gpu::Codes<CUresult> codes{CUDA_ERROR_NOT_READY, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_SUPPORTED,
                                          CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_CONTEXT};
    // CUDA's exported descriptors are no files whose length tells a size.
    static constexpr bool dmabuf_size = false;
    // Location-free advice with no valid device goes to device 0.
    static constexpr bool advice_on_selected = false;
    // The coarse-grain advice is AMD's: nothing to do here.
    static bool takes_advice(int32_t advice)
    {
        return advice != GPUMEM_ADVISE_SET_COARSE_GRAIN && advice != GPUMEM_ADVISE_UNSET_COARSE_GRAIN;
    }

    using VendorBase::VendorBase;
    ~Vendor();

    // Reads the devices; the contexts are retained on first use.
    status_t init();
    // cuDriverGetVersion of the loaded driver.
    int runtime_version() const { return api_.version; }
    // What is current on a thread: a context (ours, the application's, or none).
    using Current = CUcontext;
    Current current() const
    {
        CUcontext c = nullptr;
        return api_.cuCtxGetCurrent(&c) == CUDA_SUCCESS ? c : nullptr;
    }
    bool is_current(Current c, int32_t device) const
    {
        return c && c == contexts_[device].load(std::memory_order_acquire);
    }
    // Make `device`'s primary context current.
    status_t bind(int32_t device);
    // Whether `device`'s primary context runs: gpumem retained it, or the
    // application started it.  Device queries (attributes, granularity, the
    // default pool, pool creation, peer capability) need no context
    // (cuda_probe group lazy), so a device this is false for is set up
    // without starting one: a process that uses one GPU of eight makes one
    // context, not eight (each costs the GPU about 500 MiB and 100 ms).
    bool started(int32_t device) const;
    // Put back what current() read.
    status_t restore(Current c) const
    {
        return check(api_, api_.cuCtxSetCurrent(c), "cuCtxSetCurrent", "put back the caller's context %p", (void *)c);
    }
    // The device of a context (-1: none, or one whose device this driver does not say).
    int32_t device_of(Current c) const;
    // `src` (reached from src_device's context) to `dst` (dst_device's) on
    // `stream`, where has_peer_copy().
    bool has_peer_copy() const { return api_.cuMemcpyPeerAsync != nullptr; }
    status_t memcpy_peer(void *dst, int32_t dst_device, const void *src, int32_t src_device, size_t n,
                         void *stream);
    // The device's 16-byte UUID, where has_uuid() (cuDeviceGetUuid needs no context).
    bool has_uuid() const { return api_.cuDeviceGetUuid != nullptr; }
    Call device_uuid(unsigned char out[16], int32_t device) const
    {
        CUuuid u{};
        const CUresult r = api_.cuDeviceGetUuid(&u, native_device(device));
        static_assert(sizeof u.bytes == 16, "CUuuid");
        std::memcpy(out, u.bytes, sizeof u.bytes);
        return {r, "cuDeviceGetUuid"};
    }
    // The device the driver says `ptr`'s memory is on (it answers from any context).
    status_t pointer_device(const void *ptr, int32_t *device) const;
    // What the driver knows of an address gpumem did not make (any context):
    // its memory type, device and the allocation holding it.
    status_t vendor_pointer(const void *ptr, VendorPointer *out) const;
    // The device's PCI address, where has_pci_bus_id() (no context needed).
    bool has_pci_bus_id() const { return api_.cuDeviceGetPCIBusId != nullptr; }
    Call pci_bus_id(char *out, int length, int32_t device) const
    {
        return {api_.cuDeviceGetPCIBusId(out, length, native_device(device)), "cuDeviceGetPCIBusId"};
    }
    // The device of a stream's context (-1: the legacy streams, or unknown).
    int32_t stream_device(void *stream);
    // Architecture, compute capability and what the device supports.
    status_t device_caps(int32_t device, DeviceCaps *caps);
    status_t prefetch(const void *ptr, size_t count, int32_t device, void *stream);
    status_t advise(const void *ptr, size_t count, int32_t advice, int32_t device);
    // True when a fill failed because `dst` is plain (pageable) host memory.
    bool refused_host_memory(CUresult r, const void *dst) const;
    // Whether a native pool can be given `max_size`.
    status_t pool_max_size(uint64_t max_size) const;
    // Whether a native pool of `memory` (GPUMEM_POOL_MEMORY_*) on `numa_node` can be made.
    status_t pool_memory(int32_t device, int32_t memory, int32_t numa_node) const;

    // Batched calls (gpu_batch_impl.hpp).  The driver refuses the legacy
    // default stream in all three.
    static bool batch_refuses_stream(void *s) { return s == nullptr || s == CU_STREAM_LEGACY; }
    // `failed`: the entry the driver blamed (12.8 form only), else SIZE_MAX.
    Call memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, void *stream,
                      size_t *failed) const;
    Call prefetch_batch(const void *const *ptrs, const size_t *sizes, size_t count, const int32_t *devices,
                        void *stream) const;
    Call discard_batch(void *const *ptrs, const size_t *sizes, size_t count, void *stream) const;

    // --- The calls, in the driver's spelling --------------------------------------
    // One driver call each: the CUDA column of gpu/vendor_calls.def.
#define GPUMEM_VENDOR_COLUMN(cuda, hip) cuda
#include "backends/gpu/vendor_calls.def"
#undef GPUMEM_VENDOR_COLUMN
    // Optional (cuda_symbols.def): pool blocks' sizes are unknown without it.
    bool has_address_range() const { return api_.cuMemGetAddressRange != nullptr; }

    // The rest differ from HIP's in more than their arguments: flags to map,
    // structs the runtime fills, handles written through out-parameters of
    // their own type.
    Call host_alloc(void **ptr, size_t size, uint32_t flags) const
    {
        // Portable and mapped: under unified addressing one pointer then
        // works in every context.  GPUMEM_HOST_COHERENT / _NONCOHERENT are
        // AMD hints: nothing to say here.
        unsigned int cu_flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
        if (flags & GPUMEM_HOST_WRITE_COMBINED)
            cu_flags |= CU_MEMHOSTALLOC_WRITECOMBINED;
        return {api_.cuMemHostAlloc(ptr, size, cu_flags), "cuMemHostAlloc"};
    }
    Call host_free(void *ptr) const { return {api_.cuMemFreeHost(ptr), "cuMemFreeHost"}; }
    Call host_register(void *ptr, size_t size, uint32_t flags) const
    {
        // Portable and mapped for the same reason as host_alloc.
        unsigned int cu_flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
        if (flags & GPUMEM_HOST_REGISTER_READ_ONLY)
            cu_flags |= CU_MEMHOSTREGISTER_READ_ONLY;
        return {api_.cuMemHostRegister(ptr, size, cu_flags), "cuMemHostRegister"};
    }
    Call stream_attach(void *stream, void *ptr, size_t length, uint32_t flags) const
    {
        unsigned int attach = CU_MEM_ATTACH_GLOBAL;
        if (flags & GPUMEM_ATTACH_HOST)
            attach = CU_MEM_ATTACH_HOST;
        else if (flags & GPUMEM_ATTACH_SINGLE)
            attach = CU_MEM_ATTACH_SINGLE;
        return {api_.cuStreamAttachMemAsync(native_stream(stream), dptr(ptr), length, attach), "cuStreamAttachMemAsync"};
    }

    // A stream with GPUMEM_STREAM_* flags (CUDA's values) and a priority
    // (non-zero only where has_stream_priority(): the core gives 0 elsewhere).
    Call stream_create(void **stream, uint32_t flags, int32_t priority) const
    {
        CUstream s = nullptr;
        const bool ranked = priority != 0;
        const CUresult r = ranked ? api_.cuStreamCreateWithPriority(&s, flags, priority) : api_.cuStreamCreate(&s, flags);
        *stream = s;
        return {r, ranked ? "cuStreamCreateWithPriority" : "cuStreamCreate"};
    }
    // GPUMEM_EVENT_* are CUDA's values.
    Call event_create(void **event, uint32_t flags) const
    {
        CUevent e = nullptr;
        const CUresult r = api_.cuEventCreate(&e, flags);
        *event = e;
        return {r, "cuEventCreate"};
    }
    static constexpr bool has_event_flags() { return true; }
    // Events shared between processes (Feature::ipc_events): the 64 bytes go through unchanged.
    Call ipc_event_handle(gpumem_ipc_event_handle_t *out, void *event) const
    {
        CUipcEventHandle h{};
        const CUresult r = api_.cuIpcGetEventHandle(&h, native_event(event));
        if (r == CUDA_SUCCESS)
            std::memcpy(out, &h, sizeof h);
        return {r, "cuIpcGetEventHandle"};
    }
    Call ipc_event_open(void **event, const gpumem_ipc_event_handle_t *in) const
    {
        CUipcEventHandle h;
        std::memcpy(&h, in, sizeof h);
        CUevent e = nullptr;
        const CUresult r = api_.cuIpcOpenEventHandle(&e, h);
        *event = e;
        return {r, "cuIpcOpenEventHandle"};
    }
    // Rows and boxes (Feature::rows): every side as a unified address, whose
    // kind the driver infers, as cudaMemcpy2D/3D with cudaMemcpyDefault do.
    Call memcpy_rows_async(const RowsCopy &c, void *stream) const
    {
        if (c.depth <= 1) {
            CUDA_MEMCPY2D m{};
            m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
            m.srcDevice = dptr(c.src);
            m.srcPitch = c.src_pitch;
            m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
            m.dstDevice = dptr(c.dst);
            m.dstPitch = c.dst_pitch;
            m.WidthInBytes = c.width;
            m.Height = c.height;
            return {api_.cuMemcpy2DAsync(&m, native_stream(stream)), "cuMemcpy2DAsync"};
        }
        CUDA_MEMCPY3D m{};
        m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.srcDevice = dptr(c.src);
        m.srcPitch = c.src_pitch;
        m.srcHeight = c.src_rows;
        m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.dstDevice = dptr(c.dst);
        m.dstPitch = c.dst_pitch;
        m.dstHeight = c.dst_rows;
        m.WidthInBytes = c.width;
        m.Height = c.height;
        m.Depth = c.depth;
        return {api_.cuMemcpy3DAsync(&m, native_stream(stream)), "cuMemcpy3DAsync"};
    }

    // Stream capture (Feature::capture, Feature::user_objects).
    static constexpr int capture_active = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    static constexpr int capture_invalidated = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    static constexpr int relaxed_capture_mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    Call capture_info(void *s, int *status, uint64_t *id, void **graph) const
    {
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t capture = 0;
        CUgraph g = nullptr;
        const CUresult r = api_.capture_info(native_stream(s), &st, &capture, &g, nullptr, nullptr);
        *status = st;
        *id = capture;
        *graph = g;
        return {r, "cuStreamGetCaptureInfo"};
    }
    Call exchange_capture_mode(int *mode) const
    {
        auto m = static_cast<CUstreamCaptureMode>(*mode);
        const CUresult r = api_.cuThreadExchangeStreamCaptureMode(&m);
        *mode = m;
        return {r, "cuThreadExchangeStreamCaptureMode"};
    }
    // A user object whose destructor calls release(data), its one reference moved to `graph`.
    Call user_object_create(void **object, void (*release)(void *), void *data) const
    {
        CUuserObject o = nullptr;
        const CUresult r = api_.cuUserObjectCreate(&o, data, release, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
        *object = o;
        return {r, "cuUserObjectCreate"};
    }

    // Virtual memory (pinned device memory, POSIX descriptors).  The access of
    // `count` devices (at most gpu::k_access_batch) in one call.
    Call mem_set_access(void *ptr, size_t size, const int32_t *devices, size_t count, int32_t flags) const
    {
        CUmemAccessDesc descs[gpu::k_access_batch];
        for (size_t i = 0; i < count; ++i)
            descs[i] = access_desc(devices[i], flags);
        return {api_.cuMemSetAccess(dptr(ptr), size, descs, count), "cuMemSetAccess"};
    }
    // A POSIX descriptor is written as an int.
    Call mem_export(int *fd, Handle h) const
    {
        return {api_.cuMemExportToShareableHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                "cuMemExportToShareableHandle"};
    }
    Call allocation_device(Handle h, int32_t *device) const
    {
        CUmemAllocationProp prop{};
        const CUresult r = api_.cuMemGetAllocationPropertiesFromHandle(&prop, h);
        *device = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop.location.id : 0;
        return {r, "cuMemGetAllocationPropertiesFromHandle"};
    }
    // Where has_allocation_properties(): the device, GPUMEM_HANDLE_* types and RDMA flag of `h`.
    bool has_allocation_properties() const { return api_.cuMemGetAllocationPropertiesFromHandle != nullptr; }
    static constexpr const char *allocation_properties_name = "cuMemGetAllocationPropertiesFromHandle";
    Call allocation_properties(Handle h, int32_t *device, uint32_t *handle_types, bool *rdma) const
    {
        CUmemAllocationProp prop{};
        const CUresult r = api_.cuMemGetAllocationPropertiesFromHandle(&prop, h);
        *device = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop.location.id : -1;
        uint32_t types = 0;
        if (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
            types |= GPUMEM_HANDLE_POSIX_FD;
#if CUDA_VERSION >= 12030
        if (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
            types |= GPUMEM_HANDLE_FABRIC;
#endif
        *handle_types = types;
        *rdma = prop.allocFlags.gpuDirectRDMACapable != 0;
        return {r, "cuMemGetAllocationPropertiesFromHandle"};
    }
    // The physical allocation mapped at `ptr`, a new reference, where has_retain().
    bool has_retain() const { return api_.cuMemRetainAllocationHandle != nullptr; }
    static constexpr const char *retain_name = "cuMemRetainAllocationHandle";
    Call mem_retain(Handle *h, void *ptr) const
    {
        return {api_.cuMemRetainAllocationHandle(h, ptr), "cuMemRetainAllocationHandle"};
    }

    // Native pools.
    Call default_pool(void **pool, int32_t device) const
    {
        CUmemoryPool p = nullptr;
        const CUresult r = api_.cuDeviceGetDefaultMemPool(&p, native_device(device));
        *pool = p;
        return {r, "cuDeviceGetDefaultMemPool"};
    }
    Call pool_create(void **pool, int32_t device, uint32_t handle_types, uint64_t max_size, int32_t memory,
                     int32_t numa_node) const;
    Call pool_export(int *fd, void *pool) const
    {
        return {api_.cuMemPoolExportToShareableHandle(fd, native_pool(pool), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                "cuMemPoolExportToShareableHandle"};
    }
    // Why this process has no IMEX channel for fabric memory, or nullptr where it
    // has one it may open (/dev/nvidia-caps-imex-channels/channel*, which the IMEX
    // service makes for multi-node NVLink).
    static const char *fabric_missing();
    Call pool_import(void **pool, int fd) const
    {
        CUmemoryPool p = nullptr;
        const CUresult r =
            api_.cuMemPoolImportFromShareableHandle(&p, fd_handle(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        *pool = p;
        return {r, "cuMemPoolImportFromShareableHandle"};
    }
    Call export_pointer(gpumem_pool_ptr_export_data_t *data, void *ptr) const
    {
        CUmemPoolPtrExportData out{};
        const CUresult r = api_.cuMemPoolExportPointer(&out, dptr(ptr));
        if (r == CUDA_SUCCESS)
            std::memcpy(data, &out, sizeof out);
        return {r, "cuMemPoolExportPointer"};
    }
    Call import_pointer(void **ptr, void *pool, const gpumem_pool_ptr_export_data_t *data) const
    {
        CUmemPoolPtrExportData in;
        std::memcpy(&in, data, sizeof in);
        return {api_.cuMemPoolImportPointer(out_address(ptr), native_pool(pool), &in), "cuMemPoolImportPointer"};
    }

    // Peer access: the current context reaches `peer`'s memory (enable_peer,
    // disable_peer).  The driver takes the peer's primary context: the backend
    // binds `peer` first, which retains it.
    static constexpr CUresult peer_already_enabled = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    static constexpr CUresult peer_not_enabled = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;

private:
    // True when the driver does not know `ptr` (plain pageable host memory).
    bool unknown_to_runtime(const void *ptr) const;
    // gpumem's arguments as the driver's (gpu/vendor_calls.def).
    CUdevice native_device(int32_t device) const { return devices_[static_cast<size_t>(device)].handle; }
    static CUdeviceptr native_address(const void *p) { return dptr(p); }
    // The slot is a temporary bound to the reference parameter: it lives until
    // the end of the caller's full expression, as the OutAddress does.
    static OutAddress out_address(void **p, CUdeviceptr &&slot = 0) { return OutAddress(p, &slot); }
    CUcontext peer_context(int32_t peer) const { return contexts_[peer].load(std::memory_order_acquire); }
    // Pinned device memory on `device`, as every gpumem VMM allocation is,
    // exportable as the GPUMEM_HANDLE_* of `handle_types` say, GPUDirect RDMA-capable when `rdma`.
    static CUmemAllocationProp pinned_on(int32_t device, uint32_t handle_types, bool rdma = false)
    {
        CUmemAllocationProp prop{};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location = location_of(device);
        prop.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
        prop.requestedHandleTypes = native_handle_types(handle_types);
        return prop;
    }
    // GPUMEM_HANDLE_* as the driver's handle types (one bit each).
    static CUmemAllocationHandleType native_handle_types(uint32_t handle_types)
    {
        unsigned types = CU_MEM_HANDLE_TYPE_NONE;
        if (handle_types & GPUMEM_HANDLE_POSIX_FD)
            types |= CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
#if CUDA_VERSION >= 12030
        if (handle_types & GPUMEM_HANDLE_FABRIC)
            types |= CU_MEM_HANDLE_TYPE_FABRIC;
#endif
        return static_cast<CUmemAllocationHandleType>(types);
    }
    // `device`'s access to memory, as GPUMEM_ACCESS_* `flags` say.
    static CUmemAccessDesc access_desc(int32_t device, int32_t flags)
    {
        CUmemAccessDesc desc{};
        desc.location = location_of(device);
        desc.flags = access_flags(flags);
        return desc;
    }
    // Retain `device`'s primary context (once per backend).
    status_t retain(int32_t device, CUcontext *ctx);
    // A device attribute, or `fallback` when this driver does not know it.
    int attribute(int32_t device, CUdevice_attribute attr, int fallback) const;

    // Retained primary contexts, null until first use; retain_mutex_ guards
    // retaining, the atomics make the common path lock-free.
    std::unique_ptr<std::atomic<CUcontext>[]> contexts_;
    std::mutex retain_mutex_;
};

static_assert(sizeof(CUipcEventHandle) == sizeof(gpumem_ipc_event_handle_t), "an event handle is 64 bytes");
static_assert(GPUMEM_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING && GPUMEM_EVENT_BLOCKING_SYNC == CU_EVENT_BLOCKING_SYNC &&
                  GPUMEM_EVENT_DISABLE_TIMING == CU_EVENT_DISABLE_TIMING &&
                  GPUMEM_EVENT_INTERPROCESS == CU_EVENT_INTERPROCESS,
              "gpumem's stream and event flags are CUDA's");

static_assert(sizeof(CUmemPoolPtrExportData) == sizeof(gpumem_pool_ptr_export_data_t),
              "an exported pool pointer is copied through unchanged");

} // namespace gpumem::detail::cuda
