/*
 * gpumem-bench-pool: how fast and how frugal gpumem's stream-ordered pool is.
 *
 *   (a) malloc_async + free_async of a cached size on one stream, against the
 *       active backend's plain allocator measured in the same run;
 *   (b) the same from 1, 2, 4, 8 threads, each on its own stream;
 *   (c) RMM's random_allocations pattern: time per operation, and peak
 *       reserved memory over peak live bytes (the pool's overhead);
 *   (d) what GPUMEM_TRACE costs: (a)'s 256-byte pairs with tracing off and
 *       on, alternating in the same run (gpumem restarts between them).
 *
 * With --own-pool, (a) and (b) allocate with gpumem_malloc_from_pool_async
 * from a pool of gpumem's own (GPUMEM_POOL_BUILTIN) on a created stream: the
 * path of gpumem-bench-gpu's row "gpumem own pool alloc+free 256 B", on any
 * backend (the fakes' current pool is the vendor's).
 *
 * Every figure is the median of repeated runs; the command line, date,
 * backend and device head the output so that results can be pasted into
 * docs/benchmarks.md as they are.  Public API only, plain C11 + pthreads.
 *
 * SPDX-License-Identifier: MIT
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpumem/gpumem.h>

#include "bench_util.h"

enum { KIND_POOL, KIND_GPUMEM, KIND_LIBC, KIND_COUNT };
static const char *kind_names[KIND_COUNT] = {"gpumem_malloc_async+free_async",
                                             "gpumem_malloc+gpumem_free", "libc malloc+free"};

static int g_runs = 15;
static double g_target_ns = 20e6; /* each timed run lasts at least this long */
static long g_steps = 100000;     /* (c) */
static int g_host_backend;
static const char *g_parts = "abcd"; /* which parts run (--parts) */
static int g_own_pool_wanted;           /* --own-pool */
static gpumem_pool_t g_own_pool;        /* (a) and (b) allocate from it when set */

static int part_wanted(char part) { return strchr(g_parts, part) != NULL; }

/* Through volatile pointers the compiler cannot see that a malloc'd block is
 * unused, so it cannot delete the malloc/free pair we mean to measure. */
static void *(*volatile libc_malloc)(size_t) = malloc;
static void (*volatile libc_free)(void *) = free;

static void die(const char *what, gpumem_status_t st)
{
    fprintf(stderr, "gpumem-bench-pool: %s failed: %s: %s\n", what, gpumem_status_string(st),
            gpumem_last_error_message());
    exit(1);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, "gpumem-bench-pool: out of host memory (%zu bytes)\n", size);
        exit(1);
    }
    return p;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        gpumem_status_t st_ = (call);                                                              \
        if (st_ != GPUMEM_SUCCESS)                                                                 \
            die(#call, st_);                                                                       \
    } while (0)

/* ------------------------------------------------------------------------ */
/* (a) pairs on one stream                                                  */
/* ------------------------------------------------------------------------ */

/* Nanoseconds for n alloc+free pairs of one kind.  One loop per kind, so
 * that no dispatch runs inside the timed loop. */
static double time_pairs(int kind, size_t size, long n, gpumem_stream_t stream)
{
    void *p;
    double t0 = now_ns();
    switch (kind) {
    case KIND_POOL:
        if (g_own_pool) {
            for (long i = 0; i < n; i++) {
                CHECK(gpumem_malloc_from_pool_async(&p, size, g_own_pool, stream));
                CHECK(gpumem_free_async(p, stream));
            }
        } else {
            for (long i = 0; i < n; i++) {
                CHECK(gpumem_malloc_async(&p, size, stream));
                CHECK(gpumem_free_async(p, stream));
            }
        }
        /* Count the device's side of the work too (a no-op on the host backend). */
        CHECK(gpumem_stream_synchronize(stream));
        break;
    case KIND_GPUMEM:
        for (long i = 0; i < n; i++) {
            CHECK(gpumem_malloc(&p, size));
            CHECK(gpumem_free(p));
        }
        break;
    default:
        for (long i = 0; i < n; i++) {
            p = libc_malloc(size);
            if (!p) {
                fprintf(stderr, "gpumem-bench-pool: malloc(%zu) failed\n", size);
                exit(1);
            }
            libc_free(p);
        }
        break;
    }
    return now_ns() - t0;
}

/* Enough pairs that one run lasts g_target_ns, so timer and loop overheads vanish. */
static long calibrate(int kind, size_t size, gpumem_stream_t stream)
{
    long n = 16;
    while (n < (1L << 24) && time_pairs(kind, size, n, stream) < g_target_ns)
        n *= 2;
    return n;
}

static const size_t g_sizes[] = {256, 64 << 10, 1 << 20};
#define NSIZES (sizeof g_sizes / sizeof g_sizes[0])
static long g_pool_pairs[NSIZES]; /* calibrated pairs per run, reused by (b) */

/* "256 B", "64 KiB", "1 MiB" into buf. */
static const char *size_label(char *buf, size_t len, size_t size)
{
    if (size >= (1 << 20))
        snprintf(buf, len, "%zu MiB", size >> 20);
    else if (size >= (1 << 10))
        snprintf(buf, len, "%zu KiB", size >> 10);
    else
        snprintf(buf, len, "%zu B", size);
    return buf;
}

static void bench_pairs(void)
{
    int kinds = g_host_backend ? KIND_COUNT : KIND_LIBC; /* libc is the vendor call only on host */
    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));

    printf("\n(a) alloc+free of a cached size on one stream: ns per pair, median of %d runs\n", g_runs);
    printf("    speed-up = baseline ns / pool ns (above 1: the pool is faster)\n");
    printf("    %7s", "size");
    for (int k = 0; k < kinds; k++)
        printf("  %30s", kind_names[k]);
    for (int k = 1; k < kinds; k++)
        printf("  %18s", k == KIND_GPUMEM ? "speed-up vs gpumem" : "speed-up vs libc");
    printf("\n");

    double *samples = xmalloc(sizeof(double) * (size_t)g_runs * KIND_COUNT);
    for (size_t s = 0; s < NSIZES; s++) {
        long n[KIND_COUNT];
        for (int k = 0; k < kinds; k++)
            n[k] = calibrate(k, g_sizes[s], stream); /* also warms the pool's cache */
        g_pool_pairs[s] = n[KIND_POOL];
        /* Interleave the kinds in each run so that drift (frequency, other
         * load) touches them all alike. */
        for (int r = 0; r < g_runs; r++)
            for (int k = 0; k < kinds; k++)
                samples[k * g_runs + r] = time_pairs(k, g_sizes[s], n[k], stream) / (double)n[k];
        double med[KIND_COUNT];
        for (int k = 0; k < kinds; k++)
            med[k] = median(samples + k * g_runs, g_runs);

        char label[32];
        printf("    %7s", size_label(label, sizeof label, g_sizes[s]));
        for (int k = 0; k < kinds; k++)
            printf("  %30.1f", med[k]);
        for (int k = 1; k < kinds; k++)
            printf("  %17.2fx", med[k] / med[KIND_POOL]);
        printf("\n");
    }
    free(samples);
    CHECK(gpumem_stream_destroy(stream));
}

/* ------------------------------------------------------------------------ */
/* (b) threads, each on its own stream                                      */
/* ------------------------------------------------------------------------ */

struct worker {
    pthread_t thread;
    size_t size;
    long pairs;
    double start_ns, end_ns; /* this worker's last run */
};

/* Workers and the main thread meet at `start` before each run and at `end`
 * after it.  Each worker times its own work: with more threads than CPUs the
 * main thread may wake late, so its clock would miss the start of the run. */
static pthread_barrier_t g_start, g_end;
static int g_stop; /* read after a barrier, which orders it */

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    time_pairs(KIND_POOL, w->size, 1, stream); /* fill this stream's cache */
    for (;;) {
        pthread_barrier_wait(&g_start);
        if (g_stop)
            break;
        w->start_ns = now_ns();
        time_pairs(KIND_POOL, w->size, w->pairs, stream);
        w->end_ns = now_ns();
        pthread_barrier_wait(&g_end);
    }
    CHECK(gpumem_stream_destroy(stream));
    return NULL;
}

/* Median aggregate pairs per second of `threads` threads. */
static double run_threads(int threads, size_t size, long pairs)
{
    struct worker *w = xmalloc(sizeof *w * (size_t)threads);
    double *rate = xmalloc(sizeof(double) * (size_t)g_runs);
    pthread_barrier_init(&g_start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&g_end, NULL, (unsigned)threads + 1);
    g_stop = 0;
    for (int t = 0; t < threads; t++) {
        w[t].size = size;
        w[t].pairs = pairs;
        if (pthread_create(&w[t].thread, NULL, worker_main, &w[t]) != 0) {
            fprintf(stderr, "gpumem-bench-pool: pthread_create failed\n");
            exit(1);
        }
    }
    for (int r = 0; r < g_runs; r++) {
        pthread_barrier_wait(&g_start);
        pthread_barrier_wait(&g_end);
        /* The run spans from the first worker's start to the last one's end. */
        double first = w[0].start_ns, last = w[0].end_ns;
        for (int t = 1; t < threads; t++) {
            first = w[t].start_ns < first ? w[t].start_ns : first;
            last = w[t].end_ns > last ? w[t].end_ns : last;
        }
        rate[r] = (double)threads * (double)pairs / ((last - first) * 1e-9);
    }
    g_stop = 1;
    pthread_barrier_wait(&g_start);
    for (int t = 0; t < threads; t++)
        pthread_join(w[t].thread, NULL);
    pthread_barrier_destroy(&g_start);
    pthread_barrier_destroy(&g_end);
    double m = median(rate, g_runs);
    free(rate);
    free(w);
    return m;
}

static void bench_threads(int max_threads)
{
    printf("\n(b) threads, each on its own stream doing (a): aggregate Mpairs/s (speed-up vs 1 thread),"
           " median of %d runs; %ld CPUs online\n", g_runs, sysconf(_SC_NPROCESSORS_ONLN));
    printf("    threads");
    for (size_t s = 0; s < NSIZES; s++) {
        char label[32];
        printf("  %20s", size_label(label, sizeof label, g_sizes[s]));
    }
    printf("\n");

    /* Part (a) calibrates the pairs per run; alone (--parts b), calibrate here. */
    for (size_t s = 0; s < NSIZES; s++) {
        if (g_pool_pairs[s] == 0) {
            gpumem_stream_t stream;
            CHECK(gpumem_stream_create(&stream));
            g_pool_pairs[s] = calibrate(KIND_POOL, g_sizes[s], stream);
            CHECK(gpumem_stream_destroy(stream));
        }
    }
    double base[NSIZES];
    for (int threads = 1; threads <= max_threads;) {
        printf("    %7d", threads);
        for (size_t s = 0; s < NSIZES; s++) {
            double rate = run_threads(threads, g_sizes[s], g_pool_pairs[s]);
            if (threads == 1)
                base[s] = rate;
            printf("  %11.2f (%5.2fx)", rate / 1e6, rate / base[s]);
        }
        printf("\n");
        fflush(stdout);
        /* 1, 2, 4, 8, ... and max_threads itself when it is no power of two. */
        threads = threads * 2 > max_threads && threads != max_threads ? max_threads : threads * 2;
    }
}

/* ------------------------------------------------------------------------ */
/* (c) RMM's random_allocations                                             */
/* ------------------------------------------------------------------------ */

#define MAX_ALLOC_SIZE ((size_t)4 << 20)
#define ALLOC_PERCENT 73

/* splitmix64: a seedable generator identical on every platform, so each
 * seed replays the same sequence for every kind. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct live {
    void *ptr;
    size_t size;
};

struct random_result {
    double ns_per_op;
    uint64_t peak_live; /* highest sum of requested sizes alive at once */
};

static void *random_alloc(int kind, size_t size, gpumem_stream_t stream)
{
    void *p = NULL;
    if (kind == KIND_POOL)
        CHECK(gpumem_malloc_async(&p, size, stream));
    else if (kind == KIND_GPUMEM)
        CHECK(gpumem_malloc(&p, size));
    else if (!(p = libc_malloc(size))) {
        fprintf(stderr, "gpumem-bench-pool: malloc(%zu) failed\n", size);
        exit(1);
    }
    return p;
}

static void random_free(int kind, void *p, gpumem_stream_t stream)
{
    if (kind == KIND_POOL)
        CHECK(gpumem_free_async(p, stream));
    else if (kind == KIND_GPUMEM)
        CHECK(gpumem_free(p));
    else
        libc_free(p);
}

/* One run of g_steps steps; leaves nothing allocated. */
/* Live-byte cap of (c), MiB: RMM's random_allocations default max_usage. */
static uint64_t g_cap_mib = 16000;
/* Which pool (c) measures: gpumem's own (the fragmentation target) or, with
 * --pool native, the vendor's. */
static int32_t g_pool_impl = GPUMEM_POOL_BUILTIN;

static struct random_result random_run(int kind, uint64_t seed, uint64_t cap, gpumem_stream_t stream)
{
    struct live *live = xmalloc(sizeof *live * (size_t)g_steps);
    size_t nlive = 0;
    uint64_t live_bytes = 0, rng = seed;
    struct random_result res = {0, 0};

    double t0 = now_ns();
    for (long i = 0; i < g_steps; i++) {
        size_t size = 1 + (size_t)(next_random(&rng) % MAX_ALLOC_SIZE);
        int alloc = nlive == 0 ||
                    (next_random(&rng) % 100 < ALLOC_PERCENT && live_bytes + size <= cap);
        if (alloc) {
            live[nlive].ptr = random_alloc(kind, size, stream);
            live[nlive++].size = size;
            live_bytes += size;
            if (live_bytes > res.peak_live)
                res.peak_live = live_bytes;
        } else {
            size_t victim = (size_t)(next_random(&rng) % nlive);
            random_free(kind, live[victim].ptr, stream);
            live_bytes -= live[victim].size;
            live[victim] = live[--nlive];
        }
    }
    if (kind == KIND_POOL)
        CHECK(gpumem_stream_synchronize(stream));
    res.ns_per_op = (now_ns() - t0) / (double)g_steps;

    while (nlive > 0)
        random_free(kind, live[--nlive].ptr, stream);
    if (kind == KIND_POOL)
        CHECK(gpumem_stream_synchronize(stream));
    free(live);
    return res;
}

static void bench_random(void)
{
    int32_t device;
    size_t free_bytes, total_bytes;
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_mem_get_info(&free_bytes, &total_bytes));
    /* RMM's max_usage (16000 MiB) unless --cap-mib says otherwise, and at
       most three quarters of the device. */
    uint64_t cap = g_cap_mib << 20;
    if (cap > total_bytes / 4 * 3)
        cap = total_bytes / 4 * 3;

    printf("\n(c) random_allocations (RMM's pattern): %ld steps, sizes uniform in [1, %zu] B; each step\n"
           "    allocates with probability %d%%, else frees a random live allocation; live bytes capped\n"
           "    at %llu MiB (an allocation that would pass the cap frees instead); one stream.\n"
           "    Pool: a fresh %s made current for each run, RELEASE_THRESHOLD = UINT64_MAX.\n"
           "    Median of %d runs (seeds 1..%d; the same seeds for every allocator).\n",
           g_steps, MAX_ALLOC_SIZE, ALLOC_PERCENT, (unsigned long long)(cap >> 20),
           g_pool_impl == GPUMEM_POOL_BUILTIN ? "pool of gpumem's own (GPUMEM_POOL_BUILTIN)" : "native pool",
           g_runs, g_runs);

    int kinds = g_host_backend ? KIND_COUNT : KIND_LIBC;
    double *ns = xmalloc(sizeof(double) * (size_t)g_runs * KIND_COUNT);
    double *reserved_ratio = xmalloc(sizeof(double) * (size_t)g_runs);
    double *used_ratio = xmalloc(sizeof(double) * (size_t)g_runs);
    gpumem_stream_t stream;
    gpumem_pool_t default_pool;
    CHECK(gpumem_stream_create(&stream));
    CHECK(gpumem_device_get_pool(&default_pool, device));

    for (int r = 0; r < g_runs; r++) {
        uint64_t seed = (uint64_t)r + 1;

        /* A fresh pool, so that memory cached by (a), (b) or an earlier run
         * does not count in this run's peak. */
        gpumem_pool_t pool;
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        uint64_t keep = UINT64_MAX, reserved_high = 0, used_high = 0;
        props.device = device;
        props.implementation = g_pool_impl;
        CHECK(gpumem_pool_create(&pool, &props));
        CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
        CHECK(gpumem_device_set_pool(device, pool));
        struct random_result res = random_run(KIND_POOL, seed, cap, stream);
        CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, &reserved_high));
        CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &used_high));
        CHECK(gpumem_device_set_pool(device, default_pool));
        CHECK(gpumem_pool_destroy(pool));

        ns[KIND_POOL * g_runs + r] = res.ns_per_op;
        reserved_ratio[r] = (double)reserved_high / (double)res.peak_live;
        used_ratio[r] = (double)used_high / (double)res.peak_live;
        for (int k = KIND_GPUMEM; k < kinds; k++)
            ns[k * g_runs + r] = random_run(k, seed, cap, stream).ns_per_op;
    }

    double pool_ns = median(ns, g_runs);
    printf("    %-32s %10.1f ns/op\n", kind_names[KIND_POOL], pool_ns);
    for (int k = KIND_GPUMEM; k < kinds; k++) {
        double m = median(ns + k * g_runs, g_runs);
        printf("    %-32s %10.1f ns/op  (pool speed-up %.2fx)\n", kind_names[k], m, m / pool_ns);
    }
    /* median() sorts, so the extremes are at the ends afterwards. */
    double rmed = median(reserved_ratio, g_runs), umed = median(used_ratio, g_runs);
    printf("    peak RESERVED_MEM_HIGH / peak live requested bytes: %.3f (min %.3f, max %.3f)\n", rmed,
           reserved_ratio[0], reserved_ratio[g_runs - 1]);
    printf("    peak USED_MEM_HIGH / peak live requested bytes:     %.3f (min %.3f, max %.3f)\n", umed,
           used_ratio[0], used_ratio[g_runs - 1]);

    CHECK(gpumem_stream_destroy(stream));
    free(ns);
    free(reserved_ratio);
    free(used_ratio);
}

/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------ */
/* (d) tracing off and on                                                   */
/* ------------------------------------------------------------------------ */

/* Restart gpumem with GPUMEM_TRACE set (to /dev/null: the recording is what
 * costs, not the file) or unset, with (a)'s cached default pool and a stream. */
static gpumem_stream_t restart_traced(int tracing)
{
    CHECK(gpumem_finalize());
    if (tracing) {
        setenv("GPUMEM_TRACE", "/dev/null", 1);
        /* Small, so that the ring is full and every event overwrites the oldest:
         * the steady state of a long traced program. */
        setenv("GPUMEM_TRACE_MAX", "10000", 1);
    } else {
        unsetenv("GPUMEM_TRACE");
        unsetenv("GPUMEM_TRACE_MAX");
    }
    CHECK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t device;
    gpumem_pool_t pool;
    uint64_t keep = UINT64_MAX;
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_pool(&pool, device));
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    return stream;
}

static void bench_tracing(void)
{
    const size_t size = 256;
    const char *saved_trace = getenv("GPUMEM_TRACE");
    if (saved_trace) {
        printf("\n(d) skipped: GPUMEM_TRACE is set for the whole run\n");
        return;
    }
    printf("\n(d) tracing: alloc+free of %zu B on one stream, ns per pair, median of %d runs;\n", size, g_runs);
    printf("    off and on alternate, gpumem restarting between them (GPUMEM_TRACE=/dev/null GPUMEM_TRACE_MAX=10000)\n");
    double *samples = xmalloc(sizeof(double) * (size_t)g_runs * 2);
    gpumem_stream_t stream = restart_traced(0);
    long n = calibrate(KIND_POOL, size, stream);
    CHECK(gpumem_stream_destroy(stream));
    for (int r = 0; r < g_runs; r++) {
        for (int tracing = 0; tracing < 2; tracing++) {
            stream = restart_traced(tracing);
            time_pairs(KIND_POOL, size, n / 8 + 1, stream); /* warm the pool's cache */
            samples[tracing * g_runs + r] = time_pairs(KIND_POOL, size, n, stream) / (double)n;
            CHECK(gpumem_stream_destroy(stream));
        }
    }
    double off = median(samples, g_runs), on = median(samples + g_runs, g_runs);
    printf("    %12s  %12s  %10s\n", "tracing off", "tracing on", "on / off");
    printf("    %12.1f  %12.1f  %9.2fx\n", off, on, on / off);
    free(samples);
    CHECK(gpumem_stream_destroy(restart_traced(0)));
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--quick] [--threads N] [--cap-mib N] [--runs N] [--pool builtin|native] [--own-pool]\n"
            "       [--parts LETTERS]\n"
            "  --quick      short runs (5 repetitions, 10k random steps): a smoke test, not a result\n"
            "  --threads N  largest thread count for (b) (default 8)\n"
            "  --cap-mib N  live-byte cap of (c) in MiB (default 16000, RMM's max_usage)\n"
            "  --runs N     repetitions of each measurement (default 15)\n"
            "  --pool P     the pool (c) measures: builtin (gpumem's own, default) or native\n"
            "  --own-pool   (a) and (b) from a pool of gpumem's own with gpumem_malloc_from_pool_async\n"
            "               (default: the device's current pool with gpumem_malloc_async)\n"
            "  --parts L    run only these parts, e.g. c or ab (default abcd)\n",
            argv0);
}

/* A whole decimal number in [lo, hi] (command-line counts); 0 when it is not one. */
static int parse_count(const char *text, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
    int max_threads = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_runs = 5;
            g_target_ns = 2e6;
            g_steps = 10000;
        } else if (strcmp(argv[i], "--cap-mib") == 0 && i + 1 < argc) {
            char *end = NULL;
            g_cap_mib = strtoull(argv[++i], &end, 10);
            if (!end || *end || g_cap_mib == 0) {
                usage(argv[0]);
                return 2;
            }
        } else if (strcmp(argv[i], "--pool") == 0 && i + 1 < argc) {
            ++i;
            if (strcmp(argv[i], "builtin") == 0)
                g_pool_impl = GPUMEM_POOL_BUILTIN;
            else if (strcmp(argv[i], "native") == 0)
                g_pool_impl = GPUMEM_POOL_NATIVE;
            else {
                usage(argv[0]);
                return 2;
            }
        } else if (strcmp(argv[i], "--own-pool") == 0) {
            g_own_pool_wanted = 1;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            long runs;
            if (!parse_count(argv[++i], 1, 1000, &runs)) {
                usage(argv[0]);
                return 2;
            }
            g_runs = (int)runs;
        } else if (strcmp(argv[i], "--parts") == 0 && i + 1 < argc) {
            g_parts = argv[++i];
            if (!*g_parts || strspn(g_parts, "abcd") != strlen(g_parts)) {
                usage(argv[0]);
                return 2;
            }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            long threads;
            if (!parse_count(argv[++i], 1, 1024, &threads)) {
                usage(argv[0]);
                return 2;
            }
            max_threads = (int)threads;
        } else {
            usage(argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }

    CHECK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t backend, device;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_get_backend(&backend));
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &info));
    g_host_backend = backend == GPUMEM_BACKEND_HOST;

    /* What produced these numbers, to paste with them. */
    char date[64];
    time_t t = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
    int32_t v = gpumem_version();
    printf("command:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\ndate:    %s\n", date);
    printf("gpumem:  %d.%d.%d, backend %s\n", v / 10000, v / 100 % 100, v % 100, gpumem_backend_name(backend));
    printf("device:  %d: %s (%s), %llu MiB; pools %s\n", device, info.name, info.arch_name,
           (unsigned long long)(info.total_memory >> 20),
           info.memory_pools == GPUMEM_SUPPORT_NATIVE ? "native" : "gpumem's own (emulated)");
    if (!g_host_backend)
        printf("note:    baseline is gpumem_malloc/gpumem_free (the vendor's synchronous allocator)\n");

    /* (a) and (b) measure the cached path: the default pool keeps what is freed. */
    gpumem_pool_t pool;
    uint64_t keep = UINT64_MAX;
    CHECK(gpumem_device_get_pool(&pool, device));
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    if (g_own_pool_wanted) {
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.device = device;
        props.implementation = GPUMEM_POOL_BUILTIN;
        CHECK(gpumem_pool_create(&g_own_pool, &props));
        CHECK(gpumem_pool_set_attribute(g_own_pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
        printf("pool:    (a) and (b) from a pool of gpumem's own (gpumem_malloc_from_pool_async)\n");
    }

    if (part_wanted('a'))
        bench_pairs();
    fflush(stdout);
    if (part_wanted('b'))
        bench_threads(max_threads);
    if (g_own_pool) {
        CHECK(gpumem_pool_destroy(g_own_pool));
        g_own_pool = NULL;
    }
    if (part_wanted('c'))
        bench_random();
    fflush(stdout);
    if (part_wanted('d'))
        bench_tracing();

    CHECK(gpumem_finalize());
    return 0;
}
