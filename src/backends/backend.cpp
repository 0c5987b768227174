#include "backends/backend.hpp"

#include <map>
#include <new>
#include <string>
#include <vector>

#include "base/log.hpp"

namespace gpumem::detail {

status_t vmm_map_new(VirtualMemory &vmm, int32_t device, void *ptr, size_t size, const int32_t *accessors,
                     size_t count, void **phys)
{
    void *handle = nullptr;
    status_t st = vmm.vmm_create(device, size, 0, false, &handle);
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
    if (st == GPUMEM_SUCCESS && count)
        st = vmm.vmm_set_access_all(device, ptr, size, accessors, count, GPUMEM_ACCESS_READWRITE);
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
// src/pool/pages.cpp): a chunk is a VMM reservation, and each unit the
// pool backs is one physical allocation mapped into it.
class PagedDeviceUpstream final : public PoolUpstream {
public:
    PagedDeviceUpstream(Backend &backend, int32_t device, size_t page, size_t granularity, bool rdma)
        : backend_(backend), device_(device), page_(page), granularity_(granularity), rdma_(rdma)
    {
        access_.push_back(device);
        // Plain device memory reaches peers once peer access is enabled; mapped
        // memory needs its access set per device, so grant every capable peer.
        // RDMA pages are mapped for their owner alone (make_paged_device_upstream).
        if (PeerAccess *peers = rdma ? nullptr : backend.peer_access())
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

    status_t back(void *ptr, size_t size) override { return back_units(ptr, size, &size, 1); }

    // Each unit one physical allocation (a kept one of its size when there
    // is one), mapped; then every device's access over the whole range in
    // one call.  The handles stay with their mappings (mapped_) so that an
    // unback may keep them for reuse.
    status_t back_units(void *ptr, size_t size, const size_t *unit_bytes, size_t count) override
    {
        char *base = static_cast<char *>(ptr);
        size_t done = 0;
        status_t st = GPUMEM_SUCCESS;
        for (size_t i = 0; i < count; ++i) {
            const size_t unit = unit_bytes[i];
            void *handle = take_kept(unit);
            if (!handle && (st = backend_.vmm_create(device_, unit, 0, rdma_, &handle)) != GPUMEM_SUCCESS)
                break;
            if ((st = backend_.vmm_map(device_, base + done, unit, 0, handle)) != GPUMEM_SUCCESS) {
                release(handle);
                break;
            }
            try {
                mapped_.emplace(base + done, Mapped{handle, unit});
            } catch (const std::bad_alloc &) {
                (void)backend_.vmm_unmap(device_, base + done, unit);
                release(handle);
                st = fail(GPUMEM_ERROR_OUT_OF_MEMORY, "out of host memory while backing pool pages");
                break;
            }
            done += unit;
        }
        if (st == GPUMEM_SUCCESS)
            st = backend_.vmm_set_access_all(device_, ptr, size, access_.data(), access_.size(), GPUMEM_ACCESS_READWRITE);
        if (st != GPUMEM_SUCCESS && done) {
            // All or nothing: what was mapped goes, its handles released.
            const std::string why = last_error_message();
            const size_t kept = keep_limit_;
            keep_limit_ = 0;
            unback(ptr, done);
            keep_limit_ = kept;
            fail(st, "%s", why.c_str());
        }
        return st;
    }

    // One unmap for the range (whole units), then each unit's handle kept
    // for reuse (up to keep_limit_) or released.
    void unback(void *ptr, size_t size) override
    {
        char *base = static_cast<char *>(ptr);
        if (backend_.vmm_unmap(device_, ptr, size) != GPUMEM_SUCCESS) {
            log(LogLevel::warn, "pool pages at %p (%zu bytes) not given back: %s", ptr, size, last_error_message());
            return; // still mapped: the handles stay with their mappings
        }
        for (auto it = mapped_.lower_bound(base); it != mapped_.end() && it->first < base + size;) {
            const Mapped m = it->second;
            it = mapped_.erase(it);
            if (kept_bytes_ + m.size <= keep_limit_) {
                try {
                    kept_.push_back(m);
                    kept_bytes_ += m.size;
                    continue;
                } catch (const std::bad_alloc &) {
                    // Released instead.
                }
            }
            release(m.handle);
        }
    }

    void keep_handles(size_t bytes) override
    {
        keep_limit_ = bytes;
        while (kept_bytes_ > keep_limit_) {
            kept_bytes_ -= kept_.back().size;
            release(kept_.back().handle);
            kept_.pop_back();
        }
    }

    size_t kept_fit(size_t most) const override
    {
        size_t best = 0;
        for (const Mapped &m : kept_)
            if (m.size <= most && m.size > best)
                best = m.size;
        return best;
    }

    // Each mapped unit in its own call: the units of a run share one mapping
    // call only when they are backed together, and a grant is rare.
    status_t grant_access(int32_t device) override
    {
        for (int32_t d : access_)
            if (d == device)
                return GPUMEM_SUCCESS;
        for (const auto &[at, m] : mapped_)
            if (status_t st = backend_.vmm_set_access(device_, at, m.size, device, GPUMEM_ACCESS_READWRITE))
                return st;
        access_.push_back(device);
        return GPUMEM_SUCCESS;
    }

    bool stream_idle(void *stream, int32_t device) override
    {
        KeepLastError keep;
        return backend_.stream_query(device, stream) == GPUMEM_SUCCESS;
    }

    void *record_mark(void *stream, int32_t device, void *mark) override
    {
        KeepLastError keep;
        if (!mark && backend_.event_create(device, GPUMEM_EVENT_DISABLE_TIMING, &mark) != GPUMEM_SUCCESS)
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

    ~PagedDeviceUpstream() override
    {
        keep_handles(0);
        // The pool unbacked every page before it went; whatever is left is
        // the pool's leak, or pages whose unmap the runtime refused (a
        // faulted context refuses every call), released with the upstream:
        // nothing will ask for them again.
        for (auto &[at, m] : mapped_) {
            (void)backend_.vmm_unmap(device_, at, m.size);
            release(m.handle);
        }
    }

private:
    struct Mapped {
        void *handle;
        size_t size;
    };

    void *take_kept(size_t size)
    {
        for (size_t i = kept_.size(); i-- > 0;)
            if (kept_[i].size == size) {
                void *handle = kept_[i].handle;
                kept_[i] = kept_.back();
                kept_.pop_back();
                kept_bytes_ -= size;
                return handle;
            }
        return nullptr;
    }

    void release(void *handle)
    {
        if (backend_.vmm_release(device_, handle) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "pool memory on device %d not released: %s", device_, last_error_message());
    }

    Backend &backend_;
    int32_t device_;
    size_t page_;
    size_t granularity_;
    bool rdma_; // pages GPUDirect RDMA and NCCL register (make_paged_device_upstream)
    std::vector<int32_t> access_; // devices that get read-write access
    std::map<char *, Mapped> mapped_; // each backed unit's handle, by address
    std::vector<Mapped> kept_;        // unmapped handles kept for reuse (keep_handles)
    size_t kept_bytes_ = 0;
    size_t keep_limit_ = 0;
};

} // namespace

std::unique_ptr<PoolUpstream> make_paged_device_upstream(Backend &backend, int32_t device, size_t page,
                                                         size_t granularity, bool rdma)
{
    return std::make_unique<PagedDeviceUpstream>(backend, device, page, granularity, rdma);
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
