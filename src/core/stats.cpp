#include "core/stats.hpp"

#include <pthread.h>

#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "core/limit.hpp"
#include "core/pointers.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {

Stats &stats()
{
    static Stats instance;
    return instance;
}

namespace {
// Gives an owned shard back when its thread exits (its counts stay summed).
// Runs on the exiting thread: anything it still frees later (another
// thread-local's destructor) counts in the shared shard.
pthread_key_t g_shard_key;
constexpr unsigned k_shared_shard_plus_one = 64; // Stats::k_shards
void release_shard(void *owned_flag)
{
    t_shard_plus_one = k_shared_shard_plus_one;
    static_cast<std::atomic<bool> *>(owned_flag)->store(false, std::memory_order_release);
}
} // namespace

Stats::Shard &Stats::claim_shard(bool *alone)
{
    static const bool have_key = pthread_key_create(&g_shard_key, release_shard) == 0;
    // The last shard is everyone's; the others go to one thread each while it lives.
    if (have_key) {
        for (int i = 0; i < k_shards - 1; ++i) {
            bool expected = false;
            if (!shards_[i].owned.load(std::memory_order_relaxed) &&
                shards_[i].owned.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
                if (pthread_setspecific(g_shard_key, &shards_[i].owned) != 0) {
                    shards_[i].owned.store(false, std::memory_order_release);
                    break;
                }
                t_shard_plus_one = unsigned(i) + 1;
                *alone = true;
                return shards_[i];
            }
        }
    }
    static_assert(k_shards == k_shared_shard_plus_one, "release_shard names the shared shard");
    t_shard_plus_one = k_shards;
    *alone = false;
    return shards_[k_shards - 1];
}

int64_t Stats::current(int32_t kind) const
{
    int64_t total = totals_[kind].value.load(std::memory_order_relaxed);
    for (const Shard &shard : shards_)
        total += shard.kinds[kind].delta.load(std::memory_order_relaxed);
    return total;
}

void Stats::read(gpumem_stats_t *out) const
{
    gpumem_stats_t full{};
    full.size = sizeof full;
    for (int kind = 0; kind < GPUMEM_KIND_COUNT; ++kind) {
        int64_t now = current(kind);
        int64_t peak = totals_[kind].peak.load(std::memory_order_relaxed);
        full.current_bytes[kind] = now > 0 ? static_cast<uint64_t>(now) : 0;
        full.peak_bytes[kind] = static_cast<uint64_t>(peak > now ? peak : (now > 0 ? now : 0));
        for (const Shard &shard : shards_) {
            full.alloc_count[kind] += shard.kinds[kind].allocs.load(std::memory_order_relaxed);
            full.free_count[kind] += shard.kinds[kind].frees.load(std::memory_order_relaxed);
        }
    }
    full.fallback_count = fallback_.load(std::memory_order_relaxed);
    // Write only what the caller's struct covers.
    size_t size = out->size < sizeof full ? out->size : sizeof full;
    std::memcpy(reinterpret_cast<char *>(out) + sizeof(size_t), reinterpret_cast<const char *>(&full) + sizeof(size_t),
                size - sizeof(size_t));
}

void Stats::reset_peaks()
{
    for (int kind = 0; kind < GPUMEM_KIND_COUNT; ++kind)
        totals_[kind].peak.store(current(kind), std::memory_order_relaxed);
}

void Stats::reset_all()
{
    for (int kind = 0; kind < GPUMEM_KIND_COUNT; ++kind) {
        totals_[kind].value.store(0, std::memory_order_relaxed);
        totals_[kind].peak.store(0, std::memory_order_relaxed);
        for (Shard &shard : shards_) {
            shard.kinds[kind].delta.store(0, std::memory_order_relaxed);
            shard.kinds[kind].allocs.store(0, std::memory_order_relaxed);
            shard.kinds[kind].frees.store(0, std::memory_order_relaxed);
        }
    }
    fallback_.store(0, std::memory_order_relaxed);
}

std::atomic<uint32_t> g_watchers{0};

namespace {
std::mutex g_trace_mutex;
TraceSink g_trace{nullptr, nullptr};
} // namespace

void set_trace(gpumem_trace_fn fn, void *user)
{
    std::lock_guard<std::mutex> lock(g_trace_mutex);
    g_trace = TraceSink{fn, user};
    set_watcher(watch_callback, fn != nullptr);
}

void emit_trace(int32_t op, int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated,
                gpumem_stream_t stream, gpumem_pool_t pool)
{
    TraceSink sink;
    {
        std::lock_guard<std::mutex> lock(g_trace_mutex);
        sink = g_trace;
    }
    if (!sink.fn)
        return;
    gpumem_trace_event_t event{};
    event.size = sizeof event;
    event.op = op;
    event.kind = kind;
    event.ptr = ptr;
    event.bytes = bytes;
    event.device = device;
    event.emulated = emulated ? 1 : 0;
    event.stream = stream;
    event.pool = pool;
    sink.fn(&event, sink.user);
}

namespace {

// Where the bytes of an allocation of `kind` live (GPUMEM_POOL_MEMORY_*), as pointer info says.
int32_t memory_of(int32_t kind, int32_t pool_memory)
{
    return kind == GPUMEM_KIND_STREAM_ORDERED ? pool_memory : memory_of_kind(kind);
}

} // namespace

void watch_alloc(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated, gpumem_stream_t stream,
                 gpumem_pool_t pool, int32_t pool_memory)
{
    uint32_t watchers = g_watchers.load(std::memory_order_acquire);
    if (watchers & watch_limit)
        limit::on_alloc(limit::counted_kind(kind, pool_memory), device, bytes);
    if (watchers & (watch_trace_file | watch_backtrace))
        trace::on_alloc(kind, ptr, bytes, device, memory_of(kind, pool_memory), stream, pool);
    if (watchers & watch_callback)
        emit_trace(GPUMEM_TRACE_ALLOC, kind, ptr, bytes, device, emulated, stream, pool);
}

void watch_free(int32_t kind, void *ptr, size_t bytes, int32_t device, bool emulated, gpumem_stream_t stream,
                gpumem_pool_t pool, int32_t pool_memory)
{
    uint32_t watchers = g_watchers.load(std::memory_order_acquire);
    if (watchers & watch_limit)
        limit::on_free(limit::counted_kind(kind, pool_memory), device, bytes);
    if (watchers & (watch_trace_file | watch_backtrace))
        trace::on_free(kind, ptr, bytes, device, memory_of(kind, pool_memory), stream, pool);
    if (watchers & watch_callback)
        emit_trace(GPUMEM_TRACE_FREE, kind, ptr, bytes, device, emulated, stream, pool);
}

} // namespace gpumem::detail
