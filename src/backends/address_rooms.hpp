// Room after VMM reservations, for the seed's grow-in-place pattern: a
// program reserves a range, maps it, and later reserves again with the end
// of the range as the hint.  The vendors honour a hint only while that
// address is free, and any allocation in between may take it; so gpumem
// reserves more than asked and keeps the rest free for such a hint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace gpumem::detail {

// Address space kept after a reservation: twice its size (two doublings of a
// growing range), at least 1 GiB, at most 1 TiB.  Only address space: no
// memory is behind it.
size_t address_room_for(size_t size);

// The vendor reservations (blocks) a GPU backend made with room, and which
// parts of them are handed out.  A vendor frees only whole reservations, so a
// block goes back when nothing of it is handed out any more.  Thread-safe.
class AddressRooms {
public:
    // [hint, hint + size) carved out of a block's free part; false when no
    // block holds all of it free.
    bool take(uintptr_t hint, size_t size);
    // A new vendor reservation [base, base + total) of which [base, base + used) is handed out.
    void add_block(uintptr_t base, size_t total, size_t used);
    enum class Release {
        not_ours,  // [ptr, ptr + size) is in no block: free it at the vendor as it is
        kept,      // given back to its block, which other reservations still use
        block_free // the whole block is free now: *block_base, *block_size go back to the vendor
    };
    Release release(uintptr_t ptr, size_t size, uintptr_t *block_base, size_t *block_size);

private:
    struct Block {
        size_t size = 0;
        std::map<uintptr_t, size_t> free; // start -> length, never touching each other
    };
    std::mutex mutex_;
    std::map<uintptr_t, Block> blocks_; // by start address
};

} // namespace gpumem::detail
