/* Growable buffers. SPDX-License-Identifier: MIT */
#include "harness.h"

#define MiB ((size_t)1 << 20)

static gpumem_device_info_t g_info;

#define NEED_BUFFERS()                                                                                            \
    do {                                                                                                          \
        g_info = tst_info(0);                                                                                     \
        if (g_info.virtual_memory == GPUMEM_SUPPORT_NONE) {                                                       \
            gpumem_buffer_t b_ = NULL;                                                                            \
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_buffer_create(&b_, 4096, MiB, 0));                    \
            CHECKF(tst_contains(gpumem_last_error_message(), "virtual") ||                                        \
                       tst_contains(gpumem_last_error_message(), "vmm"),                                          \
                   "message does not name the feature: \"%s\"", gpumem_last_error_message());                     \
            SKIP("growable buffers are not supported (virtual memory level NONE)");                               \
        }                                                                                                         \
    } while (0)

static void *data_of(gpumem_buffer_t b)
{
    void *p = (void *)1;
    gpumem_status_t st = gpumem_buffer_data(b, &p);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_buffer_data: %s", gpumem_last_error_message());
    return p;
}

static size_t size_of(gpumem_buffer_t b)
{
    size_t n = 12345;
    gpumem_status_t st = gpumem_buffer_size(b, &n);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_buffer_size: %s", gpumem_last_error_message());
    return n;
}

static void test_grow_and_shrink(void)
{
    NEED_BUFFERS();
    const int native = g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE;
    gpumem_buffer_t b = NULL;
    gpumem_stats_t s0 = tst_stats();
    REQUIRE_OK(gpumem_buffer_create(&b, 1000, 64 * MiB, 0));
    gpumem_stats_t s1 = tst_stats();
    if (!native)
        CHECK(s1.fallback_count > s0.fallback_count);
    CHECK(size_of(b) == 1000);
    char *p0 = (char *)data_of(b);
    REQUIRE(p0 != NULL);
    CHECK_OK(tst_upload(p0, 1000, 1));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p0, &pi));
    CHECK(pi.kind == GPUMEM_KIND_BUFFER);
    CHECK(pi.emulated == !native);

    /* Grow in steps: the old bytes keep their values; with native VMM the address stays. */
    const size_t sizes[] = {4096, 3 * MiB + 17, 10 * MiB, 64 * MiB};
    size_t filled = 1000;
    unsigned seed = 1;
    for (size_t i = 0; i < TST_COUNT(sizes); ++i) {
        CHECK_OK(gpumem_buffer_resize(b, sizes[i]));
        CHECK(size_of(b) == sizes[i]);
        char *p = (char *)data_of(b);
        REQUIRE(p != NULL);
        if (native)
            CHECKF(p == p0, "native VMM buffer moved from %p to %p on growth to %zu", (void *)p0, (void *)p, sizes[i]);
        CHECKF(tst_download_verify(p, filled, seed), "growth to %zu lost the first %zu bytes", sizes[i], filled);
        /* The new part is usable. */
        ++seed;
        CHECK_OK(tst_upload(p, sizes[i], seed));
        filled = sizes[i];
    }
    /* Beyond max_size. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_buffer_resize(b, 64 * MiB + 1));
    CHECK(size_of(b) == 64 * MiB);
    CHECK(tst_download_verify(data_of(b), 64 * MiB, seed));

    /* Shrink: the prefix stays. */
    CHECK_OK(gpumem_buffer_resize(b, 5 * MiB + 3));
    CHECK(size_of(b) == 5 * MiB + 3);
    if (native)
        CHECK(data_of(b) == p0);
    CHECK(tst_download_verify(data_of(b), 5 * MiB + 3, seed));
    gpumem_stats_t s2 = tst_stats();
    CHECK(s2.current_bytes[GPUMEM_KIND_BUFFER] < s0.current_bytes[GPUMEM_KIND_BUFFER] + 64 * MiB);
    /* Same size: nothing moves. */
    void *before = data_of(b);
    CHECK_OK(gpumem_buffer_resize(b, 5 * MiB + 3));
    CHECK(data_of(b) == before);
    /* Grow again after shrinking. */
    CHECK_OK(gpumem_buffer_resize(b, 20 * MiB));
    CHECK(tst_download_verify(data_of(b), 5 * MiB + 3, seed));
    if (native)
        CHECK(data_of(b) == p0);

    /* Size 0: with native VMM the address stays, else there is no data. */
    CHECK_OK(gpumem_buffer_resize(b, 0));
    CHECK(size_of(b) == 0);
    if (native)
        CHECK(data_of(b) == p0);
    else
        CHECK(data_of(b) == NULL);
    CHECK_OK(gpumem_buffer_resize(b, 100));
    CHECK_OK(tst_upload(data_of(b), 100, 99));
    CHECK(tst_download_verify(data_of(b), 100, 99));
    CHECK_OK(gpumem_buffer_destroy(b));
}

static void test_create_rules(void)
{
    NEED_BUFFERS();
    gpumem_buffer_t b = NULL;
    /* max_size 0 = the device's memory. */
    REQUIRE_OK(gpumem_buffer_create(&b, 4096, 0, 0));
    CHECK(size_of(b) == 4096);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_buffer_resize(b, (size_t)g_info.total_memory + 1));
    CHECK_OK(gpumem_buffer_destroy(b));
    /* Size 0 at creation. */
    REQUIRE_OK(gpumem_buffer_create(&b, 0, MiB, 0));
    CHECK(size_of(b) == 0);
    CHECK_OK(gpumem_buffer_resize(b, MiB));
    CHECK_OK(tst_upload(data_of(b), MiB, 4));
    CHECK(tst_download_verify(data_of(b), MiB, 4));
    CHECK_OK(gpumem_buffer_destroy(b));

    int32_t count = 1;
    CHECK_OK(gpumem_device_count(&count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_buffer_create(&b, 2 * MiB, MiB, 0)); /* size > max_size */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_buffer_create(NULL, 64, MiB, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_buffer_create(&b, 64, MiB, count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_buffer_create(&b, 64, MiB, GPUMEM_DEVICE_HOST));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_buffer_create(&b, SIZE_MAX / 2, SIZE_MAX / 2, 0));
}

static void test_handles_and_free_rules(void)
{
    NEED_BUFFERS();
    gpumem_buffer_t b = NULL;
    REQUIRE_OK(gpumem_buffer_create(&b, 8192, MiB, 0));
    void *p = data_of(b);
    /* Buffer data has its own release call. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(p));
    CHECK_OK(tst_upload(p, 8192, 5));
    CHECK(tst_download_verify(p, 8192, 5));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_buffer_data(b, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_buffer_size(b, NULL));
    CHECK_OK(gpumem_buffer_destroy(b));

    size_t n = 0;
    void *d = NULL;
    gpumem_buffer_t bad[] = {b, NULL, (gpumem_buffer_t)(uintptr_t)0x5150u};
    for (size_t i = 0; i < TST_COUNT(bad); ++i) {
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_destroy(bad[i]));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_resize(bad[i], 10));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_data(bad[i], &d));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_size(bad[i], &n));
    }
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
}

/* Several buffers growing in turn do not disturb each other. */
static void test_interleaved_buffers(void)
{
    NEED_BUFFERS();
    enum { B = 4 };
    gpumem_buffer_t b[B];
    size_t sz[B];
    for (int i = 0; i < B; ++i) {
        sz[i] = 1000 * (size_t)(i + 1);
        REQUIRE_OK(gpumem_buffer_create(&b[i], sz[i], 16 * MiB, 0));
        CHECK_OK(tst_upload(data_of(b[i]), sz[i], (unsigned)i));
    }
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < B; ++i) {
            size_t old = sz[i];
            sz[i] = sz[i] * 3 + 4096;
            CHECK_OK(gpumem_buffer_resize(b[i], sz[i]));
            CHECK(tst_download_verify(data_of(b[i]), old, (unsigned)(i + round * B)));
            CHECK_OK(tst_upload(data_of(b[i]), sz[i], (unsigned)(i + (round + 1) * B)));
        }
    }
    for (int i = 0; i < B; ++i) {
        CHECK(tst_download_verify(data_of(b[i]), sz[i], (unsigned)(i + 4 * B)));
        CHECK_OK(gpumem_buffer_destroy(b[i]));
    }
}

/* The trace and the statistics follow resizes: each resize is an event, and the FREE at destroy
 * carries the size the ALLOCs added up to (ALLOC 100 then growth, never ALLOC 100, FREE 5000). */
static int64_t g_trace_bytes;
static int g_trace_events;
static void count_buffer_events(const gpumem_trace_event_t *e, void *user)
{
    (void)user;
    if (e->kind != GPUMEM_KIND_BUFFER)
        return;
    g_trace_bytes += e->op == GPUMEM_TRACE_ALLOC ? (int64_t)e->bytes : -(int64_t)e->bytes;
    g_trace_events++;
}

static void test_resize_in_trace_and_stats(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory == GPUMEM_SUPPORT_NONE)
        SKIP("growable buffers are not supported here");
    gpumem_stats_t before = GPUMEM_STATS_INIT, now = GPUMEM_STATS_INIT;
    REQUIRE_OK(gpumem_get_stats(&before));
    g_trace_bytes = 0;
    g_trace_events = 0;
    REQUIRE_OK(gpumem_set_trace_callback(count_buffer_events, NULL));
    gpumem_buffer_t b = NULL;
    REQUIRE_OK(gpumem_buffer_create(&b, 100, 64 * MiB, 0));
    CHECK(g_trace_bytes == 100);
    CHECK_OK(gpumem_buffer_resize(b, 5000));
    CHECK(g_trace_bytes == 5000);
    CHECK_OK(gpumem_get_stats(&now));
    CHECK(now.current_bytes[GPUMEM_KIND_BUFFER] - before.current_bytes[GPUMEM_KIND_BUFFER] == 5000);
    CHECK(now.alloc_count[GPUMEM_KIND_BUFFER] - before.alloc_count[GPUMEM_KIND_BUFFER] == 2);
    CHECK_OK(gpumem_buffer_resize(b, 700));
    CHECK(g_trace_bytes == 700);
    CHECK_OK(gpumem_buffer_resize(b, 700)); /* no change, no event */
    CHECK(g_trace_events == 5);
    CHECK_OK(gpumem_buffer_destroy(b));
    CHECKF(g_trace_bytes == 0, "trace ALLOC - FREE after destroy: %lld bytes", (long long)g_trace_bytes);
    CHECK_OK(gpumem_set_trace_callback(NULL, NULL));
    CHECK_OK(gpumem_get_stats(&now));
    CHECK(now.current_bytes[GPUMEM_KIND_BUFFER] == before.current_bytes[GPUMEM_KIND_BUFFER]);
    CHECK(now.free_count[GPUMEM_KIND_BUFFER] - before.free_count[GPUMEM_KIND_BUFFER] == 3);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_resize_in_trace_and_stats), TEST(test_grow_and_shrink),
        TEST(test_create_rules),
        TEST(test_handles_and_free_rules),
        TEST(test_interleaved_buffers),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
