// Upstreams and helpers shared by the pool's internal test and benchmark.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.hpp"
#include "pool/pool.hpp"

namespace pool_test {

using namespace gpumem::detail;

// What an upstream did, kept by the test after the pool deleted the upstream.
struct UpstreamStats {
    std::mutex mu;
    std::map<uintptr_t, size_t> chunks; // live chunks
    uint64_t held = 0;                  // bytes in live chunks
    uint64_t allocations = 0;
    bool destroyed = false;
    bool bad_free = false; // a deallocate that matched no chunk
};

// Chunks with addresses only: a fake address space that is never touched,
// so that tests can "allocate" many GiB.  `capacity` plays the device size.
class FakeUpstream : public PoolUpstream {
public:
    FakeUpstream(std::shared_ptr<UpstreamStats> stats, size_t granularity = size_t(2) << 20,
                 uint64_t capacity = UINT64_MAX)
        : stats_(std::move(stats)), granularity_(granularity), capacity_(capacity)
    {
    }
    ~FakeUpstream() override
    {
        std::lock_guard<std::mutex> lock(stats_->mu);
        stats_->destroyed = true;
    }
    size_t granularity() const override { return granularity_; }
    status_t allocate(size_t size, void **ptr) override
    {
        std::lock_guard<std::mutex> lock(stats_->mu);
        if (size % granularity_ != 0)
            std::abort();
        if (size > capacity_ - stats_->held)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "fake upstream: %zu bytes requested, %llu of %llu held", size,
                        (unsigned long long)stats_->held, (unsigned long long)capacity_);
        // One address space for every fake upstream (pools share the live
        // table), with a gap so that chunks are never adjacent.
        uintptr_t p = round_up(next_address().fetch_add(size + 2 * granularity_), granularity_);
        stats_->chunks[p] = size;
        stats_->held += size;
        ++stats_->allocations;
        *ptr = reinterpret_cast<void *>(p);
        return GPUMEM_SUCCESS;
    }
    void deallocate(void *ptr, size_t size) override
    {
        std::lock_guard<std::mutex> lock(stats_->mu);
        auto it = stats_->chunks.find(uintptr_t(ptr));
        if (it == stats_->chunks.end() || it->second != size) {
            stats_->bad_free = true;
            return;
        }
        stats_->held -= size;
        stats_->chunks.erase(it);
    }

protected:
    std::shared_ptr<UpstreamStats> stats_;
    size_t granularity_;
    uint64_t capacity_;
    static constexpr uintptr_t kBase = uintptr_t(1) << 44;
    static std::atomic<uintptr_t> &next_address()
    {
        static std::atomic<uintptr_t> next{kBase};
        return next;
    }
    static uintptr_t round_up(uintptr_t n, size_t m) { return (n + m - 1) / m * m; }
};

// A fake upstream whose memory another "process" can map: offsets are
// counted from the start of its address range.
class SharedFakeUpstream : public FakeUpstream {
public:
    static constexpr uint64_t kPoolId = 77;
    using FakeUpstream::FakeUpstream;
    bool shareable() const override { return true; }
    status_t export_fd(int *fd) override
    {
        *fd = 42;
        return GPUMEM_SUCCESS;
    }
    status_t offset_of(const void *ptr, uint64_t *offset, uint64_t *pool_id) const override
    {
        *offset = uintptr_t(ptr) - kBase;
        *pool_id = kPoolId;
        return GPUMEM_SUCCESS;
    }
};

// The importing side: cannot allocate, maps offsets at another address.
class ImportedFakeUpstream : public PoolUpstream {
public:
    static constexpr uintptr_t kMapBase = uintptr_t(3) << 44;
    size_t granularity() const override { return size_t(2) << 20; }
    status_t allocate(size_t, void **) override { std::abort(); }
    void deallocate(void *, size_t) override { std::abort(); }
    bool can_allocate() const override { return false; }
    bool shareable() const override { return true; }
    status_t address_of(uint64_t offset, uint64_t, uint64_t pool_id, void **ptr) override
    {
        if (pool_id != SharedFakeUpstream::kPoolId)
            return fail(GPUMEM_ERROR_IPC, "fake import: pool id %llu is not the exporter's",
                        (unsigned long long)pool_id);
        *ptr = reinterpret_cast<void *>(kMapBase + offset);
        return GPUMEM_SUCCESS;
    }
};

// Real host memory, for tests that write into blocks.
class HostUpstream : public PoolUpstream {
public:
    explicit HostUpstream(std::shared_ptr<UpstreamStats> stats) : stats_(std::move(stats)) {}
    ~HostUpstream() override
    {
        std::lock_guard<std::mutex> lock(stats_->mu);
        stats_->destroyed = true;
    }
    size_t granularity() const override { return size_t(1) << 20; }
    status_t allocate(size_t size, void **ptr) override
    {
        void *p = std::aligned_alloc(4096, size);
        if (!p)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "host upstream: aligned_alloc(%zu) failed", size);
        std::lock_guard<std::mutex> lock(stats_->mu);
        stats_->chunks[uintptr_t(p)] = size;
        stats_->held += size;
        *ptr = p;
        return GPUMEM_SUCCESS;
    }
    void deallocate(void *ptr, size_t size) override
    {
        {
            std::lock_guard<std::mutex> lock(stats_->mu);
            auto it = stats_->chunks.find(uintptr_t(ptr));
            if (it == stats_->chunks.end() || it->second != size) {
                stats_->bad_free = true;
                return;
            }
            stats_->held -= size;
            stats_->chunks.erase(it);
        }
        std::free(ptr);
    }

private:
    std::shared_ptr<UpstreamStats> stats_;
};

// A stream as the core would set one up: a fresh id each time.
inline uint64_t next_stream_id()
{
    static std::atomic<uint64_t> next{1000};
    return next++;
}

struct Stream {
    StreamState state;
    explicit Stream(bool synchronous = false, int32_t device = 0)
    {
        state.id = next_stream_id();
        state.device = device;
        state.synchronous = synchronous;
    }
    ~Stream() { pool::on_stream_destroyed(state); }
    operator StreamState &() { return state; }
    // What the core does for gpumem_stream_synchronize.
    void synchronize()
    {
        EventMark m = pool::mark(state);
        pool::on_completed(state, m.epoch);
        pool::apply_release_thresholds(state.device);
    }
};

inline uint64_t attr_u64(pool::Pool *p, int32_t attr)
{
    uint64_t v = 0;
    if (pool::get_attribute(p, attr, &v) != GPUMEM_SUCCESS)
        std::abort();
    return v;
}

} // namespace pool_test
