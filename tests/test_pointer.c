/* Pointer introspection, statistics and the trace callback, for every kind. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <pthread.h>
#include <stddef.h>

#define PAGE 4096

static gpumem_pointer_info_t info_of(const void *p)
{
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    gpumem_status_t st = gpumem_pointer_get_info(p, &pi);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_pointer_get_info(%p) gave %s: %s", p, gpumem_status_string(st),
                 gpumem_last_error_message());
    return pi;
}

/* Check base, size, kind at the start, an interior byte and the last byte. */
static void check_span(const char *what, void *base, size_t size, int kind)
{
    const size_t offs[] = {0, size / 2, size - 1};
    for (size_t i = 0; i < TST_COUNT(offs); ++i) {
        gpumem_pointer_info_t pi = info_of((char *)base + offs[i]);
        CHECKF(pi.kind == kind, "%s+%zu: kind %s, want %s", what, offs[i], tst_kind_name(pi.kind), tst_kind_name(kind));
        CHECKF(pi.base == base, "%s+%zu: base %p, want %p", what, offs[i], pi.base, base);
        CHECKF(pi.alloc_size == size, "%s+%zu: alloc_size %zu, want %zu", what, offs[i], pi.alloc_size, size);
    }
    /* One past the end is not this allocation. */
    gpumem_pointer_info_t past = info_of((char *)base + size);
    CHECKF(past.kind == GPUMEM_KIND_UNKNOWN || past.base != base, "%s: one past the end still reports it", what);
}

static void test_pointer_info_every_kind(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_pointer_info_t pi;

    /* Unknown memory: SUCCESS and UNKNOWN. */
    int on_stack = 0;
    pi = info_of(&on_stack);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
    CHECK(pi.size == sizeof(gpumem_pointer_info_t));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pointer_get_info(&on_stack, NULL));

    /* DEVICE */
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 3000));
    check_span("device", d, 3000, GPUMEM_KIND_DEVICE);
    pi = info_of((char *)d + 17);
    CHECK(pi.device == 0);
    CHECK(pi.emulated == 0);
    CHECK(pi.pool == NULL);
    CHECK(pi.device_pointer == d);
    CHECK_OK(gpumem_free(d));
    CHECK(info_of(d).kind == GPUMEM_KIND_UNKNOWN);

    /* HOST_PINNED */
    void *h = NULL, *hd = NULL;
    REQUIRE_OK(gpumem_host_alloc(&h, 5000, GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE));
    check_span("pinned", h, 5000, GPUMEM_KIND_HOST_PINNED);
    pi = info_of(h);
    CHECK(pi.device == GPUMEM_DEVICE_HOST);
    CHECK(pi.flags == (GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE));
    CHECK(pi.pool == NULL);
    CHECK_OK(gpumem_host_get_device_pointer(&hd, h));
    CHECK(pi.device_pointer == hd);
    CHECK_OK(gpumem_host_free(h));
    CHECK(info_of(h).kind == GPUMEM_KIND_UNKNOWN);

    /* HOST_REGISTERED */
    if (info.host_register != GPUMEM_SUPPORT_NONE) {
        char *r = (char *)aligned_alloc(PAGE, 4 * PAGE);
        REQUIRE(r != NULL);
        REQUIRE_OK(gpumem_host_register(r, 4 * PAGE, GPUMEM_HOST_REGISTER_MAPPED));
        check_span("registered", r, 4 * PAGE, GPUMEM_KIND_HOST_REGISTERED);
        pi = info_of(r + 1);
        CHECK(pi.device == GPUMEM_DEVICE_HOST);
        CHECK(pi.emulated == (info.host_register == GPUMEM_SUPPORT_EMULATED));
        CHECK_OK(gpumem_host_unregister(r));
        CHECK(info_of(r).kind == GPUMEM_KIND_UNKNOWN);
        free(r);
    }

    /* MANAGED */
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        void *m = NULL;
        REQUIRE_OK(gpumem_managed_alloc(&m, 7000, GPUMEM_ATTACH_GLOBAL));
        check_span("managed", m, 7000, GPUMEM_KIND_MANAGED);
        pi = info_of(m);
        CHECK(pi.emulated == (info.managed_memory == GPUMEM_SUPPORT_EMULATED));
        CHECK(pi.pool == NULL);
        CHECK(pi.flags == GPUMEM_ATTACH_GLOBAL);
        CHECK_OK(gpumem_free(m));
        CHECK(info_of(m).kind == GPUMEM_KIND_UNKNOWN);
    }

    /* STREAM_ORDERED, from the current pool and from another */
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_pool_t cur = NULL, other = NULL;
        REQUIRE_OK(gpumem_device_get_pool(&cur, 0));
        REQUIRE_OK(gpumem_pool_create(&other, NULL));
        gpumem_stream_t s = NULL;
        REQUIRE_OK(gpumem_stream_create(&s));
        void *a = NULL, *b = NULL;
        REQUIRE_OK(gpumem_malloc_async(&a, 1000, s));
        REQUIRE_OK(gpumem_malloc_from_pool_async(&b, 2000, other, s));
        check_span("stream-ordered", a, 1000, GPUMEM_KIND_STREAM_ORDERED);
        check_span("stream-ordered from a pool", b, 2000, GPUMEM_KIND_STREAM_ORDERED);
        pi = info_of((char *)a + 999);
        CHECK(pi.pool == cur);
        CHECK(pi.device == 0);
        CHECK(pi.emulated == (info.memory_pools == GPUMEM_SUPPORT_EMULATED));
        CHECK(info_of(b).pool == other);
        CHECK_OK(gpumem_free_async(a, s));
        CHECK_OK(gpumem_free_async(b, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(info_of(a).kind == GPUMEM_KIND_UNKNOWN);
        CHECK(info_of(b).kind == GPUMEM_KIND_UNKNOWN);
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_pool_destroy(other));
    }

    /* VIRTUAL */
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        gpumem_mem_handle_t mh = 0;
        char *va = NULL;
        REQUIRE_OK(gpumem_mem_create(&mh, 2 * g, &props));
        REQUIRE_OK(gpumem_mem_address_reserve((void **)&va, 4 * g, 0, NULL));
        REQUIRE_OK(gpumem_mem_map(va + g, 2 * g, 0, mh));
        gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
        CHECK_OK(gpumem_mem_set_access(va + g, 2 * g, &rw, 1));
        pi = info_of(va + g + 5);
        CHECK(pi.kind == GPUMEM_KIND_VIRTUAL);
        CHECK(pi.device == 0);
        CHECK((char *)pi.base <= va + g + 5 && va + g + 5 < (char *)pi.base + pi.alloc_size);
        CHECK((char *)pi.base >= va && (char *)pi.base + pi.alloc_size <= va + 4 * g);
        CHECK_OK(gpumem_mem_unmap(va + g, 2 * g));
        CHECK_OK(gpumem_mem_release(mh));
        CHECK_OK(gpumem_mem_address_free(va, 4 * g));
        CHECK(info_of(va + g).kind == GPUMEM_KIND_UNKNOWN);
    }

    /* BUFFER */
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        gpumem_buffer_t buf = NULL;
        void *data = NULL;
        REQUIRE_OK(gpumem_buffer_create(&buf, 10000, 1 << 20, 0));
        REQUIRE_OK(gpumem_buffer_data(buf, &data));
        pi = info_of((char *)data + 9999);
        CHECK(pi.kind == GPUMEM_KIND_BUFFER);
        CHECK(pi.base == data);
        CHECK(pi.alloc_size >= 10000);
        CHECK(pi.device == 0);
        CHECK(pi.emulated == (info.virtual_memory != GPUMEM_SUPPORT_NATIVE));
        CHECK_OK(gpumem_buffer_destroy(buf));
        CHECK(info_of(data).kind == GPUMEM_KIND_UNKNOWN);
    }
}

/* What one allocation of a kind did to the counters. */
static void check_delta(const char *what, const gpumem_stats_t *a, const gpumem_stats_t *b, int kind,
                        int64_t bytes, int64_t allocs, int64_t frees)
{
    for (int k = 0; k < GPUMEM_KIND_COUNT; ++k) {
        int64_t db = (int64_t)(b->current_bytes[k] - a->current_bytes[k]);
        int64_t da = (int64_t)(b->alloc_count[k] - a->alloc_count[k]);
        int64_t df = (int64_t)(b->free_count[k] - a->free_count[k]);
        if (k == kind) {
            if (bytes != INT64_MIN)
                CHECKF(db == bytes, "%s: current_bytes[%s] changed by %" PRId64 ", want %" PRId64, what,
                       tst_kind_name(k), db, bytes);
            CHECKF(da == allocs && df == frees, "%s: alloc/free count of %s changed by %" PRId64 "/%" PRId64
                   ", want %" PRId64 "/%" PRId64, what, tst_kind_name(k), da, df, allocs, frees);
        } else {
            CHECKF(db == 0 && da == 0 && df == 0, "%s changed the counters of kind %s (%" PRId64 " bytes, %" PRId64
                   " allocs, %" PRId64 " frees)", what, tst_kind_name(k), db, da, df);
        }
        CHECKF(b->peak_bytes[k] >= b->current_bytes[k], "%s: peak of %s below current", what, tst_kind_name(k));
    }
}

static void test_stats_exact(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_stats_t s0, s1, s2;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_stats(NULL));

    s0 = tst_stats();
    CHECK(s0.size == sizeof(gpumem_stats_t));
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 12345));
    s1 = tst_stats();
    check_delta("gpumem_malloc", &s0, &s1, GPUMEM_KIND_DEVICE, 12345, 1, 0);
    CHECK(s1.peak_bytes[GPUMEM_KIND_DEVICE] >= s1.current_bytes[GPUMEM_KIND_DEVICE]);
    CHECK_OK(gpumem_free(d));
    s2 = tst_stats();
    check_delta("gpumem_free", &s1, &s2, GPUMEM_KIND_DEVICE, -12345, 0, 1);
    /* The peak remembers; a reset brings it down to current. */
    CHECK(s2.peak_bytes[GPUMEM_KIND_DEVICE] >= s2.current_bytes[GPUMEM_KIND_DEVICE] + 12345);
    CHECK_OK(gpumem_reset_peak_stats());
    s2 = tst_stats();
    for (int k = 0; k < GPUMEM_KIND_COUNT; ++k)
        CHECKF(s2.peak_bytes[k] == s2.current_bytes[k], "after reset, peak of %s %" PRIu64 " != current %" PRIu64,
               tst_kind_name(k), s2.peak_bytes[k], s2.current_bytes[k]);

    /* Refused calls change no counter. */
    s0 = tst_stats();
    void *x = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&x, SIZE_MAX));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(&x));
    s1 = tst_stats();
    check_delta("refused calls", &s0, &s1, -1, 0, 0, 0);
    CHECK(s1.fallback_count == s0.fallback_count);

    s0 = tst_stats();
    REQUIRE_OK(gpumem_host_alloc(&x, 4321, 0));
    s1 = tst_stats();
    check_delta("gpumem_host_alloc", &s0, &s1, GPUMEM_KIND_HOST_PINNED, 4321, 1, 0);
    CHECK_OK(gpumem_free(x));
    s2 = tst_stats();
    check_delta("gpumem_free(pinned)", &s1, &s2, GPUMEM_KIND_HOST_PINNED, -4321, 0, 1);

    if (info.host_register != GPUMEM_SUPPORT_NONE) {
        char *r = (char *)aligned_alloc(PAGE, 3 * PAGE);
        REQUIRE(r != NULL);
        s0 = tst_stats();
        REQUIRE_OK(gpumem_host_register(r, 3 * PAGE, 0));
        s1 = tst_stats();
        check_delta("gpumem_host_register", &s0, &s1, GPUMEM_KIND_HOST_REGISTERED, 3 * PAGE, 1, 0);
        CHECK_OK(gpumem_host_unregister(r));
        s2 = tst_stats();
        check_delta("gpumem_host_unregister", &s1, &s2, GPUMEM_KIND_HOST_REGISTERED, -3 * PAGE, 0, 1);
        free(r);
    }
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        s0 = tst_stats();
        REQUIRE_OK(gpumem_managed_alloc(&x, 999, 0));
        s1 = tst_stats();
        check_delta("gpumem_managed_alloc", &s0, &s1, GPUMEM_KIND_MANAGED, 999, 1, 0);
        CHECK(s1.fallback_count == s0.fallback_count + (info.managed_memory == GPUMEM_SUPPORT_EMULATED));
        CHECK_OK(gpumem_free(x));
        s2 = tst_stats();
        check_delta("gpumem_free(managed)", &s1, &s2, GPUMEM_KIND_MANAGED, -999, 0, 1);
    }
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        s0 = tst_stats();
        REQUIRE_OK(gpumem_malloc_async(&x, 777, NULL));
        s1 = tst_stats();
        check_delta("gpumem_malloc_async", &s0, &s1, GPUMEM_KIND_STREAM_ORDERED, 777, 1, 0);
        CHECK_OK(gpumem_free_async(x, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        s2 = tst_stats();
        check_delta("gpumem_free_async", &s1, &s2, GPUMEM_KIND_STREAM_ORDERED, -777, 0, 1);
        /* gpumem_free takes stream-ordered memory synchronously. */
        REQUIRE_OK(gpumem_malloc_async(&x, 778, NULL));
        CHECK_OK(gpumem_free(x));
        s0 = tst_stats();
        check_delta("malloc_async + gpumem_free", &s2, &s0, GPUMEM_KIND_STREAM_ORDERED, 0, 1, 1);
    }
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        gpumem_mem_handle_t mh = 0;
        void *va = NULL;
        s0 = tst_stats();
        REQUIRE_OK(gpumem_mem_create(&mh, g, &props));
        REQUIRE_OK(gpumem_mem_address_reserve(&va, g, 0, NULL));
        REQUIRE_OK(gpumem_mem_map(va, g, 0, mh));
        s1 = tst_stats();
        CHECKF(s1.current_bytes[GPUMEM_KIND_VIRTUAL] >= s0.current_bytes[GPUMEM_KIND_VIRTUAL] + g,
               "VMM memory of %zu bytes is not counted (%" PRIu64 " -> %" PRIu64 ")", g,
               s0.current_bytes[GPUMEM_KIND_VIRTUAL], s1.current_bytes[GPUMEM_KIND_VIRTUAL]);
        CHECK(s1.alloc_count[GPUMEM_KIND_VIRTUAL] > s0.alloc_count[GPUMEM_KIND_VIRTUAL]);
        check_delta("VMM (other kinds)", &s0, &s1, GPUMEM_KIND_VIRTUAL, INT64_MIN,
                    (int64_t)(s1.alloc_count[GPUMEM_KIND_VIRTUAL] - s0.alloc_count[GPUMEM_KIND_VIRTUAL]), 0);
        CHECK_OK(gpumem_mem_unmap(va, g));
        CHECK_OK(gpumem_mem_release(mh));
        CHECK_OK(gpumem_mem_address_free(va, g));
        s2 = tst_stats();
        CHECK(s2.current_bytes[GPUMEM_KIND_VIRTUAL] == s0.current_bytes[GPUMEM_KIND_VIRTUAL]);
        CHECK(s2.alloc_count[GPUMEM_KIND_VIRTUAL] - s2.free_count[GPUMEM_KIND_VIRTUAL] ==
              s0.alloc_count[GPUMEM_KIND_VIRTUAL] - s0.free_count[GPUMEM_KIND_VIRTUAL]);
    }
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        gpumem_buffer_t buf = NULL;
        s0 = tst_stats();
        REQUIRE_OK(gpumem_buffer_create(&buf, 5000, 1 << 20, 0));
        s1 = tst_stats();
        CHECK(s1.current_bytes[GPUMEM_KIND_BUFFER] >= s0.current_bytes[GPUMEM_KIND_BUFFER] + 5000);
        CHECK(s1.alloc_count[GPUMEM_KIND_BUFFER] == s0.alloc_count[GPUMEM_KIND_BUFFER] + 1);
        check_delta("gpumem_buffer_create (other kinds)", &s0, &s1, GPUMEM_KIND_BUFFER, INT64_MIN, 1, 0);
        if (info.virtual_memory == GPUMEM_SUPPORT_EMULATED)
            CHECK(s1.fallback_count > s0.fallback_count);
        CHECK_OK(gpumem_buffer_resize(buf, 300000));
        s2 = tst_stats();
        CHECK(s2.current_bytes[GPUMEM_KIND_BUFFER] >= s0.current_bytes[GPUMEM_KIND_BUFFER] + 300000);
        CHECK(s2.current_bytes[GPUMEM_KIND_DEVICE] == s0.current_bytes[GPUMEM_KIND_DEVICE]);
        CHECK_OK(gpumem_buffer_destroy(buf));
        s2 = tst_stats();
        CHECK(s2.current_bytes[GPUMEM_KIND_BUFFER] == s0.current_bytes[GPUMEM_KIND_BUFFER]);
        CHECK(s2.alloc_count[GPUMEM_KIND_BUFFER] - s2.free_count[GPUMEM_KIND_BUFFER] ==
              s0.alloc_count[GPUMEM_KIND_BUFFER] - s0.free_count[GPUMEM_KIND_BUFFER]);
    }
    /* Peaks across kinds. */
    CHECK_OK(gpumem_reset_peak_stats());
    s0 = tst_stats();
    void *big = NULL;
    REQUIRE_OK(gpumem_malloc(&big, 1 << 20));
    CHECK_OK(gpumem_free(big));
    s1 = tst_stats();
    CHECK(s1.peak_bytes[GPUMEM_KIND_DEVICE] == s0.current_bytes[GPUMEM_KIND_DEVICE] + (1u << 20));
}

/* ------------------------------------------------------------------------ */
/* Trace callback                                                            */
/* ------------------------------------------------------------------------ */

#define MAX_EVENTS 256
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static gpumem_trace_event_t g_events[MAX_EVENTS];
static int g_nevents;
static int g_wrong_thread;
static int g_wrong_user;
static pthread_t g_expected_thread;
static int g_user_token;

static void on_trace(const gpumem_trace_event_t *e, void *user)
{
    pthread_mutex_lock(&g_mutex);
    if (user != &g_user_token)
        g_wrong_user = 1;
    if (!pthread_equal(pthread_self(), g_expected_thread))
        g_wrong_thread = 1;
    if (g_nevents < MAX_EVENTS) {
        memset(&g_events[g_nevents], 0, sizeof g_events[0]);
        memcpy(&g_events[g_nevents], e, e->size < sizeof g_events[0] ? e->size : sizeof g_events[0]);
        ++g_nevents;
    }
    pthread_mutex_unlock(&g_mutex);
}

static void reset_events(void)
{
    pthread_mutex_lock(&g_mutex);
    g_nevents = 0;
    g_wrong_thread = g_wrong_user = 0;
    g_expected_thread = pthread_self();
    pthread_mutex_unlock(&g_mutex);
}

/* Exactly one event since the last reset, with these fields. */
static void expect_one(const char *what, int32_t op, int32_t kind, void *ptr, size_t bytes, gpumem_stream_t stream,
                       gpumem_pool_t pool, int check_stream)
{
    pthread_mutex_lock(&g_mutex);
    int n = g_nevents;
    gpumem_trace_event_t e = n > 0 ? g_events[0] : (gpumem_trace_event_t){0};
    pthread_mutex_unlock(&g_mutex);
    CHECKF(n == 1, "%s: %d trace events, want 1", what, n);
    if (n < 1)
        return;
    CHECKF(e.size == sizeof(gpumem_trace_event_t), "%s: event size %zu", what, e.size);
    CHECKF(e.op == op, "%s: op %d, want %d", what, (int)e.op, (int)op);
    CHECKF(e.kind == kind, "%s: kind %s, want %s", what, tst_kind_name(e.kind), tst_kind_name(kind));
    CHECKF(e.ptr == ptr, "%s: ptr %p, want %p", what, e.ptr, ptr);
    CHECKF(e.bytes == bytes, "%s: bytes %zu, want %zu", what, e.bytes, bytes);
    if (check_stream) {
        CHECKF(e.stream == stream, "%s: stream %p, want %p", what, (void *)e.stream, (void *)stream);
        CHECKF(e.pool == pool, "%s: pool %p, want %p", what, (void *)e.pool, (void *)pool);
    }
    CHECK(!g_wrong_thread);
    CHECK(!g_wrong_user);
    reset_events();
}

static int events_now(void)
{
    pthread_mutex_lock(&g_mutex);
    int n = g_nevents;
    pthread_mutex_unlock(&g_mutex);
    return n;
}

static void test_trace_callback(void)
{
    gpumem_device_info_t info = tst_info(0);
    reset_events();
    REQUIRE_OK(gpumem_set_trace_callback(on_trace, &g_user_token));

    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 1111));
    expect_one("gpumem_malloc", GPUMEM_TRACE_ALLOC, GPUMEM_KIND_DEVICE, p, 1111, NULL, NULL, 1);
    CHECK_OK(gpumem_free(p));
    expect_one("gpumem_free", GPUMEM_TRACE_FREE, GPUMEM_KIND_DEVICE, p, 1111, NULL, NULL, 1);

    /* Refused calls trace nothing. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, SIZE_MAX));
    CHECK(events_now() == 0);
    reset_events();

    REQUIRE_OK(gpumem_host_alloc(&p, 2222, 0));
    expect_one("gpumem_host_alloc", GPUMEM_TRACE_ALLOC, GPUMEM_KIND_HOST_PINNED, p, 2222, NULL, NULL, 1);
    CHECK_OK(gpumem_host_free(p));
    expect_one("gpumem_host_free", GPUMEM_TRACE_FREE, GPUMEM_KIND_HOST_PINNED, p, 2222, NULL, NULL, 1);

    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_managed_alloc(&p, 3333, 0));
        pthread_mutex_lock(&g_mutex);
        int emulated = g_nevents ? g_events[0].emulated : -1;
        pthread_mutex_unlock(&g_mutex);
        CHECK(emulated == (info.managed_memory == GPUMEM_SUPPORT_EMULATED));
        expect_one("gpumem_managed_alloc", GPUMEM_TRACE_ALLOC, GPUMEM_KIND_MANAGED, p, 3333, NULL, NULL, 1);
        CHECK_OK(gpumem_free(p));
        expect_one("gpumem_free(managed)", GPUMEM_TRACE_FREE, GPUMEM_KIND_MANAGED, p, 3333, NULL, NULL, 1);
    }
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_stream_t s = NULL;
        gpumem_pool_t pool = NULL;
        REQUIRE_OK(gpumem_stream_create(&s));
        REQUIRE_OK(gpumem_pool_create(&pool, NULL));
        reset_events();
        REQUIRE_OK(gpumem_malloc_from_pool_async(&p, 4444, pool, s));
        expect_one("gpumem_malloc_from_pool_async", GPUMEM_TRACE_ALLOC, GPUMEM_KIND_STREAM_ORDERED, p, 4444, s, pool, 1);
        CHECK_OK(gpumem_free_async(p, s));
        expect_one("gpumem_free_async", GPUMEM_TRACE_FREE, GPUMEM_KIND_STREAM_ORDERED, p, 4444, s, pool, 1);
        gpumem_pool_t def = NULL;
        REQUIRE_OK(gpumem_device_get_pool(&def, 0));
        REQUIRE_OK(gpumem_malloc_async(&p, 5555, NULL));
        expect_one("gpumem_malloc_async", GPUMEM_TRACE_ALLOC, GPUMEM_KIND_STREAM_ORDERED, p, 5555, NULL, def, 1);
        CHECK_OK(gpumem_free_async(p, NULL));
        expect_one("gpumem_free_async(default)", GPUMEM_TRACE_FREE, GPUMEM_KIND_STREAM_ORDERED, p, 5555, NULL, def, 1);
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        /* Releasing pool memory is not an allocation event. */
        CHECK_OK(gpumem_pool_trim_to(pool, 0));
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_pool_destroy(pool));
        CHECK(events_now() == 0);
        reset_events();
    }

    /* Trace counts agree with the statistics for the remaining kinds. */
    gpumem_stats_t s0 = tst_stats();
    reset_events();
    char *r = NULL;
    if (info.host_register != GPUMEM_SUPPORT_NONE) {
        r = (char *)aligned_alloc(PAGE, 2 * PAGE);
        REQUIRE(r != NULL);
        CHECK_OK(gpumem_host_register(r, 2 * PAGE, 0));
        CHECK_OK(gpumem_host_unregister(r));
        free(r);
    }
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        gpumem_buffer_t b = NULL;
        REQUIRE_OK(gpumem_buffer_create(&b, 100, 1 << 20, 0));
        CHECK_OK(gpumem_buffer_resize(b, 200000));
        CHECK_OK(gpumem_buffer_destroy(b));
    }
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        gpumem_mem_handle_t mh = 0;
        void *va = NULL;
        REQUIRE_OK(gpumem_mem_create(&mh, g, &props));
        REQUIRE_OK(gpumem_mem_address_reserve(&va, g, 0, NULL));
        REQUIRE_OK(gpumem_mem_map(va, g, 0, mh));
        CHECK_OK(gpumem_mem_unmap(va, g));
        CHECK_OK(gpumem_mem_release(mh));
        CHECK_OK(gpumem_mem_address_free(va, g));
    }
    gpumem_stats_t s1 = tst_stats();
    int counts[2][GPUMEM_KIND_COUNT];
    memset(counts, 0, sizeof counts);
    pthread_mutex_lock(&g_mutex);
    for (int i = 0; i < g_nevents; ++i) {
        int op = g_events[i].op == GPUMEM_TRACE_ALLOC ? 0 : 1;
        if (g_events[i].kind >= 0 && g_events[i].kind < GPUMEM_KIND_COUNT)
            counts[op][g_events[i].kind]++;
    }
    pthread_mutex_unlock(&g_mutex);
    for (int k = 0; k < GPUMEM_KIND_COUNT; ++k) {
        CHECKF((uint64_t)counts[0][k] == s1.alloc_count[k] - s0.alloc_count[k],
               "%d ALLOC trace events of kind %s, statistics counted %" PRIu64, counts[0][k], tst_kind_name(k),
               s1.alloc_count[k] - s0.alloc_count[k]);
        CHECKF((uint64_t)counts[1][k] == s1.free_count[k] - s0.free_count[k],
               "%d FREE trace events of kind %s, statistics counted %" PRIu64, counts[1][k], tst_kind_name(k),
               s1.free_count[k] - s0.free_count[k]);
    }

    /* Removing the callback stops the events. */
    CHECK_OK(gpumem_set_trace_callback(NULL, NULL));
    reset_events();
    REQUIRE_OK(gpumem_malloc(&p, 64));
    CHECK_OK(gpumem_free(p));
    CHECK(events_now() == 0);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_pointer_info_every_kind),
        TEST(test_stats_exact),
        TEST(test_trace_callback),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
