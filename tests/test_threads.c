/* Every family from 8 threads at once, each checking its own data. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <pthread.h>

#define THREADS 8
#define ITERS 120
#define PAGE 4096

static gpumem_device_info_t g_info;
static gpumem_pool_t g_shared_pool;
static size_t g_gran;

typedef struct {
    int id;
    int done;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = (worker_t *)arg;
    const int t = w->id;
    CHECK_OK(gpumem_set_device(0));
    int32_t dev = -1;
    CHECK_OK(gpumem_get_device(&dev));
    CHECK(dev == 0);
    gpumem_stream_t s = NULL;
    gpumem_event_t e = NULL;
    CHECK_OK(gpumem_stream_create(&s));
    CHECK_OK(gpumem_event_create(&e));
    unsigned char *host = (unsigned char *)malloc(64 * 1024);
    char *reg = (char *)aligned_alloc(PAGE, 4 * PAGE);
    if (!host || !reg || !s || !e) {
        tst_fail(__FILE__, __LINE__, "thread %d setup failed", t);
        return NULL;
    }
    for (int i = 0; i < ITERS; ++i) {
        const unsigned seed = (unsigned)(t * 1000 + i);
        const size_t n = 1000 + (size_t)((t * 7919 + i * 104729) % 60000);

        /* explicit device memory */
        void *d = NULL;
        CHECK_OK(gpumem_malloc(&d, n));
        if (d) {
            CHECK_OK(tst_upload(d, n, seed));
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info((char *)d + n / 2, &pi));
            CHECK(pi.kind == GPUMEM_KIND_DEVICE && pi.base == d && pi.alloc_size == n);
            CHECK(tst_download_verify(d, n, seed));
            CHECK_OK(gpumem_memset_async(d, t, n, s));
            CHECK_OK(gpumem_memcpy_async(host, d, n, s));
            CHECK_OK(gpumem_stream_synchronize(s));
            CHECK(tst_verify_byte(host, n, (unsigned char)t) == n);
            CHECK_OK(gpumem_free(d));
        }

        /* pinned host memory */
        void *h = NULL;
        CHECK_OK(gpumem_host_alloc(&h, n, i % 2 ? GPUMEM_HOST_MAPPED : 0));
        if (h) {
            tst_fill(h, n, seed + 1);
            CHECK(tst_download_verify(h, n, seed + 1));
            CHECK_OK(gpumem_host_free(h));
        }

        /* managed memory with advice and attributes */
        if (g_info.managed_memory != GPUMEM_SUPPORT_NONE) {
            void *m = NULL;
            CHECK_OK(gpumem_managed_alloc(&m, 4 * PAGE, 0));
            if (m) {
                tst_fill(m, 4 * PAGE, seed + 2);
                CHECK_OK(gpumem_advise(m, 4 * PAGE, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
                CHECK_OK(gpumem_prefetch_async(m, 2 * PAGE, 0, s));
                CHECK_OK(gpumem_stream_synchronize(s));
                int32_t v = -9;
                CHECK_OK(gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, m, 4 * PAGE));
                CHECK(v == 1);
                CHECK_OK(gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_LAST_PREFETCH_LOCATION, m, 2 * PAGE));
                CHECK(v == 0);
                CHECK(tst_verify(m, 4 * PAGE, seed + 2) == 4 * PAGE);
                CHECK_OK(gpumem_free(m));
            }
        }

        /* stream-ordered memory from the current pool and from a shared pool */
        if (g_info.memory_pools != GPUMEM_SUPPORT_NONE) {
            void *a = NULL, *b = NULL;
            CHECK_OK(gpumem_malloc_async(&a, n, s));
            CHECK_OK(gpumem_malloc_from_pool_async(&b, n, g_shared_pool, s));
            if (a && b) {
                CHECK(a != b);
                CHECK_OK(gpumem_memset_async(a, (t + 1) & 0xff, n, s));
                CHECK_OK(gpumem_memcpy_async(b, a, n, s));
                CHECK_OK(gpumem_memcpy_async(host, b, n, s));
                CHECK_OK(gpumem_event_record(e, s));
                CHECK_OK(gpumem_event_synchronize(e));
                CHECK_OK(gpumem_event_query(e));
                CHECK(tst_verify_byte(host, n, (unsigned char)((t + 1) & 0xff)) == n);
                gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
                CHECK_OK(gpumem_pointer_get_info(b, &pi));
                CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED && pi.pool == g_shared_pool);
            }
            if (a)
                CHECK_OK(gpumem_free_async(a, s));
            if (b)
                CHECK_OK(gpumem_free_async(b, s));
        }

        /* the rarer families every few iterations */
        if (i % 10 == t % 10) {
            if (g_info.host_register != GPUMEM_SUPPORT_NONE) {
                CHECK_OK(gpumem_host_register(reg, 4 * PAGE, 0));
                CHECK_OK(tst_upload(reg, 4 * PAGE, seed + 3));
                CHECK(tst_verify(reg, 4 * PAGE, seed + 3) == 4 * PAGE);
                CHECK_OK(gpumem_host_unregister(reg));
            }
            if (g_info.virtual_memory != GPUMEM_SUPPORT_NONE) {
                gpumem_buffer_t buf = NULL;
                CHECK_OK(gpumem_buffer_create(&buf, 1000, 1 << 22, 0));
                void *p = NULL;
                if (buf) {
                    CHECK_OK(gpumem_buffer_data(buf, &p));
                    CHECK_OK(tst_upload(p, 1000, seed + 4));
                    CHECK_OK(gpumem_buffer_resize(buf, 300000));
                    CHECK_OK(gpumem_buffer_data(buf, &p));
                    CHECK(tst_download_verify(p, 1000, seed + 4));
                    CHECK_OK(gpumem_buffer_destroy(buf));
                }
            }
            if (g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE && g_gran) {
                gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
                gpumem_mem_handle_t mh = 0;
                void *va = NULL;
                gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
                CHECK_OK(gpumem_mem_create(&mh, g_gran, &props));
                CHECK_OK(gpumem_mem_address_reserve(&va, 2 * g_gran, 0, NULL));
                if (mh && va) {
                    CHECK_OK(gpumem_mem_map((char *)va + g_gran, g_gran, 0, mh));
                    CHECK_OK(gpumem_mem_set_access((char *)va + g_gran, g_gran, &rw, 1));
                    CHECK_OK(tst_upload((char *)va + g_gran, g_gran, seed + 5));
                    CHECK(tst_download_verify((char *)va + g_gran, g_gran, seed + 5));
                    CHECK_OK(gpumem_mem_unmap((char *)va + g_gran, g_gran));
                    CHECK_OK(gpumem_mem_release(mh));
                    CHECK_OK(gpumem_mem_address_free(va, 2 * g_gran));
                }
            }
            /* streams and events come and go */
            gpumem_stream_t s2 = NULL;
            gpumem_event_t e2 = NULL;
            CHECK_OK(gpumem_stream_create(&s2));
            CHECK_OK(gpumem_event_create(&e2));
            CHECK_OK(gpumem_event_record(e2, s2));
            CHECK_OK(gpumem_stream_wait_event(s, e2));
            CHECK_OK(gpumem_event_destroy(e2));
            CHECK_OK(gpumem_stream_destroy(s2));
        }

        /* a refusal: the message is this thread's */
        int local = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(&local));
        CHECK(strlen(gpumem_last_error_message()) > 0);
        gpumem_stats_t st = GPUMEM_STATS_INIT;
        CHECK_OK(gpumem_get_stats(&st));
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_event_destroy(e));
    CHECK_OK(gpumem_stream_destroy(s));
    free(host);
    free(reg);
    w->done = 1;
    return NULL;
}

static void test_hammer_every_family(void)
{
    g_info = tst_info(0);
    g_gran = 0;
    if (g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        CHECK_OK(gpumem_mem_get_granularity(&g_gran, &props, GPUMEM_GRANULARITY_MINIMUM));
    }
    g_shared_pool = NULL;
    if (g_info.memory_pools != GPUMEM_SUPPORT_NONE)
        REQUIRE_OK(gpumem_pool_create(&g_shared_pool, NULL));
    gpumem_stats_t before = tst_stats();
    pthread_t th[THREADS];
    worker_t w[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        w[t].id = t;
        w[t].done = 0;
        REQUIRE(pthread_create(&th[t], NULL, worker, &w[t]) == 0);
    }
    for (int t = 0; t < THREADS; ++t)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; ++t)
        CHECKF(w[t].done, "thread %d did not finish", t);
    CHECK_OK(gpumem_device_synchronize());
    gpumem_stats_t after = tst_stats();
    /* Counts add up across threads. */
    CHECK(after.alloc_count[GPUMEM_KIND_DEVICE] - before.alloc_count[GPUMEM_KIND_DEVICE] == (uint64_t)THREADS * ITERS);
    CHECK(after.free_count[GPUMEM_KIND_DEVICE] - before.free_count[GPUMEM_KIND_DEVICE] == (uint64_t)THREADS * ITERS);
    CHECK(after.alloc_count[GPUMEM_KIND_HOST_PINNED] - before.alloc_count[GPUMEM_KIND_HOST_PINNED] ==
          (uint64_t)THREADS * ITERS);
    if (g_info.memory_pools != GPUMEM_SUPPORT_NONE) {
        CHECK(after.alloc_count[GPUMEM_KIND_STREAM_ORDERED] - before.alloc_count[GPUMEM_KIND_STREAM_ORDERED] ==
              (uint64_t)THREADS * ITERS * 2);
        uint64_t used = 1;
        CHECK_OK(gpumem_pool_get_attribute(g_shared_pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
        CHECK(used == 0);
        CHECK_OK(gpumem_pool_destroy(g_shared_pool));
    }
}

/* Handles created and destroyed concurrently stay distinct and valid. */
static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; ++i) {
        gpumem_stream_t s = NULL;
        gpumem_event_t e = NULL;
        gpumem_pool_t p = NULL;
        CHECK_OK(gpumem_stream_create(&s));
        CHECK_OK(gpumem_event_create(&e));
        if (g_info.memory_pools != GPUMEM_SUPPORT_NONE) {
            CHECK_OK(gpumem_pool_create(&p, NULL));
            void *x = NULL;
            CHECK_OK(gpumem_malloc_from_pool_async(&x, 256, p, s));
            if (x)
                CHECK_OK(gpumem_free_async(x, s));
        }
        CHECK_OK(gpumem_event_record(e, s));
        CHECK_OK(gpumem_event_synchronize(e));
        CHECK_OK(gpumem_stream_synchronize(s));
        if (p)
            CHECK_OK(gpumem_pool_destroy(p));
        CHECK_OK(gpumem_event_destroy(e));
        CHECK_OK(gpumem_stream_destroy(s));
    }
    return NULL;
}

static void test_handle_churn(void)
{
    g_info = tst_info(0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; ++t)
        REQUIRE(pthread_create(&th[t], NULL, churn, NULL) == 0);
    for (int t = 0; t < THREADS; ++t)
        pthread_join(th[t], NULL);
}

/* A stream handle must not be live before its state is written:
 * gpumem_device_synchronize (and gpumem_free of stream-ordered memory, which
 * synchronises the device) reads every live stream's state.  Streams come and
 * go on some threads while others synchronise the device (run under TSan). */
static atomic_int g_stop;

static void *stream_churner(void *arg)
{
    const int t = (int)(intptr_t)arg;
    unsigned char host[512];
    for (int i = 0; i < 150; ++i) {
        gpumem_stream_t s = NULL;
        CHECK_OK(gpumem_stream_create(&s));
        if (!s)
            continue;
        void *d = NULL;
        CHECK_OK(gpumem_malloc(&d, sizeof host));
        if (d) {
            const unsigned char v = (unsigned char)(t * 37 + i);
            CHECK_OK(gpumem_memset_async(d, v, sizeof host, s));
            CHECK_OK(gpumem_memcpy_async(host, d, sizeof host, s));
            CHECK_OK(gpumem_stream_synchronize(s));
            CHECK(tst_verify_byte(host, sizeof host, v) == sizeof host);
            CHECK_OK(gpumem_free(d));
        }
        CHECK_OK(gpumem_stream_destroy(s));
    }
    return NULL;
}

static void *device_syncer(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        CHECK_OK(gpumem_device_synchronize());
        if (g_info.memory_pools != GPUMEM_SUPPORT_NONE) {
            /* gpumem_free of stream-ordered memory synchronises the device too. */
            void *p = NULL;
            CHECK_OK(gpumem_malloc_async(&p, 4096, NULL));
            if (p)
                CHECK_OK(gpumem_free(p));
        }
    }
    return NULL;
}

static void test_stream_create_vs_device_sync(void)
{
    g_info = tst_info(0);
    atomic_store(&g_stop, 0);
    pthread_t churners[2], syncers[2];
    for (int t = 0; t < 2; ++t) {
        REQUIRE(pthread_create(&churners[t], NULL, stream_churner, (void *)(intptr_t)t) == 0);
        REQUIRE(pthread_create(&syncers[t], NULL, device_syncer, NULL) == 0);
    }
    for (int t = 0; t < 2; ++t)
        pthread_join(churners[t], NULL);
    atomic_store(&g_stop, 1);
    for (int t = 0; t < 2; ++t)
        pthread_join(syncers[t], NULL);
}

/* gpumem_event_record writes the event's fields while gpumem_event_query,
 * _synchronize and gpumem_stream_wait_event read them on other threads: the
 * fields need their lock (run under TSan). */
static gpumem_event_t g_event;
static gpumem_stream_t g_recorder_stream;

static void *event_recorder(void *arg)
{
    (void)arg;
    unsigned char host[256];
    for (int i = 0; i < 300; ++i) {
        void *d = NULL;
        if (g_info.memory_pools != GPUMEM_SUPPORT_NONE) {
            CHECK_OK(gpumem_malloc_async(&d, sizeof host, g_recorder_stream));
        } else {
            CHECK_OK(gpumem_malloc(&d, sizeof host));
        }
        if (d) {
            CHECK_OK(gpumem_memset_async(d, i & 0xff, sizeof host, g_recorder_stream));
            CHECK_OK(gpumem_memcpy_async(host, d, sizeof host, g_recorder_stream));
            if (g_info.memory_pools != GPUMEM_SUPPORT_NONE)
                CHECK_OK(gpumem_free_async(d, g_recorder_stream));
        }
        CHECK_OK(gpumem_event_record(g_event, g_recorder_stream));
        CHECK_OK(gpumem_stream_synchronize(g_recorder_stream));
        if (d) {
            CHECK(tst_verify_byte(host, sizeof host, (unsigned char)(i & 0xff)) == sizeof host);
            if (g_info.memory_pools == GPUMEM_SUPPORT_NONE)
                CHECK_OK(gpumem_free(d));
        }
    }
    atomic_store(&g_stop, 1);
    return NULL;
}

static void *event_reader(void *arg)
{
    const int t = (int)(intptr_t)arg;
    gpumem_stream_t s = NULL;
    CHECK_OK(gpumem_stream_create(&s));
    while (!atomic_load(&g_stop)) {
        if (t == 0) {
            CHECK_ONE_OF(gpumem_event_query(g_event), GPUMEM_SUCCESS, GPUMEM_ERROR_BUSY);
        } else if (t == 1) {
            CHECK_OK(gpumem_event_synchronize(g_event));
        } else {
            CHECK_OK(gpumem_stream_wait_event(s, g_event));
            CHECK_OK(gpumem_stream_synchronize(s));
        }
    }
    CHECK_OK(gpumem_stream_destroy(s));
    return NULL;
}

static void test_event_record_vs_readers(void)
{
    g_info = tst_info(0);
    atomic_store(&g_stop, 0);
    REQUIRE_OK(gpumem_stream_create(&g_recorder_stream));
    REQUIRE_OK(gpumem_event_create(&g_event));
    pthread_t recorder, readers[3];
    REQUIRE(pthread_create(&recorder, NULL, event_recorder, NULL) == 0);
    for (int t = 0; t < 3; ++t)
        REQUIRE(pthread_create(&readers[t], NULL, event_reader, (void *)(intptr_t)t) == 0);
    pthread_join(recorder, NULL);
    for (int t = 0; t < 3; ++t)
        pthread_join(readers[t], NULL);
    CHECK_OK(gpumem_event_destroy(g_event));
    CHECK_OK(gpumem_stream_destroy(g_recorder_stream));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_hammer_every_family),
        TEST(test_handle_churn),
        TEST(test_stream_create_vs_device_sync),
        TEST(test_event_record_vs_readers),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
