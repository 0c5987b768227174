/*
 * GPUMEM_LIMIT (bytes or N% of each device's memory) and the state of memory
 * that every OUT_OF_MEMORY message carries: device free/total, each pool's
 * reserved and used bytes, the largest free block of gpumem's own pools and
 * the five largest live allocations.  Runs on every backend.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"
#include "debug_util.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static void test_limit_in_bytes(void)
{
    const char *env[] = {"GPUMEM_LIMIT=1048576", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *a = NULL, *b = NULL, *c = NULL, *pinned = NULL;
    REQUIRE_OK(gpumem_malloc(&a, 512 * KIB));
    REQUIRE_OK(gpumem_malloc(&b, 512 * KIB)); /* exactly at the cap */
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&c, 1));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_LIMIT"));
    CHECK(c == NULL);
    /* Pinned host memory does not count, from a pool of pinned memory neither. */
    CHECK_OK(gpumem_host_alloc(&pinned, 4 * MIB, 0));
    CHECK_OK(gpumem_host_free(pinned));
    gpumem_pool_t pinned_pool = NULL;
    if (gpumem_get_default_pool_for(&pinned_pool, GPUMEM_POOL_MEMORY_PINNED, -1) == GPUMEM_SUCCESS) {
        CHECK_OK(gpumem_malloc_from_pool_async(&pinned, 4 * MIB, pinned_pool, NULL));
        CHECK_OK(gpumem_free_async(pinned, NULL));
        CHECK_OK(gpumem_device_synchronize());
    }
    /* Freeing makes room again: a holds 512 KiB, each kind below fills the rest. */
    CHECK_OK(gpumem_free(b));
    gpumem_status_t st = gpumem_malloc_async(&c, 512 * KIB, NULL);
    if (st == GPUMEM_SUCCESS) {
        /* Stream-ordered memory counts as much as it asked for. */
        void *d = NULL;
        CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc_async(&d, 1, NULL));
        CHECK_OK(gpumem_free_async(c, NULL));
        CHECK_OK(gpumem_device_synchronize());
    } else {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
    }
    void *m = NULL;
    st = gpumem_managed_alloc(&m, 512 * KIB, 0);
    if (st == GPUMEM_SUCCESS) {
        void *d = NULL;
        CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_managed_alloc(&d, 1, 0));
        CHECK_OK(gpumem_free(m));
    } else {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
    }
    gpumem_buffer_t buf = NULL;
    st = gpumem_buffer_create(&buf, 256 * KIB, 8 * MIB, 0);
    if (st == GPUMEM_SUCCESS) {
        CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_buffer_resize(buf, 2 * MIB));
        size_t size = 0;
        CHECK_OK(gpumem_buffer_size(buf, &size));
        CHECK(size == 256 * KIB); /* a refused resize changes nothing */
        CHECK_OK(gpumem_buffer_resize(buf, 512 * KIB));
        CHECK_OK(gpumem_buffer_destroy(buf));
    } else {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
    }
    CHECK_OK(gpumem_free(a));
    REQUIRE_OK(gpumem_malloc(&a, 1 * MIB));
    CHECK_OK(gpumem_free(a));
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_limit_in_percent(void)
{
    const char *env[] = {"GPUMEM_LIMIT=1%", NULL};
    REQUIRE_OK(dbg_restart(env));
    gpumem_device_info_t info = tst_info(0);
    REQUIRE(info.total_memory >= 100 * MIB);
    const size_t cap = (size_t)(info.total_memory / 100);
    void *p = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, cap + 4096));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_LIMIT"));
    REQUIRE_OK(gpumem_malloc(&p, cap / 2));
    void *q = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&q, cap / 2 + 4096));
    CHECK_OK(gpumem_free(p));
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_malformed_limit_is_ignored(void)
{
    static const char *const values[] = {"GPUMEM_LIMIT=abc", "GPUMEM_LIMIT=0", "GPUMEM_LIMIT=101%", "GPUMEM_LIMIT=-5",
                                         "GPUMEM_LIMIT=0%", "GPUMEM_LIMIT=12XB"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; ++i) {
        const char *env[] = {values[i], "GPUMEM_LOG=error", NULL};
        REQUIRE_OK(dbg_restart(env));
        void *p = NULL;
        CHECKF(gpumem_malloc(&p, 2 * MIB) == GPUMEM_SUCCESS, "%s capped memory: %s", values[i],
               gpumem_last_error_message());
        if (p)
            CHECK_OK(gpumem_free(p));
    }
    unsetenv("GPUMEM_LOG");
    REQUIRE_OK(dbg_restart(NULL));
}

/* Every OUT_OF_MEMORY message says where the memory went. */
static void test_oom_message_names_the_largest_allocations(void)
{
    const char *env[] = {"GPUMEM_LIMIT=1048576", NULL};
    REQUIRE_OK(dbg_restart(env));
    static const size_t sizes[] = {50 * KIB, 100 * KIB, 70 * KIB, 90 * KIB, 60 * KIB, 80 * KIB};
    void *ptrs[6] = {0};
    for (size_t i = 0; i < 6; ++i)
        REQUIRE_OK(gpumem_malloc(&ptrs[i], sizes[i]));
    void *pinned = NULL;
    REQUIRE_OK(gpumem_host_alloc(&pinned, 40 * KIB, 0));
    void *p = NULL;
    REQUIRE_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, 1 * MIB));
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
    CHECKF(tst_contains(msg, "gpumem_malloc: "), "%s", msg);
    CHECKF(tst_contains(msg, "device 0: ") && tst_contains(msg, "bytes free"), "no free/total: %s", msg);
    CHECKF(tst_contains(msg, "gpumem holds 460800 of GPUMEM_LIMIT 1048576"), "no limit: %s", msg);
    CHECKF(tst_contains(msg, "largest free block in gpumem's own pools"), "no largest free block: %s", msg);
    /* The five largest, biggest first; the sixth (50 KiB) left out. */
    char want[128];
    snprintf(want, sizeof want, "largest live allocations: %u bytes device at %p", 100 * KIB, ptrs[1]);
    CHECKF(tst_contains(msg, want), "\"%s\" not in: %s", want, msg);
    const size_t order[] = {90, 80, 70, 60};
    for (size_t i = 0; i < 4; ++i) {
        snprintf(want, sizeof want, ", %zu bytes ", order[i] * KIB);
        CHECKF(tst_contains(msg, want), "\"%s\" not in: %s", want, msg);
    }
    snprintf(want, sizeof want, "%u bytes device", 50 * KIB);
    CHECKF(!tst_contains(msg, want), "the sixth largest is named: %s", msg);
    snprintf(want, sizeof want, "%u bytes host_pinned", 40 * KIB);
    CHECKF(!tst_contains(msg, want), "the seventh largest is named: %s", msg);

    /* Pools appear with their reserved and used bytes once they hold memory. */
    void *block = NULL;
    gpumem_status_t st = gpumem_malloc_async(&block, 64 * KIB, NULL);
    if (st == GPUMEM_SUCCESS) {
        CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc_async(&p, 1 * MIB, NULL));
        snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
        CHECKF(tst_contains(msg, "gpumem_malloc_async: ") && tst_contains(msg, " pool ") &&
                   tst_contains(msg, "bytes reserved") && tst_contains(msg, "stream_ordered"),
               "%s", msg);
        CHECK_OK(gpumem_free_async(block, NULL));
        CHECK_OK(gpumem_device_synchronize());
    } else {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
    }
    for (size_t i = 0; i < 6; ++i)
        CHECK_OK(gpumem_free(ptrs[i]));
    CHECK_OK(gpumem_host_free(pinned));
    REQUIRE_OK(dbg_restart(NULL));
}

/* Without a limit too: the device refusing memory gives the same report. */
static void test_oom_without_limit_reports(void)
{
    REQUIRE_OK(dbg_restart(NULL));
    void *a = NULL, *p = NULL;
    REQUIRE_OK(gpumem_malloc(&a, 12 * KIB));
    REQUIRE_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, SIZE_MAX / 2));
    const char *msg = gpumem_last_error_message();
    CHECKF(tst_contains(msg, "[memory now:") && tst_contains(msg, "bytes free") &&
               tst_contains(msg, "largest live allocations: 12288 bytes device"),
           "%s", msg);
    CHECK_OK(gpumem_free(a));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_limit_in_bytes),
        TEST(test_limit_in_percent),
        TEST(test_malformed_limit_is_ignored),
        TEST(test_oom_message_names_the_largest_allocations),
        TEST(test_oom_without_limit_reports),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
}
