// Room after VMM reservations (address_rooms.hpp).
// SPDX-License-Identifier: MIT
#include "core/address_rooms.hpp"

#include <iterator>

namespace gpumem::detail {

size_t address_room_for(size_t size)
{
    constexpr size_t k_min_room = size_t{1} << 30, k_max_room = size_t{1} << 40;
    size_t room = size > k_max_room / 2 ? k_max_room : 2 * size;
    return room < k_min_room ? k_min_room : room;
}

bool AddressRooms::take(uintptr_t hint, size_t size)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto block = blocks_.upper_bound(hint);
    if (block == blocks_.begin())
        return false;
    --block;
    auto &free = block->second.free;
    auto it = free.upper_bound(hint);
    if (it == free.begin())
        return false;
    --it;
    const uintptr_t start = it->first, end = it->first + it->second;
    if (hint < start || hint >= end || size > end - hint)
        return false;
    free.erase(it);
    if (hint > start)
        free[start] = hint - start;
    if (hint + size < end)
        free[hint + size] = end - (hint + size);
    return true;
}

void AddressRooms::add_block(uintptr_t base, size_t total, size_t used, int32_t device)
{
    std::lock_guard<std::mutex> lock(mutex_);
    Block &b = blocks_[base];
    b.size = total;
    b.device = device;
    b.free.clear();
    if (used < total)
        b.free[base + used] = total - used;
}

AddressRooms::Release AddressRooms::release(uintptr_t ptr, size_t size, uintptr_t *block_base, size_t *block_size,
                                            int32_t *block_device)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto block = blocks_.upper_bound(ptr);
    if (block == blocks_.begin())
        return Release::not_ours;
    --block;
    if (ptr - block->first >= block->second.size)
        return Release::not_ours;
    // Merge with the free neighbours on either side.
    auto &free = block->second.free;
    uintptr_t start = ptr;
    size_t length = size;
    auto next = free.lower_bound(ptr);
    if (next != free.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            length += prev->second;
            free.erase(prev);
        }
    }
    if (next != free.end() && next->first == ptr + size) {
        length += next->second;
        free.erase(next);
    }
    if (start == block->first && length == block->second.size) {
        *block_base = block->first;
        *block_size = block->second.size;
        *block_device = block->second.device;
        blocks_.erase(block);
        return Release::block_free;
    }
    free[start] = length;
    return Release::kept;
}

} // namespace gpumem::detail
