/*
 * The simplest cached allocator behind PyTorch's CUDAPluggableAllocator, to
 * measure what that interface itself costs (tools/bench/bench-frameworks.py,
 * configuration `pluggable-ceiling`).  Whatever gap remains between it and
 * PyTorch's own caching allocator belongs to the interface, not to gpumem.
 *
 * How: a freed block goes on a list of its rounded size and the next request
 * of that size takes it back; nothing is split, coalesced or given back, and
 * streams are ignored (the benchmark's model runs on one stream, where stream
 * order makes reuse safe).  New blocks come from cuMemAlloc, loaded with
 * dlopen so that this builds without the CUDA toolkit.  Not for real use:
 * its peak memory is every size's high-water mark added up.
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
static mem_alloc_fn g_mem_alloc;

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

static int load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib)
        g_mem_alloc = (mem_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
    if (!g_mem_alloc)
        fprintf(stderr, "pluggable_ceiling: cannot load cuMemAlloc_v2 from libcuda.so.1\n");
    return g_mem_alloc != NULL;
}

void *ceiling_malloc(ssize_t size, int device, void *stream)
{
    (void)device;
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
    if ((!g_mem_alloc && !load_driver()) || g_mem_alloc(&dptr, want) != 0)
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
