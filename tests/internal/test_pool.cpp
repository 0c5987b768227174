// Unit test of gpumem's stream-ordered pool allocator, through pool.hpp,
// over test upstreams (pool_test_util.hpp).  Streams are set up as the core
// sets them up: epochs, completions and event dependencies are reported to
// the pool by hand here.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pool/pool_internal.hpp"
#include "pool_test_util.hpp"

using namespace pool_test;
namespace pool = gpumem::detail::pool;

namespace {

int g_failures = 0;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__, __LINE__, #cond,             \
                         gpumem::detail::last_error_message());                                                        \
            ++g_failures;                                                                                              \
        }                                                                                                              \
    } while (0)
#define CHECK_EQ(a, b)                                                                                                 \
    do {                                                                                                               \
        auto a_ = (a);                                                                                                 \
        auto b_ = (b);                                                                                                 \
        if (!(a_ == b_)) {                                                                                             \
            std::fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %llu != %llu (last error: %s)\n", __FILE__,        \
                         __LINE__, #a, #b, (unsigned long long)a_, (unsigned long long)b_,                            \
                         gpumem::detail::last_error_message());                                                        \
            ++g_failures;                                                                                              \
        }                                                                                                              \
    } while (0)

constexpr size_t kMiB = size_t(1) << 20;

struct TestPool {
    std::shared_ptr<UpstreamStats> stats = std::make_shared<UpstreamStats>();
    pool::Pool *p = nullptr;
    explicit TestPool(uint64_t max_size = 0, int32_t device = 0, uint64_t capacity = UINT64_MAX)
    {
        pool::Config config;
        config.device = device;
        config.max_size = max_size;
        if (pool::create(std::make_unique<FakeUpstream>(stats, 2 * kMiB, capacity), config, &p) != GPUMEM_SUCCESS)
            std::abort();
    }
    explicit TestPool(std::unique_ptr<PoolUpstream> upstream, std::shared_ptr<UpstreamStats> s) : stats(std::move(s))
    {
        if (pool::create(std::move(upstream), pool::Config{}, &p) != GPUMEM_SUCCESS)
            std::abort();
    }
    ~TestPool()
    {
        if (p)
            pool::destroy(p);
    }
    operator pool::Pool *() { return p; }
    void *alloc(size_t size, StreamState &s)
    {
        void *ptr = nullptr;
        status_t st = pool::allocate(p, size, s, &ptr);
        if (st != GPUMEM_SUCCESS)
            return nullptr;
        if (uintptr_t(ptr) % 256 != 0) {
            std::fprintf(stderr, "misaligned pointer %p\n", ptr);
            ++g_failures;
        }
        return ptr;
    }
    void set_i32(int32_t attr, int32_t v) { CHECK_EQ(pool::set_attribute(p, attr, &v), GPUMEM_SUCCESS); }
    void set_u64(int32_t attr, uint64_t v) { CHECK_EQ(pool::set_attribute(p, attr, &v), GPUMEM_SUCCESS); }
    uint64_t reserved() { return attr_u64(p, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT); }
    uint64_t used() { return attr_u64(p, GPUMEM_POOL_ATTR_USED_MEM_CURRENT); }
};

status_t release(void *ptr, StreamState &s) { return pool::deallocate(ptr, s, nullptr); }

// Bytes of the block that serves a request (what USED_MEM counts).
size_t block_bytes(size_t size)
{
    return size <= pool::kSmallMax ? pool::class_bytes(pool::class_of(size)) : pool::round_up(size, 256);
}

void test_same_stream_reuse()
{
    TestPool tp;
    Stream s1, s2;
    void *a = tp.alloc(1000, s1);
    CHECK(a);
    CHECK_EQ(release(a, s1), GPUMEM_SUCCESS);
    CHECK(tp.alloc(1000, s1) == a); // at once, on the same stream
    void *b = tp.alloc(1000, s2);
    CHECK(b && b != a);
    CHECK_EQ(release(a, s1), GPUMEM_SUCCESS);
    void *c = tp.alloc(1000, s2); // a is still pending on s1
    CHECK(c && c != a);

    void *big = tp.alloc(3 * kMiB, s1);
    CHECK(big);
    CHECK_EQ(release(big, s1), GPUMEM_SUCCESS);
    void *other = tp.alloc(3 * kMiB, s2);
    CHECK(other && other != big);
    CHECK(tp.alloc(3 * kMiB, s1) == big);
    CHECK_EQ(pool::outstanding(tp), size_t(4));
}

// One 2 MiB chunk at most, so that an allocation either reuses the freed
// block or fails: the reuse rules become visible.
void test_opportunistic_reuse()
{
    for (size_t size : {2 * kMiB, kMiB}) { // large blocks in the index; small ones in stream caches
        TestPool tp(2 * kMiB);
        Stream s1, s2;
        std::vector<void *> mine;
        for (size_t n = 0; n < 2 * kMiB / size; ++n)
            mine.push_back(tp.alloc(size, s1));
        for (void *p : mine)
            CHECK_EQ(release(p, s1), GPUMEM_SUCCESS);
        CHECK(tp.alloc(size, s2) == nullptr); // pending on s1: never handed out
        pool::on_completed(s1, pool::mark(s1).epoch);
        void *again = tp.alloc(size, s2);
        CHECK(again && std::find(mine.begin(), mine.end(), again) != mine.end());
    }
}

// Without a max_size the pool grows instead of failing: a block that may
// not be reused shows as a different pointer.
void test_opportunistic_off()
{
    for (size_t size : {2 * kMiB, kMiB}) {
        TestPool tp;
        tp.set_i32(GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0);
        Stream s1, s2, s3;
        std::vector<void *> mine;
        for (size_t n = 0; n < 2 * kMiB / size; ++n)
            mine.push_back(tp.alloc(size, s1));
        for (void *p : mine)
            release(p, s1);
        pool::on_completed(s1, pool::mark(s1).epoch);
        void *other = tp.alloc(size, s2); // completed, but not ordered before s2
        CHECK(other && std::find(mine.begin(), mine.end(), other) == mine.end());
        tp.set_u64(GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX);
        pool::apply_release_thresholds(-1); // a synchronisation: now free for all
        bool reused = false; // once the index's own free space is used up
        for (int i = 0; i < 3; ++i)
            reused |= std::find(mine.begin(), mine.end(), tp.alloc(size, s3)) != mine.end();
        CHECK(reused);
    }
    // Out of memory, completed frees go back to the upstream even so: nothing
    // can touch them any more.
    TestPool tp(2 * kMiB);
    tp.set_i32(GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0);
    Stream s1, s2;
    void *a = tp.alloc(2 * kMiB, s1);
    release(a, s1);
    CHECK(tp.alloc(2 * kMiB, s2) == nullptr); // pending: never
    pool::on_completed(s1, pool::mark(s1).epoch);
    void *b = tp.alloc(2 * kMiB, s2);
    CHECK(b && b != a);
    CHECK_EQ(tp.stats->held, uint64_t(2 * kMiB));
}

void test_event_dependencies()
{
    for (size_t size : {2 * kMiB, kMiB}) {
        TestPool tp(2 * kMiB);
        tp.set_i32(GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0);
        Stream s1, s2, s3;
        std::vector<void *> mine;
        for (size_t n = 0; n < 2 * kMiB / size; ++n)
            mine.push_back(tp.alloc(size, s1));
        EventMark before = pool::mark(s1);
        for (void *p : mine)
            release(p, s1);
        pool::add_dependency(s2, before); // recorded before the frees: orders nothing
        CHECK(tp.alloc(size, s2) == nullptr);
        EventMark after = pool::mark(s1);
        tp.set_i32(GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 0);
        pool::add_dependency(s3, after);
        CHECK(tp.alloc(size, s3) == nullptr); // not followed
        tp.set_i32(GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 1);
        void *again = tp.alloc(size, s3);
        CHECK(again && std::find(mine.begin(), mine.end(), again) != mine.end());
        pool::add_dependency(s2, after); // raises s2's entry for s1
        {
            std::lock_guard<std::mutex> lock(s2.state.deps_mutex);
            CHECK_EQ(s2.state.deps.size(), size_t(1));
            CHECK_EQ(s2.state.deps[0].second, after.epoch);
        }
        if (size == kMiB)
            CHECK(tp.alloc(size, s2) != nullptr); // the second cached block
    }
}

void test_synchronous_stream()
{
    TestPool tp;
    Stream host(true), s2;
    void *a = tp.alloc(2 * kMiB, host);
    release(a, host);
    CHECK(tp.alloc(2 * kMiB, s2) == a); // every free on a synchronous stream has completed
    void *x = tp.alloc(1000, host);
    release(x, host);
    CHECK(tp.alloc(1000, s2) != x); // s2's own cache is empty: no flush needed yet
    tp.set_i32(GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0);
    Stream s3;
    void *b = tp.alloc(3 * kMiB, host);
    release(b, host);
    void *c = tp.alloc(3 * kMiB, s3);
    CHECK(c && c != b);
}

void test_stream_destroyed()
{
    TestPool tp(2 * kMiB);
    auto s1 = std::make_unique<Stream>();
    Stream s2;
    void *x = tp.alloc(kMiB, *s1), *y = tp.alloc(kMiB, *s1);
    release(x, *s1);
    release(y, *s1);
    pool::add_dependency(*s1, pool::mark(s2));
    pool::on_stream_destroyed(*s1); // its work is done: its frees are free for all
    CHECK(s1->state.caches.empty());
    CHECK(s1->state.deps.empty());
    CHECK_EQ(s1->state.free_epoch.load(), uint64_t(0));
    void *big = tp.alloc(2 * kMiB, s2); // x and y coalesced again
    CHECK(big == std::min(x, y));
    release(big, s2);
    // The core recycles the state for a new stream.
    s1->state.id = next_stream_id();
    void *z = tp.alloc(2 * kMiB, *s1);
    CHECK(z == nullptr); // big is pending on s2
    pool::on_completed(s2, pool::mark(s2).epoch);
    CHECK(tp.alloc(2 * kMiB, *s1) == big);
}

void test_release_threshold()
{
    TestPool tp(0, 1);
    CHECK_EQ(pool::device_of(tp), int32_t(1));
    Stream s(false, 1);
    void *a = tp.alloc(kMiB, s);
    void *b = tp.alloc(5 * kMiB, s);
    CHECK(a && b);
    CHECK(tp.reserved() >= 6 * kMiB);
    release(a, s);
    release(b, s);
    pool::apply_release_thresholds(-1);
    CHECK(tp.reserved() >= 6 * kMiB); // the frees may still be running
    pool::on_completed(s, pool::mark(s).epoch);
    pool::apply_release_thresholds(0); // another device
    CHECK(tp.reserved() >= 6 * kMiB);
    pool::apply_release_thresholds(1);
    CHECK_EQ(tp.reserved(), uint64_t(0)); // threshold 0: everything goes
    CHECK(tp.stats->held == 0);

    // Above a threshold, down to it and no further than whole chunks allow.
    tp.set_u64(GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, 4 * kMiB);
    std::vector<void *> blocks;
    for (int i = 0; i < 5; ++i)
        blocks.push_back(tp.alloc(2 * kMiB, s)); // chunks of 2 MiB
    CHECK_EQ(tp.reserved(), uint64_t(10 * kMiB));
    for (void *p : blocks)
        release(p, s);
    s.synchronize();
    CHECK_EQ(tp.reserved(), uint64_t(4 * kMiB));
    CHECK(tp.stats->held == 4 * kMiB);
    CHECK_EQ(attr_u64(tp, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH), uint64_t(10 * kMiB));
}

void test_trim_to()
{
    TestPool tp;
    Stream s(true);
    std::vector<void *> blocks;
    for (int i = 0; i < 6; ++i)
        blocks.push_back(tp.alloc(2 * kMiB, s));
    void *small = tp.alloc(4096, s); // keeps one chunk
    CHECK(small);
    uint64_t before = tp.reserved();
    CHECK(before >= 14 * kMiB);
    for (void *p : blocks)
        release(p, s);
    CHECK_EQ(tp.reserved(), before); // threshold is applied only at synchronisation
    CHECK_EQ(pool::trim_to(tp, 5 * kMiB), GPUMEM_SUCCESS);
    CHECK(tp.reserved() <= 5 * kMiB && tp.reserved() > 0);
    CHECK_EQ(pool::trim_to(tp, 0), GPUMEM_SUCCESS);
    CHECK(tp.reserved() > 0); // the live block's chunk stays
    release(small, s);
    CHECK_EQ(pool::trim_to(tp, 0), GPUMEM_SUCCESS);
    CHECK_EQ(tp.reserved(), uint64_t(0));
    CHECK_EQ(tp.stats->held, uint64_t(0));
}

void test_attributes()
{
    TestPool tp;
    int32_t v32 = -1;
    for (int32_t attr : {GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                         GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES}) {
        CHECK_EQ(pool::get_attribute(tp, attr, &v32), GPUMEM_SUCCESS);
        CHECK_EQ(v32, int32_t(1));
        tp.set_i32(attr, 0);
        CHECK_EQ(pool::get_attribute(tp, attr, &v32), GPUMEM_SUCCESS);
        CHECK_EQ(v32, int32_t(0));
        for (int32_t bad : {2, -1, 100}) {
            CHECK_EQ(pool::set_attribute(tp, attr, &bad), GPUMEM_ERROR_INVALID_VALUE);
            CHECK(std::strstr(gpumem::detail::last_error_message(), "0 or 1"));
        }
        tp.set_i32(attr, 1);
    }
    uint64_t v = 7;
    CHECK_EQ(attr_u64(tp, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD), uint64_t(0));
    tp.set_u64(GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, 12345);
    CHECK_EQ(attr_u64(tp, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD), uint64_t(12345));
    for (int32_t attr : {GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, GPUMEM_POOL_ATTR_USED_MEM_CURRENT}) {
        CHECK_EQ(pool::set_attribute(tp, attr, &v), GPUMEM_ERROR_INVALID_VALUE);
        CHECK(std::strstr(gpumem::detail::last_error_message(), "read-only"));
    }
    for (int32_t attr : {GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, GPUMEM_POOL_ATTR_USED_MEM_HIGH})
        CHECK_EQ(pool::set_attribute(tp, attr, &v), GPUMEM_ERROR_INVALID_VALUE);
    for (int32_t attr : {0, 9, -3, 1000}) {
        CHECK_EQ(pool::set_attribute(tp, attr, &v), GPUMEM_ERROR_INVALID_VALUE);
        CHECK(std::strstr(gpumem::detail::last_error_message(), "unknown pool attribute"));
        CHECK_EQ(pool::get_attribute(tp, attr, &v), GPUMEM_ERROR_INVALID_VALUE);
    }
    CHECK_EQ(pool::get_attribute(tp, GPUMEM_POOL_ATTR_USED_MEM_HIGH, nullptr), GPUMEM_ERROR_INVALID_VALUE);

    // Reserved and its high-water mark, and resetting it.
    Stream s(true);
    void *a = tp.alloc(3 * kMiB, s);
    void *b = tp.alloc(3 * kMiB, s);
    release(b, s);
    CHECK_EQ(pool::trim_to(tp, 0), GPUMEM_SUCCESS);
    uint64_t reserved = tp.reserved();
    CHECK(reserved >= 3 * kMiB && reserved < 6 * kMiB);
    CHECK(attr_u64(tp, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH) >= 6 * kMiB);
    tp.set_u64(GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, 0);
    CHECK_EQ(attr_u64(tp, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH), reserved);
    release(a, s);
}

// USED_MEM_CURRENT/HIGH against a model, single-threaded, over several
// streams (counters live in per-stream caches) with resets.
void test_used_high_exact()
{
    TestPool tp;
    Stream streams[3] = {Stream(false), Stream(true), Stream(false)};
    std::mt19937_64 rng(7);
    struct Live { void *p; size_t bytes; };
    std::vector<Live> live;
    uint64_t used = 0, high = 0;
    for (int step = 0; step < 20000; ++step) {
        StreamState &s = streams[rng() % 3];
        if (live.empty() || rng() % 100 < 55) {
            size_t size = rng() % 8 == 0 ? 1 + rng() % (3 * kMiB) : 1 + rng() % 20000;
            void *p = tp.alloc(size, s);
            CHECK(p);
            live.push_back({p, block_bytes(size)});
            used += block_bytes(size);
            high = std::max(high, used);
        } else {
            size_t i = rng() % live.size();
            CHECK_EQ(release(live[i].p, s), GPUMEM_SUCCESS);
            used -= live[i].bytes;
            live[i] = live.back();
            live.pop_back();
        }
        if (step % 97 == 0) {
            CHECK_EQ(tp.used(), used);
            CHECK_EQ(attr_u64(tp, GPUMEM_POOL_ATTR_USED_MEM_HIGH), high);
        }
        if (step % 1009 == 0) {
            tp.set_u64(GPUMEM_POOL_ATTR_USED_MEM_HIGH, 0);
            high = used;
            CHECK_EQ(attr_u64(tp, GPUMEM_POOL_ATTR_USED_MEM_HIGH), high);
        }
        if (step % 3001 == 0) {
            for (Stream &st : streams)
                st.synchronize();
        }
    }
    CHECK_EQ(pool::outstanding(tp), live.size());
    for (Live &l : live)
        release(l.p, streams[0]);
    CHECK_EQ(tp.used(), uint64_t(0));
    CHECK_EQ(pool::outstanding(tp), size_t(0));
}

void test_out_of_memory()
{
    {
        TestPool tp(4 * kMiB);
        Stream s(true);
        void *a = tp.alloc(3 * kMiB, s);
        CHECK(a);
        CHECK(tp.alloc(3 * kMiB, s) == nullptr);
        CHECK(std::strstr(gpumem::detail::last_error_message(), "max_size"));
        CHECK(tp.alloc(5 * kMiB, s) == nullptr);
        CHECK(std::strstr(gpumem::detail::last_error_message(), "max_size"));
        void *p = nullptr;
        for (size_t huge : {SIZE_MAX, SIZE_MAX - 100, size_t(1) << 63, pool::kMaxRequest + 1}) {
            CHECK_EQ(pool::allocate(tp, huge, s, &p), GPUMEM_ERROR_OUT_OF_MEMORY);
            CHECK(std::strlen(gpumem::detail::last_error_message()) > 0);
        }
        release(a, s);
        CHECK(tp.alloc(4 * kMiB, s) != nullptr);
        CHECK(tp.reserved() <= 4 * kMiB);
    }
    {
        // No max_size: huge requests fail at the upstream, never by overflow.
        TestPool tp(0, 0, 64 * kMiB);
        Stream s(true);
        void *p = nullptr;
        CHECK_EQ(pool::allocate(tp, SIZE_MAX, s, &p), GPUMEM_ERROR_OUT_OF_MEMORY);
        CHECK_EQ(pool::allocate(tp, pool::kMaxRequest, s, &p), GPUMEM_ERROR_OUT_OF_MEMORY);
        CHECK(std::strstr(gpumem::detail::last_error_message(), "fake upstream"));
        CHECK_EQ(pool::outstanding(tp), size_t(0));
    }
    {
        // Upstream out of memory: free chunks go back and the allocation is retried.
        TestPool tp(0, 0, 4 * kMiB);
        Stream s(true);
        void *a = tp.alloc(1536 * 1024, s), *b = tp.alloc(1536 * 1024, s);
        CHECK(a && b);
        CHECK_EQ(tp.stats->held, uint64_t(4 * kMiB)); // two 2 MiB chunks
        release(a, s);
        release(b, s);
        void *c = tp.alloc(3 * kMiB, s);
        CHECK(c);
        CHECK_EQ(tp.stats->held, uint64_t(4 * kMiB)); // one 4 MiB chunk now
        CHECK(tp.alloc(3 * kMiB, s) == nullptr);
        CHECK_EQ(pool::outstanding(tp), size_t(1));
    }
}

void test_destroy_with_outstanding()
{
    auto stats = std::make_shared<UpstreamStats>();
    pool::Pool *p = nullptr;
    CHECK_EQ(pool::create(std::make_unique<FakeUpstream>(stats), pool::Config{}, &p), GPUMEM_SUCCESS);
    Stream s1, s2(true);
    void *small = nullptr, *large = nullptr, *other = nullptr;
    CHECK_EQ(pool::allocate(p, 100, s1, &small), GPUMEM_SUCCESS);
    CHECK_EQ(pool::allocate(p, 3 * kMiB, s1, &large), GPUMEM_SUCCESS);
    CHECK_EQ(pool::allocate(p, 100, s1, &other), GPUMEM_SUCCESS);
    release(other, s1); // cached in s1's cache
    CHECK_EQ(pool::outstanding(p), size_t(2));
    pool::destroy(p);
    pool::Allocation a;
    CHECK(pool::lookup(small, &a) && a.pool == p && a.size == 100);
    CHECK(!stats->destroyed);
    CHECK_EQ(pool::deallocate(small, s2, &a), GPUMEM_SUCCESS);
    CHECK(!stats->destroyed && stats->held > 0);
    CHECK_EQ(pool::deallocate(large, s1, &a), GPUMEM_SUCCESS);
    CHECK(a.size == 3 * kMiB);
    CHECK(stats->destroyed); // the last free deleted the pool
    CHECK_EQ(stats->held, uint64_t(0));
    CHECK(!stats->bad_free);
    CHECK_EQ(pool::deallocate(large, s1, &a), GPUMEM_ERROR_INVALID_POINTER);

    // Nothing outstanding: gone at once.
    auto stats2 = std::make_shared<UpstreamStats>();
    CHECK_EQ(pool::create(std::make_unique<FakeUpstream>(stats2), pool::Config{}, &p), GPUMEM_SUCCESS);
    CHECK_EQ(pool::allocate(p, 100, s1, &small), GPUMEM_SUCCESS);
    release(small, s1);
    pool::destroy(p);
    CHECK(stats2->destroyed);
    CHECK_EQ(stats2->held, uint64_t(0));
    CHECK(s1.state.caches.empty());
}

void test_lookup_and_invalid_free()
{
    TestPool tp;
    Stream s;
    char *a = static_cast<char *>(tp.alloc(1000, s));
    char *b = static_cast<char *>(tp.alloc(3 * kMiB + 5, s));
    pool::Allocation info;
    CHECK(pool::lookup(a, &info) && info.base == a && info.size == 1000 && info.pool == tp.p && !info.imported);
    CHECK(pool::lookup(a + 500, &info) && info.base == a);
    CHECK(pool::lookup(a + 999, &info) && info.base == a);
    CHECK(!pool::lookup(a + 1000, &info)); // rounding, not part of the allocation
    CHECK(pool::lookup(b + 3 * kMiB + 4, &info) && info.base == b && info.size == 3 * kMiB + 5);
    CHECK(!pool::lookup(b + 3 * kMiB + 5, &info));
    int local = 0;
    CHECK(!pool::lookup(&local, &info));
    CHECK(!pool::lookup(nullptr, &info));

    CHECK_EQ(release(a + 256, s), GPUMEM_ERROR_INVALID_POINTER); // interior: nothing changes
    CHECK(pool::lookup(a, &info));
    CHECK_EQ(release(&local, s), GPUMEM_ERROR_INVALID_POINTER);
    CHECK_EQ(release(nullptr, s), GPUMEM_ERROR_INVALID_POINTER);
    // No message here: the core explains a bad free (tests/test_pool.c checks its words).
    CHECK_EQ(pool::deallocate(a, s, &info), GPUMEM_SUCCESS);
    CHECK(info.base == a && info.size == 1000 && info.device == 0);
    CHECK_EQ(release(a, s), GPUMEM_ERROR_INVALID_POINTER); // double free
    CHECK(!pool::lookup(a, &info));
    CHECK(!pool::lookup(a + 10, &info));
    CHECK_EQ(release(b, s), GPUMEM_SUCCESS);
    CHECK_EQ(release(b, s), GPUMEM_ERROR_INVALID_POINTER);
    CHECK_EQ(pool::outstanding(tp), size_t(0));
}

void test_ipc()
{
    auto stats = std::make_shared<UpstreamStats>();
    TestPool exporter(std::make_unique<SharedFakeUpstream>(stats), stats);
    TestPool importer(std::make_unique<ImportedFakeUpstream>(), std::make_shared<UpstreamStats>());
    TestPool plain;
    Stream s;
    CHECK(pool::is_imported(importer) && !pool::is_imported(exporter));
    int fd = -1;
    CHECK_EQ(pool::export_fd(exporter, &fd), GPUMEM_SUCCESS);
    CHECK_EQ(fd, 42);
    CHECK_EQ(pool::export_fd(plain, &fd), GPUMEM_ERROR_INVALID_VALUE);

    char *a = static_cast<char *>(exporter.alloc(5000, s));
    gpumem_pool_ptr_export_data_t data;
    CHECK_EQ(pool::export_pointer(a, &data), GPUMEM_SUCCESS);
    CHECK_EQ(pool::export_pointer(a + 256, &data), GPUMEM_ERROR_INVALID_POINTER);
    CHECK_EQ(pool::export_pointer(a, &data), GPUMEM_SUCCESS);
    void *q = nullptr;
    CHECK_EQ(pool::import_pointer(plain, &data, &q), GPUMEM_ERROR_INVALID_VALUE);
    CHECK_EQ(pool::import_pointer(importer, &data, &q), GPUMEM_SUCCESS);
    CHECK(uintptr_t(q) == ImportedFakeUpstream::kMapBase + (uintptr_t(a) - (uintptr_t(1) << 44)));
    pool::Allocation info;
    CHECK(pool::lookup(q, &info) && info.imported && info.size == 5000 && info.pool == importer.p);
    CHECK(pool::lookup(static_cast<char *>(q) + 4999, &info) && info.base == q);
    void *q2 = nullptr;
    CHECK_EQ(pool::import_pointer(importer, &data, &q2), GPUMEM_ERROR_INVALID_VALUE); // already imported
    CHECK_EQ(pool::outstanding(importer), size_t(1));
    CHECK_EQ(attr_u64(importer, GPUMEM_POOL_ATTR_USED_MEM_CURRENT), uint64_t(5120));
    void *r = nullptr;
    CHECK_EQ(pool::allocate(importer, 100, s, &r), GPUMEM_ERROR_INVALID_VALUE);
    CHECK(std::strstr(gpumem::detail::last_error_message(), "imported pools cannot allocate"));
    CHECK_EQ(pool::deallocate(q, s, &info), GPUMEM_SUCCESS);
    CHECK(info.imported);
    CHECK_EQ(release(q, s), GPUMEM_ERROR_INVALID_POINTER);
    CHECK(!pool::lookup(static_cast<char *>(q) + 10, &info));
    CHECK_EQ(pool::outstanding(importer), size_t(0));
    CHECK(pool::lookup(a, &info)); // the exporter's block is untouched

    gpumem_pool_ptr_export_data_t bad = data;
    bad.reserved[0] ^= 0xff;
    CHECK_EQ(pool::import_pointer(importer, &bad, &q), GPUMEM_ERROR_INVALID_VALUE);
    bad = data;
    bad.reserved[4] ^= 0x01; // version
    CHECK_EQ(pool::import_pointer(importer, &bad, &q), GPUMEM_ERROR_INVALID_VALUE);
    bad = data;
    bad.reserved[16] ^= 0x01; // pool id: the upstream refuses
    CHECK_EQ(pool::import_pointer(importer, &bad, &q), GPUMEM_ERROR_IPC);

    void *b = plain.alloc(100, s);
    CHECK_EQ(pool::export_pointer(b, &data), GPUMEM_ERROR_INVALID_VALUE); // not shareable
    release(a, s);
    CHECK_EQ(pool::export_pointer(a, &data), GPUMEM_ERROR_INVALID_POINTER);
    release(b, s);
}

// Eight threads on eight streams over real memory: every block is stamped
// and checked, so that two live blocks that overlap are caught; some blocks
// are freed by another thread on its stream.
void test_threads()
{
    auto stats = std::make_shared<UpstreamStats>();
    TestPool tp(std::make_unique<HostUpstream>(stats), stats);
    constexpr int kThreads = 8;
    std::atomic<void *> handoff[kThreads] = {};
    std::atomic<int> errors{0};
    auto report = [&](const char *what, int line) {
        if (errors++ < 5)
            std::fprintf(stderr, "thread test, line %d: %s (%s)\n", line, what, gpumem::detail::last_error_message());
    };
    auto worker = [&](int t) {
        Stream s(t % 4 == 3);
        std::mt19937_64 rng(uint64_t(t) * 7919 + 1);
        struct Live { uint64_t *p; size_t size; uint64_t stamp; };
        std::vector<Live> live;
        auto stamp_ok = [](const Live &l) { return l.p[0] == l.stamp && l.p[l.size / 8 - 1] == ~l.stamp; };
        for (int step = 0; step < 40000; ++step) {
            if (live.size() < 64 && (live.empty() || rng() % 100 < 55)) {
                size_t size = rng() % 50 == 0 ? kMiB + rng() % (2 * kMiB) : 16 + 8 * (rng() % 2048);
                void *p = nullptr;
                if (pool::allocate(tp, size, s, &p) != GPUMEM_SUCCESS) {
                    report("allocate failed", __LINE__);
                    continue;
                }
                Live l{static_cast<uint64_t *>(p), size, (uint64_t(t) << 56) | uint64_t(step)};
                l.p[0] = l.stamp;
                l.p[size / 8 - 1] = ~l.stamp;
                live.push_back(l);
            } else {
                size_t i = rng() % live.size();
                Live l = live[i];
                live[i] = live.back();
                live.pop_back();
                if (!stamp_ok(l))
                    report("stamp overwritten", __LINE__);
                if (rng() % 8 == 0) { // hand it to the next thread, to free on its stream
                    void *old = handoff[(t + 1) % kThreads].exchange(l.p);
                    if (old && pool::deallocate(old, s, nullptr) != GPUMEM_SUCCESS)
                        report("deallocate failed", __LINE__);
                } else if (pool::deallocate(l.p, s, nullptr) != GPUMEM_SUCCESS) {
                    report("deallocate failed", __LINE__);
                }
            }
            if (void *got = handoff[t].exchange(nullptr))
                if (pool::deallocate(got, s, nullptr) != GPUMEM_SUCCESS)
                    report("deallocate failed", __LINE__);
            if (step % 5000 == 0)
                s.synchronize();
        }
        for (Live &l : live) {
            if (!stamp_ok(l))
                report("stamp overwritten", __LINE__);
            pool::deallocate(l.p, s, nullptr);
        }
        s.synchronize();
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back(worker, t);
    for (auto &th : threads)
        th.join();
    Stream last(true);
    for (auto &h : handoff)
        if (void *p = h.exchange(nullptr))
            CHECK_EQ(pool::deallocate(p, last, nullptr), GPUMEM_SUCCESS);
    CHECK_EQ(errors.load(), 0);
    CHECK_EQ(pool::outstanding(tp), size_t(0));
    CHECK_EQ(tp.used(), uint64_t(0));
    CHECK_EQ(pool::trim_to(tp, 0), GPUMEM_SUCCESS);
    CHECK_EQ(tp.reserved(), uint64_t(0));
    CHECK(!stats->bad_free);
}

// RMM's random_allocations pattern: sizes uniform in [1, 4 MiB]; each step
// allocates with probability 73% while the live bytes stay under `cap` (RMM's
// max_usage, 16000 MiB by default), else frees a random live allocation.
double fragmentation(bool synchronous, uint64_t cap, int steps)
{
    TestPool tp;
    Stream s(synchronous);
    std::mt19937_64 rng(12345);
    std::uniform_int_distribution<size_t> size_dist(1, 4 * kMiB);
    std::uniform_int_distribution<int> op_dist(0, 99);
    struct Live { void *p; size_t size; };
    std::vector<Live> live;
    uint64_t live_bytes = 0, peak = 0;
    for (int step = 0; step < steps; ++step) {
        size_t size = size_dist(rng);
        bool alloc = live.empty() || (op_dist(rng) < 73 && live_bytes + size < cap);
        if (alloc) {
            void *p = tp.alloc(size, s);
            CHECK(p);
            live.push_back({p, size});
            live_bytes += size;
            peak = std::max(peak, live_bytes);
        } else {
            size_t i = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
            release(live[i].p, s);
            live_bytes -= live[i].size;
            live[i] = live.back();
            live.pop_back();
        }
    }
    double ratio = double(attr_u64(tp, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH)) / double(peak);
    std::string cap_text = cap == UINT64_MAX ? "no cap" : "cap " + std::to_string(cap / kMiB) + " MiB";
    std::printf("fragmentation (%s stream, %s, %d steps): reserved high %.1f MiB / peak live %.1f MiB = %.3f\n",
                synchronous ? "synchronous" : "asynchronous", cap_text.c_str(), steps,
                double(attr_u64(tp, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH)) / kMiB, double(peak) / kMiB, ratio);
    for (Live &l : live)
        release(l.p, s);
    return ratio;
}

void test_fragmentation()
{
    constexpr uint64_t kRmmMaxUsage = 16000 * kMiB;
    CHECK(fragmentation(true, kRmmMaxUsage, 100000) <= 1.09);
    CHECK(fragmentation(false, kRmmMaxUsage, 100000) <= 1.09); // stream-ordered frees never completed
    CHECK(fragmentation(true, UINT64_MAX, 100000) <= 1.15);
    // With smaller caps the same steps turn the live set over ~50 (4 GiB) and
    // ~200 (1 GiB) times: the long-run steady state of best fit, where a few
    // hundred holes must hold a 4 MiB request (docs/benchmarks.md,
    // fragmentation target).  Regression guards, a little above what the pool reaches.
    CHECK(fragmentation(true, 4096 * kMiB, 100000) <= 1.14);
    CHECK(fragmentation(true, 1024 * kMiB, 100000) <= 1.26);
}

// Paged chunks behind a stream that stays busy until waited for: what a
// framework's stream looks like to the pool (pages are never touched).
struct BusyStream {
    int waits = 0;
};
class BusyPagedUpstream final : public FakeUpstream {
public:
    BusyPagedUpstream(std::shared_ptr<UpstreamStats> stats, std::shared_ptr<BusyStream> busy)
        : FakeUpstream(std::move(stats)), busy_(std::move(busy))
    {
    }
    size_t page_size() const override { return 2 * kMiB; }
    status_t back(void *, size_t) override { return GPUMEM_SUCCESS; }
    void unback(void *, size_t) override {}
    bool stream_idle(void *, int32_t) override { return false; }
    bool stream_wait(void *, int32_t) override
    {
        ++busy_->waits;
        return true;
    }
    void *record_mark(void *, int32_t, void *old) override { return old ? old : &token_; }
    bool mark_passed(void *) override { return false; }

private:
    std::shared_ptr<BusyStream> busy_;
    char token_ = 0;
};

// 128 MiB of holes whose frees are queued behind a busy stream, then a block
// that fits none: a few MiB past the budget, the pool grows rather than stall
// the stream; 64 MiB or more, it waits once and the holes' pages go back first.
void wait_or_grow(size_t request, bool expect_wait)
{
    auto stats = std::make_shared<UpstreamStats>();
    auto busy = std::make_shared<BusyStream>();
    TestPool tp(std::make_unique<BusyPagedUpstream>(stats, busy), stats);
    tp.set_u64(GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX);
    Stream s;
    void *blocks[32];
    for (void *&b : blocks)
        CHECK((b = tp.alloc(8 * kMiB, s)) != nullptr);
    for (int i = 1; i < 32; i += 2)
        CHECK_EQ(release(blocks[i], s), GPUMEM_SUCCESS);
    const uint64_t before = tp.reserved();
    void *b = tp.alloc(request, s);
    CHECK(b != nullptr);
    CHECK_EQ(busy->waits, expect_wait ? 1 : 0);
    if (expect_wait)
        CHECK(tp.reserved() <= before);
    else
        CHECK(tp.reserved() >= before + request);
    CHECK_EQ(release(b, s), GPUMEM_SUCCESS);
    for (int i = 0; i < 32; i += 2)
        CHECK_EQ(release(blocks[i], s), GPUMEM_SUCCESS);
    s.synchronize();
}

void test_waits_rather_than_grow_far()
{
    wait_or_grow(16 * kMiB, false);
    wait_or_grow(64 * kMiB, true);
}

void test_destroy_all()
{
    auto stats = std::make_shared<UpstreamStats>();
    pool::Pool *p = nullptr;
    CHECK_EQ(pool::create(std::make_unique<FakeUpstream>(stats), pool::Config{}, &p), GPUMEM_SUCCESS);
    Stream s;
    void *a = nullptr, *b = nullptr;
    CHECK_EQ(pool::allocate(p, 100, s, &a), GPUMEM_SUCCESS);
    CHECK_EQ(pool::allocate(p, 200, s, &b), GPUMEM_SUCCESS);
    release(b, s);
    CHECK(!s.state.caches.empty());
    pool::destroy_all();
    CHECK(stats->destroyed);
    CHECK_EQ(stats->held, uint64_t(0));
    CHECK(s.state.caches.empty());
    pool::Allocation info;
    CHECK(!pool::lookup(a, &info));
    // The library starts again afterwards, on the same streams.
    TestPool tp;
    void *c = tp.alloc(100, s);
    CHECK(c);
    CHECK_EQ(release(c, s), GPUMEM_SUCCESS);
    CHECK(tp.alloc(100, s) == c);
}

} // namespace

int main()
{
    struct {
        const char *name;
        void (*fn)();
    } tests[] = {
        {"same_stream_reuse", test_same_stream_reuse},
        {"opportunistic_reuse", test_opportunistic_reuse},
        {"opportunistic_off", test_opportunistic_off},
        {"event_dependencies", test_event_dependencies},
        {"synchronous_stream", test_synchronous_stream},
        {"stream_destroyed", test_stream_destroyed},
        {"release_threshold", test_release_threshold},
        {"trim_to", test_trim_to},
        {"attributes", test_attributes},
        {"used_high_exact", test_used_high_exact},
        {"out_of_memory", test_out_of_memory},
        {"destroy_with_outstanding", test_destroy_with_outstanding},
        {"lookup_and_invalid_free", test_lookup_and_invalid_free},
        {"ipc", test_ipc},
        {"threads", test_threads},
        {"fragmentation", test_fragmentation},
        {"waits_rather_than_grow_far", test_waits_rather_than_grow_far},
        {"destroy_all", test_destroy_all},
    };
    for (auto &t : tests) {
        int before = g_failures;
        t.fn();
        std::printf("%s %s\n", g_failures == before ? "ok  " : "FAIL", t.name);
    }
    if (g_failures)
        std::printf("%d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
