#include "core/registry.hpp"

#include <mutex>
#include <new>

namespace gpumem::detail {

void RangeValues::split(size_t at)
{
    auto it = pieces_.upper_bound(at);
    --it; // pieces_ always holds key 0
    if (it->first != at)
        pieces_.emplace(at, it->second);
}

void RangeValues::set(size_t begin, size_t end, int64_t value)
{
    split(begin);
    split(end);
    auto first = pieces_.find(begin);
    auto last = pieces_.lower_bound(end);
    first->second = value;
    pieces_.erase(std::next(first), last);
}

bool RangeValues::uniform(size_t begin, size_t end, int64_t *value) const
{
    auto it = pieces_.upper_bound(begin);
    --it;
    int64_t v = it->second;
    for (++it; it != pieces_.end() && it->first < end; ++it)
        if (it->second != v)
            return false;
    *value = v;
    return true;
}

int64_t RangeValues::all_of(size_t begin, size_t end) const
{
    auto it = pieces_.upper_bound(begin);
    --it;
    int64_t v = it->second;
    for (++it; it != pieces_.end() && it->first < end; ++it)
        v &= it->second;
    return v;
}

void Registry::insert(const Allocation &allocation)
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto [it, inserted] = by_base_.try_emplace(allocation.base, allocation);
    if (!inserted) { // a record replaced: what threads remember of it may be wrong now
        changes_.fetch_add(1, std::memory_order_release);
        it->second = allocation;
    }
}

namespace {
// A few extents this thread found lately (initial-exec: a plain %fs access).
struct ExtentMemo {
    uint64_t changes = 0; // Registry::changes_ when it was found; 0 = empty
    Extent extent;
};
constexpr unsigned k_extent_memos = 4;
__attribute__((tls_model("initial-exec"))) thread_local ExtentMemo t_extents[k_extent_memos];
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_next_extent = 0;
} // namespace

bool Registry::find_remembered(const void *ptr, Extent *out) const
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    const uint64_t now = changes_.load(std::memory_order_acquire);
    for (const ExtentMemo &m : t_extents)
        if (m.changes == now && p - m.extent.base < m.extent.size) {
            *out = m.extent;
            return true;
        }
    return false;
}

bool Registry::find_extent(const void *ptr, Extent *out) const
{
    if (find_remembered(ptr, out))
        return true;
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    uint64_t seen;
    {
        std::shared_lock<std::shared_mutex> lock(mutex_);
        seen = changes_.load(std::memory_order_relaxed); // changes only under the exclusive lock
        auto it = by_base_.upper_bound(p);
        if (it == by_base_.begin())
            return false;
        --it;
        // A zero-sized range (an empty buffer) holds only its base.
        if (p - it->second.base >= it->second.size && !(p == it->second.base))
            return false;
        const Allocation &a = it->second;
        *out = Extent{a.base, a.size, a.kind, a.device, a.flags, a.emulated, a.device_pointer};
    }
    if (out->size) {
        ExtentMemo &m = t_extents[t_next_extent++ % k_extent_memos];
        m.extent = *out;
        m.changes = seen;
    }
    return true;
}

bool Registry::find_base(const void *ptr, Allocation *out) const
{
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = by_base_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == by_base_.end())
        return false;
    *out = it->second;
    return true;
}

bool Registry::find_containing(const void *ptr, Allocation *out) const
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = by_base_.upper_bound(p);
    if (it == by_base_.begin())
        return false;
    --it;
    // A zero-sized range (an empty buffer) holds only its base.
    if (p - it->second.base >= it->second.size && !(p == it->second.base))
        return false;
    *out = it->second;
    return true;
}

bool Registry::overlaps(const void *ptr, size_t size) const
{
    uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
    uintptr_t end = begin + size;
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = by_base_.lower_bound(end);
    if (it == by_base_.begin())
        return false;
    --it;
    return it->second.base + it->second.size > begin;
}

void Registry::resize(const void *base, size_t size)
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = by_base_.find(reinterpret_cast<uintptr_t>(base));
    changes_.fetch_add(1, std::memory_order_release);
    if (it != by_base_.end())
        it->second.size = size;
}

std::map<uintptr_t, Allocation> Registry::take_all()
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    changes_.fetch_add(1, std::memory_order_release);
    std::map<uintptr_t, Allocation> all;
    all.swap(by_base_);
    return all;
}

std::vector<Allocation> Registry::all() const
{
    std::shared_lock<std::shared_mutex> lock(mutex_);
    std::vector<Allocation> out;
    out.reserve(by_base_.size());
    for (const auto &entry : by_base_)
        out.push_back(entry.second);
    return out;
}

// Levels go in steps of k_level_step: fewer levels to read per lookup, for
// coarser granules (a granule holds up to 2^k_level_step graves' sizes).
unsigned Graves::level_of(size_t size)
{
    unsigned bits = size > 1 ? 64 - static_cast<unsigned>(__builtin_clzll(static_cast<uint64_t>(size - 1))) : 0;
    if (bits < k_min_level)
        bits = k_min_level;
    const unsigned level = k_min_level + (bits - k_min_level + k_level_step - 1) / k_level_step * k_level_step;
    return level > 63 ? 63 : level;
}

// Each grave counts in the one or two granules of its level that it touches.
void Graves::count_locked(const Grave &grave, bool add)
{
    const unsigned level = level_of(grave.size);
    const uintptr_t first = grave.base >> level, last = (grave.base + (grave.size - 1)) >> level;
    for (uintptr_t g = first;; ++g) {
        std::atomic<uint32_t> &c = counters_[slot(level, g)];
        if (add)
            c.fetch_add(1, std::memory_order_relaxed);
        else
            c.fetch_sub(1, std::memory_order_relaxed);
        if (g == last)
            break;
    }
    const uint64_t bit = uint64_t{1} << level;
    if (add ? per_level_[level]++ == 0 : --per_level_[level] == 0) {
        const uint64_t levels = levels_.load(std::memory_order_relaxed);
        levels_.store(add ? levels | bit : levels & ~bit, std::memory_order_release);
    }
}

void Graves::erase_locked(std::map<uintptr_t, Grave>::iterator it)
{
    count_locked(it->second, false);
    by_base_.erase(it);
}

void Graves::bury(uintptr_t base, size_t size, int32_t kind, int32_t device, bool at_finalize)
{
    if (size == 0 || size > UINTPTR_MAX - base)
        return;
    const uintptr_t end = base + size;
    try {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        burials_.fetch_add(1, std::memory_order_release); // before any grave changes: no gap memo outlives it
        // Where this range overlaps older graves (their memory was made again
        // and freed again), it replaces them; what lies outside it stays.
        auto it = by_base_.upper_bound(base);
        if (it != by_base_.begin() && std::prev(it)->second.base + std::prev(it)->second.size > base)
            --it;
        Grave outside[3]; // at most one older grave begins before base, one ends after end
        size_t kept = 0;
        while (it != by_base_.end() && it->first < end) {
            const Grave old = it->second;
            if (old.base < base)
                outside[kept++] = Grave{old.base, base - old.base, old.kind, old.device, 0, old.at_finalize};
            if (old.base + old.size > end)
                outside[kept++] = Grave{end, old.base + old.size - end, old.kind, old.device, 0, old.at_finalize};
            erase_locked(it++);
        }
        outside[kept++] = Grave{base, size, kind, device, 0, at_finalize};
        for (size_t i = 0; i < kept; ++i) {
            Grave &grave = outside[i];
            grave.id = next_id_++;
            by_base_.emplace(grave.base, grave);
            count_locked(grave, true);
            order_.emplace_back(grave.base, grave.id);
        }
        while (order_.size() > k_kept) {
            auto oldest = by_base_.find(order_.front().first);
            if (oldest != by_base_.end() && oldest->second.id == order_.front().second)
                erase_locked(oldest);
            order_.pop_front();
        }
    } catch (const std::bad_alloc &) {
        // Out of memory: this range goes unrecorded (as it went before graves existed).
    }
}

namespace {
// The gap between graves where this thread's last lookup missed.
struct GapMemo {
    uint64_t burials = 0; // Graves::burials_ then; 0 = empty
    uintptr_t lo = 0, hi = 0;
};
__attribute__((tls_model("initial-exec"))) thread_local GapMemo t_gap;
} // namespace

bool Graves::in_known_gap(uintptr_t p) const
{
    return t_gap.burials == burials_.load(std::memory_order_acquire) && p - t_gap.lo < t_gap.hi - t_gap.lo;
}

bool Graves::find(uintptr_t p, Grave *out) const
{
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const uint64_t burials = burials_.load(std::memory_order_relaxed); // changes only under the exclusive lock
    auto next = by_base_.upper_bound(p);
    uintptr_t lo = 0;
    if (next != by_base_.begin()) {
        const Grave &prev = std::prev(next)->second;
        if (p - prev.base < prev.size) {
            *out = prev;
            return true;
        }
        lo = prev.base + prev.size;
    }
    t_gap = GapMemo{burials, lo, next == by_base_.end() ? UINTPTR_MAX : next->first};
    return false;
}

} // namespace gpumem::detail
