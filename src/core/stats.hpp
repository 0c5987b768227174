// Process-wide statistics per memory kind, and the trace callback.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Stats {
public:
    // Counts are sharded by thread so that threads allocating at once do not
    // fight over one cache line; live bytes stay one counter per kind so that
    // the peak is exact.
    void on_alloc(int32_t kind, uint64_t bytes)
    {
        Shard &shard = my_shard();
        shard.alloc_count[kind].fetch_add(1, std::memory_order_relaxed);
        uint64_t now = current_[kind].value.fetch_add(bytes, std::memory_order_relaxed) + bytes;
        uint64_t peak = peak_[kind].value.load(std::memory_order_relaxed);
        while (now > peak && !peak_[kind].value.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
        }
    }
    void on_free(int32_t kind, uint64_t bytes)
    {
        my_shard().free_count[kind].fetch_add(1, std::memory_order_relaxed);
        current_[kind].value.fetch_sub(bytes, std::memory_order_relaxed);
    }
    // A live allocation changed size (buffers).
    void on_resize(int32_t kind, uint64_t old_bytes, uint64_t new_bytes)
    {
        if (new_bytes >= old_bytes) {
            uint64_t grow = new_bytes - old_bytes;
            uint64_t now = current_[kind].value.fetch_add(grow, std::memory_order_relaxed) + grow;
            uint64_t peak = peak_[kind].value.load(std::memory_order_relaxed);
            while (now > peak && !peak_[kind].value.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
            }
        } else {
            current_[kind].value.fetch_sub(old_bytes - new_bytes, std::memory_order_relaxed);
        }
    }
    void on_fallback() { fallback_.fetch_add(1, std::memory_order_relaxed); }

    void read(gpumem_stats_t *out) const;
    void reset_peaks();
    void reset_all();

private:
    static constexpr int k_shards = 16;
    struct alignas(64) Padded {
        std::atomic<uint64_t> value{0};
    };
    struct alignas(64) Shard {
        std::atomic<uint64_t> alloc_count[GPUMEM_KIND_COUNT] = {};
        std::atomic<uint64_t> free_count[GPUMEM_KIND_COUNT] = {};
    };
    Shard &my_shard();

    Padded current_[GPUMEM_KIND_COUNT];
    Padded peak_[GPUMEM_KIND_COUNT];
    Shard shards_[k_shards];
    std::atomic<uint64_t> fallback_{0};
};

Stats &stats();

// Trace callback: one global (fn, user) pair, swapped atomically.
struct TraceSink {
    gpumem_trace_fn fn;
    void *user;
};
void set_trace(gpumem_trace_fn fn, void *user);
// Cheap check first: the hot path pays one relaxed load when tracing is off.
extern std::atomic<bool> g_trace_enabled;
void emit_trace(int32_t op, int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                gpumem_stream_t stream, gpumem_pool_t pool);

// Record an allocation or free in the statistics and the trace.
inline void account_alloc(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                          gpumem_stream_t stream = nullptr, gpumem_pool_t pool = nullptr)
{
    stats().on_alloc(kind, bytes);
    if (g_trace_enabled.load(std::memory_order_relaxed))
        emit_trace(GPUMEM_TRACE_ALLOC, kind, ptr, bytes, device, emulated, stream, pool);
}
inline void account_free(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                         gpumem_stream_t stream = nullptr, gpumem_pool_t pool = nullptr)
{
    stats().on_free(kind, bytes);
    if (g_trace_enabled.load(std::memory_order_relaxed))
        emit_trace(GPUMEM_TRACE_FREE, kind, ptr, bytes, device, emulated, stream, pool);
}

} // namespace gpumem::detail
