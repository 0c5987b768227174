// Handle tables: every stream, event, pool, buffer and memory handle gpumem
// gives out is an encoded (index, generation, type) value, checked here
// before anything is dereferenced.  A destroyed handle, one of another type
// or a made-up value is simply "not live": never a crash.
//
// Objects live in segments that are never freed (they are recycled for new
// handles), so even a racing use of a just-destroyed handle touches valid
// memory.  Lookups take no lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

namespace gpumem::detail {

enum class HandleType : uint32_t { stream = 1, event = 2, pool = 3, buffer = 4, memory = 5 };

template <class T, HandleType Type>
class HandleTable {
public:
    HandleTable() = default;
    HandleTable(const HandleTable &) = delete;
    HandleTable &operator=(const HandleTable &) = delete;
    ~HandleTable()
    {
        for (auto &segment : segments_)
            delete[] segment.load(std::memory_order_relaxed);
    }

    // A fresh slot that nobody else sees yet: get() and live_handles() ignore
    // it until publish(), so the caller writes the object first and other
    // threads never read a half-written one.  Give it back with abandon()
    // (a Reservation does either for you).
    // Throws std::bad_alloc when the table is full or memory runs out.
    T *reserve(uint64_t *handle)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        uint32_t index;
        if (!free_.empty()) {
            index = free_.back();
            free_.pop_back();
        } else {
            if (next_ >= k_segment_size * k_max_segments)
                throw std::bad_alloc();
            index = next_;
            Slot *segment = segments_[index / k_segment_size].load(std::memory_order_acquire);
            if (!segment) {
                segment = new Slot[k_segment_size];
                segments_[index / k_segment_size].store(segment, std::memory_order_release);
            }
            ++next_;
        }
        // Live generations are odd; the slot keeps its even (dead) one until publish().
        *handle = encode(index, slot_at(index).generation.load(std::memory_order_relaxed) + 1);
        return &slot_at(index).object;
    }
    // Make a reserved slot live: the release store orders every write the
    // caller made to the object before any get() that sees the handle.
    void publish(uint64_t handle)
    {
        slot_at(index_of(handle)).generation.store(static_cast<uint32_t>(handle >> 32), std::memory_order_release);
    }
    // A reserved slot that was never published goes back to the free list.
    void abandon(uint64_t handle) { recycle(handle); }

    // reserve() + publish() or abandon(), whichever comes first; abandons when
    // it goes out of scope unpublished (an error return, an exception).
    class Reservation {
    public:
        explicit Reservation(HandleTable &table) : table_(table), object_(table.reserve(&handle_)) {}
        Reservation(const Reservation &) = delete;
        Reservation &operator=(const Reservation &) = delete;
        ~Reservation()
        {
            if (!done_)
                table_.abandon(handle_);
        }
        T *operator->() const { return object_; }
        T &object() const { return *object_; }
        uint64_t handle() const { return handle_; }
        // Returns the handle, now live.
        uint64_t publish()
        {
            table_.publish(handle_);
            done_ = true;
            return handle_;
        }

    private:
        HandleTable &table_;
        uint64_t handle_ = 0;
        T *object_;
        bool done_ = false;
    };

    // The live object of `handle`, or nullptr.
    T *get(uint64_t handle) const
    {
        if ((handle & k_type_mask) != static_cast<uint64_t>(Type))
            return nullptr;
        uint64_t index = (handle >> k_type_bits) & 0x0fffffffu;
        uint32_t generation = static_cast<uint32_t>(handle >> 32);
        if (!(generation & 1u) || index >= static_cast<uint64_t>(k_segment_size) * k_max_segments)
            return nullptr;
        Slot *segment = segments_[index / k_segment_size].load(std::memory_order_acquire);
        if (!segment)
            return nullptr;
        Slot &slot = segment[index % k_segment_size];
        if (slot.generation.load(std::memory_order_acquire) != generation)
            return nullptr;
        return &slot.object;
    }

    // Kill `handle` (false when it was not live, or another thread won).
    // The slot is not reused until recycle(): the caller may still clean up
    // the object in between without racing a new owner.
    bool retire(uint64_t handle)
    {
        if (!get(handle))
            return false;
        uint32_t generation = static_cast<uint32_t>(handle >> 32);
        Slot &slot = slot_at(index_of(handle));
        return slot.generation.compare_exchange_strong(generation, generation + 1, std::memory_order_acq_rel);
    }
    void recycle(uint64_t handle)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(index_of(handle));
    }
    // retire + recycle, for objects with nothing to clean up.
    bool destroy(uint64_t handle)
    {
        if (!retire(handle))
            return false;
        recycle(handle);
        return true;
    }

    // Every live handle (for finalize and device-wide walks).
    std::vector<uint64_t> live_handles() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<uint64_t> out;
        for (uint32_t index = 0; index < next_; ++index) {
            uint32_t generation = slot_at(index).generation.load(std::memory_order_acquire);
            if (generation & 1u)
                out.push_back(encode(index, generation));
        }
        return out;
    }

private:
    static constexpr uint32_t k_type_bits = 4;
    static constexpr uint64_t k_type_mask = (1u << k_type_bits) - 1;
    static constexpr uint32_t k_segment_size = 1024;
    static constexpr uint32_t k_max_segments = 4096;

    struct Slot {
        std::atomic<uint32_t> generation{0};
        T object;
    };

    static uint32_t index_of(uint64_t handle) { return static_cast<uint32_t>((handle >> k_type_bits) & 0x0fffffffu); }

    static uint64_t encode(uint32_t index, uint32_t generation)
    {
        return (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(index) << k_type_bits) |
               static_cast<uint64_t>(Type);
    }

    Slot &slot_at(uint32_t index) const
    {
        return segments_[index / k_segment_size].load(std::memory_order_acquire)[index % k_segment_size];
    }

    mutable std::mutex mutex_;
    std::atomic<Slot *> segments_[k_max_segments] = {};
    std::vector<uint32_t> free_;
    uint32_t next_ = 0;
};

template <class H>
inline uint64_t handle_bits(H handle) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)); }
template <class H>
inline H handle_from_bits(uint64_t bits) { return reinterpret_cast<H>(static_cast<uintptr_t>(bits)); }

} // namespace gpumem::detail
