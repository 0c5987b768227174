#include "backends/backend.hpp"

#include <string>

#include "base/log.hpp"

namespace gpumem::detail {

status_t vmm_map_new(VirtualMemory &vmm, int32_t device, void *ptr, size_t size, const int32_t *accessors,
                     size_t count, void **phys)
{
    void *handle = nullptr;
    status_t st = vmm.vmm_create(device, size, 0, &handle);
    if (st != GPUMEM_SUCCESS)
        return st;
    st = vmm.vmm_map(device, ptr, size, 0, handle);
    if (st != GPUMEM_SUCCESS || !phys) {
        const status_t released = vmm.vmm_release(device, handle);
        if (st != GPUMEM_SUCCESS)
            return st;
        handle = nullptr;
        st = released;
    }
    for (size_t i = 0; st == GPUMEM_SUCCESS && i < count; ++i)
        st = vmm.vmm_set_access(device, ptr, size, accessors[i], GPUMEM_ACCESS_READWRITE);
    if (st != GPUMEM_SUCCESS) {
        if (vmm.vmm_unmap(device, ptr, size) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "memory mapped at %p (%zu bytes) not given back: %s", ptr, size, last_error_message());
        if (handle)
            vmm.vmm_release(device, handle);
        return st;
    }
    if (phys)
        *phys = handle;
    return GPUMEM_SUCCESS;
}

namespace {

// What the pool asks on its own behalf ("is this stream busy?") must not
// replace the message of the caller's last error.
class KeepLastError {
public:
    ~KeepLastError() { fail(GPUMEM_SUCCESS, "%s", kept_.c_str()); }

private:
    std::string kept_ = last_error_message();
};

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
        return backend_.host_alloc(device_, size, GPUMEM_HOST_PORTABLE | GPUMEM_HOST_MAPPED, ptr);
    }
    void deallocate(void *ptr, size_t size) override
    {
        // Freed blocks may still be read by kernels queued before their free.
        status_t st = backend_.device_synchronize(device_);
        if (st == GPUMEM_SUCCESS)
            st = kind_ == HostChunks::managed ? backend_.managed_free(device_, ptr, size)
                                               : backend_.host_free(device_, ptr, size);
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

// Paged chunks of device memory ("Design note: paging of pool chunks",
// src/pool/pool_memory.cpp): a chunk is a VMM reservation, and each unit the
// pool backs is one physical allocation mapped into it.
class PagedDeviceUpstream final : public PoolUpstream {
public:
    PagedDeviceUpstream(Backend &backend, int32_t device, size_t page, size_t granularity)
        : backend_(backend), device_(device), page_(page), granularity_(granularity)
    {
        access_.push_back(device);
        // Plain device memory reaches peers once peer access is enabled; mapped
        // memory needs its access set per device, so grant every capable peer.
        if (PeerAccess *peers = backend.peer_access())
            for (int32_t d = 0; d < backend.device_count(); ++d) {
                int32_t can = 0;
                if (d != device && peers->can_access_peer(device, d, &can) == GPUMEM_SUCCESS && can)
                    access_.push_back(d);
            }
    }

    size_t granularity() const override { return granularity_; }
    size_t page_size() const override { return page_; }

    status_t allocate(size_t size, void **ptr) override
    {
        return backend_.vmm_reserve(device_, size, page_, nullptr, ptr);
    }

    void quiesce() override
    {
        if (backend_.device_synchronize(device_) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool pages given back without waiting for device %d: %s", device_,
                last_error_message());
    }

    void deallocate(void *ptr, size_t size) override
    {
        // The pool unbacked every page first; the address space goes now.
        if (backend_.vmm_free(device_, ptr, size) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool address space at %p (%zu bytes) not returned: %s", ptr, size,
                last_error_message());
    }

    // A driver charges per physical allocation, not per page: creating,
    // setting access to and unmapping one of 64 pages costs about what one
    // page alone does (H100: ~57 us, docs/benchmarks.md).  So each unit is one
    // allocation, of up to this many pages.  The pool gives back whole units
    // only: with 16 pages PyTorch's peak rose past the driver pool's, with 8
    // it stayed below (H100, 2 MiB pages).
    static constexpr size_t k_unit_pages = 8;
    size_t unit_pages() const override { return k_unit_pages; }

    // The handle goes at once: a unit goes back whole, by unmapping it.
    status_t back(void *ptr, size_t size) override
    {
        return vmm_map_new(backend_, device_, ptr, size, access_.data(), access_.size(), nullptr);
    }

    void unback(void *ptr, size_t size) override { unmap(static_cast<char *>(ptr), size); }

    bool stream_idle(void *stream, int32_t device) override
    {
        KeepLastError keep;
        return backend_.stream_query(device, stream) == GPUMEM_SUCCESS;
    }

    void *record_mark(void *stream, int32_t device, void *mark) override
    {
        KeepLastError keep;
        if (!mark && backend_.event_create(device, &mark) != GPUMEM_SUCCESS)
            return nullptr;
        if (backend_.event_record(device, mark, stream) != GPUMEM_SUCCESS) {
            drop_mark(mark);
            return nullptr;
        }
        return mark;
    }

    bool mark_passed(void *mark) override
    {
        KeepLastError keep;
        return backend_.event_query(device_, mark) == GPUMEM_SUCCESS;
    }

    void drop_mark(void *mark) override
    {
        KeepLastError keep;
        backend_.event_destroy(device_, mark);
    }

    bool stream_wait(void *stream, int32_t device) override
    {
        KeepLastError keep;
        // A nullptr stream is `device`'s default stream.
        const status_t st = backend_.stream_synchronize(device, stream);
        if (st != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool pages under frees queued on stream %p stay: waiting for it failed: %s", stream,
                last_error_message());
        return st == GPUMEM_SUCCESS;
    }

private:
    void unmap(char *ptr, size_t size)
    {
        if (backend_.vmm_unmap(device_, ptr, size) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool pages at %p (%zu bytes) not given back: %s", static_cast<void *>(ptr), size,
                last_error_message());
    }

    Backend &backend_;
    int32_t device_;
    size_t page_;
    size_t granularity_;
    std::vector<int32_t> access_; // devices that get read-write access
};

} // namespace

std::unique_ptr<PoolUpstream> make_paged_device_upstream(Backend &backend, int32_t device, size_t page,
                                                         size_t granularity)
{
    return std::make_unique<PagedDeviceUpstream>(backend, device, page, granularity);
}

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
