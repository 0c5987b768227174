// The registry: the single source of truth about every pointer gpumem gave
// out (except stream-ordered blocks, which the pool tracks in its own
// lock-sharded table to keep its hot path lean).  Vendors disagree about what
// may be freed with what; we never ask them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/clock.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

// Piecewise-constant values over a byte range [0, size): what advice and
// prefetches set, so that range queries answer what was last set.
class RangeValues {
public:
    explicit RangeValues(int64_t initial = 0) { pieces_[0] = initial; }
    void set(size_t begin, size_t end, int64_t value);
    // Apply `fn` to every piece's value over [begin, end).
    template <class Fn>
    void update(size_t begin, size_t end, Fn fn)
    {
        split(begin);
        split(end);
        for (auto it = pieces_.find(begin); it != pieces_.end() && it->first < end; ++it)
            it->second = fn(it->second);
    }
    // True with *value when [begin, end) holds one value throughout.
    bool uniform(size_t begin, size_t end, int64_t *value) const;
    // Bitwise AND of the values over [begin, end).
    int64_t all_of(size_t begin, size_t end) const;

private:
    void split(size_t at);
    std::map<size_t, int64_t> pieces_;
};

struct ManagedAttributes {
    std::mutex mutex; // advice and queries from several threads
    RangeValues read_mostly{0};
    RangeValues preferred_location{GPUMEM_LOCATION_INVALID};
    RangeValues accessed_by{0}; // bit 0: host, bit d+1: device d
    RangeValues last_prefetch{GPUMEM_LOCATION_INVALID};
    uint32_t attach_flags = GPUMEM_ATTACH_GLOBAL;
};

struct Allocation {
    uintptr_t base = 0;
    size_t size = 0;
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    int32_t device = 0;
    uint32_t flags = 0;
    bool emulated = false;
    bool locked = false;             // registered host memory: really page-locked
    void *device_pointer = nullptr;  // mapped host memory: address valid on the device
    uint64_t owner = 0;              // buffer handle for BUFFER ranges
    Birth birth;                     // when and by which thread (set when first recorded)
    std::shared_ptr<ManagedAttributes> managed; // MANAGED only
};

// Where an allocation lies and what it is: what range checks need, without
// copying the whole record.
struct Extent {
    uintptr_t base = 0;
    size_t size = 0;
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    int32_t device = 0;
};

class Registry {
public:
    void insert(const Allocation &allocation);
    // The allocation containing ptr, as an extent; false if none.  Answers
    // without a lock when this thread found the same allocation before and
    // nothing has been removed or resized since (the copy and fill paths
    // check the same buffers over and over).
    bool find_extent(const void *ptr, Extent *out) const;
    // The allocation starting exactly at ptr (copied out); false if none.
    bool find_base(const void *ptr, Allocation *out) const;
    // The allocation containing ptr; false if none.
    bool find_containing(const void *ptr, Allocation *out) const;
    // True when [ptr, ptr+size) overlaps any allocation.
    bool overlaps(const void *ptr, size_t size) const;
    // Remove the allocation starting at ptr if its kind is accepted by `accept`;
    // returns it.  Atomic, so two threads never free one pointer twice.
    template <class Accept>
    bool take(const void *ptr, Accept accept, Allocation *out)
    {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        auto it = by_base_.find(reinterpret_cast<uintptr_t>(ptr));
        if (it == by_base_.end() || !accept(it->second))
            return false;
        changes_.fetch_add(1, std::memory_order_release); // before the record goes: no extent outlives it
        *out = std::move(it->second);
        by_base_.erase(it);
        return true;
    }
    // Change the recorded size of the allocation at base (buffers).
    void resize(const void *base, size_t size);
    std::map<uintptr_t, Allocation> take_all();
    // A copy of every allocation, in address order (snapshots, reports).
    std::vector<Allocation> all() const;

    // Counts removals and resizes (process-wide, so that a thread's
    // remembered extents from an earlier runtime never match).
    static inline std::atomic<uint64_t> changes_{1};

private:
    mutable std::shared_mutex mutex_;
    std::map<uintptr_t, Allocation> by_base_;
};

} // namespace gpumem::detail
