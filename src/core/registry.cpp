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
    by_base_[allocation.base] = allocation;
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
    if (it != by_base_.end())
        it->second.size = size;
}

std::map<uintptr_t, Allocation> Registry::take_all()
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
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
