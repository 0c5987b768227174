/* Managed memory: allocation, prefetch, advice, range attributes, stream attach. SPDX-License-Identifier: MIT */
#include "harness.h"

#define PAGE 4096
#define SIZE (16 * PAGE)
#define HALF (SIZE / 2)
#define NONE GPUMEM_LOCATION_INVALID

static gpumem_device_info_t g_info;

/* Managed memory, or SKIP after checking NOT_SUPPORTED where the level is NONE. */
#define NEED_MANAGED()                                                                                            \
    do {                                                                                                          \
        g_info = tst_info(0);                                                                                     \
        if (g_info.managed_memory == GPUMEM_SUPPORT_NONE) {                                                       \
            void *p_ = (void *)1;                                                                                 \
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_managed_alloc(&p_, 4096, 0));                         \
            CHECKF(tst_contains(gpumem_last_error_message(), "managed"), "message does not name the feature: \"%s\"", \
                   gpumem_last_error_message());                                                                  \
            SKIP("managed memory is not supported");                                                              \
        }                                                                                                         \
    } while (0)

/* A scalar range attribute, or 12345 when the query fails. */
static int32_t attr(int32_t attribute, const void *p, size_t n)
{
    int32_t v = 12345;
    gpumem_status_t st = gpumem_range_get_attribute(&v, sizeof v, attribute, p, n);
    if (st != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "gpumem_range_get_attribute(%d) gave %s: %s", (int)attribute,
                 gpumem_status_string(st), gpumem_last_error_message());
        return 12345;
    }
    return v;
}

/* The ACCESSED_BY set of a range as a bitmask: bit 0 = host, bit d+1 = device d; -1 on a malformed answer. */
static int accessed_by(const void *p, size_t n)
{
    int32_t v[8];
    for (int i = 0; i < 8; ++i)
        v[i] = 777;
    gpumem_status_t st = gpumem_range_get_attribute(v, sizeof v, GPUMEM_RANGE_ACCESSED_BY, p, n);
    if (st != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "ACCESSED_BY query gave %s: %s", gpumem_status_string(st),
                 gpumem_last_error_message());
        return -1;
    }
    int mask = 0, seen_unused = 0;
    for (int i = 0; i < 8; ++i) {
        if (v[i] == NONE) {
            seen_unused = 1;
            continue;
        }
        if (seen_unused || v[i] < -1 || v[i] > 29) /* the devices come first, the rest is -2 */
            return -1;
        int bit = v[i] + 1;
        if (mask & (1 << bit))
            return -1; /* listed twice */
        mask |= 1 << bit;
    }
    return mask;
}

static void test_managed_alloc(void)
{
    NEED_MANAGED();
    const uint32_t flags[] = {0, GPUMEM_ATTACH_GLOBAL, GPUMEM_ATTACH_HOST};
    for (size_t i = 0; i < TST_COUNT(flags); ++i) {
        gpumem_stats_t before = tst_stats();
        void *p = NULL;
        REQUIRE_OK(gpumem_managed_alloc(&p, SIZE + i, flags[i]));
        gpumem_stats_t after = tst_stats();
        CHECK(after.alloc_count[GPUMEM_KIND_MANAGED] == before.alloc_count[GPUMEM_KIND_MANAGED] + 1);
        CHECK(after.current_bytes[GPUMEM_KIND_MANAGED] == before.current_bytes[GPUMEM_KIND_MANAGED] + SIZE + i);
        CHECKF(after.fallback_count ==
                   before.fallback_count + (g_info.managed_memory == GPUMEM_SUPPORT_EMULATED ? 1u : 0u),
               "fallback_count %" PRIu64 " -> %" PRIu64 " with managed level %d", before.fallback_count,
               after.fallback_count, (int)g_info.managed_memory);
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info((char *)p + 100, &pi));
        CHECK(pi.kind == GPUMEM_KIND_MANAGED);
        CHECK(pi.base == p);
        CHECK(pi.alloc_size == SIZE + i);
        CHECK(pi.emulated == (g_info.managed_memory == GPUMEM_SUPPORT_EMULATED));
        if (flags[i])
            CHECK(pi.flags == flags[i]);
        /* One pointer for host and device: the CPU writes, a copy reads. */
        tst_fill(p, SIZE + i, (unsigned)i);
        CHECK(tst_download_verify(p, SIZE + i, (unsigned)i));
        CHECK_OK(tst_upload(p, SIZE + i, (unsigned)i + 50));
        CHECK(tst_verify(p, SIZE + i, (unsigned)i + 50) == SIZE + i);
        CHECK_OK(gpumem_free(p));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
    }
    void *p = (void *)1;
    CHECK_OK(gpumem_managed_alloc(&p, 0, 0));
    CHECK(p == NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_managed_alloc(&p, 64, GPUMEM_ATTACH_SINGLE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_managed_alloc(&p, 64, GPUMEM_ATTACH_GLOBAL | GPUMEM_ATTACH_HOST));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_managed_alloc(&p, 64, 0x80));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_managed_alloc(NULL, 64, 0));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_managed_alloc(&p, SIZE_MAX, 0));
}

static void test_prefetch(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, 0));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    tst_fill(p, SIZE, 1);

    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == NONE);
    CHECK_OK(gpumem_prefetch_async(p, SIZE, 0, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == 0);
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p + PAGE, PAGE) == 0);
    CHECK_OK(gpumem_prefetch_async(p, SIZE, GPUMEM_DEVICE_HOST, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == GPUMEM_DEVICE_HOST);
    /* The data survives the trips. */
    CHECK(tst_verify(p, SIZE, 1) == SIZE);

    /* Partial ranges: the halves disagree, so the whole has no location. */
    CHECK_OK(gpumem_prefetch_async(p, HALF, 0, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, HALF) == 0);
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p + HALF, HALF) == GPUMEM_DEVICE_HOST);
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == NONE);
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p + HALF - PAGE, 2 * PAGE) == NONE);
    CHECK_OK(gpumem_prefetch_async(p + HALF, HALF, 0, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == 0);

    /* Bad prefetches change nothing. */
    int32_t count = 1;
    CHECK_OK(gpumem_device_count(&count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_prefetch_async(p, SIZE, count, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_prefetch_async(p, SIZE, -2, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(p, SIZE + 1, 0, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(p + HALF, HALF + 1, 0, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(p, 0, 0, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(NULL, SIZE, 0, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(p, SIZE_MAX, 0, s));
    int on_stack[16];
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(on_stack, sizeof on_stack, 0, s));
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_prefetch_async(dev, SIZE, 0, s));
    CHECK_OK(gpumem_free(dev));
    gpumem_stream_t dead = NULL;
    REQUIRE_OK(gpumem_stream_create(&dead));
    CHECK_OK(gpumem_stream_destroy(dead));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_prefetch_async(p, SIZE, GPUMEM_DEVICE_HOST, dead));
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == 0);

    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(p));
}

static void test_read_mostly(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, 0));
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, SIZE) == 0);
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, SIZE) == 1);
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p + PAGE, PAGE) == 1);
    /* Unset on the second half: the whole is no longer read-mostly, the first half is. */
    CHECK_OK(gpumem_advise(p + HALF, HALF, GPUMEM_ADVISE_UNSET_READ_MOSTLY, 0));
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, SIZE) == 0);
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, HALF) == 1);
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p + HALF, HALF) == 0);
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p + HALF - PAGE, 2 * PAGE) == 0);
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_UNSET_READ_MOSTLY, 0));
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, HALF) == 0);
    /* Read-mostly memory is still writable. */
    tst_fill(p, SIZE, 8);
    CHECK(tst_download_verify(p, SIZE, 8));
    CHECK_OK(gpumem_free(p));
}

static void test_preferred_location(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, 0));
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == NONE);
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, 0));
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == 0);
    CHECK_OK(gpumem_advise(p + HALF, HALF, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, GPUMEM_DEVICE_HOST));
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, HALF) == 0);
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p + HALF, HALF) == GPUMEM_DEVICE_HOST);
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p + HALF + PAGE, PAGE) == GPUMEM_DEVICE_HOST);
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == NONE);
    CHECK_OK(gpumem_advise(p, HALF, GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION, 0));
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, HALF) == NONE);
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p + HALF, HALF) == GPUMEM_DEVICE_HOST);
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION, 0));
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == NONE);

    int32_t count = 1;
    CHECK_OK(gpumem_device_count(&count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, -3));
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == NONE);
    CHECK_OK(gpumem_free(p));
}

static void test_accessed_by(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, 0));
    const int HOSTBIT = 1, DEV0 = 2;
    CHECK(accessed_by(p, SIZE) == 0);
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_ACCESSED_BY, 0));
    CHECK(accessed_by(p, SIZE) == DEV0);
    /* Host on the first half only: the whole range still has just device 0. */
    CHECK_OK(gpumem_advise(p, HALF, GPUMEM_ADVISE_SET_ACCESSED_BY, GPUMEM_DEVICE_HOST));
    CHECK(accessed_by(p, SIZE) == DEV0);
    CHECK(accessed_by(p, HALF) == (DEV0 | HOSTBIT));
    CHECK(accessed_by(p + PAGE, PAGE) == (DEV0 | HOSTBIT));
    CHECK(accessed_by(p + HALF, HALF) == DEV0);
    /* Setting it twice lists it once. */
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_ACCESSED_BY, 0));
    CHECK(accessed_by(p, SIZE) == DEV0);
    /* Unset device 0 on the second half. */
    CHECK_OK(gpumem_advise(p + HALF, HALF, GPUMEM_ADVISE_UNSET_ACCESSED_BY, 0));
    CHECK(accessed_by(p, SIZE) == 0);
    CHECK(accessed_by(p, HALF) == (DEV0 | HOSTBIT));
    CHECK(accessed_by(p + HALF, HALF) == 0);
    CHECK_OK(gpumem_advise(p, HALF, GPUMEM_ADVISE_UNSET_ACCESSED_BY, GPUMEM_DEVICE_HOST));
    CHECK(accessed_by(p, HALF) == DEV0);

    /* The array is filled to its size, unused entries -2. */
    int32_t one[1] = {99};
    CHECK_OK(gpumem_range_get_attribute(one, sizeof one, GPUMEM_RANGE_ACCESSED_BY, p, HALF));
    CHECK(one[0] == 0);
    int32_t three[3] = {99, 99, 99};
    CHECK_OK(gpumem_range_get_attribute(three, sizeof three, GPUMEM_RANGE_ACCESSED_BY, p + HALF, HALF));
    CHECK(three[0] == NONE && three[1] == NONE && three[2] == NONE);
    /* Sizes that are not a non-zero multiple of 4 are refused. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(three, 0, GPUMEM_RANGE_ACCESSED_BY, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(three, 6, GPUMEM_RANGE_ACCESSED_BY, p, SIZE));
    int32_t count = 1;
    CHECK_OK(gpumem_device_count(&count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_ACCESSED_BY, count));
    CHECK_OK(gpumem_free(p));
}

static void test_range_get_attributes(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, 0));
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, GPUMEM_DEVICE_HOST));
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_ACCESSED_BY, 0));
    CHECK_OK(gpumem_prefetch_async(p, SIZE, 0, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));

    int32_t rm = 9, pl = 9, lp = 9, ab[4] = {9, 9, 9, 9};
    void *data[4] = {&rm, &pl, ab, &lp};
    size_t sizes[4] = {4, 4, sizeof ab, 4};
    int32_t attrs[4] = {GPUMEM_RANGE_READ_MOSTLY, GPUMEM_RANGE_PREFERRED_LOCATION, GPUMEM_RANGE_ACCESSED_BY,
                        GPUMEM_RANGE_LAST_PREFETCH_LOCATION};
    CHECK_OK(gpumem_range_get_attributes(data, sizes, attrs, 4, p, SIZE));
    CHECK(rm == 1);
    CHECK(pl == GPUMEM_DEVICE_HOST);
    CHECK(lp == 0);
    CHECK(ab[0] == 0 && ab[1] == NONE && ab[2] == NONE && ab[3] == NONE);
    /* The same answers as one at a time. */
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, SIZE) == rm);
    CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == pl);
    CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == lp);

    /* One bad entry fails the whole call. */
    int32_t bad_attrs[4] = {GPUMEM_RANGE_READ_MOSTLY, 99, GPUMEM_RANGE_ACCESSED_BY, GPUMEM_RANGE_LAST_PREFETCH_LOCATION};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(data, sizes, bad_attrs, 4, p, SIZE));
    size_t bad_sizes[4] = {4, 8, sizeof ab, 4};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(data, bad_sizes, attrs, 4, p, SIZE));
    void *bad_data[4] = {&rm, NULL, ab, &lp};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(bad_data, sizes, attrs, 4, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(NULL, sizes, attrs, 4, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(data, NULL, attrs, 4, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(data, sizes, NULL, 4, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attributes(data, sizes, attrs, 4, p, SIZE + 1));

    /* Single-attribute errors. */
    int32_t v = 0;
    int64_t v8 = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(NULL, 4, GPUMEM_RANGE_READ_MOSTLY, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v8, 8, GPUMEM_RANGE_READ_MOSTLY, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 2, GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 0, GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, 0, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, 5, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, p, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, p, SIZE + 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE,
                 gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, p + SIZE - 1, 2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, NULL, SIZE));
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, dev, 4096));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_advise(dev, 4096, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_free(p));
    /* A freed range is no longer managed. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, p, SIZE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
}

static void test_advise_errors_and_coarse_grain(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, 0));
    const int32_t bad_advice[] = {0, 7, 99, 102, -1};
    for (size_t i = 0; i < TST_COUNT(bad_advice); ++i)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_advise(p, SIZE, bad_advice[i], 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_advise(p, 0, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_advise(p, SIZE + 1, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_advise(NULL, SIZE, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    /* Nothing was recorded by the refused calls. */
    CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, SIZE) == 0);

    /* Coarse-grain advice is accepted; outside AMD it changes nothing. */
    CHECK_OK(gpumem_advise(p, SIZE, GPUMEM_ADVISE_SET_COARSE_GRAIN, 0));
    CHECK_OK(gpumem_advise(p, HALF, GPUMEM_ADVISE_UNSET_COARSE_GRAIN, 0));
    if (tst_backend() != GPUMEM_BACKEND_HIP) {
        CHECK(attr(GPUMEM_RANGE_READ_MOSTLY, p, SIZE) == 0);
        CHECK(attr(GPUMEM_RANGE_PREFERRED_LOCATION, p, SIZE) == NONE);
        CHECK(accessed_by(p, SIZE) == 0);
        CHECK(attr(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, p, SIZE) == NONE);
    }
    tst_fill(p, SIZE, 2);
    CHECK(tst_download_verify(p, SIZE, 2));
    CHECK_OK(gpumem_free(p));
}

static void test_stream_attach(void)
{
    NEED_MANAGED();
    char *p = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&p, SIZE, GPUMEM_ATTACH_HOST));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    CHECK_OK(gpumem_stream_attach(s, p, 0, GPUMEM_ATTACH_SINGLE));
    CHECK_OK(gpumem_stream_synchronize(s));
    /* Attached to s: work on s and the CPU after synchronising see the same data. */
    CHECK_OK(gpumem_memset_async(p, 0x5e, SIZE, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify_byte(p, SIZE, 0x5e) == SIZE);
    CHECK_OK(gpumem_stream_attach(s, p, 0, GPUMEM_ATTACH_HOST));
    CHECK_OK(gpumem_stream_synchronize(s));
    tst_fill(p, SIZE, 6);
    CHECK_OK(gpumem_stream_attach(s, p, 0, GPUMEM_ATTACH_GLOBAL));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_download_verify(p, SIZE, 6));

    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_attach(s, p, 0, 0x80));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_attach(s, NULL, 0, GPUMEM_ATTACH_SINGLE));
    /* SINGLE on the default stream: CUDA refuses it, so every backend does. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_attach(NULL, p, 0, GPUMEM_ATTACH_SINGLE));
    CHECK_OK(gpumem_stream_attach(NULL, p, 0, GPUMEM_ATTACH_GLOBAL));
    gpumem_stream_t dead = NULL;
    REQUIRE_OK(gpumem_stream_create(&dead));
    CHECK_OK(gpumem_stream_destroy(dead));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_attach(dead, p, 0, GPUMEM_ATTACH_SINGLE));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(p));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_managed_alloc),        TEST(test_prefetch),
        TEST(test_read_mostly),          TEST(test_preferred_location),
        TEST(test_accessed_by),          TEST(test_range_get_attributes),
        TEST(test_advise_errors_and_coarse_grain), TEST(test_stream_attach),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
