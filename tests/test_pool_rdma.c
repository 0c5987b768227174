/* Memory that GPUDirect RDMA and NCCL register: GPUMEM_POOL_RDMA on pools and on VMM memory,
 * the flags fields of gpumem_pool_props_t and gpumem_alloc_props_t, and callers whose structs
 * end before them.  SPDX-License-Identifier: MIT
 *
 * GPUMEM_TEST_EXPECT_RDMA says what the configuration offers, so that a refusal is asserted
 * rather than taken as it comes:
 *   native             a GPU that makes RDMA-capable VMM memory (rdma_memory NATIVE);
 *   emulated           the host backend (ordinary host memory; rdma_memory EMULATED);
 *   none               the device cannot (rdma_memory NONE): every request is NOT_SUPPORTED;
 *   refused-at-create  ROCm, which has no attribute to ask: rdma_memory NATIVE, and the
 *                      runtime's refusal of the flag comes at the first allocation.
 * Unset: whatever gpumem_device_info_t.rdma_memory says, checked for consistency only. */
#include "harness.h"

#include <dlfcn.h>
#include <stddef.h>

#define MiB ((size_t)1 << 20)

static const char *expected(void)
{
    const char *e = getenv("GPUMEM_TEST_EXPECT_RDMA");
    return e && *e ? e : NULL;
}

static int expect_is(const char *what)
{
    const char *e = expected();
    return e && strcmp(e, what) == 0;
}

static void test_support_level_as_configured(void)
{
    gpumem_device_info_t info = tst_info(0);
    CHECK(info.rdma_memory == GPUMEM_SUPPORT_NONE || info.rdma_memory == GPUMEM_SUPPORT_EMULATED ||
          info.rdma_memory == GPUMEM_SUPPORT_NATIVE);
    /* The host backend's memory is host memory: EMULATED there, and only there. */
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECKF(info.rdma_memory == GPUMEM_SUPPORT_EMULATED, "host backend: rdma_memory %d", info.rdma_memory);
    else
        CHECKF(info.rdma_memory != GPUMEM_SUPPORT_EMULATED, "a GPU never emulates RDMA-capable memory");
    /* On a GPU it is VMM memory with a POSIX handle: never without both. */
    if (info.rdma_memory == GPUMEM_SUPPORT_NATIVE) {
        CHECK(info.virtual_memory == GPUMEM_SUPPORT_NATIVE);
    }
    if (expect_is("native") || expect_is("refused-at-create"))
        CHECKF(info.rdma_memory == GPUMEM_SUPPORT_NATIVE, "rdma_memory %d, expected NATIVE", info.rdma_memory);
    else if (expect_is("emulated"))
        CHECKF(info.rdma_memory == GPUMEM_SUPPORT_EMULATED, "rdma_memory %d, expected EMULATED", info.rdma_memory);
    else if (expect_is("none"))
        CHECKF(info.rdma_memory == GPUMEM_SUPPORT_NONE, "rdma_memory %d, expected NONE", info.rdma_memory);
    /* A caller of the 0.3 size gets its fields, and nothing past them is written. */
    unsigned char raw[sizeof(gpumem_device_info_t)];
    memset(raw, 0xA5, sizeof raw);
    gpumem_device_info_t *old = (gpumem_device_info_t *)(void *)raw;
    old->size = offsetof(gpumem_device_info_t, rdma_memory);
    CHECK_OK(gpumem_device_get_info(0, old));
    CHECK(old->managed_pools == info.managed_pools);
    CHECK(raw[offsetof(gpumem_device_info_t, rdma_memory)] == 0xA5);
}

static void test_unknown_flags_are_refused(void)
{
    gpumem_pool_t pool = NULL;
    static const uint32_t bad[] = {0x2, 0x80000000u, GPUMEM_POOL_RDMA | 0x100};
    for (size_t i = 0; i < TST_COUNT(bad); ++i) {
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.flags = bad[i];
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
        CHECKF(tst_contains(gpumem_last_error_message(), "flags") &&
                   tst_contains(gpumem_last_error_message(), "unknown bits") &&
                   tst_contains(gpumem_last_error_message(), "GPUMEM_POOL_RDMA"),
               "message does not say which field and what to use: \"%s\"", gpumem_last_error_message());

        gpumem_alloc_props_t aprops = GPUMEM_ALLOC_PROPS_INIT;
        aprops.flags = bad[i];
        gpumem_mem_handle_t h = 0;
        size_t g = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, 1 << 21, &aprops));
        CHECKF(tst_contains(gpumem_last_error_message(), "flags"), "message: \"%s\"", gpumem_last_error_message());
        CHECK(h == 0);
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_granularity(&g, &aprops, GPUMEM_GRANULARITY_MINIMUM));
    }
}

/* A 0.2/0.3 caller's gpumem_pool_props_t is 40 bytes, the last 4 padding nobody set; a 0.1
 * caller's ends at numa_node.  Whatever lies past their size is not read. */
static void test_old_pool_props_sizes(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE)
        SKIP("memory pools are not available");
    static const size_t sizes[] = {offsetof(gpumem_pool_props_t, reserved1) + sizeof(uint32_t) /* 40 */,
                                   offsetof(gpumem_pool_props_t, numa_node) /* 0.1: 32 */};
    for (size_t i = 0; i < TST_COUNT(sizes); ++i) {
        unsigned char raw[sizeof(gpumem_pool_props_t)];
        memset(raw, 0xFF, sizeof raw);
        gpumem_pool_props_t *props = (gpumem_pool_props_t *)(void *)raw;
        props->size = sizes[i];
        props->device = 0;
        props->handle_types = GPUMEM_HANDLE_NONE;
        props->max_size = 0;
        props->implementation = GPUMEM_POOL_AUTO;
        props->memory = GPUMEM_POOL_MEMORY_DEVICE;
        if (sizes[i] > offsetof(gpumem_pool_props_t, numa_node))
            props->numa_node = -1;
        gpumem_pool_t pool = NULL;
        CHECKF(gpumem_pool_create(&pool, props) == GPUMEM_SUCCESS, "size %zu: %s", sizes[i],
               gpumem_last_error_message());
        if (!pool)
            continue;
        void *p = NULL;
        CHECK_OK(gpumem_malloc_from_pool_async(&p, MiB, pool, NULL));
        CHECK_OK(tst_upload(p, MiB, 5u));
        CHECK(tst_download_verify(p, MiB, 5u));
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        CHECK_OK(gpumem_pool_destroy(pool));
    }
}

/* A 0.3 caller's gpumem_alloc_props_t is 16 bytes: flags lies past it. */
static void test_old_alloc_props_size(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is not native here");
    unsigned char raw[sizeof(gpumem_alloc_props_t)];
    memset(raw, 0xFF, sizeof raw);
    gpumem_alloc_props_t *props = (gpumem_alloc_props_t *)(void *)raw;
    props->size = offsetof(gpumem_alloc_props_t, flags);
    props->device = 0;
    props->handle_types = GPUMEM_HANDLE_NONE;
    size_t g = 0;
    CHECK_OK(gpumem_mem_get_granularity(&g, props, GPUMEM_GRANULARITY_MINIMUM));
    REQUIRE(g > 0);
    gpumem_mem_handle_t h = 0;
    CHECK_OK(gpumem_mem_create(&h, g, props));
    if (h)
        CHECK_OK(gpumem_mem_release(h));
}

static gpumem_stats_t g_base;

/* Blocks of several sizes from an RDMA pool, each written and read back through gpumem. */
static void use_rdma_pool(gpumem_pool_t pool)
{
    static const size_t sizes[] = {256, 64 * 1024, 3 * MiB + 512, 24 * MiB};
    void *blocks[TST_COUNT(sizes)] = {0};
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    for (size_t i = 0; i < TST_COUNT(sizes); ++i) {
        CHECKF(gpumem_malloc_from_pool_async(&blocks[i], sizes[i], pool, s) == GPUMEM_SUCCESS, "%zu bytes: %s",
               sizes[i], gpumem_last_error_message());
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    for (size_t i = 0; i < TST_COUNT(sizes); ++i) {
        if (!blocks[i])
            continue;
        CHECK_OK(tst_upload(blocks[i], sizes[i], (unsigned)(i + 11)));
    }
    /* Device to device through two RDMA blocks, then back to the host. */
    if (blocks[1] && blocks[2]) {
        CHECK_OK(gpumem_memcpy(blocks[2], blocks[1], sizes[1]));
        CHECK(tst_download_verify(blocks[2], sizes[1], 12u));
    }
    for (size_t i = 0; i < TST_COUNT(sizes); ++i)
        if (blocks[i] && i != 2)
            CHECKF(tst_download_verify(blocks[i], sizes[i], (unsigned)(i + 11)), "block %zu lost its bytes", i);
    for (size_t i = 0; i < TST_COUNT(sizes); ++i) {
        if (!blocks[i])
            continue;
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(blocks[i], &pi));
        CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);
        CHECK(pi.memory == GPUMEM_POOL_MEMORY_DEVICE);
        CHECK_OK(gpumem_free_async(blocks[i], s));
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
}

static void test_rdma_pool(void)
{
    gpumem_device_info_t info = tst_info(0);
    g_base = tst_stats();
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.flags = GPUMEM_POOL_RDMA;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
        SKIP("memory pools are not available");
    }
    if (info.rdma_memory == GPUMEM_SUPPORT_NONE) {
        CHECKF(st == GPUMEM_ERROR_NOT_SUPPORTED, "RDMA pool on a device without it: %s", gpumem_status_string(st));
        CHECKF(tst_contains(gpumem_last_error_message(), "GPUMEM_POOL_RDMA") &&
                   tst_contains(gpumem_last_error_message(), "not available"),
               "message does not say what is missing: \"%s\"", gpumem_last_error_message());
        if (expect_is("none") && tst_backend() == GPUMEM_BACKEND_CUDA && info.virtual_memory == GPUMEM_SUPPORT_NATIVE &&
            getenv("FAKE_CUDA_NO_RDMA"))
            CHECKF(tst_contains(gpumem_last_error_message(), "GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED"),
                   "message does not name the attribute: \"%s\"", gpumem_last_error_message());
        CHECK(pool == NULL);
        return;
    }
    REQUIRE_OK(st);
    REQUIRE(pool != NULL);
    if (expect_is("refused-at-create")) {
        void *p = NULL;
        st = gpumem_malloc_from_pool_async(&p, MiB, pool, NULL);
        CHECKF(st == GPUMEM_ERROR_NOT_SUPPORTED, "the runtime refused the flag, yet: %s (%s)", gpumem_status_string(st),
               gpumem_last_error_message());
        CHECKF(tst_contains(gpumem_last_error_message(), "RDMA"), "message: \"%s\"", gpumem_last_error_message());
        CHECK(p == NULL);
    } else {
        use_rdma_pool(pool);
    }
    CHECK_OK(gpumem_pool_destroy(pool));

    /* gpumem's own pool asked by name serves it too. */
    props.implementation = GPUMEM_POOL_BUILTIN;
    pool = NULL;
    CHECK_OK(gpumem_pool_create(&pool, &props));
    if (pool) {
        if (!expect_is("refused-at-create"))
            use_rdma_pool(pool);
        CHECK_OK(gpumem_pool_destroy(pool));
    }
    CHECK_NO_LEAK(&g_base);
}

static void test_rdma_pool_refusals(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE || info.rdma_memory == GPUMEM_SUPPORT_NONE)
        SKIP("no pools, or no RDMA-capable memory (test_rdma_pool checks that refusal)");
    gpumem_pool_t pool = NULL;
    /* The vendor's pools cannot make it. */
    if (info.rdma_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.flags = GPUMEM_POOL_RDMA;
        props.implementation = GPUMEM_POOL_NATIVE;
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
        CHECKF(tst_contains(gpumem_last_error_message(), "GPUMEM_POOL_AUTO"), "message: \"%s\"",
               gpumem_last_error_message());
        CHECK(pool == NULL);
    }
    /* Only device memory. */
    static const int32_t others[] = {GPUMEM_POOL_MEMORY_PINNED, GPUMEM_POOL_MEMORY_MANAGED};
    for (size_t i = 0; i < TST_COUNT(others); ++i) {
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.flags = GPUMEM_POOL_RDMA;
        props.memory = others[i];
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
        CHECK(pool == NULL);
    }
}

static void test_rdma_vmm_memory(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.flags = GPUMEM_POOL_RDMA;
    gpumem_mem_handle_t h = 0;
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, 1 << 21, &props));
        SKIP("virtual memory management is not native here");
    }
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    gpumem_status_t st = gpumem_mem_create(&h, 2 * g, &props);
    if (info.rdma_memory == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
        CHECKF(tst_contains(gpumem_last_error_message(), "not available"), "message: \"%s\"",
               gpumem_last_error_message());
        CHECK(h == 0);
        return;
    }
    if (expect_is("refused-at-create")) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
        CHECKF(tst_contains(gpumem_last_error_message(), "RDMA"), "message: \"%s\"", gpumem_last_error_message());
        return;
    }
    REQUIRE_OK(st);
    void *va = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&va, 2 * g, 0, NULL));
    CHECK_OK(gpumem_mem_map(va, 2 * g, 0, h));
    gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
    CHECK_OK(gpumem_mem_set_access(va, 2 * g, &rw, 1));
    CHECK_OK(tst_upload(va, 2 * g, 21u));
    CHECK(tst_download_verify(va, 2 * g, 21u));
    CHECK_OK(gpumem_mem_unmap(va, 2 * g));
    CHECK_OK(gpumem_mem_address_free(va, 2 * g));
    CHECK_OK(gpumem_mem_release(h));
}

/* The CUDA driver's cuMemGetAccess, where the test runs over one gpumem loaded by name
 * (GPUMEM_CUDA_LIBRARY: the fake's suites); NULL elsewhere. */
typedef struct {
    int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
    int id;
} cu_location_t;
typedef int (*cu_get_access_fn)(unsigned long long *flags, const cu_location_t *location, unsigned long long ptr);

static cu_get_access_fn cuda_get_access(void)
{
    const char *path = getenv("GPUMEM_CUDA_LIBRARY");
    if (tst_backend() != GPUMEM_BACKEND_CUDA || !path)
        return NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    typedef int (*get_proc_fn)(const char *symbol, void **pfn, int version, unsigned long long flags, int *status);
    get_proc_fn get_proc = lib ? (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    void *fn = NULL;
    int found = 0;
    if (!get_proc || get_proc("cuMemGetAccess", &fn, 12000, 0, &found) != 0)
        return NULL;
    return (cu_get_access_fn)fn;
}

static unsigned long long driver_access(cu_get_access_fn get, int device, const void *ptr)
{
    cu_location_t loc = {1, device};
    unsigned long long flags = 99;
    int r = get(&flags, &loc, (unsigned long long)(uintptr_t)ptr);
    if (r != 0)
        tst_fail(__FILE__, __LINE__, "cuMemGetAccess(device %d, %p) gave %d", device, ptr, r);
    return flags;
}

/* An RDMA pool's pages are mapped for its device alone until a peer is granted access; then
 * for the peer too, the pages mapped before and after the grant (as the driver says). */
static void test_rdma_pool_maps_peers_on_grant(void)
{
    gpumem_device_info_t info = tst_info(0);
    int32_t count = 0;
    CHECK_OK(gpumem_device_count(&count));
    cu_get_access_fn get = cuda_get_access();
    if (count < 2 || !get || info.rdma_memory != GPUMEM_SUPPORT_NATIVE || info.memory_pools == GPUMEM_SUPPORT_NONE)
        SKIP("needs two devices of the fake CUDA driver with RDMA-capable memory");
    int32_t can = 0;
    CHECK_OK(gpumem_device_can_access_peer(&can, 1, 0));
    if (!can)
        SKIP("device 1 cannot reach device 0");
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.flags = GPUMEM_POOL_RDMA;
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_pool_create(&pool, &props));
    void *before = NULL, *after = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&before, MiB, pool, NULL));
    CHECK(driver_access(get, 0, before) == 3 /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */);
    CHECKF(driver_access(get, 1, before) == 0, "device 1 got access to an RDMA pool's page it was not granted");
    gpumem_access_desc_t rw = {1, GPUMEM_ACCESS_READWRITE};
    CHECK_OK(gpumem_pool_set_access(pool, &rw, 1));
    CHECK(driver_access(get, 1, before) == 3);
    REQUIRE_OK(gpumem_malloc_from_pool_async(&after, 64 * MiB, pool, NULL));
    CHECK(driver_access(get, 1, after) == 3);
    CHECK(driver_access(get, 0, after) == 3);
    int32_t flags = -1;
    CHECK_OK(gpumem_pool_get_access(&flags, pool, 1));
    CHECK(flags == GPUMEM_ACCESS_READWRITE);
    CHECK_OK(gpumem_free_async(before, NULL));
    CHECK_OK(gpumem_free_async(after, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK_OK(gpumem_pool_destroy(pool));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_support_level_as_configured), TEST(test_unknown_flags_are_refused),
        TEST(test_old_pool_props_sizes),        TEST(test_old_alloc_props_size),
        TEST(test_rdma_pool),                   TEST(test_rdma_pool_refusals),
        TEST(test_rdma_vmm_memory),             TEST(test_rdma_pool_maps_peers_on_grant),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
