/*
 * Multi-GPU (issue 14): peer access, a pool of device 0 made accessible to device 1, a VMM
 * range of device 0 with access for device 1, managed memory prefetched to each device, copies
 * between the memory of two devices, and a thread per device.  Every case needs two devices
 * (the fake runtimes' multi-device configurations, or a machine with two GPUs): with fewer the
 * test exits 77.  Kernels reaching another device's memory are tests/gpu/multi_gpu_test.cu's.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <pthread.h>

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

    /* Device 0 only first: device 1 cannot reach it, and gpumem says so. */
    gpumem_access_desc_t own = {0, GPUMEM_ACCESS_READWRITE};
    CHECK_OK(gpumem_mem_set_access(va, n, &own, 1));
    uint64_t flags = 99;
    CHECK_OK(gpumem_mem_get_access(&flags, 1, va));
    CHECK(flags == GPUMEM_ACCESS_NONE);
    CHECK_OK(tst_upload(va, n, 31));
    void *q = malloc_on(1, n);
    REQUIRE(q != NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(q, va, n)); /* device 1 current */
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

/* Managed memory prefetched to each device in turn, and back to the host. */
static void test_managed_prefetch_each_device(void)
{
    NEED_TWO_DEVICES();
    REQUIRE_OK(gpumem_set_device(0));
    void *m = NULL;
    REQUIRE_OK(gpumem_managed_alloc(&m, k_bytes, GPUMEM_ATTACH_GLOBAL));
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
        CHECK_OK(gpumem_malloc_async(&r, k_bytes, s));
        CHECK_OK(tst_upload(p, k_bytes, seed + (unsigned)round));
        CHECK_OK(gpumem_memcpy_async(w->next_buf, p, k_bytes, s)); /* to the next device */
        CHECK_OK(gpumem_memcpy_async(r, w->next_buf, k_bytes, s));  /* and back */
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(tst_download_verify(r, k_bytes, seed + (unsigned)round));
        CHECK_OK(gpumem_free_async(r, s));
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

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_peer_access),
        TEST(test_pool_access_from_peer),
        TEST(test_vmm_access_from_peer),
        TEST(test_managed_prefetch_each_device),
        TEST(test_copies_between_devices),
        TEST(test_thread_per_device),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
