/* Threads that share gpumem objects, in the patterns applications use, each checking its data:
 *   - producer/consumer pairs: the producer allocates on its stream (from a shared pool), writes
 *     the block and records an event; the consumer waits on that event on its own stream
 *     (gpumem_stream_wait_event), reads the block back, checks it and frees it on its stream;
 *   - two threads on one shared stream and one shared event;
 *   - pools created, used and destroyed while the others allocate;
 *   - streams and events created and destroyed while the device is synchronised, with the
 *     statistics read all along.
 * Run under ThreadSanitizer in CI (tools/ci/run-tests.sh --tsan, suite 'threads').
 * SPDX-License-Identifier: MIT */
#include "harness.h"

#include <pthread.h>

#define THREADS 8
#define ITERS 500
#define PAIRS 2    /* threads 0..3 */
#define MAILBOX 4  /* blocks in flight between a producer and its consumer */

static gpumem_device_info_t g_info;
static int g_pools;          /* stream-ordered allocation is available */
static gpumem_pool_t g_pool; /* shared by every thread */
static gpumem_stream_t g_stream;
static gpumem_event_t g_event;
static atomic_int g_running; /* workers with a fixed amount of work still running */

static size_t block_size(int t, int i) { return 512 + (size_t)((t * 7919 + i * 104729) % 20000); }
static unsigned char block_byte(int t, int i) { return (unsigned char)(1 + (t * 31 + i) % 251); }

/* A block handed from a producer to its consumer, ordered by `ready`. */
typedef struct {
    void *ptr;
    size_t size;
    unsigned char byte;
    gpumem_event_t ready;
} message_t;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    message_t slots[MAILBOX];
    int head, count;
} mailbox_t;

static mailbox_t g_mail[PAIRS];

static void mail_put(mailbox_t *m, message_t msg)
{
    pthread_mutex_lock(&m->mu);
    while (m->count == MAILBOX)
        pthread_cond_wait(&m->cv, &m->mu);
    m->slots[(m->head + m->count) % MAILBOX] = msg;
    ++m->count;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static message_t mail_get(mailbox_t *m)
{
    pthread_mutex_lock(&m->mu);
    while (m->count == 0)
        pthread_cond_wait(&m->cv, &m->mu);
    message_t msg = m->slots[m->head];
    m->head = (m->head + 1) % MAILBOX;
    --m->count;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    return msg;
}

static void *producer(int t)
{
    mailbox_t *m = &g_mail[t / 2];
    gpumem_stream_t s = NULL;
    CHECK_OK(gpumem_stream_create(&s));
    for (int i = 0; i < ITERS; ++i) {
        message_t msg = {NULL, block_size(t, i), block_byte(t, i), NULL};
        if (g_pools)
            CHECK_OK(gpumem_malloc_from_pool_async(&msg.ptr, msg.size, g_pool, s));
        else
            CHECK_OK(gpumem_malloc(&msg.ptr, msg.size));
        CHECK_OK(gpumem_event_create(&msg.ready));
        if (msg.ptr)
            CHECK_OK(gpumem_memset_async(msg.ptr, msg.byte, msg.size, s));
        CHECK_OK(gpumem_event_record(msg.ready, s));
        mail_put(m, msg); /* also when something failed: the consumer counts on ITERS messages */
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    return NULL;
}

static void *consumer(int t)
{
    mailbox_t *m = &g_mail[t / 2];
    gpumem_stream_t s = NULL;
    CHECK_OK(gpumem_stream_create(&s));
    unsigned char *host = (unsigned char *)malloc(32768);
    CHECK(host != NULL);
    for (int i = 0; i < ITERS; ++i) {
        message_t msg = mail_get(m);
        CHECK(msg.size == block_size(t - 1, i));
        if (msg.ptr && msg.ready && host) {
            /* The producer's memset is ordered before this copy by the event alone. */
            CHECK_OK(gpumem_stream_wait_event(s, msg.ready));
            CHECK_OK(gpumem_memcpy_async(host, msg.ptr, msg.size, s));
            if (g_pools) {
                gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
                CHECK_OK(gpumem_pointer_get_info(msg.ptr, &pi));
                CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED && pi.pool == g_pool && pi.alloc_size == msg.size);
                /* Freed in this stream's order, after the copy that reads it. */
                CHECK_OK(gpumem_free_async(msg.ptr, s));
            }
            CHECK_OK(gpumem_stream_synchronize(s));
            size_t good = tst_verify_byte(host, msg.size, msg.byte);
            CHECKF(good == msg.size, "pair %d block %d: byte %zu of %zu is not 0x%02x", t / 2, i, good, msg.size,
                   msg.byte);
            if (!g_pools)
                CHECK_OK(gpumem_free(msg.ptr));
        } else if (msg.ptr) {
            CHECK_OK(g_pools ? gpumem_free_async(msg.ptr, s) : gpumem_free(msg.ptr));
        }
        if (msg.ready)
            CHECK_OK(gpumem_event_destroy(msg.ready));
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    free(host);
    return NULL;
}

/* Threads 4 and 5: one stream and one event, shared.  Every record of the
 * event is on the shared stream, so synchronising it covers this thread's work
 * whichever thread recorded last. */
static void *shared_stream_user(int t)
{
    unsigned char *host = (unsigned char *)malloc(32768);
    CHECK(host != NULL);
    for (int i = 0; host && i < ITERS; ++i) {
        const size_t n = block_size(t, i);
        const unsigned char v = block_byte(t, i);
        void *d = NULL;
        if (g_pools)
            CHECK_OK(gpumem_malloc_from_pool_async(&d, n, g_pool, g_stream));
        else
            CHECK_OK(gpumem_malloc(&d, n));
        if (!d)
            continue;
        CHECK_OK(gpumem_memset_async(d, v, n, g_stream));
        CHECK_OK(gpumem_memcpy_async(host, d, n, g_stream));
        if (g_pools)
            CHECK_OK(gpumem_free_async(d, g_stream));
        CHECK_OK(gpumem_event_record(g_event, g_stream));
        if (i % 2)
            CHECK_ONE_OF(gpumem_event_query(g_event), GPUMEM_SUCCESS, GPUMEM_ERROR_BUSY);
        CHECK_OK(gpumem_event_synchronize(g_event));
        CHECK(tst_verify_byte(host, n, v) == n);
        if (!g_pools)
            CHECK_OK(gpumem_free(d));
    }
    free(host);
    return NULL;
}

/* Thread 6: pools of its own come and go while the others allocate from the shared one. */
static void *pool_churner(int t)
{
    gpumem_stream_t s = NULL;
    CHECK_OK(gpumem_stream_create(&s));
    unsigned char host[4096];
    for (int i = 0; i < ITERS / 2 && g_pools; ++i) {
        gpumem_pool_t p = NULL;
        CHECK_OK(gpumem_pool_create(&p, NULL));
        if (!p)
            continue;
        void *blocks[4] = {NULL, NULL, NULL, NULL};
        for (int b = 0; b < 4; ++b) {
            CHECK_OK(gpumem_malloc_from_pool_async(&blocks[b], sizeof host, p, s));
            if (blocks[b])
                CHECK_OK(gpumem_memset_async(blocks[b], block_byte(t, i * 4 + b), sizeof host, s));
        }
        for (int b = 0; b < 4; ++b) {
            if (!blocks[b])
                continue;
            CHECK_OK(gpumem_memcpy_async(host, blocks[b], sizeof host, s));
            CHECK_OK(gpumem_stream_synchronize(s));
            CHECK(tst_verify_byte(host, sizeof host, block_byte(t, i * 4 + b)) == sizeof host);
            CHECK_OK(gpumem_free_async(blocks[b], s));
        }
        CHECK_OK(gpumem_stream_synchronize(s));
        uint64_t used = 1;
        CHECK_OK(gpumem_pool_get_attribute(p, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
        CHECK(used == 0);
        CHECK_OK(gpumem_pool_destroy(p));
        /* The shared pool is read while the others allocate from it. */
        CHECK_OK(gpumem_pool_get_attribute(g_pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    }
    CHECK_OK(gpumem_stream_destroy(s));
    return NULL;
}

/* Thread 7: streams and events come and go while the device is synchronised
 * and the statistics are read; counters never go backwards. */
static void *lifecycle_churner(int t)
{
    (void)t;
    gpumem_stats_t last = tst_stats();
    int i = 0;
    /* Until the workers with fixed work are done, and at least ITERS rounds. */
    while (i < ITERS || atomic_load(&g_running) > 0) {
        gpumem_stream_t s = NULL;
        gpumem_event_t e = NULL;
        CHECK_OK(gpumem_stream_create(&s));
        CHECK_OK(gpumem_event_create(&e));
        if (s && e) {
            CHECK_OK(gpumem_event_record(e, s));
            CHECK_OK(gpumem_stream_wait_event(NULL, e));
        }
        CHECK_OK(gpumem_device_synchronize());
        if (e)
            CHECK_OK(gpumem_event_destroy(e));
        if (s)
            CHECK_OK(gpumem_stream_destroy(s));
        gpumem_stats_t now = tst_stats();
        for (int k = 0; k < GPUMEM_KIND_COUNT; ++k) {
            CHECK(now.alloc_count[k] >= last.alloc_count[k]);
            CHECK(now.free_count[k] >= last.free_count[k]);
        }
        last = now;
        ++i;
    }
    return NULL;
}

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    CHECK_OK(gpumem_set_device(0));
    if (t < 2 * PAIRS)
        t % 2 ? consumer(t) : producer(t);
    else if (t < 6)
        shared_stream_user(t);
    else if (t == 6)
        pool_churner(t);
    if (t != 7)
        atomic_fetch_sub(&g_running, 1);
    else
        lifecycle_churner(t);
    return NULL;
}

static void test_threads_sharing_objects(void)
{
    g_info = tst_info(0);
    g_pools = g_info.memory_pools != GPUMEM_SUPPORT_NONE;
    g_pool = NULL;
    if (g_pools)
        REQUIRE_OK(gpumem_pool_create(&g_pool, NULL));
    REQUIRE_OK(gpumem_stream_create(&g_stream));
    REQUIRE_OK(gpumem_event_create(&g_event));
    for (int p = 0; p < PAIRS; ++p) {
        pthread_mutex_init(&g_mail[p].mu, NULL);
        pthread_cond_init(&g_mail[p].cv, NULL);
        g_mail[p].head = g_mail[p].count = 0;
    }
    gpumem_stats_t before = tst_stats();
    atomic_store(&g_running, THREADS - 1);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; ++t)
        REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < THREADS; ++t)
        pthread_join(th[t], NULL);
    CHECK_OK(gpumem_device_synchronize());
    gpumem_stats_t after = tst_stats();
    const int kind = g_pools ? GPUMEM_KIND_STREAM_ORDERED : GPUMEM_KIND_DEVICE;
    /* Producers and the shared-stream users: ITERS blocks each; the pool churner 4 per round. */
    const uint64_t expected = (uint64_t)ITERS * (PAIRS + 2) + (g_pools ? (uint64_t)(ITERS / 2) * 4 : 0);
    CHECK(after.alloc_count[kind] - before.alloc_count[kind] == expected);
    CHECK(after.free_count[kind] - before.free_count[kind] == expected);
    if (g_pools) {
        uint64_t used = 1;
        CHECK_OK(gpumem_pool_get_attribute(g_pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
        CHECK(used == 0);
        CHECK_OK(gpumem_pool_destroy(g_pool));
    }
    CHECK_OK(gpumem_event_destroy(g_event));
    CHECK_OK(gpumem_stream_destroy(g_stream));
    for (int p = 0; p < PAIRS; ++p) {
        pthread_mutex_destroy(&g_mail[p].mu);
        pthread_cond_destroy(&g_mail[p].cv);
    }
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_threads_sharing_objects),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
