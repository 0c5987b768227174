/* own-pool-threads: gpumem's own pool at 1..16 threads, each thread on its
 * own stream, with every thread's own time per alloc+free pair: are all
 * threads slower together (something shared), or some (the machine)?  A
 * companion of gpumem-bench-gpu's part (i), whose figure is the aggregate
 * rate, set by the slowest thread (docs/benchmarks.md, "Issue 10, seventh
 * session").  Public API only.
 *
 *   cc -O2 -pthread -Iinclude -IBUILD/include -o own-pool-threads tools/own-pool-threads.c \
 *      -LBUILD/src -lgpumem -Wl,-rpath,$PWD/BUILD/src
 *   GPUMEM_BACKEND=cuda ./own-pool-threads      (or host)
 *
 * Sizes 256 B, 4 KiB, 64 KiB and 1 MiB in turn (cached after the first
 * round), 400,000 pairs per thread; three rounds of 1, 2, 4, 8 and 16
 * threads.  Prints the aggregate rate, and each thread's ns per pair. */
#include <gpumem/gpumem.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

enum { MAX_THREADS = 16, PAIRS = 400000 };

static gpumem_pool_t g_pool;
static gpumem_stream_t g_streams[MAX_THREADS];
static double g_ns[MAX_THREADS];
static atomic_int g_go, g_ready;

static void *worker(void *arg)
{
    static const size_t sizes[4] = {256, 4096, 64 << 10, 1 << 20};
    const long k = (long)arg;
    void *p;
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_go))
        ;
    const double t0 = now_ns();
    for (long i = 0; i < PAIRS; i++)
        if (gpumem_malloc_from_pool_async(&p, sizes[i & 3], g_pool, g_streams[k]) != GPUMEM_SUCCESS ||
            gpumem_free_async(p, g_streams[k]) != GPUMEM_SUCCESS) {
            fprintf(stderr, "own-pool-threads: %s\n", gpumem_last_error_message());
            exit(1);
        }
    g_ns[k] = (now_ns() - t0) / PAIRS;
    return NULL;
}

static void run(int threads, int print)
{
    pthread_t tid[MAX_THREADS];
    atomic_store(&g_go, 0);
    atomic_store(&g_ready, 0);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, (void *)i) != 0) {
            fprintf(stderr, "own-pool-threads: pthread_create failed\n");
            exit(1);
        }
    while (atomic_load(&g_ready) < threads)
        ;
    const double t0 = now_ns();
    atomic_store(&g_go, 1);
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    const double rate = threads * (double)PAIRS / ((now_ns() - t0) / 1e9) / 1e6;
    if (!print)
        return;
    double sorted[MAX_THREADS];
    for (int i = 0; i < threads; i++)
        sorted[i] = g_ns[i];
    qsort(sorted, (size_t)threads, sizeof sorted[0], cmp_double);
    printf("  %2d threads %7.1f M pairs/s   ns per pair: min %6.1f  median %6.1f  max %6.1f   each:", threads, rate,
           sorted[0], sorted[threads / 2], sorted[threads - 1]);
    for (int i = 0; i < threads; i++)
        printf(" %.0f", g_ns[i]);
    printf("\n");
}

int main(void)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.implementation = GPUMEM_POOL_BUILTIN;
    uint64_t keep = UINT64_MAX;
    if (gpumem_pool_create(&g_pool, &props) != GPUMEM_SUCCESS ||
        gpumem_pool_set_attribute(g_pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep) != GPUMEM_SUCCESS) {
        fprintf(stderr, "own-pool-threads: %s\n", gpumem_last_error_message());
        return 1;
    }
    for (int i = 0; i < MAX_THREADS; i++)
        if (gpumem_stream_create(&g_streams[i]) != GPUMEM_SUCCESS) {
            fprintf(stderr, "own-pool-threads: %s\n", gpumem_last_error_message());
            return 1;
        }
    run(MAX_THREADS, 0); /* every stream's cache filled, untimed */
    for (int round = 0; round < 3; round++)
        for (int t = 1; t <= MAX_THREADS; t *= 2)
            run(t, 1);
    for (int i = 0; i < MAX_THREADS; i++)
        gpumem_stream_destroy(g_streams[i]);
    gpumem_pool_destroy(g_pool);
    return 0;
}
