/* Batched copies, prefetches and discards: data in every direction, stream order, validation
 * (the entry is named and nothing is enqueued), count 0, the support level.  SPDX-License-Identifier: MIT */
#include "harness.h"

#define ENTRIES 96
#define SLOT 4096 /* each entry copies up to SLOT bytes into its own slot */

/* The entry sizes: 1 byte to 4 KiB, odd ones included. */
static size_t entry_size(size_t i) { return (size_t[]){1, 64, 100, 512, 1000, 4096, 7, 3000}[i % 8]; }

/* A stream of our own (the native path where the runtime has one) or NULL (the default
 * stream, which the runtimes' batch calls refuse: gpumem makes one call per entry). */
static gpumem_stream_t g_streams[2];
static const char *const g_stream_names[2] = {"a created stream", "the default stream"};

static int setup_streams(void)
{
    g_streams[1] = NULL;
    return gpumem_stream_create(&g_streams[0]) == GPUMEM_SUCCESS;
}

/* The last error names entry `i`. */
#define CHECK_NAMES_ENTRY(i)                                                                                      \
    do {                                                                                                          \
        char want_[32];                                                                                           \
        snprintf(want_, sizeof want_, "entry %d", (int)(i));                                                      \
        CHECKF(tst_contains(gpumem_last_error_message(), want_), "message does not name %s: \"%s\"", want_,       \
               gpumem_last_error_message());                                                                      \
    } while (0)

static void test_count_zero(void)
{
    /* No array is read when count is 0. */
    CHECK_OK(gpumem_memcpy_batch_async(NULL, NULL, NULL, 0, NULL));
    CHECK_OK(gpumem_prefetch_batch_async(NULL, NULL, 0, NULL, NULL));
    CHECK_OK(gpumem_discard_batch_async(NULL, NULL, 0, NULL));
}

static void test_null_arrays(void)
{
    char a[8], b[8];
    void *dsts[1] = {a};
    const void *srcs[1] = {b};
    size_t sizes[1] = {8};
    int32_t devices[1] = {0};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_batch_async(NULL, srcs, sizes, 1, NULL));
    CHECK(tst_contains(gpumem_last_error_message(), "NULL"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_batch_async(dsts, NULL, sizes, 1, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_batch_async(dsts, srcs, NULL, 1, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_batch_async(srcs, sizes, 1, NULL, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_batch_async(NULL, sizes, 1, devices, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_discard_batch_async(dsts, NULL, 1, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_discard_batch_async(NULL, sizes, 1, NULL));
    /* A bad stream handle is refused before any entry is looked at. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_memcpy_batch_async(dsts, srcs, sizes, 1, (gpumem_stream_t)8));
}

static void test_support_level(void)
{
    gpumem_device_info_t info = tst_info(0);
    CHECKF(info.batch_memops == GPUMEM_SUPPORT_NATIVE || info.batch_memops == GPUMEM_SUPPORT_EMULATED,
           "batch_memops %d", (int)info.batch_memops);
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(info.batch_memops == GPUMEM_SUPPORT_EMULATED); /* the host backend loops */
    /* The configuration says which path the runtime offers (tests/meson.build, tests/fakes/meson.build). */
    const char *expect = getenv("GPUMEM_TEST_EXPECT_BATCH");
    if (expect && strcmp(expect, "native") == 0)
        CHECK(info.batch_memops == GPUMEM_SUPPORT_NATIVE);
    else if (expect && strcmp(expect, "emulated") == 0)
        CHECK(info.batch_memops == GPUMEM_SUPPORT_EMULATED);
}

/* Host -> X in one batch, then X -> host in another, for device, pinned and managed memory
 * (each X gets ENTRIES small copies into its own slots); both streams. */
static void copy_round_trip(void *x, const char *kind, gpumem_stream_t stream, const char *stream_name)
{
    unsigned char *up = malloc((size_t)ENTRIES * SLOT), *down = malloc((size_t)ENTRIES * SLOT);
    REQUIRE(up && down);
    void *dsts[ENTRIES];
    const void *srcs[ENTRIES];
    size_t sizes[ENTRIES];
    for (size_t i = 0; i < ENTRIES; ++i) {
        tst_fill(up + i * SLOT, SLOT, (unsigned)i + 1);
        dsts[i] = (char *)x + i * SLOT;
        srcs[i] = up + i * SLOT;
        sizes[i] = entry_size(i);
    }
    memset(down, 0xEE, (size_t)ENTRIES * SLOT);
    CHECK_OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, ENTRIES, stream));
    for (size_t i = 0; i < ENTRIES; ++i) {
        dsts[i] = down + i * SLOT;
        srcs[i] = (char *)x + i * SLOT;
    }
    CHECK_OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, ENTRIES, stream));
    CHECK_OK(gpumem_stream_synchronize(stream));
    for (size_t i = 0; i < ENTRIES; ++i) {
        size_t n = entry_size(i);
        CHECKF(tst_verify(down + i * SLOT, n, (unsigned)i + 1) == n, "%s on %s: entry %zu came back wrong", kind,
               stream_name, i);
        CHECKF(tst_verify_byte(down + i * SLOT + n, SLOT - n, 0xEE) == SLOT - n, "%s on %s: entry %zu wrote past "
               "its size", kind, stream_name, i);
    }
    free(up);
    free(down);
}

static void test_copy_host_device_pinned_managed(void)
{
    REQUIRE(setup_streams());
    const size_t bytes = (size_t)ENTRIES * SLOT;
    void *dev = NULL, *pinned = NULL, *managed = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, bytes));
    REQUIRE_OK(gpumem_host_alloc(&pinned, bytes, 0));
    gpumem_status_t mst = gpumem_managed_alloc(&managed, bytes, 0);
    CHECK(mst == GPUMEM_SUCCESS || mst == GPUMEM_ERROR_NOT_SUPPORTED);
    for (int s = 0; s < 2; ++s) {
        copy_round_trip(dev, "device memory", g_streams[s], g_stream_names[s]);
        copy_round_trip(pinned, "pinned memory", g_streams[s], g_stream_names[s]);
        if (managed)
            copy_round_trip(managed, "managed memory", g_streams[s], g_stream_names[s]);
    }
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_host_free(pinned));
    if (managed)
        CHECK_OK(gpumem_free(managed));
    CHECK_OK(gpumem_stream_destroy(g_streams[0]));
}

/* Device -> device (two allocations), pinned -> device and device -> pinned in one batch. */
static void test_copy_device_to_device_mixed(void)
{
    REQUIRE(setup_streams());
    const size_t n = 64 * 1024;
    for (int s = 0; s < 2; ++s) {
        void *a = NULL, *b = NULL, *c = NULL, *p = NULL, *q = NULL;
        REQUIRE_OK(gpumem_malloc(&a, n));
        REQUIRE_OK(gpumem_malloc(&b, n));
        REQUIRE_OK(gpumem_malloc(&c, n));
        REQUIRE_OK(gpumem_host_alloc(&p, n, 0));
        REQUIRE_OK(gpumem_host_alloc(&q, n, 0));
        REQUIRE_OK(tst_upload(a, n, 11));
        tst_fill(p, n, 12);
        memset(q, 0, n);
        REQUIRE_OK(tst_upload(c, n, 13));
        /* a -> b (D2D, in two halves) and c -> q (device to pinned) in one batch; an empty entry too. */
        void *dsts[4] = {b, (char *)b + n / 2, q, NULL};
        const void *srcs[4] = {a, (char *)a + n / 2, c, NULL};
        size_t sizes[4] = {n / 2, n / 2, n, 0};
        CHECK_OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, 4, g_streams[s]));
        /* Then pinned -> device into a, now that the batch above has read it (stream order). */
        void *dsts2[1] = {a};
        const void *srcs2[1] = {p};
        size_t sizes2[1] = {n};
        CHECK_OK(gpumem_memcpy_batch_async(dsts2, srcs2, sizes2, 1, g_streams[s]));
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
        CHECKF(tst_download_verify(b, n, 11), "D2D batch on %s", g_stream_names[s]);
        CHECKF(tst_verify(q, n, 13) == n, "D2H into pinned memory on %s", g_stream_names[s]);
        CHECKF(tst_download_verify(a, n, 12), "H2D from pinned memory on %s", g_stream_names[s]);
        CHECK_OK(gpumem_free(a));
        CHECK_OK(gpumem_free(b));
        CHECK_OK(gpumem_free(c));
        CHECK_OK(gpumem_host_free(p));
        CHECK_OK(gpumem_host_free(q));
    }
    CHECK_OK(gpumem_stream_destroy(g_streams[0]));
}

/* The batch runs in stream order with other work: fill, batch, fill, batch on one stream. */
static void test_stream_order(void)
{
    REQUIRE(setup_streams());
    const size_t n = 8192;
    for (int s = 0; s < 2; ++s) {
        gpumem_stream_t st = g_streams[s];
        void *dev = NULL;
        REQUIRE_OK(gpumem_malloc(&dev, n));
        unsigned char *first = malloc(n), *second = malloc(n);
        REQUIRE(first && second);
        memset(first, 0, n);
        memset(second, 0, n);
        void *d1[2] = {first, first + n / 2}, *d2[2] = {second, second + n / 2};
        const void *src[2] = {dev, (char *)dev + n / 2};
        size_t sizes[2] = {n / 2, n / 2};
        CHECK_OK(gpumem_memset_async(dev, 0xA5, n, st));
        CHECK_OK(gpumem_memcpy_batch_async(d1, src, sizes, 2, st));
        CHECK_OK(gpumem_memset_async(dev, 0x5A, n, st));
        CHECK_OK(gpumem_memcpy_batch_async(d2, src, sizes, 2, st));
        CHECK_OK(gpumem_stream_synchronize(st));
        CHECKF(tst_verify_byte(first, n, 0xA5) == n, "the first batch did not see the first fill (%s)",
               g_stream_names[s]);
        CHECKF(tst_verify_byte(second, n, 0x5A) == n, "the second batch did not see the second fill (%s)",
               g_stream_names[s]);
        free(first);
        free(second);
        CHECK_OK(gpumem_free(dev));
    }
    CHECK_OK(gpumem_stream_destroy(g_streams[0]));
}

/* A batch whose entry 2 is bad: the status, the entry named, and entries 0 and 1 not copied. */
static void expect_refused(gpumem_status_t expected, void **dsts, const void **srcs, size_t *sizes, size_t count,
                           size_t bad, unsigned char *watched, size_t watched_size, const char *what)
{
    for (int s = 0; s < 2; ++s) {
        memset(watched, 0x3C, watched_size);
        gpumem_status_t st = gpumem_memcpy_batch_async(dsts, srcs, sizes, count, g_streams[s]);
        CHECKF(st == expected, "%s on %s: %s, expected %s (%s)", what, g_stream_names[s], gpumem_status_string(st),
               gpumem_status_string(expected), gpumem_last_error_message());
        CHECK_NAMES_ENTRY(bad);
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
        CHECKF(tst_verify_byte(watched, watched_size, 0x3C) == watched_size, "%s on %s: a refused batch copied",
               what, g_stream_names[s]);
    }
}

static void test_copy_validation(void)
{
    REQUIRE(setup_streams());
    const size_t n = 4096;
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, n));
    REQUIRE_OK(tst_upload(dev, n, 5));
    unsigned char *host = malloc(4 * n), *src = malloc(4 * n);
    REQUIRE(host && src);
    tst_fill(src, 4 * n, 6);
    void *dsts[4] = {host, host + n, host + 2 * n, host + 3 * n};
    const void *srcs[4] = {dev, src + n, src + 2 * n, src + 3 * n};
    size_t sizes[4] = {256, 256, 256, 256};

    /* Entry 2: NULL destination with bytes to copy. */
    dsts[2] = NULL;
    expect_refused(GPUMEM_ERROR_INVALID_VALUE, dsts, srcs, sizes, 4, 2, host, 2 * n, "a NULL destination");
    dsts[2] = host + 2 * n;
    /* Entry 2: a source running past the end of a gpumem allocation (the single copy refuses it too). */
    srcs[2] = (char *)dev + n - 100;
    expect_refused(GPUMEM_ERROR_INVALID_VALUE, dsts, srcs, sizes, 4, 2, host, 2 * n, "a source past its end");
    srcs[2] = src + 2 * n;
    /* Entry 2: a destination running past the end of a gpumem allocation. */
    void *dst_dev[4] = {host, host + n, (char *)dev + n - 8, host + 3 * n};
    expect_refused(GPUMEM_ERROR_INVALID_VALUE, dst_dev, srcs, sizes, 4, 2, host, 2 * n, "a destination past its end");
    /* Entry 2's destination overlaps entry 0's: the copies of a batch run in no order. */
    dsts[2] = host + 100;
    expect_refused(GPUMEM_ERROR_INVALID_VALUE, dsts, srcs, sizes, 4, 2, host + n, n, "overlapping destinations");
    CHECK(tst_contains(gpumem_last_error_message(), "overlaps"));
    dsts[2] = host + 2 * n;
    /* Entry 2 reads what entry 3 writes. */
    srcs[2] = host + 3 * n + 10;
    expect_refused(GPUMEM_ERROR_INVALID_VALUE, dsts, srcs, sizes, 4, 2, host, 2 * n, "a source another entry writes");
    srcs[2] = src + 2 * n;

    /* An entry of size 0 copies nothing, and its pointers may be NULL (as gpumem_memcpy_async's). */
    for (int s = 0; s < 2; ++s) {
        memset(host, 0, 4 * n);
        void *d0[4] = {host, NULL, host + 2 * n, host + 3 * n};
        const void *s0[4] = {dev, NULL, src + 2 * n, src + 3 * n};
        size_t z0[4] = {n, 0, 128, 0};
        CHECK_OK(gpumem_memcpy_batch_async(d0, s0, z0, 4, g_streams[s]));
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
        CHECK(tst_verify(host, n, 5) == n);
        CHECK(memcmp(host + 2 * n, src + 2 * n, 128) == 0);
        CHECK(tst_verify_byte(host + 3 * n, n, 0) == n);
        /* Only empty entries: nothing to do. */
        size_t zeros[4] = {0, 0, 0, 0};
        CHECK_OK(gpumem_memcpy_batch_async(d0, s0, zeros, 4, g_streams[s]));
    }
    free(host);
    free(src);
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_stream_destroy(g_streams[0]));
}

/* Prefetch and discard take managed memory only (emulated managed memory included). */
static int have_managed(void) { return tst_info(0).managed_memory != GPUMEM_SUPPORT_NONE; }

static int32_t last_prefetch(const void *p, size_t n)
{
    int32_t v = 12345;
    CHECK_OK(gpumem_range_get_attribute(&v, sizeof v, GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, n));
    return v;
}

static void test_prefetch(void)
{
    if (!have_managed())
        SKIP("managed memory is not supported");
    REQUIRE(setup_streams());
    const size_t page = 4096, n = 16 * page;
    int32_t count = 0;
    REQUIRE_OK(gpumem_device_count(&count));
    char *m = NULL, *m2 = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&m, n, 0));
    REQUIRE_OK(gpumem_managed_alloc((void **)&m2, n, 0));
    REQUIRE_OK(tst_upload(m, n, 21));
    for (int s = 0; s < 2; ++s) {
        const void *ptrs[3] = {m, m + 4 * page, m2};
        size_t sizes[3] = {4 * page, 4 * page, n};
        int32_t to[3] = {0, GPUMEM_DEVICE_HOST, count - 1};
        CHECK_OK(gpumem_prefetch_batch_async(ptrs, sizes, 3, to, g_streams[s]));
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
        CHECK(last_prefetch(m, 4 * page) == 0);
        CHECK(last_prefetch(m + 4 * page, 4 * page) == GPUMEM_DEVICE_HOST);
        CHECK(last_prefetch(m2, n) == count - 1);
        CHECKF(tst_download_verify(m, n, 21), "prefetching changed the contents (%s)", g_stream_names[s]);

        /* Entry 1 is device memory: refused like gpumem_prefetch_async, entry 0 not prefetched. */
        void *dev = NULL;
        REQUIRE_OK(gpumem_malloc(&dev, page));
        const void *bad[2] = {m + 8 * page, dev};
        size_t bad_sizes[2] = {page, page};
        int32_t bad_to[2] = {GPUMEM_DEVICE_HOST, 0};
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_batch_async(bad, bad_sizes, 2, bad_to, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        CHECK(last_prefetch(m + 8 * page, page) != GPUMEM_DEVICE_HOST);
        /* Entry 1 goes to a device that does not exist. */
        bad[1] = m + 9 * page;
        bad_to[1] = count;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_prefetch_batch_async(bad, bad_sizes, 2, bad_to, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        bad_to[1] = -7;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_prefetch_batch_async(bad, bad_sizes, 2, bad_to, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        CHECK(last_prefetch(m + 8 * page, page) != GPUMEM_DEVICE_HOST);
        /* Entry 1 is empty, or runs past the allocation's end, or is NULL. */
        bad_to[1] = 0;
        bad_sizes[1] = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_batch_async(bad, bad_sizes, 2, bad_to, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        bad_sizes[1] = n;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_batch_async(bad, bad_sizes, 2, bad_to, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        bad[1] = NULL;
        bad_sizes[1] = page;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_batch_async(bad, bad_sizes, 2, bad_to, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        CHECK(last_prefetch(m + 8 * page, page) != GPUMEM_DEVICE_HOST);
        CHECK_OK(gpumem_free(dev));
        /* Back to the start for the other stream. */
        const void *all[1] = {m + 8 * page};
        size_t all_sizes[1] = {page};
        int32_t all_to[1] = {0};
        CHECK_OK(gpumem_prefetch_batch_async(all, all_sizes, 1, all_to, g_streams[s]));
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
    }
    CHECK_OK(gpumem_free(m));
    CHECK_OK(gpumem_free(m2));
    CHECK_OK(gpumem_stream_destroy(g_streams[0]));
}

static void test_discard(void)
{
    if (!have_managed())
        SKIP("managed memory is not supported");
    REQUIRE(setup_streams());
    const size_t page = 4096, n = 16 * page;
    char *m = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&m, n, 0));
    unsigned char *back = malloc(n);
    REQUIRE(back);
    for (int s = 0; s < 2; ++s) {
        REQUIRE_OK(tst_upload(m, n, 31));
        /* A refused batch (entry 1 is pinned memory, not managed) discards nothing. */
        void *pinned = NULL;
        REQUIRE_OK(gpumem_host_alloc(&pinned, page, 0));
        void *bad[2] = {m, pinned};
        size_t bad_sizes[2] = {n, page};
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_discard_batch_async(bad, bad_sizes, 2, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        bad[1] = m;
        bad_sizes[1] = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_discard_batch_async(bad, bad_sizes, 2, g_streams[s]));
        CHECK_NAMES_ENTRY(1);
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
        CHECKF(tst_download_verify(m, n, 31), "a refused discard changed the contents (%s)", g_stream_names[s]);
        CHECK_OK(gpumem_host_free(pinned));

        /* Discard two ranges: their bytes are undefined (kept, or whatever the runtime left), the
         * rest is untouched, and the memory stays valid to write and read. */
        void *ptrs[2] = {m, m + 8 * page};
        size_t sizes[2] = {4 * page, 4 * page};
        CHECK_OK(gpumem_discard_batch_async(ptrs, sizes, 2, g_streams[s]));
        CHECK_OK(gpumem_stream_synchronize(g_streams[s]));
        memset(back, 0, n);
        CHECK_OK(gpumem_memcpy(back, m, n));
        unsigned char whole[16 * 4096];
        tst_fill(whole, sizeof whole, 31);
        CHECK(memcmp(back + 4 * page, whole + 4 * page, 4 * page) == 0);
        CHECK(memcmp(back + 12 * page, whole + 12 * page, 4 * page) == 0);
        REQUIRE_OK(tst_upload(m, n, 32));
        CHECKF(tst_download_verify(m, n, 32), "discarded memory cannot be written and read again (%s)",
               g_stream_names[s]);
    }
    free(back);
    CHECK_OK(gpumem_free(m));
    CHECK_OK(gpumem_stream_destroy(g_streams[0]));
}

/* Managed memory is the only memory discard and prefetch take: device memory at entry 0. */
static void test_discard_refuses_device_memory(void)
{
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    void *ptrs[1] = {dev};
    size_t sizes[1] = {4096};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_discard_batch_async(ptrs, sizes, 1, NULL));
    CHECK_NAMES_ENTRY(0);
    CHECK(tst_contains(gpumem_last_error_message(), "managed"));
    CHECK_OK(gpumem_free(dev));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_count_zero),
        TEST(test_null_arrays),
        TEST(test_support_level),
        TEST(test_copy_host_device_pinned_managed),
        TEST(test_copy_device_to_device_mixed),
        TEST(test_stream_order),
        TEST(test_copy_validation),
        TEST(test_prefetch),
        TEST(test_discard),
        TEST(test_discard_refuses_device_memory),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
