// The pool allocator's entry points (pool.hpp): the registry of pools, the
// per-stream caches and the hot path, attributes, sharing, and what the core
// tells us about streams and events.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <new>

#include "base/error.hpp"
#include "base/log.hpp"
#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {
namespace {

struct Registry {
    std::mutex mu; // the pool list, and every walk over the pools
    std::vector<Pool *> pools;
    std::atomic<uint64_t> next_uid{1};

    std::mutex cache_mu; // the recycle list of stream caches
    StreamCache *free_caches = nullptr;
    std::vector<StreamCache *> all_caches; // freed only by destroy_all
};

// Leaked on purpose, so that nothing here is destroyed before a late caller.
Registry &registry()
{
    static Registry *r = new Registry;
    return *r;
}

// Bumped by destroy_all: memos made before then are stale.
std::atomic<uint64_t> g_memo_gen{1};

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

StreamCache *find_cache(Pool *p, StreamState &s)
{
    std::lock_guard<std::mutex> lock(s.caches_mutex);
    for (StreamCache *c : s.caches)
        if (cache_of(c, p, s))
            return c;
    return nullptr;
}

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

// Unhook a cache from its stream and its pool (Pool::mu held): its usage
// folds into the pool's base counters and its blocks go back to the index.
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

// Last step of a destroyed pool, once nothing refers to it any more.
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

// Sharing: what gpumem_pool_export_pointer writes into the 64 opaque bytes.
struct ExportedPointer {
    uint32_t magic;
    uint32_t version;
    uint64_t offset;  // in the exporting pool's shared memory
    uint64_t pool_id; // identity of that memory, checked by the importer
    uint64_t size;    // bytes the exporter asked for
    unsigned char unused[32];
};
static_assert(sizeof(ExportedPointer) == sizeof(gpumem_pool_ptr_export_data_t), "export data is 64 bytes");
constexpr uint32_t kExportMagic = 0x58504d47; // "GMPX"
constexpr uint32_t kExportVersion = 1;

const char *attribute_name(int32_t attr)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return "GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES";
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return "GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC";
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return "GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES";
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: return "GPUMEM_POOL_ATTR_RELEASE_THRESHOLD";
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: return "GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT";
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: return "GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH";
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: return "GPUMEM_POOL_ATTR_USED_MEM_CURRENT";
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH: return "GPUMEM_POOL_ATTR_USED_MEM_HIGH";
    default: return nullptr;
    }
}

int32_t *reuse_flag(Pool &p, int32_t attr)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return &p.follow_event_dependencies;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return &p.allow_opportunistic;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return &p.allow_internal_dependencies;
    default: return nullptr;
    }
}

} // namespace

const void *this_thread() { return &t_memo; }

// ---------------------------------------------------------------------------
// Pools

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

bool overlaps(const void *ptr, size_t size) { return chunk_map::overlaps(ptr, size); }

bool lookup_base(const void *ptr, Allocation *out) { return g_live.find(ptr, out); }

bool lookup(const void *ptr, Allocation *out)
{
    if (g_live.find(ptr, out))
        return true;
    void *base = nullptr;
    if (!chunk_map::block_base(ptr, &base) || base == ptr || !g_live.find(base, out))
        return false;
    // Inside the block, but maybe past what was asked for (the rounding).
    return static_cast<const char *>(ptr) < static_cast<const char *>(out->base) + out->size;
}

// ---------------------------------------------------------------------------
// Attributes and maintenance

status_t set_attribute(Pool *p, int32_t attr, const void *value)
{
    const char *name = attribute_name(attr);
    if (!name)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
    if (!value)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the value for %s is NULL", name);
    std::lock_guard<std::mutex> lock(p->mu);
    if (int32_t *flag = reuse_flag(*p, attr)) {
        int32_t v;
        std::memcpy(&v, value, sizeof v);
        if (v != 0 && v != 1)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s takes an int32_t 0 or 1, not %d", name, v);
        *flag = v;
        if (attr == GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
            p->swept_gen = 0; // completed frees may be free for all now
        return GPUMEM_SUCCESS;
    }
    uint64_t v;
    std::memcpy(&v, value, sizeof v);
    switch (attr) {
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD:
        p->release_threshold = v; // applies at the next synchronisation, as in CUDA
        return GPUMEM_SUCCESS;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH:
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH:
        if (v != 0)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s can only be set to 0 (reset to the current value), not %" PRIu64,
                        name, v);
        if (attr == GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH)
            p->reserved_high = p->reserved;
        else
            p->reset_used_high();
        return GPUMEM_SUCCESS;
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%s is read-only", name);
    }
}

status_t get_attribute(Pool *p, int32_t attr, void *value)
{
    const char *name = attribute_name(attr);
    if (!name)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
    if (!value)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the output for %s is NULL", name);
    std::lock_guard<std::mutex> lock(p->mu);
    if (int32_t *flag = reuse_flag(*p, attr)) {
        std::memcpy(value, flag, sizeof *flag);
        return GPUMEM_SUCCESS;
    }
    uint64_t v = 0;
    switch (attr) {
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: v = p->release_threshold; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: v = uint64_t(p->used_now()); break;
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH: v = p->used_high; break;
    }
    std::memcpy(value, &v, sizeof v);
    return GPUMEM_SUCCESS;
}

status_t trim_to(Pool *p, size_t min_bytes_to_keep)
{
    std::lock_guard<std::mutex> lock(p->mu);
    p->release_quarantined(0); // the program asks for memory back: it wins over the quarantine
    p->flush_caches(nullptr);
    p->sweep(false);
    p->release_free_chunks(min_bytes_to_keep);
    p->reset_budget();
    return GPUMEM_SUCCESS;
}

size_t outstanding(Pool *p)
{
    std::lock_guard<std::mutex> lock(p->mu);
    return size_t(p->live_now());
}

int32_t device_of(Pool *p) { return p->device; }
void set_owner(Pool *p, uint64_t owner)
{
    p->owner = owner;
    if (owner)
        p->traced_owner = owner;
}
bool is_imported(Pool *p) { return p->imported; }

// ---------------------------------------------------------------------------
// Sharing between processes.  As in CUDA, an exported pointer is only valid
// while the exporting process keeps the allocation alive: the pool does not
// hold it for the importer.

status_t export_fd(Pool *p, int *fd)
{
    if (!p->upstream->shareable())
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "this pool's memory cannot be shared; create the pool with handle_types = GPUMEM_HANDLE_POSIX_FD");
    return p->upstream->export_fd(fd);
}

status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data)
{
    Allocation block;
    if (!g_live.find(ptr, &block))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is not the start of a live pool allocation; export the pointer the allocation returned", ptr);
    Pool *p = block.pool;
    if (!p->upstream->shareable())
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the pool of %p cannot share memory; create it with handle_types = GPUMEM_HANDLE_POSIX_FD", ptr);
    ExportedPointer e{};
    e.magic = kExportMagic;
    e.version = kExportVersion;
    e.size = block.size;
    status_t st = p->upstream->offset_of(ptr, &e.offset, &e.pool_id);
    if (st != GPUMEM_SUCCESS)
        return st;
    std::memcpy(data, &e, sizeof e);
    return GPUMEM_SUCCESS;
}

status_t import_pointer(Pool *p, const gpumem_pool_ptr_export_data_t *data, void **ptr)
{
    if (!p->imported)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "pointers can only be imported into a pool made by gpumem_pool_import_from_shareable_handle");
    ExportedPointer e;
    std::memcpy(&e, data, sizeof e);
    if (e.magic != kExportMagic || e.version != kExportVersion)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the export data was not written by gpumem_pool_export_pointer of this gpumem version");
    if (e.size == 0 || e.size > kMaxRequest)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the export data names an allocation of %" PRIu64 " bytes", e.size);
    void *addr = nullptr;
    status_t st = p->upstream->address_of(e.offset, e.size, e.pool_id, &addr);
    if (st != GPUMEM_SUCCESS)
        return st;
    try {
        std::lock_guard<std::mutex> lock(p->mu);
        if (p->destroyed)
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "the pool was destroyed");
        auto chunk = std::make_unique<Chunk>();
        Block *b = p->arena.get();
        b->ptr = static_cast<char *>(addr);
        b->size = round_up(e.size, kGranule);
        b->requested = e.size;
        b->chunk = chunk.get();
        b->pool = p;
        b->imported = true;
        b->born_thread = current_thread_id();
        b->born_ns = coarse_now_ns();
        b->state.store(kLive, std::memory_order_relaxed);
        chunk->base = b->ptr;
        chunk->size = b->size;
        chunk->pool = p;
        chunk->first = b;
        chunk->imported = true;
        try {
            p->chunks.reserve(p->chunks.size() + 1);
            chunk_map::add(chunk.get());
        } catch (...) {
            b->reset();
            p->arena.put(b);
            throw;
        }
        if (!g_live.insert_unique(b)) {
            chunk_map::remove(chunk.get());
            b->reset();
            p->arena.put(b);
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is already imported; free it before importing it again", addr);
        }
        p->chunks.push_back(chunk.release());
        p->base_used += int64_t(b->size);
        p->base_live += 1;
        if (p->base_used > p->base_limit)
            p->rebalance_usage(this_thread());
        *ptr = addr;
        return GPUMEM_SUCCESS;
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "out of host memory while importing a pointer");
    }
}

// ---------------------------------------------------------------------------
// Streams and events

void on_completed(StreamState &stream, uint64_t epoch)
{
    uint64_t seen = stream.completed_epoch.load(std::memory_order_relaxed);
    while (seen < epoch)
        if (stream.completed_epoch.compare_exchange_weak(seen, epoch, std::memory_order_acq_rel)) {
            g_completion_gen.fetch_add(1, std::memory_order_acq_rel);
            break;
        }
}

void apply_release_thresholds(int32_t device)
{
    Registry &r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mu);
    for (Pool *p : r.pools) {
        if (p->imported || (device >= 0 && p->device != device))
            continue;
        std::lock_guard<std::mutex> lock(p->mu);
        // What completed before this synchronisation is free for every stream now.
        for (StreamCache *c : p->caches) {
            std::lock_guard<SpinLock> cache_lock(c->mu);
            c->released_epoch = completed_epoch(*c->stream);
        }
        p->sweep(true);
        if (p->reserved > p->release_threshold) {
            // The contract's release wins over strict mode's quarantine:
            // memory given back is not reused, which is what the quarantine guards.
            p->release_quarantined(0);
            p->flush_caches(nullptr);
            p->release_free_chunks(p->release_threshold);
            p->reset_budget();
        }
    }
}

EventMark mark(StreamState &stream)
{
    return EventMark{&stream, stream.id, stream.close_epoch()};
}

void add_dependency(StreamState &waiter, const EventMark &mark)
{
    if (!mark.stream || mark.stream_id == waiter.id)
        return;
    std::lock_guard<std::mutex> lock(waiter.deps_mutex);
    for (auto &dep : waiter.deps) {
        if (dep.first == mark.stream_id) {
            dep.second = std::max(dep.second, mark.epoch);
            return;
        }
    }
    try {
        waiter.deps.emplace_back(mark.stream_id, mark.epoch);
    } catch (const std::bad_alloc &) {
        // Forgetting an ordering only means less reuse.
    }
}

void on_stream_destroyed(StreamState &stream)
{
    {
        Registry &r = registry();
        std::lock_guard<std::mutex> registry_lock(r.mu);
        for (Pool *p : r.pools) {
            std::lock_guard<std::mutex> lock(p->mu);
            // The stream's work has finished: its frees are safe for everyone.
            for (Pool::Quarantined &q : p->quarantine)
                if (q.stream == &stream && q.stream_id == stream.id)
                    q.stream = nullptr;
            if (StreamCache *c = find_cache(p, stream))
                detach_cache(*p, c, true);
            p->untag_stream(stream.id);
            p->drop_marks(stream.id);
        }
    }
    {
        std::lock_guard<std::mutex> lock(stream.caches_mutex);
        stream.caches.clear();
    }
    {
        std::lock_guard<std::mutex> lock(stream.deps_mutex);
        stream.deps.clear();
    }
    stream.free_epoch.store(0, std::memory_order_release);
    stream.completed_epoch.store(0, std::memory_order_release);
    g_completion_gen.fetch_add(1, std::memory_order_acq_rel);
}

// ---------------------------------------------------------------------------
// Introspection (snapshots, out-of-memory reports) and the growth and release observers

std::atomic<GrowthObserver> g_growth_observer{nullptr};

void set_growth_observer(GrowthObserver observer) { g_growth_observer.store(observer, std::memory_order_release); }

std::atomic<ReleaseObserver> g_release_observer{nullptr};

void set_release_observer(ReleaseObserver observer) { g_release_observer.store(observer, std::memory_order_release); }

void inspect(std::vector<PoolView> *pools, std::vector<SegmentView> *segments)
{
    Registry &r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mu);
    for (Pool *p : r.pools) {
        std::lock_guard<std::mutex> lock(p->mu);
        if (pools)
            pools->push_back(PoolView{p->owner, p->device, p->reserved, uint64_t(std::max<int64_t>(p->used_now(), 0))});
        if (!segments)
            continue;
        for (const Chunk *chunk : p->chunks) {
            if (chunk->imported)
                continue; // another process's block, not memory this pool holds
            SegmentView seg;
            seg.owner = p->owner;
            seg.device = p->device;
            seg.base = chunk->base;
            seg.bytes = chunk->size;
            seg.backed = p->backed_bytes(*chunk);
            {
                std::lock_guard<SpinLock> chunk_lock(const_cast<Chunk *>(chunk)->mu);
                for (const Block *b = chunk->first; b; b = b->phys_next)
                    if (b->state.load(std::memory_order_relaxed) != kLive)
                        seg.free_blocks.push_back(FreeBlockView{size_t(b->ptr - chunk->base), b->size});
            }
            segments->push_back(std::move(seg));
        }
    }
}

void live_blocks(std::vector<Allocation> *out)
{
    g_live.for_each([&](const Block &b) { out->push_back(allocation_of(b)); });
}

} // namespace gpumem::detail::pool
