/*
 * gpumem-bench-copies: what gpumem_memcpy costs by the kind of host memory on either side, on
 * whatever backend gpumem_init picks (docs/benchmarks.md, "Copies and host memory").
 *
 * For each size: device <- pinned, device <- pageable (malloc), pinned <- device, pageable <-
 * device, and a copy between two stack buffers (64 bytes only), each the median of --runs
 * timed copies after one untimed one, beside libc memcpy between the same host buffers in the
 * same run (the ratio column).  Every buffer is written before timing, so no first-touch page
 * fault is counted.
 *
 *   gpumem-bench-copies [--runs N] [--max-mib M]
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem/gpumem.h>

#include "bench_util.h"

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        gpumem_status_t st_ = (call);                                                                        \
        if (st_ != GPUMEM_SUCCESS) {                                                                         \
            fprintf(stderr, "gpumem-bench-copies: %s: %s: %s\n", #call, gpumem_status_string(st_),          \
                    gpumem_last_error_message());                                                            \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

enum { MAX_RUNS = 101 };

static double time_copy(void *dst, const void *src, size_t n, int runs, int libc)
{
    double t[MAX_RUNS];
    for (int r = -1; r < runs; ++r) {
        double t0 = now_ns();
        if (libc)
            memcpy(dst, src, n);
        else
            CHECK(gpumem_memcpy(dst, src, n));
        double t1 = now_ns();
        if (r >= 0)
            t[r] = t1 - t0;
    }
    return median(t, runs);
}

static void row(const char *what, size_t n, double ns, double libc_ns)
{
    printf("%-28s %12zu %14.0f %12.2f %10.2f\n", what, n, ns, n / ns, libc_ns > 0 ? ns / libc_ns : 0.0);
}

int main(int argc, char **argv)
{
    int runs = 9;
    size_t max_mib = 256;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--max-mib") == 0 && i + 1 < argc) {
            max_mib = (size_t)strtoull(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "gpumem-bench-copies: unknown option '%s'\n"
                            "usage: gpumem-bench-copies [--runs N (1-%d)] [--max-mib M]\n", argv[i], MAX_RUNS);
            return 2;
        }
    }
    if (runs < 1 || runs > MAX_RUNS || max_mib < 1) {
        fprintf(stderr, "gpumem-bench-copies: --runs takes 1 to %d, --max-mib at least 1\n", MAX_RUNS);
        return 2;
    }
    CHECK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t backend = 0, device = 0;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_get_backend(&backend));
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &info));
    printf("gpumem-bench-copies --runs %d --max-mib %zu\n", runs, max_mib);
    printf("gpumem %d, backend %s, device %d: %s\n", gpumem_version(), gpumem_backend_name(backend), device,
           info.name);
    printf("%-28s %12s %14s %12s %10s\n", "copy (dst <- src)", "bytes", "median ns", "GB/s", "x memcpy");
    const size_t max = max_mib << 20;
    void *dev = NULL, *pinned = NULL;
    CHECK(gpumem_malloc(&dev, max));
    CHECK(gpumem_host_alloc(&pinned, max, 0));
    char *pageable = malloc(max), *pageable2 = malloc(max);
    if (!pageable || !pageable2) {
        fprintf(stderr, "gpumem-bench-copies: cannot allocate 2 x %zu MiB of host memory; pass a smaller --max-mib\n",
                max_mib);
        return 1;
    }
    memset(pageable, 1, max);
    memset(pageable2, 2, max);
    memset(pinned, 3, max);
    CHECK(gpumem_memset(dev, 4, max));
    static const size_t sizes[] = {64, 4096, 1 << 20, 16 << 20, 256 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const size_t n = sizes[k];
        if (n > max)
            break;
        const double libc = time_copy(pageable2, pageable, n, runs, 1);
        row("libc memcpy, pageable", n, libc, libc);
        row("device <- pinned", n, time_copy(dev, pinned, n, runs, 0), libc);
        row("device <- pageable", n, time_copy(dev, pageable, n, runs, 0), libc);
        row("pinned <- device", n, time_copy(pinned, dev, n, runs, 0), libc);
        row("pageable <- device", n, time_copy(pageable, dev, n, runs, 0), libc);
        row("pageable <- pinned", n, time_copy(pageable, pinned, n, runs, 0), libc);
        if (n == 64) {
            unsigned char a[64], b[64];
            memset(a, 5, sizeof a);
            memset(b, 6, sizeof b);
            row("stack <- stack", n, time_copy(b, a, n, runs, 0), libc);
        }
    }
    free(pageable);
    free(pageable2);
    CHECK(gpumem_host_free(pinned));
    CHECK(gpumem_free(dev));
    return gpumem_finalize() == GPUMEM_SUCCESS ? 0 : 1;
}
