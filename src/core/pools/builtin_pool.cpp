// gpumem's own stream-ordered pool (src/pool) behind the pool interface: over
// the backend's chunks, on the host backend and wherever vendor pools are
// absent, disabled or not wanted (GPUMEM_POOL_BUILTIN).
#include <string>

#include "base/error.hpp"
#include "core/capture.hpp"
#include "core/pools/counted.hpp"
#include "core/pools/graph_blocks.hpp"
#include "backends/backend.hpp"
#include "base/options.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/streams.hpp"

namespace gpumem::detail {

namespace {

pool::Pool *impl_of(const PoolObject &p) { return static_cast<pool::Pool *>(p.impl); }

// Strict host mode: freed stream-ordered bytes read 0xdf ("dead, freed"),
// and up to this much freed memory per pool waits before it is reused.
constexpr int32_t k_freed_poison = 0xdf;
constexpr size_t k_quarantine_bytes = size_t{64} << 20;

// Field by field into the caller's record (no temporary: see pool::fill_allocation).
void fill_block(const pool::Allocation &a, PoolBlock *b)
{
    b->base = a.base;
    b->size = a.size;
    b->device = a.device;
    b->pool = a.owner;
    b->imported = a.imported;
    b->memory = a.memory;
}

PoolBlock block_of(const pool::Allocation &a)
{
    PoolBlock b;
    fill_block(a, &b);
    return b;
}

// What gpumem's own pool asks of its memory, made safe in the middle of an
// application's capture: every call runs in the relaxed capture mode (a
// chunk allocation, a trim or a query of another stream then invalidates no
// capture of any thread), and a stream that is capturing is never queried,
// waited for or marked (the runtime refuses that and invalidates the
// capture): the pool is told "not known to be idle" instead.
class CaptureSafeUpstream final : public PoolUpstream {
public:
    CaptureSafeUpstream(const Capture &capture, std::unique_ptr<PoolUpstream> inner)
        : capture_(capture), inner_(std::move(inner))
    {
    }

    size_t granularity() const override { return inner_->granularity(); }
    status_t allocate(size_t size, void **ptr) override
    {
        capture::Relaxed relaxed(capture_);
        return inner_->allocate(size, ptr);
    }
    void deallocate(void *ptr, size_t size) override
    {
        capture::Relaxed relaxed(capture_);
        inner_->deallocate(ptr, size);
    }
    bool can_allocate() const override { return inner_->can_allocate(); }
    size_t page_size() const override { return inner_->page_size(); }
    status_t back(void *ptr, size_t size) override
    {
        capture::Relaxed relaxed(capture_);
        return inner_->back(ptr, size);
    }
    void unback(void *ptr, size_t size) override
    {
        capture::Relaxed relaxed(capture_);
        inner_->unback(ptr, size);
    }
    size_t unit_pages() const override { return inner_->unit_pages(); }
    status_t back_units(void *ptr, size_t size, const size_t *unit_bytes, size_t count) override
    {
        capture::Relaxed relaxed(capture_);
        return inner_->back_units(ptr, size, unit_bytes, count);
    }
    void keep_handles(size_t bytes) override
    {
        capture::Relaxed relaxed(capture_);
        inner_->keep_handles(bytes);
    }
    status_t grant_access(int32_t device) override
    {
        capture::Relaxed relaxed(capture_);
        return inner_->grant_access(device);
    }
    void quiesce() override
    {
        capture::Relaxed relaxed(capture_);
        inner_->quiesce();
    }
    bool stream_idle(void *stream, int32_t device) override
    {
        capture::Relaxed relaxed(capture_);
        return !capturing(stream, device) && inner_->stream_idle(stream, device);
    }
    bool stream_wait(void *stream, int32_t device) override
    {
        capture::Relaxed relaxed(capture_);
        return !capturing(stream, device) && inner_->stream_wait(stream, device);
    }
    void *record_mark(void *stream, int32_t device, void *mark) override
    {
        capture::Relaxed relaxed(capture_);
        if (capturing(stream, device)) {
            if (mark)
                inner_->drop_mark(mark); // as a failed record does
            return nullptr;
        }
        return inner_->record_mark(stream, device, mark);
    }
    bool mark_passed(void *mark) override
    {
        capture::Relaxed relaxed(capture_);
        return inner_->mark_passed(mark);
    }
    void drop_mark(void *mark) override
    {
        capture::Relaxed relaxed(capture_);
        inner_->drop_mark(mark);
    }
    bool shareable() const override { return inner_->shareable(); }
    status_t export_fd(int *fd) override { return inner_->export_fd(fd); }
    status_t offset_of(const void *ptr, uint64_t *offset, uint64_t *pool_id) const override
    {
        return inner_->offset_of(ptr, offset, pool_id);
    }
    status_t address_of(uint64_t offset, uint64_t size, uint64_t pool_id, void **ptr) override
    {
        return inner_->address_of(offset, size, pool_id, ptr);
    }

private:
    // True when the stream captures, or nobody can say (then it is left alone too).
    bool capturing(void *stream, int32_t device)
    {
        if (!stream)
            return false; // the default stream cannot capture
        StreamState probe;
        probe.device = device;
        probe.native = stream;
        CaptureState state;
        const std::string kept = last_error_message(); // the pool's question, not the caller's error
        const bool unsure = capture_.state_of(probe, &state) != GPUMEM_SUCCESS;
        fail(GPUMEM_SUCCESS, "%s", kept.c_str());
        return unsure || state.status != CaptureState::Status::none;
    }

    const Capture &capture_;
    std::unique_ptr<PoolUpstream> inner_;
};

class BuiltinPools final : public PoolResource {
public:
    explicit BuiltinPools(const PoolParts &parts) : parts_(parts), capture_(parts.capture.runtime()), graphs_(parts) {}

    status_t allocate(PoolObject &p, uint64_t, size_t size, StreamRef stream, void **ptr) override
    {
        if (capture_) [[unlikely]] {
            reap_graphs();
            // The default stream cannot capture: only other streams are asked.
            if (stream.state.native) {
                CaptureState capture;
                if (status_t st = parts_.capture.state_of(stream.state, &capture))
                    return st;
                if (capture.status == CaptureState::Status::active)
                    return graphs_.allocate(impl_of(p), size, stream.state, capture, ptr);
                if (capture.status == CaptureState::Status::invalidated)
                    return capture::refuse(stream.state, capture, "an allocation from gpumem's own pool");
            }
        }
        return pool::allocate(impl_of(p), size, stream.state, ptr);
    }
    status_t deallocate(void *ptr, StreamRef stream, bool *mine, PoolBlock *freed) override
    {
        if (capture_ && (stream.state.native || graphs_.any_owned())) [[unlikely]] {
            bool handled = false;
            if (status_t st = free_for_graph(ptr, stream.state, &handled, freed); st || handled) {
                *mine = handled;
                return st;
            }
        }
        // Poisoned just before the free in its stream order: work enqueued
        // earlier still sees the data, and the memory is still the block's.
        if (parts_.host_strict) [[unlikely]]
            if (status_t st = poison(ptr, stream.state.native, true))
                return st;
        pool::Allocation a;
        status_t st = pool::deallocate(ptr, stream.state, &a);
        *mine = st != GPUMEM_ERROR_INVALID_POINTER;
        if (st == GPUMEM_SUCCESS)
            fill_block(a, freed);
        return st;
    }
    status_t free_now(void *ptr, const PoolBlock &block) override
    {
        // In order on the default stream once the device is idle.
        return parts_.streams.synchronize_device(block.device, [&](StreamState &default_stream) {
            if (status_t st = poison(ptr, default_stream.native, false))
                return st;
            status_t st = pool::deallocate(ptr, default_stream, nullptr);
            if (st == GPUMEM_ERROR_INVALID_POINTER)
                return fail(st, "%p was freed by another thread", ptr);
            return st;
        });
    }
    // gpumem's own blocks are found inside too: its chunk map makes that cheap.
    bool find(const void *ptr, PoolBlock *out, bool) const override
    {
        pool::Allocation a;
        if (!pool::lookup(ptr, &a))
            return false;
        *out = block_of(a);
        return true;
    }
    bool find_base(const void *ptr, PoolBlock *out) const override
    {
        pool::Allocation a;
        if (!pool::lookup_base(ptr, &a))
            return false;
        *out = block_of(a);
        return true;
    }

    bool holds(const void *ptr, size_t size) const override { return pool::overlaps(ptr, size); }
    void list_blocks(std::vector<LiveBlock> *out) const override
    {
        std::vector<pool::Allocation> live;
        pool::live_blocks(&live);
        for (const pool::Allocation &a : live) {
            out->push_back(LiveBlock{block_of(a), a.birth});
            out->back().block.graph = graphs_.graph_of(a.base);
        }
    }

    status_t create(const gpumem_pool_props_t &props, bool, void **impl) override
    {
        std::unique_ptr<PoolUpstream> upstream;
        if (status_t st = make_upstream(props, &upstream))
            return st;
        upstream = capture_safe(std::move(upstream));
        pool::Config config;
        config.device = props.device;
        config.max_size = props.max_size;
        config.quarantine_bytes = parts_.host_strict ? k_quarantine_bytes : 0;
        config.memory = props.memory;
        config.decay_periods = parts_.options.pool_decay_s;
        pool::Pool *p = nullptr;
        if (status_t st = pool::create(std::move(upstream), config, &p))
            return st;
        *impl = p;
        return GPUMEM_SUCCESS;
    }
    status_t import(int fd, int32_t device, void **impl) override
    {
        std::unique_ptr<PoolUpstream> upstream;
        if (status_t st = parts_.backend.pool_upstream_import(device, fd, &upstream))
            return st;
        upstream = capture_safe(std::move(upstream));
        pool::Config config;
        config.device = device;
        pool::Pool *p = nullptr;
        if (status_t st = pool::create(std::move(upstream), config, &p))
            return st;
        *impl = p;
        return GPUMEM_SUCCESS;
    }
    void adopt(void *impl, uint64_t handle) override { pool::set_owner(static_cast<pool::Pool *>(impl), handle); }
    status_t destroy(PoolObject &p, uint64_t) override
    {
        // Outstanding blocks keep their memory until they are freed.
        pool::set_owner(impl_of(p), 0);
        pool::destroy(impl_of(p));
        return GPUMEM_SUCCESS;
    }
    status_t set_attribute(PoolObject &p, int32_t attr, const void *value) override
    {
        return pool::set_attribute(impl_of(p), attr, value);
    }
    status_t get_attribute(PoolObject &p, int32_t attr, void *value) override
    {
        reap_graphs(); // what destroyed graphs held is the pool's again
        return pool::get_attribute(impl_of(p), attr, value);
    }
    status_t trim_to(PoolObject &p, size_t keep) override
    {
        reap_graphs();
        return pool::trim_to(impl_of(p), keep);
    }
    // Every device reaches the pool's memory: access is recorded only.
    // The own pool's memory is read-write for each device it reaches: a grant
    // maps it for a device that lacks it (an RDMA pool's peers), and READ or
    // NONE take nothing away.
    status_t set_access(PoolObject &p, int32_t device, int32_t flags) override
    {
        if (flags == GPUMEM_ACCESS_NONE)
            return GPUMEM_SUCCESS;
        return pool::grant_access(impl_of(p), device);
    }
    status_t export_fd(PoolObject &p, int *fd) override { return pool::export_fd(impl_of(p), fd); }
    status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data) override
    {
        return pool::export_pointer(ptr, data);
    }
    status_t import_pointer(PoolObject &p, uint64_t, const gpumem_pool_ptr_export_data_t *data, void **ptr,
                            size_t *size) override
    {
        if (status_t st = pool::import_pointer(impl_of(p), data, ptr))
            return st;
        pool::Allocation block;
        *size = pool::lookup(*ptr, &block) ? block.size : 0;
        return GPUMEM_SUCCESS;
    }

    size_t release_blocks() override { return 0; } // they go with their pools
    size_t release_pool(PoolObject &p) override { return pool::outstanding(impl_of(p)); }
    void release_all() override
    {
        graphs_.release_all();
        parts_.devices.for_each([](DeviceState &dev) { pool::on_stream_destroyed(dev.default_stream.state); });
        pool::destroy_all();
    }

private:
    void reap_graphs()
    {
        if (capture_ && GraphBlocks::any_retired())
            graphs_.reap();
    }

    std::unique_ptr<PoolUpstream> capture_safe(std::unique_ptr<PoolUpstream> upstream)
    {
        if (!capture_)
            return upstream;
        return std::make_unique<CaptureSafeUpstream>(parts_.capture, std::move(upstream));
    }

    // A free that a graph decides: of a graph's block, or on a capturing
    // stream (graph_blocks.hpp).  *handled false: the pool frees it.
    status_t free_for_graph(void *ptr, StreamState &stream, bool *handled, PoolBlock *freed)
    {
        CaptureState capture;
        if (status_t st = parts_.capture.state_of(stream, &capture))
            return st;
        if (capture.status == CaptureState::Status::invalidated)
            return capture::refuse(stream, capture, "a free to gpumem's own pool");
        if (capture.status == CaptureState::Status::none && !graphs_.any_owned())
            return GPUMEM_SUCCESS;
        pool::Allocation a;
        const bool live = pool::lookup(ptr, &a) && a.base == ptr;
        if (status_t st = graphs_.free(ptr, stream, capture, handled))
            return st;
        if (*handled && live)
            fill_block(a, freed);
        return GPUMEM_SUCCESS;
    }

    // Strict host mode: the bytes of the live block at `ptr`, about to be
    // freed, are overwritten (then held in the pool's quarantine, so nobody
    // else has them until the fill has run).  Not a live block's base: left
    // to the free to refuse.
    status_t poison(void *ptr, void *stream, bool async)
    {
        pool::Allocation block;
        if (!parts_.host_strict || !pool::lookup(ptr, &block) || block.base != ptr || block.imported)
            return GPUMEM_SUCCESS;
        return parts_.backend.fill(block.device, ptr, k_freed_poison, block.size, stream, async);
    }

    // Chunks of the pool's memory: the backend's device chunks; page-locked
    // host memory; managed memory (mapped pinned memory where managed memory
    // is emulated, as gpumem_managed_alloc does).
    status_t make_upstream(const gpumem_pool_props_t &props, std::unique_ptr<PoolUpstream> *out)
    {
        if (props.memory == GPUMEM_POOL_MEMORY_DEVICE) {
            bool shareable = (props.handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
            // Paging is virtual memory at work: only where VMM is native (so
            // not with GPUMEM_DISABLE=vmm either), and not with GPUMEM_POOL_PAGED=0.
            // RDMA-capable memory is VMM memory on a GPU (Pools::create checked
            // the device makes it), paged whatever GPUMEM_POOL_PAGED says.
            const DeviceState &dev = parts_.devices[props.device];
            const bool rdma = (props.flags & GPUMEM_POOL_RDMA) != 0;
            const bool vmm_pages = dev.vmm_level == GPUMEM_SUPPORT_NATIVE &&
                                   (parts_.options.pool_paged || (rdma && dev.rdma_level == GPUMEM_SUPPORT_NATIVE));
            const size_t page = vmm_pages ? size_t(dev.caps.vmm_granularity) : 0;
            return parts_.backend.pool_upstream(props.device, shareable, page, props.max_size, rdma, out);
        }
        if (props.numa_node >= 0)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "gpumem's own pool of pinned memory cannot place its memory on host NUMA node %d (the device "
                        "has no native pools on a chosen NUMA node); create it with numa_node = -1",
                        props.numa_node);
        const bool managed = props.memory == GPUMEM_POOL_MEMORY_MANAGED &&
                             parts_.devices[props.device].managed_level == GPUMEM_SUPPORT_NATIVE;
        *out = make_host_chunk_upstream(parts_.backend, managed ? HostChunks::managed : HostChunks::pinned, props.device,
                                        k_host_chunk_granule);
        return GPUMEM_SUCCESS;
    }

    // Host chunks are page-locked (pinning costs per call): 2 MiB amortises
    // it, as the GPU backends' device chunks do.
    static constexpr size_t k_host_chunk_granule = size_t{2} << 20;

    const PoolParts &parts_;
    StreamCapture *const capture_; // the backend's, where it can say what a stream captures
    GraphBlocks graphs_;
};

} // namespace

std::unique_ptr<PoolResource> make_builtin_pools(const PoolParts &parts)
{
    return std::make_unique<Counted<BuiltinPools>>(parts);
}

} // namespace gpumem::detail
