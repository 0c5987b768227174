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

} // namespace

std::unique_ptr<PoolUpstream> make_device_chunk_upstream(DeviceMemory &memory, int32_t device, size_t granularity)
{
    return std::make_unique<DeviceChunkUpstream>(memory, device, granularity);
}

} // namespace gpumem::detail
