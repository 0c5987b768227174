/*
 * The simplest cached allocator behind PyTorch's CUDAPluggableAllocator, to
 * measure what that interface itself costs (tools/bench/bench-frameworks.py,
 * configuration `pluggable-ceiling`).  Whatever gap remains between it and
 * PyTorch's own caching allocator belongs to the interface, not to gpumem.
 *
 * How: a freed block goes on a list of its rounded size and the next request
 * of that size takes it back; nothing is split or coalesced, and
 * streams are ignored (the benchmark's model runs on one stream, where stream
 * order makes reuse safe).  New blocks come from cuMemAlloc, loaded with
 * dlopen so that this builds without the CUDA toolkit.  Not for real use:
 * it keeps every size's blocks until an allocation fails, then gives all back.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

typedef int (*mem_alloc_fn)(unsigned long long *dptr, size_t bytes);
typedef int (*mem_free_fn)(unsigned long long dptr);
typedef int (*ctx_sync_fn)(void);
typedef int (*ctx_get_fn)(void **ctx);
typedef int (*ctx_set_fn)(void *ctx);
typedef int (*device_get_fn)(int *dev, int ordinal);
typedef int (*primary_retain_fn)(void **ctx, int dev);

enum { k_bins = 4096 }; /* open addressing over rounded sizes; a model has far fewer */

struct block {
    void *ptr;
    struct block *next;
};

static struct bin {
    size_t size; /* 0: empty slot */
    struct block *free;
} g_bins[k_bins];
static struct block *g_spare; /* list nodes no bin holds */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_loaded = PTHREAD_ONCE_INIT; /* PyTorch allocates from several threads */
static mem_alloc_fn g_mem_alloc;
static mem_free_fn g_mem_free;
static ctx_sync_fn g_ctx_sync;
static ctx_get_fn g_ctx_get;
static ctx_set_fn g_ctx_set;
static device_get_fn g_device_get;
static primary_retain_fn g_primary_retain;

/* 512 B steps up to 1 MiB, 2 MiB steps above: sizes that recur meet again. */
static size_t rounded(size_t size)
{
    const size_t step = size <= ((size_t)1 << 20) ? 512 : ((size_t)2 << 20);
    return size == 0 ? step : (size + step - 1) / step * step;
}

static struct bin *bin_of(size_t size)
{
    size_t i = (size / 512 * 0x9E3779B97F4A7C15ull) % k_bins;
    for (size_t probe = 0; probe < k_bins; ++probe, i = (i + 1) % k_bins) {
        if (g_bins[i].size == size || g_bins[i].size == 0) {
            g_bins[i].size = size;
            return &g_bins[i];
        }
    }
    return NULL;
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib) {
        g_mem_free = (mem_free_fn)dlsym(lib, "cuMemFree_v2");
        g_ctx_sync = (ctx_sync_fn)dlsym(lib, "cuCtxSynchronize");
        g_ctx_get = (ctx_get_fn)dlsym(lib, "cuCtxGetCurrent");
        g_ctx_set = (ctx_set_fn)dlsym(lib, "cuCtxSetCurrent");
        g_device_get = (device_get_fn)dlsym(lib, "cuDeviceGet");
        g_primary_retain = (primary_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain_v2");
        if (!g_primary_retain)
            g_primary_retain = (primary_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
        if (g_mem_free && g_ctx_sync && g_ctx_get && g_ctx_set && g_device_get && g_primary_retain)
            g_mem_alloc = (mem_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
    }
    if (!g_mem_alloc)
        fprintf(stderr, "pluggable_ceiling: cannot load the driver entries it needs from libcuda.so.1\n");
}

/* PyTorch's autograd threads select a device without making its context
 * current (the runtime does that lazily); the driver needs one. */
static int make_current(int device)
{
    void *ctx = NULL;
    if (g_ctx_get(&ctx) == 0 && ctx)
        return 1;
    int dev = 0;
    return g_device_get(&dev, device) == 0 && g_primary_retain(&ctx, dev) == 0 && g_ctx_set(ctx) == 0;
}

/* Out of memory: every cached block goes back to the driver (once the device
 * is idle, so that no queued work still uses one), as any caching allocator
 * does before it gives up. */
static void release_cached(void)
{
    g_ctx_sync();
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < k_bins; ++i) {
        while (g_bins[i].free) {
            struct block *n = g_bins[i].free;
            g_bins[i].free = n->next;
            g_mem_free((unsigned long long)(uintptr_t)n->ptr);
            n->next = g_spare;
            g_spare = n;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

void *ceiling_malloc(ssize_t size, int device, void *stream)
{
    (void)stream;
    const size_t want = rounded(size < 0 ? 0 : (size_t)size);
    void *ptr = NULL;
    pthread_mutex_lock(&g_lock);
    struct bin *b = bin_of(want);
    if (b && b->free) {
        struct block *n = b->free;
        b->free = n->next;
        ptr = n->ptr;
        n->next = g_spare;
        g_spare = n;
    }
    pthread_mutex_unlock(&g_lock);
    if (ptr)
        return ptr;
    unsigned long long dptr = 0;
    pthread_once(&g_loaded, load_driver);
    if (!g_mem_alloc || !make_current(device))
        return NULL;
    if (g_mem_alloc(&dptr, want) != 0 && (release_cached(), g_mem_alloc(&dptr, want) != 0))
        return NULL; /* PyTorch reports the out-of-memory */
    return (void *)(uintptr_t)dptr;
}

void ceiling_free(void *ptr, ssize_t size, int device, void *stream)
{
    (void)device;
    (void)stream;
    pthread_mutex_lock(&g_lock);
    struct block *n = g_spare;
    if (n)
        g_spare = n->next;
    else
        n = malloc(sizeof *n);
    struct bin *b = bin_of(rounded(size < 0 ? 0 : (size_t)size));
    if (n && b) {
        n->ptr = ptr;
        n->next = b->free;
        b->free = n;
    } else {
        free(n); /* the block is leaked: a benchmark's allocator runs out of bins only by misuse */
    }
    pthread_mutex_unlock(&g_lock);
}
