/*
 * gpumem-bench-gpu, copies on one device against the driver's:
 *   (d) pinned H2D/D2H bandwidth and managed prefetch bandwidth
 *   (j) 1,000 small copies: one batch vs 1,000 calls, and the driver's own batch
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"

/* ------------------------------------------------------------------------ */
/* (d) bandwidth                                                            */
/* ------------------------------------------------------------------------ */

static int part_d_copies(void)
{
    const size_t bytes = 256 * MiB;
    int ok = 0;
    void *host = NULL, *dev = NULL;
    double *s = calloc((size_t)g_runs * 4, sizeof(double));
    if (!s) {
        printf("    FAILED: out of host memory\n");
        return 0;
    }
    GM(gpumem_host_alloc(&host, bytes, 0));
    GM(gpumem_malloc(&dev, bytes));
    memset(host, 0x5a, bytes);
    /* Warm both paths once. */
    GM(gpumem_memcpy(dev, host, bytes));
    CU(drv.cuMemcpy((CUdeviceptr)host, (CUdeviceptr)dev, bytes));
    CU(drv.cuCtxSynchronize());
    for (int r = 0; r < g_runs; r++) {
        double t0 = now_ns();
        GM(gpumem_memcpy(dev, host, bytes));
        CU(drv.cuCtxSynchronize());
        double t1 = now_ns();
        CU(drv.cuMemcpy((CUdeviceptr)dev, (CUdeviceptr)host, bytes));
        CU(drv.cuCtxSynchronize());
        double t2 = now_ns();
        GM(gpumem_memcpy(host, dev, bytes));
        CU(drv.cuCtxSynchronize());
        double t3 = now_ns();
        CU(drv.cuMemcpy((CUdeviceptr)host, (CUdeviceptr)dev, bytes));
        CU(drv.cuCtxSynchronize());
        double t4 = now_ns();
        s[r] = t1 - t0;
        s[g_runs + r] = t2 - t1;
        s[2 * g_runs + r] = t3 - t2;
        s[3 * g_runs + r] = t4 - t3;
    }
    bandwidth_row("pinned H2D 256 MiB", bytes, s, s + g_runs, 0.95);
    bandwidth_row("pinned D2H 256 MiB", bytes, s + 2 * g_runs, s + 3 * g_runs, 0.95);
    ok = 1;
out:
    if (dev)
        gpumem_free(dev);
    if (host)
        gpumem_host_free(host);
    free(s);
    return ok;
}

static CUresult cu_prefetch(CUdeviceptr p, size_t bytes, int to_host)
{
    if (drv.cuMemPrefetchAsync_v2) {
        CUmemLocation loc;
        memset(&loc, 0, sizeof loc);
        loc.type = to_host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = to_host ? 0 : (int)g_cudev;
        return drv.cuMemPrefetchAsync_v2(p, bytes, loc, 0, g_stream);
    }
    return drv.cuMemPrefetchAsync_v1(p, bytes, to_host ? CU_DEVICE_CPU : g_cudev, g_stream);
}

static int part_d_prefetch(void)
{
    const size_t bytes = 512 * MiB;
    int ok = 0;
    void *m = NULL;
    double *s = NULL;
    if (g_info.managed_memory != GPUMEM_SUPPORT_NATIVE) {
        printf("    prefetch: skipped: gpumem's managed memory is %s here\n",
               g_info.managed_memory == GPUMEM_SUPPORT_EMULATED ? "EMULATED" : "NONE");
        return 1;
    }
    if (!drv.cuMemPrefetchAsync_v2 && !drv.cuMemPrefetchAsync_v1) {
        printf("    prefetch: skipped: the driver has no cuMemPrefetchAsync\n");
        return 1;
    }
    if (!(s = calloc((size_t)g_runs * 4, sizeof(double)))) {
        printf("    FAILED: out of host memory\n");
        return 0;
    }
    GM(gpumem_managed_alloc(&m, bytes, GPUMEM_ATTACH_GLOBAL));
    memset(m, 0x5a, bytes); /* populated on the host */
    /* Warm: one round trip each way. */
    GM(gpumem_prefetch_async(m, bytes, g_device, g_gstream));
    GM(gpumem_prefetch_async(m, bytes, GPUMEM_DEVICE_HOST, g_gstream));
    CU(drv.cuStreamSynchronize(g_stream));
    for (int r = 0; r < g_runs; r++) {
        /* Each timed prefetch starts with every page at the other end. */
        double t0 = now_ns();
        GM(gpumem_prefetch_async(m, bytes, g_device, g_gstream));
        CU(drv.cuStreamSynchronize(g_stream));
        double t1 = now_ns();
        GM(gpumem_prefetch_async(m, bytes, GPUMEM_DEVICE_HOST, g_gstream));
        CU(drv.cuStreamSynchronize(g_stream));
        double t2 = now_ns();
        CU(cu_prefetch((CUdeviceptr)m, bytes, 0));
        CU(drv.cuStreamSynchronize(g_stream));
        double t3 = now_ns();
        CU(cu_prefetch((CUdeviceptr)m, bytes, 1));
        CU(drv.cuStreamSynchronize(g_stream));
        double t4 = now_ns();
        s[r] = t1 - t0;
        s[2 * g_runs + r] = t2 - t1;
        s[g_runs + r] = t3 - t2;
        s[3 * g_runs + r] = t4 - t3;
    }
    bandwidth_row("prefetch H->D 512 MiB", bytes, s, s + g_runs, 0.95);
    bandwidth_row("prefetch D->H 512 MiB", bytes, s + 2 * g_runs, s + 3 * g_runs, 0.95);
    ok = 1;
out:
    if (m)
        gpumem_free(m);
    free(s);
    return ok;
}

int part_d(void)
{
    part_header("(d) bandwidth, GB/s (median): gpumem_memcpy vs cuMemcpy (unified addressing, one pinned and one\n"
                "    device buffer for both), gpumem_prefetch_async vs cuMemPrefetchAsync (one managed buffer);\n"
                "    gpumem/drv is the bandwidth ratio; target: gpumem within 5% of the driver (>= 0.95x)");
    printf("    %-22s  %10s  %10s  %10s  %s\n", "", "gpumem", "driver", "gpumem/drv", "target");
    int a = part_d_copies();
    int b = part_d_prefetch();
    return a && b;
}

/* ------------------------------------------------------------------------ */
/* (j) batched copies                                                       */
/* ------------------------------------------------------------------------ */

#define H_COPIES 1000
#define H_SLOT 4096

/* One way of enqueueing the H_COPIES copies; 0 on failure. */
typedef int (*enqueue_fn)(void *const *dsts, const void *const *srcs, const size_t *sizes);

static int enqueue_gm_batch(void *const *dsts, const void *const *srcs, const size_t *sizes)
{
    gpumem_status_t st = gpumem_memcpy_batch_async(dsts, srcs, sizes, H_COPIES, g_gstream);
    if (st != GPUMEM_SUCCESS)
        report_gm("gpumem_memcpy_batch_async", st);
    return st == GPUMEM_SUCCESS;
}

static int enqueue_gm_single(void *const *dsts, const void *const *srcs, const size_t *sizes)
{
    for (size_t i = 0; i < H_COPIES; i++) {
        gpumem_status_t st = gpumem_memcpy_async(dsts[i], srcs[i], sizes[i], g_gstream);
        if (st != GPUMEM_SUCCESS) {
            report_gm("gpumem_memcpy_async", st);
            return 0;
        }
    }
    return 1;
}

static int enqueue_cu_single(void *const *dsts, const void *const *srcs, const size_t *sizes)
{
    for (size_t i = 0; i < H_COPIES; i++) {
        CUresult r = drv.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dsts[i], (CUdeviceptr)(uintptr_t)srcs[i], sizes[i],
                                       g_stream);
        if (r != CUDA_SUCCESS) {
            report_cu("cuMemcpyAsync", r);
            return 0;
        }
    }
    return 1;
}

/* The driver's batch, given arrays made once outside the timing (as a program would keep them). */
static CUdeviceptr g_h_dsts[H_COPIES], g_h_srcs[H_COPIES];
static size_t g_h_sizes[H_COPIES];

static int enqueue_cu_batch(void *const *dsts, const void *const *srcs, const size_t *sizes)
{
    (void)dsts, (void)srcs, (void)sizes;
    CUmemcpyAttributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t first = 0;
    CUresult r = drv.cuMemcpyBatchAsync_v2(g_h_dsts, g_h_srcs, g_h_sizes, H_COPIES, &attrs, &first, 1, g_stream);
    if (r != CUDA_SUCCESS)
        report_cu("cuMemcpyBatchAsync", r);
    return r == CUDA_SUCCESS;
}

int part_j(void)
{
    part_header("(j) 1,000 copies of 64 B - 4 KiB, pinned host -> device, on one stream: us per 1,000 (median);\n"
                "    enqueue = CPU time of the calls, done = until cuStreamSynchronize returns;\n"
                "    x raw = against 1,000 cuMemcpyAsync measured in the same runs");
    printf("    batch_memops: %s\n", g_info.batch_memops == GPUMEM_SUPPORT_NATIVE ? "NATIVE (one driver call)"
                                                                                : "EMULATED (one call per copy)");
    int ok = 0;
    void *dev = NULL, *host = NULL;
    void *dsts[H_COPIES];
    const void *srcs[H_COPIES];
    size_t sizes[H_COPIES];
    struct {
        const char *name;
        enqueue_fn fn;
        double *enq, *done;
    } sides[] = {{"gpumem_memcpy_batch_async x1", enqueue_gm_batch, NULL, NULL},
                 {"gpumem_memcpy_async x1000", enqueue_gm_single, NULL, NULL},
                 {"cuMemcpyAsync x1000 (raw)", enqueue_cu_single, NULL, NULL},
                 {"cuMemcpyBatchAsync x1 (driver)", enqueue_cu_batch, NULL, NULL}};
    size_t n_sides = sizeof sides / sizeof sides[0];
    if (!drv.cuMemcpyAsync) {
        printf("    skipped: the driver lacks cuMemcpyAsync\n");
        return 1;
    }
    if (!drv.cuMemcpyBatchAsync_v2) {
        printf("    (no cuMemcpyBatchAsync of CUDA 13.0 in this driver: its row is left out)\n");
        n_sides--;
    }
    GM(gpumem_malloc(&dev, (size_t)H_COPIES * H_SLOT));
    GM(gpumem_host_alloc(&host, (size_t)H_COPIES * H_SLOT, 0));
    memset(host, 0x5A, (size_t)H_COPIES * H_SLOT);
    for (size_t i = 0; i < H_COPIES; i++) {
        dsts[i] = (char *)dev + i * H_SLOT;
        srcs[i] = (char *)host + i * H_SLOT;
        sizes[i] = (size_t)64 << (i % 7); /* 64 B .. 4 KiB */
        g_h_dsts[i] = (CUdeviceptr)(uintptr_t)dsts[i];
        g_h_srcs[i] = (CUdeviceptr)(uintptr_t)srcs[i];
        g_h_sizes[i] = sizes[i];
    }
    for (size_t k = 0; k < n_sides; k++) {
        sides[k].enq = calloc((size_t)g_runs, sizeof(double));
        sides[k].done = calloc((size_t)g_runs, sizeof(double));
        if (!sides[k].enq || !sides[k].done) {
            printf("    FAILED: out of host memory\n");
            goto out;
        }
    }
    /* Warm up every side (first-use costs: scratch arrays, driver paths). */
    for (size_t k = 0; k < n_sides; k++)
        for (int w = 0; w < 3; w++) {
            if (!sides[k].fn(dsts, srcs, sizes))
                goto out;
            CU(drv.cuStreamSynchronize(g_stream));
        }
    /* The sides interleaved run by run, so that drift touches them alike. */
    for (int r = 0; r < g_runs; r++)
        for (size_t k = 0; k < n_sides; k++) {
            double t0 = now_ns();
            if (!sides[k].fn(dsts, srcs, sizes))
                goto out;
            double t1 = now_ns();
            CU(drv.cuStreamSynchronize(g_stream));
            double t2 = now_ns();
            sides[k].enq[r] = t1 - t0;
            sides[k].done[r] = t2 - t0;
        }
    double raw_enq = median(sides[2].enq, g_runs), raw_done = median(sides[2].done, g_runs);
    printf("    %-32s  %10s  %8s  %10s  %8s\n", "", "enqueue", "x raw", "done", "x raw");
    for (size_t k = 0; k < n_sides; k++) {
        double e = median(sides[k].enq, g_runs), d = median(sides[k].done, g_runs);
        printf("    %-32s  %10.1f  %7.2fx  %10.1f  %7.2fx\n", sides[k].name, e / 1e3, e / raw_enq, d / 1e3,
               d / raw_done);
    }
    /* What arrived: the last copy of every slot is the pattern. */
    {
        unsigned char check[H_SLOT];
        GM(gpumem_memcpy(check, (char *)dev + (H_COPIES - 1) * H_SLOT, sizes[H_COPIES - 1]));
        for (size_t i = 0; i < sizes[H_COPIES - 1]; i++)
            if (check[i] != 0x5A) {
                printf("    FAILED: the copied bytes are wrong\n");
                goto out;
            }
    }
    ok = 1;
out:
    for (size_t k = 0; k < sizeof sides / sizeof sides[0]; k++) {
        free(sides[k].enq);
        free(sides[k].done);
    }
    if (dev)
        gpumem_free(dev);
    if (host)
        gpumem_host_free(host);
    return ok;
}
