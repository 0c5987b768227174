/*
 * gpumem-bench-gpu: what gpumem costs on a CUDA GPU, against the driver call
 * it stands for, both measured in the same run.
 *
 *   (a) gpumem_malloc + gpumem_free  vs  cuMemAlloc + cuMemFree (1 MiB, 64 MiB)
 *   (b) gpumem_malloc_async + gpumem_free_async on the default (native) pool
 *       vs  cuMemAllocAsync + cuMemFreeAsync on the driver's default pool
 *       (release threshold UINT64_MAX for both: cached sizes)
 *   (c) a GPUMEM_POOL_BUILTIN pool (gpumem's own allocator) vs the same driver
 *       calls; target: gpumem <= 0.10x the driver's time (issue 10; 0.25x in 0.1)
 *   (d) pinned H2D/D2H bandwidth, 256 MiB: gpumem_memcpy vs cuMemcpy (unified
 *       addressing on both sides), and managed prefetch bandwidth, 512 MiB:
 *       gpumem_prefetch_async vs cuMemPrefetchAsync; target: within 5%
 *   (e) growing a buffer from 256 MiB to 8 GiB by doubling: gpumem_buffer_resize
 *       vs raw VMM (cuMemCreate + cuMemMap + cuMemSetAccess of the new part)
 *       vs allocate + copy + free; time and peak device memory of each step
 *   (f) pinned host allocation of 64 MiB, repeated: gpumem_host_alloc +
 *       gpumem_host_free vs cuMemHostAlloc + cuMemFreeHost; target: later
 *       allocations cost <= 1% of the driver's
 *   (g) two GPUs: device 0 -> device 1 bandwidth, 256 MiB: gpumem_memcpy
 *       (unified addressing) vs cuMemcpyPeer, without and with peer access
 *       enabled (gpumem_device_enable_peer_access both ways); target: within
 *       5%.  Skipped with fewer than two devices.  Never calls cuMulticastCreate.
 *   (h) thin paths: event record/query, stream wait event/query/synchronize
 *       (idle and busy), memcpy_async and memset_async of 4 KiB (the CPU
 *       cost of enqueueing), malloc_async+free_async on the native pool,
 *       host_get_device_pointer, each against its driver call; target 1.05x
 *   (i) threads on their own streams: alloc+free pairs per second on gpumem's
 *       own pool, gpumem on the native pool and the driver's pool at 1, 2, 4,
 *       8 and 16 threads; target: own pool >= 12x one thread's rate at 16
 *   (j) 1,000 small copies (64 B - 4 KiB, pinned host to device) on one stream:
 *       one gpumem_memcpy_batch_async vs 1,000 gpumem_memcpy_async vs 1,000
 *       cuMemcpyAsync (and one cuMemcpyBatchAsync where the driver has the
 *       CUDA 13.0 form); CPU time to enqueue, and time until the stream is done
 *   (k) staging buffers from a pool of pinned host memory (the process's
 *       default, gpumem_get_default_pool_for, threshold UINT64_MAX):
 *       malloc_from_pool_async + free_async vs gpumem_host_alloc +
 *       gpumem_host_free with the pinned cache off (GPUMEM_PINNED_CACHE=0:
 *       gpumem is finalised and started again for this part) vs
 *       cuMemHostAlloc + cuMemFreeHost, at 64 KiB, 1 MiB and 16 MiB; target:
 *       the pool <= 1% of gpumem_host_alloc.  Then H2D bandwidth, 256 MiB, from
 *       a block of that pool vs from cuMemHostAlloc memory (both cuMemcpy into
 *       one device buffer); target: within 5%.
 *   (l) what one page of VMM costs the driver (the granularity, 2 MiB on an
 *       H100): cuMemCreate, cuMemMap, cuMemRelease, cuMemSetAccess and
 *       cuMemUnmap of single pages, and cuMemUnmap while the device is busy
 *       with other work (does it wait?): the price of gpumem's own pool
 *       backing and giving back the pages under its holes.  No target.
 *
 * The driver is loaded here too (dlopen of GPUMEM_CUDA_LIBRARY, else
 * libcuda.so.1; entry points through cuGetProcAddress), never linked.  gpumem
 * runs on the cuda backend and shares device 0's primary context, which this
 * program retains.  Every figure is the median of repeated runs, the two
 * sides interleaved within each run.  Each part stands alone: one that fails
 * says why, and the others still run (exit status 1 then).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <gpumem/gpumem.h>

#include "bench_util.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

static int g_runs = 11;           /* repetitions behind each median */
static double g_target_ns = 10e6; /* each timed run of a cheap call lasts at least this */
static int g_grow_passes = 3;     /* (e): timed passes per method */
static size_t g_grow_max = 8 * GiB;
static int g_quick;
static int g_any_backend; /* --any-backend: a dry run against a fake driver */

/* ------------------------------------------------------------------------ */
/* The driver, loaded at run time                                           */
/* ------------------------------------------------------------------------ */

/* Every entry point at the ABI version of the typedef named (CUDA 12.0's
 * variants, as gpumem's backend asks for them).  Required ones: the program
 * cannot measure anything without them.  Optional ones: the parts that need
 * them say so and are skipped. */
#define DRIVER_REQUIRED(X)                                                                                             \
    X(cuGetErrorName, PFN_cuGetErrorName_v6000, 12000)                                                                 \
    X(cuDeviceGet, PFN_cuDeviceGet_v2000, 12000)                                                                       \
    X(cuDeviceGetName, PFN_cuDeviceGetName_v2000, 12000)                                                               \
    X(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000, 12000)                                                     \
    X(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000, 12000)                                             \
    X(cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000, 12000)                                          \
    X(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000, 12000)                                                               \
    X(cuCtxSynchronize, PFN_cuCtxSynchronize_v2000, 12000)                                                             \
    X(cuMemGetInfo, PFN_cuMemGetInfo_v3020, 12000)                                                                     \
    X(cuMemAlloc, PFN_cuMemAlloc_v3020, 12000)                                                                         \
    X(cuMemFree, PFN_cuMemFree_v3020, 12000)                                                                           \
    X(cuMemcpy, PFN_cuMemcpy_v4000, 12000)                                                                             \
    X(cuMemHostAlloc, PFN_cuMemHostAlloc_v2020, 12000)                                                                 \
    X(cuMemFreeHost, PFN_cuMemFreeHost_v2000, 12000)                                                                   \
    X(cuStreamCreate, PFN_cuStreamCreate_v2000, 12000)                                                                 \
    X(cuStreamDestroy, PFN_cuStreamDestroy_v4000, 12000)                                                               \
    X(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000, 12000)

#define DRIVER_OPTIONAL(X)                                                                                             \
    X(cuDeviceGetDefaultMemPool, PFN_cuDeviceGetDefaultMemPool_v11020, 12000)                                          \
    X(cuMemPoolSetAttribute, PFN_cuMemPoolSetAttribute_v11020, 12000)                                                  \
    X(cuMemPoolTrimTo, PFN_cuMemPoolTrimTo_v11020, 12000)                                                              \
    X(cuMemAllocAsync, PFN_cuMemAllocAsync_v11020, 12000)                                                              \
    X(cuMemFreeAsync, PFN_cuMemFreeAsync_v11020, 12000)                                                                \
    X(cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020, 12000)                                              \
    X(cuDeviceGetMemPool, PFN_cuDeviceGetMemPool_v11020, 12000)                                                        \
    X(cuStreamGetCaptureInfo, PFN_cuStreamGetCaptureInfo_v11030, 11030)                                                \
    X(cuMemGetAllocationGranularity, PFN_cuMemGetAllocationGranularity_v10020, 12000)                                  \
    X(cuMemCreate, PFN_cuMemCreate_v10020, 12000)                                                                      \
    X(cuMemRelease, PFN_cuMemRelease_v10020, 12000)                                                                    \
    X(cuMemAddressReserve, PFN_cuMemAddressReserve_v10020, 12000)                                                      \
    X(cuMemAddressFree, PFN_cuMemAddressFree_v10020, 12000)                                                            \
    X(cuMemMap, PFN_cuMemMap_v10020, 12000)                                                                            \
    X(cuMemUnmap, PFN_cuMemUnmap_v10020, 12000)                                                                        \
    X(cuMemSetAccess, PFN_cuMemSetAccess_v10020, 12000)                                                              \
    X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000, 12000)                                                            \
    X(cuMemcpyPeer, PFN_cuMemcpyPeer_v4000, 12000)                                                                    \
    X(cuEventCreate, PFN_cuEventCreate_v2000, 12000)                                                                  \
    X(cuEventDestroy, PFN_cuEventDestroy_v4000, 12000)                                                                \
    X(cuEventRecord, PFN_cuEventRecord_v2000, 12000)                                                                  \
    X(cuEventQuery, PFN_cuEventQuery_v2000, 12000)                                                                    \
    X(cuStreamWaitEvent, PFN_cuStreamWaitEvent_v3020, 12000)                                                          \
    X(cuStreamQuery, PFN_cuStreamQuery_v2000, 12000)                                                                  \
    X(cuMemcpyAsync, PFN_cuMemcpyAsync_v4000, 12000)                                                                  \
    X(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020, 12000)                                                              \
    X(cuMemHostGetDevicePointer, PFN_cuMemHostGetDevicePointer_v3020, 12000)

static struct {
#define X(name, type, version) type name;
    DRIVER_REQUIRED(X) DRIVER_OPTIONAL(X)
#undef X
    /* cuMemPrefetchAsync changed in CUDA 12.2 (a CUmemLocation instead of a
     * device ordinal); whichever the driver has is used. */
    PFN_cuMemPrefetchAsync_v12020 cuMemPrefetchAsync_v2;
    PFN_cuMemPrefetchAsync_v8000 cuMemPrefetchAsync_v1;
    /* (h): the driver's own batched copy, CUDA 13.0's form (NULL before 13.0). */
    PFN_cuMemcpyBatchAsync_v13000 cuMemcpyBatchAsync_v2;
} drv;

static void *g_lib;
static const char *g_lib_name;
static int g_driver_version;
static CUdevice g_cudev;
static CUcontext g_ctx;
static CUstream g_stream;          /* the raw side's stream ... */
static gpumem_stream_t g_gstream; /* ... wrapped for gpumem: both sides use one stream */
static int32_t g_device;          /* gpumem's id of the same device */
static gpumem_device_info_t g_info = GPUMEM_DEVICE_INFO_INIT;

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);
static get_proc_v2_fn g_get_proc_v2;
static get_proc_v1_fn g_get_proc_v1;

/* One entry point at `version` with legacy default-stream semantics; NULL when absent. */
static void *driver_symbol(const char *name, int version)
{
    void *fn = NULL;
    CUresult r;
    if (g_get_proc_v2) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        r = g_get_proc_v2(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
        if (found != CU_GET_PROC_ADDRESS_SUCCESS)
            fn = NULL;
    } else {
        r = g_get_proc_v1(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    }
    return r == CUDA_SUCCESS ? fn : NULL;
}

static const char *cu_name(CUresult r)
{
    const char *s = NULL;
    if (drv.cuGetErrorName && drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA error (unnamed)";
}

/* Load the driver and resolve every entry point; 0 and a printed reason on failure. */
static int driver_load(void)
{
    const char *env = getenv("GPUMEM_CUDA_LIBRARY");
    g_lib_name = env && *env ? env : "libcuda.so.1";
    g_lib = dlopen(g_lib_name, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
        printf("error: cannot load the CUDA driver %s: %s\n", g_lib_name, dlerror());
        return 0;
    }
    CUresult (*init)(unsigned int) = (CUresult(*)(unsigned int))dlsym(g_lib, "cuInit");
    CUresult (*version)(int *) = (CUresult(*)(int *))dlsym(g_lib, "cuDriverGetVersion");
    g_get_proc_v2 = (get_proc_v2_fn)dlsym(g_lib, "cuGetProcAddress_v2");
    if (!g_get_proc_v2)
        g_get_proc_v1 = (get_proc_v1_fn)dlsym(g_lib, "cuGetProcAddress");
    if (!init || !version || (!g_get_proc_v2 && !g_get_proc_v1)) {
        printf("error: %s lacks cuInit, cuDriverGetVersion or cuGetProcAddress\n", g_lib_name);
        return 0;
    }
    CUresult r = init(0);
    if (r != CUDA_SUCCESS) {
        printf("error: cuInit failed: error %d (no usable GPU or driver)\n", (int)r);
        return 0;
    }
    version(&g_driver_version);
#define X(name, type, ver) drv.name = (type)driver_symbol(#name, ver);
    DRIVER_REQUIRED(X) DRIVER_OPTIONAL(X)
#undef X
#define X(name, type, ver)                                                                                             \
    if (!drv.name) {                                                                                                   \
        printf("error: the driver lacks %s\n", #name);                                                                 \
        return 0;                                                                                                      \
    }
    DRIVER_REQUIRED(X)
#undef X
    drv.cuMemPrefetchAsync_v2 = (PFN_cuMemPrefetchAsync_v12020)driver_symbol("cuMemPrefetchAsync", 12020);
    if (!drv.cuMemPrefetchAsync_v2)
        drv.cuMemPrefetchAsync_v1 = (PFN_cuMemPrefetchAsync_v8000)driver_symbol("cuMemPrefetchAsync", 12000);
    if (g_driver_version >= 13000)
        drv.cuMemcpyBatchAsync_v2 = (PFN_cuMemcpyBatchAsync_v13000)driver_symbol("cuMemcpyBatchAsync", 13000);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Checking, timing, medians                                                */
/* ------------------------------------------------------------------------ */

static int g_any_failed;

static void report_gm(const char *what, gpumem_status_t st)
{
    printf("    FAILED: %s: %s: %s\n", what, gpumem_status_string(st), gpumem_last_error_message());
    fflush(stdout);
}

static void report_cu(const char *what, CUresult r)
{
    printf("    FAILED: %s: %s\n", what, cu_name(r));
    fflush(stdout);
}

/* Inside a part: on failure say what failed and leave through `out`. */
#define GM(call)                                                                                                       \
    do {                                                                                                               \
        gpumem_status_t st_ = (call);                                                                                  \
        if (st_ != GPUMEM_SUCCESS) {                                                                                   \
            report_gm(#call, st_);                                                                                     \
            goto out;                                                                                                  \
        }                                                                                                              \
    } while (0)
#define CU(call)                                                                                                       \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            report_cu(#call, r_);                                                                                      \
            goto out;                                                                                                  \
        }                                                                                                              \
    } while (0)
/* Inside a timed loop, which returns a negative time on failure. */
#define GM_T(call)                                                                                                     \
    do {                                                                                                               \
        gpumem_status_t st_ = (call);                                                                                  \
        if (st_ != GPUMEM_SUCCESS) {                                                                                   \
            report_gm(#call, st_);                                                                                     \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)
#define CU_T(call)                                                                                                     \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            report_cu(#call, r_);                                                                                      \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

static const char *size_label(char *buf, size_t len, size_t size)
{
    if (size >= GiB && size % GiB == 0)
        snprintf(buf, len, "%zu GiB", size / GiB);
    else if (size >= MiB)
        snprintf(buf, len, "%zu MiB", size / MiB);
    else if (size >= 1024)
        snprintf(buf, len, "%zu KiB", size >> 10);
    else
        snprintf(buf, len, "%zu B", size);
    return buf;
}

/* A timed loop: nanoseconds for n repetitions, negative on failure. */
typedef double (*loop_fn)(size_t size, long n, void *arg);

/* Enough repetitions that one run lasts g_target_ns (at most `cap`). */
static long calibrate(loop_fn fn, size_t size, void *arg, long cap)
{
    long n = 1;
    for (;;) {
        double t = fn(size, n, arg);
        if (t < 0)
            return -1;
        if (t >= g_target_ns || n >= cap)
            return n;
        n *= 2;
    }
}

/* Median ns per repetition of two loops, calibrated apart and interleaved
 * run by run so that drift touches both alike.  0 on failure. */
static int measure_two(loop_fn a, void *arg_a, loop_fn b, void *arg_b, size_t size, long cap, double *med_a,
                       double *med_b)
{
    /* Warm both up first: a cold first pass (a pool growing, pages mapped)
       would otherwise make calibration pick a tiny repetition count, and the
       stream synchronisation every run ends with would then dominate. */
    long warm = cap < 256 ? cap : 256;
    if (a(size, warm, arg_a) < 0 || b(size, warm, arg_b) < 0)
        return 0;
    long na = calibrate(a, size, arg_a, cap), nb = na < 0 ? -1 : calibrate(b, size, arg_b, cap);
    if (na < 0 || nb < 0)
        return 0;
    double *sa = malloc(sizeof(double) * (size_t)g_runs), *sb = malloc(sizeof(double) * (size_t)g_runs);
    int ok = sa && sb;
    for (int r = 0; ok && r < g_runs; r++) {
        double ta = a(size, na, arg_a), tb = ta < 0 ? -1 : b(size, nb, arg_b);
        if (ta < 0 || tb < 0)
            ok = 0;
        else {
            sa[r] = ta / (double)na;
            sb[r] = tb / (double)nb;
        }
    }
    if (ok) {
        *med_a = median(sa, g_runs);
        *med_b = median(sb, g_runs);
    }
    free(sa);
    free(sb);
    return ok;
}

static void part_header(const char *title)
{
    printf("\n%s\n", title);
    fflush(stdout);
}

/* Driver and gpumem side by side: the same device context on this thread. */
static int make_current(void)
{
    CUresult r = drv.cuCtxSetCurrent(g_ctx);
    if (r != CUDA_SUCCESS) {
        report_cu("cuCtxSetCurrent", r);
        return 0;
    }
    return 1;
}

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

static int part_a(void)
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

static int have_driver_pools(void)
{
    if (drv.cuDeviceGetDefaultMemPool && drv.cuMemPoolSetAttribute && drv.cuMemAllocAsync && drv.cuMemFreeAsync)
        return 1;
    printf("    skipped: the driver has no stream-ordered allocator (cuMemAllocAsync)\n");
    return 0;
}

/* The driver's default pool keeps what is freed (or, with keep 0, releases it). */
static int driver_pool_keep(uint64_t keep)
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

static int part_b(void)
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

static int part_c(void)
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
    ok = async_table(pool, "gpumem <= 0.10x the driver at every size (issue 10)", 0.10);
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

/* ------------------------------------------------------------------------ */
/* (d) bandwidth                                                            */
/* ------------------------------------------------------------------------ */

static void bandwidth_row(const char *what, size_t bytes, double *gm_ns, double *cu_ns, double target)
{
    double gm = median(gm_ns, g_runs), cu = median(cu_ns, g_runs);
    double gm_gbs = (double)bytes / gm, cu_gbs = (double)bytes / cu; /* bytes per ns = GB/s */
    printf("    %-22s  %10.2f  %10.2f  %9.3fx  %s\n", what, gm_gbs, cu_gbs, gm_gbs / cu_gbs,
           gm_gbs / cu_gbs >= target ? "met" : "NOT met");
    fflush(stdout);
}

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

static int part_d(void)
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

static int part_g(void)
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

/* ------------------------------------------------------------------------ */
/* (e) growing a buffer                                                     */
/* ------------------------------------------------------------------------ */

/* A thread that samples free device memory while a step runs, to catch the
 * peak inside it (alloc-copy-free holds old and new at once). */
static struct {
    pthread_t thread;
    atomic_int stop;
    atomic_ulong samples;
    atomic_size_t min_free;
    int running;
} g_sampler;

static void *sampler_main(void *arg)
{
    (void)arg;
    if (drv.cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS)
        return NULL;
    while (!atomic_load(&g_sampler.stop)) {
        size_t f, t;
        if (drv.cuMemGetInfo(&f, &t) == CUDA_SUCCESS) {
            size_t cur = atomic_load(&g_sampler.min_free);
            while (f < cur && !atomic_compare_exchange_weak(&g_sampler.min_free, &cur, f))
                ;
        }
        atomic_fetch_add(&g_sampler.samples, 1);
    }
    return NULL;
}

/* Wait until the sampler has taken two more samples (one begun after this call). */
static void sampler_settle(void)
{
    if (!g_sampler.running)
        return;
    unsigned long s0 = atomic_load(&g_sampler.samples);
    double t0 = now_ns();
    while (atomic_load(&g_sampler.samples) < s0 + 2 && now_ns() - t0 < 1e9)
        ;
}

static void sampler_reset(void)
{
    sampler_settle();
    atomic_store(&g_sampler.min_free, SIZE_MAX);
    sampler_settle();
}

static int sampler_start(void)
{
    atomic_store(&g_sampler.stop, 0);
    atomic_store(&g_sampler.samples, 0);
    atomic_store(&g_sampler.min_free, SIZE_MAX);
    g_sampler.running = pthread_create(&g_sampler.thread, NULL, sampler_main, NULL) == 0;
    return g_sampler.running;
}

static void sampler_stop(void)
{
    if (!g_sampler.running)
        return;
    atomic_store(&g_sampler.stop, 1);
    pthread_join(g_sampler.thread, NULL);
    g_sampler.running = 0;
}

enum { GROW_GPUMEM, GROW_VMM, GROW_COPY, GROW_METHODS };
static const char *grow_names[GROW_METHODS] = {"gpumem_buffer_resize", "raw VMM", "alloc+copy+free"};
#define MAX_STEPS 16

struct grow_result {
    double ns[MAX_STEPS];
    size_t used_after[MAX_STEPS]; /* device bytes in use after the step, over the baseline */
    size_t peak[MAX_STEPS];       /* highest seen during the step (sampled pass only) */
};

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    drv.cuMemGetInfo(&f, &t);
    return f;
}

/* Before and after every step: bytes used over `base_free`, and the sampled peak. */
static void step_begin(void)
{
    sampler_reset();
}

static void step_end(struct grow_result *res, int step, size_t base_free, double ns)
{
    sampler_settle();
    size_t f = free_now();
    res->ns[step] = ns;
    res->used_after[step] = base_free > f ? base_free - f : 0;
    size_t low = atomic_load(&g_sampler.min_free);
    if (!g_sampler.running || low == SIZE_MAX || low > f)
        low = f;
    res->peak[step] = base_free > low ? base_free - low : 0;
}

static int grow_gpumem(size_t start, int steps, struct grow_result *res)
{
    int ok = 0;
    gpumem_buffer_t b = NULL;
    size_t base = free_now();
    GM(gpumem_buffer_create(&b, start, start << steps, g_device));
    for (int i = 0; i < steps; i++) {
        step_begin();
        double t0 = now_ns();
        GM(gpumem_buffer_resize(b, start << (i + 1)));
        CU(drv.cuCtxSynchronize());
        step_end(res, i, base, now_ns() - t0);
    }
    ok = 1;
out:
    if (b) {
        gpumem_status_t st = gpumem_buffer_destroy(b);
        if (st != GPUMEM_SUCCESS) {
            report_gm("gpumem_buffer_destroy", st);
            ok = 0;
        }
    }
    return ok;
}

/* Device memory of this GPU, and read-write access to it from the GPU. */
static void vmm_device_props(CUmemAllocationProp *prop, CUmemAccessDesc *access)
{
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = (int)g_cudev;
    memset(access, 0, sizeof *access);
    access->location = prop->location;
    access->flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

static int grow_vmm(size_t start, int steps, struct grow_result *res)
{
    int ok = 0, nchunks = 0;
    CUmemGenericAllocationHandle handles[MAX_STEPS + 1];
    size_t offsets[MAX_STEPS + 1], sizes[MAX_STEPS + 1];
    int mapped[MAX_STEPS + 1] = {0};
    CUdeviceptr va = 0;
    size_t max = start << steps, gran = 0;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    vmm_device_props(&prop, &access);
    size_t base = free_now();

    CU(drv.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (gran == 0 || start % gran) {
        printf("    FAILED: raw VMM: granularity %zu does not divide %zu\n", gran, start);
        goto out;
    }
    CU(drv.cuMemAddressReserve(&va, max, gran, 0, 0));
    for (int i = -1; i < steps; i++) {
        /* Chunk 0 is the starting 256 MiB (untimed); each step adds the new part. */
        size_t off = i < 0 ? 0 : start << i, size = i < 0 ? start : start << i;
        if (i >= 0)
            step_begin();
        double t0 = now_ns();
        CU(drv.cuMemCreate(&handles[nchunks], size, &prop, 0));
        offsets[nchunks] = off;
        sizes[nchunks] = size;
        nchunks++;
        CU(drv.cuMemMap(va + off, size, 0, handles[nchunks - 1], 0));
        mapped[nchunks - 1] = 1;
        CU(drv.cuMemSetAccess(va + off, size, &access, 1));
        CU(drv.cuCtxSynchronize());
        if (i >= 0)
            step_end(res, i, base, now_ns() - t0);
    }
    ok = 1;
out:
    for (int c = nchunks - 1; c >= 0; c--) {
        if (mapped[c])
            drv.cuMemUnmap(va + offsets[c], sizes[c]);
        drv.cuMemRelease(handles[c]);
    }
    if (va)
        drv.cuMemAddressFree(va, max);
    return ok;
}

static int grow_copy(size_t start, int steps, struct grow_result *res)
{
    int ok = 0;
    CUdeviceptr cur = 0, next = 0;
    size_t base = free_now();
    CU(drv.cuMemAlloc(&cur, start));
    for (int i = 0; i < steps; i++) {
        size_t old = start << i, size = start << (i + 1);
        step_begin();
        double t0 = now_ns();
        CU(drv.cuMemAlloc(&next, size));
        CU(drv.cuMemcpy(next, cur, old));
        CU(drv.cuCtxSynchronize());
        CU(drv.cuMemFree(cur));
        cur = next;
        next = 0;
        step_end(res, i, base, now_ns() - t0);
    }
    ok = 1;
out:
    if (next)
        drv.cuMemFree(next);
    if (cur)
        drv.cuMemFree(cur);
    return ok;
}

static int part_e(void)
{
    const size_t start = 256 * MiB;
    size_t max = g_grow_max;
    size_t f = 0, t = 0;
    int ok = 0, steps = 0, have_vmm = drv.cuMemCreate && drv.cuMemMap && drv.cuMemSetAccess &&
                                      drv.cuMemAddressReserve && drv.cuMemGetAllocationGranularity;
    struct grow_result *runs = NULL, *peak = NULL;
    double *v = NULL;
    if (drv.cuMemGetInfo(&f, &t) != CUDA_SUCCESS)
        f = 0;
    /* alloc+copy+free needs 1.5x the final size at once; stay within 80% of what is free. */
    while (max > start && (double)max * 1.5 > (double)f * 0.8)
        max /= 2;
    for (size_t s = start; s < max; s *= 2)
        steps++;
    char lmax[32];
    printf("\n(e) growing a buffer from 256 MiB to %s by doubling: ms per step (median of %d pass(es)), and the\n"
           "    device memory the method holds after the step and at its peak inside it (MiB over what was in use\n"
           "    before the method began; cuMemGetInfo, the peak sampled by a second thread during one more pass).\n"
           "    gpumem's virtual memory here: %s\n",
           size_label(lmax, sizeof lmax, max), g_grow_passes,
           g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE     ? "NATIVE"
           : g_info.virtual_memory == GPUMEM_SUPPORT_EMULATED ? "EMULATED (allocate-copy-free)"
                                                              : "NONE");
    fflush(stdout);
    if (steps == 0) {
        printf("    FAILED: too little free device memory (%zu MiB)\n", f / MiB);
        return 0;
    }
    runs = calloc((size_t)GROW_METHODS * (size_t)g_grow_passes, sizeof *runs);
    peak = calloc(GROW_METHODS, sizeof *peak);
    v = calloc((size_t)g_grow_passes, sizeof *v);
    if (!runs || !peak || !v) {
        printf("    FAILED: out of host memory\n");
        goto out;
    }
    int done[GROW_METHODS] = {0, 0, 0};
    /* Timed passes, methods interleaved; then one pass with the sampler. */
    for (int pass = 0; pass <= g_grow_passes; pass++) {
        int sampled = pass == g_grow_passes;
        if (sampled && !sampler_start())
            printf("    note: no sampler thread: peaks are the larger of before and after\n");
        for (int m = 0; m < GROW_METHODS; m++) {
            if (pass > 0 && !done[m])
                continue; /* it failed before: said so already */
            struct grow_result *res = sampled ? &peak[m] : &runs[m * g_grow_passes + pass];
            int r;
            if (m == GROW_GPUMEM)
                r = grow_gpumem(start, steps, res);
            else if (m == GROW_VMM)
                r = have_vmm ? grow_vmm(start, steps, res) : 0;
            else
                r = grow_copy(start, steps, res);
            if (m == GROW_VMM && !have_vmm && pass == 0)
                printf("    raw VMM: skipped: the driver has no VMM entry points\n");
            if (pass == 0)
                done[m] = r;
            else if (!r)
                done[m] = 0;
        }
        if (sampled)
            sampler_stop();
    }

    printf("    %-18s", "step");
    for (int m = 0; m < GROW_METHODS; m++)
        printf("  %-32s", grow_names[m]);
    printf("\n    %-18s", "");
    for (int m = 0; m < GROW_METHODS; m++)
        printf("  %9s %10s %10s ", "ms", "used MiB", "peak MiB");
    printf("\n");
    double total[GROW_METHODS] = {0, 0, 0};
    size_t max_peak[GROW_METHODS] = {0, 0, 0};
    for (int i = 0; i < steps; i++) {
        char a[32], b[32], label[72];
        snprintf(label, sizeof label, "%s->%s", size_label(a, sizeof a, start << i),
                 size_label(b, sizeof b, start << (i + 1)));
        printf("    %-18s", label);
        for (int m = 0; m < GROW_METHODS; m++) {
            if (!done[m]) {
                printf("  %9s %10s %10s ", "-", "-", "-");
                continue;
            }
            for (int p = 0; p < g_grow_passes; p++)
                v[p] = runs[m * g_grow_passes + p].ns[i];
            double ms = median(v, g_grow_passes) / 1e6;
            total[m] += ms;
            if (peak[m].peak[i] > max_peak[m])
                max_peak[m] = peak[m].peak[i];
            printf("  %9.2f %10zu %10zu ", ms, runs[m * g_grow_passes].used_after[i] / MiB, peak[m].peak[i] / MiB);
        }
        printf("\n");
    }
    printf("    %-18s", "total / max peak");
    for (int m = 0; m < GROW_METHODS; m++) {
        if (done[m])
            printf("  %9.2f %10s %10zu ", total[m], "", max_peak[m] / MiB);
        else
            printf("  %9s %10s %10s ", "failed", "", "");
    }
    printf("\n");
    ok = done[GROW_GPUMEM] && done[GROW_COPY] && (done[GROW_VMM] || !have_vmm);
out:
    free(runs);
    free(peak);
    free(v);
    return ok;
}

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

static int part_f(void)
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
/* (h) thin paths: gpumem's wrapper vs the driver call it stands for         */
/* ------------------------------------------------------------------------ */

/* Both sides of (h) use the same stream and buffers; each has its own event
 * (gpumem's wraps a driver event, which it creates itself). */
static struct {
    gpumem_event_t gm_event;
    CUevent cu_event;
    void *pinned;   /* 4 KiB of pinned host memory (gpumem_host_alloc) */
    void *device;   /* 4 KiB of device memory (gpumem_malloc) */
} thin;

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
    THIN_TARGETS, /* the rows after it are the driver against itself: where gpumem's cost could come from */
    THIN_REF_FROM_POOL = THIN_TARGETS,
    THIN_REF_CHECK_POOL,
    THIN_REF_CAPTURE_CHECK,
    THIN_REF_OWN_POOL,
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
    {"driver: from the default pool, named", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"driver: current pool checked first", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"driver: + 2 capture checks", "cuMemAllocAsync+cuMemFreeAsync", 1},
    {"gpumem own pool alloc+free 256 B", "cuMemAllocAsync+cuMemFreeAsync", 1},
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

static int part_h(void)
{
    part_header("(h) thin paths: gpumem's call vs the driver call it stands for, same stream, ns per call (median);\n"
                "    enqueueing calls timed in batches of 64 with the queue drained untimed between batches;\n"
                "    target: every gpumem/drv <= 1.05");
    int ok = 0, met = 1;
    gpumem_pool_t pool = NULL;
    uint64_t keep = UINT64_MAX;
    thin.gm_event = NULL;
    thin.cu_event = NULL;
    thin.pinned = thin.device = NULL;
    if (!drv.cuEventCreate || !drv.cuEventRecord || !drv.cuEventQuery || !drv.cuStreamWaitEvent || !drv.cuStreamQuery ||
        !drv.cuMemcpyAsync || !drv.cuMemsetD8Async || !drv.cuMemHostGetDevicePointer || !drv.cuEventDestroy) {
        printf("    skipped: the driver lacks an event, stream or async-copy entry point\n");
        return 1;
    }
    GM(gpumem_event_create(&thin.gm_event));
    CU(drv.cuEventCreate(&thin.cu_event, 0));
    GM(gpumem_host_alloc(&thin.pinned, 4096, 0));
    GM(gpumem_malloc(&thin.device, 4096));
    if (have_driver_pools()) {
        GM(gpumem_device_get_default_pool(&pool, g_device));
        GM(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
        if (!driver_pool_keep(UINT64_MAX))
            goto out;
        CU(drv.cuDeviceGetDefaultMemPool(&thin_default_pool, g_cudev));
    }
    /* Recorded and complete: the queries below find finished events. */
    GM(gpumem_event_record(thin.gm_event, g_gstream));
    CU(drv.cuEventRecord(thin.cu_event, g_stream));
    CU(drv.cuStreamSynchronize(g_stream));
    printf("    %-40s  %10s  %10s  %10s  %s\n", "call (driver call)", "gpumem", "driver", "gpumem/drv", "");
    for (int op = 0; op < THIN_COUNT; op++) {
        if ((op == THIN_MALLOC_ASYNC || op >= THIN_TARGETS) && !pool)
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

static int part_i(void)
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

/* ------------------------------------------------------------------------ */

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

static int part_j(void)
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

static int part_h_alloc(gpumem_pool_t pool)
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

static int part_h_bandwidth(gpumem_pool_t pool)
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

static int part_k(void)
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
    ok = part_h_alloc(pool) && part_h_bandwidth(pool);
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


static void usage(const char *argv0)
{
    printf("usage: %s [--quick] [--parts LETTERS] [--any-backend]\n"
           "  --quick          short runs (5 repetitions, growth to 2 GiB): a smoke test, not a result\n"
           "  --parts LETTERS  run only these parts, e.g. --parts ad (default abcdefghijkl; g needs two GPUs)\n"
           "  --any-backend    let gpumem take the backend GPUMEM_BACKEND picks, not cuda: a dry run of\n"
           "                   this program against a fake driver (GPUMEM_CUDA_LIBRARY); no result\n"
           "Loads GPUMEM_CUDA_LIBRARY (default libcuda.so.1); gpumem runs on its cuda backend.\n",
           argv0);
}

static void print_header(int argc, char **argv)
{
    char date[64], name[256] = "?";
    time_t now = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    printf("command:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\ndate:    %s\n", date);
    printf("driver:  %s, CUDA %d.%d", g_lib_name, g_driver_version / 1000, g_driver_version % 1000 / 10);
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        char line[256];
        if (fgets(line, sizeof line, f)) {
            const char *k = strstr(line, "Kernel Module");
            if (k) {
                line[strcspn(line, "\n")] = 0;
                char *tail = (char *)k + strlen("Kernel Module");
                while (*tail == ' ' || *tail == '\t' || *tail == ':')
                    tail++;
                char *end = tail;
                while (*end && *end != ' ' && *end != '\t')
                    end++;
                *end = 0;
                printf(", kernel module %s", tail);
            }
        }
        fclose(f);
    }
    printf("\n");
    int major = 0, minor = 0;
    drv.cuDeviceGetName(name, (int)sizeof name, g_cudev);
    drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_cudev);
    drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_cudev);
    size_t fr = 0, tot = 0;
    drv.cuMemGetInfo(&fr, &tot);
    printf("device:  %d: %s, sm_%d%d, %zu MiB (%zu MiB free)\n", (int)g_cudev, name, major, minor, tot / MiB,
           fr / MiB);
    int32_t v = gpumem_version();
    static const char *levels[] = {"NONE", "EMULATED", "NATIVE"};
#define LEVEL(x) ((x) >= 0 && (x) <= 2 ? levels[(x)] : "?")
    int32_t backend = 0;
    gpumem_get_backend(&backend);
    printf("gpumem:  %d.%d.%d, backend %s; managed %s, pools %s, vmm %s\n", v / 10000, v / 100 % 100, v % 100,
           gpumem_backend_name(backend), LEVEL(g_info.managed_memory), LEVEL(g_info.memory_pools),
           LEVEL(g_info.virtual_memory));
    if (backend != GPUMEM_BACKEND_CUDA)
        printf("note:    DRY RUN: gpumem is not on the cuda backend; these figures mean nothing\n");
#undef LEVEL
    const char *dis = getenv("GPUMEM_DISABLE"), *fb = getenv("GPUMEM_FALLBACK");
    if ((dis && *dis) || (fb && *fb))
        printf("env:     GPUMEM_DISABLE=%s GPUMEM_FALLBACK=%s\n", dis ? dis : "", fb ? fb : "");
    printf("runs:    median of %d%s\n", g_runs, g_quick ? " (--quick: a smoke test, not a result)" : "");
    fflush(stdout);
}


/* ------------------------------------------------------------------------ */
/* (l) what one VMM page costs the driver                                    */
/* ------------------------------------------------------------------------ */

#define PAGE_RUN 64

/* Back PAGE_RUN pages of `gran` at va one by one (the own pool's way), each
 * step timed; then unmap them one by one, with the device idle or `busy`
 * with a fill of `fill` that owes nothing to these pages.  ns per page. */
static int page_round(CUdeviceptr va, size_t gran, const CUmemAllocationProp *prop, const CUmemAccessDesc *access,
                      CUdeviceptr fill, size_t fill_bytes, int busy, double t[5])
{
    CUmemGenericAllocationHandle h;
    double t0;
    int ok = 0;
    for (int k = 0; k < 5; k++)
        t[k] = 0;
    for (int i = 0; i < PAGE_RUN; i++) {
        t0 = now_ns();
        CU(drv.cuMemCreate(&h, gran, prop, 0));
        t[0] += now_ns() - t0;
        t0 = now_ns();
        CU(drv.cuMemMap(va + i * gran, gran, 0, h, 0));
        t[1] += now_ns() - t0;
        t0 = now_ns();
        CU(drv.cuMemRelease(h)); /* mapped memory lives until unmapped */
        t[2] += now_ns() - t0;
        t0 = now_ns();
        CU(drv.cuMemSetAccess(va + i * gran, gran, access, 1));
        t[3] += now_ns() - t0;
    }
    CU(drv.cuCtxSynchronize());
    if (busy)
        for (int i = 0; i < 8; i++) /* a few ms of unrelated work queued */
            CU(drv.cuMemsetD8Async(fill, (unsigned char)i, fill_bytes, g_stream));
    t0 = now_ns();
    for (int i = 0; i < PAGE_RUN; i++)
        CU(drv.cuMemUnmap(va + i * gran, gran));
    t[4] = now_ns() - t0;
    for (int k = 0; k < 5; k++)
        t[k] /= PAGE_RUN;
    ok = 1;
out:
    drv.cuStreamSynchronize(g_stream);
    return ok;
}

/* The same pages, but access set and the pages unmapped in one call each
 * over the whole run (the pool's way for a run of pages): ns per page. */
static int page_round_batched(CUdeviceptr va, size_t gran, const CUmemAllocationProp *prop,
                              const CUmemAccessDesc *access, double t[2])
{
    CUmemGenericAllocationHandle h;
    int ok = 0;
    for (int i = 0; i < PAGE_RUN; i++) {
        CU(drv.cuMemCreate(&h, gran, prop, 0));
        CU(drv.cuMemMap(va + i * gran, gran, 0, h, 0));
        CU(drv.cuMemRelease(h));
    }
    double t0 = now_ns();
    CU(drv.cuMemSetAccess(va, gran * PAGE_RUN, access, 1));
    t[0] = (now_ns() - t0) / PAGE_RUN;
    t0 = now_ns();
    CU(drv.cuMemUnmap(va, gran * PAGE_RUN));
    t[1] = (now_ns() - t0) / PAGE_RUN;
    ok = 1;
out:
    return ok;
}

/* The same run of pages as one physical allocation (create, map, release,
 * set access, unmap once each): whether the per-page costs above belong to
 * the page or to the allocation.  ns per page. */
static int page_round_whole(CUdeviceptr va, size_t gran, const CUmemAllocationProp *prop,
                            const CUmemAccessDesc *access, double t[5])
{
    CUmemGenericAllocationHandle h;
    const size_t bytes = gran * PAGE_RUN;
    double t0;
    int ok = 0;
    t0 = now_ns();
    CU(drv.cuMemCreate(&h, bytes, prop, 0));
    t[0] = now_ns() - t0;
    t0 = now_ns();
    CU(drv.cuMemMap(va, bytes, 0, h, 0));
    t[1] = now_ns() - t0;
    t0 = now_ns();
    CU(drv.cuMemRelease(h));
    t[2] = now_ns() - t0;
    t0 = now_ns();
    CU(drv.cuMemSetAccess(va, bytes, access, 1));
    t[3] = now_ns() - t0;
    CU(drv.cuCtxSynchronize());
    t0 = now_ns();
    CU(drv.cuMemUnmap(va, bytes));
    t[4] = now_ns() - t0;
    for (int k = 0; k < 5; k++)
        t[k] /= PAGE_RUN;
    ok = 1;
out:
    return ok;
}

static int part_l(void)
{
    part_header("(l) one VMM page (the allocation granularity), ns per page (median of 5 rounds of 64 pages):\n"
                "    what gpumem's own pool pays to back a page under a block (create, map, release the\n"
                "    handle, set access) and to give one back (unmap), with the device idle and busy");
    if (!drv.cuMemCreate || !drv.cuMemMap || !drv.cuMemUnmap || !drv.cuMemSetAccess || !drv.cuMemRelease ||
        !drv.cuMemAddressReserve || !drv.cuMemAddressFree || !drv.cuMemGetAllocationGranularity) {
        printf("    skipped: the driver lacks the VMM entry points\n");
        return 1;
    }
    int ok = 0;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    vmm_device_props(&prop, &access);
    size_t gran = 0, fill_bytes = 1 * GiB;
    CUdeviceptr va = 0, fill = 0;
    double rounds[2][5][5], batched[2][5], whole[5][5], plain[2][5];
    CU(drv.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU(drv.cuMemAddressReserve(&va, gran * PAGE_RUN, gran, 0, 0));
    CU(drv.cuMemAlloc(&fill, fill_bytes));
    for (int busy = 0; busy < 2; busy++)
        for (int r = 0; r < 5; r++) {
            double t[5];
            if (!page_round(va, gran, &prop, &access, fill, fill_bytes, busy, t))
                goto out;
            for (int k = 0; k < 5; k++)
                rounds[busy][k][r] = t[k];
        }
    for (int r = 0; r < 5; r++) {
        double t[2];
        if (!page_round_batched(va, gran, &prop, &access, t))
            goto out;
        batched[0][r] = t[0];
        batched[1][r] = t[1];
    }
    for (int r = 0; r < 5; r++) {
        double t[5];
        if (!page_round_whole(va, gran, &prop, &access, t))
            goto out;
        for (int k = 0; k < 5; k++)
            whole[k][r] = t[k];
    }
    for (int r = 0; r < 5; r++) { /* what the unpaged pool pays for the same bytes */
        CUdeviceptr p = 0;
        double t0 = now_ns();
        CU(drv.cuMemAlloc(&p, gran * PAGE_RUN));
        plain[0][r] = (now_ns() - t0) / PAGE_RUN;
        t0 = now_ns();
        CU(drv.cuMemFree(p));
        plain[1][r] = (now_ns() - t0) / PAGE_RUN;
    }
    static const char *names[5] = {"cuMemCreate", "cuMemMap", "cuMemRelease (mapped)", "cuMemSetAccess",
                                   "cuMemUnmap"};
    printf("    page: %zu KiB\n", gran >> 10);
    for (int k = 0; k < 5; k++)
        printf("    %-24s %10.0f ns  (device idle)\n", names[k], median(rounds[0][k], 5));
    printf("    %-24s %10.0f ns  (device busy with 8 GiB of fills on another stream)\n", "cuMemUnmap",
           median(rounds[1][4], 5));
    printf("    %-24s %10.0f ns  (one call for %d pages, per page)\n", "cuMemSetAccess", median(batched[0], 5),
           PAGE_RUN);
    printf("    %-24s %10.0f ns  (one call for %d pages, per page)\n", "cuMemUnmap", median(batched[1], 5), PAGE_RUN);
    for (int k = 0; k < 5; k++)
        printf("    %-24s %10.0f ns  (one allocation of %d pages, per page)\n", names[k], median(whole[k], 5), PAGE_RUN);
    printf("    %-24s %10.0f ns  (%d pages' bytes at once, per page)\n", "cuMemAlloc", median(plain[0], 5), PAGE_RUN);
    printf("    %-24s %10.0f ns  (%d pages' bytes at once, per page)\n", "cuMemFree", median(plain[1], 5), PAGE_RUN);
    printf("    back + give back one page: %.0f ns\n",
           median(rounds[0][0], 5) + median(rounds[0][1], 5) + median(rounds[0][2], 5) + median(rounds[0][3], 5) +
               median(rounds[0][4], 5));
    ok = 1;
out:
    if (fill)
        drv.cuMemFree(fill);
    if (va)
        drv.cuMemAddressFree(va, gran * PAGE_RUN);
    return ok;
}

int main(int argc, char **argv)
{
    const char *parts = "abcdefghijkl";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
            g_runs = 5;
            g_target_ns = 2e6;
            g_grow_passes = 1;
            g_grow_max = 2 * GiB;
        } else if (strcmp(argv[i], "--any-backend") == 0) {
            g_any_backend = 1;
        } else if (strcmp(argv[i], "--parts") == 0 && i + 1 < argc) {
            parts = argv[++i];
            if (parts[strspn(parts, "abcdefghijkl")] != 0 || !*parts) {
                usage(argv[0]);
                return 2;
            }
        } else {
            usage(argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!driver_load())
        return 1;
    CUresult r;
    if ((r = drv.cuDeviceGet(&g_cudev, 0)) != CUDA_SUCCESS || (r = drv.cuDevicePrimaryCtxRetain(&g_ctx, g_cudev)) != CUDA_SUCCESS ||
        (r = drv.cuCtxSetCurrent(g_ctx)) != CUDA_SUCCESS) {
        printf("error: device 0's primary context: %s\n", cu_name(r));
        return 1;
    }
    gpumem_status_t st = gpumem_init(g_any_backend ? GPUMEM_BACKEND_AUTO : GPUMEM_BACKEND_CUDA);
    if (st == GPUMEM_SUCCESS)
        st = gpumem_set_device(0);
    if (st == GPUMEM_SUCCESS)
        st = gpumem_get_device(&g_device);
    if (st == GPUMEM_SUCCESS)
        st = gpumem_device_get_info(g_device, &g_info);
    if (st != GPUMEM_SUCCESS) {
        printf("error: gpumem on the cuda backend: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        drv.cuDevicePrimaryCtxRelease(g_cudev);
        return 1;
    }
    if ((r = drv.cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        printf("error: cuStreamCreate: %s\n", cu_name(r));
        return 1;
    }
    if ((st = gpumem_stream_wrap(g_stream, &g_gstream)) != GPUMEM_SUCCESS) {
        printf("error: gpumem_stream_wrap: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        return 1;
    }
    print_header(argc, argv);

    static const struct {
        char letter;
        int (*fn)(void);
    } table[] = {{'a', part_a}, {'b', part_b}, {'c', part_c}, {'d', part_d}, {'e', part_e}, {'f', part_f}, {'g', part_g},
                {'h', part_h}, {'i', part_i}, {'j', part_j}, {'k', part_k}, {'l', part_l}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (!strchr(parts, table[i].letter))
            continue;
        double t0 = now_ns();
        int ok = make_current() && table[i].fn();
        if (!ok) {
            printf("    part (%c) FAILED (see above); going on\n", table[i].letter);
            g_any_failed = 1;
        }
        printf("    [(%c) took %.1f s]\n", table[i].letter, (now_ns() - t0) / 1e9);
        fflush(stdout);
    }

    gpumem_stream_destroy(g_gstream);
    drv.cuStreamDestroy(g_stream);
    if ((st = gpumem_finalize()) != GPUMEM_SUCCESS) {
        printf("error: gpumem_finalize: %s\n", gpumem_status_string(st));
        g_any_failed = 1;
    }
    drv.cuDevicePrimaryCtxRelease(g_cudev);
    printf("\n%s\n", g_any_failed ? "some parts FAILED" : "all parts ran");
    return g_any_failed ? 1 : 0;
}
