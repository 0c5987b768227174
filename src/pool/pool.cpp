// The pool object: the registry of pools, creating and destroying them,
// their attributes and trimming, sharing between processes, the growth and
// release observers, and the snapshots of every pool (inspect).
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <new>

#include "base/error.hpp"
#include "base/log.hpp"
#include "pool/pool_internal.hpp"

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

namespace {

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

status_t grant_access(Pool *p, int32_t device)
{
    std::lock_guard<std::mutex> lock(p->mu); // no page is backed or unbacked meanwhile
    return p->upstream->grant_access(device);
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
            pools->push_back(PoolView{p->owner, p->device, p->reserved, uint64_t(std::max<int64_t>(p->used_now(), 0)),
                                      p->max_size, p->address_bytes, p->granularity});
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
                    if (b->state.load(std::memory_order_relaxed) != kLive) {
                        const bool pending = !safe_for_all(*p, *b, 0);
                        seg.free_blocks.push_back(FreeBlockView{size_t(b->ptr - chunk->base), b->size, pending,
                                                                pending ? b->tag_stream->handle : nullptr});
                    }
            }
            segments->push_back(std::move(seg));
        }
    }
}

} // namespace gpumem::detail::pool
