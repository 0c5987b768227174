/*
 * gpumem-bench-gpu, the driver alone:
 *   (m) does work done between two driver calls make the driver's own calls
 *       slower?  No gpumem code runs in this part: it is the control for the
 *       thin paths of part (h), whose wrappers touch a dozen cache lines per
 *       call.  For three calls (cuEventQuery of a completed event,
 *       cuStreamWaitEvent on it, cuMemAllocAsync+cuMemFreeAsync of 256 B on
 *       the default pool) a loop does, after each driver call, one of:
 *       nothing; stores to N fixed, scattered cache lines of a 4 MiB buffer
 *       (what a library's bookkeeping touches); or ~12 KiB of straight-line
 *       code.  Printed: ns per call of the loop, of the same work alone, and
 *       their difference, the driver's own cost with that work between its
 *       calls, against its cost with nothing between them.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_gpu.h"

static volatile uint64_t floor_sink;
static unsigned char *floor_lines; /* 4 MiB */
static uint32_t *floor_scatter;    /* line indices into it */

__attribute__((noinline)) static void touch_lines(int lines)
{
    uint64_t s = 0;
    for (int i = 0; i < lines; i++) {
        unsigned char *at = floor_lines + (size_t)floor_scatter[i] * 64;
        s += *at;
        *at = (unsigned char)s;
    }
    floor_sink = s;
}

/* About 16 bytes of distinct instructions per step, 12 KiB in all. */
#define STEP(k) x = x * 0x9E3779B97F4A7C15ull + (k##ull * 7919u); x ^= x >> ((k % 13) + 1);
#define S10(k) STEP(k##0) STEP(k##1) STEP(k##2) STEP(k##3) STEP(k##4) STEP(k##5) STEP(k##6) STEP(k##7) STEP(k##8) STEP(k##9)
#define S100(k) S10(k##0) S10(k##1) S10(k##2) S10(k##3) S10(k##4) S10(k##5) S10(k##6) S10(k##7) S10(k##8) S10(k##9)
__attribute__((noinline)) static void code_12k(uint64_t x)
{
    S100(3) S100(4) S100(5) S100(6) S100(7) S100(8) floor_sink = x;
}

enum { WORK_NOTHING = 0, WORK_CODE_12K = -1 }; /* > 0: that many lines */

static void work(int kind, int i)
{
    if (kind > 0)
        touch_lines(kind);
    else if (kind == WORK_CODE_12K)
        code_12k((uint64_t)i);
}

enum { OP_EVENT_QUERY, OP_WAIT_EVENT, OP_POOL_PAIR, OP_COUNT };
static const char *const floor_op_names[OP_COUNT] = {"cuEventQuery (completed)", "cuStreamWaitEvent",
                                                      "cuMemAllocAsync+cuMemFreeAsync 256 B"};
static CUevent floor_event;

/* ns per call of n calls of `op`, each followed by `kind` of work; negative on failure. */
static double loop_op(int op, int kind, int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        if (op == OP_POOL_PAIR) {
            CUdeviceptr p;
            CU_T(drv.cuMemAllocAsync(&p, 256, g_stream));
            work(kind, i);
            CU_T(drv.cuMemFreeAsync(p, g_stream));
        } else if (op == OP_WAIT_EVENT) {
            CU_T(drv.cuStreamWaitEvent(g_stream, floor_event, 0));
        } else {
            CU_T(drv.cuEventQuery(floor_event));
        }
        work(kind, i);
        if (op != OP_EVENT_QUERY && (i & 63) == 63)
            CU_T(drv.cuStreamSynchronize(g_stream));
    }
    return (now_ns() - t0) / n;
}

/* ns per call of the work alone, as often as loop_op does it. */
static double loop_work(int op, int kind, int n)
{
    int per_call = op == OP_POOL_PAIR ? 2 : 1;
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        for (int c = 0; c < per_call; c++)
            work(kind, i);
    return (now_ns() - t0) / n;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int part_m(void)
{
    part_header("(m) the driver alone: its own cost per call with work done between calls (no gpumem code runs);\n"
                "    ns per call, median of 9 loops of 20,000 calls (--quick: 3 of 2,000); no target");
    static const int kinds[] = {WORK_NOTHING, 16, 32, 64, 128, WORK_CODE_12K};
    enum { KINDS = sizeof kinds / sizeof kinds[0], MAX_RUNS = 9 };
    const int runs = g_quick ? 3 : MAX_RUNS, calls = g_quick ? 2000 : 20000;
    int ok = 0;
    floor_event = NULL;
    floor_lines = calloc(4 << 20, 1);
    floor_scatter = malloc(sizeof *floor_scatter * 65536);
    if (!floor_lines || !floor_scatter) {
        printf("    out of host memory\n");
        goto out;
    }
    srand(1);
    for (int i = 0; i < 65536; i++)
        floor_scatter[i] = (uint32_t)rand() % 65536;
    CU(drv.cuEventCreate(&floor_event, 0));
    CU(drv.cuEventRecord(floor_event, g_stream));
    CU(drv.cuStreamSynchronize(g_stream));
    int pools = have_driver_pools() && driver_pool_keep(UINT64_MAX);
    for (int op = 0; op < OP_COUNT; op++) {
        if (op == OP_POOL_PAIR && !pools)
            continue;
        printf("    %s\n", floor_op_names[op]);
        printf("      %-22s %10s %10s %14s %10s\n", "work after each call", "loop", "work alone", "driver's own",
               "vs nothing");
        double alone_nothing = 0;
        for (int k = 0; k < KINDS; k++) {
            double with[MAX_RUNS], alone[MAX_RUNS];
            for (int r = 0; r < runs; r++) {
                with[r] = loop_op(op, kinds[k], calls);
                if (with[r] < 0)
                    goto out;
                alone[r] = kinds[k] == WORK_NOTHING ? 0 : loop_work(op, kinds[k], calls);
            }
            qsort(with, (size_t)runs, sizeof *with, by_value);
            qsort(alone, (size_t)runs, sizeof *alone, by_value);
            double own = with[runs / 2] - alone[runs / 2];
            if (kinds[k] == WORK_NOTHING)
                alone_nothing = own;
            char what[32];
            if (kinds[k] > 0)
                snprintf(what, sizeof what, "%d lines stored", kinds[k]);
            else
                snprintf(what, sizeof what, "%s", kinds[k] == WORK_NOTHING ? "nothing" : "~12 KiB of code");
            printf("      %-22s %10.1f %10.1f %14.1f %9.3fx\n", what, with[runs / 2], alone[runs / 2], own,
                   alone_nothing > 0 ? own / alone_nothing : 0.0);
            fflush(stdout);
        }
    }
    if (pools)
        driver_pool_keep(0);
    ok = 1;
out:
    if (floor_event)
        drv.cuEventDestroy(floor_event);
    free(floor_lines);
    free(floor_scatter);
    floor_lines = NULL;
    floor_scatter = NULL;
    return ok;
}
