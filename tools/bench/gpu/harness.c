/*
 * gpumem-bench-gpu's harness: the options, the device and stream both sides
 * share, failure reports, and the measurements every part makes (calibrated
 * rounds, medians, ratios, met or missed against a target).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench_gpu.h"

int g_runs = 11;
double g_target_ns = 10e6;
int g_grow_passes = 3;
size_t g_grow_max = 8 * GiB;
int g_quick;
int g_any_backend;
int g_any_failed;

CUdevice g_cudev;
CUcontext g_ctx;
CUstream g_stream;
gpumem_stream_t g_gstream;
int32_t g_device;
gpumem_device_info_t g_info = GPUMEM_DEVICE_INFO_INIT;

void report_gm(const char *what, gpumem_status_t st)
{
    printf("    FAILED: %s: %s: %s\n", what, gpumem_status_string(st), gpumem_last_error_message());
    fflush(stdout);
}

void report_cu(const char *what, CUresult r)
{
    printf("    FAILED: %s: %s\n", what, cu_name(r));
    fflush(stdout);
}

const char *size_label(char *buf, size_t len, size_t size)
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

int measure_two(loop_fn a, void *arg_a, loop_fn b, void *arg_b, size_t size, long cap, double *med_a,
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

void part_header(const char *title)
{
    printf("\n%s\n", title);
    fflush(stdout);
}

int make_current(void)
{
    CUresult r = drv.cuCtxSetCurrent(g_ctx);
    if (r != CUDA_SUCCESS) {
        report_cu("cuCtxSetCurrent", r);
        return 0;
    }
    return 1;
}

void bandwidth_row(const char *what, size_t bytes, double *gm_ns, double *cu_ns, double target)
{
    double gm = median(gm_ns, g_runs), cu = median(cu_ns, g_runs);
    double gm_gbs = (double)bytes / gm, cu_gbs = (double)bytes / cu; /* bytes per ns = GB/s */
    printf("    %-22s  %10.2f  %10.2f  %9.3fx  %s\n", what, gm_gbs, cu_gbs, gm_gbs / cu_gbs,
           gm_gbs / cu_gbs >= target ? "met" : "NOT met");
    fflush(stdout);
}
