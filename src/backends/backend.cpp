#include "backends/backend.hpp"

#include "base/log.hpp"

namespace gpumem::detail {

namespace {

class DeviceChunkUpstream final : public PoolUpstream {
public:
    DeviceChunkUpstream(DeviceMemory &backend, int32_t device, size_t granularity)
        : backend_(backend), device_(device), granularity_(granularity) {}

    size_t granularity() const override { return granularity_; }
    status_t allocate(size_t size, void **ptr) override { return backend_.device_alloc(device_, size, ptr); }
    void deallocate(void *ptr, size_t size) override
    {
        if (backend_.device_free(device_, ptr, size) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool chunk at %p (%zu bytes) not returned: %s", ptr, size, last_error_message());
    }

private:
    DeviceMemory &backend_;
    int32_t device_;
    size_t granularity_;
};

class HostChunkUpstream final : public PoolUpstream {
public:
    HostChunkUpstream(Backend &backend, HostChunks kind, int32_t device, size_t granularity)
        : backend_(backend), kind_(kind), device_(device), granularity_(granularity) {}

    size_t granularity() const override { return granularity_; }
    status_t allocate(size_t size, void **ptr) override
    {
        if (kind_ == HostChunks::managed)
            return backend_.managed_alloc(device_, size, GPUMEM_ATTACH_GLOBAL, ptr);
        // Mapped and portable: one address valid on the host and on every device.
        return backend_.host_alloc(size, GPUMEM_HOST_PORTABLE | GPUMEM_HOST_MAPPED, ptr);
    }
    void deallocate(void *ptr, size_t size) override
    {
        // Freed blocks may still be read by kernels queued before their free.
        status_t st = backend_.device_synchronize(device_);
        if (st == GPUMEM_SUCCESS)
            st = kind_ == HostChunks::managed ? backend_.managed_free(ptr, size) : backend_.host_free(ptr, size);
        if (st != GPUMEM_SUCCESS)
            log(LogLevel::warn, "%s pool chunk at %p (%zu bytes) not returned: %s",
                kind_ == HostChunks::managed ? "managed" : "pinned", ptr, size, last_error_message());
    }

private:
    Backend &backend_;
    HostChunks kind_;
    int32_t device_;
    size_t granularity_;
};

} // namespace

std::unique_ptr<PoolUpstream> make_host_chunk_upstream(Backend &backend, HostChunks kind, int32_t device,
                                                       size_t granularity)
{
    return std::make_unique<HostChunkUpstream>(backend, kind, device, granularity);
}

std::unique_ptr<PoolUpstream> make_device_chunk_upstream(DeviceMemory &memory, int32_t device, size_t granularity)
{
    return std::make_unique<DeviceChunkUpstream>(memory, device, granularity);
}

} // namespace gpumem::detail
