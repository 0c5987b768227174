// The GPU backend, written once for CUDA and HIP: GpuBackend<Vendor>.
//
// Everything the two runtimes do alike lives here (gpu_backend_impl.hpp,
// gpu_vmm_impl.hpp, gpu_pools_impl.hpp); the vendor class holds only what
// differs: the API table, how a device is made current (CUDA primary contexts,
// HIP devices), what a device can do, the vendor's spelling of each call and
// its flags.  Each vendor's folder instantiates the template once
// (cuda_backend.cpp, hip_backend.cpp), as dav1d compiles one source per bit
// depth.
//
// A Vendor provides:
//   Api (its table, with `using Result`, `success` and the native Stream,
//   Event, Pool and Handle types), Device (what is fixed about a device, with
//   total_memory), both through VendorBase;
//   static constexpr name ("cuda"), id (GPUMEM_BACKEND_*), codes (the
//   results branched on), runtime_words, dmabuf_size, advice_on_selected;
//   api(), init(), Current (what the runtime calls current on a thread),
//   current() / is_current(Current, device) / bind(device) / restore(Current)
//   (read, compare, make a device current, put back), device_of(Current),
//   runtime_version() (the number vendor_bugs.def's ranges are in),
//   has_uuid() and device_uuid(), has_peer_copy() and memcpy_peer(), and the calls
//   used below, each returning a gpu::Call (the result and the function's
//   name) or, where the vendors' logic differs, a status.  The calls that
//   are one runtime call each are rows of gpu/vendor_calls.def, which each
//   vendor class expands in its own column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/gpu/gpu_check.hpp"
#include "backends/gpu/vendor_bugs.hpp"

namespace gpumem::detail::gpu {

// Chunk size of gpumem's own pool over plain device memory (the GPUs'
// large-page size).
constexpr size_t k_chunk_granule = size_t{2} << 20;

// The most devices a vendor's mem_set_access is given at once: the
// descriptors of one call, on its stack.
constexpr size_t k_access_batch = 32;

// What every vendor class holds: its API table and what is fixed about each
// device (a Device has at least total_memory).
template <typename ApiT, typename Device> class VendorBase {
public:
    using Api = ApiT;
    using Handle = typename Api::Handle;
    using Call = gpu::Call<typename Api::Result>;

    explicit VendorBase(const Api &api) : api_(api) {}
    VendorBase(const VendorBase &) = delete;
    VendorBase &operator=(const VendorBase &) = delete;

    const Api &api() const { return api_; }
    int32_t device_count() const { return static_cast<int32_t>(devices_.size()); }
    const Device &device(int32_t i) const { return devices_[static_cast<size_t>(i)]; }

protected:
    ~VendorBase() = default;

    // Native handles as the vendor's; a nullptr stream is the default stream
    // (CUDA's legacy stream, HIP's null stream).
    static typename Api::Stream native_stream(void *s) { return static_cast<typename Api::Stream>(s); }
    static typename Api::Event native_event(void *e) { return static_cast<typename Api::Event>(e); }
    static typename Api::Pool native_pool(void *p) { return static_cast<typename Api::Pool>(p); }
    // The address of a value made for one call (properties, a descriptor): it
    // lives until the end of the full expression, so until the call returns.
    template <typename T> static const T *by_address(const T &value) { return &value; }
    // A POSIX descriptor passed as a shareable handle travels as the handle's value.
    static void *fd_handle(int fd) { return reinterpret_cast<void *>(static_cast<uintptr_t>(fd)); }

    const Api &api_;
    std::vector<Device> devices_;
};

// A physical allocation of the VMM calls (the backend's opaque `phys`).
template <typename Handle> struct Phys {
    Handle handle{};
    size_t size = 0;
    int32_t device = 0;
};

// A creation that asked for fabric handles (GPUMEM_HANDLE_FABRIC) and failed
// for another reason than memory or arguments: the system has no fabric for
// them, which no device attribute tells (an H200 without an IMEX channel
// claims them and answers CUDA_ERROR_NOT_PERMITTED: probe group export).
// NOT_SUPPORTED, the runtime's words kept.
inline status_t fabric_refused(status_t st)
{
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY || st == GPUMEM_ERROR_INVALID_VALUE || st == GPUMEM_ERROR_INVALID_DEVICE)
        return st;
    const std::string why = last_error_message();
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "%s; fabric handles need the system's fabric (an IMEX channel, /dev/nvidia-caps-imex-channels, "
                "which the IMEX service makes for multi-node NVLink); without one, create the memory without "
                "GPUMEM_HANDLE_FABRIC",
                why.c_str());
}

template <typename Vendor>
class GpuBackend final : public Backend,
                         public NativePools,
                         public PeerAccess,
                         public BatchMemops,
                         public StreamCapture,
                         public DmaBufExport,
                         public RowMemops {
public:
    using Api = typename Vendor::Api;
    using Result = typename Api::Result;

    explicit GpuBackend(const Api &api) : v_(api) {}
    ~GpuBackend() override = default;
    GpuBackend(const GpuBackend &) = delete;
    GpuBackend &operator=(const GpuBackend &) = delete;

    // Reads the devices (and what each really supports).
    status_t init();

    int32_t id() const override { return Vendor::id; }
    int32_t device_count() const override { return v_.device_count(); }
    status_t get_caps(int32_t device, DeviceCaps *caps) override;
    status_t mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes) override;
    bool device_started(int32_t device) const override
    {
        return device >= 0 && device < device_count() && v_.started(device);
    }
    int32_t current_device() const override;
    status_t set_current_device(int32_t device) override;
    NativePools *native_pools() override { return this; }
    // Peer access where the runtime has its three entry points.
    PeerAccess *peer_access() override { return api().has_peer() ? this : nullptr; }
    // The rows of vendor_bugs.def for this vendor and runtime version.
    const std::vector<VendorBugInfo> &vendor_bugs() const override { return bugs_; }
    uint32_t workarounds() const override { return workarounds_; }
    // Batched calls where the runtime has any (DeviceCaps::batch_* say which).
    BatchMemops *batch_memops() override
    {
        return api().has_batch_copy() || api().has_batch_managed() ? this : nullptr;
    }

    // Capture where the runtime can say what a stream captures and relax a thread's mode.
    StreamCapture *stream_capture() override { return api().has_capture() ? this : nullptr; }
    // dma-buf export where the runtime has its range-handle call.
    DmaBufExport *dmabuf_export() override { return api().has_dmabuf() ? this : nullptr; }
    // Rows and boxes in one call each where the runtime has every call of them.
    RowMemops *row_memops() override { return api().has_rows() ? this : nullptr; }

    // DeviceMemory
    status_t device_alloc(int32_t device, size_t size, void **ptr) override;
    status_t device_free(int32_t device, void *ptr, size_t size) override;
    status_t copy(int32_t device, void *dst, const void *src, size_t n, void *stream, CopyMode mode) override;
    status_t fill(int32_t device, void *dst, int32_t value, size_t n, void *stream, bool async) override;
    status_t copy_peer(int32_t dst_device, void *dst, int32_t src_device, const void *src, size_t n, void *stream,
                       bool async) override;
    int32_t pointer_device(const void *ptr) override
    {
        int32_t d = GPUMEM_DEVICE_HOST;
        const std::string kept = last_error_message(); // a miss is an answer, not an error
        if (v_.pointer_device(ptr, &d) != GPUMEM_SUCCESS || d < 0 || d >= device_count())
            d = GPUMEM_DEVICE_HOST;
        fail(GPUMEM_SUCCESS, "%s", kept.c_str());
        return d;
    }
    status_t vendor_pointer(const void *ptr, VendorPointer *out) override;
    status_t pool_upstream(int32_t device, bool shareable, size_t page, uint64_t max_size, bool rdma,
                           std::unique_ptr<PoolUpstream> *out) override;

    // HostMemory
    status_t host_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) override;
    status_t host_free(int32_t device, void *ptr, size_t size) override;
    status_t host_register(int32_t device, void *ptr, size_t size, uint32_t flags) override;
    status_t host_unregister(int32_t device, void *ptr, size_t size) override;
    status_t host_device_pointer(int32_t device, void *host_ptr, void **device_ptr) override;

    // ManagedMemory
    status_t managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) override;
    status_t managed_free(int32_t device, void *ptr, size_t size) override;
    status_t prefetch(int32_t device, const void *ptr, size_t count, int32_t target, void *stream) override;
    status_t advise(int32_t device, const void *ptr, size_t count, int32_t advice, int32_t location) override;
    status_t stream_attach(int32_t device, void *stream, void *ptr, size_t length, uint32_t flags) override;

    // Streams
    bool synchronous_streams() const override { return false; }
    status_t stream_create(int32_t device, uint32_t flags, int32_t priority, void **stream) override;
    status_t stream_flags(int32_t device, void *stream, uint32_t *flags) override;
    status_t stream_priority(int32_t device, void *stream, int32_t *priority) override;
    status_t priority_range(int32_t device, int32_t *least, int32_t *greatest) override;
    status_t stream_device(void *stream, int32_t *device) override;
    status_t stream_destroy(int32_t device, void *stream) override;
    status_t stream_synchronize(int32_t device, void *stream) override;
    status_t stream_query(int32_t device, void *stream) override;
    status_t event_create(int32_t device, uint32_t flags, void **event) override;
    status_t event_ipc_handle(int32_t device, void *event, gpumem_ipc_event_handle_t *handle) override;
    status_t event_ipc_open(int32_t device, const gpumem_ipc_event_handle_t *handle, void **event) override;
    status_t launch_host_func(int32_t device, void *stream, void (*fn)(void *), void *user) override;
    status_t event_destroy(int32_t device, void *event) override;
    status_t event_record(int32_t device, void *event, void *stream) override;
    status_t event_synchronize(int32_t device, void *event) override;
    status_t event_query(int32_t device, void *event) override;
    status_t stream_wait_event(int32_t device, void *stream, void *event) override;
    status_t event_elapsed_ms(int32_t device, float *ms, void *start, void *end) override;
    status_t device_synchronize(int32_t device) override;

    // VirtualMemory (gpu_vmm_impl.hpp)
    status_t vmm_granularity(int32_t device, int32_t option, size_t *granularity) override;
    status_t vmm_create(int32_t device, size_t size, uint32_t handle_types, bool rdma, void **phys) override;
    status_t vmm_release(int32_t device, void *phys) override;
    status_t vmm_reserve(int32_t device, size_t size, size_t alignment, void *hint, void **ptr) override;
    status_t vmm_free(int32_t device, void *ptr, size_t size) override;
    status_t vmm_map(int32_t device, void *ptr, size_t size, size_t offset, void *phys) override;
    status_t vmm_unmap(int32_t device, void *ptr, size_t size) override;
    status_t vmm_set_access(int32_t device, void *ptr, size_t size, int32_t accessor, int32_t flags) override;
    status_t vmm_set_access_all(int32_t device, void *ptr, size_t size, const int32_t *accessors, size_t count,
                                int32_t flags) override;
    status_t vmm_retain(int32_t device, void *ptr, int32_t *owner, size_t *size, void **phys) override;
    status_t vmm_properties(int32_t device, void *phys, int32_t *owner, uint32_t *handle_types,
                            uint32_t *flags) override;

    // Ipc (gpu_vmm_impl.hpp, gpu_pools_impl.hpp)
    status_t vmm_export(int32_t device, void *phys, int32_t handle_type, int *fd) override;
    status_t vmm_import(int32_t device, int fd, int32_t handle_type, int32_t *owner, size_t *size,
                        void **phys) override;
    status_t pool_upstream_import(int32_t device, int fd, std::unique_ptr<PoolUpstream> *out) override;

    // NativePools (gpu_pools_impl.hpp)
    status_t default_pool(int32_t device, void **pool) override;
    status_t create(int32_t device, uint32_t handle_types, uint64_t max_size, int32_t memory, int32_t numa_node,
                    void **pool) override;
    status_t destroy(int32_t device, void *pool) override;
    status_t alloc(int32_t device, void *pool, size_t size, void *stream, void **ptr) override;
    status_t free(int32_t device, void *ptr, void *stream) override;
    status_t set_attribute(int32_t device, void *pool, int32_t attr, const void *value) override;
    status_t get_attribute(int32_t device, void *pool, int32_t attr, void *value) override;
    status_t trim(int32_t device, void *pool, size_t min_bytes_to_keep) override;
    status_t set_access(int32_t device, void *pool, int32_t accessor, int32_t flags) override;
    status_t export_pool(int32_t device, void *pool, int *fd) override;
    status_t import_pool(int32_t device, int fd, void **pool) override;
    status_t export_pointer(int32_t device, void *ptr, gpumem_pool_ptr_export_data_t *data) override;
    status_t import_pointer(int32_t device, void *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr,
                            int32_t *owner) override;
    status_t block_range(int32_t device, void *ptr, void **base, size_t *size) override;

    // BatchMemops (gpu_batch_impl.hpp)
    bool takes_batch_stream(void *stream) const override { return !Vendor::batch_refuses_stream(stream); }
    status_t copy_batch(int32_t device, void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                        void *stream, size_t *failed) override;
    status_t prefetch_batch(int32_t device, const void *const *ptrs, const size_t *sizes, size_t count,
                            const int32_t *devices, void *stream) override;
    status_t discard_batch(int32_t device, void *const *ptrs, const size_t *sizes, size_t count,
                           void *stream) override;

    // StreamCapture (gpu_capture_impl.hpp)
    status_t capture_state(int32_t device, void *stream, CaptureState *out) override;
    int32_t relax_capture_mode() override;
    void restore_capture_mode(int32_t mode) override;
    status_t on_graph_destroyed(void *graph, void (*release)(void *), void *data) override;

    // RowMemops (gpu_backend_impl.hpp)
    status_t alloc_pitch(int32_t device, size_t width, size_t height, void **ptr, size_t *pitch) override;
    status_t copy_rows(int32_t device, const RowsCopy &copy, void *stream, CopyMode mode) override;
    status_t fill_rows(int32_t device, void *dst, size_t pitch, unsigned char byte, size_t width, size_t height,
                       void *stream, bool async) override;
    status_t fill_elements(int32_t device, void *dst, uint32_t value, unsigned size, size_t count, void *stream,
                           bool async) override;

    // DmaBufExport (gpu_vmm_impl.hpp)
    status_t export_dmabuf(int32_t device, const void *ptr, size_t size, int *fd) override;

    // PeerAccess (gpu_backend_impl.hpp)
    status_t can_access_peer(int32_t device, int32_t peer, int32_t *can_access) override;
    status_t enable_peer_access(int32_t device, int32_t peer, bool *enabled_now) override;
    status_t disable_peer_access(int32_t device, int32_t peer) override;

private:
    using PhysT = Phys<typename Vendor::Handle>;

    const Api &api() const { return v_.api(); }
    // `device` current on the calling thread for one call: the caller's
    // context is compared first (the thin paths switch nothing) and put back
    // when the scope ends, so gpumem never changes what the application made
    // current (rmm's cuda_set_device_raii and PyTorch's CUDAGuard are the shape).
    class Placed {
    public:
        explicit Placed(Vendor &v) : v_(v) {}
        Placed(const Placed &) = delete;
        Placed &operator=(const Placed &) = delete;
        ~Placed();
        // Checked against the count; SUCCESS when `device` is current.
        status_t enter(int32_t device, int32_t count);
        // For a device query that needs no context (Vendor::started): enters
        // `device` only where its context runs already, so a query never
        // starts one.
        status_t enter_for_query(int32_t device, int32_t count);
        bool entered() const { return entered_; }

    private:
        Vendor &v_;
        typename Vendor::Current caller_{};
        bool switched_ = false;
        bool entered_ = false;
    };
    // `here` entered for a call on `stream` of `device` (see the definition).
    status_t enter_for_stream(Placed &here, int32_t device, const void *stream);
    // The largest device memory (nothing larger can be allocated anywhere).
    size_t largest_device() const;
    // The size of an imported physical allocation (gpu_vmm_impl.hpp).
    status_t imported_size(int fd, typename Vendor::Handle handle, int32_t device, size_t *size);

    Vendor v_;
    std::vector<VendorBugInfo> bugs_; // set once by init()
    uint32_t workarounds_ = 0;
    uint64_t host_memory_ = 0; // physical host memory, to refuse impossible pinned/managed sizes
};

} // namespace gpumem::detail::gpu
