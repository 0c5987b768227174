// The vendor's stream-ordered pools behind the pool interface, with their
// block table.  Every native-pool call of the backend is in this file.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/log.hpp"
#include "core/capture.hpp"
#include "core/pools/counted.hpp"
#include "core/pools/native_blocks.hpp"
#include "backends/backend.hpp"
#include "base/options.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/streams.hpp"

namespace gpumem::detail {

namespace {

// Field by field into the caller's record: a temporary copied whole is
// staged through the stack with mixed-width stores (store-forwarding stalls).
void fill_block(void *base, const NativeBlock &n, PoolBlock *b)
{
    b->base = base;
    b->size = n.size;
    b->device = n.device;
    b->pool = n.pool;
    b->imported = n.imported;
    b->memory = n.memory;
}

PoolBlock block_of(void *base, const NativeBlock &n)
{
    PoolBlock b;
    fill_block(base, n, &b);
    return b;
}

class NativePoolResource final : public PoolResource {
public:
    explicit NativePoolResource(const PoolParts &parts) : parts_(parts), vendor_(*parts.backend.native_pools()) {}

    status_t allocate(PoolObject &p, uint64_t handle, size_t size, StreamRef stream, void **ptr) override
    {
        if (p.imported) [[unlikely]]
            return fail(GPUMEM_ERROR_INVALID_VALUE, "imported pools cannot allocate; allocate in the exporting "
                        "process and import the pointer with gpumem_pool_import_pointer");
        status_t st = vendor_.alloc(p.device, p.impl, size, stream.state.native, ptr);
        if (st == GPUMEM_ERROR_OUT_OF_MEMORY) [[unlikely]]
            st = retry_out_of_memory(p, size, stream, ptr);
        if (st)
            return st;
        NativeBlock block;
        block.size = size;
        block.pool = handle;
        block.device = p.device;
        block.memory = p.memory;
        block.birth = Birth::now(stream.handle);
        try {
            blocks_.insert(*ptr, block);
        } catch (...) {
            vendor_.free(stream.state.device, *ptr, stream.state.native);
            *ptr = nullptr;
            throw;
        }
        return GPUMEM_SUCCESS;
    }
    status_t deallocate(void *ptr, StreamRef stream, bool *mine, PoolBlock *freed) override
    {
        NativeBlock block;
        *mine = blocks_.take(ptr, &block);
        if (!*mine)
            return GPUMEM_SUCCESS;
        if (status_t st = vendor_.free(stream.state.device, ptr, stream.state.native)) {
            blocks_.insert(ptr, block);
            return st;
        }
        forget_import(ptr, block);
        fill_block(ptr, block, freed);
        if (any_doomed_.load(std::memory_order_acquire)) [[unlikely]]
            reap(block.pool);
        return GPUMEM_SUCCESS;
    }
    status_t free_now(void *ptr, const PoolBlock &) override
    {
        NativeBlock block;
        if (!blocks_.take(ptr, &block))
            return fail(GPUMEM_ERROR_INVALID_POINTER, "%p was freed by another thread", ptr);
        // In order on the default stream once the device is idle, then waited for.
        status_t st = parts_.backend.device_synchronize(block.device);
        if (st == GPUMEM_SUCCESS)
            st = vendor_.free(block.device, ptr, nullptr);
        if (st != GPUMEM_SUCCESS) {
            blocks_.insert(ptr, block);
            return st;
        }
        forget_import(ptr, block);
        if (status_t done = parts_.backend.device_synchronize(block.device))
            return done;
        if (any_doomed_.load(std::memory_order_acquire)) [[unlikely]]
            reap(block.pool);
        return GPUMEM_SUCCESS;
    }
    bool find(const void *ptr, PoolBlock *out, bool interior) const override
    {
        NativeBlock block;
        if (blocks_.find(ptr, &block)) {
            *out = block_of(const_cast<void *>(ptr), block);
            return true;
        }
        void *base = nullptr;
        if (!interior || !blocks_.find_containing(ptr, &base, &block))
            return false;
        *out = block_of(base, block);
        return true;
    }

    // The vendor's pool memory is device memory the vendor maps; only its
    // live blocks are known (by base).
    bool holds(const void *, size_t) const override { return false; }
    bool may_hold(const void *ptr) const override { return blocks_.may_hold(ptr); }
    void list_blocks(std::vector<LiveBlock> *out) const override
    {
        for (const auto &[ptr, block] : blocks_.all())
            out->push_back(LiveBlock{block_of(ptr, block), block.birth});
    }

    status_t create(const gpumem_pool_props_t &props, bool is_default, void **impl) override
    {
        // The vendor's own default pool is the device's default pool of device memory.
        if (is_default && props.memory == GPUMEM_POOL_MEMORY_DEVICE)
            return vendor_.default_pool(props.device, impl);
        void *pool = nullptr;
        if (status_t st = vendor_.create(props.device, props.handle_types, props.max_size, props.memory,
                                         props.numa_node, &pool))
            return st;
        // A vendor pool of host memory starts reachable from the CPU alone;
        // gpumem's pinned memory is reachable from every device.
        if (props.memory == GPUMEM_POOL_MEMORY_PINNED)
            for (int32_t d = 0; d < parts_.devices.count(); ++d)
                if (status_t st = vendor_.set_access(props.device, pool, d, GPUMEM_ACCESS_READWRITE)) {
                    const std::string why = last_error_message();
                    vendor_.destroy(props.device, pool);
                    return fail(st, "%s", why.c_str());
                }
        *impl = pool;
        return GPUMEM_SUCCESS;
    }
    status_t import(int fd, int32_t device, void **impl) override { return vendor_.import_pool(device, fd, impl); }
    void adopt(void *, uint64_t) override {} // blocks carry their pool's handle
    // A pool with outstanding blocks: the vendor keeps its blocks valid and
    // destroys it itself once they are freed, where the runtime's deferred
    // destruction works (workaround_defer_pool_destroy, vendor_bugs.def).
    // Elsewhere gpumem destroys it once the last block is freed and the
    // device is idle.
    status_t destroy(PoolObject &p, uint64_t handle) override
    {
        if (!(parts_.backend.workarounds() & workaround_defer_pool_destroy) || !has_blocks(handle))
            return vendor_.destroy(p.device, p.impl);
        std::lock_guard<std::mutex> lock(doomed_mutex_);
        doomed_.push_back(Doomed{handle, p.impl, p.device});
        any_doomed_.store(true, std::memory_order_release);
        // A free that took the last block before the flag was up did not look.
        reap_locked(handle);
        return GPUMEM_SUCCESS;
    }
    status_t set_attribute(PoolObject &p, int32_t attr, const void *value) override
    {
        return vendor_.set_attribute(p.device, p.impl, attr, value);
    }
    status_t get_attribute(PoolObject &p, int32_t attr, void *value) override
    {
        return vendor_.get_attribute(p.device, p.impl, attr, value);
    }
    status_t trim_to(PoolObject &p, size_t keep) override { return vendor_.trim(p.device, p.impl, keep); }
    status_t set_access(PoolObject &p, int32_t device, int32_t flags) override
    {
        return vendor_.set_access(p.device, p.impl, device, flags);
    }
    status_t export_fd(PoolObject &p, int *fd) override { return vendor_.export_pool(p.device, p.impl, fd); }
    status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data) override
    {
        NativeBlock block;
        const int32_t device = blocks_.find(ptr, &block) ? block.device : current_device();
        return vendor_.export_pointer(device, ptr, data);
    }
    status_t import_pointer(PoolObject &p, uint64_t handle, const gpumem_pool_ptr_export_data_t *data, void **ptr,
                            size_t *size) override
    {
        Import key;
        key.pool = handle;
        std::memcpy(key.data.data(), data, sizeof *data);
        // Held across the vendor call: imports are rare, and two threads
        // importing the same data must not both map it.
        std::lock_guard<std::mutex> lock(imports_mutex_);
        for (const Import &i : imports_)
            if (i.pool == key.pool && i.data == key.data)
                // The driver maps it again at the same address, and the first
                // free unmaps it under both (cuda_probe imported:
                // first_import_survives_second_free): gpumem books one block per address.
                return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is already imported; free it before importing it again",
                            i.ptr);
        imports_.reserve(imports_.size() + 1);
        void *q = nullptr;
        int32_t owner = p.device;
        if (status_t st = vendor_.import_pointer(p.device, p.impl, data, &q, &owner))
            return st;
        // The pool is the exporter's: its device is the memory's, as this
        // process numbers devices (the importer's current device until now).
        if (!p.owner_known) {
            p.device = owner;
            p.access.set(owner, GPUMEM_ACCESS_READWRITE);
            p.owner_known = true;
        }
        NativeBlock block;
        block.pool = handle;
        block.device = owner;
        block.imported = true;
        block.birth = Birth::now();
        if (status_t st = imported_size(owner, q, &block.size)) {
            vendor_.free(owner, q, nullptr);
            return st;
        }
        try {
            blocks_.insert(q, block);
        } catch (...) {
            vendor_.free(owner, q, nullptr);
            throw;
        }
        key.ptr = q;
        imports_.push_back(key);
        *ptr = q;
        *size = block.size;
        return GPUMEM_SUCCESS;
    }

    size_t release_blocks() override
    {
        // Imported blocks first: the runtimes want an import freed before its
        // exporter frees the block, and a process may import its own export.
        auto all = blocks_.take_all();
        std::stable_partition(all.begin(), all.end(), [](const auto &b) { return b.second.imported; });
        size_t n = 0;
        for (auto &[ptr, block] : all) {
            ++n;
            vendor_.free(block.device, ptr, nullptr);
            parts_.pointers.bury(ptr, block.size, GPUMEM_KIND_STREAM_ORDERED, block.device, true);
        }
        std::lock_guard<std::mutex> lock(imports_mutex_);
        imports_.clear();
        return n;
    }
    size_t release_pool(PoolObject &p) override
    {
        if (!(p.is_default && p.memory == GPUMEM_POOL_MEMORY_DEVICE)) // the vendor's own default stays
            vendor_.destroy(p.device, p.impl);
        return 0;
    }
    void release_all() override
    {
        // gpumem_finalize freed every block and waited for every device.
        std::lock_guard<std::mutex> lock(doomed_mutex_);
        for (const Doomed &d : doomed_)
            vendor_.destroy(d.device, d.impl);
        doomed_.clear();
        any_doomed_.store(false, std::memory_order_release);
    }

private:
    // The vendor's pool may hold freed memory that other streams' pending
    // work still orders: once `stream`'s work is done and the pool's cache is
    // given back, the same request may fit.  Not where this runtime's failed
    // allocation has already corrupted the pool (workaround_no_native_retry),
    // nor on a capturing stream, where the wait cannot be recorded.
    [[gnu::cold, gnu::noinline]] status_t retry_out_of_memory(PoolObject &p, size_t size, StreamRef stream,
                                                              void **ptr)
    {
        // More than any device holds: nothing given back could make room.
        uint64_t largest = 0;
        parts_.devices.for_each([&](const DeviceState &d) { largest = std::max<uint64_t>(largest, d.caps.total_memory); });
        if (size > largest)
            return GPUMEM_ERROR_OUT_OF_MEMORY; // the backend's message stands
        const std::string why = last_error_message();
        if (parts_.backend.workarounds() & workaround_no_native_retry)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "%s; this runtime's failed pool allocations must not be retried (known bug, see "
                        "gpumem-info): free memory, or use a pool with GPUMEM_POOL_BUILTIN",
                        why.c_str());
        CaptureState state;
        if (parts_.capture.state_of(stream.state, &state) == GPUMEM_SUCCESS &&
            state.status != CaptureState::Status::none)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "%s; stream %p is capturing a graph, and waiting for the stream to retry cannot be captured: "
                        "free memory or trim the pool before the capture",
                        why.c_str(), stream.state.native);
        if (status_t st = parts_.backend.stream_synchronize(stream.state.device, stream.state.native))
            return st;
        if (status_t st = vendor_.trim(p.device, p.impl, 0))
            return st;
        return vendor_.alloc(p.device, p.impl, size, stream.state.native, ptr);
    }

    // Pools destroyed while they had outstanding blocks (see destroy).
    struct Doomed {
        uint64_t handle;
        void *impl;
        int32_t device;
    };
    std::mutex doomed_mutex_;
    std::vector<Doomed> doomed_;
    std::atomic<bool> any_doomed_{false};

    bool has_blocks(uint64_t handle) const
    {
        for (const auto &[ptr, block] : blocks_.all())
            if (block.pool == handle)
                return true;
        return false;
    }
    void reap(uint64_t handle)
    {
        std::lock_guard<std::mutex> lock(doomed_mutex_);
        reap_locked(handle);
    }
    // Destroy the doomed pool `handle` once its last block is freed, after
    // the device finished that free.  The free itself succeeded whatever happens here.
    void reap_locked(uint64_t handle)
    {
        auto it = std::find_if(doomed_.begin(), doomed_.end(), [&](const Doomed &d) { return d.handle == handle; });
        if (it == doomed_.end() || has_blocks(handle))
            return;
        const Doomed d = *it;
        doomed_.erase(it);
        any_doomed_.store(!doomed_.empty(), std::memory_order_release);
        status_t st = parts_.backend.device_synchronize(d.device);
        if (st == GPUMEM_SUCCESS)
            st = vendor_.destroy(d.device, d.impl);
        if (st != GPUMEM_SUCCESS)
            log(LogLevel::warn, "destroying pool %p after its last block was freed failed: %s", d.impl,
                last_error_message());
    }

    // Export data imported into a pool and still live, so that the same data
    // is not imported twice (the host backend's pool refuses it too).
    struct Import {
        uint64_t pool = 0; // pool handle
        std::array<unsigned char, sizeof(gpumem_pool_ptr_export_data_t)> data{};
        void *ptr = nullptr;
    };

    // The size of a block just imported (the exporter's allocation), which
    // the import itself does not say.  0 (unknown: statistics count no bytes,
    // only the vendor range-checks copies) where the vendor has no
    // address-range query, or answers with another base (a range that is not
    // this block alone).
    status_t imported_size(int32_t owner, void *ptr, size_t *out)
    {
        void *base = nullptr;
        size_t size = 0;
        status_t st = vendor_.block_range(owner, ptr, &base, &size);
        if (st == GPUMEM_ERROR_NOT_SUPPORTED)
            return GPUMEM_SUCCESS;
        if (st != GPUMEM_SUCCESS)
            return st;
        *out = base == ptr ? size : 0;
        return GPUMEM_SUCCESS;
    }
    void forget_import(void *ptr, const NativeBlock &block)
    {
        if (!block.imported)
            return;
        std::lock_guard<std::mutex> lock(imports_mutex_);
        for (size_t i = 0; i < imports_.size(); ++i)
            if (imports_[i].ptr == ptr) {
                imports_[i] = imports_.back();
                imports_.pop_back();
                return;
            }
    }

    const PoolParts &parts_;
    NativePools &vendor_; // the backend's optional facet (present, or this class is not made)
    NativeBlocks blocks_; // live allocations of vendor pools
    std::mutex imports_mutex_;    // guards imports_; taken with no other lock held
    std::vector<Import> imports_; // live imported blocks' export data
};

} // namespace

std::unique_ptr<PoolResource> make_native_pools(const PoolParts &parts)
{
    if (!parts.backend.native_pools())
        return nullptr;
    return std::make_unique<Counted<NativePoolResource>>(parts);
}

} // namespace gpumem::detail
