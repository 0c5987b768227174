// Finding blocks by address: the live table (exact base, hot path) and the
// chunk map (interior pointers, lookup only).
#include <map>
#include <new>
#include <shared_mutex>

#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {

LiveTable g_live;

void LiveTable::grow(Shard &s)
{
    uint32_t old_count = s.buckets ? s.mask + 1 : 0;
    uint32_t count = old_count ? old_count * 4 : uint32_t(sizeof s.first_buckets / sizeof s.first_buckets[0]);
    Block **buckets = s.buckets ? new (std::nothrow) Block *[count]() : s.first_buckets;
    if (!buckets)
        return; // keep the longer chains rather than fail a free or an allocation
    Block **old = s.buckets;
    s.buckets = buckets;
    s.mask = count - 1;
    for (uint32_t i = 0; i < old_count; ++i) {
        for (Block *b = old[i], *next; b; b = next) {
            next = b->hash_next;
            Block **head = bucket(s, hash(b->ptr));
            b->hash_next = *head;
            *head = b;
        }
    }
    if (old && old != s.first_buckets)
        delete[] old;
}

void LiveTable::link(Shard &s, uint64_t h, Block *b)
{
    if (!s.buckets || s.count > 2 * (s.mask + 1))
        grow(s);
    Block **head = bucket(s, h);
    b->hash_next = *head;
    *head = b;
    ++s.count;
}

void LiveTable::insert(Block *b)
{
    uint64_t h = hash(b->ptr);
    Shard &s = shard(h);
    std::lock_guard<SpinLock> lock(s.mu);
    link(s, h, b);
}

// The link pointing at the block that starts at ptr, or nullptr (shard locked).
Block **LiveTable::link_to(Shard &s, uint64_t h, const void *ptr)
{
    if (!s.buckets)
        return nullptr;
    for (Block **link = bucket(s, h); *link; link = &(*link)->hash_next)
        if ((*link)->ptr == ptr)
            return link;
    return nullptr;
}

bool LiveTable::insert_unique(Block *b)
{
    uint64_t h = hash(b->ptr);
    Shard &s = shard(h);
    std::lock_guard<SpinLock> lock(s.mu);
    if (link_to(s, h, b->ptr))
        return false;
    link(s, h, b);
    return true;
}

Block *LiveTable::remove(const void *ptr)
{
    uint64_t h = hash(ptr);
    Shard &s = shard(h);
    std::lock_guard<SpinLock> lock(s.mu);
    Block **link = link_to(s, h, ptr);
    if (!link)
        return nullptr;
    Block *b = *link;
    *link = b->hash_next;
    b->hash_next = nullptr;
    --s.count;
    return b;
}

Block *LiveTable::claim(const void *ptr)
{
    uint64_t h = hash(ptr);
    Shard &s = shard(h);
    std::lock_guard<SpinLock> lock(s.mu);
    Block **link = link_to(s, h, ptr);
    if (!link || (*link)->state.load(std::memory_order_relaxed) != kLive)
        return nullptr; // not a block's base, or cached: freed already
    (*link)->state.store(kCached, std::memory_order_relaxed);
    return *link;
}

bool LiveTable::find(const void *ptr, Allocation *out)
{
    uint64_t h = hash(ptr);
    Shard &s = shard(h);
    std::lock_guard<SpinLock> lock(s.mu);
    // A cached block stays in the table; its fields are rewritten (without
    // this lock) before it is LIVE again, published by the state.
    Block **link = link_to(s, h, ptr);
    if (!link || (*link)->state.load(std::memory_order_acquire) != kLive)
        return false;
    // The pool outlives its live blocks, so its fields are safe to read here.
    *out = allocation_of(**link);
    return true;
}

void LiveTable::clear()
{
    for (Shard &s : shards_) {
        std::lock_guard<SpinLock> lock(s.mu);
        if (s.buckets && s.buckets != s.first_buckets)
            delete[] s.buckets;
        for (Block *&b : s.first_buckets)
            b = nullptr;
        s.buckets = nullptr;
        s.mask = 0;
        s.count = 0;
    }
}

// ---------------------------------------------------------------------------

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
} // namespace gpumem::detail::pool
