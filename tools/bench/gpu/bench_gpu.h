/*
 * gpumem-bench-gpu's shared parts: the driver (driver.c), the device and
 * stream both sides use, and the harness every part measures with
 * (harness.c: rounds, medians, ratios, met or missed against a target).
 * Each part is one function, in the file of what it measures (main.c lists
 * them).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_TOOLS_BENCH_GPU_H
#define GPUMEM_TOOLS_BENCH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <gpumem/gpumem.h>

#include "../bench_util.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* ------------------------------------------------------------------------ */
/* The driver, loaded at run time (driver.c)                                */
/* ------------------------------------------------------------------------ */

/* Driver calls gpumem does not make but is measured against: resolved as
 * cuda_symbols.def's entries are, and optional. */
#define BENCH_DRIVER_EXTRA(X)                                                                                         \
    X(cuMemAllocAsync) X(cuDeviceGetMemPool) X(cuMemcpyPeer) X(cuMemcpyDtoH) X(cuMemcpyHtoD) \
    X(cuPointerGetAttributes)

/* One pointer per entry of the library's cuda_symbols.def and of
 * BENCH_DRIVER_EXTRA, typed with <cuda.h>'s prototype.  <cuda.h> #defines
 * some names to their _v2 variant; the member is then spelled that way too,
 * and drv.cuMemAlloc(...) still reads naturally because the same #define
 * applies where it is called. */
struct bench_driver {
#define GPUMEM_CUDA_REQUIRED(name) __typeof__(&name) name;
#define GPUMEM_CUDA_OPTIONAL(name, feature) __typeof__(&name) name;
#include "backends/cuda/cuda_symbols.def"
#undef GPUMEM_CUDA_REQUIRED
#undef GPUMEM_CUDA_OPTIONAL
#define X(name) __typeof__(&name) name;
    BENCH_DRIVER_EXTRA(X)
#undef X
    /* cuMemPrefetchAsync changed in CUDA 12.2 (a CUmemLocation instead of a
     * device ordinal); whichever the driver has is used. */
    PFN_cuMemPrefetchAsync_v12020 cuMemPrefetchAsync_v2;
    PFN_cuMemPrefetchAsync_v8000 cuMemPrefetchAsync_v1;
    /* (j): the driver's own batched copy, CUDA 13.0's form (NULL before 13.0). */
    PFN_cuMemcpyBatchAsync_v13000 cuMemcpyBatchAsync_v2;
    /* (h): the capture check gpumem's own pool makes, in its CUDA 11.3 form. */
    PFN_cuStreamGetCaptureInfo_v11030 cuStreamGetCaptureInfo;
};

extern struct bench_driver drv;
extern const char *g_lib_name; /* the library loaded */
extern int g_driver_version;   /* cuDriverGetVersion */

/* Load the driver and resolve every entry point; 0 and a printed reason on failure. */
int driver_load(void);
/* The driver's name for a result; never NULL. */
const char *cu_name(CUresult r);

/* ------------------------------------------------------------------------ */
/* The device both sides use, and the options (harness.c)                   */
/* ------------------------------------------------------------------------ */

extern int g_runs;           /* repetitions behind each median */
extern double g_target_ns;   /* each timed run of a cheap call lasts at least this */
extern int g_grow_passes;    /* (e): timed passes per method */
extern size_t g_grow_max;    /* (e): the largest size grown to */
extern int g_quick;          /* --quick */
extern int g_any_backend;    /* --any-backend: a dry run against a fake driver */
extern int g_any_failed;     /* a part failed: the exit status is 1 */

extern CUdevice g_cudev;
extern CUcontext g_ctx;
extern CUstream g_stream;         /* the raw side's stream ... */
extern gpumem_stream_t g_gstream; /* ... wrapped for gpumem: both sides use one stream */
extern int32_t g_device;          /* gpumem's id of the same device */
extern gpumem_device_info_t g_info;

/* ------------------------------------------------------------------------ */
/* Checking, timing, medians (harness.c)                                    */
/* ------------------------------------------------------------------------ */

void report_gm(const char *what, gpumem_status_t st);
void report_cu(const char *what, CUresult r);

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

/* "256 B", "64 KiB", "1 MiB", "2 GiB" into buf. */
const char *size_label(char *buf, size_t len, size_t size);

/* A timed loop: nanoseconds for n repetitions, negative on failure. */
typedef double (*loop_fn)(size_t size, long n, void *arg);

/* Median ns per repetition of two loops, calibrated apart and interleaved
 * run by run so that drift touches both alike.  0 on failure. */
int measure_two(loop_fn a, void *arg_a, loop_fn b, void *arg_b, size_t size, long cap, double *med_a,
                double *med_b);

/* One bandwidth row from g_runs timings of `bytes` per side: GB/s of each,
 * their ratio, and whether gpumem's is at least `target` times the driver's. */
void bandwidth_row(const char *what, size_t bytes, double *gm_ns, double *cu_ns, double target);

void part_header(const char *title);

/* Driver and gpumem side by side: the same device context on this thread. */
int make_current(void);

/* ------------------------------------------------------------------------ */
/* The driver's stream-ordered pools, as several parts set them (alloc.c)   */
/* ------------------------------------------------------------------------ */

/* Whether the driver has cuMemAllocAsync and its pool calls (says so when not). */
int have_driver_pools(void);
/* The driver's default pool keeps what is freed (or, with keep 0, releases it). */
int driver_pool_keep(uint64_t keep);

/* ------------------------------------------------------------------------ */
/* The parts: 1 when done (skipped included), 0 on failure                   */
/* ------------------------------------------------------------------------ */

int part_a(void); /* alloc.c */
int part_b(void);
int part_c(void);
int part_d(void); /* copies.c */
int part_j(void);
int part_e(void); /* vmm.c */
int part_l(void);
int part_f(void); /* pinned.c */
int part_k(void);
int part_g(void); /* multi_gpu.c */
int part_h(void); /* thin.c */
int part_i(void); /* threads.c */
int part_m(void); /* floor.c */
int part_n(void); /* rows.c */

#endif
