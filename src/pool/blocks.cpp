// Building blocks of the pool: spin lock back-off, block metadata, free index.
#include <sched.h>

#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {

void SpinLock::backoff(unsigned spins)
{
    // Spin briefly (the holder is a few instructions from unlocking), then give
    // the core away: with more threads than cores the holder may be preempted.
    if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    } else {
        sched_yield();
    }
}

Block *BlockArena::get()
{
    if (!free_) {
        auto slab = std::make_unique<Block[]>(kSlab);
        slabs_.reserve(slabs_.size() + 1); // may throw before anything changes
        for (size_t i = 0; i < kSlab; ++i)
            put(&slab[i]);
        slabs_.push_back(std::move(slab));
    }
    Block *b = free_;
    free_ = b->next;
    b->reset();
    return b;
}

void FreeIndex::insert(Block *b)
{
    unsigned bin = bin_of(b->size >> kGranuleShift);
    b->prev = nullptr;
    b->next = heads_[bin];
    if (b->next)
        b->next->prev = b;
    heads_[bin] = b;
    nonempty_[bin / 64] |= uint64_t(1) << (bin % 64);
    if (b->tag_stream)
        ++tagged_;
    bytes_ += b->size;
    inserted_ += b->size;
}

void FreeIndex::remove(Block *b)
{
    unsigned bin = bin_of(b->size >> kGranuleShift);
    if (b->prev)
        b->prev->next = b->next;
    else
        heads_[bin] = b->next;
    if (b->next)
        b->next->prev = b->prev;
    if (!heads_[bin])
        nonempty_[bin / 64] &= ~(uint64_t(1) << (bin % 64));
    b->prev = b->next = nullptr;
    if (b->tag_stream)
        --tagged_;
    bytes_ -= b->size;
}

} // namespace gpumem::detail::pool
