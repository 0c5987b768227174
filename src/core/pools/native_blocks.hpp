// Live allocations of native (vendor) pools: pointer -> size, pool, device.
// The vendor frees them by pointer alone, but gpumem must still know what a
// pointer is (free dispatch, pointer info, statistics).  Sharded open
// addressing: no heap allocation and no shared lock on the hot path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "gpumem/gpumem.h"
#include "base/clock.hpp"
#include "base/sharing.hpp"

namespace gpumem::detail {

struct NativeBlock {
    size_t size = 0;
    uint64_t pool = 0;     // pool handle
    int32_t device = 0;
    bool imported = false; // mapped from another process's pool
    int32_t memory = GPUMEM_POOL_MEMORY_DEVICE; // the pool's GPUMEM_POOL_MEMORY_*
    Birth birth;
};

class NativeBlocks {
public:
    ~NativeBlocks();
    // Throws std::bad_alloc when a shard cannot grow.
    void insert(const void *ptr, const NativeBlock &block);
    // The block starting at ptr; false if there is none.
    bool find(const void *ptr, NativeBlock *out) const;
    // Remove the block starting at ptr; false if there is none.
    bool take(const void *ptr, NativeBlock *out);
    // The block holding ptr (interior pointers too): a scan, not for hot paths.
    bool find_containing(const void *ptr, void **base, NativeBlock *out) const;
    // False when no block ever inserted covers ptr (the span of all blocks
    // ever live): a cheap test before asking the runtime about an address.
    bool may_hold(const void *ptr) const
    {
        const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
        return p >= lo_.load(std::memory_order_relaxed) && p < hi_.load(std::memory_order_relaxed);
    }
    std::vector<std::pair<void *, NativeBlock>> take_all();
    // A copy of every block (snapshots, reports).
    std::vector<std::pair<void *, NativeBlock>> all() const;

private:
    // One line each: the driver's work between two calls evicts gpumem's
    // lines, and a record straddling two costs two misses (docs/benchmarks.md).
    struct alignas(64) Entry {
        uintptr_t key = 0; // 0 = empty slot
        NativeBlock block;
    };
    static_assert(sizeof(Entry) == 64, "a block's record fills one line");
    // Critical sections are a few probes long: a spin lock costs less than a mutex.
    class SpinLock {
    public:
        void lock()
        {
            while (flag_.exchange(true, std::memory_order_acquire))
                while (flag_.load(std::memory_order_relaxed))
                    std::this_thread::yield();
        }
        void unlock() { flag_.store(false, std::memory_order_release); }

    private:
        std::atomic<bool> flag_{false};
    };
    struct alignas(k_false_sharing_range) Shard {
        mutable SpinLock mutex;
        Entry *slots = nullptr;
        size_t capacity = 0; // a power of two, or 0
        size_t count = 0;
    };
    static constexpr unsigned k_shard_bits = 6;
    static uint64_t hash(uintptr_t key) { return (static_cast<uint64_t>(key) >> 8) * 0x9E3779B97F4A7C15ull; }
    Shard &shard_of(uint64_t h) { return shards_[h >> (64 - k_shard_bits)]; }
    const Shard &shard_of(uint64_t h) const { return shards_[h >> (64 - k_shard_bits)]; }
    static void grow(Shard &s);
    static void place(Shard &s, uintptr_t key, const NativeBlock &block);

    Shard shards_[1u << k_shard_bits];
    std::atomic<uintptr_t> lo_{UINTPTR_MAX}, hi_{0}; // may_hold: only ever widened
};

} // namespace gpumem::detail
