// The CUDA backend: gpumem over the CUDA driver API (cuda_driver.hpp).
//
// Each device is used through its primary context, the one the CUDA runtime
// uses too, so gpumem memory and streams mix freely with cudaMalloc'ed memory
// and cudaStream_t.  Methods that take a device make its context current on
// the calling thread (as cudaSetDevice would); methods that take only a
// pointer or a stream use the thread's current context, or device 0's when
// the thread has none.  Internal to the backend: the core sees only
// make_cuda_backend().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/cuda_driver.hpp"

namespace gpumem::detail::cuda {

// Chunk size of gpumem's own pool over cuMemAlloc (the driver's large-page size).
constexpr size_t k_chunk_granule = size_t{2} << 20;

// A physical allocation of the VMM calls (the backend's opaque `phys`).
struct Phys {
    CUmemGenericAllocationHandle handle = 0;
    size_t size = 0;
    int32_t device = 0;
};

// What is fixed about a device, read once.
struct DeviceInfo {
    CUdevice handle = 0;
    size_t total_memory = 0;
    bool concurrent_managed = false; // GPU prefetch and GPU-targeted advice need it
};

// A device ordinal or GPUMEM_DEVICE_HOST as the driver's location.
CUmemLocation location_of(int32_t device);
// GPUMEM_ACCESS_* as the driver's protection flags.
CUmemAccess_flags access_flags(int32_t flags);
// A pointer as the driver's address type, and back.
inline CUdeviceptr dptr(const void *p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
inline void *as_pointer(CUdeviceptr p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); }
// A native stream as the driver's; nullptr is the legacy default stream.
inline CUstream native_stream(void *s) { return static_cast<CUstream>(s); }

class CudaBackend final : public Backend, public NativePools {
public:
    explicit CudaBackend(const Driver &driver) : d_(driver) {}
    ~CudaBackend() override;
    CudaBackend(const CudaBackend &) = delete;
    CudaBackend &operator=(const CudaBackend &) = delete;

    // Reads the devices; the contexts are retained on first use.
    status_t init();

    int32_t id() const override { return GPUMEM_BACKEND_CUDA; }
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

    // cuda_vmm.cpp
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

    // cuda_pools.cpp
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
    // A context for calls that take no device: the thread's current one,
    // else device 0's (a thread that never called gpumem_set_device).
    // The thread's selected device's context (gpumem_set_device; device 0 by default).
    status_t ensure_context();
    // Make `device`'s primary context current for this call's work.
    status_t bind(int32_t device);
    // Retain `device`'s primary context (once per backend).
    status_t retain(int32_t device, CUcontext *ctx);
    // A device attribute, or `fallback` when this driver does not know it.
    int attribute(int32_t device, CUdevice_attribute attr, int fallback) const;
    // A VMM granularity of pinned memory on `device` (CU_MEM_ALLOC_GRANULARITY_*).
    status_t granularity(int32_t device, CUmemAllocationGranularity_flags option, size_t *out);
    // True when the driver does not know `ptr`: plain (pageable) host memory.
    bool unknown_to_driver(const void *ptr) const;
    // The size of an imported physical allocation (cuda_vmm.cpp).
    status_t imported_size(int fd, CUmemGenericAllocationHandle handle, int32_t device, size_t *size);

    const Driver &d_;
    std::vector<DeviceInfo> devices_;
    // Retained primary contexts, null until first use; retain_mutex_ guards
    // retaining, the atomics make the common path lock-free.
    std::unique_ptr<std::atomic<CUcontext>[]> contexts_;
    std::mutex retain_mutex_;
    uint64_t host_memory_ = 0; // physical host memory, to refuse impossible pinned/managed sizes
};

} // namespace gpumem::detail::cuda
