// The registry of every pool of the process (registry.cpp), shared by the
// files that walk the pools (src/pool only).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gpumem::detail::pool {

class Pool;
struct StreamCache;

// Every pool, and the recycle list of stream caches.
struct Registry {
    std::mutex mu; // the pool list, and every walk over the pools
    std::vector<Pool *> pools;
    std::atomic<uint64_t> next_uid{1};

    std::mutex cache_mu; // the recycle list of stream caches
    StreamCache *free_caches = nullptr;
    std::vector<StreamCache *> all_caches; // freed only by destroy_all
};
Registry &registry();
// Last step of a destroyed pool, once nothing refers to it any more.
void delete_pool(Pool *p);

} // namespace gpumem::detail::pool
