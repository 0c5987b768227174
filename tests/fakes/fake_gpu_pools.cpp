// The engine of the fake CUDA driver and the fake HIP runtime: memory pools and stream-ordered allocation.
//
// A pool is an arena in a memfd (so another process can map it), mapped into the device
// address range.  Like a real driver it reserves device memory in granules
// (<prefix>POOL_GRANULE, 32 MiB by default): RESERVED_MEM_* move in granules, maxSize is
// rounded up to one.  Allocations are carved out of reserved granules; a freed block stays
// in the pool's cache and is handed out again under CUDA's stream-order rules: at once to
// the stream that freed it, to another stream when the reuse attributes allow it (the
// fake's work is always complete, so opportunistic reuse is always possible), and to any
// stream once the host synchronised with the free.  After a stream, event or device
// synchronisation, wholly free granules above the release threshold go back to the device.
//
// SPDX-License-Identifier: MIT
#include "fake_gpu_engine.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fakegpu {

Pool::~Pool()
{
    if (shadow)
        munmap(shadow, capacity);
    if (base)
        region_release_locked(base, capacity);
    if (fd >= 0)
        close(fd);
}


const char k_ptr_magic[8] = {'F', 'C', 'P', 'O', 'O', 'L', 'P', 'T'};
uint64_t ptr_check(const PtrExport &e) { return e.uid ^ (e.offset * 0x9e3779b97f4a7c15ull) ^ (e.size << 1) ^ 0x5ca1ab1e; }

Status find_pool_locked(const void *h, std::shared_ptr<Pool> *out)
{
    auto it = state().pools.find(reinterpret_cast<uint64_t>(h));
    if (it == state().pools.end())
        return kStatusInvalidValue;
    *out = it->second;
    return kStatusOk;
}

static void punch(Pool &p, uint64_t off, uint64_t size)
{
    fallocate(p.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(kFdHeader + off), (off_t)size);
}

// True when the cache covers [off, off+len) entirely (with synchronised frees only, if asked).
static bool all_cached(const Pool &p, uint64_t off, uint64_t len, bool only_synced)
{
    uint64_t cur = off;
    while (cur < off + len) {
        auto it = p.cache.upper_bound(cur);
        if (it == p.cache.begin())
            return false;
        --it;
        if (it->first + it->second.size <= cur || (only_synced && !it->second.synced))
            return false;
        cur = it->first + it->second.size;
    }
    return true;
}

// Take [off, off+len) out of the cache (blocks straddling its ends keep their other parts).
static void carve(Pool &p, uint64_t off, uint64_t len)
{
    auto it = p.cache.upper_bound(off);
    if (it != p.cache.begin())
        --it;
    while (it != p.cache.end() && it->first < off + len) {
        const uint64_t s = it->first, e = s + it->second.size;
        const Pool::Cached meta = it->second;
        if (e <= off) {
            ++it;
            continue;
        }
        it = p.cache.erase(it);
        if (s < off)
            p.cache[s] = Pool::Cached{off - s, meta.stream, meta.seq, meta.synced};
        if (e > off + len)
            p.cache[off + len] = Pool::Cached{e - (off + len), meta.stream, meta.seq, meta.synced};
    }
}

// Give wholly free granules back to the device (highest offsets first) until at most `keep`
// bytes stay reserved.
void release_cached_locked(Pool &p, uint64_t keep, bool only_synced)
{
    const uint64_t g = engine_config().pool_granule;
    Device &d = state().devices[(size_t)p.device];
    for (auto it = p.granules.end(); it != p.granules.begin() && p.reserved > keep;) {
        --it;
        const uint64_t off = it->first;
        if (!all_cached(p, off, g, only_synced))
            continue;
        carve(p, off, g);
        punch(p, off, g);
        p.unreserved.add(off, g);
        p.reserved -= std::min(p.reserved, g);
        if (p.memory == PoolMemory::Device) // host and managed pools hold no device memory
            d.used -= std::min(d.used, g);
        it = p.granules.erase(it);
    }
}

// Frees whose stream work the host has waited for become usable by any stream.
static void mark_synced_locked(Pool &p)
{
    const State &s = state();
    for (auto &kv : p.cache) {
        Pool::Cached &c = kv.second;
        if (c.synced)
            continue;
        auto st = s.streams.find(c.stream);
        // A destroyed stream's work is complete by the time the host synchronises anything.
        if (c.stream == 0 || st == s.streams.end() || st->second->synced >= c.seq)
            c.synced = true;
    }
    // Adjacent synchronised blocks are one block.
    for (auto it = p.cache.begin(); it != p.cache.end();) {
        auto next = std::next(it);
        if (next != p.cache.end() && it->second.synced && next->second.synced &&
            it->first + it->second.size == next->first) {
            it->second.size += next->second.size;
            p.cache.erase(next);
        } else {
            it = next;
        }
    }
}

// Whether `st` may have a cached block: at once, or (*dep set) after waiting for its free.
static bool reusable(const Pool &p, const Pool::Cached &c, const Stream &st, bool *dep)
{
    *dep = false;
    if (c.synced || c.stream == st.id)
        return true;
    if (p.follow_event_deps) {
        auto it = st.waited.find(c.stream);
        if (it != st.waited.end() && it->second >= c.seq)
            return true;
    }
    if (p.opportunistic && stream_done_locked(c.stream) >= c.seq)
        return true; // the free has completed
    if (p.internal_deps) {
        *dep = true; // the driver makes `st` wait for the free
        return true;
    }
    return false;
}

Status create_pool_locked(int dev, unsigned handle_types, uint64_t max_size, bool is_default,
                            std::shared_ptr<Pool> *out, std::string *why, PoolMemory memory)
{
    const uint64_t mem = engine_config().memory, g = engine_config().pool_granule;
    uint64_t capacity = mem;
    if (max_size != 0 && round_up(max_size, g, &capacity))
        capacity = std::min(capacity, mem);
    else
        capacity = mem;
    if (!round_up(capacity, std::max(g, kGranularity), &capacity))
        capacity = mem;
    std::shared_ptr<Pool> p = std::make_shared<Pool>();
    p->id = new_handle(kPoolTag);
    p->uid = random_uid();
    p->device = dev;
    p->is_default = is_default;
    p->handle_types = handle_types;
    p->max_size = max_size;
    p->capacity = capacity;
    p->memory = memory;
    // A device pool is its device's; a host pool starts reachable from the CPU alone (as
    // the driver's); managed memory every device reaches.
    p->access.assign(state().devices.size(), memory == PoolMemory::Managed ? kAccessReadWrite : kAccessNone);
    if (memory == PoolMemory::Device)
        p->access[(size_t)dev] = kAccessReadWrite;
    p->fd = make_shared_memfd("pool", kFdPool, p->uid, dev, capacity, handle_types);
    if (p->fd < 0) {
        *why = std::string("memfd: ") + strerror(errno);
        return kStatusOutOfMemory;
    }
    uint64_t base = 0;
    if (!region_alloc_locked(capacity, kGranularity, 0, &base)) {
        *why = "no device address space left for the pool's arena";
        return kStatusOutOfMemory;
    }
    p->base = base; // from here on the destructor gives it back
    void *shadow = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED || !region_map_fd_locked(base, capacity, p->fd, kFdHeader)) {
        if (shadow != MAP_FAILED)
            munmap(shadow, capacity);
        *why = std::string("mmap: ") + strerror(errno);
        return kStatusOutOfMemory;
    }
    p->shadow = static_cast<char *>(shadow);
    // Host and managed memory: the CPU reaches the blocks at their own addresses.
    if (memory != PoolMemory::Device && mprotect(reinterpret_cast<void *>(base), capacity, PROT_READ | PROT_WRITE) != 0) {
        *why = std::string("mprotect: ") + strerror(errno);
        return kStatusOutOfMemory;
    }
    p->unreserved.add(0, capacity);
    state().pools[p->id] = p;
    *out = p;
    return kStatusOk;
}

Status pool_alloc_locked(Pool &p, const std::shared_ptr<Pool> &ref, uint64_t size, Stream &st, DevPtr *dptr,
                           std::string *why)
{
    if (p.imported) {
        *why = "an imported pool cannot allocate";
        return kStatusInvalidValue;
    }
    uint64_t r = 0;
    if (!round_up(size, kPoolAlign, &r) || r > p.capacity) {
        *why = "larger than the pool can ever hold";
        return kStatusOutOfMemory;
    }
    // 1. A cached block this stream may reuse (best fit).
    auto best = p.cache.end();
    bool best_dep = false;
    for (auto it = p.cache.begin(); it != p.cache.end(); ++it) {
        bool dep = false;
        if (it->second.size >= r && reusable(p, it->second, st, &dep) &&
            (best == p.cache.end() || it->second.size < best->second.size)) {
            best = it;
            best_dep = dep;
        }
    }
    uint64_t off = 0;
    std::vector<Dep> deps;
    if (best != p.cache.end()) {
        off = best->first;
        Pool::Cached c = best->second;
        if (best_dep) {
            deps.emplace_back(c.stream, c.seq);
            st.waited[c.stream] = std::max(st.waited[c.stream], c.seq);
        }
        p.cache.erase(best);
        if (c.size > r)
            p.cache[off + r] = Pool::Cached{c.size - r, c.stream, c.seq, c.synced};
    } else {
        // 2. Fresh granules from the device; what the block leaves of them is free for anyone.
        Device &d = state().devices[(size_t)p.device];
        const uint64_t mem = engine_config().memory, g = engine_config().pool_granule;
        uint64_t n = 0, limit = 0;
        if (!round_up(r, g, &n)) {
            *why = "larger than the pool can ever hold";
            return kStatusOutOfMemory;
        }
        if (p.max_size != 0 && round_up(p.max_size, g, &limit) && (p.reserved > limit || n > limit - p.reserved)) {
            *why = "the pool would exceed its maxSize";
            return kStatusOutOfMemory;
        }
        if (p.memory == PoolMemory::Device && (d.used > mem || n > mem - d.used)) {
            *why = "the device has not that much free memory";
            return kStatusOutOfMemory;
        }
        if (!p.unreserved.take_lowest(n, g, &off)) {
            *why = "the pool's arena is full";
            return kStatusOutOfMemory;
        }
        for (uint64_t at = off; at < off + n; at += g)
            p.granules[at] = true;
        p.reserved += n;
        if (p.memory == PoolMemory::Device)
            d.used += n;
        p.reserved_high = std::max(p.reserved_high, p.reserved);
        if (n > r)
            p.cache[off + r] = Pool::Cached{n - r, 0, 0, true};
    }
    p.used += size; // exact bytes, as driver 580 counts them
    p.used_high = std::max(p.used_high, p.used);
    p.live[off] = r;
    p.live_bytes[off] = size;
    Segment seg;
    seg.size = size;
    seg.shadow = p.shadow + off;
    seg.kind = SegKind::PoolBlock;
    seg.device = p.device;
    seg.pool = ref;
    state().segments[p.base + off] = std::move(seg);
    enqueue_locked(st, nullptr, std::move(deps));
    *dptr = p.base + off;
    return kStatusOk;
}


std::shared_ptr<Pool> default_pool_locked(int dev)
{
    Device &d = state().devices[(size_t)dev];
    if (d.default_pool == 0) {
        std::shared_ptr<Pool> p;
        std::string why;
        if (create_pool_locked(dev, kHandleTypeNone, 0, true, &p, &why) != kStatusOk)
            return nullptr;
        d.default_pool = p->id;
    }
    if (d.current_pool == 0 || state().pools.count(d.current_pool) == 0)
        d.current_pool = d.default_pool;
    return state().pools.at(d.default_pool);
}

void pools_after_sync_locked()
{
    for (auto &kv : state().pools) {
        Pool &p = *kv.second;
        if (p.imported)
            continue;
        mark_synced_locked(p);
        release_cached_locked(p, engine_config().bug_ignore_release_threshold ? UINT64_MAX : p.release_threshold, true);
    }
}

void pool_free_block_locked(const std::shared_ptr<Pool> &ref, uint64_t addr, Stream *st)
{
    Pool &p = *ref;
    const uint64_t off = addr - p.base;
    auto lit = p.live.find(off);
    if (lit == p.live.end())
        return;
    const uint64_t r = lit->second;
    p.live.erase(lit);
    p.failed_size = 0; // memory came back: a same-size allocation now is a new request, no retry
    p.used -= std::min(p.used, p.live_bytes[off]);
    p.live_bytes.erase(off);
    state().segments.erase(addr); // may drop the last reference but `ref` keeps the pool alive
    if (p.destroyed) {
        // Nothing may allocate from a destroyed pool: its granules go as soon as they are free.
        p.cache[off] = Pool::Cached{r, 0, 0, true};
        release_cached_locked(p, 0, false);
        return;
    }
    if (st != nullptr && engine_config().bug_leak_free_async) {
        bug_counters().leaked_bytes += r; // the range stays reserved, neither live nor cached
        return;
    }
    if (st == nullptr) {
        p.cache[off] = Pool::Cached{r, 0, 0, true};
        mark_synced_locked(p);
        release_cached_locked(p, engine_config().bug_ignore_release_threshold ? UINT64_MAX : p.release_threshold,
                              true);
    } else {
        enqueue_locked(*st);
        p.cache[off] = Pool::Cached{r, st->id, st->seq, false};
    }
}

void destroy_context_pools_locked(int dev)
{
    // Pools belong to the device, not to its primary context: they and their memory stay.
    (void)dev;
}

} // namespace fakegpu
