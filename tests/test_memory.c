/* Explicit device memory, copies between every kind pair, fills, and the free rules. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <sys/mman.h>
#include <unistd.h>

#define N ((size_t)65536 + 123)

/* One end of a copy: memory of some kind, at least N bytes. */
typedef struct endpoint {
    const char *name;
    int kind;     /* GPUMEM_KIND_*, UNKNOWN for plain malloc */
    void *ptr;    /* where the N bytes start */
    size_t extent; /* a length from ptr that surely runs past the allocation's end */
    /* for teardown */
    void *raw;
    size_t raw_size;
    gpumem_mem_handle_t handle;
    gpumem_buffer_t buffer;
} endpoint_t;

enum { EP_MAX = 9 };

static size_t round_up(size_t v, size_t g) { return (v + g - 1) / g * g; }

/* Make every kind of memory this device offers.  Returns how many were made. */
static int make_endpoints(endpoint_t *ep)
{
    gpumem_device_info_t info = tst_info(0);
    int n = 0;
    memset(ep, 0, sizeof(endpoint_t) * EP_MAX);

    ep[n].name = "pageable";
    ep[n].kind = GPUMEM_KIND_UNKNOWN;
    ep[n].ptr = malloc(N);
    ep[n].extent = N + 1;
    if (ep[n].ptr)
        ++n;

    ep[n].name = "device";
    ep[n].kind = GPUMEM_KIND_DEVICE;
    ep[n].extent = N + 1;
    if (gpumem_malloc(&ep[n].ptr, N) == GPUMEM_SUCCESS)
        ++n;
    else
        tst_fail(__FILE__, __LINE__, "gpumem_malloc: %s", gpumem_last_error_message());

    ep[n].name = "pinned";
    ep[n].kind = GPUMEM_KIND_HOST_PINNED;
    ep[n].extent = N + 1;
    if (gpumem_host_alloc(&ep[n].ptr, N, GPUMEM_HOST_MAPPED) == GPUMEM_SUCCESS)
        ++n;
    else
        tst_fail(__FILE__, __LINE__, "gpumem_host_alloc: %s", gpumem_last_error_message());

    if (info.host_register != GPUMEM_SUPPORT_NONE) {
        ep[n].name = "registered";
        ep[n].kind = GPUMEM_KIND_HOST_REGISTERED;
        ep[n].raw_size = round_up(N, 4096);
        ep[n].raw = aligned_alloc(4096, ep[n].raw_size);
        ep[n].ptr = ep[n].raw;
        ep[n].extent = ep[n].raw_size + 1;
        if (ep[n].raw && gpumem_host_register(ep[n].raw, ep[n].raw_size, GPUMEM_HOST_REGISTER_MAPPED) == GPUMEM_SUCCESS)
            ++n;
        else
            tst_fail(__FILE__, __LINE__, "gpumem_host_register: %s", gpumem_last_error_message());
    }
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        ep[n].name = "managed";
        ep[n].kind = GPUMEM_KIND_MANAGED;
        ep[n].extent = N + 1;
        if (gpumem_managed_alloc(&ep[n].ptr, N, 0) == GPUMEM_SUCCESS)
            ++n;
        else
            tst_fail(__FILE__, __LINE__, "gpumem_managed_alloc: %s", gpumem_last_error_message());
    }
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        ep[n].name = "stream-ordered";
        ep[n].kind = GPUMEM_KIND_STREAM_ORDERED;
        ep[n].extent = N + 1;
        if (gpumem_malloc_async(&ep[n].ptr, N, NULL) == GPUMEM_SUCCESS)
            ++n;
        else
            tst_fail(__FILE__, __LINE__, "gpumem_malloc_async: %s", gpumem_last_error_message());
    }
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        ep[n].name = "virtual";
        ep[n].kind = GPUMEM_KIND_VIRTUAL;
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
        int ok = gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM) == GPUMEM_SUCCESS && g > 0;
        if (ok) {
            ep[n].raw_size = round_up(N, g);
            ep[n].extent = ep[n].raw_size + 1;
            ok = gpumem_mem_create(&ep[n].handle, ep[n].raw_size, &props) == GPUMEM_SUCCESS &&
                 gpumem_mem_address_reserve(&ep[n].raw, ep[n].raw_size, 0, NULL) == GPUMEM_SUCCESS &&
                 gpumem_mem_map(ep[n].raw, ep[n].raw_size, 0, ep[n].handle) == GPUMEM_SUCCESS &&
                 gpumem_mem_set_access(ep[n].raw, ep[n].raw_size, &rw, 1) == GPUMEM_SUCCESS;
        }
        ep[n].ptr = ep[n].raw;
        if (ok)
            ++n;
        else
            tst_fail(__FILE__, __LINE__, "VMM setup: %s", gpumem_last_error_message());
    }
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        ep[n].name = "buffer";
        ep[n].kind = GPUMEM_KIND_BUFFER;
        /* Past any rounding of the reservation to a granularity. */
        ep[n].extent = round_up(N, info.vmm_recommended_granularity ? info.vmm_recommended_granularity : 4096) +
                       (size_t)64 * 1024 * 1024;
        if (gpumem_buffer_create(&ep[n].buffer, N, N, 0) == GPUMEM_SUCCESS &&
            gpumem_buffer_data(ep[n].buffer, &ep[n].ptr) == GPUMEM_SUCCESS && ep[n].ptr != NULL)
            ++n;
        else
            tst_fail(__FILE__, __LINE__, "gpumem_buffer_create: %s", gpumem_last_error_message());
    }
    return n;
}

static void free_endpoints(endpoint_t *ep, int n)
{
    for (int i = 0; i < n; ++i) {
        switch (ep[i].kind) {
        case GPUMEM_KIND_UNKNOWN: free(ep[i].ptr); break;
        case GPUMEM_KIND_HOST_PINNED: CHECK_OK(gpumem_host_free(ep[i].ptr)); break;
        case GPUMEM_KIND_HOST_REGISTERED:
            CHECK_OK(gpumem_host_unregister(ep[i].raw));
            free(ep[i].raw);
            break;
        case GPUMEM_KIND_STREAM_ORDERED:
            CHECK_OK(gpumem_free_async(ep[i].ptr, NULL));
            CHECK_OK(gpumem_stream_synchronize(NULL));
            break;
        case GPUMEM_KIND_VIRTUAL:
            CHECK_OK(gpumem_mem_unmap(ep[i].raw, ep[i].raw_size));
            CHECK_OK(gpumem_mem_release(ep[i].handle));
            CHECK_OK(gpumem_mem_address_free(ep[i].raw, ep[i].raw_size));
            break;
        case GPUMEM_KIND_BUFFER: CHECK_OK(gpumem_buffer_destroy(ep[i].buffer)); break;
        default: CHECK_OK(gpumem_free(ep[i].ptr)); break;
        }
    }
}

/* Put the pattern into an endpoint (pageable directly, others by copy). */
static int put(endpoint_t *e, size_t n, unsigned seed)
{
    if (e->kind == GPUMEM_KIND_UNKNOWN) {
        tst_fill(e->ptr, n, seed);
        return 1;
    }
    return tst_upload(e->ptr, n, seed) == GPUMEM_SUCCESS;
}

static void test_copy_every_pair(void)
{
    endpoint_t ep[EP_MAX];
    int n = make_endpoints(ep);
    REQUIRE(n >= 3);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            if (i == j)
                continue;
            unsigned seed = (unsigned)(i * 16 + j);
            CHECK(put(&ep[i], N, seed));
            CHECK_OK(gpumem_memset(ep[j].ptr, 0, N));
            CHECK_OK(gpumem_memcpy(ep[j].ptr, ep[i].ptr, N));
            CHECKF(tst_download_verify(ep[j].ptr, N, seed), "memcpy %s -> %s lost data", ep[i].name, ep[j].name);

            /* The same in stream order, between interior pointers. */
            seed += 1000;
            CHECK(put(&ep[i], N, seed));
            CHECK_OK(gpumem_memset_async(ep[j].ptr, 0, N, s));
            CHECK_OK(gpumem_memcpy_async((char *)ep[j].ptr + 5, ep[i].ptr, N - 5, s));
            CHECK_OK(gpumem_stream_synchronize(s));
            CHECKF(tst_download_verify((char *)ep[j].ptr + 5, N - 5, seed), "memcpy_async %s -> %s lost data",
                   ep[i].name, ep[j].name);
            unsigned char first[5] = {1, 1, 1, 1, 1};
            CHECK_OK(gpumem_memcpy(first, ep[j].ptr, 5));
            CHECKF(tst_verify_byte(first, 5, 0) == 5, "memcpy_async %s -> %s wrote before its destination",
                   ep[i].name, ep[j].name);
        }
    }
    /* Host memory of gpumem kinds is host memory: the CPU sees the copy directly. */
    for (int i = 0; i < n; ++i) {
        int host_side = ep[i].kind == GPUMEM_KIND_UNKNOWN || ep[i].kind == GPUMEM_KIND_HOST_PINNED ||
                        ep[i].kind == GPUMEM_KIND_HOST_REGISTERED || ep[i].kind == GPUMEM_KIND_MANAGED ||
                        tst_device_memory_is_host();
        if (!host_side)
            continue;
        CHECK_OK(tst_upload(ep[i].ptr, N, 77));
        CHECKF(tst_verify(ep[i].ptr, N, 77) == N, "%s memory does not show the copy to the CPU", ep[i].name);
    }
    CHECK_OK(gpumem_stream_destroy(s));
    free_endpoints(ep, n);
}

static void test_memset(void)
{
    endpoint_t ep[EP_MAX];
    int n = make_endpoints(ep);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    unsigned char *host = (unsigned char *)malloc(N);
    REQUIRE(host != NULL);
    for (int i = 0; i < n; ++i) {
        /* Only the low byte of the value counts. */
        CHECK_OK(gpumem_memset(ep[i].ptr, 0x1A5, N));
        CHECK_OK(gpumem_memcpy(host, ep[i].ptr, N));
        CHECKF(tst_verify_byte(host, N, 0xA5) == N, "memset of %s", ep[i].name);
        /* An interior range, in stream order; the bytes around it stay. */
        CHECK_OK(gpumem_memset_async((char *)ep[i].ptr + 100, -1, 50, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_memcpy(host, ep[i].ptr, N));
        CHECKF(tst_verify_byte(host, 100, 0xA5) == 100 && tst_verify_byte(host + 100, 50, 0xFF) == 50 &&
                   tst_verify_byte(host + 150, N - 150, 0xA5) == N - 150,
               "memset_async of an interior range of %s", ep[i].name);
        /* n = 0 is a no-op, even with NULL. */
        CHECK_OK(gpumem_memset(ep[i].ptr, 0, 0));
    }
    CHECK_OK(gpumem_memset(NULL, 0, 0));
    CHECK_OK(gpumem_memset_async(NULL, 0, 0, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(NULL, 0, 16));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_async(NULL, 0, 16, s));
    free(host);
    CHECK_OK(gpumem_stream_destroy(s));
    free_endpoints(ep, n);
}

/* A copy or fill that runs past the end of a known allocation is refused, and nothing changes. */
static void test_overrun(void)
{
    endpoint_t ep[EP_MAX];
    int n = make_endpoints(ep);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    for (int i = 0; i < n; ++i) {
        if (ep[i].kind == GPUMEM_KIND_UNKNOWN)
            continue;
        size_t len = ep[i].extent;
        unsigned char *big = (unsigned char *)malloc(len);
        unsigned char *back = (unsigned char *)malloc(N);
        REQUIRE(big && back);
        memset(big, 0x77, len);
        CHECK_OK(gpumem_memset(ep[i].ptr, 0x10, N));

        /* destination overrun */
        CHECKF(gpumem_memcpy(ep[i].ptr, big, len) == GPUMEM_ERROR_INVALID_VALUE, "memcpy into %s past its end",
               ep[i].name);
        CHECKF(gpumem_memcpy_async(ep[i].ptr, big, len, s) == GPUMEM_ERROR_INVALID_VALUE,
               "memcpy_async into %s past its end", ep[i].name);
        CHECKF(gpumem_memset(ep[i].ptr, 0x33, len) == GPUMEM_ERROR_INVALID_VALUE, "memset of %s past its end",
               ep[i].name);
        CHECKF(gpumem_memset_async(ep[i].ptr, 0x33, len, s) == GPUMEM_ERROR_INVALID_VALUE,
               "memset_async of %s past its end", ep[i].name);
        CHECK(strlen(gpumem_last_error_message()) > 0);
        /* a range starting inside near the end */
        if (ep[i].kind != GPUMEM_KIND_BUFFER) {
            size_t end = ep[i].extent - 1; /* the allocation's exact size */
            CHECKF(gpumem_memcpy((char *)ep[i].ptr + end - 8, big, 16) == GPUMEM_ERROR_INVALID_VALUE,
                   "memcpy into the last 8 bytes of %s + 8 more", ep[i].name);
            CHECKF(gpumem_memset((char *)ep[i].ptr + end - 1, 0, 2) == GPUMEM_ERROR_INVALID_VALUE,
                   "memset of the last byte of %s + 1 more", ep[i].name);
        }
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_memcpy(back, ep[i].ptr, N));
        CHECKF(tst_verify_byte(back, N, 0x10) == N, "a refused copy or fill changed %s", ep[i].name);

        /* source overrun */
        memset(big, 0x77, len);
        CHECKF(gpumem_memcpy(big, ep[i].ptr, len) == GPUMEM_ERROR_INVALID_VALUE, "memcpy from %s past its end",
               ep[i].name);
        CHECKF(gpumem_memcpy_async(big, ep[i].ptr, len, s) == GPUMEM_ERROR_INVALID_VALUE,
               "memcpy_async from %s past its end", ep[i].name);
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECKF(tst_verify_byte(big, len, 0x77) == len, "a refused copy from %s wrote its destination", ep[i].name);
        free(big);
        free(back);
    }
    CHECK_OK(gpumem_stream_destroy(s));
    free_endpoints(ep, n);
}

static void test_copy_arguments(void)
{
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 256));
    unsigned char host[256];
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(NULL, host, 16));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(dev, NULL, 16));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_async(NULL, host, 16, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_async(dev, NULL, 16, NULL));
    CHECK_OK(gpumem_memcpy(NULL, NULL, 0));
    CHECK_OK(gpumem_memcpy(dev, host, 0));
    CHECK_OK(gpumem_memcpy_async(NULL, NULL, 0, NULL));
    /* A dead stream. */
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_memcpy_async(dev, host, 16, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_memset_async(dev, 0, 16, s));
    /* SIZE_MAX bytes from a known allocation run past it. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(host, dev, SIZE_MAX));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(dev, 0, SIZE_MAX));
    /* Interior ranges that stay inside are fine. */
    CHECK_OK(gpumem_memset(dev, 0x42, 256));
    CHECK_OK(gpumem_memcpy(host, (char *)dev + 128, 128));
    CHECK(tst_verify_byte(host, 128, 0x42) == 128);
    CHECK_OK(gpumem_free(dev));
}

static void test_malloc_and_free_rules(void)
{
    void *p = (void *)1;
    CHECK_OK(gpumem_malloc(&p, 0));
    CHECK(p == NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_malloc(NULL, 16));
    p = (void *)1;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, SIZE_MAX));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, SIZE_MAX / 2));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, SIZE_MAX - 4095));
    CHECK(strlen(gpumem_last_error_message()) > 0);

    CHECK_OK(gpumem_free(NULL));

    /* Many allocations: distinct, non-overlapping, and data stays put. */
    enum { K = 64 };
    void *a[K];
    for (int i = 0; i < K; ++i) {
        REQUIRE_OK(gpumem_malloc(&a[i], 1000 + (size_t)i * 37));
        CHECK_OK(tst_upload(a[i], 1000 + (size_t)i * 37, (unsigned)i));
    }
    for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j)
            if (i != j)
                CHECK((char *)a[i] + 1000 + (size_t)i * 37 <= (char *)a[j] || (char *)a[j] + 1000 + (size_t)j * 37 <= (char *)a[i]);
    for (int i = 0; i < K; ++i) {
        CHECK(tst_download_verify(a[i], 1000 + (size_t)i * 37, (unsigned)i));
        /* interior pointers are not freed, and the allocation survives */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free((char *)a[i] + 1));
        CHECK(tst_download_verify(a[i], 1000 + (size_t)i * 37, (unsigned)i));
        /* the wrong free function */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(a[i]));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_unregister(a[i]));
        CHECK_OK(gpumem_free(a[i]));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(a[i])); /* double free */
    }
    int on_stack = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(&on_stack));
    void *heap = malloc(64);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(heap));
    free(heap);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free((void *)(uintptr_t)0x10));
}

/* gpumem_free takes DEVICE, HOST_PINNED, MANAGED and STREAM_ORDERED, and refuses the others. */
static void test_free_by_kind(void)
{
    endpoint_t ep[EP_MAX];
    int n = make_endpoints(ep);
    for (int i = 0; i < n; ++i) {
        switch (ep[i].kind) {
        case GPUMEM_KIND_HOST_REGISTERED:
        case GPUMEM_KIND_VIRTUAL:
        case GPUMEM_KIND_BUFFER: {
            CHECKF(gpumem_free(ep[i].ptr) == GPUMEM_ERROR_INVALID_POINTER, "gpumem_free took %s memory", ep[i].name);
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(ep[i].ptr, &pi));
            CHECKF(pi.kind == ep[i].kind, "%s memory is gone after a refused gpumem_free", ep[i].name);
            break;
        }
        case GPUMEM_KIND_DEVICE:
        case GPUMEM_KIND_HOST_PINNED:
        case GPUMEM_KIND_MANAGED:
        case GPUMEM_KIND_STREAM_ORDERED: {
            CHECKF(gpumem_free((char *)ep[i].ptr + 16) == GPUMEM_ERROR_INVALID_POINTER,
                   "gpumem_free took an interior pointer of %s memory", ep[i].name);
            CHECKF(gpumem_free(ep[i].ptr) == GPUMEM_SUCCESS, "gpumem_free refused %s memory: %s", ep[i].name,
                   gpumem_last_error_message());
            CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(ep[i].ptr));
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(ep[i].ptr, &pi));
            CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
            ep[i].kind = -1; /* already freed */
            break;
        }
        default: break;
        }
    }
    int m = 0;
    for (int i = 0; i < n; ++i)
        if (ep[i].kind != -1)
            ep[m++] = ep[i];
    free_endpoints(ep, m);
}

/* ------------------------------------------------------------------------ */
/* Freed memory: every copy and fill is refused, on every backend */
/* ------------------------------------------------------------------------ */

/* One call on freed memory: INVALID_POINTER, and the message says the memory was freed. */
#define EXPECT_FREED(what, call)                                                                                   \
    do {                                                                                                           \
        gpumem_status_t st_ = (call);                                                                              \
        CHECKF(st_ == GPUMEM_ERROR_INVALID_POINTER && tst_contains(gpumem_last_error_message(), "freed"),          \
               "%s on freed %s memory %p gave %s: \"%s\"", #call, what, (void *)q, gpumem_status_string(st_),      \
               gpumem_last_error_message());                                                                      \
    } while (0)

/* Every copy and fill at `p` (freed `what` memory), at its start and inside, is INVALID_POINTER,
 * and nothing changes: the other side's bytes stay, and nothing is allocated or freed. */
static void expect_freed(const char *what, void *p)
{
    gpumem_stats_t base = tst_stats();
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    unsigned char host[256];
    memset(host, 0x5a, sizeof host);
    char *at[2] = {(char *)p, (char *)p + 100};
    for (int i = 0; i < 2; ++i) {
        char *q = at[i];
        void *to_host[1] = {host}, *to_freed[1] = {q};
        const void *from_freed[1] = {q}, *from_host[1] = {host};
        size_t sizes[1] = {64};
        EXPECT_FREED(what, gpumem_memcpy(host, q, 64));
        EXPECT_FREED(what, gpumem_memcpy(q, host, 64));
        EXPECT_FREED(what, gpumem_memset(q, 1, 64));
        EXPECT_FREED(what, gpumem_memcpy_async(host, q, 64, s));
        EXPECT_FREED(what, gpumem_memcpy_async(q, host, 64, NULL));
        EXPECT_FREED(what, gpumem_memset_async(q, 1, 64, s));
        EXPECT_FREED(what, gpumem_memcpy_batch_async(to_host, from_freed, sizes, 1, s));
        EXPECT_FREED(what, gpumem_memcpy_batch_async(to_freed, from_host, sizes, 1, s));
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECKF(tst_verify_byte(host, sizeof host, 0x5a) == sizeof host, "a refused call on freed %s memory wrote %p",
           what, (void *)host);
    CHECK_NO_LEAK(&base);
}

/* Memory freed by every call that frees, on every backend: refused by copies and fills. */
static void test_freed_memory_is_refused(void)
{
    gpumem_device_info_t info = tst_info(0);
    void *p = NULL;

    REQUIRE_OK(gpumem_malloc(&p, N));
    CHECK_OK(gpumem_memset(p, 7, N));
    CHECK_OK(gpumem_free(p));
    expect_freed("device", p);

    /* Pinned memory freed into gpumem's cache: still mapped, still the vendor's. */
    REQUIRE_OK(gpumem_host_alloc(&p, N, GPUMEM_HOST_MAPPED));
    CHECK_OK(gpumem_memset(p, 7, N));
    CHECK_OK(gpumem_host_free(p));
    expect_freed("pinned", p);

    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
        gpumem_mem_handle_t h = 0;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        REQUIRE_OK(gpumem_mem_create(&h, g, &props));
        REQUIRE_OK(gpumem_mem_address_reserve(&p, g, 0, NULL));
        CHECK_OK(gpumem_mem_map(p, g, 0, h));
        CHECK_OK(gpumem_mem_set_access(p, g, &rw, 1));
        CHECK_OK(gpumem_memset(p, 7, g));
        CHECK_OK(gpumem_mem_unmap(p, g));
        CHECK_OK(gpumem_mem_release(h));
        CHECK_OK(gpumem_mem_address_free(p, g));
        expect_freed("VMM", p);
    }

    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_managed_alloc(&p, N, 0));
        CHECK_OK(gpumem_memset(p, 7, N));
        CHECK_OK(gpumem_free(p));
        expect_freed(info.managed_memory == GPUMEM_SUPPORT_EMULATED ? "emulated managed" : "managed", p);
    }

    /* The default pool's blocks (the vendor's pool where there is one, else gpumem's own). */
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_malloc_async(&p, N, NULL));
        CHECK_OK(gpumem_memset(p, 7, N));
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        expect_freed("stream-ordered", p);
        REQUIRE_OK(gpumem_malloc_async(&p, N, NULL));
        CHECK_OK(gpumem_free(p));
        expect_freed("stream-ordered (gpumem_free)", p);
    }

    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        /* A destroyed buffer's data. */
        gpumem_buffer_t b = NULL;
        REQUIRE_OK(gpumem_buffer_create(&b, N, 8 * N, 0));
        REQUIRE_OK(gpumem_buffer_data(b, &p));
        CHECK_OK(gpumem_memset(p, 7, N));
        CHECK_OK(gpumem_buffer_destroy(b));
        expect_freed("destroyed buffer", p);

        /* What a resize gives back: the old data where the data moves (the allocate-copy-free
         * fallback), else the bytes past the new end once their memory is unmapped. */
        REQUIRE_OK(gpumem_buffer_create(&b, 8 * N, 8 * N, 0));
        REQUIRE_OK(gpumem_buffer_data(b, &p));
        CHECK_OK(gpumem_memset(p, 7, 8 * N));
        CHECK_OK(gpumem_buffer_resize(b, 0));
        void *now = NULL;
        CHECK_OK(gpumem_buffer_data(b, &now));
        if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
            size_t g = info.vmm_recommended_granularity ? info.vmm_recommended_granularity : 4096;
            if (8 * N >= g + 100) /* a whole unmapped granule past the new end */
                expect_freed("shrunk buffer", (char *)p + g);
        } else {
            expect_freed("moved buffer", p);
        }
        CHECK_OK(gpumem_buffer_destroy(b));
    }
}

/* An address gpumem freed is anybody's once something is mapped there again: the caller's
 * memory, copied and filled as any other.  (Where the freed address stays reserved, as device
 * memory on a GPU or in strict mode is, nothing can be mapped there: skipped.) */
static void *map_at(void *addr, size_t n)
{
#ifdef MAP_FIXED_NOREPLACE
    void *m = mmap(addr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
#else
    void *m = mmap(addr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#endif
    if (m == MAP_FAILED)
        return NULL;
    if (m != addr) { /* a kernel that takes the address as a hint only */
        munmap(m, n);
        return NULL;
    }
    return m;
}

static void expect_callers(const char *what, void *p)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if ((uintptr_t)p % page)
        return;
    unsigned char *m = (unsigned char *)map_at(p, page);
    if (!m) {
        NOTE("freed %s memory at %p stays reserved here", what, p);
        return;
    }
    unsigned char host[256];
    tst_fill(host, sizeof host, 3);
    CHECKF(gpumem_memcpy(m, host, sizeof host) == GPUMEM_SUCCESS && tst_verify(m, sizeof host, 3) == sizeof host,
           "a copy into memory mapped where freed %s memory was: %s", what, gpumem_last_error_message());
    CHECKF(gpumem_memset(m + 512, 0x21, 64) == GPUMEM_SUCCESS && tst_verify_byte(m + 512, 64, 0x21) == 64,
           "a fill of memory mapped where freed %s memory was: %s", what, gpumem_last_error_message());
    memset(host, 0, sizeof host);
    CHECKF(gpumem_memcpy(host, m, sizeof host) == GPUMEM_SUCCESS && tst_verify(host, sizeof host, 3) == sizeof host,
           "a copy from memory mapped where freed %s memory was: %s", what, gpumem_last_error_message());
    munmap(m, page);
}

static void test_reused_address_is_the_callers(void)
{
    gpumem_device_info_t info = tst_info(0);
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, N));
    CHECK_OK(gpumem_free(p));
    expect_callers("device", p);
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_managed_alloc(&p, N, 0));
        CHECK_OK(gpumem_free(p));
        expect_callers("managed", p);
    }
    /* Registered memory is the caller's before, while and after it is registered. */
    if (info.host_register != GPUMEM_SUPPORT_NONE) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        unsigned char *mem = (unsigned char *)aligned_alloc(page, 4 * page);
        REQUIRE(mem != NULL);
        REQUIRE_OK(gpumem_host_register(mem, 4 * page, 0));
        CHECK_OK(gpumem_host_unregister(mem));
        unsigned char host[64];
        tst_fill(host, sizeof host, 9);
        CHECK_OK(gpumem_memcpy(mem + 8, host, sizeof host));
        CHECK(tst_verify(mem + 8, sizeof host, 9) == sizeof host);
        CHECK_OK(gpumem_memset(mem + 100, 0x42, 16));
        CHECK(tst_verify_byte(mem + 100, 16, 0x42) == 16);
        free(mem);
    }
}

/* A fill of host memory the runtime does not know: plain malloc memory is filled (by the CPU
 * where the device cannot write it), and an address that is no writable memory at all is
 * INVALID_POINTER, never a crash. */
static void test_fill_unknown_host_memory(void)
{
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    size_t n = 300000;
    unsigned char *m = malloc(n);
    REQUIRE(m != NULL);
    CHECK_OK(gpumem_memset(m, 0x5c, n));
    CHECK(tst_verify_byte(m, n, 0x5c) == n);
    CHECK_OK(gpumem_memset_async(m + 7, 0x17, n - 14, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(m[6] == 0x5c && tst_verify_byte(m + 7, n - 14, 0x17) == n - 14 && m[n - 7] == 0x5c);
    free(m);
    gpumem_device_info_t info = tst_info(0);
    if (tst_backend() != GPUMEM_BACKEND_HOST && info.pageable_memory_access) {
        CHECK_OK(gpumem_stream_destroy(s));
        SKIP("the device writes plain host memory itself here, as the CPU would");
    }
    /* The first page past NULL (below vm.mmap_min_addr: never mapped). */
    void *bogus = (void *)(uintptr_t)0x1000;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset(bogus, 0, 64));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset_async(bogus, 0, 64, s));
    /* Memory this process may read but not write. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *ro = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(ro != MAP_FAILED);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset(ro, 1, 2 * page));
    CHECK(strstr(gpumem_last_error_message(), "cannot set") != NULL);
    munmap(ro, 2 * page);
    CHECK_OK(gpumem_stream_destroy(s));
}

/* A copy between memory gpumem does not know: plain malloc memory is copied, synchronously, on a
 * stream and in a batch; an address that is no memory at all is refused, never a crash
 * (INVALID_POINTER on the host backend, where the copy goes through the kernel; the GPU runtimes
 * refuse it with INVALID_VALUE or INVALID_POINTER). */
static void test_copy_unknown_memory(void)
{
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    const size_t n = 300000;
    unsigned char *a = malloc(n), *b = malloc(n);
    REQUIRE(a != NULL && b != NULL);
    tst_fill(a, n, 5);
    CHECK_OK(gpumem_memcpy(b, a, n));
    CHECK(tst_verify(b, n, 5) == n);
    memset(b, 0, n);
    CHECK_OK(gpumem_memcpy_async(b, a, n, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify(b, n, 5) == n);
    memset(b, 0, n);
    void *dsts[2] = {b, b + n / 2};
    const void *srcs[2] = {a, a + n / 2};
    size_t sizes[2] = {n / 2, n - n / 2};
    CHECK_OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, 2, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify(b, n, 5) == n);

    /* An address where no memory is: INVALID_POINTER on every backend, naming the side, before
     * any runtime sees it (CUDA's driver dies with SIGSEGV there, and so does the fake). */
    void *bogus = (void *)(uintptr_t)0x1000; /* below vm.mmap_min_addr: never mapped */
    const char *side[5] = {"source", "destination", "source", "destination", "destination"};
    gpumem_status_t st[5];
    char msg[5][512];
    st[0] = gpumem_memcpy(b, bogus, 64);
    snprintf(msg[0], sizeof msg[0], "%s", gpumem_last_error_message());
    st[1] = gpumem_memcpy(bogus, a, 64);
    snprintf(msg[1], sizeof msg[1], "%s", gpumem_last_error_message());
    st[2] = gpumem_memcpy_async(b, bogus, 64, s);
    snprintf(msg[2], sizeof msg[2], "%s", gpumem_last_error_message());
    st[3] = gpumem_memcpy_async(bogus, a, 64, s);
    snprintf(msg[3], sizeof msg[3], "%s", gpumem_last_error_message());
    /* A batch whose second entry is bad enqueues nothing: the first entry's bytes stay. */
    memset(b, 0, n);
    void *bad_dsts[2] = {b, bogus};
    st[4] = gpumem_memcpy_batch_async(bad_dsts, srcs, sizes, 2, s);
    snprintf(msg[4], sizeof msg[4], "%s", gpumem_last_error_message());
    for (int i = 0; i < 5; ++i) {
        CHECKF(st[i] == GPUMEM_ERROR_INVALID_POINTER, "case %d: %s (%s)", i, gpumem_status_string(st[i]), msg[i]);
        CHECKF(strstr(msg[i], side[i]) != NULL, "case %d names the %s: %s", i, side[i], msg[i]);
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECKF(tst_verify_byte(b, n, 0) == n, "the batch with a bad entry copied nothing");

    /* Memory this process may read but not write, as a destination; and memory it cannot
     * touch at all (PROT_NONE), as a source. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(ro != MAP_FAILED);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(ro, a, 64));
    CHECK(strstr(gpumem_last_error_message(), "destination") != NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy_async(ro, a, 64, s));
    CHECK(strstr(gpumem_last_error_message(), "destination") != NULL);
    munmap(ro, page);
    void *none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(none != MAP_FAILED);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(b, none, 64));
    CHECK(strstr(gpumem_last_error_message(), "source") != NULL);
    munmap(none, page);
    CHECK_OK(gpumem_stream_synchronize(s));
    free(a);
    free(b);
    CHECK_OK(gpumem_stream_destroy(s));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_copy_every_pair), TEST(test_memset), TEST(test_fill_unknown_host_memory), TEST(test_copy_unknown_memory),
        TEST(test_overrun),         TEST(test_copy_arguments),
        TEST(test_malloc_and_free_rules), TEST(test_free_by_kind),
        TEST(test_freed_memory_is_refused), TEST(test_reused_address_is_the_callers),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
