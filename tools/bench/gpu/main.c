/*
 * gpumem-bench-gpu: what gpumem costs on a CUDA GPU, against the driver call
 * it stands for, both measured in the same run.
 *
 *   (a) gpumem_malloc + gpumem_free  vs  cuMemAlloc + cuMemFree (1 MiB, 64 MiB)
 *   (b) gpumem_malloc_async + gpumem_free_async on the default (native) pool
 *       vs  cuMemAllocAsync + cuMemFreeAsync on the driver's default pool
 *       (release threshold UINT64_MAX for both: cached sizes)
 *   (c) a GPUMEM_POOL_BUILTIN pool (gpumem's own allocator) vs the same driver
 *       calls; target: gpumem <= 0.10x the driver's time
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
 *   (m) the driver alone: its own cost per call (cuEventQuery,
 *       cuStreamWaitEvent, a pool pair) with work done between its calls
 *       (cache lines stored, code run), against nothing between them: the
 *       floor under part (h)'s ratios.  No gpumem code; no target.
 *   (n) streams, events, rows and boxes (0.5): a timing-free event's record + query vs
 *       cuEventRecord + cuEventQuery (target 1.03x), gpumem_memcpy_2d_async (small: enqueueing;
 *       large: until done) vs cuMemcpy2DAsync and gpumem_memset_d32_async vs cuMemsetD32Async
 *       (target 1.05x); memset_2d and a 3-D copy for information (tools/device/rows.sh runs it)
 *
 * The driver is loaded as gpumem's cuda backend loads it, from the same list
 * of entry points (driver.c), never linked.  gpumem runs on the cuda backend
 * and shares device 0's primary context, which this program retains.  Every figure is the median of repeated runs, the two
 * sides interleaved within each run.  Each part stands alone: one that fails
 * says why, and the others still run (exit status 1 then).
 *
 * Files: main.c (options, header, the parts in order), harness.c (rounds,
 * medians, ratios, targets), driver.c (the driver), and one file per kind of
 * measurement: alloc.c (a-c), copies.c (d, j), vmm.c (e, l), pinned.c (f, k),
 * multi_gpu.c (g), thin.c (h), threads.c (i), floor.c (m), rows.c (n).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_gpu.h"

static void usage(const char *argv0)
{
    printf("usage: %s [--quick] [--parts LETTERS] [--any-backend]\n"
           "  --quick          short runs (5 repetitions, growth to 2 GiB): a smoke test, not a result\n"
           "  --parts LETTERS  run only these parts, e.g. --parts ad (default abcdefghijklmn; g needs two GPUs)\n"
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

int main(int argc, char **argv)
{
    const char *parts = "abcdefghijklmn";
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
            if (parts[strspn(parts, "abcdefghijklmn")] != 0 || !*parts) {
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
                {'h', part_h}, {'i', part_i}, {'j', part_j}, {'k', part_k}, {'l', part_l}, {'m', part_m},
                {'n', part_n}};
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

