/*
 * Out of memory: what would have fit (gpumem_last_oom_report).  For each remedy the test makes
 * the situation, fails an allocation, reads the report, checks the remedy it names and its bytes,
 * applies that remedy and allocates again, which must then succeed:
 * - a too-low GPUMEM_LIMIT (raised by restarting with the figure the report gave);
 * - frees pending on another stream in a pool at its max_size (that stream synchronised);
 * - fragmentation of the own pool at its max_size (the block between two holes freed);
 * - another pool holding freed memory the device needs (that pool trimmed).
 * GPUMEM_LIMIT counts live allocations only (docs/semantics.md, "Memory limit"), so a pool's
 * kept memory, pending frees and fragmentation never make the limit refuse: those situations are
 * made with a pool's max_size and, for trimming, with a small device (the fakes: 1 GiB) or the
 * real one.  Where a situation cannot be made (the host backend's device is the machine's
 * memory; pools disabled), that case is skipped.  Runs on every backend, and on a GPU.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"
#include "debug_util.h"

#include <pthread.h>

#define KIB ((size_t)1024)
#define MIB ((size_t)1024 * 1024)

static gpumem_oom_report_t last_report(void)
{
    gpumem_oom_report_t r = GPUMEM_OOM_REPORT_INIT;
    CHECK_OK(gpumem_last_oom_report(&r));
    return r;
}

/* The OUT_OF_MEMORY message ends with the report's verdict. */
static int message_ends_with_verdict(const gpumem_oom_report_t *r)
{
    const char *msg = gpumem_last_error_message();
    size_t m = strlen(msg), v = strlen(r->verdict);
    return v > 0 && m >= v && strcmp(msg + m - v, r->verdict) == 0;
}

/* Must run first: this thread has had no OUT_OF_MEMORY yet. */
static void test_no_report_before_an_oom(void)
{
    gpumem_oom_report_t r = GPUMEM_OOM_REPORT_INIT;
    r.has_report = 7;
    r.bytes = 7;
    CHECK_OK(gpumem_last_oom_report(&r));
    CHECK(r.has_report == 0);
    CHECK(r.bytes == 0);
    CHECK(r.verdict[0] == '\0');
}

static void test_bad_arguments(void)
{
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_last_oom_report(NULL));
    CHECK(tst_contains(gpumem_last_error_message(), "gpumem_oom_report_t"));
    gpumem_oom_report_t r = GPUMEM_OOM_REPORT_INIT;
    r.size = 0;
    r.bytes = 99;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_last_oom_report(&r));
    CHECK(r.bytes == 99); /* nothing written */
    r.size = 4;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_last_oom_report(&r));
    CHECK(r.bytes == 99);
    /* A caller of an older, shorter struct: only what its size covers is written. */
    r.size = offsetof(gpumem_oom_report_t, device);
    r.device = 1234;
    CHECK_OK(gpumem_last_oom_report(&r));
    CHECK(r.device == 1234);
}

static void test_limit_remedy(void)
{
    const char *env[] = {"GPUMEM_LIMIT=1048576", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *a = NULL, *b = NULL;
    REQUIRE_OK(gpumem_malloc(&a, 1 * MIB));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&b, 512 * KIB));
    gpumem_oom_report_t r = last_report();
    CHECK(message_ends_with_verdict(&r));
    CHECK(r.has_report == 1);
    CHECK(r.kind == GPUMEM_KIND_DEVICE);
    CHECK(r.device == 0);
    CHECK(r.bytes == 512 * KIB);
    CHECK(r.rounded_bytes >= r.bytes);
    CHECK(r.limit == 1 * MIB);
    CHECK(r.limit_held == 1 * MIB);
    CHECK(r.gpumem_used >= 1 * MIB);
    CHECK(r.gpumem_reserved >= r.gpumem_used);
    CHECK(r.limit_raise.bytes == 512 * KIB);
    CHECK(r.limit_raise.fits == 1);
    /* Nothing but the limit would help: the others are not what refused. */
    CHECK(r.trim.fits == 0 && r.pending.fits == 0 && r.fragmentation.fits == 0 && r.outside.fits == 0);
    CHECK(tst_contains(r.verdict, "GPUMEM_LIMIT"));
    CHECK(tst_contains(r.verdict, "512 KiB higher"));
    if (r.device_total)
        CHECK(r.outside.bytes == 0 || r.outside.bytes + r.device_free + r.gpumem_reserved == r.device_total);
    CHECK_OK(gpumem_free(a));

    /* The remedy: a limit raised by what the report said. */
    char raised[64];
    snprintf(raised, sizeof raised, "GPUMEM_LIMIT=%llu", (unsigned long long)(r.limit + r.limit_raise.bytes));
    const char *env2[] = {raised, NULL};
    REQUIRE_OK(dbg_restart(env2));
    REQUIRE_OK(gpumem_malloc(&a, 1 * MIB));
    CHECK_OK(gpumem_malloc(&b, 512 * KIB));
    CHECK_OK(gpumem_free(b));
    CHECK_OK(gpumem_free(a));
    /* A report outlives the runtime that made it. */
    CHECK(last_report().bytes == 512 * KIB);
    REQUIRE_OK(dbg_restart(NULL));
}

/* One of gpumem's own pools with a max_size, keeping what is freed; NULL where pools are off. */
static gpumem_pool_t own_pool(uint64_t max_size)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 0;
    props.max_size = max_size;
    props.implementation = GPUMEM_POOL_BUILTIN;
    gpumem_pool_t pool = NULL;
    if (gpumem_pool_create(&pool, &props) != GPUMEM_SUCCESS)
        return NULL;
    uint64_t keep_all = UINT64_MAX;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep_all));
    return pool;
}

static void pending_frees_remedy(void)
{
    gpumem_pool_t pool = own_pool(8 * MIB);
    if (!pool)
        SKIP("no own pool here (pools disabled)");
    /* Another stream may take a freed block only once the free is known to be done. */
    int32_t off = 0;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
    gpumem_stream_t s1 = NULL, s2 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s1));
    REQUIRE_OK(gpumem_stream_create(&s2));
    void *a = NULL, *b = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&a, 8 * MIB, pool, s1));
    CHECK_OK(gpumem_free_async(a, s1));
    gpumem_status_t st = gpumem_malloc_from_pool_async(&b, 8 * MIB, pool, s2);
    if (st == GPUMEM_SUCCESS) {
        /* The pool learnt that the free had run (it asked the stream): nothing is pending. */
        CHECK_OK(gpumem_free_async(b, s2));
        CHECK_OK(gpumem_stream_synchronize(s2));
        CHECK_OK(gpumem_stream_destroy(s1));
        CHECK_OK(gpumem_stream_destroy(s2));
        CHECK_OK(gpumem_pool_destroy(pool));
        SKIP("the pool knew the free on the other stream had completed");
    }
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, st);
    gpumem_oom_report_t r = last_report();
    CHECK(message_ends_with_verdict(&r));
    CHECK(r.kind == GPUMEM_KIND_STREAM_ORDERED);
    CHECK(r.bytes == 8 * MIB);
    CHECK(r.pool == pool);
    CHECK(r.stream == s2);
    CHECK(r.pending.bytes >= 8 * MIB);
    CHECK(r.pending.fits == 1);
    CHECK(r.pending_stream == s1);
    CHECK(tst_contains(r.verdict, "synchronizing stream"));
    /* The remedy: synchronise the stream the frees wait on. */
    CHECK_OK(gpumem_stream_synchronize(s1));
    CHECK_OK(gpumem_malloc_from_pool_async(&b, 8 * MIB, pool, s2));
    CHECK_OK(gpumem_free_async(b, s2));
    CHECK_OK(gpumem_stream_synchronize(s2));
    CHECK_OK(gpumem_stream_destroy(s1));
    CHECK_OK(gpumem_stream_destroy(s2));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* A paged own pool asks an idle stream whether its frees ran, and they did; with whole chunks
 * (GPUMEM_POOL_PAGED=0) a free stays pending until gpumem sees the stream synchronised. */
static void test_pending_frees_remedy(void)
{
    setenv("GPUMEM_POOL_PAGED", "0", 1);
    if (dbg_restart(NULL) == GPUMEM_SUCCESS)
        pending_frees_remedy();
    else
        CHECK(0);
    unsetenv("GPUMEM_POOL_PAGED");
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_fragmentation_remedy(void)
{
    gpumem_pool_t pool = own_pool(8 * MIB);
    if (!pool)
        SKIP("no own pool here (pools disabled)");
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    /* One chunk of the whole max_size, then four blocks in it. */
    void *whole = NULL, *blk[4] = {NULL, NULL, NULL, NULL}, *big = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&whole, 8 * MIB, pool, s));
    CHECK_OK(gpumem_free_async(whole, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    for (int i = 0; i < 4; ++i)
        REQUIRE_OK(gpumem_malloc_from_pool_async(&blk[i], 2 * MIB, pool, s));
    /* Two holes of 2 MiB, not neighbours. */
    CHECK_OK(gpumem_free_async(blk[0], s));
    CHECK_OK(gpumem_free_async(blk[2], s));
    CHECK_OK(gpumem_stream_synchronize(s));
    gpumem_status_t st = gpumem_malloc_from_pool_async(&big, 4 * MIB, pool, s);
    if (st == GPUMEM_SUCCESS) {
        CHECK_OK(gpumem_free_async(big, s));
        CHECK_OK(gpumem_free_async(blk[1], s));
        CHECK_OK(gpumem_free_async(blk[3], s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_pool_destroy(pool));
        SKIP("the pool placed the blocks so that 4 MiB still fit");
    }
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, st);
    gpumem_oom_report_t r = last_report();
    CHECK(message_ends_with_verdict(&r));
    CHECK(r.pool == pool);
    CHECK(r.fragmentation.bytes >= 4 * MIB);
    CHECK(r.largest_free_block < 4 * MIB);
    CHECK(r.largest_free_block >= 2 * MIB);
    CHECK(r.fragmentation.fits == 1);
    CHECK(r.trim.fits == 0);
    CHECK(r.pending.fits == 0);
    CHECK(tst_contains(r.verdict, "one block"));
    /* The remedy: free what lies between the holes; they coalesce into 6 MiB. */
    CHECK_OK(gpumem_free_async(blk[1], s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_malloc_from_pool_async(&big, 4 * MIB, pool, s));
    CHECK_OK(gpumem_free_async(big, s));
    CHECK_OK(gpumem_free_async(blk[3], s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

static void test_trim_remedy(void)
{
    if (tst_device_memory_is_host() || tst_backend() == GPUMEM_BACKEND_HOST)
        SKIP("the host backend's device is the machine's memory: it cannot be filled safely");
    size_t free_bytes = 0, total = 0;
    REQUIRE_OK(gpumem_mem_get_info(&free_bytes, &total));
    const size_t big = free_bytes / 10 * 6 / (2 * MIB) * (2 * MIB); /* fits once, not twice */
    gpumem_pool_t keeper = own_pool(0), asked = own_pool(0);
    if (!keeper || !asked) {
        if (keeper)
            CHECK_OK(gpumem_pool_destroy(keeper));
        if (asked)
            CHECK_OK(gpumem_pool_destroy(asked));
        SKIP("no own pool here (pools disabled)");
    }
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    void *p = NULL, *q = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&p, big, keeper, s));
    CHECK_OK(gpumem_free_async(p, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    uint64_t held = 0;
    CHECK_OK(gpumem_pool_get_attribute(keeper, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &held));
    gpumem_status_t st = held >= big ? gpumem_malloc_from_pool_async(&q, big, asked, s) : GPUMEM_SUCCESS;
    if (st == GPUMEM_SUCCESS) {
        if (q)
            CHECK_OK(gpumem_free_async(q, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_pool_destroy(keeper));
        CHECK_OK(gpumem_pool_destroy(asked));
        SKIP("the device did not run out (%zu MiB held, %zu MiB free before)", (size_t)(held >> 20), free_bytes >> 20);
    }
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, st);
    gpumem_oom_report_t r = last_report();
    /* The message as a user sees it (docs/debugging.md quotes a device's). */
    printf("  message: %s\n", gpumem_last_error_message());
    CHECK(message_ends_with_verdict(&r));
    CHECK(r.pool == asked);
    CHECK(r.device_total == total);
    CHECK(r.trim.fits == 1);
    CHECK(r.trim_pool == keeper);
    CHECK(r.trim_pool_bytes >= big);
    CHECK(r.trim.bytes >= r.trim_pool_bytes);
    CHECK(r.gpumem_reserved >= big);
    CHECK(r.limit == 0 && r.limit_raise.fits == 0);
    CHECK(tst_contains(r.verdict, "trimming pool"));
    /* The remedy: trim the pool the report named. */
    CHECK_OK(gpumem_pool_trim_to(r.trim_pool, 0));
    CHECK_OK(gpumem_malloc_from_pool_async(&q, big, asked, s));
    CHECK_OK(gpumem_free_async(q, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(keeper));
    CHECK_OK(gpumem_pool_destroy(asked));
}

static void *read_report_elsewhere(void *out)
{
    gpumem_oom_report_t r = GPUMEM_OOM_REPORT_INIT;
    *(int *)out = gpumem_last_oom_report(&r) == GPUMEM_SUCCESS ? r.has_report : -1;
    return NULL;
}

/* The report is the calling thread's; a later failure replaces it; the framework hook has one too. */
static void test_report_is_per_thread(void)
{
    const char *env[] = {"GPUMEM_LIMIT=1048576", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *a = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&a, 2 * MIB));
    CHECK(last_report().bytes == 2 * MIB);
    CHECK(tst_contains(gpumem_last_error_message(), "would fit under a GPUMEM_LIMIT 1 MiB higher"));
    int other = -2;
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, read_report_elsewhere, &other) == 0);
    pthread_join(t, NULL);
    CHECK(other == 0); /* another thread never ran out */
    /* The framework hook returns NULL; its report is there all the same (and the verdict in the log). */
    gpumem_pool_t pool = NULL;
    if (gpumem_device_get_default_pool(&pool, 0) == GPUMEM_SUCCESS) {
        CHECK(gpumem_pluggable_malloc((ssize_t)(3 * MIB), 0, NULL) == NULL);
        gpumem_oom_report_t r = last_report();
        CHECK(r.kind == GPUMEM_KIND_STREAM_ORDERED);
        CHECK(r.bytes == 3 * MIB);
        CHECK(r.limit_raise.bytes == 2 * MIB && r.limit_raise.fits == 1);
    }
    REQUIRE_OK(dbg_restart(NULL));
}

/* Pinned host memory is not the device's: no device remedy is offered for it. */
static void test_host_memory_gets_no_device_remedy(void)
{
    void *h = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_host_alloc(&h, (size_t)1 << 62, 0));
    gpumem_oom_report_t r = last_report();
    CHECK(message_ends_with_verdict(&r));
    CHECK(r.kind == GPUMEM_KIND_HOST_PINNED);
    CHECK(r.bytes == (uint64_t)1 << 62);
    CHECK(r.trim.fits == 0 && r.pending.fits == 0 && r.fragmentation.fits == 0 && r.limit_raise.fits == 0 &&
          r.outside.fits == 0);
    CHECK(tst_contains(r.verdict, "would not fit"));
}

int main(int argc, char **argv)
{
    /* A small device on the fakes (read when the fake starts, at gpumem's first call). */
    setenv("FAKE_CUDA_MEMORY", "1073741824", 0);
    setenv("FAKE_HIP_MEMORY", "1073741824", 0);
    static const tst_case_t cases[] = {
        TEST(test_no_report_before_an_oom),
        TEST(test_bad_arguments),
        TEST(test_limit_remedy),
        TEST(test_pending_frees_remedy),
        TEST(test_fragmentation_remedy),
        TEST(test_trim_remedy),
        TEST(test_report_is_per_thread),
        TEST(test_host_memory_gets_no_device_remedy),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
