// The fake HIP runtime (ported from the fake CUDA driver): memory pools and stream-ordered allocation.
//
// A pool is an arena in a memfd (so another process can map it), mapped into the device
// address range.  Like a real driver it reserves device memory in granules
// (FAKE_HIP_POOL_GRANULE, 32 MiB by default): RESERVED_MEM_* move in granules, maxSize is
// rounded up to one.  Allocations are carved out of reserved granules; a freed block stays
// in the pool's cache and is handed out again under CUDA's stream-order rules: at once to
// the stream that freed it, to another stream when the reuse attributes allow it (the
// fake's work is always complete, so opportunistic reuse is always possible), and to any
// stream once the host synchronised with the free.  After a stream, event or device
// synchronisation, wholly free granules above the release threshold go back to the device.
//
// SPDX-License-Identifier: MIT
#include "fake_hip.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fakehip {

Pool::~Pool()
{
    if (shadow)
        munmap(shadow, capacity);
    if (base)
        region_release_locked(base, capacity);
    if (fd >= 0)
        close(fd);
}

namespace {

// Export data of a pool pointer (64 opaque bytes in CUDA).
struct PtrExport {
    char magic[8];
    uint64_t uid;
    uint64_t offset;
    uint64_t size;
    uint64_t check;
    char pad[24];
};
static_assert(sizeof(PtrExport) == sizeof(hipMemPoolPtrExportData), "export data is 64 bytes");
const char k_ptr_magic[8] = {'F', 'C', 'P', 'O', 'O', 'L', 'P', 'T'};
uint64_t ptr_check(const PtrExport &e) { return e.uid ^ (e.offset * 0x9e3779b97f4a7c15ull) ^ (e.size << 1) ^ 0x5ca1ab1e; }

hipError_t find_pool_locked(hipMemPool_t h, std::shared_ptr<Pool> *out)
{
    auto it = state().pools.find(reinterpret_cast<uint64_t>(h));
    if (it == state().pools.end())
        return hipErrorInvalidValue;
    *out = it->second;
    return hipSuccess;
}

void punch(Pool &p, uint64_t off, uint64_t size)
{
    fallocate(p.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(kFdHeader + off), (off_t)size);
}

// True when the cache covers [off, off+len) entirely (with synchronised frees only, if asked).
bool all_cached(const Pool &p, uint64_t off, uint64_t len, bool only_synced)
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
void carve(Pool &p, uint64_t off, uint64_t len)
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
    const uint64_t g = config().pool_granule;
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
        d.used -= std::min(d.used, g);
        it = p.granules.erase(it);
    }
}

// Frees whose stream work the host has waited for become usable by any stream.
void mark_synced_locked(Pool &p)
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
bool reusable(const Pool &p, const Pool::Cached &c, const Stream &st, bool *dep)
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

hipError_t create_pool_locked(int dev, unsigned handle_types, uint64_t max_size, bool is_default,
                            std::shared_ptr<Pool> *out, std::string *why)
{
    const uint64_t mem = config().memory, g = config().pool_granule;
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
    p->access.assign(state().devices.size(), hipMemAccessFlagsProtNone);
    p->access[(size_t)dev] = hipMemAccessFlagsProtReadWrite;
    p->fd = make_shared_memfd("pool", kFdPool, p->uid, dev, capacity, handle_types);
    if (p->fd < 0) {
        *why = std::string("memfd: ") + strerror(errno);
        return hipErrorOutOfMemory;
    }
    uint64_t base = 0;
    if (!region_alloc_locked(capacity, kGranularity, 0, &base)) {
        *why = "no device address space left for the pool's arena";
        return hipErrorOutOfMemory;
    }
    p->base = base; // from here on the destructor gives it back
    void *shadow = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED || !region_map_fd_locked(base, capacity, p->fd, kFdHeader)) {
        if (shadow != MAP_FAILED)
            munmap(shadow, capacity);
        *why = std::string("mmap: ") + strerror(errno);
        return hipErrorOutOfMemory;
    }
    p->shadow = static_cast<char *>(shadow);
    p->unreserved.add(0, capacity);
    state().pools[p->id] = p;
    *out = p;
    return hipSuccess;
}

hipError_t pool_alloc_locked(Pool &p, const std::shared_ptr<Pool> &ref, uint64_t size, Stream &st, fh_devptr *dptr,
                           std::string *why)
{
    if (p.imported) {
        *why = "an imported pool cannot allocate";
        return hipErrorInvalidValue;
    }
    uint64_t r = 0;
    if (!round_up(size, kPoolAlign, &r) || r > p.capacity) {
        *why = "larger than the pool can ever hold";
        return hipErrorOutOfMemory;
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
        const uint64_t mem = config().memory, g = config().pool_granule;
        uint64_t n = 0, limit = 0;
        if (!round_up(r, g, &n)) {
            *why = "larger than the pool can ever hold";
            return hipErrorOutOfMemory;
        }
        if (p.max_size != 0 && round_up(p.max_size, g, &limit) && (p.reserved > limit || n > limit - p.reserved)) {
            *why = "the pool would exceed its maxSize";
            return hipErrorOutOfMemory;
        }
        if (d.used > mem || n > mem - d.used) {
            *why = "the device has not that much free memory";
            return hipErrorOutOfMemory;
        }
        if (!p.unreserved.take_lowest(n, g, &off)) {
            *why = "the pool's arena is full";
            return hipErrorOutOfMemory;
        }
        for (uint64_t at = off; at < off + n; at += g)
            p.granules[at] = true;
        p.reserved += n;
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
    return hipSuccess;
}

} // namespace

std::shared_ptr<Pool> default_pool_locked(int dev)
{
    Device &d = state().devices[(size_t)dev];
    if (d.default_pool == 0) {
        std::shared_ptr<Pool> p;
        std::string why;
        if (create_pool_locked(dev, hipMemHandleTypeNone, 0, true, &p, &why) != hipSuccess)
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
        release_cached_locked(p, p.release_threshold, true);
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
    p.used -= std::min(p.used, p.live_bytes[off]);
    p.live_bytes.erase(off);
    state().segments.erase(addr); // may drop the last reference but `ref` keeps the pool alive
    if (p.destroyed) {
        // Nothing may allocate from a destroyed pool: its granules go as soon as they are free.
        p.cache[off] = Pool::Cached{r, 0, 0, true};
        release_cached_locked(p, 0, false);
        return;
    }
    if (st == nullptr) {
        p.cache[off] = Pool::Cached{r, 0, 0, true};
        mark_synced_locked(p);
        release_cached_locked(p, p.release_threshold, true);
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

} // namespace fakehip

using namespace fakehip;

FAKE_HIP_API fake_cuDeviceGetDefaultMemPool(hipMemPool_t *pool_out, int dev)
{
    FAKE_ENTER("hipDeviceGetDefaultMemPool", "dev=%d", (int)dev);
    if (pool_out == nullptr)
        FAIL(hipErrorInvalidValue, "pool_out is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    std::shared_ptr<Pool> p = default_pool_locked(dev);
    if (!p)
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    *pool_out = reinterpret_cast<hipMemPool_t>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceGetMemPool(hipMemPool_t *pool, int dev)
{
    FAKE_ENTER("hipDeviceGetMemPool", "dev=%d", (int)dev);
    if (pool == nullptr)
        FAIL(hipErrorInvalidValue, "pool is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    if (!default_pool_locked(dev))
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    *pool = reinterpret_cast<hipMemPool_t>(state().devices[(size_t)dev].current_pool);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceSetMemPool(int dev, hipMemPool_t pool)
{
    FAKE_ENTER("hipDeviceSetMemPool", "dev=%d, pool=%p", (int)dev, (void *)pool);
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (p->device != dev || p->imported)
        FAIL(hipErrorInvalidDevice, "the pool is not device %d's", (int)dev);
    default_pool_locked(dev);
    state().devices[(size_t)dev].current_pool = p->id;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolCreate(hipMemPool_t *pool, const fh_MemPoolProps *poolProps)
{
    FAKE_ENTER("hipMemPoolCreate", "poolProps=%p", (const void *)poolProps);
    if (pool == nullptr || poolProps == nullptr)
        FAIL(hipErrorInvalidValue, "pool or poolProps is NULL");
    const fh_MemPoolProps &pp = *poolProps;
    if (config().trace)
        call_.args("allocType=%d, handleTypes=0x%x, location={%d,%d}, maxSize=%zu", (int)pp.allocType,
                   (unsigned)pp.handleTypes, (int)pp.location.type, pp.location.id, pp.maxSize);
    if (pp.allocType != hipMemAllocationTypePinned)
        FAIL(hipErrorInvalidValue, "allocType must be hipMemAllocationTypePinned");
    if ((int)pp.location.type == fh_MemLocationTypeHost || (int)pp.location.type == fh_MemLocationTypeHostNuma ||
        (int)pp.location.type == fh_MemLocationTypeHostNumaCurrent)
        FAIL(hipErrorNotSupported, "host pools are not modelled");
    if (pp.location.type != hipMemLocationTypeDevice)
        FAIL(hipErrorInvalidValue, "location.type must be hipMemLocationTypeDevice");
    if (!valid_device(pp.location.id))
        FAIL(hipErrorInvalidDevice, "no device %d", pp.location.id);
    if (pp.handleTypes & ~(unsigned)hipMemHandleTypePosixFileDescriptor)
        FAIL(hipErrorNotSupported, "handle types 0x%x are not available on Linux", (unsigned)pp.handleTypes);
    if ((pp.handleTypes & hipMemHandleTypePosixFileDescriptor) && !config().ipc)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_IPC is set: no shareable pools");
    if (pp.win32SecurityAttributes != nullptr)
        FAIL(hipErrorInvalidValue, "win32SecurityAttributes must be NULL");
    for (unsigned char b : pp.reserved)
        if (b != 0)
            FAIL(hipErrorInvalidValue, "reserved bytes must be 0");
    // Before ROCm 6 maxSize was part of the reserved bytes, which had to be 0.
    if (pp.maxSize != 0 && !config().v6())
        FAIL(hipErrorInvalidValue, "maxSize needs ROCm 6 (this runtime is %d): reserved bytes must be 0",
             config().runtime_version);
    if (!default_pool_locked(pp.location.id))
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    std::shared_ptr<Pool> p;
    std::string why;
    if (hipError_t r = create_pool_locked(pp.location.id, pp.handleTypes, pp.maxSize, false, &p, &why))
        FAIL(r, "%s", why.c_str());
    *pool = reinterpret_cast<hipMemPool_t>(p->id);
    OUT("*pool=%p", (void *)*pool);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolDestroy(hipMemPool_t pool)
{
    FAKE_ENTER("hipMemPoolDestroy", "pool=%p", (void *)pool);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (p->is_default)
        FAIL(hipErrorInvalidValue, "a device's default pool cannot be destroyed");
    State &s = state();
    s.pools.erase(p->id);
    for (Device &d : s.devices)
        if (d.current_pool == p->id)
            d.current_pool = d.default_pool;
    p->destroyed = true;
    if (!p->imported)
        release_cached_locked(*p, 0, false);
    if (!p->live.empty())
        OUT("%zu allocations outstanding: the pool goes when they are freed", p->live.size());
    RET(hipSuccess); // outstanding allocations keep it (through their segments) until freed
}

FAKE_HIP_API fake_cuMemAllocFromPoolAsync(fh_devptr *dptr, size_t bytesize, hipMemPool_t pool, hipStream_t hStream)
{
    FAKE_ENTER("hipMemAllocFromPoolAsync", "bytesize=%zu, pool=%p, hStream=%p", bytesize, (void *)pool,
               (void *)hStream);
    if (dptr == nullptr)
        FAIL(hipErrorInvalidValue, "dptr is NULL");
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (bytesize == 0) {
        *dptr = 0; // as driver 580 does
        RET(hipSuccess);
    }
    std::string why;
    if (hipError_t r = pool_alloc_locked(*p, p, bytesize, *st, dptr, &why))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemAllocAsync(fh_devptr *dptr, size_t bytesize, hipStream_t hStream)
{
    FAKE_ENTER("hipMemAllocAsync", "bytesize=%zu, hStream=%p", bytesize, (void *)hStream);
    if (dptr == nullptr)
        FAIL(hipErrorInvalidValue, "dptr is NULL");
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (bytesize == 0) {
        *dptr = 0;
        RET(hipSuccess);
    }
    if (!default_pool_locked(st->device))
        FAIL(hipErrorOutOfMemory, "could not make the default pool");
    std::shared_ptr<Pool> p = state().pools.at(state().devices[(size_t)st->device].current_pool);
    std::string why;
    if (hipError_t r = pool_alloc_locked(*p, p, bytesize, *st, dptr, &why))
        FAIL(r, "%s", why.c_str());
    OUT("*dptr=0x%llx", (unsigned long long)*dptr);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemFreeAsync(fh_devptr dptr, hipStream_t hStream)
{
    FAKE_ENTER("hipMemFreeAsync", "dptr=0x%llx, hStream=%p", (unsigned long long)dptr, (void *)hStream);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (dptr == 0)
        RET(hipSuccess);
    uint64_t start = 0;
    Segment *seg = find_segment_locked(dptr, &start);
    if (seg == nullptr || start != dptr)
        FAIL(hipErrorInvalidValue, "not the start of a live allocation");
    if (seg->kind == SegKind::PoolBlock) {
        std::shared_ptr<Pool> p = seg->pool;
        pool_free_block_locked(p, dptr, st);
        RET(hipSuccess);
    }
    if (seg->kind == SegKind::PoolImport) {
        enqueue_locked(*st);
        if (--seg->imports == 0)
            state().segments.erase(start);
        RET(hipSuccess);
    }
    if (seg->kind == SegKind::Device) {
        // Driver 580 takes cuMemAlloc memory too.  (Its work is complete in the fake; with
        // FAKE_HIP_DEFER pending operations keep their own view of the bytes.)
        enqueue_locked(*st);
        free_device_allocation_locked(start);
        RET(hipSuccess);
    }
    FAIL(hipErrorInvalidValue, "VMM-mapped memory is not freed with cuMemFreeAsync");
}

FAKE_HIP_API fake_cuMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    FAKE_ENTER("hipMemPoolSetAttribute", "pool=%p, attr=%d", (void *)pool, (int)attr);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (value == nullptr)
        FAIL(hipErrorInvalidValue, "value is NULL");
    switch (attr) {
    case hipMemPoolReuseFollowEventDependencies:
    case hipMemPoolReuseAllowOpportunistic:
    case hipMemPoolReuseAllowInternalDependencies: {
        int v = *static_cast<int *>(value) != 0; // any non-zero is 1, as with driver 580
        int &field = attr == hipMemPoolReuseFollowEventDependencies ? p->follow_event_deps
                     : attr == hipMemPoolReuseAllowOpportunistic    ? p->opportunistic
                                                                            : p->internal_deps;
        field = v;
        RET(hipSuccess);
    }
    case hipMemPoolAttrReleaseThreshold:
        p->release_threshold = *static_cast<uint64_t *>(value);
        RET(hipSuccess);
    case hipMemPoolAttrReservedMemHigh:
    case hipMemPoolAttrUsedMemHigh:
        if (*static_cast<uint64_t *>(value) != 0)
            FAIL(hipErrorInvalidValue, "a high-water mark can only be reset (set to 0)");
        if (attr == hipMemPoolAttrReservedMemHigh)
            p->reserved_high = p->reserved;
        else
            p->used_high = p->used;
        RET(hipSuccess);
    case hipMemPoolAttrReservedMemCurrent:
    case hipMemPoolAttrUsedMemCurrent:
        FAIL(hipErrorInvalidValue, "read-only attribute");
    default:
        FAIL(hipErrorInvalidValue, "unknown attribute");
    }
}

FAKE_HIP_API fake_cuMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value)
{
    FAKE_ENTER("hipMemPoolGetAttribute", "pool=%p, attr=%d", (void *)pool, (int)attr);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (value == nullptr)
        FAIL(hipErrorInvalidValue, "value is NULL");
    uint64_t *u64 = static_cast<uint64_t *>(value);
    switch (attr) {
    case hipMemPoolReuseFollowEventDependencies: *static_cast<int *>(value) = p->follow_event_deps; break;
    case hipMemPoolReuseAllowOpportunistic: *static_cast<int *>(value) = p->opportunistic; break;
    case hipMemPoolReuseAllowInternalDependencies: *static_cast<int *>(value) = p->internal_deps; break;
    case hipMemPoolAttrReleaseThreshold: *u64 = p->release_threshold; break;
    case hipMemPoolAttrReservedMemCurrent: *u64 = p->reserved; break;
    case hipMemPoolAttrReservedMemHigh: *u64 = p->reserved_high; break;
    case hipMemPoolAttrUsedMemCurrent: *u64 = p->used; break;
    case hipMemPoolAttrUsedMemHigh: *u64 = p->used_high; break;
    default: FAIL(hipErrorInvalidValue, "unknown attribute");
    }
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolTrimTo(hipMemPool_t pool, size_t minBytesToKeep)
{
    FAKE_ENTER("hipMemPoolTrimTo", "pool=%p, minBytesToKeep=%zu", (void *)pool, minBytesToKeep);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (!p->imported)
        release_cached_locked(*p, minBytesToKeep, false); // the fake's frees have all completed
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *map, size_t count)
{
    FAKE_ENTER("hipMemPoolSetAccess", "pool=%p, count=%zu", (void *)pool, count);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (map == nullptr && count != 0)
        FAIL(hipErrorInvalidValue, "map is NULL");
    for (size_t i = 0; i < count; ++i) {
        const hipMemAccessDesc &d = map[i];
        if (d.location.type != hipMemLocationTypeDevice)
            FAIL(hipErrorInvalidValue, "desc %zu: location.type must be DEVICE", i);
        if (!valid_device(d.location.id))
            FAIL(hipErrorInvalidDevice, "desc %zu: no device %d", i, d.location.id);
        if (d.flags != hipMemAccessFlagsProtNone && d.flags != hipMemAccessFlagsProtRead &&
            d.flags != hipMemAccessFlagsProtReadWrite)
            FAIL(hipErrorInvalidValue, "desc %zu: unknown flags %d", i, (int)d.flags);
        if (d.location.id == p->device && d.flags != hipMemAccessFlagsProtReadWrite)
            FAIL(hipErrorNotSupported, "desc %zu: the owning device keeps read-write access", i);
    }
    for (size_t i = 0; i < count; ++i)
        p->access[(size_t)map[i].location.id] = map[i].flags;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t memPool, hipMemLocation *location)
{
    FAKE_ENTER("hipMemPoolGetAccess", "memPool=%p", (void *)memPool);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(memPool, &p))
        FAIL(r, "not a live pool");
    if (flags == nullptr || location == nullptr)
        FAIL(hipErrorInvalidValue, "flags or location is NULL");
    if (location->type != hipMemLocationTypeDevice)
        FAIL(hipErrorInvalidValue, "location.type must be DEVICE");
    if (!valid_device(location->id))
        FAIL(hipErrorInvalidDevice, "no device %d", location->id);
    *flags = static_cast<hipMemAccessFlags>(p->access[(size_t)location->id]);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolExportToShareableHandle(void *handle_out, hipMemPool_t pool,
                                                    hipMemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("hipMemPoolExportToShareableHandle", "pool=%p, handleType=%d, flags=%llu", (void *)pool, (int)handleType,
               flags);
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (handle_out == nullptr || flags != 0)
        FAIL(hipErrorInvalidValue, "handle_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_IPC is set");
    if (handleType != hipMemHandleTypePosixFileDescriptor || !(p->handle_types & handleType) || p->imported)
        FAIL(hipErrorInvalidValue, "the pool was not made with handle type %d", (int)handleType);
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        FAIL(hipErrorOperatingSystem, "dup: %s", strerror(errno));
    p->exported = true;
    *static_cast<int *>(handle_out) = fd;
    OUT("fd=%d", fd);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolImportFromShareableHandle(hipMemPool_t *pool_out, void *handle,
                                                      hipMemAllocationHandleType handleType, unsigned long long flags)
{
    FAKE_ENTER("hipMemPoolImportFromShareableHandle", "handle=%p, handleType=%d, flags=%llu", handle, (int)handleType,
               flags);
    if (pool_out == nullptr || flags != 0)
        FAIL(hipErrorInvalidValue, "pool_out is NULL or flags is not 0");
    if (!config().ipc)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_IPC is set");
    if (handleType != hipMemHandleTypePosixFileDescriptor)
        FAIL(hipErrorInvalidValue, "handle type %d is not POSIX_FILE_DESCRIPTOR", (int)handleType);
    const int fd = (int)reinterpret_cast<intptr_t>(handle);
    FdHeader hdr;
    if (!read_shared_header(fd, kFdPool, &hdr))
        FAIL(hipErrorUnknown, "fd %d is not an exported pool (driver 580 says UNKNOWN)", fd);
    if (!valid_device(hdr.device))
        FAIL(hipErrorInvalidDevice, "the pool is on device %d, which this process does not have", hdr.device);
    std::shared_ptr<Pool> p = std::make_shared<Pool>();
    p->id = new_handle(kPoolTag);
    p->uid = hdr.uid;
    p->device = hdr.device;
    p->imported = true;
    p->handle_types = hdr.handle_types;
    p->capacity = hdr.size;
    p->access.assign(state().devices.size(), hipMemAccessFlagsProtNone);
    p->access[(size_t)p->device] = hipMemAccessFlagsProtReadWrite;
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); // the caller keeps its descriptor
    if (p->fd < 0)
        FAIL(hipErrorOperatingSystem, "dup: %s", strerror(errno));
    uint64_t base = 0;
    if (!region_alloc_locked(p->capacity, kGranularity, 0, &base))
        FAIL(hipErrorOutOfMemory, "no device address space left to map the pool");
    p->base = base;
    void *shadow = mmap(nullptr, p->capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, p->fd, (off_t)kFdHeader);
    if (shadow == MAP_FAILED || !region_map_fd_locked(base, p->capacity, p->fd, kFdHeader)) {
        if (shadow != MAP_FAILED)
            munmap(shadow, p->capacity);
        FAIL(hipErrorOutOfMemory, "mmap: %s", strerror(errno));
    }
    p->shadow = static_cast<char *>(shadow);
    state().pools[p->id] = p;
    *pool_out = reinterpret_cast<hipMemPool_t>(p->id);
    OUT("*pool_out=%p", (void *)*pool_out);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolExportPointer(hipMemPoolPtrExportData *shareData_out, fh_devptr ptr)
{
    FAKE_ENTER("hipMemPoolExportPointer", "ptr=0x%llx", (unsigned long long)ptr);
    if (shareData_out == nullptr)
        FAIL(hipErrorInvalidValue, "shareData_out is NULL");
    uint64_t start = 0;
    Segment *seg = find_segment_locked(ptr, &start);
    if (seg == nullptr || seg->kind != SegKind::PoolBlock || start != ptr)
        FAIL(hipErrorInvalidValue, "not the start of a pool allocation");
    const Pool &p = *seg->pool;
    if (!(p.handle_types & hipMemHandleTypePosixFileDescriptor))
        FAIL(hipErrorInvalidValue, "the pool is not shareable");
    if (!p.exported) // driver 580 refuses until the pool itself was exported
        FAIL(hipErrorInvalidValue, "export the pool (cuMemPoolExportToShareableHandle) before its pointers");
    PtrExport e;
    memset(&e, 0, sizeof e);
    memcpy(e.magic, k_ptr_magic, sizeof e.magic);
    e.uid = p.uid;
    e.offset = ptr - p.base;
    e.size = seg->size;
    e.check = ptr_check(e);
    memcpy(shareData_out, &e, sizeof e);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPoolImportPointer(fh_devptr *ptr_out, hipMemPool_t pool, hipMemPoolPtrExportData *shareData)
{
    FAKE_ENTER("hipMemPoolImportPointer", "pool=%p", (void *)pool);
    if (ptr_out == nullptr || shareData == nullptr)
        FAIL(hipErrorInvalidValue, "ptr_out or shareData is NULL");
    std::shared_ptr<Pool> p;
    if (hipError_t r = find_pool_locked(pool, &p))
        FAIL(r, "not a live pool");
    if (!p->imported)
        FAIL(hipErrorInvalidValue, "the pool was not imported");
    PtrExport e;
    memcpy(&e, shareData, sizeof e);
    if (memcmp(e.magic, k_ptr_magic, sizeof e.magic) != 0 || e.check != ptr_check(e))
        FAIL(hipErrorInvalidValue, "not export data of a pool pointer");
    if (e.uid != p->uid)
        FAIL(hipErrorInvalidValue, "the pointer belongs to another pool");
    if (e.size == 0 || e.offset > p->capacity || e.size > p->capacity - e.offset)
        FAIL(hipErrorInvalidValue, "the pointer lies outside the pool");
    const uint64_t addr = p->base + e.offset;
    uint64_t start = 0;
    Segment *seg = find_segment_locked(addr, &start);
    if (seg != nullptr) {
        if (start != addr || seg->kind != SegKind::PoolImport || seg->size != e.size)
            FAIL(hipErrorInvalidValue, "overlaps another imported pointer");
        ++seg->imports; // each import is freed on its own
    } else {
        Segment s;
        s.size = e.size;
        s.shadow = p->shadow + e.offset;
        s.kind = SegKind::PoolImport;
        s.device = p->device;
        s.pool = p;
        s.imports = 1;
        state().segments[addr] = std::move(s);
    }
    *ptr_out = addr;
    OUT("*ptr_out=0x%llx", (unsigned long long)addr);
    RET(hipSuccess);
}
