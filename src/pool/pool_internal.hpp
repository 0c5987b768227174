// Private data structures of the pool allocator (src/pool only).
//
// Memory is carved out of chunks taken from a PoolUpstream.  Every piece of a
// chunk is a Block; a block is in exactly one of three states:
//   LIVE    handed out; found through the live table (live_table.cpp)
//   CACHED  freed into a stream's cache of small blocks (per stream and pool)
//   FREE    in the pool's shared best-fit index, coalesced with free neighbours
// A freed block carries a tag (stream, free epoch) until its free is known to
// be safe for every stream; only then may it serve another stream.
//
// Locks, always taken in this order (never the reverse):
//   Registry::mu  ->  Pool::mu  ->  StreamState::caches_mutex  ->  StreamCache::mu
//   Pool::mu  ->  ChunkMap (write)  ->  Chunk::mu  ->  live table shard
//   Pool::mu  ->  StreamState::deps_mutex
// The hot path takes only one StreamCache::mu and one live table shard, one
// after the other.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "base/sharing.hpp"
#include "pool/pool.hpp"

namespace gpumem::detail::pool {

// ---------------------------------------------------------------------------
// Sizes

constexpr size_t kGranule = 256; // every block size and address is a multiple
constexpr unsigned kGranuleShift = 8;
// Requests up to this size use size classes and per-stream caches.
constexpr size_t kSmallMax = size_t(1) << 20;
// Anything larger is refused as OUT_OF_MEMORY, so that rounding never overflows.
constexpr size_t kMaxRequest = size_t(1) << 62;
constexpr uint64_t kMiB = uint64_t(1) << 20;

// Size bins, in granules: exact below 16, then 8 per power of two (<= 12.5%
// apart).  The shared index uses bins as segregated free lists; small requests
// are rounded up to a bin's lower bound, which makes the bins size classes.
constexpr unsigned bin_of(uint64_t granules)
{
    if (granules < 16)
        return unsigned(granules);
    unsigned e = 63u - unsigned(__builtin_clzll(granules)); // >= 4
    unsigned sub = unsigned(granules >> (e - 3)) & 7u;
    return 16u + (e - 4u) * 8u + sub;
}
constexpr uint64_t bin_min(unsigned bin)
{
    if (bin < 16)
        return bin;
    unsigned e = (bin - 16u) / 8u + 4u;
    unsigned sub = (bin - 16u) % 8u;
    return uint64_t(8u + sub) << (e - 3u);
}
constexpr unsigned kBins = 448; // covers kMaxRequest
constexpr unsigned kBinWords = kBins / 64;
static_assert(bin_of(kMaxRequest >> kGranuleShift) < kBins, "bins must cover every size");

constexpr unsigned kSmallClasses = bin_of(kSmallMax >> kGranuleShift) + 1;
constexpr uint8_t kLargeClass = 0xff;
static_assert(bin_min(kSmallClasses - 1) << kGranuleShift == kSmallMax, "kSmallMax must be a class size");

// Size class of a small request (1 <= bytes <= kSmallMax): the smallest bin
// whose lower bound holds it.
struct ClassTable {
    uint8_t of[(kSmallMax >> kGranuleShift) + 1] = {};
    constexpr ClassTable()
    {
        for (uint64_t g = 1; g <= (kSmallMax >> kGranuleShift); ++g) {
            unsigned k = bin_of(g);
            of[g] = uint8_t(bin_min(k) < g ? k + 1 : k);
        }
    }
};
inline constexpr ClassTable kClassTable{};
inline unsigned class_of(size_t bytes) { return kClassTable.of[(bytes + kGranule - 1) >> kGranuleShift]; }
inline size_t class_bytes(unsigned k) { return size_t(bin_min(k)) << kGranuleShift; }

inline size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// ---------------------------------------------------------------------------
// Locks

// A test-and-test-and-set lock for the short critical sections of the hot
// path (a few loads and stores): cheaper than a mutex when uncontended.
class SpinLock {
public:
    constexpr SpinLock() = default;
    void lock()
    {
        while (locked_.exchange(true, std::memory_order_acquire)) {
            for (unsigned spins = 0; locked_.load(std::memory_order_relaxed); ++spins)
                backoff(spins);
        }
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

private:
    static void backoff(unsigned spins);
    std::atomic<bool> locked_{false};
};

// ---------------------------------------------------------------------------
// Blocks and chunks

enum BlockState : uint8_t { kLive = 1, kCached = 2, kFree = 3 };

struct Chunk;

// Two lines, aligned as a prefetched pair: the hot path writes a block's
// fields, and blocks of different threads must not share a line or a pair.
struct alignas(k_false_sharing_range) Block {
    char *ptr = nullptr;
    size_t size = 0; // bytes, a multiple of kGranule; changes only under Chunk::mu
    Block *phys_prev = nullptr, *phys_next = nullptr; // neighbours in the chunk (Chunk::mu)
    Block *prev = nullptr, *next = nullptr;           // list of a cache bin or of the shared index
    Block *hash_next = nullptr;                        // live table chain
    Chunk *chunk = nullptr;
    Pool *pool = nullptr;
    size_t requested = 0; // bytes the user asked for (LIVE)
    // Who freed it and when; tag_stream == nullptr: free for every stream.
    StreamState *tag_stream = nullptr;
    uint64_t tag_id = 0;
    uint64_t tag_epoch = 0;
    // Read by coalescing under Pool::mu while the hot path flips LIVE <-> CACHED.
    std::atomic<uint8_t> state{0};
    uint8_t klass = kLargeClass; // small class (freed into a stream cache) or kLargeClass
    bool imported = false;
    // Who allocated it, when, on which stream (LIVE; written before the live
    // table publishes the block).  Separate fields: a Birth would not fit the line.
    uint32_t born_thread = 0;
    uint64_t born_ns = 0;
    void *born_stream = nullptr;

    void set_birth(const StreamState &s)
    {
        born_thread = current_thread_id();
        born_ns = coarse_now_ns();
        born_stream = s.handle;
    }

    void reset()
    {
        ptr = nullptr;
        size = requested = 0;
        phys_prev = phys_next = prev = next = hash_next = nullptr;
        chunk = nullptr;
        pool = nullptr;
        tag_stream = nullptr;
        tag_id = tag_epoch = 0;
        state.store(0, std::memory_order_relaxed);
        klass = kLargeClass;
        imported = false;
        born_thread = 0;
        born_ns = 0;
        born_stream = nullptr;
    }
};
static_assert(sizeof(Block) == 128, "a block is two cache lines");

struct Chunk {
    char *base = nullptr;
    size_t size = 0;
    Pool *pool = nullptr;
    Block *first = nullptr; // head of the block list, in address order
    bool imported = false;  // one imported block; nothing to give back upstream
    SpinLock mu;            // guards the block list and block sizes (see lookup)
    // Paged pools (Pool::page != 0): a bit per page, set while it is backed (Pool::mu).
    std::vector<uint64_t> backed;
    // With units (PoolUpstream::unit_pages()): a bit on each unit's first page (Pool::mu).
    std::vector<uint64_t> unit_starts;
};

// Block metadata is recycled, never freed one by one: splitting and merging
// must not call the heap on every free.
class BlockArena {
public:
    BlockArena() = default;
    BlockArena(const BlockArena &) = delete;
    BlockArena &operator=(const BlockArena &) = delete;
    Block *get(); // throws std::bad_alloc
    void put(Block *b)
    {
        b->next = free_;
        free_ = b;
    }

private:
    static constexpr size_t kSlab = 256;
    std::vector<std::unique_ptr<Block[]>> slabs_;
    Block *free_ = nullptr;
};

// ---------------------------------------------------------------------------
// The shared best-fit index: segregated free lists, one per bin, with a bitmap
// of the non-empty ones.  Blocks in a bin are smaller than any in a higher bin,
// so the smallest fitting block of the first bin with one is the best fit.
class FreeIndex {
public:
    void insert(Block *b);
    void remove(Block *b);
    // The smallest block of >= bytes for which ok(block) holds.
    template <class Pred> Block *best_fit(size_t bytes, Pred ok) const;
    template <class Fn> void for_each(Fn fn) const;
    // Every block of >= bytes, smaller bins first, until fn returns false.
    template <class Fn> void for_each_fit(size_t bytes, Fn fn) const;
    // Largest bins first (within a bin, any order), until fn returns false.
    template <class Fn> void for_each_largest_first(Fn fn) const;
    size_t tagged() const { return tagged_; }
    uint64_t bytes() const { return bytes_; }       // in the index now
    uint64_t inserted() const { return inserted_; } // ever inserted (a clock of frees)

private:
    Block *heads_[kBins] = {};
    uint64_t nonempty_[kBinWords] = {};
    size_t tagged_ = 0; // blocks with a tag: nothing to sweep when 0
    uint64_t bytes_ = 0;
    uint64_t inserted_ = 0;
};

template <class Pred> Block *FreeIndex::best_fit(size_t bytes, Pred ok) const
{
    unsigned bin = bin_of(bytes >> kGranuleShift);
    for (unsigned word = bin / 64; word < kBinWords; ++word) {
        uint64_t bits = nonempty_[word];
        if (word == bin / 64)
            bits &= ~uint64_t(0) << (bin % 64);
        while (bits) {
            unsigned b = word * 64 + unsigned(__builtin_ctzll(bits));
            bits &= bits - 1;
            Block *best = nullptr;
            for (Block *x = heads_[b]; x; x = x->next)
                if (x->size >= bytes && (!best || x->size < best->size) && ok(*x))
                    best = x;
            if (best)
                return best;
        }
    }
    return nullptr;
}

template <class Fn> void FreeIndex::for_each_fit(size_t bytes, Fn fn) const
{
    unsigned bin = bin_of(bytes >> kGranuleShift);
    for (unsigned word = bin / 64; word < kBinWords; ++word) {
        uint64_t bits = nonempty_[word];
        if (word == bin / 64)
            bits &= ~uint64_t(0) << (bin % 64);
        for (; bits; bits &= bits - 1)
            for (Block *x = heads_[word * 64 + unsigned(__builtin_ctzll(bits))]; x; x = x->next)
                if (x->size >= bytes && !fn(x))
                    return;
    }
}

template <class Fn> void FreeIndex::for_each(Fn fn) const
{
    for (unsigned word = 0; word < kBinWords; ++word)
        for (uint64_t bits = nonempty_[word]; bits; bits &= bits - 1)
            for (Block *x = heads_[word * 64 + unsigned(__builtin_ctzll(bits))]; x; x = x->next)
                fn(x);
}

template <class Fn> void FreeIndex::for_each_largest_first(Fn fn) const
{
    for (unsigned word = kBinWords; word-- > 0;)
        for (uint64_t bits = nonempty_[word]; bits;) {
            const unsigned top = 63u - unsigned(__builtin_clzll(bits));
            bits &= ~(uint64_t(1) << top);
            for (Block *x = heads_[word * 64 + top], *next; x; x = next) {
                next = x->next; // fn may take x out of the index
                if (!fn(x))
                    return;
            }
        }
}

// ---------------------------------------------------------------------------
// A stream's cache of small freed blocks for one pool: LIFO lists per class.
// Every block in it was freed on this stream, so it serves this stream at once.
struct alignas(k_false_sharing_range) StreamCache {
    SpinLock mu;
    // Identity: written under StreamState::caches_mutex and mu; pool == nullptr
    // once detached (the object is then recycled, never freed: a thread's memo
    // may still point at it).
    Pool *pool = nullptr;
    StreamState *stream = nullptr;
    uint64_t stream_id = 0;
    // Frees up to this epoch were free for every stream at the last
    // synchronisation (apply_release_thresholds); Pool::mu and mu.
    uint64_t released_epoch = 0;
    // Usage through this cache (may go negative: allocated here, freed on
    // another stream); summed when read.  `limit` is this cache's share of the
    // pool's used high-water mark: going over it takes the slow path that
    // raises the mark (see Pool::rebalance_usage).  Written under mu.
    std::atomic<int64_t> used{0};
    std::atomic<int64_t> limit{0};
    std::atomic<int64_t> live{0};
    const void *owner = nullptr; // thread of the last hot-path operation
    uint64_t ops = 0;            // hot-path operations, to tell an idle cache
    uint64_t ops_seen = 0;       // `ops` at the last rebalance (Pool::mu and mu)
    Block *bins[kSmallClasses] = {};
    StreamCache *next_free = nullptr; // recycle list
};

// ---------------------------------------------------------------------------
// Live blocks of every pool, by base address: 256 independently locked
// shards of intrusive hash chains (deallocate gets only a pointer).
class LiveTable {
public:
    void insert(Block *b);
    bool insert_unique(Block *b); // false (nothing inserted) when b->ptr is already live
    Block *remove(const void *ptr);
    // The LIVE block at ptr, made CACHED (it stays in the table while a stream
    // cache holds it, so that the hot path neither inserts nor removes);
    // nullptr when ptr is no live block's base.
    Block *claim(const void *ptr);
    bool find(const void *ptr, Allocation *out); // LIVE blocks only
    template <class Fn> void for_each(Fn fn); // fn(const Block &) under each shard's lock
    void clear(); // gpumem_finalize: forget everything

private:
    struct alignas(k_false_sharing_range) Shard {
        SpinLock mu;
        uint32_t mask = 0; // bucket count - 1; 0 until the first insert
        uint32_t count = 0;
        Block **buckets = nullptr;
        Block *first_buckets[16] = {}; // no heap allocation until a shard grows
    };
    // 1024 shards: with 16 threads each cycling a few blocks, two threads'
    // blocks share a shard (and bounce its lock's line) a quarter as often as with 256.
    static constexpr unsigned kShardBits = 10;
    static uint64_t hash(const void *ptr) { return (uint64_t(uintptr_t(ptr)) >> kGranuleShift) * 0x9E3779B97F4A7C15ull; }
    Shard &shard(uint64_t h) { return shards_[h >> (64 - kShardBits)]; }
    static Block **bucket(Shard &s, uint64_t h) { return &s.buckets[uint32_t(h >> 24) & s.mask]; }
    static void grow(Shard &s);
    void link(Shard &s, uint64_t h, Block *b);
    static Block **link_to(Shard &s, uint64_t h, const void *ptr);

    Shard shards_[1u << kShardBits];
};

// Every LIVE block (the CACHED ones in the table are skipped).
template <class Fn> void LiveTable::for_each(Fn fn)
{
    for (Shard &s : shards_) {
        std::lock_guard<SpinLock> lock(s.mu);
        for (uint32_t i = 0; s.buckets && i <= s.mask; ++i)
            for (Block *b = s.buckets[i]; b; b = b->hash_next)
                if (b->state.load(std::memory_order_acquire) == kLive)
                    fn(static_cast<const Block &>(*b));
    }
}

extern LiveTable g_live;

// The observers of pool growth and chunk release (set_growth_observer,
// set_release_observer; observers.cpp); nullptr: none.
extern std::atomic<GrowthObserver> g_growth_observer;
extern std::atomic<ReleaseObserver> g_release_observer;

// Identifies the calling thread (the address of one of its thread-locals).
const void *this_thread();

// Address ranges of every chunk (and imported block), for interior lookups (chunks.cpp).
namespace chunk_map {
void add(Chunk *chunk); // throws std::bad_alloc
void remove(Chunk *chunk);
void forget_all(); // drop every chunk (a fork child's pool::forget_all)
// Base of the block of any pool whose range holds ptr (LIVE or not).
bool block_base(const void *ptr, void **base);
// True when [ptr, ptr+size) meets any chunk of any pool.
bool overlaps(const void *ptr, size_t size);
} // namespace chunk_map

// ---------------------------------------------------------------------------

// Frees on `s` up to this epoch have finished on the device.
inline uint64_t completed_epoch(const StreamState &s)
{
    // On a synchronous stream every free has finished by the time it is enqueued.
    return s.synchronous ? s.free_tag()
                         : s.completed_epoch.load(std::memory_order_acquire);
}

// Raised whenever some stream learns that frees completed: a pool re-checks
// its tagged blocks only when it moved.
extern std::atomic<uint64_t> g_completion_gen;

// The stream asking for memory, with the event dependencies it has learned.
struct Requester {
    StreamState *stream = nullptr;
    uint64_t id = 0;
    const std::vector<std::pair<uint64_t, uint64_t>> *deps = nullptr; // nullptr: none to follow
};

class Pool { // declared a class in pool.hpp
public:
    uint64_t uid = 0; // for log messages
    std::unique_ptr<PoolUpstream> upstream;
    int32_t device = 0;
    uint64_t owner = 0; // the core's tag (its pool handle), set once before use
    uint64_t traced_owner = 0; // the last non-zero owner: the trace names a destroyed pool by its handle
    uint64_t max_size = 0;
    int32_t memory = GPUMEM_POOL_MEMORY_DEVICE;
    bool imported = false;
    size_t granularity = kGranule;

    std::mutex mu; // everything below except what says otherwise
    bool destroyed = false;

    int32_t follow_event_dependencies = 1;
    int32_t allow_opportunistic = 1;
    // Stored and reported only: gpumem cannot insert stream waits from inside
    // an allocation yet (no hook into the core), so it enables nothing more.
    int32_t allow_internal_dependencies = 1;
    uint64_t release_threshold = 0;

    // Memory held: backed pages of a paged pool, else the chunks' bytes.
    uint64_t reserved = 0;
    uint64_t reserved_high = 0;
    uint64_t address_bytes = 0; // the chunks' bytes (address space)
    // PoolUpstream::page_size(): free holes give their memory back (see back_for).
    size_t page = 0;
    // PoolUpstream::unit_pages(): 0, or the most pages backed as one unit.
    size_t unit_pages = 0;
    // index.inserted() before which a search for memory to unback finds too
    // little to be worth repeating.
    uint64_t unback_retry_at = 0;
    // Deferred decommit ("Design note: deferred decommit", pages.cpp).
    // The most the pool held within its budget (RESERVED_MEM_HIGH without
    // overshoots), decayed towards the recent periods' need at each purge: the budget is
    // the larger of it and what the blocks need now.
    uint64_t budget_high = 0;
    // The most the blocks needed since the last purge, and in each of the
    // decay_window periods before it (a ring, by purge count).
    uint64_t period_need = 0;
    static constexpr unsigned kMaxDecayWindow = 60;
    unsigned decay_window = 4; // Config::decay_periods
    uint64_t past_need[kMaxDecayWindow] = {};
    // The most an overshoot took the pool to (reserved with the pages it
    // backed past the budget) since the last purge, and in the periods
    // before it: with_recurring keeps what comes back.
    uint64_t period_overshoot = 0;
    uint64_t past_overshoot[kMaxDecayWindow] = {};
    unsigned purges = 0;
    // coarse_now_ns() at which pages over the budget go back (0: none due).
    uint64_t purge_at = 0;
    // index.inserted() at which the slow path next asks the streams which of
    // their queued frees completed (and marks them again), so that a mark has
    // had time to pass when the pool must give pages back.
    uint64_t learn_at = 0;
    std::vector<Chunk *> chunks;
    FreeIndex index;
    BlockArena arena;
    uint64_t swept_gen = 0; // completion generation of the last sweep

    // Caches of the streams that used this pool.
    std::vector<StreamCache *> caches;
    // Usage not held by a cache (slow-path and large blocks, detached caches).
    int64_t base_used = 0;
    int64_t base_limit = 0;
    int64_t base_live = 0;
    uint64_t used_high = 0;

    // Strict host mode's quarantine (Config::quarantine_bytes): freed blocks,
    // oldest first, with the free's stream order; not live, not yet free.
    struct Quarantined {
        Block *block;
        StreamState *stream; // nullptr once that stream is gone
        uint64_t stream_id;
        uint64_t epoch;
    };
    size_t quarantine_limit = 0;
    size_t quarantined_bytes = 0;
    std::deque<Quarantined> quarantine;

    // Marks (PoolUpstream::record_mark) in the order of the streams whose
    // frees the pool waits for: frees up to `epoch` completed once it passed.
    struct StreamMark {
        StreamState *stream;
        uint64_t stream_id;
        uint64_t epoch;
        void *mark;
        bool pending;
    };
    std::vector<StreamMark> marks;

    // Scratch space for the slow path, reused to spare the heap.
    std::vector<std::pair<uint64_t, uint64_t>> deps;
    std::vector<Block *> scratch;
    std::vector<std::pair<Block *, size_t>> runs; // unback_free: runs of free blocks
    std::vector<size_t> unit_bytes;                // back_for: the units of a run of pages

    // Everything below runs with mu held; each group is defined in the file named.
    // fit.cpp
    // A block of exactly `bytes` (a multiple of kGranule) that r's stream may
    // use, carved out of the index, growing the pool if needed; state LIVE.
    status_t find_fit(const Requester &r, size_t bytes, Block **out);
    // A freed block (tagged with its stream and epoch) into the index; frees
    // of its stream up to `released` are known safe for every stream.
    void free_block(Block *b, uint64_t released);
    // stream_cache.cpp
    // Cached blocks back to the index: with r, all of r's own and those of
    // other streams that r may reuse; without, those whose free completed.
    void flush_caches(const Requester *r);
    // Quarantined blocks, oldest first, into the index until at most
    // `keep_bytes` remain held back.
    void release_quarantined(size_t keep_bytes);
    // Keep used_high exact: see StreamCache::limit.
    void rebalance_usage(const void *thread);
    void reset_used_high();
    int64_t used_now() const;
    int64_t live_now() const;
    // stream_order.cpp
    Requester requester(StreamState &s);
    // Untag the index's blocks whose free became safe for every stream
    // (`synchronised`: a synchronisation made every completed free safe).
    void sweep(bool synchronised);
    void untag_stream(uint64_t stream_id); // the stream is gone: its frees are done
    void drop_marks(uint64_t stream_id); // the stream is gone (0: every stream's)
    // chunks.cpp
    // Give memory back until reserved <= target: a paged pool's pages under
    // free blocks first, then wholly free chunks.
    void release_free_chunks(uint64_t target);
    void release_all_chunks(); // the pool is going away
    void forget_imported(Block *b);
    // pages.cpp
    // Paged pools: give back what is over the budget once its delay ran out
    // (a clock read when nothing is due).
    void purge_if_due()
    {
        if (purge_at && !in_capture_scope()) [[unlikely]]
            purge_due();
    }
    // The program asked for memory back (trim, a synchronisation over the
    // release threshold): the budget starts again from what is in use.
    void reset_budget();
    uint64_t backed_bytes(const Chunk &chunk) const; // memory under the chunk

private:
    // fit.cpp
    Block *find_free(const Requester &r, size_t bytes, bool *untag);
    void carve(Block *b, size_t bytes, bool untag);
    void insert_coalesced(Block *b);
    // stream_order.cpp
    // Find out which frees in the index completed, from the streams they
    // were queued on: an idle stream's all; a busy one's up to the mark last
    // recorded on it that has passed (a new mark is recorded for next time).
    // `wait`: wait for the busy ones instead (before the pool gives up).
    void learn_completed_frees(bool wait);
    void untag_where(bool (*pred)(const Block &, uint64_t), uint64_t arg);
    // chunks.cpp
    status_t grow(size_t bytes);
    uint64_t chunk_step() const;
    void observe_growth(int64_t delta);
    void add_chunk(void *mem, size_t size);
    bool chunk_releasable(const Chunk &chunk) const;
    void release_chunk(size_t index);
    // pages.cpp
    // Paged pools: back the pages under b's first `bytes` (b free, about to
    // be carved), first unbacking free memory elsewhere if the pool would
    // otherwise hold more than 1/kSlack over what its blocks use.
    status_t back_for(Block &b, size_t bytes);
    // Unback the pages wholly inside free blocks of at least `min_block`
    // bytes whose frees completed, largest first, until `want` bytes went
    // back; not `keep`'s.  `why` ends the debug log's line.
    uint64_t unback_free(uint64_t want, const Block *keep, size_t min_block, const char *why);
    void purge_due();
    // `base` (the budget proper), raised to the overshoots of the recent
    // periods (period_overshoot, past_overshoot: a recurring pattern's), by
    // at most 1/kDefer of it.
    uint64_t with_recurring(uint64_t base) const;
    // After a carving: the period's need, and the deadline armed when the
    // pool holds more than its blocks need.
    void note_use();
    // Bytes the blocks use (cached blocks count), plus `bytes` about to be carved.
    uint64_t in_use(size_t bytes) const { return address_bytes - index.bytes() + bytes; }
    uint64_t slack_for(uint64_t used) const;
    // True when the pages under b's first `bytes` are all backed.
    bool backed_under(const Block &b, size_t bytes) const;
    // Pages under b's first `bytes` that are not backed.
    size_t unbacked_under(const Block &b, size_t bytes) const;
    void unback_pages(Chunk &chunk, size_t first, size_t end);
};

// Stream caches (stream_cache.cpp).
// Bumped by destroy_all: the threads' memos of their caches made before then are stale.
extern std::atomic<uint64_t> g_memo_gen;
StreamCache *find_cache(Pool *p, StreamState &s);
// Unhook a cache from its stream and its pool (Pool::mu held): its usage
// folds into the pool's base counters and its blocks go back to the index.
void detach_cache(Pool &p, StreamCache *c, bool untag);

// ---------------------------------------------------------------------------
// Stream order of a freed block (see "Design note: stream order", stream_state.hpp)

inline void clear_tag(Block *b)
{
    b->tag_stream = nullptr;
    b->tag_id = 0;
    b->tag_epoch = 0;
}

// Safe for every stream: untagged, freed before the stream's last
// synchronisation (`released`), or completed while opportunistic reuse is on.
inline bool safe_for_all(const Pool &p, const Block &b, uint64_t released)
{
    return !b.tag_stream || b.tag_epoch <= released ||
           (p.allow_opportunistic && b.tag_epoch <= completed_epoch(*b.tag_stream));
}

// Work on r's stream comes after the free: it was freed on that stream, or
// the stream waited for an event recorded after the free.
inline bool ordered_before(const Requester &r, const Block &b)
{
    if (b.tag_id == r.id)
        return true;
    if (r.deps)
        for (const auto &dep : *r.deps)
            if (dep.first == b.tag_id && dep.second >= b.tag_epoch)
                return true;
    return false;
}

inline bool free_completed(const Block &b, uint64_t) { return b.tag_epoch <= completed_epoch(*b.tag_stream); }

// ---------------------------------------------------------------------------

// A live block as the core sees it (its pool outlives its live blocks).
// Field by field into the caller's record: building a temporary and copying
// it made the compiler stage it through the stack with mixed-width stores and
// wide reloads (store-forwarding stalls, a quarter of a free's cost).
inline void fill_allocation(const Block &b, Allocation *a)
{
    const Pool &p = *b.pool;
    a->pool = b.pool;
    a->base = b.ptr;
    a->size = b.requested;
    a->device = p.device;
    a->imported = b.imported;
    a->owner = p.owner;
    a->memory = p.memory;
    a->birth.time_ns = b.born_ns;
    a->birth.stream = b.born_stream;
    a->birth.thread = b.born_thread;
}

inline Allocation allocation_of(const Block &b)
{
    Allocation a;
    fill_allocation(b, &a);
    return a;
}

} // namespace gpumem::detail::pool
