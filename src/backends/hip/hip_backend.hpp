// The HIP backend: gpumem over the HIP runtime API (hip_runtime.hpp).
//
// The runtime API has no contexts to manage: a device is made current on the
// calling thread with hipSetDevice, and gpumem shares the application's
// runtime, so its memory and streams mix freely with hipMalloc'ed memory and
// hipStream_t.  Methods that take a device make it current on the calling
// thread (as hipSetDevice would); methods that take only a pointer or a
// stream use the device the thread selected with gpumem_set_device (device 0
// when it chose none).  Internal to the backend: the core sees only
// make_hip_backend().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "backends/hip/hip_runtime.hpp"

namespace gpumem::detail::hip {

// Chunk size of gpumem's own pool over hipMalloc (the GPU's large-page size).
constexpr size_t k_chunk_granule = size_t{2} << 20;

// A physical allocation of the VMM calls (the backend's opaque `phys`).
struct Phys {
    hipMemGenericAllocationHandle_t handle = nullptr;
    size_t size = 0;
    int32_t device = 0;
};

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
// A native stream as the runtime's; nullptr is the default (null) stream.
inline hipStream_t native_stream(void *s) { return static_cast<hipStream_t>(s); }

class HipBackend final : public Backend, public NativePools {
public:
    explicit HipBackend(const Runtime &runtime) : rt_(runtime) {}
    ~HipBackend() override = default;
    HipBackend(const HipBackend &) = delete;
    HipBackend &operator=(const HipBackend &) = delete;

    // Reads the devices and probes what each really supports.
    status_t init();

    int32_t id() const override { return GPUMEM_BACKEND_HIP; }
    int32_t device_count() const override { return static_cast<int32_t>(devices_.size()); }
    status_t get_caps(int32_t device, DeviceCaps *caps) override;
    status_t mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes) override;
    status_t activate(int32_t device) override;
    bool synchronous_streams() const override { return false; }

    status_t device_alloc(int32_t device, size_t size, void **ptr) override;
    status_t device_free(int32_t device, void *ptr, size_t size) override;

    status_t host_alloc(size_t size, uint32_t flags, void **ptr) override;
    status_t host_free(void *ptr, size_t size) override;
    status_t host_register(void *ptr, size_t size, uint32_t flags) override;
    status_t host_unregister(void *ptr, size_t size) override;
    status_t host_device_pointer(void *host_ptr, void **device_ptr) override;

    status_t managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) override;
    status_t managed_free(void *ptr, size_t size) override;
    status_t prefetch(const void *ptr, size_t count, int32_t device, void *stream) override;
    status_t advise(const void *ptr, size_t count, int32_t advice, int32_t device) override;
    status_t stream_attach(void *stream, void *ptr, size_t length, uint32_t flags) override;

    status_t stream_create(int32_t device, void **stream) override;
    status_t stream_destroy(void *stream) override;
    status_t stream_synchronize(void *stream) override;
    status_t stream_query(void *stream) override;
    status_t event_create(int32_t device, void **event) override;
    status_t event_destroy(void *event) override;
    status_t event_record(void *event, void *stream) override;
    status_t event_synchronize(void *event) override;
    status_t event_query(void *event) override;
    status_t stream_wait_event(void *stream, void *event) override;
    status_t event_elapsed_ms(float *ms, void *start, void *end) override;
    status_t device_synchronize(int32_t device) override;

    status_t copy(void *dst, const void *src, size_t n, void *stream, bool async) override;
    status_t fill(void *dst, int32_t value, size_t n, void *stream, bool async) override;

    // hip_vmm.cpp
    status_t vmm_granularity(int32_t device, int32_t option, size_t *granularity) override;
    status_t vmm_create(int32_t device, size_t size, uint32_t handle_types, void **phys) override;
    status_t vmm_release(void *phys) override;
    status_t vmm_reserve(size_t size, size_t alignment, void *hint, void **ptr) override;
    status_t vmm_free(void *ptr, size_t size) override;
    status_t vmm_map(void *ptr, size_t size, size_t offset, void *phys) override;
    status_t vmm_unmap(void *ptr, size_t size) override;
    status_t vmm_set_access(void *ptr, size_t size, int32_t device, int32_t flags) override;
    status_t vmm_export(void *phys, int32_t handle_type, int *fd) override;
    status_t vmm_import(int fd, int32_t handle_type, int32_t *device, size_t *size, void **phys) override;

    // hip_pools.cpp
    NativePools *native_pools() override { return this; }
    status_t default_pool(int32_t device, void **pool) override;
    status_t create(int32_t device, uint32_t handle_types, uint64_t max_size, void **pool) override;
    status_t destroy(void *pool) override;
    status_t alloc(void *pool, size_t size, void *stream, void **ptr) override;
    status_t free(void *ptr, void *stream) override;
    status_t set_attribute(void *pool, int32_t attr, const void *value) override;
    status_t get_attribute(void *pool, int32_t attr, void *value) override;
    status_t trim(void *pool, size_t min_bytes_to_keep) override;
    status_t set_access(void *pool, int32_t device, int32_t flags) override;
    status_t export_pool(void *pool, int *fd) override;
    status_t import_pool(int fd, void **pool) override;
    status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data) override;
    status_t import_pointer(void *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr) override;
    status_t pool_upstream(int32_t device, bool shareable, uint64_t max_size,
                           std::unique_ptr<PoolUpstream> *out) override;
    status_t pool_upstream_import(int fd, std::unique_ptr<PoolUpstream> *out) override;

private:
    // The thread's selected device (gpumem_set_device; device 0 by default)
    // made current, for calls that name no device.
    status_t ensure_device();
    // Make `device` current on the calling thread for this call's work.
    status_t bind(int32_t device);
    // A device attribute, or `fallback` when this runtime does not know it.
    int attribute(int32_t device, int attr, int fallback) const;
    // Probes (init): does the runtime really provide pools / VMM on `device`?
    bool probe_pools(int32_t device) const;
    bool probe_vmm(int32_t device) const;
    // A VMM granularity of device memory on `device` (hipMemAllocationGranularity*).
    status_t granularity(int32_t device, int option, size_t *out);
    // True when the runtime does not know `ptr`: plain (pageable) host memory.
    bool unknown_to_runtime(const void *ptr) const;
    // The size of an imported physical allocation (hip_vmm.cpp).
    status_t imported_size(int fd, hipMemGenericAllocationHandle_t handle, int32_t device, size_t *size);

    const Runtime &rt_;
    std::vector<DeviceInfo> devices_;
    uint64_t host_memory_ = 0; // physical host memory, to refuse impossible pinned/managed sizes
    std::atomic<bool> warned_migration_{false};
};

} // namespace gpumem::detail::hip
