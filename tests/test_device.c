/* Devices, capabilities and extensible-struct size handling. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <pthread.h>
#include <stddef.h>

static int is_level(int32_t v) { return v == GPUMEM_SUPPORT_NONE || v == GPUMEM_SUPPORT_EMULATED || v == GPUMEM_SUPPORT_NATIVE; }

static void test_count_and_current_device(void)
{
    int32_t count = -1;
    REQUIRE_OK(gpumem_device_count(&count));
    CHECK(count >= 1);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_count(NULL));

    int32_t dev = -5;
    CHECK_OK(gpumem_get_device(&dev));
    CHECK(dev == 0);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_device(NULL));
    for (int32_t d = 0; d < count; ++d) {
        CHECK_OK(gpumem_set_device(d));
        CHECK_OK(gpumem_get_device(&dev));
        CHECK(dev == d);
    }
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_set_device(count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_set_device(GPUMEM_DEVICE_HOST));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_set_device(-2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_set_device(INT32_MAX));
    /* A refused set_device keeps the current device. */
    CHECK_OK(gpumem_get_device(&dev));
    CHECK(dev == count - 1);
    CHECK_OK(gpumem_set_device(0));
}

static void *thread_device(void *arg)
{
    int32_t *out = (int32_t *)arg;
    out[0] = -5;
    gpumem_get_device(&out[0]);
    int32_t count = 1;
    gpumem_device_count(&count);
    out[1] = gpumem_set_device(count - 1);
    gpumem_get_device(&out[2]);
    return NULL;
}

static void test_current_device_is_per_thread(void)
{
    int32_t count = 1;
    REQUIRE_OK(gpumem_device_count(&count));
    CHECK_OK(gpumem_set_device(0));
    int32_t out[3] = {-9, -9, -9};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, thread_device, out) == 0);
    pthread_join(t, NULL);
    CHECK(out[0] == 0);
    CHECK(out[1] == GPUMEM_SUCCESS);
    CHECK(out[2] == count - 1);
    int32_t mine = -1;
    CHECK_OK(gpumem_get_device(&mine));
    CHECK(mine == 0); /* the other thread's choice did not leak here */
}

static void test_device_info_fields(void)
{
    int32_t count = 0, backend = -1;
    REQUIRE_OK(gpumem_device_count(&count));
    REQUIRE_OK(gpumem_get_backend(&backend));
    for (int32_t d = 0; d < count; ++d) {
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        REQUIRE_OK(gpumem_device_get_info(d, &info));
        CHECK(info.size == sizeof(gpumem_device_info_t));
        CHECK(memchr(info.name, '\0', sizeof info.name) != NULL);
        CHECK(strlen(info.name) > 0);
        CHECK(memchr(info.arch_name, '\0', sizeof info.arch_name) != NULL);
        CHECK(strlen(info.arch_name) > 0);
        CHECK(info.backend == backend);
        CHECK(info.device == d);
        CHECK(info.total_memory > 0);
        CHECKF(info.free_memory <= info.total_memory, "free %" PRIu64 " > total %" PRIu64, info.free_memory,
               info.total_memory);
        CHECK(is_level(info.managed_memory));
        CHECK(is_level(info.memory_pools));
        CHECK(is_level(info.virtual_memory));
        CHECK(is_level(info.host_register));
        CHECK(info.managed_migrates == 0 || info.managed_migrates == 1);
        CHECK(info.pageable_memory_access == 0 || info.pageable_memory_access == 1);
        if (info.managed_memory != GPUMEM_SUPPORT_NATIVE)
            CHECK(info.managed_migrates == 0); /* emulated managed memory is pinned host memory */
        CHECK((info.ipc_handle_types & ~(uint32_t)GPUMEM_HANDLE_POSIX_FD) == 0);
        if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
            uint64_t g = info.vmm_granularity, r = info.vmm_recommended_granularity;
            CHECKF(g > 0 && (g & (g - 1)) == 0, "vmm_granularity %" PRIu64 " is not a power of two", g);
            CHECKF(r >= g && g && r % g == 0, "recommended granularity %" PRIu64 " vs minimum %" PRIu64, r, g);
        }
        if (backend == GPUMEM_BACKEND_CUDA)
            CHECK(info.compute_capability >= 10);
        else
            CHECK(info.compute_capability == 0);
    }
}

static void test_device_info_errors(void)
{
    int32_t count = 0;
    REQUIRE_OK(gpumem_device_count(&count));
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_get_info(count, &info));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_get_info(GPUMEM_DEVICE_HOST, &info));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_get_info(-100, &info));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_get_info(0, NULL));
    info.size = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_get_info(0, &info));
    info.size = sizeof(size_t) - 1;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_get_info(0, &info));
}

/* Fill a struct with a sentinel, set its size, call, and check nothing past `size` changed. */
#define SENTINEL 0xA5

static int untouched_from(const void *p, size_t from, size_t to)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = from; i < to; ++i)
        if (b[i] != SENTINEL)
            return 0;
    return 1;
}

static void test_device_info_smaller_size(void)
{
    gpumem_device_info_t full = GPUMEM_DEVICE_INFO_INIT;
    REQUIRE_OK(gpumem_device_get_info(0, &full));

    /* Older callers whose struct ends at these fields. */
    const size_t ends[] = {
        sizeof(size_t),
        offsetof(gpumem_device_info_t, backend),
        offsetof(gpumem_device_info_t, total_memory),
        offsetof(gpumem_device_info_t, managed_memory),
        offsetof(gpumem_device_info_t, ipc_handle_types),
        offsetof(gpumem_device_info_t, host_register),
        offsetof(gpumem_device_info_t, arch_name),
    };
    for (size_t i = 0; i < TST_COUNT(ends); ++i) {
        union {
            gpumem_device_info_t info;
            unsigned char bytes[sizeof(gpumem_device_info_t) + 64];
        } u;
        memset(&u, SENTINEL, sizeof u);
        u.info.size = ends[i];
        CHECK_OK(gpumem_device_get_info(0, &u.info));
        CHECKF(u.info.size == ends[i], "size changed to %zu", u.info.size);
        CHECKF(untouched_from(&u, ends[i], sizeof u), "a struct of size %zu was written past its end", ends[i]);
        /* The covered fields are the real ones. */
        if (ends[i] >= offsetof(gpumem_device_info_t, backend))
            CHECK(strcmp(u.info.name, full.name) == 0);
        if (ends[i] >= offsetof(gpumem_device_info_t, total_memory))
            CHECK(u.info.backend == full.backend && u.info.device == 0);
        if (ends[i] >= offsetof(gpumem_device_info_t, managed_memory))
            CHECK(u.info.total_memory == full.total_memory);
        if (ends[i] >= offsetof(gpumem_device_info_t, ipc_handle_types))
            CHECK(u.info.managed_memory == full.managed_memory && u.info.virtual_memory == full.virtual_memory &&
                  u.info.memory_pools == full.memory_pools);
        if (ends[i] >= offsetof(gpumem_device_info_t, host_register))
            CHECK(u.info.ipc_handle_types == full.ipc_handle_types && u.info.vmm_granularity == full.vmm_granularity);
    }

    /* A newer caller's larger struct is fine: the known fields are filled. */
    union {
        gpumem_device_info_t info;
        unsigned char bytes[sizeof(gpumem_device_info_t) + 64];
    } big;
    memset(&big, 0, sizeof big);
    big.info.size = sizeof big;
    CHECK_OK(gpumem_device_get_info(0, &big.info));
    CHECK(strcmp(big.info.name, full.name) == 0 && strcmp(big.info.arch_name, full.arch_name) == 0);
    CHECK(big.info.size == sizeof big);
}

static void test_other_structs_smaller_size(void)
{
    /* gpumem_get_stats with a struct that ends before peak_bytes. */
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 1000));
    union {
        gpumem_stats_t stats;
        unsigned char bytes[sizeof(gpumem_stats_t) + 32];
    } u;
    const size_t end = offsetof(gpumem_stats_t, peak_bytes);
    memset(&u, SENTINEL, sizeof u);
    u.stats.size = end;
    CHECK_OK(gpumem_get_stats(&u.stats));
    CHECK(untouched_from(&u, end, sizeof u));
    CHECK(u.stats.current_bytes[GPUMEM_KIND_DEVICE] >= 1000);
    u.stats.size = 2;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_stats(&u.stats));

    /* gpumem_pointer_get_info with a struct that ends before `emulated`. */
    union {
        gpumem_pointer_info_t info;
        unsigned char bytes[sizeof(gpumem_pointer_info_t) + 32];
    } v;
    const size_t pend = offsetof(gpumem_pointer_info_t, emulated);
    memset(&v, SENTINEL, sizeof v);
    v.info.size = pend;
    CHECK_OK(gpumem_pointer_get_info((char *)p + 10, &v.info));
    CHECK(untouched_from(&v, pend, sizeof v));
    CHECK(v.info.kind == GPUMEM_KIND_DEVICE);
    CHECK(v.info.base == p);
    CHECK(v.info.alloc_size == 1000);
    v.info.size = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pointer_get_info(p, &v.info));
    CHECK_OK(gpumem_free(p));

    /* Pool props whose size ends before max_size: the garbage there is not read. */
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_pool_props_t props;
        memset(&props, SENTINEL, sizeof props);
        props.size = offsetof(gpumem_pool_props_t, max_size);
        props.device = 0;
        props.handle_types = GPUMEM_HANDLE_NONE;
        props.max_size = 1; /* would make every allocation fail if it were read */
        gpumem_pool_t pool = NULL;
        REQUIRE_OK(gpumem_pool_create(&pool, &props));
        void *q = NULL;
        CHECK_OK(gpumem_malloc_from_pool_async(&q, 1 << 20, pool, NULL));
        CHECK_OK(gpumem_free_async(q, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        CHECK_OK(gpumem_pool_destroy(pool));
        props.size = 3;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
    }
    /* Alloc props with size 0. */
    gpumem_alloc_props_t ap = GPUMEM_ALLOC_PROPS_INIT;
    ap.size = 0;
    size_t g = 0;
    gpumem_status_t st = gpumem_mem_get_granularity(&g, &ap, GPUMEM_GRANULARITY_MINIMUM);
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, st);
    else
        CHECK_ONE_OF(st, GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_NOT_SUPPORTED);
}

/* Peer access with the devices of any backend: the answers that need no second device (the
 * host backend's one device included); tests/test_multi_gpu.c does the rest. */
static void test_peer_access_bad_input(void)
{
    int32_t count = 0, cur = -1, can = -1;
    REQUIRE_OK(gpumem_device_count(&count));
    REQUIRE_OK(gpumem_get_device(&cur));
    CHECK_OK(gpumem_device_can_access_peer(&can, cur, cur));
    CHECK(can == 0);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_can_access_peer(NULL, 0, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_can_access_peer(&can, count, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_can_access_peer(&can, 0, -1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_enable_peer_access(cur));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_disable_peer_access(cur));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_enable_peer_access(count));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_enable_peer_access(-1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_disable_peer_access(count));
    CHECK(tst_contains(gpumem_last_error_message(), "does not exist"));
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(count == 1);
}

static void test_mem_get_info(void)
{
    size_t free_b = 0, total_b = 0;
    REQUIRE_OK(gpumem_mem_get_info(&free_b, &total_b));
    CHECK(total_b > 0);
    CHECK(free_b <= total_b);
    gpumem_device_info_t info = tst_info(0);
    CHECKF((uint64_t)total_b == info.total_memory, "mem_get_info total %zu, device info total %" PRIu64, total_b,
           info.total_memory);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_info(NULL, &total_b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_info(&free_b, NULL));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_count_and_current_device), TEST(test_current_device_is_per_thread),
        TEST(test_device_info_fields),       TEST(test_device_info_errors),
        TEST(test_device_info_smaller_size), TEST(test_other_structs_smaller_size),
        TEST(test_mem_get_info),             TEST(test_peer_access_bad_input),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
