// Chunks: the pool's memory as the upstream hands it out.  Growing by a
// chunk, giving back wholly free chunks (after a paged pool's free pages),
// and the map of every pool's chunk ranges by which interior pointers are
// found.  Pool's functions here run with Pool::mu held.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <shared_mutex>

#include "base/error.hpp"
#include "base/log.hpp"
#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {

uint64_t Pool::chunk_step() const
{
    // A paged chunk is address space until its pages are backed: grow in
    // large steps (fewer chunks, fewer growths, each of which flushes the caches).
    if (page)
        return round_up(std::clamp<uint64_t>(address_bytes / 4, 64 * kMiB, 1024 * kMiB), granularity);
    // Grow by a 64th of what the pool holds, from 2 MiB to 256 MiB.  Once the
    // live set turns over, the pool grows only when no hole fits the request,
    // and every step raises RESERVED_MEM_HIGH by its full size: a sixteenth
    // cost 5-6% of overhead at a 1 GiB live set (RMM's random_allocations,
    // docs/benchmarks.md).  Smaller steps gain nothing more there and cost
    // speed: every growth flushes the stream caches and maps a chunk.
    uint64_t step = std::clamp<uint64_t>(address_bytes / 64, 2 * kMiB, 256 * kMiB);
    return round_up(step, granularity);
}

void Pool::add_chunk(void *mem, size_t size)
{
    auto chunk = std::make_unique<Chunk>();
    Block *b = arena.get();
    try {
        chunks.reserve(chunks.size() + 1);
        chunk->base = static_cast<char *>(mem);
        chunk->size = size;
        chunk->pool = this;
        chunk->first = b;
        if (page)
            chunk->backed.assign((size / page + 63) / 64, 0);
        if (unit_pages)
            chunk->unit_starts.assign((size / page + 63) / 64, 0);
        chunk_map::add(chunk.get());
    } catch (...) {
        arena.put(b);
        throw;
    }
    b->ptr = chunk->base;
    b->size = size;
    b->chunk = chunk.get();
    b->pool = this;
    b->state.store(kFree, std::memory_order_relaxed);
    chunks.push_back(chunk.release());
    address_bytes += size;
    if (!page) {
        reserved += size;
        reserved_high = std::max(reserved_high, reserved);
    }
    index.insert(b);
}

void Pool::observe_growth(int64_t delta)
{
    if (GrowthObserver observe = g_growth_observer.load(std::memory_order_acquire))
        observe(traced_owner, device, memory, delta, reserved, uint64_t(std::max<int64_t>(used_now(), 0)));
}

status_t Pool::grow(size_t bytes)
{
    const uint64_t need = round_up(bytes, granularity);
    // A paged pool's address space stays within max_size too, so its memory does.
    if (max_size && (need > max_size || address_bytes + need > max_size))
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "the pool would exceed its max_size of %" PRIu64 " bytes: it holds %" PRIu64
                    " bytes and no free block of %zu bytes; free or trim memory, or create the pool with a larger max_size",
                    max_size, address_bytes, bytes);
    uint64_t size = std::max(need, chunk_step());
    if (max_size)
        size = std::min(size, (max_size - address_bytes) / granularity * granularity);
    void *mem = nullptr;
    status_t st = upstream->allocate(size, &mem);
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY && size > need) {
        size = need;
        st = upstream->allocate(size, &mem);
    }
    if (st != GPUMEM_SUCCESS) {
        char context[96];
        std::snprintf(context, sizeof context, "the pool could not grow by %" PRIu64 " bytes", size);
        prefix_error(context);
        return st;
    }
    if (!mem || uintptr_t(mem) % kGranule) {
        if (mem)
            upstream->deallocate(mem, size);
        return fail(GPUMEM_ERROR_BACKEND, "the pool's upstream returned a chunk at %p that is not 256-byte aligned", mem);
    }
    try {
        add_chunk(mem, size);
    } catch (...) {
        upstream->deallocate(mem, size);
        throw;
    }
    log(LogLevel::debug, "pool %" PRIu64 ": new %schunk of %" PRIu64 " bytes at %p (%" PRIu64 " reserved)", uid,
        page ? "paged " : "", size, mem, reserved);
    if (!page)
        observe_growth(int64_t(size));
    return GPUMEM_SUCCESS;
}

bool Pool::chunk_releasable(const Chunk &chunk) const
{
    if (chunk.imported)
        return false;
    for (const Block *b = chunk.first; b; b = b->phys_next)
        if (b->state.load(std::memory_order_relaxed) != kFree || (b->tag_stream && !free_completed(*b, 0)))
            return false;
    return true;
}

void Pool::release_chunk(size_t i)
{
    Chunk *chunk = chunks[i];
    chunk_map::remove(chunk);
    for (Block *b = chunk->first, *next; b; b = next) {
        next = b->phys_next;
        if (b->state.load(std::memory_order_relaxed) == kFree)
            index.remove(b);
        b->reset();
        arena.put(b);
    }
    if (!chunk->imported) {
        const uint64_t held = backed_bytes(*chunk);
        if (page)
            unback_pages(*chunk, 0, chunk->size / page); // counts them off reserved
        else
            reserved -= held;
        upstream->deallocate(chunk->base, chunk->size);
        if (ReleaseObserver observe = g_release_observer.load(std::memory_order_acquire))
            observe(chunk->base, chunk->size, device, memory);
        address_bytes -= chunk->size;
        log(LogLevel::debug, "pool %" PRIu64 ": released chunk of %zu bytes at %p (%" PRIu64 " reserved)", uid,
            chunk->size, static_cast<void *>(chunk->base), reserved);
        if (held)
            observe_growth(-int64_t(held));
    }
    chunks.erase(chunks.begin() + ptrdiff_t(i));
    delete chunk;
}

void Pool::release_free_chunks(uint64_t target)
{
    if (page && reserved > target)
        unback_free(reserved - target, nullptr, 0, "on request");
    // Newest first: the oldest chunks are the ones most likely still in use.
    // A paged chunk holding no memory goes too (its address space serves nobody).
    for (size_t i = chunks.size(); i-- > 0;)
        if ((reserved > target || (page && backed_bytes(*chunks[i]) == 0)) && chunk_releasable(*chunks[i]))
            release_chunk(i);
}

void Pool::release_all_chunks()
{
    drop_marks(0);
    if (page && !chunks.empty())
        upstream->quiesce(); // frees may still be pending: no page goes back under queued work
    while (!chunks.empty())
        release_chunk(chunks.size() - 1);
}

void Pool::forget_imported(Block *b)
{
    auto it = std::find(chunks.begin(), chunks.end(), b->chunk);
    if (it != chunks.end())
        release_chunk(size_t(it - chunks.begin()));
}

// ---------------------------------------------------------------------------
// The chunk map: every pool's chunks by base address

namespace chunk_map {
namespace {
struct Map {
    std::shared_mutex mu;
    std::map<uintptr_t, Chunk *> by_base;
};
// Leaked on purpose: pools may be freed by other static destructors at exit.
Map &map()
{
    static Map *m = new Map;
    return *m;
}
} // namespace

void add(Chunk *chunk)
{
    Map &m = map();
    std::unique_lock<std::shared_mutex> lock(m.mu);
    m.by_base.emplace(uintptr_t(chunk->base), chunk);
}

void remove(Chunk *chunk)
{
    Map &m = map();
    std::unique_lock<std::shared_mutex> lock(m.mu);
    auto it = m.by_base.find(uintptr_t(chunk->base));
    if (it != m.by_base.end() && it->second == chunk)
        m.by_base.erase(it);
}

void forget_all()
{
    Map &m = map();
    std::unique_lock<std::shared_mutex> lock(m.mu);
    m.by_base.clear();
}

bool block_base(const void *ptr, void **base)
{
    Map &m = map();
    // A chunk leaves the map (under the write lock) before it is freed, so it
    // stays valid while the read lock is held.
    std::shared_lock<std::shared_mutex> lock(m.mu);
    auto it = m.by_base.upper_bound(uintptr_t(ptr));
    if (it == m.by_base.begin())
        return false;
    Chunk *chunk = std::prev(it)->second;
    const char *p = static_cast<const char *>(ptr);
    if (p >= chunk->base + chunk->size)
        return false;
    std::lock_guard<SpinLock> chunk_lock(chunk->mu);
    for (Block *b = chunk->first; b; b = b->phys_next) {
        if (p < b->ptr + b->size) {
            *base = b->ptr;
            return true;
        }
    }
    return false;
}

bool overlaps(const void *ptr, size_t size)
{
    Map &m = map();
    uintptr_t p = uintptr_t(ptr), end = size > UINTPTR_MAX - p ? UINTPTR_MAX : p + size;
    std::shared_lock<std::shared_mutex> lock(m.mu);
    auto it = m.by_base.lower_bound(end); // the first chunk starting at or after the end
    if (it == m.by_base.begin())
        return false;
    const Chunk *chunk = std::prev(it)->second; // the last one starting before the end
    return uintptr_t(chunk->base) + chunk->size > p;
}

} // namespace chunk_map

bool overlaps(const void *ptr, size_t size) { return chunk_map::overlaps(ptr, size); }

} // namespace gpumem::detail::pool
