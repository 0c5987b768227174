// Design note: room after VMM reservations.
//
// Why: the seed's grow-in-place pattern reserves a range, maps it, and later
// reserves again with the end of the range as the hint, to grow the range in
// place.  The vendors honour a hint only while that address is free, and any
// allocation in between (the driver's own included) may take it.
// How: the core's VMM service (core/vmm.cpp) reserves more than the program
// asked, a block of address space whose unused end stays free for such a
// hint; a later reservation hinted inside a block's free part is carved out
// of it without asking the vendor.  A vendor frees only whole reservations,
// so a block goes back once nothing of it is handed out.  The backends only
// reserve and free exactly what they are asked.
// Limits: only the program's reservations get room (pool chunks and buffers
// reserve their whole range up front); a hint past the end of a block's room
// is honoured only where the vendor finds that address free.
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

// The vendor reservations (blocks) made with room, and which
// parts of them are handed out.  A vendor frees only whole reservations, so a
// block goes back when nothing of it is handed out any more.  Thread-safe.
class AddressRooms {
public:
    // [hint, hint + size) carved out of a block's free part; false when no
    // block holds all of it free.
    bool take(uintptr_t hint, size_t size);
    // A new vendor reservation [base, base + total), made on `device`, of
    // which [base, base + used) is handed out.
    void add_block(uintptr_t base, size_t total, size_t used, int32_t device);
    enum class Release {
        not_ours,  // [ptr, ptr + size) is in no block: free it at the vendor as it is
        kept,      // given back to its block, which other reservations still use
        block_free // the whole block is free now: *block_base, *block_size go back to the
                   // vendor on *block_device, where it was made
    };
    Release release(uintptr_t ptr, size_t size, uintptr_t *block_base, size_t *block_size, int32_t *block_device);

private:
    struct Block {
        size_t size = 0;
        int32_t device = 0;
        std::map<uintptr_t, size_t> free; // start -> length, never touching each other
    };
    std::mutex mutex_;
    std::map<uintptr_t, Block> blocks_; // by start address
};

} // namespace gpumem::detail
