/*
 * gpumem-bench-gpu, threads:
 *   (i) alloc+free pairs per second with 1..16 threads, each on its own stream:
 *       gpumem's own pool, gpumem on the native pool, the driver's pool, and libc
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"

/* ------------------------------------------------------------------------ */
/* (i) threads: stream-ordered alloc+free, each thread on its own stream    */
/* ------------------------------------------------------------------------ */

/* THR_LIBC is no contender: libc's malloc+free of the same sizes (per-thread
 * arenas, nothing shared, no GPU) shows how far this machine's cores scale. */
enum { THR_OWN, THR_GM_NATIVE, THR_DRIVER, THR_LIBC, THR_SIDES };
static const char *thr_names[THR_SIDES] = {"gpumem own pool", "gpumem native pool", "driver pool",
                                           "libc (reference)"};
#define THR_MAX 16
#define THR_SIZES 4

static struct {
    int side;
    int threads;
    long pairs;      /* per thread, this side */
    long base_pairs; /* per thread on the driver's pools; 10x on the fast sides */
    gpumem_pool_t own;
    atomic_int ready, failed;
    atomic_int go;
} thr;

struct thr_worker {
    pthread_t tid;
    CUstream cu;
    gpumem_stream_t gm;
    double ns; /* this thread's time for its pairs */
};

static void *thr_main(void *varg)
{
    struct thr_worker *w = varg;
    static const size_t sizes[THR_SIZES] = {256, 4096, 64 << 10, 1 << 20};
    if (drv.cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS) {
        atomic_store(&thr.failed, 1);
        atomic_fetch_add(&thr.ready, 1);
        return NULL;
    }
    atomic_fetch_add(&thr.ready, 1);
    while (!atomic_load(&thr.go))
        ;
    double t0 = now_ns();
    for (long i = 0; i < thr.pairs && !atomic_load_explicit(&thr.failed, memory_order_relaxed); i++) {
        size_t size = sizes[i % THR_SIZES];
        void *p;
        CUdeviceptr dp;
        int bad = 0;
        switch (thr.side) {
        case THR_OWN:
            bad = gpumem_malloc_from_pool_async(&p, size, thr.own, w->gm) != GPUMEM_SUCCESS ||
                  gpumem_free_async(p, w->gm) != GPUMEM_SUCCESS;
            break;
        case THR_GM_NATIVE:
            bad = gpumem_malloc_async(&p, size, w->gm) != GPUMEM_SUCCESS || gpumem_free_async(p, w->gm) != GPUMEM_SUCCESS;
            break;
        case THR_LIBC:
            p = malloc(size);
            bad = p == NULL;
            if (p)
                ((volatile char *)p)[0] = 1; /* keeps the pair from being optimised away */
            free(p);
            break;
        default:
            bad = drv.cuMemAllocAsync(&dp, size, w->cu) != CUDA_SUCCESS || drv.cuMemFreeAsync(dp, w->cu) != CUDA_SUCCESS;
        }
        if (bad) {
            printf("    thread: %s failed: %s\n", thr_names[thr.side],
                   thr.side == THR_DRIVER ? "a driver call" : gpumem_last_error_message());
            atomic_store(&thr.failed, 1);
        }
    }
    if (drv.cuStreamSynchronize(w->cu) != CUDA_SUCCESS)
        atomic_store(&thr.failed, 1);
    w->ns = now_ns() - t0;
    return NULL;
}

/* Pairs per second of all threads together in one run; 0 on failure. */
static double thr_run(int side, int threads, struct thr_worker *w)
{
    thr.side = side;
    thr.threads = threads;
    /* Runs of a few ms on 16 threads measure the scheduler more than the pool:
     * the fast sides make 10x the pairs (the driver's pools at 16 threads would
     * take minutes). */
    thr.pairs = side == THR_OWN || side == THR_LIBC ? thr.base_pairs * 10 : thr.base_pairs;
    atomic_store(&thr.ready, 0);
    atomic_store(&thr.go, 0);
    atomic_store(&thr.failed, 0);
    int started = 0;
    for (int t = 0; t < threads; t++, started++)
        if (pthread_create(&w[t].tid, NULL, thr_main, &w[t]) != 0)
            break;
    if (started < threads)
        atomic_store(&thr.failed, 1);
    while (atomic_load(&thr.ready) < started)
        ;
    double t0 = now_ns();
    atomic_store(&thr.go, 1);
    for (int t = 0; t < started; t++)
        pthread_join(w[t].tid, NULL);
    double wall = now_ns() - t0;
    if (atomic_load(&thr.failed))
        return 0;
    return (double)threads * (double)thr.pairs / (wall / 1e9);
}

int part_i(void)
{
    part_header("(i) threads, each on its own stream, alloc+free pairs of 256 B..1 MiB (cached sizes, thresholds\n"
                "    UINT64_MAX; 200000 pairs per thread and run, 20000 on the driver's pools): million pairs per second\n"
                "    of all threads together (median of 5 rounds, each running every thread count once), and the\n"
                "    scaling over one thread (median of each round's ratio); target: gpumem's own pool >= 12x at 16 threads");
    int ok = 0, made = 0;
    struct thr_worker w[THR_MAX];
    gpumem_pool_t native = NULL;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    uint64_t keep = UINT64_MAX, zero = 0;
    memset(w, 0, sizeof w);
    thr.own = NULL;
    if (!have_driver_pools())
        return 1;
    thr.base_pairs = g_quick ? 2000 : 20000;
    props.device = g_device;
    props.implementation = GPUMEM_POOL_BUILTIN;
    GM(gpumem_pool_create(&thr.own, &props));
    GM(gpumem_pool_set_attribute(thr.own, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    GM(gpumem_device_get_default_pool(&native, g_device));
    GM(gpumem_pool_set_attribute(native, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    if (!driver_pool_keep(UINT64_MAX))
        goto out;
    for (; made < THR_MAX; made++) {
        CU(drv.cuStreamCreate(&w[made].cu, CU_STREAM_NON_BLOCKING));
        GM(gpumem_stream_wrap(w[made].cu, &w[made].gm));
    }
    printf("    %-20s", "threads");
    static const int counts[] = {1, 2, 4, 8, 16};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        printf("  %12d", counts[c]);
    printf("\n");
    double scale16[THR_SIDES] = {0};
    enum { THR_COUNTS = sizeof counts / sizeof counts[0], THR_RUNS = 5 };
    /* The machines drift between a fast and a slow state over seconds: each
     * round runs every thread count once, and a count's scaling is the median
     * of its ratio to one thread within each round. */
    const int runs = g_runs < THR_RUNS ? g_runs : THR_RUNS;
    for (int side = 0; side < THR_SIDES; side++) {
        double rates[THR_COUNTS][THR_RUNS], ratios[THR_RUNS];
        printf("    %-20s", thr_names[side]);
        fflush(stdout);
        int failed_at = thr_run(side, THR_MAX, w) > 0 ? 0 : THR_MAX; /* warms every stream's cache, untimed */
        for (int r = 0; r < runs && !failed_at; r++)
            for (size_t c = 0; c < THR_COUNTS && !failed_at; c++)
                if ((rates[c][r] = thr_run(side, counts[c], w)) <= 0)
                    failed_at = counts[c];
        if (failed_at) {
            printf("\n    FAILED: %s at %d threads\n", thr_names[side], failed_at);
            goto out;
        }
        /* Every ratio before any median: median() sorts in place. */
        double scales[THR_COUNTS];
        for (size_t c = 0; c < THR_COUNTS; c++) {
            for (int r = 0; r < runs; r++)
                ratios[r] = rates[c][r] / rates[0][r];
            scales[c] = median(ratios, runs);
        }
        for (size_t c = 0; c < THR_COUNTS; c++)
            printf("  %5.2f (%4.1fx)", median(rates[c], runs) / 1e6, scales[c]);
        scale16[side] = scales[THR_COUNTS - 1];
        printf("\n");
    }
    printf("    target own pool >= 12x at 16 threads: %s (%.1fx; libc on the same cores: %.1fx)\n",
           scale16[THR_OWN] >= 12 ? "met" : "NOT met", scale16[THR_OWN], scale16[THR_LIBC]);
    ok = 1;
out:
    for (int t = 0; t < made + (made < THR_MAX && w[made].cu ? 1 : 0); t++) {
        if (w[t].gm)
            gpumem_stream_destroy(w[t].gm);
        if (w[t].cu)
            drv.cuStreamDestroy(w[t].cu);
    }
    if (thr.own)
        gpumem_pool_destroy(thr.own);
    if (native) {
        gpumem_pool_set_attribute(native, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero);
        gpumem_pool_trim_to(native, 0);
    }
    driver_pool_keep(0);
    return ok;
}
