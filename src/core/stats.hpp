// Process-wide statistics per memory kind, and the trace callback.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/sharing.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

// The calling thread's statistics shard, plus one (0: none taken yet; the
// last shard is shared, every other has one owner).  Initial-exec and
// constant-initialised, read inline: a plain %fs access on every allocation
// and free, no call.
__attribute__((tls_model("initial-exec"))) inline thread_local unsigned t_shard_plus_one = 0;

class Stats {
public:
    // Each thread counts in its own shard, so threads allocating at once do
    // not fight over one cache line.  Live bytes are a shared total plus each
    // shard's not-yet-flushed delta; a shard flushes once its delta passes
    // k_flush_bytes.  current_bytes is therefore always exact; peak_bytes is
    // exact while one thread allocates, and with several it may miss up to
    // k_flush_bytes of another thread's unflushed activity.
    //
    // A thread that owns its shard alone (the first k_shards - 1 threads alive
    // at once) updates it with plain loads and stores: no locked instruction
    // on the allocation path.  Later threads share the last shard, with
    // atomic read-modify-writes.
    void on_alloc(int32_t kind, uint64_t bytes)
    {
        bool alone;
        Shard &shard = my_shard(&alone);
        Counts &counts = shard.kinds[kind];
        add(counts.allocs, uint64_t{1}, alone);
        int64_t delta = add(counts.delta, static_cast<int64_t>(bytes), alone);
        int64_t total = totals_[kind].value.load(std::memory_order_relaxed);
        raise_peak(kind, total + delta);
        if (delta > k_flush_bytes) [[unlikely]]
            flush(shard, kind, alone);
    }
    void on_free(int32_t kind, uint64_t bytes)
    {
        bool alone;
        Shard &shard = my_shard(&alone);
        Counts &counts = shard.kinds[kind];
        add(counts.frees, uint64_t{1}, alone);
        int64_t delta = add(counts.delta, -static_cast<int64_t>(bytes), alone);
        if (delta < -k_flush_bytes) [[unlikely]]
            flush(shard, kind, alone);
    }
    void on_fallback() { fallback_.fetch_add(1, std::memory_order_relaxed); }

    void read(gpumem_stats_t *out) const;
    void reset_peaks();
    void reset_all();

private:
    static constexpr int k_shards = 64;
    static constexpr int64_t k_flush_bytes = int64_t{4} << 20;
    // A kind's counters side by side, and its total beside its peak: an
    // allocation touches one line of its shard and reads one shared line
    // (the driver's work between two calls evicts gpumem's lines, so each
    // line touched is a likely cache miss on the thin paths).
    struct alignas(32) Counts {
        std::atomic<int64_t> delta{0};
        std::atomic<uint64_t> allocs{0};
        std::atomic<uint64_t> frees{0};
    };
    struct alignas(k_false_sharing_range) Total {
        std::atomic<int64_t> value{0}; // flushed shard deltas
        std::atomic<int64_t> peak{0};
    };
    struct alignas(k_false_sharing_range) Shard {
        Counts kinds[GPUMEM_KIND_COUNT];
        std::atomic<bool> owned{false}; // a thread updates it alone (not the shared last shard)
    };
    // The calling thread's shard; *alone: no other thread writes it.
    Shard &my_shard(bool *alone)
    {
        const unsigned index = t_shard_plus_one;
        if (index == 0) [[unlikely]]
            return claim_shard(alone);
        *alone = index != k_shards; // every shard but the last has one owner
        return shards_[index - 1];
    }
    Shard &claim_shard(bool *alone);
    // Readers only load the counters, so a sole writer needs no locked add.
    template <class T>
    static T add(std::atomic<T> &counter, T value, bool alone)
    {
        if (alone) [[likely]] {
            T now = counter.load(std::memory_order_relaxed) + value;
            counter.store(now, std::memory_order_relaxed);
            return now;
        }
        return counter.fetch_add(value, std::memory_order_relaxed) + value;
    }
    void raise_peak(int32_t kind, int64_t now)
    {
        int64_t peak = totals_[kind].peak.load(std::memory_order_relaxed);
        while (now > peak && !totals_[kind].peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
        }
    }
    void flush(Shard &shard, int32_t kind, bool alone)
    {
        // Only the shard's writers flush it; a sole one need not exchange.
        std::atomic<int64_t> &mine = shard.kinds[kind].delta;
        int64_t delta = alone ? mine.load(std::memory_order_relaxed) : mine.exchange(0, std::memory_order_relaxed);
        if (alone)
            mine.store(0, std::memory_order_relaxed);
        totals_[kind].value.fetch_add(delta, std::memory_order_relaxed);
    }
    int64_t current(int32_t kind) const;

    Total totals_[GPUMEM_KIND_COUNT];
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
void emit_trace(int32_t op, int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                gpumem_stream_t stream, gpumem_pool_t pool);

// What watches allocations besides the counters, as bits of one word, so the
// hot path pays one relaxed load and a branch when nothing watches.
enum Watcher : uint32_t {
    watch_callback = 1u << 0,   // gpumem_set_trace_callback
    watch_trace_file = 1u << 1, // GPUMEM_TRACE (core/trace.cpp)
    watch_backtrace = 1u << 2,  // GPUMEM_BACKTRACE=1 (core/trace.cpp)
    watch_limit = 1u << 3,      // GPUMEM_LIMIT (core/limit.cpp)
};
extern std::atomic<uint32_t> g_watchers;
inline void set_watcher(Watcher w, bool on)
{
    if (on)
        g_watchers.fetch_or(w, std::memory_order_acq_rel);
    else
        g_watchers.fetch_and(~uint32_t(w), std::memory_order_acq_rel);
}
// The slow side of account_alloc / account_free: every watcher in turn.
void watch_alloc(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated, gpumem_stream_t stream,
                 gpumem_pool_t pool, int32_t pool_memory);
void watch_free(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated, gpumem_stream_t stream,
                gpumem_pool_t pool, int32_t pool_memory);

// Record an allocation or free in the statistics and with every watcher.
// `pool_memory`: a stream-ordered block's pool's GPUMEM_POOL_MEMORY_* (the
// memory of the other kinds follows from the kind); only the watchers use it.
inline void account_alloc(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                          gpumem_stream_t stream = nullptr, gpumem_pool_t pool = nullptr,
                          int32_t pool_memory = GPUMEM_POOL_MEMORY_DEVICE)
{
    stats().on_alloc(kind, bytes);
    if (g_watchers.load(std::memory_order_relaxed)) [[unlikely]]
        watch_alloc(kind, ptr, bytes, device, emulated, stream, pool, pool_memory);
}
inline void account_free(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                         gpumem_stream_t stream = nullptr, gpumem_pool_t pool = nullptr,
                         int32_t pool_memory = GPUMEM_POOL_MEMORY_DEVICE)
{
    stats().on_free(kind, bytes);
    if (g_watchers.load(std::memory_order_relaxed)) [[unlikely]]
        watch_free(kind, ptr, bytes, device, emulated, stream, pool, pool_memory);
}

} // namespace gpumem::detail
