// The registry of pools: every pool of the process, creating and destroying
// them (one, or all at once at finalize), and forgetting them in a fork child.
#include <algorithm>
#include <cinttypes>
#include <memory>
#include <mutex>
#include <new>

#include "base/error.hpp"
#include "base/log.hpp"
#include "pool/pool_internal.hpp"
#include "pool/registry.hpp"

namespace gpumem::detail::pool {

// Leaked on purpose, so that nothing here is destroyed before a late caller.
Registry &registry()
{
    static Registry *r = new Registry;
    return *r;
}

void delete_pool(Pool *p)
{
    {
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mu);
        r.pools.erase(std::remove(r.pools.begin(), r.pools.end(), p), r.pools.end());
    }
    {
        std::lock_guard<std::mutex> lock(p->mu);
        p->release_all_chunks();
    }
    log(LogLevel::debug, "pool %" PRIu64 ": deleted", p->uid);
    delete p;
}

status_t create(std::unique_ptr<PoolUpstream> upstream, const Config &config, Pool **out)
{
    if (!upstream || !out)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "creating a pool needs an upstream and an output pointer");
    size_t granularity = upstream->granularity();
    if (granularity == 0 || (granularity & (granularity - 1)))
        return fail(GPUMEM_ERROR_BACKEND, "the pool's upstream has granularity %zu, not a power of two", granularity);
    try {
        Registry &r = registry();
        auto p = std::make_unique<Pool>();
        p->uid = r.next_uid.fetch_add(1, std::memory_order_relaxed);
        p->device = config.device;
        p->max_size = config.max_size;
        p->decay_window = std::clamp(config.decay_periods, 1u, Pool::kMaxDecayWindow);
        p->quarantine_limit = config.quarantine_bytes;
        p->memory = config.memory;
        p->imported = !upstream->can_allocate();
        p->granularity = std::max(granularity, kGranule);
        p->page = upstream->page_size();
        p->unit_pages = p->page ? upstream->unit_pages() : 0;
        if (p->page && ((p->page & (p->page - 1)) || p->page < kGranule || p->granularity % p->page))
            return fail(GPUMEM_ERROR_BACKEND, "the pool's upstream has pages of %zu bytes, not a power of two between "
                                              "256 bytes and its granularity", p->page);
        p->upstream = std::move(upstream);
        std::lock_guard<std::mutex> lock(r.mu);
        r.pools.push_back(p.get());
        g_ordering_in_use.store(true, std::memory_order_release);
        *out = p.release();
        return GPUMEM_SUCCESS;
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "out of host memory while creating a pool");
    }
}

void destroy(Pool *p)
{
    if (!p)
        return;
    Registry &r = registry();
    std::unique_lock<std::mutex> registry_lock(r.mu);
    bool last;
    {
        std::lock_guard<std::mutex> lock(p->mu);
        p->destroyed = true; // no new caches, no new allocations
        p->release_quarantined(0);
        while (!p->caches.empty())
            detach_cache(*p, p->caches.back(), false);
        p->sweep(false);
        p->release_free_chunks(0);
        int64_t live = p->live_now();
        last = live == 0;
        if (!last)
            log(LogLevel::debug, "pool %" PRIu64 ": destroyed with %" PRId64 " live allocations; its memory goes when they are freed",
                p->uid, live);
    }
    if (!last)
        return;
    registry_lock.unlock();
    delete_pool(p);
}

void destroy_all()
{
    Registry &r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mu);
    for (Pool *p : r.pools) {
        {
            // The core reports what leaked (outstanding) before calling this.
            std::lock_guard<std::mutex> lock(p->mu);
            // Blocks in caches die with the pool's chunks; only unhook the streams.
            for (StreamCache *c : p->caches) {
                std::lock_guard<std::mutex> stream_lock(c->stream->caches_mutex);
                auto &list = c->stream->caches;
                list.erase(std::remove(list.begin(), list.end(), c), list.end());
            }
            p->caches.clear();
            p->release_all_chunks();
        }
        delete p;
    }
    r.pools.clear();
    g_live.clear();
    {
        std::lock_guard<std::mutex> lock(r.cache_mu);
        for (StreamCache *c : r.all_caches)
            delete c;
        r.all_caches.clear();
        r.free_caches = nullptr;
    }
    g_memo_gen.fetch_add(1, std::memory_order_relaxed);
}

void forget_all()
{
    Registry &r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mu);
    r.pools.clear();
    g_live.clear();
    chunk_map::forget_all();
    {
        std::lock_guard<std::mutex> lock(r.cache_mu);
        r.all_caches.clear();
        r.free_caches = nullptr;
    }
    g_memo_gen.fetch_add(1, std::memory_order_relaxed);
}

} // namespace gpumem::detail::pool
