/* driver-between-calls: does work done between two CUDA driver calls make
 * the driver's own calls slower?  A control for gpumem-bench-gpu's part (h)
 * (docs/benchmarks.md, "Issue 10, sixth session"), not a gpumem benchmark:
 * no gpumem code runs here.
 *
 *   cc -O2 -I/usr/local/cuda/include -o driver-between-calls tools/driver-between-calls.c -lcuda
 *   ./driver-between-calls
 *
 * For three calls (cuMemAllocAsync+cuMemFreeAsync of 256 B on the default
 * pool, cuStreamWaitEvent on a completed event, cuEventQuery of it), a loop
 * of 20,000 calls does, after each driver call, one of: nothing; a store to
 * N fixed, scattered cache lines of a 4 MiB buffer (N = 16..512: what a
 * library's bookkeeping touches); or a run of straight-line code (about 4
 * and 12 KiB).  Prints the median of 9 loops, ns per call: the loop, the
 * same work alone in a loop (hot in the caches), and the difference, which
 * is the driver's own cost with that work between its calls.  Enqueueing
 * loops drain the stream every 64 calls. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static volatile uint64_t sink;
static char *lines_buf;   /* 4 MiB */
static uint32_t *scatter; /* line indices into it */

__attribute__((noinline)) static void touch_lines(int lines)
{
    uint64_t s = 0;
    for (int i = 0; i < lines; i++) {
        char *at = lines_buf + (size_t)scatter[i] * 64;
        s += (uint64_t)*at;
        *at = (char)s;
    }
    sink = s;
}

/* About 16 bytes of distinct instructions per step. */
#define STEP(k) x = x * 0x9E3779B97F4A7C15ull + (k##ull * 7919u); x ^= x >> ((k % 13) + 1);
#define S10(k) STEP(k##0) STEP(k##1) STEP(k##2) STEP(k##3) STEP(k##4) STEP(k##5) STEP(k##6) STEP(k##7) STEP(k##8) STEP(k##9)
#define S100(k) S10(k##0) S10(k##1) S10(k##2) S10(k##3) S10(k##4) S10(k##5) S10(k##6) S10(k##7) S10(k##8) S10(k##9)
__attribute__((noinline)) static void code_4k(uint64_t x) { S100(1) S100(2) sink = x; }
__attribute__((noinline)) static void code_12k(uint64_t x) { S100(3) S100(4) S100(5) S100(6) S100(7) S100(8) sink = x; }

enum { WORK_CODE_4K = -1, WORK_CODE_12K = -2 }; /* > 0: that many lines */
static void work(int kind, int i)
{
    if (kind > 0)
        touch_lines(kind);
    else if (kind == WORK_CODE_4K)
        code_4k((uint64_t)i);
    else if (kind == WORK_CODE_12K)
        code_12k((uint64_t)i);
}

static CUstream g_stream;
static CUevent g_event;

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            fprintf(stderr, "driver-between-calls: %s failed (%d)\n", #call, (int)r_);                                 \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

enum { OP_PAIR, OP_WAIT_EVENT, OP_EVENT_QUERY, OP_COUNT };
static const char *op_names[OP_COUNT] = {"cuMemAllocAsync+cuMemFreeAsync 256 B", "cuStreamWaitEvent",
                                         "cuEventQuery (completed)"};

static double loop_op(int op, int kind, int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        if (op == OP_PAIR) {
            CUdeviceptr p;
            CHECK(cuMemAllocAsync(&p, 256, g_stream));
            work(kind, i);
            CHECK(cuMemFreeAsync(p, g_stream));
        } else if (op == OP_WAIT_EVENT) {
            CHECK(cuStreamWaitEvent(g_stream, g_event, 0));
        } else {
            CHECK(cuEventQuery(g_event));
        }
        work(kind, i);
        if (op != OP_EVENT_QUERY && (i & 63) == 63)
            CHECK(cuStreamSynchronize(g_stream));
    }
    return (now_ns() - t0) / n;
}

static double loop_work(int kind, int per_op, int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        for (int c = 0; c < per_op; c++)
            work(kind, i);
    return (now_ns() - t0) / n;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmemoryPool pool;
    uint64_t keep = UINT64_MAX;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&g_event, 0));
    CHECK(cuDeviceGetDefaultMemPool(&pool, dev));
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CHECK(cuEventRecord(g_event, g_stream));
    CHECK(cuStreamSynchronize(g_stream));
    lines_buf = calloc(4 << 20, 1);
    scatter = malloc(sizeof *scatter * 65536);
    if (!lines_buf || !scatter)
        return 1;
    srand(1);
    for (int i = 0; i < 65536; i++)
        scatter[i] = (uint32_t)rand() % 65536;

    static const int kinds[] = {0, 16, 32, 64, 128, 256, 512, WORK_CODE_4K, WORK_CODE_12K};
    enum { RUNS = 9, CALLS = 20000, KINDS = sizeof kinds / sizeof kinds[0] };
    for (int op = 0; op < OP_COUNT; op++) {
        printf("%s: ns per call (median of %d loops of %d)\n", op_names[op], RUNS, CALLS);
        printf("  %-24s %10s %10s %12s\n", "work after each call", "loop", "work alone", "driver's own");
        for (int k = 0; k < KINDS; k++) {
            double with[RUNS], alone[RUNS];
            int per_op = op == OP_PAIR ? 2 : 1;
            for (int r = 0; r < RUNS; r++) {
                with[r] = loop_op(op, kinds[k], CALLS);
                alone[r] = kinds[k] ? loop_work(kinds[k], per_op, CALLS) : 0;
            }
            qsort(with, RUNS, sizeof *with, by_value);
            qsort(alone, RUNS, sizeof *alone, by_value);
            char what[32];
            if (kinds[k] > 0)
                snprintf(what, sizeof what, "%d lines stored", kinds[k]);
            else
                snprintf(what, sizeof what, "%s", kinds[k] == 0 ? "nothing" : kinds[k] == WORK_CODE_4K ? "~4 KiB of code" : "~12 KiB of code");
            printf("  %-24s %10.1f %10.1f %12.1f\n", what, with[RUNS / 2], alone[RUNS / 2], with[RUNS / 2] - alone[RUNS / 2]);
        }
    }
    return 0;
}
