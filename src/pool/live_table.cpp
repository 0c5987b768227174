// The live table: every pool's live blocks by base address (the hot path's
// free finds its block here), and the lookups by address that go through it.
#include <new>

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
// Lookups by address

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

void live_blocks(std::vector<Allocation> *out)
{
    g_live.for_each([&](const Block &b) { out->push_back(allocation_of(b)); });
}

} // namespace gpumem::detail::pool
