// Fitting requests into the pool's free memory: the best fit in the shared
// free index (find_fit, the slow path of every allocation), carving a block
// out of it, and coalescing freed blocks into it.  Every function here runs
// with Pool::mu held.
#include <algorithm>

#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {
namespace {

// Free blocks merge only when they have the same owner: both free for every
// stream, or both freed on the same stream (then the later epoch counts).
bool mergeable(const Block *neighbour, const Block &b)
{
    if (!neighbour || neighbour->state.load(std::memory_order_relaxed) != kFree)
        return false;
    return b.tag_stream ? (neighbour->tag_stream && neighbour->tag_id == b.tag_id) : !neighbour->tag_stream;
}

// `a` swallows its successor `b` (Chunk::mu held, both out of the index).
void absorb_next(Block *a, Block *b)
{
    a->size += b->size;
    a->phys_next = b->phys_next;
    if (a->phys_next)
        a->phys_next->phys_prev = a;
    a->tag_epoch = std::max(a->tag_epoch, b->tag_epoch);
}

} // namespace

void Pool::insert_coalesced(Block *b)
{
    Block *gone[2];
    int n_gone = 0;
    {
        std::lock_guard<SpinLock> lock(b->chunk->mu);
        b->state.store(kFree, std::memory_order_relaxed);
        if (Block *prev = b->phys_prev; mergeable(prev, *b)) {
            index.remove(prev);
            absorb_next(prev, b);
            gone[n_gone++] = b;
            b = prev;
        }
        if (Block *next = b->phys_next; mergeable(next, *b)) {
            index.remove(next);
            absorb_next(b, next);
            gone[n_gone++] = next;
        }
    }
    index.insert(b);
    for (int i = 0; i < n_gone; ++i) {
        gone[i]->reset();
        arena.put(gone[i]);
    }
}

void Pool::free_block(Block *b, uint64_t released)
{
    if (safe_for_all(*this, *b, released))
        clear_tag(b);
    insert_coalesced(b);
}

Block *Pool::find_free(const Requester &r, size_t bytes, bool *untag)
{
    auto usable = [&](const Block &x) { return safe_for_all(*this, x, 0) || ordered_before(r, x); };
    Block *b = index.best_fit(bytes, usable);
    // Paged: memory already backed serves without a driver call, and backing
    // other pages would raise what the pool holds.  So when the best fit
    // needs pages backed, a block whose pages are all backed wins, however
    // larger (a larger hole costs address space, not memory).  The second
    // search runs only where a driver call would otherwise follow.
    if (b && page && !backed_under(*b, bytes)) {
        if (Block *backed = index.best_fit(bytes, [&](const Block &x) { return usable(x) && backed_under(x, bytes); })) {
            b = backed;
        } else {
            // Every fit needs pages backed: the one that needs the fewest
            // (the fewest units created and the least over the budget, so
            // the fewest pages moved), the smaller on a tie.  The search
            // looks at kFitScan blocks at most: it runs only where a driver
            // call follows anyway.
            constexpr size_t kFitScan = 256;
            size_t best = unbacked_under(*b, bytes), seen = 0;
            index.for_each_fit(bytes, [&](Block *x) {
                if (usable(*x)) {
                    const size_t n = unbacked_under(*x, bytes);
                    if (n < best || (n == best && x->size < b->size)) {
                        best = n;
                        b = x;
                    }
                }
                return best > 0 && ++seen < kFitScan;
            });
        }
    }
    if (b)
        *untag = safe_for_all(*this, *b, 0);
    return b;
}

void Pool::carve(Block *b, size_t bytes, bool untag)
{
    Block *rest = b->size > bytes ? arena.get() : nullptr; // may throw: nothing has changed yet
    index.remove(b);
    if (untag)
        clear_tag(b);
    b->state.store(kLive, std::memory_order_relaxed);
    if (!rest)
        return;
    {
        std::lock_guard<SpinLock> lock(b->chunk->mu);
        rest->ptr = b->ptr + bytes;
        rest->size = b->size - bytes;
        rest->chunk = b->chunk;
        rest->pool = this;
        rest->phys_prev = b;
        rest->phys_next = b->phys_next;
        if (rest->phys_next)
            rest->phys_next->phys_prev = rest;
        b->phys_next = rest;
        rest->tag_stream = b->tag_stream;
        rest->tag_id = b->tag_id;
        rest->tag_epoch = b->tag_epoch;
        b->size = bytes;
    }
    // Untagging may have made the rest mergeable with its next neighbour.
    insert_coalesced(rest);
}

status_t Pool::find_fit(const Requester &r, size_t bytes, Block **out)
{
    purge_if_due();
    if (page && index.tagged() && index.inserted() >= learn_at) {
        // Every sixteenth of what the blocks use, freed: a few times per
        // turnover of the live set, so a framework's busy stream has a
        // mark behind it by the time pages must go back (a mark recorded
        // only then has rarely passed at the next look).
        learn_at = index.inserted() + std::max<uint64_t>((address_bytes - index.bytes()) / 16, 4 * page);
        learn_completed_frees(false);
    }
    sweep(false);
    bool untag = false;
    Block *b = find_free(r, bytes, &untag);
    if (!b) {
        // Before growing, what this stream cached (and what other streams
        // cached that it may reuse) goes back to the index and coalesces, so
        // cached blocks of the wrong sizes never make the pool grow.
        flush_caches(&r);
        b = find_free(r, bytes, &untag);
    }
    if (!b && !quarantine.empty()) {
        // Strict mode holds freed blocks back only while the pool need not
        // grow for it, so the program's footprint stays what it is on a GPU.
        release_quarantined(0);
        b = find_free(r, bytes, &untag);
    }
    if (!b) {
        status_t st = grow(bytes);
        if (st == GPUMEM_ERROR_OUT_OF_MEMORY) {
            // Give back every chunk that no pending work can touch, then try once more.
            flush_caches(nullptr);
            learn_completed_frees(true);
            sweep(false);
            release_free_chunks(0);
            b = find_free(r, bytes, &untag);
            if (!b)
                st = grow(bytes);
        }
        if (!b && st != GPUMEM_SUCCESS)
            return st;
        if (!b)
            b = find_free(r, bytes, &untag);
    }
    if (page) {
        if (status_t st = back_for(*b, bytes))
            return st;
    }
    carve(b, bytes, untag);
    if (page)
        note_use();
    *out = b;
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::pool
