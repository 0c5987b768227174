/*
 * gpumem-bench-gpu, pinned host memory:
 *   (f) pinned host allocation, repeated: gpumem_host_alloc vs cuMemHostAlloc
 *   (k) staging buffers from a pool of pinned host memory, and H2D bandwidth from one
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"

/* ------------------------------------------------------------------------ */
/* (f) pinned host allocation, repeated                                     */
/* ------------------------------------------------------------------------ */

static double pair_gm_host(size_t size)
{
    void *p;
    double t0 = now_ns();
    GM_T(gpumem_host_alloc(&p, size, 0));
    GM_T(gpumem_host_free(p));
    return now_ns() - t0;
}

static double pair_cu_host(size_t size)
{
    void *p;
    double t0 = now_ns();
    CU_T(drv.cuMemHostAlloc(&p, size, 0));
    CU_T(drv.cuMemFreeHost(p));
    return now_ns() - t0;
}

int part_f(void)
{
    const size_t size = 64 * MiB;
    part_header("(f) pinned host allocation of 64 MiB, repeated: gpumem_host_alloc+gpumem_host_free vs\n"
                "    cuMemHostAlloc+cuMemFreeHost, us per pair; target: later gpumem pairs <= 1% of the driver's");
    int ok = 0;
    double *gm = calloc((size_t)g_runs, sizeof(double)), *cu = calloc((size_t)g_runs, sizeof(double));
    if (!gm || !cu) {
        printf("    FAILED: out of host memory\n");
        goto out;
    }
    double gm_first = pair_gm_host(size);
    double cu_first = gm_first < 0 ? -1 : pair_cu_host(size);
    if (gm_first < 0 || cu_first < 0)
        goto out;
    for (int r = 0; r < g_runs; r++) {
        gm[r] = pair_gm_host(size);
        cu[r] = pair_cu_host(size);
        if (gm[r] < 0 || cu[r] < 0)
            goto out;
    }
    double gm_med = median(gm, g_runs), cu_med = median(cu, g_runs);
    printf("    %-28s  %12s  %12s  %10s\n", "", "gpumem", "driver", "gpumem/drv");
    printf("    %-28s  %12.1f  %12.1f  %9.4fx\n", "first pair", gm_first / 1e3, cu_first / 1e3, gm_first / cu_first);
    printf("    %-28s  %12.1f  %12.1f  %9.4fx\n", "later pairs (median)", gm_med / 1e3, cu_med / 1e3, gm_med / cu_med);
    printf("    target <= 0.01x: %s\n", gm_med / cu_med <= 0.01 ? "met" : "NOT met");
    ok = 1;
out:
    free(gm);
    free(cu);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* (k) staging buffers from a pool of pinned host memory                    */
/* ------------------------------------------------------------------------ */

/* gpumem again from scratch with GPUMEM_PINNED_CACHE set to `cache` (NULL:
 * as the environment had it): the option is read once, at start.  The
 * wrapped stream goes with the old runtime and is wrapped again. */
static int restart_gpumem(const char *cache)
{
    gpumem_status_t st;
    if (g_gstream)
        gpumem_stream_destroy(g_gstream);
    g_gstream = NULL;
    if ((st = gpumem_finalize()) != GPUMEM_SUCCESS) {
        report_gm("gpumem_finalize", st);
        return 0;
    }
    if (cache)
        setenv("GPUMEM_PINNED_CACHE", cache, 1);
    st = gpumem_init(g_any_backend ? GPUMEM_BACKEND_AUTO : GPUMEM_BACKEND_CUDA);
    if (st == GPUMEM_SUCCESS)
        st = gpumem_set_device(g_device);
    if (st == GPUMEM_SUCCESS)
        st = gpumem_stream_wrap(g_stream, &g_gstream);
    if (st != GPUMEM_SUCCESS) {
        report_gm("restarting gpumem", st);
        return 0;
    }
    return make_current();
}

static double loop_gm_host_alloc(size_t size, long n, void *arg)
{
    (void)arg;
    void *p;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        GM_T(gpumem_host_alloc(&p, size, 0));
        GM_T(gpumem_host_free(p));
    }
    return now_ns() - t0;
}

static double loop_cu_host_alloc(size_t size, long n, void *arg)
{
    (void)arg;
    void *p;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CU_T(drv.cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
        CU_T(drv.cuMemFreeHost(p));
    }
    return now_ns() - t0;
}

/* The pool's pairs, each block ready for the host: the run ends with the stream synchronised. */
static double loop_gm_pinned_pool(size_t size, long n, void *arg)
{
    gpumem_pool_t pool = arg;
    void *p;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        GM_T(gpumem_malloc_from_pool_async(&p, size, pool, g_gstream));
        GM_T(gpumem_free_async(p, g_gstream));
    }
    CU_T(drv.cuStreamSynchronize(g_stream));
    return now_ns() - t0;
}

static int part_k_alloc(gpumem_pool_t pool)
{
    static const size_t sizes[] = {64 << 10, 1 << 20, 16 << 20};
    printf("    %8s  %12s  %14s  %12s  %11s  %11s\n", "size", "pinned pool", "host_alloc", "driver", "pool/h_alloc",
           "pool/drv");
    int met = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double pool_ns, cu_ns_a, host_ns, cu_ns_b;
        char label[32];
        /* Each gpumem side interleaved with the driver's in its own measurement. */
        if (!measure_two(loop_gm_pinned_pool, pool, loop_cu_host_alloc, NULL, sizes[i], 1 << 20, &pool_ns, &cu_ns_a) ||
            !measure_two(loop_gm_host_alloc, NULL, loop_cu_host_alloc, NULL, sizes[i], 1 << 20, &host_ns, &cu_ns_b))
            return 0;
        met &= pool_ns / host_ns <= 0.01;
        printf("    %8s  %10.2fus  %12.2fus  %10.2fus  %10.4fx  %10.4fx\n", size_label(label, sizeof label, sizes[i]),
               pool_ns / 1e3, host_ns / 1e3, (cu_ns_a + cu_ns_b) / 2e3, pool_ns / host_ns, pool_ns / cu_ns_a);
        printf("    %8s  (host_alloc/drv %.3fx in its own interleaving)\n", "", host_ns / cu_ns_b);
        fflush(stdout);
    }
    printf("    target: the pinned pool <= 0.01x gpumem_host_alloc (cache off) at every size: %s\n",
           met ? "met" : "NOT met");
    return 1;
}

static int part_k_bandwidth(gpumem_pool_t pool)
{
    const size_t bytes = 256 * MiB;
    int ok = 0;
    void *staged = NULL, *dev = NULL, *host = NULL;
    double *s = calloc((size_t)g_runs * 2, sizeof(double));
    if (!s) {
        printf("    FAILED: out of host memory\n");
        return 0;
    }
    GM(gpumem_malloc_from_pool_async(&staged, bytes, pool, g_gstream));
    CU(drv.cuStreamSynchronize(g_stream));
    CU(drv.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    GM(gpumem_malloc(&dev, bytes));
    memset(staged, 0x5a, bytes);
    memset(host, 0x5a, bytes);
    /* Warm both once. */
    CU(drv.cuMemcpy((CUdeviceptr)dev, (CUdeviceptr)staged, bytes));
    CU(drv.cuMemcpy((CUdeviceptr)dev, (CUdeviceptr)host, bytes));
    CU(drv.cuCtxSynchronize());
    for (int r = 0; r < g_runs; r++) {
        double t0 = now_ns();
        CU(drv.cuMemcpy((CUdeviceptr)dev, (CUdeviceptr)staged, bytes));
        CU(drv.cuCtxSynchronize());
        double t1 = now_ns();
        CU(drv.cuMemcpy((CUdeviceptr)dev, (CUdeviceptr)host, bytes));
        CU(drv.cuCtxSynchronize());
        double t2 = now_ns();
        s[r] = t1 - t0;
        s[g_runs + r] = t2 - t1;
    }
    printf("    %-22s  %10s  %10s  %10s\n", "GB/s", "pool", "cuMemHostAlloc", "pool/drv");
    bandwidth_row("H2D 256 MiB", bytes, s, s + g_runs, 0.95);
    ok = 1;
out:
    if (dev)
        gpumem_free(dev);
    if (host)
        drv.cuMemFreeHost(host);
    if (staged) {
        gpumem_free_async(staged, g_gstream);
        drv.cuStreamSynchronize(g_stream);
    }
    free(s);
    return ok;
}

int part_k(void)
{
    part_header("(k) staging buffers from a pool of pinned host memory (gpumem_get_default_pool_for(PINNED, -1),\n"
                "    threshold UINT64_MAX) vs gpumem_host_alloc+gpumem_host_free with GPUMEM_PINNED_CACHE=0 vs\n"
                "    cuMemHostAlloc+cuMemFreeHost: time per pair (median; the pool's runs end with a stream sync);\n"
                "    then H2D bandwidth from a block of the pool vs from cuMemHostAlloc memory");
    const char *was = getenv("GPUMEM_PINNED_CACHE");
    char saved[64] = "";
    if (was)
        snprintf(saved, sizeof saved, "%s", was);
    if (!restart_gpumem("0"))
        return 0;
    int ok = 0;
    gpumem_pool_t pool = NULL;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    uint64_t keep = UINT64_MAX;
    static const char *levels[] = {"NONE", "EMULATED", "NATIVE"};
    GM(gpumem_device_get_info(g_device, &info));
    printf("    pinned pools: %s (NATIVE: the driver's host pools; EMULATED: gpumem's own pool over pinned chunks)\n",
           info.pinned_pools >= 0 && info.pinned_pools <= 2 ? levels[info.pinned_pools] : "?");
    GM(gpumem_get_default_pool_for(&pool, GPUMEM_POOL_MEMORY_PINNED, -1));
    GM(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    ok = part_k_alloc(pool) && part_k_bandwidth(pool);
out:
    if (pool)
        gpumem_pool_trim_to(pool, 0);
    /* Back to the environment's cache setting for whatever runs next. */
    if (was)
        setenv("GPUMEM_PINNED_CACHE", saved, 1);
    else
        unsetenv("GPUMEM_PINNED_CACHE");
    if (!restart_gpumem(NULL))
        ok = 0;
    return ok;
}
