// The per-stream caches of small freed blocks and the paths through them:
// allocate and deallocate (the hot path: a cache hit takes one cache lock),
// their slow paths under the pool's lock, strict mode's quarantine, and the
// usage counters the caches keep (used, live, the used high-water mark).
#include <algorithm>
#include <cinttypes>
#include <new>

#include "base/error.hpp"
#include "pool/pool_internal.hpp"
#include "pool/registry.hpp"

namespace gpumem::detail::pool {

std::atomic<uint64_t> g_memo_gen{1};

namespace {

// Each thread remembers the caches it used last, so that the hot path finds
// its stream's cache without a lock.  A memo is only a hint: the cache is
// checked under its own lock (cache objects are recycled, never freed while
// a memo could name them).
struct CacheMemo {
    const StreamState *stream;
    const Pool *pool;
    StreamCache *cache;
    uint64_t gen;
};
// initial-exec: no __tls_get_addr call on the hot path when built as a shared library
// (the few bytes fit the static TLS space glibc keeps for dlopen).
__attribute__((tls_model("initial-exec"))) thread_local CacheMemo t_memo[4];
// CaptureScope's depth on this thread (initial-exec as t_memo: four bytes of the static TLS).
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_capture_depth = 0;

StreamCache *new_cache()
{
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.cache_mu);
    if (StreamCache *c = r.free_caches) {
        r.free_caches = c->next_free;
        c->next_free = nullptr;
        return c;
    }
    r.all_caches.reserve(r.all_caches.size() + 1);
    auto *c = new StreamCache;
    r.all_caches.push_back(c);
    return c;
}

void recycle_cache(StreamCache *c)
{
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.cache_mu);
    c->next_free = r.free_caches;
    r.free_caches = c;
}

bool cache_of(const StreamCache *c, const Pool *p, const StreamState &s)
{
    return c->pool == p && c->stream == &s && c->stream_id == s.id;
}

} // namespace

StreamCache *find_cache(Pool *p, StreamState &s)
{
    std::lock_guard<std::mutex> lock(s.caches_mutex);
    for (StreamCache *c : s.caches)
        if (cache_of(c, p, s))
            return c;
    return nullptr;
}

namespace {

// The stream's cache for the pool, locked; created on first use.  nullptr
// when the pool is destroyed or memory ran out: the caller takes the slow path.
StreamCache *lock_cache_slow(Pool *p, StreamState &s, CacheMemo &memo)
{
    try {
        StreamCache *c = find_cache(p, s);
        if (!c) {
            std::lock_guard<std::mutex> pool_lock(p->mu);
            if (p->destroyed)
                return nullptr;
            std::lock_guard<std::mutex> lock(s.caches_mutex);
            for (StreamCache *x : s.caches)
                if (cache_of(x, p, s))
                    c = x;
            if (!c) {
                c = new_cache();
                try {
                    s.caches.reserve(s.caches.size() + 1);
                    p->caches.reserve(p->caches.size() + 1);
                } catch (...) {
                    recycle_cache(c);
                    throw;
                }
                std::lock_guard<SpinLock> cache_lock(c->mu);
                c->pool = p;
                c->stream = &s;
                c->stream_id = s.id;
                c->released_epoch = 0;
                s.caches.push_back(c);
                p->caches.push_back(c);
            }
        }
        memo = CacheMemo{&s, p, c, g_memo_gen.load(std::memory_order_relaxed)};
        c->mu.lock();
        if (cache_of(c, p, s))
            return c;
        c->mu.unlock(); // detached meanwhile: the pool or the stream is going away
        return nullptr;
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
}

inline StreamCache *lock_cache(Pool *p, StreamState &s)
{
    CacheMemo &memo = t_memo[((uintptr_t(p) ^ uintptr_t(&s)) >> 6) & 3];
    if (memo.pool == p && memo.stream == &s && memo.gen == g_memo_gen.load(std::memory_order_relaxed)) {
        StreamCache *c = memo.cache;
        c->mu.lock();
        if (cache_of(c, p, s))
            return c;
        c->mu.unlock();
    }
    return lock_cache_slow(p, s, memo);
}

status_t allocate_slow(Pool &p, size_t size, size_t bytes, unsigned klass, StreamState &s, void **ptr)
{
    try {
        std::unique_lock<std::mutex> lock(p.mu);
        if (p.destroyed)
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "the pool was destroyed; allocate from a live pool");
        if (p.max_size && bytes > p.max_size)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "%zu bytes exceed the pool's max_size of %" PRIu64 " bytes; create the pool with a larger max_size",
                        size, p.max_size);
        Block *b = nullptr;
        status_t st = p.find_fit(p.requester(s), bytes, &b);
        if (st != GPUMEM_SUCCESS)
            return st;
        b->klass = uint8_t(klass);
        b->requested = size;
        b->set_birth(s);
        p.base_used += int64_t(bytes);
        p.base_live += 1;
        if (p.base_used > p.base_limit)
            p.rebalance_usage(this_thread());
        // Read under the pool's lock: once the block is in the live table
        // another thread may free it and release its chunk.
        void *out = b->ptr;
        lock.unlock();
        g_live.insert(b);
        *ptr = out;
        return GPUMEM_SUCCESS;
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "out of host memory for the pool's bookkeeping while allocating %zu bytes",
                    size);
    }
}

// A freed block into the index, in its free's stream order (Pool::mu held).
void free_in_order(Pool &p, Block *b, StreamState &s, uint64_t epoch)
{
    b->tag_stream = &s;
    b->tag_id = s.id;
    b->tag_epoch = epoch;
    p.free_block(b, 0);
}

// What every free off the hot path does: under the pool's lock the block
// leaves the pool's usage and `put` puts it where it goes; a destroyed pool
// then gives back what became free, and goes with its last block.
template <class Put>
status_t free_locked(Pool &p, Block *b, Put put)
{
    bool last = false;
    {
        std::lock_guard<std::mutex> lock(p.mu);
        p.base_used -= int64_t(b->size);
        p.base_live -= 1;
        put();
        if (p.destroyed) {
            p.release_free_chunks(0);
            last = p.live_now() == 0;
        } else {
            p.purge_if_due();
        }
    }
    if (last)
        delete_pool(&p);
    return GPUMEM_SUCCESS;
}

// `epoch`: the free's tag, 0 to take it now.
status_t free_slow(Pool &p, Block *b, StreamState &s, uint64_t epoch)
{
    return free_locked(p, b, [&] {
        if (b->imported)
            p.forget_imported(b); // the exporting process owns the memory
        else
            free_in_order(p, b, s, epoch ? epoch : s.free_tag());
    });
}

// Strict host mode: the block waits in the quarantine instead of the index.
status_t free_quarantined(Pool &p, Block *b, StreamState &s)
{
    const uint64_t epoch = s.free_tag();
    return free_locked(p, b, [&] {
        bool held = false;
        if (!p.destroyed) {
            try {
                p.quarantine.push_back(Pool::Quarantined{b, &s, s.id, epoch});
                p.quarantined_bytes += b->size;
                held = true;
            } catch (const std::bad_alloc &) {
                // No room to hold it back: freed at once.
            }
        }
        if (held)
            p.release_quarantined(p.quarantine_limit);
        else
            free_in_order(p, b, s, epoch);
    });
}

} // namespace

void detach_cache(Pool &p, StreamCache *c, bool untag)
{
    Block *blocks = nullptr;
    uint64_t released;
    {
        std::lock_guard<std::mutex> stream_lock(c->stream->caches_mutex);
        auto &list = c->stream->caches;
        list.erase(std::remove(list.begin(), list.end(), c), list.end());
        std::lock_guard<SpinLock> lock(c->mu);
        for (Block *&head : c->bins) {
            while (Block *b = head) {
                head = b->next;
                b->next = blocks;
                blocks = b;
            }
        }
        p.base_used += c->used.exchange(0, std::memory_order_relaxed);
        p.base_limit += c->limit.exchange(0, std::memory_order_relaxed);
        p.base_live += c->live.exchange(0, std::memory_order_relaxed);
        released = c->released_epoch;
        c->pool = nullptr;
        c->stream = nullptr;
        c->stream_id = 0;
        c->released_epoch = 0;
        c->owner = nullptr;
        c->ops = c->ops_seen = 0;
    }
    p.caches.erase(std::remove(p.caches.begin(), p.caches.end(), c), p.caches.end());
    for (Block *b = blocks, *next; b; b = next) {
        next = b->next;
        g_live.remove(b->ptr); // cached blocks stay in the live table until they leave their cache
        b->prev = b->next = nullptr;
        if (untag) {
            b->tag_stream = nullptr;
            b->tag_id = b->tag_epoch = 0;
        }
        p.free_block(b, released);
    }
    recycle_cache(c);
}

const void *this_thread() { return &t_memo; }

CaptureScope::CaptureScope() { ++t_capture_depth; }
CaptureScope::~CaptureScope() { --t_capture_depth; }
bool in_capture_scope() { return t_capture_depth != 0; }

// ---------------------------------------------------------------------------
// Hot path

status_t allocate(Pool *p, size_t size, StreamState &stream, void **ptr)
{
    if (p->imported)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "imported pools cannot allocate; allocate in the exporting process and export the pointer");
    if (size > kSmallMax) {
        if (size > kMaxRequest)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%zu bytes is more than any pool can hold; allocate less", size);
        return allocate_slow(*p, size, round_up(size, kGranule), kLargeClass, stream, ptr);
    }
    unsigned klass = class_of(size);
    if (StreamCache *c = lock_cache(p, stream)) {
        if (Block *b = c->bins[klass]) {
            c->bins[klass] = b->next;
            if (b->next)
                b->next->prev = nullptr;
            int64_t used = c->used.load(std::memory_order_relaxed) + int64_t(b->size);
            c->used.store(used, std::memory_order_relaxed);
            c->live.store(c->live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            c->owner = this_thread();
            ++c->ops;
            bool over = used > c->limit.load(std::memory_order_relaxed);
            c->mu.unlock();
            // Still in the live table (as CACHED): its fields first, then the
            // state that publishes them to lookups.
            b->next = nullptr;
            b->requested = size;
            b->set_birth(stream);
            *ptr = b->ptr;
            b->state.store(kLive, std::memory_order_release);
            if (over) {
                std::lock_guard<std::mutex> lock(p->mu);
                p->rebalance_usage(this_thread());
            }
            return GPUMEM_SUCCESS;
        }
        c->mu.unlock();
    }
    return allocate_slow(*p, size, class_bytes(klass), klass, stream, ptr);
}

status_t deallocate(void *ptr, StreamState &stream, Allocation *freed)
{
    // Claimed (now CACHED) in one step under the table's lock: of two frees
    // of one pointer, one wins.  A block bound for a stream cache stays in
    // the table; every other leaves it.
    Block *b = g_live.claim(ptr);
    // No message: a free of the vendor's pool memory asks here first, and a
    // miss must cost nothing (the caller explains a real mistake with the address).
    if (!b)
        return GPUMEM_ERROR_INVALID_POINTER;
    Pool *p = b->pool; // alive: b is still counted as live
    if (freed)
        fill_allocation(*b, freed);
    if (p->quarantine_limit && !b->imported) {
        g_live.remove(ptr);
        return free_quarantined(*p, b, stream);
    }
    if (b->klass == kLargeClass) {
        g_live.remove(ptr);
        return free_slow(*p, b, stream, 0);
    }
    uint64_t epoch = stream.free_tag();
    StreamCache *c = lock_cache(p, stream);
    if (!c) {
        g_live.remove(ptr);
        return free_slow(*p, b, stream, epoch);
    }
    b->tag_stream = &stream;
    b->tag_id = stream.id;
    b->tag_epoch = epoch;
    b->prev = nullptr;
    b->next = c->bins[b->klass];
    if (b->next)
        b->next->prev = b;
    c->bins[b->klass] = b;
    c->used.store(c->used.load(std::memory_order_relaxed) - int64_t(b->size), std::memory_order_relaxed);
    c->live.store(c->live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    c->owner = this_thread();
    ++c->ops;
    c->mu.unlock();
    return GPUMEM_SUCCESS;
}

// ---------------------------------------------------------------------------
// Cached and quarantined blocks back to the index

void Pool::flush_caches(const Requester *r)
{
    for (StreamCache *c : caches) {
        Block *moved = nullptr;
        {
            std::lock_guard<SpinLock> lock(c->mu);
            bool own = r && c->stream == r->stream && c->stream_id == r->id;
            for (Block *&head : c->bins) {
                for (Block *b = head, *next; b; b = next) {
                    next = b->next;
                    bool move = r ? own || safe_for_all(*this, *b, c->released_epoch) || ordered_before(*r, *b)
                                  : b->tag_epoch <= c->released_epoch || free_completed(*b, 0);
                    if (!move)
                        continue;
                    if (b->prev)
                        b->prev->next = b->next;
                    else
                        head = b->next;
                    if (b->next)
                        b->next->prev = b->prev;
                    b->prev = nullptr;
                    b->next = moved;
                    moved = b;
                }
            }
        }
        for (Block *b = moved, *next; b; b = next) {
            next = b->next;
            b->next = nullptr;
            g_live.remove(b->ptr); // cached blocks stay in the live table until they leave their cache
            free_block(b, c->released_epoch);
        }
    }
}

void Pool::release_quarantined(size_t keep_bytes)
{
    while (quarantined_bytes > keep_bytes && !quarantine.empty()) {
        Quarantined q = quarantine.front();
        quarantine.pop_front();
        Block *b = q.block;
        quarantined_bytes -= b->size;
        // Tagged with the free's own stream order; a stream gone since has
        // finished its work (its frees are safe for everyone).
        const bool stream_alive = q.stream && q.stream->id == q.stream_id;
        b->tag_stream = stream_alive ? q.stream : nullptr;
        b->tag_id = stream_alive ? q.stream_id : 0;
        b->tag_epoch = stream_alive ? q.epoch : 0;
        free_block(b, 0);
    }
}

// ---------------------------------------------------------------------------
// Usage
//
// Used bytes are counted per stream cache (no shared counter on the hot
// path) plus base_used for the slow path.  Each cache may grow up to its
// `limit`; the limits add up to at most used_high, so the total can pass the
// high-water mark only after some cache passed its limit, which takes this
// slow path: with every cache locked it sums the exact total, raises the mark,
// and moves unused headroom to where it is needed.
//
// Headroom is taken back only from caches the calling thread used last, or
// that stayed idle since the previous rebalance: taking it from a thread that
// is busy allocating would send that thread here on its next allocation, and
// threads would trade headroom under the pool lock forever.  What cannot be
// taken back raises the mark instead.  So the mark is exact when one thread
// at a time uses the pool, and may count other threads' recent peaks as
// simultaneous when several allocate at once.

void Pool::rebalance_usage(const void *thread)
{
    for (StreamCache *c : caches)
        c->mu.lock();
    int64_t total = base_used;
    for (StreamCache *c : caches)
        total += c->used.load(std::memory_order_relaxed);
    if (total > 0 && uint64_t(total) > used_high)
        used_high = uint64_t(total);
    // Every participant's limit covers its usage...
    base_limit = std::max(base_limit, base_used);
    int64_t limits = base_limit;
    for (StreamCache *c : caches) {
        int64_t limit = std::max(c->limit.load(std::memory_order_relaxed), c->used.load(std::memory_order_relaxed));
        c->limit.store(limit, std::memory_order_relaxed);
        limits += limit;
    }
    // ...and they add up to no more than the mark.
    int64_t excess = limits - int64_t(used_high);
    auto take_back = [&excess](int64_t used, int64_t limit) {
        int64_t t = std::min(excess, limit - used);
        if (t <= 0)
            return limit;
        excess -= t;
        return limit - t;
    };
    if (excess > 0)
        base_limit = take_back(base_used, base_limit);
    for (StreamCache *c : caches) {
        if (excess > 0 && (c->owner == thread || c->owner == nullptr || c->ops == c->ops_seen))
            c->limit.store(take_back(c->used.load(std::memory_order_relaxed), c->limit.load(std::memory_order_relaxed)),
                           std::memory_order_relaxed);
        c->ops_seen = c->ops;
    }
    if (excess > 0)
        used_high += uint64_t(excess);
    for (StreamCache *c : caches)
        c->mu.unlock();
}

void Pool::reset_used_high()
{
    for (StreamCache *c : caches)
        c->mu.lock();
    int64_t total = base_used;
    base_limit = base_used;
    for (StreamCache *c : caches) {
        int64_t used = c->used.load(std::memory_order_relaxed);
        total += used;
        c->limit.store(used, std::memory_order_relaxed);
    }
    used_high = total > 0 ? uint64_t(total) : 0;
    for (StreamCache *c : caches)
        c->mu.unlock();
}

int64_t Pool::used_now() const
{
    int64_t total = base_used;
    for (const StreamCache *c : caches)
        total += c->used.load(std::memory_order_relaxed);
    return std::max<int64_t>(total, 0);
}

int64_t Pool::live_now() const
{
    int64_t total = base_live;
    for (const StreamCache *c : caches)
        total += c->live.load(std::memory_order_relaxed);
    return std::max<int64_t>(total, 0);
}

} // namespace gpumem::detail::pool
