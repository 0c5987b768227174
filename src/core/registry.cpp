#include "core/registry.hpp"

#include <mutex>

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

bool Registry::find_extent(const void *ptr, Extent *out) const
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    const uint64_t now = changes_.load(std::memory_order_acquire);
    for (const ExtentMemo &m : t_extents)
        if (m.changes == now && p - m.extent.base < m.extent.size) {
            *out = m.extent;
            return true;
        }
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
        *out = Extent{it->second.base, it->second.size, it->second.kind, it->second.device};
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

} // namespace gpumem::detail
