/*
 * gpumem-bench-gpu, virtual memory:
 *   (e) growing a buffer by doubling: gpumem_buffer_resize vs raw VMM vs
 *       allocate + copy + free; time and peak device memory of each step
 *   (l) what one VMM page costs the driver (no target)
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"

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

int part_e(void)
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
/* (l) what one VMM page costs the driver                                   */
/* ------------------------------------------------------------------------ */

#define PAGES_TIMED 64

/* Back PAGES_TIMED pages of `gran` at va one by one (the own pool's way), each
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
    for (int i = 0; i < PAGES_TIMED; i++) {
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
    for (int i = 0; i < PAGES_TIMED; i++)
        CU(drv.cuMemUnmap(va + i * gran, gran));
    t[4] = now_ns() - t0;
    for (int k = 0; k < 5; k++)
        t[k] /= PAGES_TIMED;
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
    for (int i = 0; i < PAGES_TIMED; i++) {
        CU(drv.cuMemCreate(&h, gran, prop, 0));
        CU(drv.cuMemMap(va + i * gran, gran, 0, h, 0));
        CU(drv.cuMemRelease(h));
    }
    double t0 = now_ns();
    CU(drv.cuMemSetAccess(va, gran * PAGES_TIMED, access, 1));
    t[0] = (now_ns() - t0) / PAGES_TIMED;
    t0 = now_ns();
    CU(drv.cuMemUnmap(va, gran * PAGES_TIMED));
    t[1] = (now_ns() - t0) / PAGES_TIMED;
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
    const size_t bytes = gran * PAGES_TIMED;
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
        t[k] /= PAGES_TIMED;
    ok = 1;
out:
    return ok;
}

int part_l(void)
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
    CU(drv.cuMemAddressReserve(&va, gran * PAGES_TIMED, gran, 0, 0));
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
        CU(drv.cuMemAlloc(&p, gran * PAGES_TIMED));
        plain[0][r] = (now_ns() - t0) / PAGES_TIMED;
        t0 = now_ns();
        CU(drv.cuMemFree(p));
        plain[1][r] = (now_ns() - t0) / PAGES_TIMED;
    }
    static const char *names[5] = {"cuMemCreate", "cuMemMap", "cuMemRelease (mapped)", "cuMemSetAccess",
                                   "cuMemUnmap"};
    printf("    page: %zu KiB\n", gran >> 10);
    for (int k = 0; k < 5; k++)
        printf("    %-24s %10.0f ns  (device idle)\n", names[k], median(rounds[0][k], 5));
    printf("    %-24s %10.0f ns  (device busy with 8 GiB of fills on another stream)\n", "cuMemUnmap",
           median(rounds[1][4], 5));
    printf("    %-24s %10.0f ns  (one call for %d pages, per page)\n", "cuMemSetAccess", median(batched[0], 5),
           PAGES_TIMED);
    printf("    %-24s %10.0f ns  (one call for %d pages, per page)\n", "cuMemUnmap", median(batched[1], 5), PAGES_TIMED);
    for (int k = 0; k < 5; k++)
        printf("    %-24s %10.0f ns  (one allocation of %d pages, per page)\n", names[k], median(whole[k], 5), PAGES_TIMED);
    printf("    %-24s %10.0f ns  (%d pages' bytes at once, per page)\n", "cuMemAlloc", median(plain[0], 5), PAGES_TIMED);
    printf("    %-24s %10.0f ns  (%d pages' bytes at once, per page)\n", "cuMemFree", median(plain[1], 5), PAGES_TIMED);
    printf("    back + give back one page: %.0f ns\n",
           median(rounds[0][0], 5) + median(rounds[0][1], 5) + median(rounds[0][2], 5) + median(rounds[0][3], 5) +
               median(rounds[0][4], 5));
    ok = 1;
out:
    if (fill)
        drv.cuMemFree(fill);
    if (va)
        drv.cuMemAddressFree(va, gran * PAGES_TIMED);
    return ok;
}
