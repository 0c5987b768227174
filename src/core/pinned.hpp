// Pinned host memory: gpumem_host_alloc (with its cache) and registered host
// memory (gpumem_host_register, recorded only where the device cannot lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "core/registry.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Devices;
class HostMemory;
class Pointers;

// Freed pinned blocks kept for reuse: page-locking is slow (about a
// millisecond per call on CUDA), so a program that allocates pinned buffers
// of one size in a loop pays it once.
class Pinned {
public:
    // `host`: the backend's page-locked memory; `pointers`: the directory
    // its allocations are recorded in; `devices`: support levels and
    // fallbacks; `cache_bytes`: GPUMEM_PINNED_CACHE; `ask_device_pointer`:
    // the runtime may map registered memory at another address
    // (workaround_ask_device_pointer).
    Pinned(HostMemory &host, Pointers &pointers, const Devices &devices, uint64_t cache_bytes, bool ask_device_pointer)
        : host_(host), pointers_(pointers), devices_(devices), cache_limit_(cache_bytes),
          ask_device_pointer_(ask_device_pointer)
    {
    }
    Pinned(const Pinned &) = delete;
    Pinned &operator=(const Pinned &) = delete;

    status_t alloc(size_t size, uint32_t flags, void **ptr);
    status_t free(void *ptr);
    status_t register_range(void *ptr, size_t size, uint32_t flags);
    status_t unregister_range(void *ptr);
    status_t device_pointer(void *host_ptr, void **device_ptr);

    // Pinned memory and the address the device uses for it, from the cache
    // when it holds a block of these flags and page-rounded size (also what
    // emulated managed memory is made of).
    status_t alloc_mapped(size_t size, uint32_t flags, void **ptr, void **device_ptr);
    // A registry allocation of kind HOST_PINNED (or emulated MANAGED, with
    // the flags it was made with): into the cache, or given back.  The cache
    // also keeps the address gpumem's, so a late call on it is known to be on
    // freed memory: the runtime may keep a freed block mapped, where gpumem
    // cannot tell it from memory somebody else holds now.
    status_t release(const Allocation &a, uint32_t flags, bool finalizing);
    // A registry allocation of kind HOST_REGISTERED.
    status_t unregister(const Allocation &a);
    // gpumem_finalize: the cache goes.
    void release_all();
    // Whether ptr lies in a freed block the cache keeps (or its device
    // address); *out: the allocation it was.  The cache's own book, so a
    // stale pointer is refused for as long as its block waits here, however
    // long ago the pointer directory's graves forgot it.  No lock while the
    // cache is empty or ptr lies outside every block it ever held at once.
    bool cached(const void *ptr, Graves::Grave *out) const
    {
        const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
        return count_.load(std::memory_order_acquire) && p >= low_.load(std::memory_order_relaxed) &&
               p < high_.load(std::memory_order_relaxed) && cached_slow(p, out);
    }

private:
    struct Block {
        void *ptr;
        void *device_pointer;
        Graves::Grave was; // the allocation, for the messages
    };
    bool cached_slow(uintptr_t p, Graves::Grave *out) const;
    // The block's addresses in and out of the address book (mutex_ held).
    void enter_locked(const Block &block, size_t rounded);
    void leave_locked(const Block &block);
    bool from_cache(size_t size, uint32_t flags, void **ptr, void **device_ptr);
    status_t alloc_uncached(size_t size, uint32_t flags, void **ptr, void **device_ptr);
    bool flush();

    HostMemory &host_;
    Pointers &pointers_;
    const Devices &devices_;
    const uint64_t cache_limit_;
    const bool ask_device_pointer_;

    mutable std::shared_mutex mutex_;
    std::multimap<std::pair<uint32_t, size_t>, Block> blocks_; // (flags, page-rounded size)
    uint64_t bytes_ = 0;
    // The cached blocks' host and device addresses: start -> (end, the allocation).
    std::map<uintptr_t, std::pair<uintptr_t, Graves::Grave>> addresses_;
    // Blocks in the cache, and bounds around their addresses (reset when it empties).
    std::atomic<size_t> count_{0};
    std::atomic<uintptr_t> low_{UINTPTR_MAX}, high_{0};
};

} // namespace gpumem::detail
