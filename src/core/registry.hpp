// The registry: the single source of truth about every pointer gpumem gave
// out (except stream-ordered blocks, which the pool tracks in its own
// lock-sharded table to keep its hot path lean).  Vendors disagree about what
// may be freed with what; we never ask them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>
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

// Where an allocation lies and what it is: what range checks and pointer info
// need, without copying the whole record (plain data, so a thread can keep
// a few it found lately).
struct Extent {
    uintptr_t base = 0;
    size_t size = 0;
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    int32_t device = 0;
    uint32_t flags = 0;
    bool emulated = false;
    void *device_pointer = nullptr;
};

class Registry {
public:
    void insert(const Allocation &allocation);
    // The allocation containing ptr, as an extent; false if none.  Answers
    // without a lock when this thread found the same allocation before and
    // nothing has been removed or resized since (the copy and fill paths
    // check the same buffers over and over).
    bool find_extent(const void *ptr, Extent *out) const;
    // The same from what this thread remembers only: no lock, false when it
    // does not remember (the allocation may still exist).
    bool find_remembered(const void *ptr, Extent *out) const;
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

// The graveyard: address ranges gpumem gave out and took back lately (every
// kind but registered memory, which stays the caller's, and the blocks of the
// vendor's pools, whose free is a thin path; gpumem's own pools' chunks once
// a pool gives them back), so that a call on freed memory is told so instead
// of handing the address to the CPU or the vendor as the caller's memory.  The most recent k_kept ranges, disjoint
// (a range freed again replaces what it overlaps).  Whether an address in a
// grave still is freed memory, and not memory the OS or the vendor has handed
// to someone else since, is the pointer directory's question (core/pointers.cpp).
//
// The copy and fill paths ask may_hold() for every address no book knows (the
// caller's host memory, usually): a few relaxed loads and no lock.  It counts
// graves per granule of 2^L bytes, where 2^L is at least a grave's size (a
// page at least, L in steps of three), so that each grave touches at most two
// counters of its level and a lookup reads one counter per level in use.
class Graves {
public:
    struct Grave {
        uintptr_t base = 0;
        size_t size = 0;
        int32_t kind = GPUMEM_KIND_UNKNOWN;
        int32_t device = 0;
        uint64_t id = 0; // tells a grave from a later one at the same base (ageing out)
        bool at_finalize = false; // still live at gpumem_finalize, which released it
    };
    Graves() = default;
    Graves(const Graves &) = delete;
    Graves &operator=(const Graves &) = delete;

    void bury(uintptr_t base, size_t size, int32_t kind, int32_t device, bool at_finalize = false);
    // False when no grave holds p (may answer true when none does).
    bool may_hold(uintptr_t p) const
    {
        uint64_t levels = levels_.load(std::memory_order_acquire);
        while (levels) {
            const unsigned level = static_cast<unsigned>(__builtin_ctzll(levels));
            levels &= levels - 1;
            if (counters_[slot(level, p >> level)].load(std::memory_order_relaxed))
                return !in_known_gap(p);
        }
        return false;
    }
    // The grave holding p; false if none (and this thread remembers the gap
    // between graves that holds p, until the next burial).
    bool find(uintptr_t p, Grave *out) const;

    static constexpr size_t k_kept = 4096;

private:
    static constexpr unsigned k_min_level = 12; // a page
    static constexpr unsigned k_level_step = 3;
    static constexpr unsigned k_counter_bits = 13;
    static size_t slot(unsigned level, uintptr_t granule)
    {
        return static_cast<size_t>(((static_cast<uint64_t>(granule) << 6 | level) * 0x9E3779B97F4A7C15ull) >>
                                   (64 - k_counter_bits));
    }
    static unsigned level_of(size_t size);
    void count_locked(const Grave &grave, bool add);
    void erase_locked(std::map<uintptr_t, Grave>::iterator it);
    // Whether this thread's last find() missed in a gap that holds p, and
    // nothing was buried since: memory next to freed memory (a granule's
    // other bytes) then pays the lock once, not on every call.
    bool in_known_gap(uintptr_t p) const;

    std::atomic<uint64_t> burials_{1}; // bumped by every burial (under the lock)
    std::atomic<uint64_t> levels_{0};  // bit L: graves of level L exist
    std::atomic<uint32_t> counters_[size_t{1} << k_counter_bits] = {};
    uint32_t per_level_[64] = {};
    mutable std::shared_mutex mutex_;
    std::map<uintptr_t, Grave> by_base_;
    std::deque<std::pair<uintptr_t, uint64_t>> order_; // oldest first: (base, id)
    uint64_t next_id_ = 1;
};

} // namespace gpumem::detail
