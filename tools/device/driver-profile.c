/* driver-profile: counts and times every CUDA driver call gpumem makes.
 *
 * Why: a benchmark says gpumem is slower than its peer; this says which driver
 * calls gpumem made on the way, how many and how long they took, so the cost
 * can be put where it belongs.
 *
 * How: a library that stands in for libcuda.so.1 (GPUMEM_CUDA_LIBRARY points
 * to it).  gpumem takes cuInit and cuDriverGetVersion by name and everything
 * else through cuGetProcAddress_v2; this library answers those from the real
 * driver (DRIVER_PROFILE_REAL, default libcuda.so.1) but hands out, for each
 * symbol, a forwarder of its own that counts and times the call.  At exit it
 * writes one line per function (calls, total and mean ns) to stderr, or to
 * the file DRIVER_PROFILE_OUT names; driver_profile_mark(TAG) writes the
 * same lines at a point of the program's choosing.
 *
 * Limits: x86-64 and aarch64 only (the forwarders pass eight integer or
 * pointer arguments through, which covers every entry point gpumem resolves:
 * none takes more than eight, a float, or a struct larger than 16 bytes);
 * 256 distinct symbols; two clock reads per call (about 40 ns), so the times
 * of the cheapest calls are upper bounds.  Not for figures: for attribution.
 *
 * Build: cc -O2 -shared -fPIC -o libdriverprofile.so driver-profile.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint64_t (*fn8)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
typedef int (*proc_v2)(const char *, void **, int, uint64_t, int *);

enum { kSlots = 256 };
static struct {
    char name[64];
    fn8 real;
    _Atomic uint64_t calls, ns;
} slots[kSlots];
static _Atomic int used;
static void *real_lib;

static void *real_symbol(const char *name)
{
    if (!real_lib) {
        const char *path = getenv("DRIVER_PROFILE_REAL");
        real_lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!real_lib) {
            fprintf(stderr, "driver-profile: cannot open the real driver: %s\n", dlerror());
            abort();
        }
    }
    return dlsym(real_lib, name);
}

static inline uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#define FORWARDER(tag, i)                                                                               \
    static uint64_t fwd##tag(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f,      \
                             uint64_t g, uint64_t h)                                                    \
    {                                                                                                   \
        const uint64_t t0 = now_ns();                                                                   \
        const uint64_t r = slots[i].real(a, b, c, d, e, f, g, h);                                       \
        atomic_fetch_add_explicit(&slots[i].ns, now_ns() - t0, memory_order_relaxed);                  \
        atomic_fetch_add_explicit(&slots[i].calls, 1, memory_order_relaxed);                           \
        return r;                                                                                       \
    }
/* 256 forwarders, fwd_a_b_c_d for slot 64a + 16b + 4c + d, and their table in slot order. */
#define F4(t, i) FORWARDER(t##_0, (i) + 0) FORWARDER(t##_1, (i) + 1) FORWARDER(t##_2, (i) + 2) FORWARDER(t##_3, (i) + 3)
#define F16(t, i) F4(t##_0, (i) + 0) F4(t##_1, (i) + 4) F4(t##_2, (i) + 8) F4(t##_3, (i) + 12)
#define F64(t, i) F16(t##_0, (i) + 0) F16(t##_1, (i) + 16) F16(t##_2, (i) + 32) F16(t##_3, (i) + 48)
F64(_0, 0)
F64(_1, 64)
F64(_2, 128)
F64(_3, 192)
#define A4(t) (fn8) fwd##t##_0, (fn8)fwd##t##_1, (fn8)fwd##t##_2, (fn8)fwd##t##_3,
#define A16(t) A4(t##_0) A4(t##_1) A4(t##_2) A4(t##_3)
#define A64(t) A16(t##_0) A16(t##_1) A16(t##_2) A16(t##_3)
static const fn8 forwarders[kSlots] = {A64(_0) A64(_1) A64(_2) A64(_3)};

/* The forwarder of `name` (one slot per name), or the real function when the slots ran out. */
static void *forwarder_for(const char *name, void *real)
{
    static _Atomic int lock;
    while (atomic_exchange(&lock, 1))
        ;
    int n = atomic_load(&used), i = 0;
    for (; i < n; ++i)
        if (strcmp(slots[i].name, name) == 0)
            break;
    if (i == n && n < kSlots) {
        snprintf(slots[n].name, sizeof slots[n].name, "%s", name);
        slots[n].real = (fn8)real;
        atomic_store(&used, n + 1);
    }
    atomic_store(&lock, 0);
    return i < kSlots ? (void *)forwarders[i] : real;
}

int cuInit(unsigned int flags) { return ((int (*)(unsigned))real_symbol("cuInit"))(flags); }
int cuDriverGetVersion(int *v) { return ((int (*)(int *))real_symbol("cuDriverGetVersion"))(v); }

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    const int r = ((proc_v2)real_symbol("cuGetProcAddress_v2"))(symbol, pfn, version, flags, status);
    if (r == 0 && pfn && *pfn)
        *pfn = forwarder_for(symbol, *pfn);
    return r;
}

/* The counts so far, each line headed `head` ("driver-profile:" at exit). */
static void write_counts(const char *head)
{
    const char *path = getenv("DRIVER_PROFILE_OUT");
    FILE *out = path && *path ? fopen(path, "a") : stderr;
    if (!out)
        out = stderr;
    fprintf(out, "%s %-40s %12s %14s %10s\n", head, "function", "calls", "total ns", "mean ns");
    for (int i = 0; i < atomic_load(&used); ++i) {
        const uint64_t calls = atomic_load(&slots[i].calls), ns = atomic_load(&slots[i].ns);
        if (calls)
            fprintf(out, "%s %-40s %12llu %14llu %10.0f\n", head, slots[i].name, (unsigned long long)calls,
                    (unsigned long long)ns, (double)ns / (double)calls);
    }
    if (out != stderr)
        fclose(out);
}

/* A program's own mark (through dlsym or ctypes): the counts so far, headed
 * "driver-profile@TAG:", so that two marks around a loop give its calls
 * without the set-up's and the exit's. */
__attribute__((visibility("default"))) void driver_profile_mark(const char *tag)
{
    char head[80];
    snprintf(head, sizeof head, "driver-profile@%.60s:", tag ? tag : "mark");
    write_counts(head);
}

__attribute__((destructor)) static void report(void) { write_counts("driver-profile:"); }
