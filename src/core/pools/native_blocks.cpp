#include "core/pools/native_blocks.hpp"

#include <new>

namespace gpumem::detail {

NativeBlocks::~NativeBlocks()
{
    for (Shard &s : shards_)
        delete[] s.slots;
}

void NativeBlocks::place(Shard &s, uintptr_t key, const NativeBlock &block)
{
    size_t mask = s.capacity - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
        if (s.slots[i].key == 0) {
            s.slots[i].key = key;
            s.slots[i].block = block;
            return;
        }
    }
}

void NativeBlocks::grow(Shard &s)
{
    size_t capacity = s.capacity ? s.capacity * 2 : 64;
    Entry *old = s.slots;
    size_t old_capacity = s.capacity;
    s.slots = new Entry[capacity];
    s.capacity = capacity;
    for (size_t i = 0; i < old_capacity; ++i)
        if (old[i].key)
            place(s, old[i].key, old[i].block);
    delete[] old;
}

void NativeBlocks::insert(const void *ptr, const NativeBlock &block)
{
    uintptr_t key = reinterpret_cast<uintptr_t>(ptr);
    Shard &s = shard_of(hash(key));
    std::lock_guard<SpinLock> lock(s.mutex);
    // Keep the table at most half full so probes stay short.
    if ((s.count + 1) * 2 > s.capacity)
        grow(s);
    place(s, key, block);
    ++s.count;
    const uintptr_t end = key + (block.size ? block.size : 1);
    for (uintptr_t lo = lo_.load(std::memory_order_relaxed); key < lo;)
        if (lo_.compare_exchange_weak(lo, key, std::memory_order_relaxed))
            break;
    for (uintptr_t hi = hi_.load(std::memory_order_relaxed); end > hi;)
        if (hi_.compare_exchange_weak(hi, end, std::memory_order_relaxed))
            break;
}

bool NativeBlocks::find(const void *ptr, NativeBlock *out) const
{
    uintptr_t key = reinterpret_cast<uintptr_t>(ptr);
    if (!key)
        return false;
    const Shard &s = shard_of(hash(key));
    std::lock_guard<SpinLock> lock(s.mutex);
    if (!s.capacity)
        return false;
    size_t mask = s.capacity - 1;
    for (size_t i = hash(key) & mask; s.slots[i].key; i = (i + 1) & mask)
        if (s.slots[i].key == key) {
            *out = s.slots[i].block;
            return true;
        }
    return false;
}

bool NativeBlocks::take(const void *ptr, NativeBlock *out)
{
    uintptr_t key = reinterpret_cast<uintptr_t>(ptr);
    if (!key)
        return false;
    Shard &s = shard_of(hash(key));
    std::lock_guard<SpinLock> lock(s.mutex);
    if (!s.capacity)
        return false;
    size_t mask = s.capacity - 1;
    size_t i = hash(key) & mask;
    for (; s.slots[i].key != key; i = (i + 1) & mask)
        if (s.slots[i].key == 0)
            return false;
    *out = s.slots[i].block;
    // Backward-shift deletion: pull later entries of the probe run into the hole.
    size_t hole = i;
    for (size_t j = (i + 1) & mask; s.slots[j].key; j = (j + 1) & mask) {
        size_t home = hash(s.slots[j].key) & mask;
        // Move j into the hole unless its home lies cyclically in (hole, j].
        bool home_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!home_between) {
            s.slots[hole] = s.slots[j];
            hole = j;
        }
    }
    s.slots[hole].key = 0;
    --s.count;
    return true;
}

bool NativeBlocks::find_containing(const void *ptr, void **base, NativeBlock *out) const
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    for (const Shard &s : shards_) {
        std::lock_guard<SpinLock> lock(s.mutex);
        for (size_t i = 0; i < s.capacity; ++i) {
            const Entry &e = s.slots[i];
            if (e.key && p >= e.key && (p - e.key < e.block.size || p == e.key)) {
                *base = reinterpret_cast<void *>(e.key);
                *out = e.block;
                return true;
            }
        }
    }
    return false;
}

std::vector<std::pair<void *, NativeBlock>> NativeBlocks::take_all()
{
    std::vector<std::pair<void *, NativeBlock>> all;
    for (Shard &s : shards_) {
        std::lock_guard<SpinLock> lock(s.mutex);
        for (size_t i = 0; i < s.capacity; ++i)
            if (s.slots[i].key)
                all.emplace_back(reinterpret_cast<void *>(s.slots[i].key), s.slots[i].block);
        delete[] s.slots;
        s.slots = nullptr;
        s.capacity = s.count = 0;
    }
    return all;
}

std::vector<std::pair<void *, NativeBlock>> NativeBlocks::all() const
{
    std::vector<std::pair<void *, NativeBlock>> out;
    for (const Shard &s : shards_) {
        std::lock_guard<SpinLock> lock(s.mutex);
        for (size_t i = 0; i < s.capacity; ++i)
            if (s.slots[i].key)
                out.emplace_back(reinterpret_cast<void *>(s.slots[i].key), s.slots[i].block);
    }
    return out;
}

} // namespace gpumem::detail
