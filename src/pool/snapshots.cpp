// Snapshots of every pool for the core's snapshots and out-of-memory
// reports: each pool's usage and rules, and each chunk with its free blocks.
#include <algorithm>
#include <mutex>
#include <vector>

#include "pool/pool_internal.hpp"
#include "pool/registry.hpp"

namespace gpumem::detail::pool {

void inspect(std::vector<PoolView> *pools, std::vector<SegmentView> *segments)
{
    Registry &r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mu);
    for (Pool *p : r.pools) {
        std::lock_guard<std::mutex> lock(p->mu);
        if (pools)
            pools->push_back(PoolView{p->owner, p->device, p->reserved, uint64_t(std::max<int64_t>(p->used_now(), 0)),
                                      p->max_size, p->address_bytes, p->granularity});
        if (!segments)
            continue;
        for (const Chunk *chunk : p->chunks) {
            if (chunk->imported)
                continue; // another process's block, not memory this pool holds
            SegmentView seg;
            seg.owner = p->owner;
            seg.device = p->device;
            seg.base = chunk->base;
            seg.bytes = chunk->size;
            seg.backed = p->backed_bytes(*chunk);
            {
                std::lock_guard<SpinLock> chunk_lock(const_cast<Chunk *>(chunk)->mu);
                for (const Block *b = chunk->first; b; b = b->phys_next)
                    if (b->state.load(std::memory_order_relaxed) != kLive) {
                        const bool pending = !safe_for_all(*p, *b, 0);
                        seg.free_blocks.push_back(FreeBlockView{size_t(b->ptr - chunk->base), b->size, pending,
                                                                pending ? b->tag_stream->handle : nullptr});
                    }
            }
            segments->push_back(std::move(seg));
        }
    }
}

} // namespace gpumem::detail::pool
