/* machine-scaling: how far this machine's cores scale on their own, for
 * reading gpumem-bench-gpu's part (i) (docs/benchmarks.md, "Issue 10, seventh
 * session").  No gpumem code runs here.
 *
 *   cc -O2 -pthread -o machine-scaling tools/machine-scaling.c && ./machine-scaling
 *
 * 1, 2, 4, 8 and 16 threads, each alone on its data, doing: libc's malloc
 * and free (the sizes of part (i)); the same plus three locked exchanges on
 * the thread's own cache lines (what a pool's locks cost when uncontended);
 * and reads of three clocks (CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC, rdtsc).
 * Prints the aggregate rate and the speed-up over one thread (best of 3),
 * and each clock's ns per read per thread. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#endif

enum { MAX_THREADS = 16, PAIRS = 2000000, READS = 2000000 };
enum { LIBC, LIBC_XCHG, CLOCK_COARSE, CLOCK_PRECISE, CLOCK_TSC, WORKS };
static const char *work_names[WORKS] = {"libc malloc+free", "  + 3 locked exchanges", "CLOCK_MONOTONIC_COARSE",
                                        "CLOCK_MONOTONIC", "rdtsc"};

struct lane {
    _Alignas(128) atomic_int locks[3];
    double ns; /* this thread's ns per iteration */
};
static struct lane g_lanes[MAX_THREADS];
static int g_work;
static atomic_int g_go, g_ready;
static volatile uint64_t g_sink;

static void *worker(void *arg)
{
    static const size_t sizes[4] = {256, 4096, 64 << 10, 1 << 20};
    struct lane *l = arg;
    struct timespec t;
    uint64_t sum = 0;
    const long n = g_work <= LIBC_XCHG ? PAIRS : READS;
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_go))
        ;
    const double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        switch (g_work) {
        case LIBC_XCHG:
            for (int k = 0; k < 3; k++) {
                while (atomic_exchange_explicit(&l->locks[k], 1, memory_order_acquire))
                    ;
                atomic_store_explicit(&l->locks[k], 0, memory_order_release);
            }
            /* fall through */
        case LIBC: {
            void *p = malloc(sizes[i & 3]);
            if (!p)
                abort();
            ((volatile char *)p)[0] = 1;
            free(p);
            break;
        }
        case CLOCK_COARSE:
            clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
            sum += (uint64_t)t.tv_nsec;
            break;
        case CLOCK_PRECISE:
            clock_gettime(CLOCK_MONOTONIC, &t);
            sum += (uint64_t)t.tv_nsec;
            break;
        default:
#ifdef HAVE_RDTSC
            sum += __rdtsc();
#endif
            break;
        }
    }
    l->ns = (now_ns() - t0) / n;
    g_sink += sum;
    return NULL;
}

/* Aggregate million iterations per second; *mean_ns: the threads' mean ns per iteration. */
static double run(int threads, double *mean_ns)
{
    pthread_t tid[MAX_THREADS];
    atomic_store(&g_go, 0);
    atomic_store(&g_ready, 0);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, &g_lanes[i]) != 0)
            abort();
    while (atomic_load(&g_ready) < threads)
        ;
    const double t0 = now_ns();
    atomic_store(&g_go, 1);
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    const long n = g_work <= LIBC_XCHG ? PAIRS : READS;
    double sum = 0;
    for (int i = 0; i < threads; i++)
        sum += g_lanes[i].ns;
    *mean_ns = sum / threads;
    return threads * (double)n / ((now_ns() - t0) / 1e9) / 1e6;
}

int main(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char source[64] = "unknown";
    if (f) {
        if (fscanf(f, "%63s", source) != 1)
            source[0] = 0;
        fclose(f);
    }
    printf("clock source: %s\n", source);
    for (g_work = 0; g_work < WORKS; g_work++) {
#ifndef HAVE_RDTSC
        if (g_work == CLOCK_TSC)
            continue;
#endif
        double one = 0;
        printf("  %-24s", work_names[g_work]);
        for (int t = 1; t <= MAX_THREADS; t *= 2) {
            double best = 0, best_ns = 0, ns;
            for (int r = 0; r < 3; r++) {
                const double rate = run(t, &ns);
                if (rate > best) {
                    best = rate;
                    best_ns = ns;
                }
            }
            if (t == 1)
                one = best;
            if (g_work <= LIBC_XCHG)
                printf("  %2dT %6.1f M/s (%5.2fx)", t, best, best / one);
            else
                printf("  %2dT %7.1f ns", t, best_ns);
        }
        printf("\n");
    }
    return 0;
}
