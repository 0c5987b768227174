#include "backends/backend.hpp"

#include "base/log.hpp"

namespace gpumem::detail {

namespace {

class DeviceChunkUpstream final : public PoolUpstream {
public:
    DeviceChunkUpstream(Backend &backend, int32_t device, size_t granularity)
        : backend_(backend), device_(device), granularity_(granularity) {}

    size_t granularity() const override { return granularity_; }
    status_t allocate(size_t size, void **ptr) override { return backend_.device_alloc(device_, size, ptr); }
    void deallocate(void *ptr, size_t size) override
    {
        if (backend_.device_free(device_, ptr, size) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool chunk at %p (%zu bytes) not returned: %s", ptr, size, last_error_message());
    }

private:
    Backend &backend_;
    int32_t device_;
    size_t granularity_;
};

status_t no_native_pools()
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this backend has no native memory pools; use gpumem's own pool");
}
} // namespace

std::unique_ptr<PoolUpstream> make_device_chunk_upstream(Backend &backend, int32_t device, size_t granularity)
{
    return std::make_unique<DeviceChunkUpstream>(backend, device, granularity);
}

status_t Backend::pool_default(int32_t, void **) { return no_native_pools(); }
status_t Backend::pool_create(int32_t, uint32_t, uint64_t, void **) { return no_native_pools(); }
status_t Backend::pool_destroy(void *) { return no_native_pools(); }
status_t Backend::pool_alloc(void *, size_t, void *, void **) { return no_native_pools(); }
status_t Backend::pool_free(void *, void *) { return no_native_pools(); }
status_t Backend::pool_set_attribute(void *, int32_t, const void *) { return no_native_pools(); }
status_t Backend::pool_get_attribute(void *, int32_t, void *) { return no_native_pools(); }
status_t Backend::pool_trim(void *, size_t) { return no_native_pools(); }
status_t Backend::pool_set_access(void *, int32_t, int32_t) { return no_native_pools(); }
status_t Backend::pool_export(void *, int *) { return no_native_pools(); }
status_t Backend::pool_import(int, void **) { return no_native_pools(); }
status_t Backend::pool_export_pointer(void *, gpumem_pool_ptr_export_data_t *) { return no_native_pools(); }
status_t Backend::pool_import_pointer(void *, const gpumem_pool_ptr_export_data_t *, void **) { return no_native_pools(); }

} // namespace gpumem::detail
