/*
 * gpumem-bench-gpu, two GPUs:
 *   (g) device 0 -> device 1 bandwidth, gpumem_memcpy vs cuMemcpyPeer, without and
 *       with peer access.  Never calls cuMulticastCreate.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench_gpu.h"

/* ------------------------------------------------------------------------ */
/* (g) copies between two devices                                           */
/* ------------------------------------------------------------------------ */

/* g_runs timed copies of `bytes` from `src` (device 0) to `dst` (device 1),
 * the two sides interleaved; medians in bandwidth_row.  1 when done, -1 on failure. */
static int peer_rows(const char *label_suffix, void *dst, void *src, size_t bytes, CUcontext ctx0, CUcontext ctx1,
                     double *s)
{
    char label[64];
    /* Warm both paths once. */
    GM_T(gpumem_memcpy(dst, src, bytes));
    CU_T(drv.cuMemcpyPeer((CUdeviceptr)dst, ctx1, (CUdeviceptr)src, ctx0, bytes));
    CU_T(drv.cuCtxSynchronize());
    for (int r = 0; r < g_runs; r++) {
        double t0 = now_ns();
        GM_T(gpumem_memcpy(dst, src, bytes)); /* returns with the bytes in place */
        double t1 = now_ns();
        CU_T(drv.cuMemcpyPeer((CUdeviceptr)dst, ctx1, (CUdeviceptr)src, ctx0, bytes));
        CU_T(drv.cuCtxSynchronize());
        double t2 = now_ns();
        s[r] = t1 - t0;
        s[g_runs + r] = t2 - t1;
    }
    snprintf(label, sizeof label, "0->1 256 MiB %s", label_suffix);
    bandwidth_row(label, bytes, s, s + g_runs, 0.95);
    return 1;
}

int part_g(void)
{
    part_header("(g) bandwidth between two GPUs, GB/s (median): gpumem_memcpy (device 0 -> device 1, direction\n"
                "    inferred) vs cuMemcpyPeer, without and with peer access; target: gpumem >= 0.95x the driver");
    const size_t bytes = 256 * MiB;
    int count = 0, ok = 0, peer = 0;
    int32_t can01 = 0, can10 = 0;
    void *src = NULL, *dst = NULL;
    CUdevice dev1 = 0;
    CUcontext ctx1 = NULL;
    double *s = NULL;
    if (!drv.cuMemcpyPeer || !drv.cuDeviceGetCount || drv.cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 2) {
        printf("    skipped: %d device(s) (or no cuMemcpyPeer): this part needs two\n", count);
        return 1;
    }
    printf("    %-22s  %10s  %10s  %10s  %s\n", "", "gpumem", "driver", "gpumem/drv", "target");
    if (!(s = calloc((size_t)g_runs * 2, sizeof(double)))) {
        printf("    FAILED: out of host memory\n");
        return 0;
    }
    CU(drv.cuDeviceGet(&dev1, 1));
    CU(drv.cuDevicePrimaryCtxRetain(&ctx1, dev1));
    GM(gpumem_set_device(0));
    GM(gpumem_malloc(&src, bytes));
    GM(gpumem_memset(src, 0x5a, bytes));
    GM(gpumem_set_device(1));
    GM(gpumem_malloc(&dst, bytes));
    GM(gpumem_set_device(0));
    CU(drv.cuCtxSetCurrent(g_ctx));
    if (peer_rows("(no peer)", dst, src, bytes, g_ctx, ctx1, s) != 1)
        goto out;
    GM(gpumem_device_can_access_peer(&can01, 0, 1));
    GM(gpumem_device_can_access_peer(&can10, 1, 0));
    if (can01 && can10) {
        GM(gpumem_set_device(1));
        GM(gpumem_device_enable_peer_access(0));
        GM(gpumem_set_device(0));
        GM(gpumem_device_enable_peer_access(1));
        peer = 1;
        CU(drv.cuCtxSetCurrent(g_ctx));
        if (peer_rows("(peer)", dst, src, bytes, g_ctx, ctx1, s) != 1)
            goto out;
    } else {
        printf("    peer access: skipped: can_access_peer 0->1 %d, 1->0 %d\n", (int)can01, (int)can10);
    }
    ok = 1;
out:
    if (peer) {
        gpumem_set_device(1);
        gpumem_device_disable_peer_access(0);
        gpumem_set_device(0);
        gpumem_device_disable_peer_access(1);
    }
    if (dst)
        gpumem_free(dst);
    if (src)
        gpumem_free(src);
    gpumem_set_device(0);
    if (ctx1)
        drv.cuDevicePrimaryCtxRelease(dev1);
    free(s);
    return ok;
}
