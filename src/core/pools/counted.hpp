// The statistics and trace adaptor: wraps any pool implementation once, so
// neither implementation nor any entry point counts for itself (the shape of
// RMM's statistics_resource_adaptor).  A template over the implementation, so
// the hot path pays one virtual call (into the adaptor) and no more.
//
// An imported pointer is one live STREAM_ORDERED allocation of 0 bytes: its
// memory is the exporting process's allocation, counted there (and, imported
// by the process that exported it, counted once), and freeing the import
// frees none of it.  So the statistics, the trace and GPUMEM_LIMIT count what
// this process allocated, on every backend, whatever size the runtime gives
// the imported mapping (docs/semantics.md).
#pragma once

#include <utility>

#include "core/pools/pools.hpp"
#include "core/limit.hpp"
#include "core/stats.hpp"

namespace gpumem::detail {

template <class Inner>
class Counted final : public PoolResource {
public:
    template <class... Args>
    explicit Counted(Args &&...args) : inner_(std::forward<Args>(args)...)
    {
    }

    status_t allocate(PoolObject &pool, uint64_t handle, size_t size, StreamRef stream, void **ptr) override
    {
        if (status_t st = limit::check(limit::counted_kind(GPUMEM_KIND_STREAM_ORDERED, pool.memory), pool.device, size))
            return st;
        if (status_t st = inner_.allocate(pool, handle, size, stream, ptr))
            return st;
        account_alloc(GPUMEM_KIND_STREAM_ORDERED, *ptr, size, pool.device, pool.emulated, stream.handle,
                      handle_from_bits<gpumem_pool_t>(handle), pool.memory);
        return GPUMEM_SUCCESS;
    }
    status_t deallocate(void *ptr, StreamRef stream, bool *mine, PoolBlock *freed) override
    {
        status_t st = inner_.deallocate(ptr, stream, mine, freed);
        if (st == GPUMEM_SUCCESS && *mine)
            account_free(GPUMEM_KIND_STREAM_ORDERED, ptr, counted_bytes(*freed), freed->device, false, stream.handle,
                         handle_from_bits<gpumem_pool_t>(freed->pool), freed->memory);
        return st;
    }
    status_t free_now(void *ptr, const PoolBlock &block) override
    {
        status_t st = inner_.free_now(ptr, block);
        if (st == GPUMEM_SUCCESS)
            account_free(GPUMEM_KIND_STREAM_ORDERED, ptr, counted_bytes(block), block.device, false, nullptr,
                         handle_from_bits<gpumem_pool_t>(block.pool), block.memory);
        return st;
    }
    status_t import_pointer(PoolObject &pool, uint64_t handle, const gpumem_pool_ptr_export_data_t *data, void **ptr,
                            size_t *size) override
    {
        if (status_t st = inner_.import_pointer(pool, handle, data, ptr, size))
            return st;
        account_alloc(GPUMEM_KIND_STREAM_ORDERED, *ptr, 0, pool.device, false, nullptr,
                      handle_from_bits<gpumem_pool_t>(handle), pool.memory);
        return GPUMEM_SUCCESS;
    }

    // The rest passes through.
    bool find(const void *ptr, PoolBlock *out, bool interior) const override { return inner_.find(ptr, out, interior); }
    bool find_base(const void *ptr, PoolBlock *out) const override { return inner_.find_base(ptr, out); }
    bool holds(const void *ptr, size_t size) const override { return inner_.holds(ptr, size); }
    bool may_hold(const void *ptr) const override { return inner_.may_hold(ptr); }
    void list_blocks(std::vector<LiveBlock> *out) const override { inner_.list_blocks(out); }
    status_t create(const gpumem_pool_props_t &props, bool is_default, void **impl) override
    {
        return inner_.create(props, is_default, impl);
    }
    status_t import(int fd, int32_t device, void **impl) override { return inner_.import(fd, device, impl); }
    void adopt(void *impl, uint64_t handle) override { inner_.adopt(impl, handle); }
    status_t destroy(PoolObject &pool, uint64_t handle) override { return inner_.destroy(pool, handle); }
    status_t set_attribute(PoolObject &pool, int32_t attr, const void *value) override
    {
        return inner_.set_attribute(pool, attr, value);
    }
    status_t get_attribute(PoolObject &pool, int32_t attr, void *value) override
    {
        return inner_.get_attribute(pool, attr, value);
    }
    status_t trim_to(PoolObject &pool, size_t keep) override { return inner_.trim_to(pool, keep); }
    status_t set_access(PoolObject &pool, int32_t device, int32_t flags) override
    {
        return inner_.set_access(pool, device, flags);
    }
    status_t export_fd(PoolObject &pool, int *fd) override { return inner_.export_fd(pool, fd); }
    status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data) override
    {
        return inner_.export_pointer(ptr, data);
    }
    size_t release_blocks() override { return inner_.release_blocks(); }
    size_t release_pool(PoolObject &pool) override { return inner_.release_pool(pool); }
    void release_all() override { inner_.release_all(); }

private:
    static uint64_t counted_bytes(const PoolBlock &b) { return b.imported ? 0 : b.size; }

    Inner inner_;
};

} // namespace gpumem::detail
