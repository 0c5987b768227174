/*
 * trace_workload: the program the trace and snapshot fixtures of tests/data
 * are recorded from, and that tests/replay and tests/viz record again at run
 * time (GPUMEM_TRACE, GPUMEM_BACKTRACE=1), so that every kind's events come
 * from the library, never from a generator.
 *
 *   trace_workload [STEPS [SNAPSHOT.json]]
 *
 * A small training loop over every kind gpumem traces.  Start-up: weights
 * (device), a managed table, a registered and a pinned host buffer, an
 * embedding table from the managed pool.  Each of STEPS steps (default 3): a
 * batch staged in a block of the pinned pool, activations and gradients from
 * the device pool on two streams, a growable buffer of metrics that grows,
 * and a cache that grows in a VMM range by one mapping (every other handle is
 * released while mapped, the rest at the end).  At the end the cache is
 * unmapped by one call, the buffer destroyed, the pools trimmed; the weights
 * and tables stay live and the program exits without gpumem_finalize, so the
 * trace, written at exit, ends with them live.  SNAPSHOT: the state in the
 * middle step, its activations live, written with gpumem_snapshot_write_json.
 *
 * It keeps its own count of the bytes it holds by address (as the trace
 * counts them: each mapping, each buffer extent, each block at its requested
 * size) and prints it last:
 *
 *   trace_workload: peak P bytes live; N allocations of B bytes live at exit
 *
 * which the tests compare with what gpumem-viz and gpumem-replay make of the
 * trace.  Without native VMM the cache is skipped (the buffer then uses the
 * allocate-copy-free fallback); a feature refused exits 77.
 *
 * SPDX-License-Identifier: MIT
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem/gpumem.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        gpumem_status_t st_ = (call);                                                              \
        if (st_ != GPUMEM_SUCCESS) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, gpumem_status_string(st_), \
                    gpumem_last_error_message());                                                  \
            exit(st_ == GPUMEM_ERROR_NOT_SUPPORTED ? 77 : 1);                                      \
        }                                                                                          \
    } while (0)

/* Sizes are whole size classes of gpumem's pool (multiples of 128 KiB below 4 MiB), so that
 * gpumem-replay's peak used, which counts the blocks' class sizes, equals the trace's peak. */
enum { MAX_STEPS = 12, LAYERS = 6 };

/* What the program holds by address, by its own count. */
static uint64_t g_live, g_peak, g_count;

static void held(size_t bytes)
{
    g_live += bytes;
    g_count++;
    if (g_live > g_peak)
        g_peak = g_live;
}

static void let_go(size_t bytes)
{
    g_live -= bytes;
    g_count--;
}

static void *device_alloc(size_t bytes)
{
    void *p = NULL;
    CHECK(gpumem_malloc(&p, bytes));
    held(bytes);
    return p;
}

static void *block(size_t bytes, gpumem_pool_t pool, gpumem_stream_t stream)
{
    void *p = NULL;
    CHECK(gpumem_malloc_from_pool_async(&p, bytes, pool, stream));
    held(bytes);
    return p;
}

static void block_free(void *p, size_t bytes, gpumem_stream_t stream)
{
    CHECK(gpumem_free_async(p, stream));
    let_go(bytes);
}

/* The cache: a VMM range that grows by one mapping of `chunk` bytes per step. */
struct cache {
    char *base;
    size_t chunk, reserved, mapped;
    gpumem_mem_handle_t held_handles[MAX_STEPS];
    int nheld;
};

static void cache_grow(struct cache *c, int32_t device, int step)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = device;
    gpumem_mem_handle_t h;
    CHECK(gpumem_mem_create(&h, c->chunk, &props));
    CHECK(gpumem_mem_map(c->base + c->mapped, c->chunk, 0, h));
    held(c->chunk);
    gpumem_access_desc_t rw = {device, GPUMEM_ACCESS_READWRITE};
    CHECK(gpumem_mem_set_access(c->base + c->mapped, c->chunk, &rw, 1));
    CHECK(gpumem_memset(c->base + c->mapped, step, c->chunk));
    c->mapped += c->chunk;
    /* The mapping keeps the memory alive: a handle may go at once or later. */
    if (step % 2 == 0)
        CHECK(gpumem_mem_release(h));
    else
        c->held_handles[c->nheld++] = h;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    const char *snapshot_path = argc > 2 ? argv[2] : NULL;
    if (steps < 1 || steps > MAX_STEPS) {
        fprintf(stderr, "usage: trace_workload [STEPS (1 to %d) [SNAPSHOT.json]]\n", MAX_STEPS);
        return 2;
    }
    int32_t device;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &info));
    gpumem_pool_t device_pool, pinned_pool, managed_pool;
    CHECK(gpumem_device_get_default_pool(&device_pool, device));
    CHECK(gpumem_get_default_pool_for(&pinned_pool, GPUMEM_POOL_MEMORY_PINNED, -1));
    CHECK(gpumem_get_default_pool_for(&managed_pool, GPUMEM_POOL_MEMORY_MANAGED, device));
    gpumem_stream_t compute, copy;
    CHECK(gpumem_stream_create(&compute));
    CHECK(gpumem_stream_create(&copy));

    /* Start-up: what stays live to the end (sizes all different: the largest is one allocation). */
    static const size_t weight_sizes[] = {12 << 20, 8 << 20, 5 << 20, 4 << 20};
    for (size_t i = 0; i < sizeof weight_sizes / sizeof weight_sizes[0]; i++)
        device_alloc(weight_sizes[i]);
    void *managed = NULL;
    CHECK(gpumem_managed_alloc(&managed, 6 << 20, 0));
    held(6 << 20);
    void *embeddings = block(3 << 20, managed_pool, compute);
    const size_t registered_bytes = 1 << 20;
    void *host = NULL;
    if (posix_memalign(&host, 4096, registered_bytes) != 0) {
        fprintf(stderr, "trace_workload: out of host memory\n");
        return 1;
    }
    CHECK(gpumem_host_register(host, registered_bytes, 0));
    held(registered_bytes);
    void *staging = NULL;
    CHECK(gpumem_host_alloc(&staging, 512 << 10, 0));
    held(512 << 10);
    (void)embeddings;

    struct cache cache = {0};
    const int vmm = info.virtual_memory == GPUMEM_SUPPORT_NATIVE;
    if (vmm) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        props.device = device;
        CHECK(gpumem_mem_get_granularity(&cache.chunk, &props, GPUMEM_GRANULARITY_RECOMMENDED));
        cache.reserved = (size_t)MAX_STEPS * cache.chunk;
        CHECK(gpumem_mem_address_reserve((void **)&cache.base, cache.reserved, 0, NULL));
    }
    gpumem_buffer_t metrics;
    size_t metrics_size = 256 << 10;
    CHECK(gpumem_buffer_create(&metrics, metrics_size, 64 << 20, device));
    held(metrics_size);

    for (int step = 1; step <= steps; step++) {
        const size_t batch_bytes = (size_t)(1 + step % 3) << 20;
        void *batch = block(batch_bytes, pinned_pool, copy);
        CHECK(gpumem_memset_async(batch, step, batch_bytes, copy));
        CHECK(gpumem_stream_synchronize(copy));

        void *acts[LAYERS];
        size_t act_bytes[LAYERS];
        for (int l = 0; l < LAYERS; l++) {
            act_bytes[l] = (size_t)(l + 1 + step % 3) * (256 << 10);
            acts[l] = block(act_bytes[l], device_pool, compute);
            if (l % 2 == 1) { /* a temporary, freed at once */
                void *tmp = block(96 << 10, device_pool, compute);
                block_free(tmp, 96 << 10, compute);
            }
        }
        block_free(batch, batch_bytes, copy);
        if (step == (steps + 1) / 2 && snapshot_path) {
            gpumem_snapshot_t *snap = NULL;
            CHECK(gpumem_snapshot_take(&snap));
            CHECK(gpumem_snapshot_write_json(snap, snapshot_path));
            CHECK(gpumem_snapshot_release(snap));
        }
        void *grads[LAYERS];
        size_t grad_bytes[LAYERS];
        for (int l = LAYERS - 1; l >= 0; l--) {
            grad_bytes[l] = act_bytes[l] / 2;
            grads[l] = block(grad_bytes[l], device_pool, compute);
            block_free(acts[l], act_bytes[l], compute);
        }
        for (int l = 0; l < LAYERS; l++)
            block_free(grads[l], grad_bytes[l], l % 3 == 0 ? copy : compute);
        CHECK(gpumem_stream_synchronize(compute));

        if (vmm)
            cache_grow(&cache, device, step);
        /* A resize is a free of the old extent and an allocation of the new. */
        let_go(metrics_size);
        metrics_size += 256 << 10;
        CHECK(gpumem_buffer_resize(metrics, metrics_size));
        held(metrics_size);
        if (step % 2 == 0)
            CHECK(gpumem_pool_trim_to(device_pool, 4 << 20));
    }
    CHECK(gpumem_device_synchronize());

    /* The end: one unmap covers every mapping; then the handles, the range, the buffer. */
    if (vmm) {
        CHECK(gpumem_mem_unmap(cache.base, cache.mapped));
        for (size_t at = 0; at < cache.mapped; at += cache.chunk)
            let_go(cache.chunk);
        for (int i = 0; i < cache.nheld; i++)
            CHECK(gpumem_mem_release(cache.held_handles[i]));
        CHECK(gpumem_mem_address_free(cache.base, cache.reserved));
    }
    let_go(metrics_size);
    CHECK(gpumem_buffer_resize(metrics, 128 << 10));
    held(128 << 10);
    CHECK(gpumem_buffer_destroy(metrics));
    let_go(128 << 10);
    CHECK(gpumem_host_free(staging));
    let_go(512 << 10);
    CHECK(gpumem_host_unregister(host));
    let_go(registered_bytes);
    free(host);
    CHECK(gpumem_pool_trim_to(device_pool, 0));
    CHECK(gpumem_pool_trim_to(pinned_pool, 0));
    CHECK(gpumem_stream_destroy(compute));
    CHECK(gpumem_stream_destroy(copy));
    printf("trace_workload: %d steps, VMM %s\n", steps, vmm ? "mapped" : "not native (skipped)");
    printf("trace_workload: peak %" PRIu64 " bytes live; %" PRIu64 " allocations of %" PRIu64
           " bytes live at exit\n", g_peak, g_count, g_live);
    return 0;
}
