/*
 * gpumem-bench-gpu, thin paths:
 *   (h) each of gpumem's thin calls (events, stream queries and synchronisation,
 *       small async and synchronous copies and fills, a native pool pair,
 *       host_get_device_pointer, pointer info) against the driver call it stands
 *       for, and reference rows of the driver against itself
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench_gpu.h"

/* ------------------------------------------------------------------------ */
/* (h) thin paths: gpumem's wrapper vs the driver call it stands for        */
/* ------------------------------------------------------------------------ */

/* Both sides of (h) use the same stream and buffers; each has its own event
 * (gpumem's wraps a driver event, which it creates itself). */
static struct {
    gpumem_event_t gm_event;
    CUevent cu_event;
    void *pinned;   /* 4 KiB of pinned host memory (gpumem_host_alloc) */
    void *device;   /* 4 KiB of device memory (gpumem_malloc) */
    void *block;    /* 4 KiB from the device's native pool (gpumem_malloc_async) */
} thin;

/* 4 KiB of plain pageable memory, the destination most synchronous copies to the host have. */
static _Alignas(4096) unsigned char thin_pageable[4096];

/* Enqueueing calls grow the stream's queue: time them in batches of this
 * many, and drain the queue (untimed) between batches. */
#define THIN_BATCH 64

typedef enum {
    THIN_EVENT_RECORD,
    THIN_EVENT_QUERY,
    THIN_WAIT_EVENT,
    THIN_STREAM_QUERY,
    THIN_SYNC_IDLE,
    THIN_SYNC_BUSY,
    THIN_MEMCPY_H2D,
    THIN_MEMSET,
    THIN_MALLOC_ASYNC,
    THIN_HOST_DEVPTR,
    THIN_MEMCPY_D2H_PINNED,
    THIN_MEMCPY_D2H_PAGEABLE,
    THIN_MEMCPY_H2D_PAGEABLE,
    THIN_POINTER_INFO_DEVICE,
    THIN_POINTER_INFO_BLOCK,
    THIN_TARGETS, /* the rows after it are the driver against itself: where gpumem's cost could come from */
    THIN_REF_FROM_POOL = THIN_TARGETS,
    THIN_REF_CHECK_POOL,
    THIN_REF_CAPTURE_CHECK,
    THIN_REF_OWN_POOL,
    THIN_REF_SYNC_AFTER_COPY,
    THIN_REF_POINTER_ATTRIBUTES,
    THIN_REF_PAGEABLE_ATTRIBUTE,
    THIN_COUNT
} thin_op;

static const struct {
    const char *gm_name, *cu_name;
    int enqueues; /* timed in batches, the queue drained untimed */
} thin_ops[THIN_COUNT] = {
    {"gpumem_event_record", "cuEventRecord", 1},
    {"gpumem_event_query (completed)", "cuEventQuery", 0},
    {"gpumem_stream_wait_event", "cuStreamWaitEvent", 1},
    {"gpumem_stream_query (idle)", "cuStreamQuery", 0},
    {"gpumem_stream_synchronize (idle)", "cuStreamSynchronize", 0},
    {"gpumem_stream_synchronize (busy)", "cuStreamSynchronize", 0},
    {"gpumem_memcpy_async 4 KiB pinned->dev", "cuMemcpyAsync", 1},
    {"gpumem_memset_async 4 KiB", "cuMemsetD8Async", 1},
    {"gpumem_malloc_async+free_async 256 B", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"gpumem_host_get_device_pointer", "cuMemHostGetDevicePointer", 0},
    {"gpumem_memcpy 4 KiB dev->pinned", "cuMemcpyDtoH", 0},
    {"gpumem_memcpy 4 KiB dev->pageable", "cuMemcpyDtoH", 0},
    {"gpumem_memcpy 4 KiB pageable->dev", "cuMemcpyHtoD", 0},
    {"gpumem_pointer_get_info (device)", "cuPointerGetAttribute", 0},
    {"gpumem_pointer_get_info (pool block)", "cuPointerGetAttribute", 0},
    {"driver: from the default pool, named", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"driver: current pool checked first", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"driver: + 2 capture checks", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"gpumem own pool alloc+free 256 B", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"driver: cuMemcpy + cuStreamSynchronize", "cuMemcpyDtoH", 0},
    {"driver: cuPointerGetAttributes, 4", "cuPointerGetAttribute", 0},
    {"driver: cuPointerGetAttribute, pageable", "cuPointerGetAttribute", 0},
};

/* Gpumem's own pool for the last reference row (it asks whether the stream captures at each
 * allocation and free on a stream other than the default one, docs/graphs.md). */
static gpumem_pool_t thin_own_pool;

/* The reference rows' pool: the device's default pool. */
static CUmemoryPool thin_default_pool;

/* One call of `op` on gpumem's side (gm) or the driver's; 0 on failure. */
static int thin_call(thin_op op, int gm)
{
    void *p = NULL;
    CUdeviceptr dp = 0;
    gpumem_status_t st;
    CUresult r;
    switch (op) {
    case THIN_EVENT_RECORD:
        if (gm)
            GM_T(gpumem_event_record(thin.gm_event, g_gstream));
        else
            CU_T(drv.cuEventRecord(thin.cu_event, g_stream));
        return 1;
    case THIN_EVENT_QUERY:
        st = gm ? gpumem_event_query(thin.gm_event) : GPUMEM_SUCCESS;
        r = gm ? CUDA_SUCCESS : drv.cuEventQuery(thin.cu_event);
        if (st != GPUMEM_SUCCESS || r != CUDA_SUCCESS) {
            if (gm)
                report_gm("gpumem_event_query", st);
            else
                report_cu("cuEventQuery", r);
            return 0;
        }
        return 1;
    case THIN_WAIT_EVENT:
        if (gm)
            GM_T(gpumem_stream_wait_event(g_gstream, thin.gm_event));
        else
            CU_T(drv.cuStreamWaitEvent(g_stream, thin.cu_event, 0));
        return 1;
    case THIN_STREAM_QUERY:
        if (gm)
            GM_T(gpumem_stream_query(g_gstream));
        else
            CU_T(drv.cuStreamQuery(g_stream));
        return 1;
    case THIN_SYNC_IDLE:
    case THIN_SYNC_BUSY:
        if (op == THIN_SYNC_BUSY) /* the same small fill before both sides' synchronisation */
            CU_T(drv.cuMemsetD8Async((CUdeviceptr)(uintptr_t)thin.device, 1, 4096, g_stream));
        if (gm)
            GM_T(gpumem_stream_synchronize(g_gstream));
        else
            CU_T(drv.cuStreamSynchronize(g_stream));
        return 1;
    case THIN_MEMCPY_H2D:
        if (gm)
            GM_T(gpumem_memcpy_async(thin.device, thin.pinned, 4096, g_gstream));
        else
            CU_T(drv.cuMemcpyAsync((CUdeviceptr)(uintptr_t)thin.device, (CUdeviceptr)(uintptr_t)thin.pinned, 4096,
                                   g_stream));
        return 1;
    case THIN_MEMSET:
        if (gm)
            GM_T(gpumem_memset_async(thin.device, 3, 4096, g_gstream));
        else
            CU_T(drv.cuMemsetD8Async((CUdeviceptr)(uintptr_t)thin.device, 3, 4096, g_stream));
        return 1;
    case THIN_MALLOC_ASYNC:
        if (gm) {
            GM_T(gpumem_malloc_async(&p, 256, g_gstream));
            GM_T(gpumem_free_async(p, g_gstream));
        } else {
            CU_T(drv.cuMemAllocAsync(&dp, 256, g_stream));
            CU_T(drv.cuMemFreeAsync(dp, g_stream));
        }
        return 1;
    case THIN_HOST_DEVPTR:
        if (gm)
            GM_T(gpumem_host_get_device_pointer(&p, thin.pinned));
        else
            CU_T(drv.cuMemHostGetDevicePointer(&dp, thin.pinned, 0));
        return 1;
    case THIN_MEMCPY_D2H_PINNED:
    case THIN_MEMCPY_D2H_PAGEABLE: {
        void *to = op == THIN_MEMCPY_D2H_PINNED ? thin.pinned : (void *)thin_pageable;
        if (gm)
            GM_T(gpumem_memcpy(to, thin.device, 4096));
        else
            CU_T(drv.cuMemcpyDtoH(to, (CUdeviceptr)(uintptr_t)thin.device, 4096));
        return 1;
    }
    case THIN_MEMCPY_H2D_PAGEABLE:
        if (gm)
            GM_T(gpumem_memcpy(thin.device, thin_pageable, 4096));
        else
            CU_T(drv.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)thin.device, thin_pageable, 4096));
        return 1;
    case THIN_POINTER_INFO_DEVICE:
    case THIN_POINTER_INFO_BLOCK: {
        void *of = op == THIN_POINTER_INFO_DEVICE ? thin.device : thin.block;
        if (gm) {
            gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
            GM_T(gpumem_pointer_get_info(of, &info));
        } else {
            unsigned int type = 0;
            CU_T(drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)of));
        }
        return 1;
    }
    case THIN_REF_SYNC_AFTER_COPY: /* the synchronous copy, then a wait for the default stream */
        if (gm) {
            CU_T(drv.cuMemcpy((CUdeviceptr)(uintptr_t)thin.pinned, (CUdeviceptr)(uintptr_t)thin.device, 4096));
            CU_T(drv.cuStreamSynchronize(NULL));
        } else {
            CU_T(drv.cuMemcpyDtoH(thin.pinned, (CUdeviceptr)(uintptr_t)thin.device, 4096));
        }
        return 1;
    case THIN_REF_POINTER_ATTRIBUTES: /* what gpumem's answer holds, from the driver in one call */
        if (gm) {
            CUpointer_attribute which[4] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                            CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
            unsigned int type = 0;
            int ordinal = 0;
            CUdeviceptr start = 0;
            size_t range = 0;
            void *values[4] = {&type, &ordinal, &start, &range};
            CU_T(drv.cuPointerGetAttributes(4, which, values, (CUdeviceptr)(uintptr_t)thin.device));
        } else {
            unsigned int type = 0;
            CU_T(drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           (CUdeviceptr)(uintptr_t)thin.device));
        }
        return 1;
    case THIN_REF_PAGEABLE_ATTRIBUTE: { /* what asking the driver about pageable memory costs: its error path */
        unsigned int type = 0;
        if (gm) {
            if (drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)thin_pageable) ==
                CUDA_SUCCESS)
                return 0; /* pageable memory the driver knows: the row means nothing */
        } else {
            CU_T(drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)thin.device));
        }
        return 1;
    }
    case THIN_REF_FROM_POOL: /* gpumem names its pool: what naming it costs the driver */
        if (gm)
            CU_T(drv.cuMemAllocFromPoolAsync(&dp, 256, thin_default_pool, g_stream));
        else
            CU_T(drv.cuMemAllocAsync(&dp, 256, g_stream));
        CU_T(drv.cuMemFreeAsync(dp, g_stream));
        return 1;
    case THIN_REF_CAPTURE_CHECK: { /* what the own pool's capture checks cost, against a driver pool pair */
        if (gm) {
            CUstreamCaptureStatus status;
            cuuint64_t id;
            CUgraph graph;
            CU_T(drv.cuStreamGetCaptureInfo(g_stream, &status, &id, &graph, NULL, NULL));
            CU_T(drv.cuStreamGetCaptureInfo(g_stream, &status, &id, &graph, NULL, NULL));
        }
        CU_T(drv.cuMemAllocAsync(&dp, 256, g_stream));
        CU_T(drv.cuMemFreeAsync(dp, g_stream));
        return 1;
    }
    case THIN_REF_OWN_POOL:
        if (gm) {
            GM_T(gpumem_malloc_from_pool_async(&p, 256, thin_own_pool, g_gstream));
            GM_T(gpumem_free_async(p, g_gstream));
        } else {
            CU_T(drv.cuMemAllocAsync(&dp, 256, g_stream));
            CU_T(drv.cuMemFreeAsync(dp, g_stream));
        }
        return 1;
    case THIN_REF_CHECK_POOL: { /* asking which pool is current before the unnamed allocation */
        CUmemoryPool current = NULL;
        if (gm) {
            CU_T(drv.cuDeviceGetMemPool(&current, g_cudev));
            if (current != thin_default_pool) {
                fprintf(stderr, "    the device's current pool is not its default pool\n");
                return 0;
            }
        }
        CU_T(drv.cuMemAllocAsync(&dp, 256, g_stream));
        CU_T(drv.cuMemFreeAsync(dp, g_stream));
        return 1;
    }
    default:
        return 0;
    }
}

struct thin_arg {
    thin_op op;
    int gm;
};

/* n calls; enqueueing calls in batches with the queue drained untimed. */
static double loop_thin(size_t size, long n, void *varg)
{
    (void)size;
    const struct thin_arg *a = varg;
    double total = 0;
    long done = 0;
    while (done < n) {
        long batch = thin_ops[a->op].enqueues ? (n - done < THIN_BATCH ? n - done : THIN_BATCH) : n - done;
        double t0 = now_ns();
        for (long i = 0; i < batch; i++)
            if (!thin_call(a->op, a->gm))
                return -1;
        total += now_ns() - t0;
        done += batch;
        if (thin_ops[a->op].enqueues)
            CU_T(drv.cuStreamSynchronize(g_stream));
    }
    return total;
}

int part_h(void)
{
    part_header("(h) thin paths: gpumem's call vs the driver call it stands for, same stream, ns per call (median);\n"
                "    enqueueing calls timed in batches of 64 with the queue drained untimed between batches;\n"
                "    target: every gpumem/drv <= 1.05");
    int ok = 0, met = 1;
    gpumem_pool_t pool = NULL;
    uint64_t keep = UINT64_MAX;
    thin.gm_event = NULL;
    thin.cu_event = NULL;
    thin.pinned = thin.device = thin.block = NULL;
    if (!drv.cuEventCreate || !drv.cuEventRecord || !drv.cuEventQuery || !drv.cuStreamWaitEvent || !drv.cuStreamQuery ||
        !drv.cuMemcpyAsync || !drv.cuMemsetD8Async || !drv.cuMemHostGetDevicePointer || !drv.cuEventDestroy) {
        printf("    skipped: the driver lacks an event, stream or async-copy entry point\n");
        return 1;
    }
    GM(gpumem_event_create(&thin.gm_event));
    CU(drv.cuEventCreate(&thin.cu_event, 0));
    GM(gpumem_host_alloc(&thin.pinned, 4096, 0));
    GM(gpumem_malloc(&thin.device, 4096));
    memset(thin_pageable, 0, sizeof thin_pageable); /* faulted in before the first timed copy */
    if (have_driver_pools()) {
        GM(gpumem_device_get_default_pool(&pool, g_device));
        GM(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
        if (!driver_pool_keep(UINT64_MAX))
            goto out;
        CU(drv.cuDeviceGetDefaultMemPool(&thin_default_pool, g_cudev));
        GM(gpumem_malloc_async(&thin.block, 4096, g_gstream));
    }
    /* Recorded and complete: the queries below find finished events. */
    GM(gpumem_event_record(thin.gm_event, g_gstream));
    CU(drv.cuEventRecord(thin.cu_event, g_stream));
    CU(drv.cuStreamSynchronize(g_stream));
    printf("    %-40s  %10s  %10s  %10s  %s\n", "call (driver call)", "gpumem", "driver", "gpumem/drv", "");
    for (int op = 0; op < THIN_COUNT; op++) {
        if ((op == THIN_MALLOC_ASYNC || op == THIN_POINTER_INFO_BLOCK || op >= THIN_TARGETS) && !pool)
            continue;
        if ((op == THIN_MEMCPY_D2H_PINNED || op == THIN_MEMCPY_D2H_PAGEABLE || op == THIN_MEMCPY_H2D_PAGEABLE ||
             op == THIN_REF_SYNC_AFTER_COPY) &&
            !drv.cuMemcpyDtoH)
            continue;
        if ((op == THIN_POINTER_INFO_DEVICE || op == THIN_POINTER_INFO_BLOCK) && !drv.cuPointerGetAttribute)
            continue;
        if (op == THIN_REF_POINTER_ATTRIBUTES && (!drv.cuPointerGetAttributes || !drv.cuPointerGetAttribute))
            continue;
        if (op == THIN_REF_PAGEABLE_ATTRIBUTE && !drv.cuPointerGetAttribute)
            continue;
        if (op >= THIN_TARGETS && (!drv.cuMemAllocFromPoolAsync || !drv.cuDeviceGetMemPool))
            continue;
        if (op == THIN_REF_CAPTURE_CHECK && !drv.cuStreamGetCaptureInfo)
            continue;
        if (op == THIN_REF_OWN_POOL) {
            /* Made last: once gpumem's own pool exists, the event and stream calls above keep
             * its stream order (pool::ordering_in_use), which the target rows must not pay. */
            gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
            props.device = g_device;
            props.implementation = GPUMEM_POOL_BUILTIN;
            if (gpumem_pool_create(&thin_own_pool, &props) != GPUMEM_SUCCESS)
                continue;
        }
        if (op == THIN_TARGETS)
            printf("    reference rows, not targets: the driver against itself (the left column's form / the right's)\n");
        struct thin_arg ga = {(thin_op)op, 1}, ca = {(thin_op)op, 0};
        double gm, cu;
        if (op == THIN_EVENT_QUERY) { /* the loops of the other calls recorded new work */
            CU(drv.cuStreamSynchronize(g_stream));
        }
        if (!measure_two(loop_thin, &ga, loop_thin, &ca, 0, 1 << 22, &gm, &cu))
            goto out;
        int op_met = gm / cu <= 1.05;
        if (op < THIN_TARGETS)
            met &= op_met;
        printf("    %-40s  %10.1f  %10.1f  %9.3fx  %s (%s)\n", thin_ops[op].gm_name, gm, cu, gm / cu,
               op >= THIN_TARGETS ? "info" : op_met ? "met" : "NOT met", thin_ops[op].cu_name);
        fflush(stdout);
    }
    printf("    target every gpumem/drv <= 1.05: %s\n", met ? "met" : "NOT met");
    ok = 1;
out:
    drv.cuStreamSynchronize(g_stream);
    if (thin.gm_event)
        gpumem_event_destroy(thin.gm_event);
    if (thin.cu_event)
        drv.cuEventDestroy(thin.cu_event);
    if (thin.pinned)
        gpumem_host_free(thin.pinned);
    if (thin.device)
        gpumem_free(thin.device);
    if (thin.block)
        gpumem_free_async(thin.block, g_gstream);
    if (thin_own_pool) {
        gpumem_pool_destroy(thin_own_pool);
        thin_own_pool = NULL;
    }
    if (pool) {
        uint64_t zero = 0;
        gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero);
        gpumem_pool_trim_to(pool, 0);
        driver_pool_keep(0);
    }
    return ok;
}
