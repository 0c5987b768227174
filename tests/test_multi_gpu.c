/*
 * Multi-GPU: peer access, a pool of device 0 made accessible to device 1, a VMM range of
 * device 0 with access for device 1, managed memory prefetched to each device, copies between
 * the memory of two devices, a thread per device; every kind of memory, pool, stream and event
 * of one device used while another is current (core/placement.hpp); the runtime's own current
 * device (cudaSetDevice, a framework's threads) seen by gpumem and never changed by it.  Every case needs two devices
 * (the fake runtimes' multi-device configurations, or a machine with two GPUs): with fewer the
 * test exits 77.  Kernels reaching another device's memory are tests/gpu/multi_gpu_test.cu's.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/types.h>

static int32_t g_count;

#define NEED_TWO_DEVICES()                                                                                        \
    do {                                                                                                          \
        g_count = 0;                                                                                              \
        REQUIRE_OK(gpumem_device_count(&g_count));                                                                \
        if (g_count < 2)                                                                                          \
            SKIP("%d device(s): multi-GPU needs two", (int)g_count);                                              \
    } while (0)

static const size_t k_bytes = (size_t)1 << 20;

/* A device allocation of `n` bytes on `device` (the thread's current device becomes `device`). */
static void *malloc_on(int32_t device, size_t n)
{
    void *p = NULL;
    if (gpumem_set_device(device) != GPUMEM_SUCCESS || gpumem_malloc(&p, n) != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "cannot allocate %zu bytes on device %d: %s", n, (int)device,
                 gpumem_last_error_message());
        return NULL;
    }
    return p;
}

/* Peer access: statuses, idempotence, bad arguments, and the current device left alone. */
static void test_peer_access(void)
{
    NEED_TWO_DEVICES();
    int32_t can = -1;
    CHECK_OK(gpumem_device_can_access_peer(&can, 0, 0));
    CHECK(can == 0); /* a device is not its own peer */
    can = -1;
    CHECK_OK(gpumem_device_can_access_peer(&can, 0, 1));
    CHECK(can == 0 || can == 1);
    int32_t back = -1;
    CHECK_OK(gpumem_device_can_access_peer(&back, 1, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_can_access_peer(NULL, 0, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_can_access_peer(&can, g_count, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_can_access_peer(&can, 0, g_count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_can_access_peer(&can, -1, 0));

    REQUIRE_OK(gpumem_set_device(0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_enable_peer_access(0)); /* itself */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_disable_peer_access(0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_enable_peer_access(g_count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_enable_peer_access(-1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_disable_peer_access(g_count));
    if (!can) {
        /* No peer path between the devices: refused, and disabling is a no-op. */
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_device_enable_peer_access(1));
        CHECK_OK(gpumem_device_disable_peer_access(1));
        SKIP("device 0 cannot access device 1 (no peer path)");
    }
    CHECK_OK(gpumem_device_enable_peer_access(1));
    CHECK_OK(gpumem_device_enable_peer_access(1)); /* idempotent */
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == 0);
    /* Plain device memory of device 1, copied while device 0 is current (with peer access). */
    void *a = malloc_on(1, k_bytes);
    REQUIRE(a != NULL);
    REQUIRE_OK(gpumem_set_device(0));
    void *b = NULL;
    REQUIRE_OK(gpumem_malloc(&b, k_bytes));
    CHECK_OK(tst_upload(a, k_bytes, 11));
    CHECK_OK(gpumem_memcpy(b, a, k_bytes));
    CHECK(tst_download_verify(b, k_bytes, 11));
    CHECK_OK(gpumem_device_disable_peer_access(1));
    CHECK_OK(gpumem_device_disable_peer_access(1)); /* idempotent */
    /* Without peer access the copy still works (the runtime stages it). */
    CHECK_OK(gpumem_memset(b, 0, k_bytes));
    CHECK_OK(gpumem_memcpy(b, a, k_bytes));
    CHECK(tst_download_verify(b, k_bytes, 11));

    /* The other direction, from device 1. */
    REQUIRE_OK(gpumem_set_device(1));
    if (back) {
        CHECK_OK(gpumem_device_enable_peer_access(0));
        CHECK_OK(gpumem_get_device(&cur));
        CHECK(cur == 1);
        CHECK_OK(gpumem_device_disable_peer_access(0));
    }
    CHECK_OK(gpumem_free(a));
    CHECK_OK(gpumem_free(b));
    CHECK_OK(gpumem_set_device(0));
}

/* A pool of device 0 made accessible to device 1; its blocks copied from device 1. */
static void test_pool_access_from_peer(void)
{
    NEED_TWO_DEVICES();
    REQUIRE_OK(gpumem_set_device(0));
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE)
        SKIP("no pools on device 0 (level %d)", (int)info.memory_pools);
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 0;
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_pool_create(&pool, &props));
    int32_t flags = -1;
    CHECK_OK(gpumem_pool_get_access(&flags, pool, 0));
    CHECK(flags == GPUMEM_ACCESS_READWRITE);
    CHECK_OK(gpumem_pool_get_access(&flags, pool, 1));
    CHECK(flags == GPUMEM_ACCESS_NONE);
    /* Two descriptors at once: the owner (always READWRITE) and the peer. */
    gpumem_access_desc_t descs[2] = {{0, GPUMEM_ACCESS_READWRITE}, {1, GPUMEM_ACCESS_READWRITE}};
    CHECK_OK(gpumem_pool_set_access(pool, descs, 2));
    CHECK_OK(gpumem_pool_get_access(&flags, pool, 1));
    CHECK(flags == GPUMEM_ACCESS_READWRITE);

    void *p = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&p, k_bytes, pool, NULL));
    CHECK_OK(tst_upload(p, k_bytes, 21));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    CHECK(pi.device == 0);
    CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);

    /* Device 1 reads and writes it (copies to and from its own memory). */
    void *q = malloc_on(1, k_bytes);
    REQUIRE(q != NULL);
    gpumem_stream_t s1 = NULL;
    CHECK_OK(gpumem_stream_create(&s1));
    CHECK_OK(gpumem_memcpy_async(q, p, k_bytes, s1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    CHECK(tst_download_verify(q, k_bytes, 21));
    CHECK_OK(tst_upload(q, k_bytes, 22));
    CHECK_OK(gpumem_memcpy(p, q, k_bytes));
    CHECK(tst_download_verify(p, k_bytes, 22));
    CHECK_OK(gpumem_stream_destroy(s1));

    /* Access withdrawn from the peer. */
    gpumem_access_desc_t none = {1, GPUMEM_ACCESS_NONE};
    CHECK_OK(gpumem_pool_set_access(pool, &none, 1));
    CHECK_OK(gpumem_pool_get_access(&flags, pool, 1));
    CHECK(flags == GPUMEM_ACCESS_NONE);

    CHECK_OK(gpumem_free(q));
    REQUIRE_OK(gpumem_set_device(0));
    CHECK_OK(gpumem_free_async(p, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* VMM memory of device 0 mapped once, with access for both devices (two descriptors). */
static void test_vmm_access_from_peer(void)
{
    NEED_TWO_DEVICES();
    REQUIRE_OK(gpumem_set_device(0));
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is not native here (level %d)", (int)info.virtual_memory);
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = 0;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    REQUIRE(g > 0);
    const size_t n = 2 * g;
    gpumem_mem_handle_t h = 0;
    REQUIRE_OK(gpumem_mem_create(&h, n, &props));
    void *va = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&va, n, 0, NULL));
    REQUIRE_OK(gpumem_mem_map(va, n, 0, h));

    /* Device 0 only first: device 1 has no access, yet gpumem_memcpy between the two devices'
     * memory works from either current device (a peer copy, each pointer in its owner's context). */
    gpumem_access_desc_t own = {0, GPUMEM_ACCESS_READWRITE};
    CHECK_OK(gpumem_mem_set_access(va, n, &own, 1));
    uint64_t flags = 99;
    CHECK_OK(gpumem_mem_get_access(&flags, 1, va));
    CHECK(flags == GPUMEM_ACCESS_NONE);
    CHECK_OK(tst_upload(va, n, 31));
    void *q = malloc_on(1, n);
    REQUIRE(q != NULL);
    CHECK_OK(gpumem_memcpy(q, va, n)); /* device 1 current */
    CHECK(tst_download_verify(q, n, 31));
    CHECK_OK(gpumem_memset(q, 0, n));
    REQUIRE_OK(gpumem_set_device(0));

    gpumem_access_desc_t both[2] = {{0, GPUMEM_ACCESS_READWRITE}, {1, GPUMEM_ACCESS_READWRITE}};
    CHECK_OK(gpumem_mem_set_access(va, n, both, 2));
    CHECK_OK(gpumem_mem_get_access(&flags, 1, va));
    CHECK(flags == GPUMEM_ACCESS_READWRITE);
    CHECK_OK(gpumem_mem_get_access(&flags, 0, (char *)va + n - 1));
    CHECK(flags == GPUMEM_ACCESS_READWRITE);

    /* Device 1 current: read the range into its own memory, write half of it back. */
    REQUIRE_OK(gpumem_set_device(1));
    CHECK_OK(gpumem_memcpy(q, va, n));
    CHECK(tst_download_verify(q, n, 31));
    CHECK_OK(tst_upload(q, g, 32));
    CHECK_OK(gpumem_memcpy((char *)va + g, q, g));
    REQUIRE_OK(gpumem_set_device(0));
    CHECK(tst_download_verify((char *)va + g, g, 32));
    CHECK(tst_download_verify(va, g, 31)); /* the first half kept its bytes */

    CHECK_OK(gpumem_free(q));
    CHECK_OK(gpumem_mem_unmap(va, n));
    CHECK_OK(gpumem_mem_address_free(va, n));
    CHECK_OK(gpumem_mem_release(h));
}

/* A reservation made while device 1 is current is device 1's: pointer info of its unmapped part
 * names device 1 (a mapped part the device of its memory) whatever is current, and freed while
 * device 0 is current it goes back whole: gone from pointer info, refused as already freed. */
static void test_vmm_reservation_of_other_device(void)
{
    NEED_TWO_DEVICES();
    REQUIRE_OK(gpumem_set_device(1));
    if (tst_info(1).virtual_memory != GPUMEM_SUPPORT_NATIVE || tst_info(0).virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is not native on both devices here");
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = 0;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    REQUIRE(g > 0);
    char *va = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve((void **)&va, 2 * g, 0, NULL));
    REQUIRE_OK(gpumem_set_device(0));
    gpumem_mem_handle_t h = 0;
    REQUIRE_OK(gpumem_mem_create(&h, g, &props));
    REQUIRE_OK(gpumem_mem_map(va, g, 0, h));

    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(va + g, &pi));
    CHECK(pi.kind == GPUMEM_KIND_VIRTUAL);
    CHECKF(pi.device == 1, "the unmapped part of device 1's reservation names device %d", (int)pi.device);
    CHECK(pi.base == va && pi.alloc_size == 2 * g);
    CHECK_OK(gpumem_pointer_get_info(va, &pi));
    CHECK(pi.kind == GPUMEM_KIND_VIRTUAL);
    CHECKF(pi.device == 0, "the mapping of device 0's memory names device %d", (int)pi.device);

    CHECK_OK(gpumem_mem_unmap(va, g));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_address_free(va, 2 * g)); /* device 0 current */
    CHECK_OK(gpumem_pointer_get_info(va + g, &pi));
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset(va + g, 0, 64));
    CHECKF(tst_contains(gpumem_last_error_message(), "freed memory"), "a fill of the freed reservation: \"%s\"",
           gpumem_last_error_message());
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == 0);

    /* Hinted at the end of device 1's reservation while device 0 is current: carved from the room
     * kept after device 1's, yet device 0's; each goes back whatever is current. */
    REQUIRE_OK(gpumem_set_device(1));
    char *a = NULL, *b = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve((void **)&a, g, 0, NULL));
    REQUIRE_OK(gpumem_set_device(0));
    REQUIRE_OK(gpumem_mem_address_reserve((void **)&b, g, 0, a + g));
    CHECKF(b == a + g, "the hint %p was not honoured: %p", (void *)(a + g), (void *)b);
    CHECK_OK(gpumem_pointer_get_info(b, &pi));
    CHECKF(pi.kind == GPUMEM_KIND_VIRTUAL && pi.device == 0, "reserved with device 0 current: kind %d device %d",
           (int)pi.kind, (int)pi.device);
    CHECK_OK(gpumem_pointer_get_info(a, &pi));
    CHECK(pi.device == 1);
    CHECK_OK(gpumem_mem_address_free(a, g));
    REQUIRE_OK(gpumem_set_device(1));
    CHECK_OK(gpumem_mem_address_free(b, g));
    REQUIRE_OK(gpumem_set_device(0));
}

/* Managed memory prefetched to each device in turn, and back to the host. */
static void test_managed_prefetch_each_device(void)
{
    NEED_TWO_DEVICES();
    REQUIRE_OK(gpumem_set_device(0));
    void *m = NULL;
    gpumem_status_t made = gpumem_managed_alloc(&m, k_bytes, GPUMEM_ATTACH_GLOBAL);
    if (made == GPUMEM_ERROR_NOT_SUPPORTED)
        SKIP("no managed memory here (GPUMEM_FALLBACK=deny refuses its emulation): %s", gpumem_last_error_message());
    REQUIRE_STATUS(GPUMEM_SUCCESS, made);
    CHECK_OK(tst_upload(m, k_bytes, 41));
    const int32_t targets[] = {0, 1, GPUMEM_DEVICE_HOST, 1, 0};
    for (size_t i = 0; i < TST_COUNT(targets); ++i) {
        gpumem_status_t st = gpumem_prefetch_async(m, k_bytes, targets[i], NULL);
        if (st == GPUMEM_ERROR_NOT_SUPPORTED) {
            NOTE("prefetch to %d is not supported here: %s", (int)targets[i], gpumem_last_error_message());
            continue;
        }
        CHECK_STATUS(GPUMEM_SUCCESS, st);
        CHECK_OK(gpumem_stream_synchronize(NULL));
        int32_t last = -99;
        CHECK_OK(gpumem_range_get_attribute(&last, sizeof last, GPUMEM_RANGE_LAST_PREFETCH_LOCATION, m, k_bytes));
        CHECKF(last == targets[i], "LAST_PREFETCH_LOCATION %d after a prefetch to %d", (int)last, (int)targets[i]);
    }
    /* Device 1 current: a copy out of managed memory that lives on device 0. */
    void *q = malloc_on(1, k_bytes);
    REQUIRE(q != NULL);
    CHECK_OK(gpumem_memcpy(q, m, k_bytes));
    CHECK(tst_download_verify(q, k_bytes, 41));
    CHECK_OK(gpumem_free(q));
    CHECK_OK(gpumem_free(m));
    CHECK_OK(gpumem_set_device(0));
}

/* Copies between the memory of two devices, direction inferred, with either device (or a
 * third) current, synchronous and on a stream. */
static void test_copies_between_devices(void)
{
    NEED_TWO_DEVICES();
    void *a = malloc_on(0, k_bytes);
    void *b = malloc_on(1, k_bytes);
    REQUIRE(a != NULL && b != NULL);
    gpumem_pointer_info_t pa = GPUMEM_POINTER_INFO_INIT, pb = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(a, &pa));
    CHECK_OK(gpumem_pointer_get_info(b, &pb));
    CHECK(pa.device == 0 && pb.device == 1);

    for (int32_t cur = 0; cur < (g_count > 2 ? 3 : 2); ++cur) {
        REQUIRE_OK(gpumem_set_device(cur));
        const unsigned seed = 50u + (unsigned)cur;
        CHECK_OK(tst_upload(a, k_bytes, seed));
        CHECK_OK(gpumem_memcpy(b, a, k_bytes)); /* 0 -> 1 */
        CHECK(tst_download_verify(b, k_bytes, seed));
        CHECK_OK(gpumem_memset(a, 0, k_bytes));
        CHECK_OK(gpumem_memcpy(a, b, k_bytes)); /* 1 -> 0 */
        CHECKF(tst_download_verify(a, k_bytes, seed), "device %d current", (int)cur);

        /* On a stream of the current device, at offsets, both directions. */
        gpumem_stream_t s = NULL;
        REQUIRE_OK(gpumem_stream_create(&s));
        CHECK_OK(gpumem_memset_async(b, 0, k_bytes, s));
        CHECK_OK(gpumem_memcpy_async((char *)b + 4096, (char *)a + 4096, k_bytes / 2, s));
        CHECK_OK(gpumem_memcpy_async(a, b, k_bytes, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        unsigned char *host = malloc(k_bytes);
        REQUIRE(host != NULL);
        CHECK_OK(gpumem_memcpy(host, a, k_bytes));
        CHECK(tst_verify_byte(host, 4096, 0) == 4096);
        size_t bad = 0;
        for (size_t i = 0; i < k_bytes / 2; ++i)
            bad += host[4096 + i] != tst_pattern(seed, 4096 + i);
        CHECKF(bad == 0, "%zu bytes wrong after the stream copies, device %d current", bad, (int)cur);
        free(host);
        CHECK_OK(gpumem_stream_destroy(s));
    }
    /* A range running past the end of the other device's allocation is refused. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(b, (char *)a + 1, k_bytes));
    CHECK_OK(gpumem_free(a));
    CHECK_OK(gpumem_free(b));
    CHECK_OK(gpumem_set_device(0));
}

/* A thread per device: each sets its device, allocates, copies to the next device's memory and
 * back, and checks; meanwhile the others do the same. */
enum { k_max_threads = 4 };
struct worker {
    int32_t device;
    int32_t count;
    void *next_buf; /* memory of device (device + 1) % count, made by main */
};

static void *worker_main(void *arg)
{
    struct worker *w = (struct worker *)arg;
    const unsigned seed = 60u + (unsigned)w->device;
    CHECK_OK(gpumem_set_device(w->device));
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == w->device);
    for (int round = 0; round < 8; ++round) {
        void *p = NULL, *r = NULL;
        if (gpumem_malloc(&p, k_bytes) != GPUMEM_SUCCESS) {
            CHECK(!"gpumem_malloc");
            break;
        }
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(p, &pi));
        CHECK(pi.device == w->device);
        gpumem_stream_t s = NULL;
        CHECK_OK(gpumem_stream_create(&s));
        /* Stream-ordered where pools exist; GPUMEM_FALLBACK=deny without them refuses. */
        gpumem_status_t made = gpumem_malloc_async(&r, k_bytes, s);
        const int ordered = made == GPUMEM_SUCCESS;
        if (!ordered) {
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, made);
            if (gpumem_malloc(&r, k_bytes) != GPUMEM_SUCCESS) {
                CHECK(!"gpumem_malloc");
                break;
            }
        }
        CHECK_OK(tst_upload(p, k_bytes, seed + (unsigned)round));
        CHECK_OK(gpumem_memcpy_async(w->next_buf, p, k_bytes, s)); /* to the next device */
        CHECK_OK(gpumem_memcpy_async(r, w->next_buf, k_bytes, s));  /* and back */
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(tst_download_verify(r, k_bytes, seed + (unsigned)round));
        CHECK_OK(ordered ? gpumem_free_async(r, s) : gpumem_free(r));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_free(p));
    }
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == w->device);
    return NULL;
}

static void test_thread_per_device(void)
{
    NEED_TWO_DEVICES();
    const int32_t n = g_count < k_max_threads ? g_count : k_max_threads;
    struct worker w[k_max_threads];
    pthread_t t[k_max_threads];
    for (int32_t i = 0; i < n; ++i) {
        w[i].device = i;
        w[i].count = n;
        w[i].next_buf = malloc_on((i + 1) % n, k_bytes);
        REQUIRE(w[i].next_buf != NULL);
    }
    REQUIRE_OK(gpumem_set_device(0));
    for (int32_t i = 0; i < n; ++i)
        REQUIRE(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    for (int32_t i = 0; i < n; ++i)
        pthread_join(t[i], NULL);
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == 0); /* the workers' choices were their own */
    for (int32_t i = 0; i < n; ++i)
        CHECK_OK(gpumem_free(w[i].next_buf));
}

/* ------------------------------------------------------------------------ */
/* The runtime's own current device, as an application (or PyTorch) sets it  */
/* ------------------------------------------------------------------------ */

/* The vendor runtime gpumem loaded, reached as the application reaches it: the CUDA driver
 * (cuCtx* through cuGetProcAddress, as the fake exports only that) or the HIP runtime. */
struct vendor {
    int ok;
    int (*get_device)(int *device);  /* the runtime's current device on this thread */
    int (*set_device)(int device);   /* cudaSetDevice / hipSetDevice */
    int (*stream_create)(void **stream, int device);
    int (*stream_destroy)(void *stream);
};

static struct {
    int (*ctx_get)(void **ctx);
    int (*ctx_set)(void *ctx);
    int (*retain)(void **ctx, int dev);
    int (*ctx_device)(int *dev);
    int (*stream_create)(void **stream, unsigned flags);
    int (*stream_destroy)(void *stream);
} g_cu;
static struct {
    int (*get_device)(int *device);
    int (*set_device)(int device);
    int (*stream_create)(void **stream);
    int (*stream_destroy)(void *stream);
} g_hip;

static int cu_get_device(int *device)
{
    void *ctx = NULL;
    if (g_cu.ctx_get(&ctx) != 0)
        return 1;
    if (!ctx) {
        *device = -1; /* nothing current */
        return 0;
    }
    return g_cu.ctx_device(device);
}
static int cu_set_device(int device)
{
    void *ctx = NULL;
    return g_cu.retain(&ctx, device) != 0 || g_cu.ctx_set(ctx) != 0;
}
static int cu_stream_create(void **stream, int device)
{
    void *was = NULL, *ctx = NULL;
    if (g_cu.ctx_get(&was) != 0 || g_cu.retain(&ctx, device) != 0 || g_cu.ctx_set(ctx) != 0)
        return 1;
    int r = g_cu.stream_create(stream, 1 /* CU_STREAM_NON_BLOCKING */);
    return g_cu.ctx_set(was) != 0 || r != 0;
}
static int hip_stream_create(void **stream, int device)
{
    int was = 0;
    if (g_hip.get_device(&was) != 0 || g_hip.set_device(device) != 0)
        return 1;
    int r = g_hip.stream_create(stream);
    return g_hip.set_device(was) != 0 || r != 0;
}

static struct vendor vendor_runtime(void)
{
    struct vendor v = {0};
    int32_t backend = 0;
    if (gpumem_get_backend(&backend) != GPUMEM_SUCCESS)
        return v;
    if (backend == GPUMEM_BACKEND_CUDA) {
        const char *path = getenv("GPUMEM_CUDA_LIBRARY");
        void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!lib)
            return v;
        typedef int (*get_proc_t)(const char *, void **, int, uint64_t, int *);
        get_proc_t get = (get_proc_t)dlsym(lib, "cuGetProcAddress_v2");
        if (!get)
            return v;
        int found = 0;
#define CU_GET(field, name) (get(name, (void **)&g_cu.field, 12000, 0, &found) == 0 && g_cu.field)
        if (!(CU_GET(ctx_get, "cuCtxGetCurrent") && CU_GET(ctx_set, "cuCtxSetCurrent") &&
              CU_GET(retain, "cuDevicePrimaryCtxRetain") && CU_GET(ctx_device, "cuCtxGetDevice") &&
              CU_GET(stream_create, "cuStreamCreate") && CU_GET(stream_destroy, "cuStreamDestroy")))
            return v;
#undef CU_GET
        v.get_device = cu_get_device;
        v.set_device = cu_set_device;
        v.stream_create = cu_stream_create;
        v.stream_destroy = g_cu.stream_destroy;
        v.ok = 1;
    } else if (backend == GPUMEM_BACKEND_HIP) {
        const char *path = getenv("GPUMEM_HIP_LIBRARY");
        void *lib = dlopen(path && *path ? path : "libamdhip64.so", RTLD_NOW | RTLD_NOLOAD);
        if (!lib)
            return v;
        g_hip.get_device = (int (*)(int *))dlsym(lib, "hipGetDevice");
        g_hip.set_device = (int (*)(int))dlsym(lib, "hipSetDevice");
        g_hip.stream_create = (int (*)(void **))dlsym(lib, "hipStreamCreate");
        g_hip.stream_destroy = (int (*)(void *))dlsym(lib, "hipStreamDestroy");
        if (!g_hip.get_device || !g_hip.set_device || !g_hip.stream_create || !g_hip.stream_destroy)
            return v;
        v.get_device = g_hip.get_device;
        v.set_device = g_hip.set_device;
        v.stream_create = hip_stream_create;
        v.stream_destroy = g_hip.stream_destroy;
        v.ok = 1;
    }
    return v;
}

#define NEED_VENDOR(v)                                                                                            \
    do {                                                                                                          \
        (v) = vendor_runtime();                                                                                   \
        if (!(v).ok)                                                                                              \
            SKIP("the vendor runtime's own calls cannot be reached here (host backend, or not loaded by path)");   \
    } while (0)

/* gpumem's current device is the runtime's: cudaSetDevice / hipSetDevice move it, and no
 * gpumem call other than gpumem_set_device changes what the application made current, even
 * when it works on another device's memory, streams and pools. */
static void test_runtime_device_kept(void)
{
    NEED_TWO_DEVICES();
    struct vendor v;
    NEED_VENDOR(v);
    void *a = malloc_on(0, k_bytes); /* device 0 memory, then gpumem_set_device(1) below */
    void *b = malloc_on(1, k_bytes);
    REQUIRE(a != NULL && b != NULL);
    REQUIRE(v.set_device(1) == 0);
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == 1);
    REQUIRE(v.set_device(0) == 0); /* as cudaSetDevice(0) */
    CHECK_OK(gpumem_get_device(&cur));
    CHECKF(cur == 0, "gpumem_get_device says %d after the runtime's set_device(0)", (int)cur);
    /* Device 1's memory, streams and pools touched while device 0 is current. */
    gpumem_stream_t s1 = NULL;
    REQUIRE_OK(gpumem_set_device(1));
    REQUIRE_OK(gpumem_stream_create(&s1));
    gpumem_event_t e1 = NULL;
    REQUIRE_OK(gpumem_event_create(&e1));
    REQUIRE(v.set_device(0) == 0);
    CHECK_OK(gpumem_memset(b, 7, k_bytes));
    CHECK_OK(gpumem_memset_async(b, 8, k_bytes, s1));
    CHECK_OK(gpumem_memcpy_async(a, b, k_bytes, s1));
    CHECK_OK(gpumem_event_record(e1, s1));
    CHECK_OK(gpumem_event_synchronize(e1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    CHECK_OK(gpumem_event_record(e1, NULL)); /* NULL: the event's device's default stream */
    CHECK_OK(gpumem_stream_synchronize(NULL));
    void *r = NULL;
    gpumem_status_t st = gpumem_malloc_async(&r, k_bytes, s1); /* device 0's pool, device 1's stream */
    if (st == GPUMEM_SUCCESS) {
        CHECK_OK(gpumem_free_async(r, s1));
        CHECK_OK(gpumem_stream_synchronize(s1));
    } else {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st); /* deny: no pools here */
    }
    int dev = -1;
    CHECK(v.get_device(&dev) == 0);
    CHECKF(dev == 0, "gpumem changed the runtime's current device to %d", dev);
    CHECK_OK(gpumem_event_destroy(e1));
    CHECK_OK(gpumem_stream_destroy(s1));
    CHECK_OK(gpumem_free(b));
    CHECK(v.get_device(&dev) == 0 && dev == 0);
    CHECK_OK(gpumem_free(a));
    CHECK_OK(gpumem_set_device(0));
}

/* An event records only on a stream of its own device: a clear INVALID_VALUE, not the
 * runtime's bare INVALID_HANDLE. */
static void test_event_on_other_device_stream(void)
{
    NEED_TWO_DEVICES();
    REQUIRE_OK(gpumem_set_device(1));
    gpumem_event_t e1 = NULL;
    REQUIRE_OK(gpumem_event_create(&e1));
    REQUIRE_OK(gpumem_set_device(0));
    gpumem_stream_t s0 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_record(e1, s0));
    CHECK(strstr(gpumem_last_error_message(), "device 1") != NULL);
    CHECK_OK(gpumem_event_record(e1, NULL));
    CHECK_OK(gpumem_event_synchronize(e1));
    CHECK_OK(gpumem_stream_destroy(s0));
    CHECK_OK(gpumem_event_destroy(e1));
}

/* What PyTorch's DistributedDataParallel does on rank 1: the autograd engine runs backward on
 * its own thread, which made device 1 current through the runtime (cudaSetDevice) and never
 * called gpumem_set_device, and allocates through the pluggable hooks on the NULL (legacy)
 * stream and on streams of device 1.  The memory must be device 1's, ordered on device 1's
 * streams, and the thread's device must stay 1 for the framework's own next kernel. */
struct autograd_args {
    struct vendor v;
    void *native_stream; /* a stream the framework made on device 1 */
};

static void *autograd_thread(void *arg)
{
    struct autograd_args *a = (struct autograd_args *)arg;
    CHECK(a->v.set_device(1) == 0);
    for (int round = 0; round < 4; ++round) {
        void *streams[2] = {NULL, a->native_stream};
        for (int i = 0; i < 2; ++i) {
            void *p = gpumem_pluggable_malloc((ssize_t)k_bytes, 1, streams[i]);
            CHECKF(p != NULL, "gpumem_pluggable_malloc: %s", gpumem_last_error_message());
            if (!p)
                continue;
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(p, &pi));
            CHECKF(pi.device == 1, "the block is device %d's", (int)pi.device);
            int dev = -1;
            CHECK(a->v.get_device(&dev) == 0);
            CHECKF(dev == 1, "after gpumem_pluggable_malloc the thread's device is %d", dev);
            gpumem_pluggable_free(p, (ssize_t)k_bytes, 1, streams[i]);
            CHECK(a->v.get_device(&dev) == 0);
            CHECKF(dev == 1, "after gpumem_pluggable_free the thread's device is %d", dev);
        }
    }
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == 1);
    return NULL;
}

static void test_framework_thread_on_device_1(void)
{
    NEED_TWO_DEVICES();
    struct autograd_args args;
    NEED_VENDOR(args.v);
    REQUIRE_OK(gpumem_set_device(0));
    if (tst_info(1).memory_pools == GPUMEM_SUPPORT_NONE)
        SKIP("no stream-ordered pools on device 1");
    args.native_stream = NULL;
    REQUIRE(args.v.stream_create(&args.native_stream, 1) == 0);
    /* Wrapped from a thread where device 0 is current, as a framework may: still device 1's. */
    gpumem_stream_t wrapped = NULL;
    REQUIRE_OK(gpumem_stream_wrap(args.native_stream, &wrapped));
    REQUIRE_OK(gpumem_set_device(1));
    gpumem_event_t e1 = NULL;
    REQUIRE_OK(gpumem_event_create(&e1));
    REQUIRE_OK(gpumem_set_device(0));
    CHECK_OK(gpumem_event_record(e1, wrapped)); /* refused if gpumem took the stream for device 0's */
    CHECK_OK(gpumem_event_destroy(e1));
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, autograd_thread, &args) == 0);
    pthread_join(t, NULL);
    CHECK_OK(gpumem_stream_synchronize(wrapped));
    CHECK_OK(gpumem_stream_destroy(wrapped));
    CHECK(args.v.stream_destroy(args.native_stream) == 0);
}

/* Every kind of another device's memory, used from the current device: fills, copies in every
 * direction, pointer info, buffers and pools.  The owner (device 1) holds a plain allocation, a
 * stream-ordered block, VMM memory only it may access, and a growable buffer; device 0 holds
 * the same kinds.  Pool and VMM memory reach no context but the owner's: only gpumem's
 * placement (the owner's context; peer copies between two owners) makes these work. */
struct kinds {
    void *p[4];
    const char *name[4];
    int n;
    gpumem_buffer_t buf;
    gpumem_mem_handle_t h;
    void *va;
    size_t vsize;
};

static void make_kinds(int32_t device, struct kinds *k)
{
    memset(k, 0, sizeof *k);
    REQUIRE_OK(gpumem_set_device(device));
    gpumem_device_info_t info = tst_info(device);
    k->p[k->n] = malloc_on(device, k_bytes);
    k->name[k->n++] = "device";
    void *b = NULL;
    if (gpumem_malloc_async(&b, k_bytes, NULL) == GPUMEM_SUCCESS && gpumem_stream_synchronize(NULL) == GPUMEM_SUCCESS) {
        k->p[k->n] = b;
        k->name[k->n++] = "stream-ordered";
    }
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        props.device = device;
        size_t g = 0;
        CHECK_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        k->vsize = g;
        CHECK_OK(gpumem_mem_create(&k->h, g, &props));
        CHECK_OK(gpumem_mem_address_reserve(&k->va, g, 0, NULL));
        CHECK_OK(gpumem_mem_map(k->va, g, 0, k->h));
        gpumem_access_desc_t own = {device, GPUMEM_ACCESS_READWRITE};
        CHECK_OK(gpumem_mem_set_access(k->va, g, &own, 1));
        k->p[k->n] = k->va;
        k->name[k->n++] = "vmm";
    }
    if (gpumem_buffer_create(&k->buf, k_bytes, 4 * k_bytes, device) == GPUMEM_SUCCESS) {
        void *d = NULL;
        CHECK_OK(gpumem_buffer_data(k->buf, &d));
        k->p[k->n] = d;
        k->name[k->n++] = "buffer";
    }
}

static void free_kinds(struct kinds *k)
{
    for (int i = 0; i < k->n; ++i) {
        if (strcmp(k->name[i], "device") == 0 || strcmp(k->name[i], "stream-ordered") == 0)
            CHECK_OK(gpumem_free(k->p[i]));
    }
    if (k->va) {
        CHECK_OK(gpumem_mem_unmap(k->va, k->vsize));
        CHECK_OK(gpumem_mem_address_free(k->va, k->vsize));
        CHECK_OK(gpumem_mem_release(k->h));
    }
    if (k->buf)
        CHECK_OK(gpumem_buffer_destroy(k->buf));
}

static void test_every_kind_from_another_device(void)
{
    NEED_TWO_DEVICES();
    struct kinds mine, theirs;
    make_kinds(0, &mine);
    make_kinds(1, &theirs);
    REQUIRE(mine.n == theirs.n);
    const size_t n = 65536;
    unsigned char *host = malloc(n);
    REQUIRE(host != NULL);
    for (int cur = 0; cur < 2; ++cur) {
        REQUIRE_OK(gpumem_set_device(cur));
        const struct kinds *other = cur == 0 ? &theirs : &mine;
        const struct kinds *own = cur == 0 ? &mine : &theirs;
        for (int i = 0; i < other->n; ++i) {
            void *x = other->p[i];
            const char *what = other->name[i];
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(x, &pi));
            CHECKF(pi.device == 1 - cur, "%s of device %d says device %d", what, 1 - cur, (int)pi.device);
            CHECKF(gpumem_memset(x, 0x11, n) == GPUMEM_SUCCESS, "memset of device %d's %s from device %d: %s",
                   1 - cur, what, cur, gpumem_last_error_message());
            CHECKF(gpumem_memset_async(x, 0x22, n, NULL) == GPUMEM_SUCCESS,
                   "memset_async(NULL) of device %d's %s from device %d: %s", 1 - cur, what, cur,
                   gpumem_last_error_message());
            CHECK_OK(gpumem_device_synchronize());
            memset(host, 0, n);
            CHECKF(gpumem_memcpy(host, x, n) == GPUMEM_SUCCESS, "copy out of device %d's %s from device %d: %s",
                   1 - cur, what, cur, gpumem_last_error_message());
            CHECKF(tst_verify_byte(host, n, 0x22) == n, "device %d's %s after the fills", 1 - cur, what);
            CHECK_OK(tst_upload(x, n, 70u + (unsigned)i));
            CHECK(tst_download_verify(x, n, 70u + (unsigned)i));
            /* Into each kind of the current device's memory and back, sync and on a stream. */
            for (int j = 0; j < own->n; ++j) {
                CHECKF(gpumem_memcpy(own->p[j], x, n) == GPUMEM_SUCCESS, "copy device %d's %s -> device %d's %s: %s",
                       1 - cur, what, cur, own->name[j], gpumem_last_error_message());
                CHECK(tst_download_verify(own->p[j], n, 70u + (unsigned)i));
                gpumem_stream_t s = NULL;
                REQUIRE_OK(gpumem_stream_create(&s));
                CHECK_OK(gpumem_memset_async(x, 0, n, s));
                CHECKF(gpumem_memcpy_async(x, own->p[j], n, s) == GPUMEM_SUCCESS,
                       "copy device %d's %s -> device %d's %s on a stream: %s", cur, own->name[j], 1 - cur, what,
                       gpumem_last_error_message());
                CHECK_OK(gpumem_stream_synchronize(s));
                CHECK_OK(gpumem_stream_destroy(s));
                CHECK(tst_download_verify(x, n, 70u + (unsigned)i));
            }
        }
        /* The other device's buffer grows and shrinks from here, and keeps its bytes. */
        if (other->buf) {
            CHECK_OK(tst_upload(other->p[other->n - 1], n, 90));
            CHECK_OK(gpumem_buffer_resize(other->buf, 3 * k_bytes));
            void *d = NULL;
            CHECK_OK(gpumem_buffer_data(other->buf, &d));
            CHECK(tst_download_verify(d, n, 90));
            CHECK_OK(gpumem_memset((char *)d + 2 * k_bytes, 1, k_bytes));
            CHECK_OK(gpumem_buffer_resize(other->buf, k_bytes));
            CHECK_OK(gpumem_buffer_data(other->buf, &d));
            ((struct kinds *)other)->p[other->n - 1] = d;
        }
    }
    free(host);
    REQUIRE_OK(gpumem_set_device(0));
    free_kinds(&mine);
    free_kinds(&theirs);
}

/* A pool of device 1 used from device 0: allocation on a device-0 stream, attributes, trim,
 * access grants (the owner's never revoked), and the free. */
static void test_pool_of_other_device(void)
{
    NEED_TWO_DEVICES();
    if (tst_info(1).memory_pools == GPUMEM_SUPPORT_NONE)
        SKIP("no pools on device 1");
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 1;
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_set_device(0));
    REQUIRE_OK(gpumem_pool_create(&pool, &props));
    gpumem_stream_t s0 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s0));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&p, k_bytes, pool, s0));
    void *q = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&q, k_bytes, pool, NULL)); /* NULL: device 1's default stream */
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    CHECK(pi.device == 1);
    CHECK_OK(gpumem_memset_async(p, 3, k_bytes, s0));
    CHECK_OK(gpumem_stream_synchronize(s0));
    unsigned char b = 0;
    CHECK_OK(gpumem_memcpy(&b, (char *)p + k_bytes - 1, 1));
    CHECK(b == 3);
    uint64_t threshold = 1 << 20;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    uint64_t used = 0;
    CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK(used >= 2 * k_bytes);
    gpumem_access_desc_t revoke = {1, GPUMEM_ACCESS_NONE};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_set_access(pool, &revoke, 1));
    int32_t can = 0;
    CHECK_OK(gpumem_device_can_access_peer(&can, 0, 1));
    gpumem_access_desc_t grant = {0, GPUMEM_ACCESS_READWRITE};
    if (can) {
        CHECK_OK(gpumem_pool_set_access(pool, &grant, 1));
        int32_t flags = 0;
        CHECK_OK(gpumem_pool_get_access(&flags, pool, 0));
        CHECK(flags == GPUMEM_ACCESS_READWRITE);
    }
    CHECK_OK(gpumem_free_async(p, s0));
    CHECK_OK(gpumem_free_async(q, NULL));
    CHECK_OK(gpumem_stream_synchronize(s0));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_pool_trim_to(pool, 0));
    CHECK_OK(gpumem_set_device(1));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_set_device(0));
    CHECK_OK(gpumem_stream_destroy(s0));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* gpumem starts a device's context on first use only (docs/multi-gpu.md): after init, and after
 * the last device is used (memory, a pool, a synchronisation, a snapshot), no other device's
 * primary context runs; asking a device's free memory starts it.  CUDA only (the hip backend
 * enters every device as before).  First in the list: later cases start every device. */
static void test_devices_start_on_first_use(void)
{
    NEED_TWO_DEVICES();
    int32_t backend = 0;
    REQUIRE_OK(gpumem_get_backend(&backend));
    if (backend != GPUMEM_BACKEND_CUDA)
        SKIP("contexts are started on first use on the cuda backend");
    const char *path = getenv("GPUMEM_CUDA_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != NULL);
    typedef int (*get_proc_t)(const char *, void **, int, uint64_t, int *);
    get_proc_t get = (get_proc_t)dlsym(lib, "cuGetProcAddress_v2");
    int (*device_get)(int *, int) = NULL;
    int (*state)(int, unsigned *, int *) = NULL;
    int found = 0;
    REQUIRE(get && get("cuDeviceGet", (void **)&device_get, 12000, 0, &found) == 0 && device_get);
    REQUIRE(get("cuDevicePrimaryCtxGetState", (void **)&state, 12000, 0, &found) == 0 && state);
    enum { kMax = 64 };
    int running[kMax] = {0}; /* before gpumem used any device: the application's own */
    const int32_t n = g_count < kMax ? g_count : kMax, last = n - 1;
#define ACTIVE(d) ({                                                                                       \
        int h_ = 0, on_ = 0;                                                                               \
        unsigned flags_ = 0;                                                                               \
        device_get(&h_, (d)) == 0 && state(h_, &flags_, &on_) == 0 && on_;                                \
    })
    for (int32_t d = 0; d < n; ++d)
        running[d] = ACTIVE(d);
    REQUIRE_OK(gpumem_set_device(last));
    void *p = NULL, *q = NULL;
    REQUIRE_OK(gpumem_malloc(&p, k_bytes));
    /* Pools are refused under GPUMEM_DISABLE=pools with GPUMEM_FALLBACK=deny, as the
     * contract says: the device is used all the same. */
    const gpumem_status_t async_st = gpumem_malloc_async(&q, k_bytes, NULL);
    if (async_st != GPUMEM_SUCCESS)
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, async_st);
    gpumem_pool_t pool = NULL;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = last;
    const gpumem_status_t pool_st = gpumem_pool_create(&pool, &props);
    if (pool_st != GPUMEM_SUCCESS)
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, pool_st);
    if (q)
        CHECK_OK(gpumem_free_async(q, NULL));
    CHECK_OK(gpumem_device_synchronize());
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    for (size_t i = 0; i < snap->device_count; ++i) {
        const gpumem_snapshot_device_t *dev = GPUMEM_SNAPSHOT_ITEM(gpumem_snapshot_device_t, snap->devices, i);
        if ((int32_t)i != last && (int32_t)i < n && !running[i])
            CHECKF(dev->free == 0 && dev->total > 0, "snapshot: device %zu not started, free %llu", i,
                   (unsigned long long)dev->free);
    }
    CHECK_OK(gpumem_snapshot_release(snap));
    size_t free_bytes = 0, total = 0;
    CHECK_OK(gpumem_mem_get_info(&free_bytes, &total));
    CHECK(ACTIVE(last));
    for (int32_t d = 0; d < last; ++d)
        CHECKF(running[d] || !ACTIVE(d), "device %d started although only device %d was used", (int)d, (int)last);
    /* Asking a device's free memory starts it. */
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK_OK(gpumem_device_get_info(0, &info));
    CHECK(ACTIVE(0));
#undef ACTIVE
    if (pool)
        CHECK_OK(gpumem_pool_destroy(pool));
    CHECK_OK(gpumem_free(p));
    CHECK_OK(gpumem_set_device(0));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_devices_start_on_first_use),
        TEST(test_peer_access),
        TEST(test_pool_access_from_peer),
        TEST(test_vmm_access_from_peer),
        TEST(test_vmm_reservation_of_other_device),
        TEST(test_managed_prefetch_each_device),
        TEST(test_copies_between_devices),
        TEST(test_thread_per_device),
        TEST(test_runtime_device_kept),
        TEST(test_event_on_other_device_stream),
        TEST(test_framework_thread_on_device_1),
        TEST(test_every_kind_from_another_device),
        TEST(test_pool_of_other_device),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
