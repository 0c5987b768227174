/*
 * gpumem-bench-gpu, streams, events, rows and boxes (0.5):
 *   (n) a timing-free event's record + query, gpumem_memcpy_2d_async (small: the CPU cost of
 *       enqueueing; large: until the copy is done) and gpumem_memset_d32_async, each against
 *       the driver call it stands for (cuEventRecord + cuEventQuery of a CU_EVENT_DISABLE_TIMING
 *       event, cuMemcpy2DAsync with unified addresses, cuMemsetD32Async), on the same stream and
 *       buffers; targets: the event pair <= 1.03x, the copies and the fill <= 1.05x.  A row of
 *       gpumem_memset_2d_async vs cuMemsetD2D8Async and one of a 3-D copy are for information.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench_gpu.h"

#define ROWS_BATCH 64 /* enqueueing calls timed in batches, the queue drained untimed between them */

/* Small 2-D copies: 64 rows of 256 bytes, pitched device memory to pitched device memory.
 * Large: 4096 rows of 16 KiB (64 MiB), the same.  The fill: 1,024 32-bit elements. */
#define SMALL_W 256
#define SMALL_H 64
#define LARGE_W (16 * 1024)
#define LARGE_H 4096
#define FILL_N 1024
#define FILL_VALUE 0x12345678u /* bytes not alike: gpumem takes the 32-bit fill, not a byte fill */

static struct {
    gpumem_event_t gm_event;
    CUevent cu_event;
    void *a, *b; /* pitched: LARGE_W x LARGE_H each (gpumem_malloc_pitch) */
    size_t pitch_a, pitch_b;
} rows;

typedef enum { ROWS_EVENT, ROWS_COPY_SMALL, ROWS_COPY_LARGE, ROWS_FILL_D32, ROWS_FILL_2D, ROWS_COPY_3D, ROWS_COUNT } rows_op;

static const struct {
    const char *gm_name, *cu_name;
    int enqueues;    /* timed in batches with the queue drained untimed */
    int waits;       /* each call waits for the stream: the time until done */
    double target;   /* 0: information */
} rows_ops[ROWS_COUNT] = {
    {"event_record+query (DISABLE_TIMING)", "cuEventRecord+cuEventQuery", 1, 0, 1.03},
    {"memcpy_2d_async 64 x 256 B d->d", "cuMemcpy2DAsync", 1, 0, 1.05},
    {"memcpy_2d_async 4096 x 16 KiB, done", "cuMemcpy2DAsync+sync", 0, 1, 1.05},
    {"memset_d32_async 1024 x 4 B", "cuMemsetD32Async", 1, 0, 1.05},
    {"memset_2d_async 64 x 256 B", "cuMemsetD2D8Async", 1, 0, 0},
    {"memcpy_3d_async 4 x 16 x 256 B d->d", "cuMemcpy3DAsync", 1, 0, 0},
};

static CUdeviceptr D(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

static CUresult cu_copy_2d(size_t width, size_t height)
{
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    m.srcDevice = D(rows.a);
    m.srcPitch = rows.pitch_a;
    m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    m.dstDevice = D(rows.b);
    m.dstPitch = rows.pitch_b;
    m.WidthInBytes = width;
    m.Height = height;
    return drv.cuMemcpy2DAsync(&m, g_stream);
}

/* One call of `op` on gpumem's side (gm) or the driver's; 0 on failure. */
static int rows_call(rows_op op, int gm)
{
    switch (op) {
    case ROWS_EVENT: {
        if (gm) {
            GM_T(gpumem_event_record(rows.gm_event, g_gstream));
            gpumem_status_t st = gpumem_event_query(rows.gm_event);
            if (st != GPUMEM_SUCCESS && st != GPUMEM_ERROR_BUSY) {
                report_gm("gpumem_event_query", st);
                return 0;
            }
        } else {
            CU_T(drv.cuEventRecord(rows.cu_event, g_stream));
            CUresult r = drv.cuEventQuery(rows.cu_event);
            if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
                report_cu("cuEventQuery", r);
                return 0;
            }
        }
        return 1;
    }
    case ROWS_COPY_SMALL:
    case ROWS_COPY_LARGE: {
        const size_t w = op == ROWS_COPY_SMALL ? SMALL_W : LARGE_W, h = op == ROWS_COPY_SMALL ? SMALL_H : LARGE_H;
        if (gm)
            GM_T(gpumem_memcpy_2d_async(rows.b, rows.pitch_b, rows.a, rows.pitch_a, w, h, g_gstream));
        else
            CU_T(cu_copy_2d(w, h));
        if (op == ROWS_COPY_LARGE)
            CU_T(drv.cuStreamSynchronize(g_stream));
        return 1;
    }
    case ROWS_FILL_D32:
        if (gm)
            GM_T(gpumem_memset_d32_async(rows.a, FILL_VALUE, FILL_N, g_gstream));
        else
            CU_T(drv.cuMemsetD32Async(D(rows.a), FILL_VALUE, FILL_N, g_stream));
        return 1;
    case ROWS_FILL_2D:
        if (gm)
            GM_T(gpumem_memset_2d_async(rows.a, rows.pitch_a, 7, SMALL_W, SMALL_H, g_gstream));
        else
            CU_T(drv.cuMemsetD2D8Async(D(rows.a), rows.pitch_a, 7, SMALL_W, SMALL_H, g_stream));
        return 1;
    case ROWS_COPY_3D:
        if (gm) {
            gpumem_memcpy3d_t c = GPUMEM_MEMCPY3D_INIT;
            c.src = rows.a;
            c.src_pitch = rows.pitch_a;
            c.src_height = 16;
            c.dst = rows.b;
            c.dst_pitch = rows.pitch_b;
            c.dst_height = 16;
            c.width = SMALL_W;
            c.height = 16;
            c.depth = 4;
            GM_T(gpumem_memcpy_3d_async(&c, g_gstream));
        } else {
            CUDA_MEMCPY3D m;
            memset(&m, 0, sizeof m);
            m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
            m.srcDevice = D(rows.a);
            m.srcPitch = rows.pitch_a;
            m.srcHeight = 16;
            m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
            m.dstDevice = D(rows.b);
            m.dstPitch = rows.pitch_b;
            m.dstHeight = 16;
            m.WidthInBytes = SMALL_W;
            m.Height = 16;
            m.Depth = 4;
            CU_T(drv.cuMemcpy3DAsync(&m, g_stream));
        }
        return 1;
    default:
        return 0;
    }
}

struct rows_arg {
    rows_op op;
    int gm;
};

static double loop_rows(size_t size, long n, void *varg)
{
    (void)size;
    const struct rows_arg *a = varg;
    double total = 0;
    long done = 0;
    while (done < n) {
        long batch = rows_ops[a->op].enqueues ? (n - done < ROWS_BATCH ? n - done : ROWS_BATCH) : n - done;
        double t0 = now_ns();
        for (long i = 0; i < batch; i++)
            if (!rows_call(a->op, a->gm))
                return -1;
        total += now_ns() - t0;
        done += batch;
        if (rows_ops[a->op].enqueues)
            CU_T(drv.cuStreamSynchronize(g_stream));
    }
    return total;
}

int part_n(void)
{
    part_header("(n) streams, events, rows and boxes (0.5): gpumem's call vs the driver call it stands for,\n"
                "    same stream and buffers, ns per call (median); enqueueing calls timed in batches of 64 with\n"
                "    the queue drained untimed; targets: the event pair <= 1.03, copies and fills <= 1.05");
    int ok = 0, met = 1;
    memset(&rows, 0, sizeof rows);
    if (!drv.cuMemcpy2DAsync || !drv.cuMemcpy3DAsync || !drv.cuMemsetD32Async || !drv.cuMemsetD2D8Async ||
        !drv.cuEventCreate || !drv.cuEventRecord || !drv.cuEventQuery) {
        printf("    skipped: the driver lacks cuMemcpy2DAsync, cuMemcpy3DAsync, cuMemsetD32Async, cuMemsetD2D8Async "
               "or an event call\n");
        return 1;
    }
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    GM(gpumem_device_get_info(g_device, &info));
    printf("    gpumem rows and boxes: %s; stream priorities %s; host functions %s; IPC events %s\n",
           info.rows == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : "EMULATED",
           info.stream_priorities == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : "not native",
           info.host_funcs == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : "not native",
           info.ipc_events == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : "not native");
    GM(gpumem_event_create_with_flags(&rows.gm_event, GPUMEM_EVENT_DISABLE_TIMING));
    CU(drv.cuEventCreate(&rows.cu_event, CU_EVENT_DISABLE_TIMING));
    GM(gpumem_malloc_pitch(&rows.a, &rows.pitch_a, LARGE_W, LARGE_H));
    GM(gpumem_malloc_pitch(&rows.b, &rows.pitch_b, LARGE_W, LARGE_H));
    GM(gpumem_memset(rows.a, 1, rows.pitch_a * LARGE_H));
    printf("    pitches: %zu and %zu bytes (rows of %d bytes)\n", rows.pitch_a, rows.pitch_b, LARGE_W);
    printf("    %-40s  %10s  %10s  %10s  %s\n", "call (driver call)", "gpumem", "driver", "gpumem/drv", "");
    for (int op = 0; op < ROWS_COUNT; op++) {
        struct rows_arg ga = {(rows_op)op, 1}, ca = {(rows_op)op, 0};
        double gm, cu;
        CU(drv.cuStreamSynchronize(g_stream));
        if (!measure_two(loop_rows, &ga, loop_rows, &ca, 0, rows_ops[op].waits ? 1 << 12 : 1 << 22, &gm, &cu))
            goto out;
        const double target = rows_ops[op].target;
        const int op_met = target == 0 || gm / cu <= target;
        met &= op_met;
        printf("    %-40s  %10.1f  %10.1f  %9.3fx  %s (%s)\n", rows_ops[op].gm_name, gm, cu, gm / cu,
               target == 0 ? "info" : op_met ? "met" : "NOT met", rows_ops[op].cu_name);
        fflush(stdout);
    }
    /* The copies above really moved the bytes: row 4095's last byte, through gpumem. */
    unsigned char last = 0;
    GM(gpumem_memcpy(&last, (char *)rows.b + rows.pitch_b * (LARGE_H - 1) + LARGE_W - 1, 1));
    if (last != 1) {
        printf("    the large 2-D copy did not land (last byte %u, not 1)\n", last);
        goto out;
    }
    printf("    targets (event <= 1.03, copies and fill <= 1.05): %s\n", met ? "met" : "NOT met");
    ok = 1;
out:
    drv.cuStreamSynchronize(g_stream);
    if (rows.gm_event)
        gpumem_event_destroy(rows.gm_event);
    if (rows.cu_event)
        drv.cuEventDestroy(rows.cu_event);
    if (rows.a)
        gpumem_free(rows.a);
    if (rows.b)
        gpumem_free(rows.b);
    return ok;
}
