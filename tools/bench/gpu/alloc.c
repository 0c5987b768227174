/*
 * gpumem-bench-gpu, allocation of device memory against the driver's:
 *   (a) gpumem_malloc + gpumem_free vs cuMemAlloc + cuMemFree
 *   (b) stream-ordered pairs on the default (native) pool vs the driver's pool
 *   (c) gpumem's own pool (GPUMEM_POOL_BUILTIN) vs the driver's pool
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>

#include "bench_gpu.h"

/* ------------------------------------------------------------------------ */
/* (a) synchronous allocation                                               */
/* ------------------------------------------------------------------------ */

static double loop_gm_malloc(size_t size, long n, void *arg)
{
    (void)arg;
    void *p;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        GM_T(gpumem_malloc(&p, size));
        GM_T(gpumem_free(p));
    }
    return now_ns() - t0;
}

static double loop_cu_malloc(size_t size, long n, void *arg)
{
    (void)arg;
    CUdeviceptr p;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CU_T(drv.cuMemAlloc(&p, size));
        CU_T(drv.cuMemFree(p));
    }
    return now_ns() - t0;
}

int part_a(void)
{
    part_header("(a) gpumem_malloc+gpumem_free vs cuMemAlloc+cuMemFree: us per pair (median);\n"
                "    gpumem/drv is the time ratio (below 1: gpumem is faster)");
    printf("    %8s  %12s  %12s  %10s\n", "size", "gpumem", "driver", "gpumem/drv");
    static const size_t sizes[] = {1 * MiB, 64 * MiB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double gm, cu;
        char label[32];
        if (!measure_two(loop_gm_malloc, NULL, loop_cu_malloc, NULL, sizes[i], 1 << 16, &gm, &cu))
            return 0;
        printf("    %8s  %12.2f  %12.2f  %9.2fx\n", size_label(label, sizeof label, sizes[i]), gm / 1e3, cu / 1e3,
               gm / cu);
        fflush(stdout);
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* (b), (c) stream-ordered allocation                                       */
/* ------------------------------------------------------------------------ */

/* arg: the gpumem pool, or NULL for the device's current pool.  Both sides
 * end each run with the same cuStreamSynchronize, which counts. */
static double loop_gm_async(size_t size, long n, void *arg)
{
    gpumem_pool_t pool = arg;
    void *p;
    double t0 = now_ns();
    if (pool) {
        for (long i = 0; i < n; i++) {
            GM_T(gpumem_malloc_from_pool_async(&p, size, pool, g_gstream));
            GM_T(gpumem_free_async(p, g_gstream));
        }
    } else {
        for (long i = 0; i < n; i++) {
            GM_T(gpumem_malloc_async(&p, size, g_gstream));
            GM_T(gpumem_free_async(p, g_gstream));
        }
    }
    CU_T(drv.cuStreamSynchronize(g_stream));
    return now_ns() - t0;
}

static double loop_cu_async(size_t size, long n, void *arg)
{
    (void)arg;
    CUdeviceptr p;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CU_T(drv.cuMemAllocAsync(&p, size, g_stream));
        CU_T(drv.cuMemFreeAsync(p, g_stream));
    }
    CU_T(drv.cuStreamSynchronize(g_stream));
    return now_ns() - t0;
}

static const size_t g_async_sizes[] = {256, 64 << 10, 1 << 20};
#define N_ASYNC_SIZES (sizeof g_async_sizes / sizeof g_async_sizes[0])

int have_driver_pools(void)
{
    if (drv.cuDeviceGetDefaultMemPool && drv.cuMemPoolSetAttribute && drv.cuMemAllocAsync && drv.cuMemFreeAsync)
        return 1;
    printf("    skipped: the driver has no stream-ordered allocator (cuMemAllocAsync)\n");
    return 0;
}

int driver_pool_keep(uint64_t keep)
{
    CUmemoryPool pool;
    CU(drv.cuDeviceGetDefaultMemPool(&pool, g_cudev));
    CU(drv.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    if (keep == 0 && drv.cuMemPoolTrimTo)
        CU(drv.cuMemPoolTrimTo(pool, 0));
    return 1;
out:
    return 0;
}

static int async_table(gpumem_pool_t pool, const char *target_note, double target)
{
    printf("    %8s  %12s  %12s  %10s\n", "size", "gpumem", "driver", "gpumem/drv");
    int met = 1;
    for (size_t i = 0; i < N_ASYNC_SIZES; i++) {
        double gm, cu;
        char label[32];
        if (!measure_two(loop_gm_async, pool, loop_cu_async, NULL, g_async_sizes[i], 1 << 22, &gm, &cu))
            return 0;
        met &= gm / cu <= target;
        printf("    %8s  %12.1f  %12.1f  %9.3fx\n", size_label(label, sizeof label, g_async_sizes[i]), gm, cu,
               gm / cu);
        fflush(stdout);
    }
    if (target_note)
        printf("    target %s: %s\n", target_note, met ? "met" : "NOT met");
    return 1;
}

int part_b(void)
{
    part_header("(b) gpumem_malloc_async+gpumem_free_async (default pool) vs cuMemAllocAsync+cuMemFreeAsync (driver's\n"
                "    default pool), one stream, release thresholds UINT64_MAX: ns per pair (median), stream sync counted;\n"
                "    gpumem/drv is the time ratio");
    int ok = 0;
    gpumem_pool_t pool = NULL;
    uint64_t keep = UINT64_MAX, zero = 0;
    if (!have_driver_pools())
        return 1;
    if (g_info.memory_pools != GPUMEM_SUPPORT_NATIVE)
        printf("    note: gpumem's pools are %s here: its default pool is not the driver's\n",
               g_info.memory_pools == GPUMEM_SUPPORT_EMULATED ? "EMULATED" : "NONE");
    GM(gpumem_device_get_default_pool(&pool, g_device));
    GM(gpumem_device_set_pool(g_device, pool));
    GM(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    if (!driver_pool_keep(UINT64_MAX))
        goto out;
    ok = async_table(NULL, NULL, 0);
out:
    /* Give the cached memory back for the parts that follow. */
    if (pool) {
        gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero);
        gpumem_pool_trim_to(pool, 0);
    }
    driver_pool_keep(0);
    return ok;
}

int part_c(void)
{
    part_header("(c) a GPUMEM_POOL_BUILTIN pool (gpumem's own allocator) vs cuMemAllocAsync+cuMemFreeAsync (driver's\n"
                "    default pool), one stream, thresholds UINT64_MAX: ns per pair (median), stream sync counted;\n"
                "    gpumem/drv is the time ratio");
    int ok = 0;
    gpumem_pool_t pool = NULL;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    uint64_t keep = UINT64_MAX;
    if (!have_driver_pools())
        return 1;
    props.device = g_device;
    props.implementation = GPUMEM_POOL_BUILTIN;
    GM(gpumem_pool_create(&pool, &props));
    GM(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    if (!driver_pool_keep(UINT64_MAX))
        goto out;
    ok = async_table(pool, "gpumem <= 0.10x the driver at every size", 0.10);
out:
    if (pool) {
        gpumem_status_t st = gpumem_pool_destroy(pool);
        if (st != GPUMEM_SUCCESS) {
            report_gm("gpumem_pool_destroy", st);
            ok = 0;
        }
    }
    driver_pool_keep(0);
    return ok;
}
