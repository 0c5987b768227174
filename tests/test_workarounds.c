/*
 * Known vendor bugs (src/backends/gpu/vendor_bugs.def): gpumem_workarounds_get,
 * and the behaviour each workaround guarantees, checked on every backend.  The
 * fake configs fake-hip-rocm-7.2.4 and fake-hip-rocm-5.7 reproduce the bugs
 * (tests/fakes/README.md): there these checks pass only because the
 * workarounds hold.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <unistd.h>

static int in_force(const char *name)
{
    const char *names[32];
    size_t count = 0;
    if (gpumem_workarounds_get(names, NULL, 32, &count) != GPUMEM_SUCCESS)
        return 0;
    for (size_t i = 0; i < count && i < 32; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void test_list(void)
{
    size_t count = 99;
    CHECK_OK(gpumem_workarounds_get(NULL, NULL, 0, &count));
    CHECK(count < 32);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_workarounds_get(NULL, NULL, 0, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_workarounds_get(NULL, NULL, 1, &count));
    const char *names[32], *descriptions[32];
    size_t again = 0;
    CHECK_OK(gpumem_workarounds_get(names, descriptions, 32, &again));
    CHECK(again == count);
    for (size_t i = 0; i < again; i++) {
        CHECK(names[i] && names[i][0] && descriptions[i] && strstr(descriptions[i], "workaround: "));
        NOTE("in force: %s: %s", names[i], descriptions[i]);
    }
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(count == 0);
    /* A smaller array gets the first entries and the full count. */
    if (count > 1) {
        const char *one[1] = {NULL};
        size_t n = 0;
        CHECK_OK(gpumem_workarounds_get(one, NULL, 1, &n));
        CHECK(n == count && one[0] == names[0]);
    }
}

/* A vendor pool, where it is one and does not leak (hip_malloc_async_leak: there
 * only GPUMEM_POOL_NATIVE gets one, knowingly). */
static gpumem_pool_t native_pool(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools != GPUMEM_SUPPORT_NATIVE || tst_backend() == GPUMEM_BACKEND_HOST ||
        in_force("hip_malloc_async_leak"))
        return NULL;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.implementation = GPUMEM_POOL_NATIVE;
    gpumem_pool_t pool = NULL;
    if (gpumem_pool_create(&pool, &props) != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "native pool: %s", gpumem_last_error_message());
        return NULL;
    }
    return pool;
}

/* The release threshold holds at synchronisation, whether or not the runtime applies it. */
static void test_release_threshold_applied(void)
{
    gpumem_pool_t pool = native_pool();
    if (!pool)
        SKIP("no vendor pools here (or they leak: see gpumem-info)");
    uint64_t threshold = 4u << 20, reserved = 0;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    void *p[4] = {NULL};
    for (int i = 0; i < 4; i++)
        CHECK_OK(gpumem_malloc_from_pool_async(&p[i], 64u << 20, pool, s));
    for (int i = 0; i < 4; i++)
        CHECK_OK(gpumem_free_async(p[i], s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECKF(reserved <= threshold, "the pool keeps %" PRIu64 " bytes after synchronisation, threshold %" PRIu64,
           reserved, threshold);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* A failed native allocation is OUT_OF_MEMORY, and the pool still works after it. */
static void test_failed_native_alloc(void)
{
    gpumem_pool_t pool = native_pool();
    if (!pool)
        SKIP("no vendor pools here (or they leak: see gpumem-info)");
    gpumem_device_info_t info = tst_info(0);
    size_t big = (size_t)(info.total_memory / 10 * 6);
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&a, big, pool, NULL));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc_from_pool_async(&b, big, pool, NULL));
    CHECK(b == NULL);
    CHECK_OK(gpumem_free_async(a, NULL));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_malloc_from_pool_async(&c, big, pool, NULL));
    CHECK_OK(gpumem_free_async(c, NULL));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* Registered memory's device address is the runtime's answer, not the host address.
 * GPUMEM_TEST_REGISTER_ALIAS (set by the fake configs that move it) is the bits that differ. */
static void test_registered_device_address(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.host_register != GPUMEM_SUPPORT_NATIVE)
        SKIP("host registration is not native here");
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 4 * page;
    unsigned char *buf = NULL;
    REQUIRE(posix_memalign((void **)&buf, page, n) == 0);
    memset(buf, 0, n);
    REQUIRE_OK(gpumem_host_register(buf, n, 0));
    void *dptr = NULL;
    CHECK_OK(gpumem_host_get_device_pointer(&dptr, buf + 100));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(buf + 100, &pi));
    CHECK(pi.kind == GPUMEM_KIND_HOST_REGISTERED);
    CHECK((char *)pi.device_pointer + 100 == (char *)dptr);
    const char *alias = getenv("GPUMEM_TEST_REGISTER_ALIAS");
    uintptr_t bits = alias ? (uintptr_t)strtoull(alias, NULL, 0) : 0;
    CHECKF((uintptr_t)dptr == ((uintptr_t)(buf + 100) ^ bits), "device address %p, host %p, expected bits 0x%llx", dptr,
           (void *)(buf + 100), (unsigned long long)bits);
    if (bits)
        CHECK(in_force("hip_host_register_device_address"));
    /* Copies through the host address still work. */
    CHECK_OK(gpumem_memset(buf, 0x42, n));
    CHECK(tst_verify_byte(buf, n, 0x42) == n);
    CHECK_OK(gpumem_host_unregister(buf));
    free(buf);
}

/* Stream-ordered allocations from the default pool give all their memory back. */
static void test_default_pool_does_not_leak(void)
{
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        SKIP("the host's free memory is the whole machine's: not a measure of leaks");
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE)
        SKIP("no pools here");
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_device_get_pool(&pool, 0));
    size_t free0 = 0, free1 = 0, total = 0;
    CHECK_OK(gpumem_pool_trim_to(pool, 0));
    CHECK_OK(gpumem_mem_get_info(&free0, &total));
    for (int i = 0; i < 16; i++) {
        void *p = NULL;
        CHECK_OK(gpumem_malloc_async(&p, 8u << 20, NULL));
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_device_synchronize());
    }
    CHECK_OK(gpumem_pool_trim_to(pool, 0));
    CHECK_OK(gpumem_mem_get_info(&free1, &total));
    CHECKF(free1 == free0, "free device memory went from %zu to %zu bytes", free0, free1);
}

/* Map `size` bytes of new physical memory at `va` with read-write access. */
static int map_rw(void *va, size_t size, gpumem_mem_handle_t *handle)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    const gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
    return gpumem_mem_create(handle, size, &props) == GPUMEM_SUCCESS &&
           gpumem_mem_map(va, size, 0, *handle) == GPUMEM_SUCCESS &&
           gpumem_mem_set_access(va, size, &rw, 1) == GPUMEM_SUCCESS;
}

/* A fill across the seam of two VMM reservations sets every byte, although the runtime
 * refuses one such fill (cuda_memset_across_reservations, hip_memset_across_reservations;
 * the fakes refuse it too). */
static void test_fill_across_reservations(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is not native here");
    if (tst_backend() == GPUMEM_BACKEND_CUDA)
        CHECK(in_force("cuda_memset_across_reservations"));
    if (tst_backend() == GPUMEM_BACKEND_HIP)
        CHECK(in_force("hip_memset_across_reservations"));
    const size_t g = (size_t)info.vmm_granularity;
    void *a = NULL, *b = NULL;
    gpumem_mem_handle_t ha = 0, hb = 0;
    REQUIRE_OK(gpumem_mem_address_reserve(&a, g, 0, NULL));
    REQUIRE_OK(gpumem_mem_address_reserve(&b, g, 0, (char *)a + g));
    if (b == (char *)a + g && map_rw(a, g, &ha) && map_rw(b, g, &hb)) {
        char *seam = (char *)b;
        unsigned char out[256];
        CHECK_OK(gpumem_memset(seam - 2000, 0, 4000));
        CHECK_OK(gpumem_memset(seam - 100, 0x6b, 200));
        gpumem_stream_t s = NULL;
        REQUIRE_OK(gpumem_stream_create(&s));
        CHECK_OK(gpumem_memset_async(seam - 20, 0x2c, 40, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_memcpy(out, seam - 128, sizeof out));
        CHECK(tst_verify_byte(out, 28, 0) == 28);
        CHECK(tst_verify_byte(out + 28, 80, 0x6b) == 80);
        CHECK(tst_verify_byte(out + 108, 40, 0x2c) == 40);
        CHECK(tst_verify_byte(out + 148, 80, 0x6b) == 80);
        CHECK(tst_verify_byte(out + 228, 28, 0) == 28);
    } else {
        NOTE("the hint %p was not honoured (%p) or mapping failed: %s", (void *)((char *)a + g), b,
             gpumem_last_error_message());
    }
    if (ha)
        CHECK_OK(gpumem_mem_unmap(a, g));
    if (hb)
        CHECK_OK(gpumem_mem_unmap(b, g));
    if (ha)
        CHECK_OK(gpumem_mem_release(ha));
    if (hb)
        CHECK_OK(gpumem_mem_release(hb));
    CHECK_OK(gpumem_mem_address_free(b, g));
    CHECK_OK(gpumem_mem_address_free(a, g));
}

/* A native pool destroyed while it has live blocks: the blocks stay usable until freed, and
 * the process goes on synchronising (cuda_pool_destroy_deferred, hip_pool_destroy_deferred:
 * gpumem destroys the pool itself after the last free; the fakes' full configs kill the
 * process where a pool with live blocks reaches the runtime's destroy). */
static void test_pool_destroyed_with_live_blocks(void)
{
    gpumem_pool_t pool = native_pool();
    if (!pool)
        SKIP("no vendor pools here (or they leak: see gpumem-info)");
    if (tst_backend() == GPUMEM_BACKEND_CUDA)
        CHECK(in_force("cuda_pool_destroy_deferred"));
    if (tst_backend() == GPUMEM_BACKEND_HIP)
        CHECK(in_force("hip_pool_destroy_deferred"));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    void *a = NULL, *b = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&a, 1u << 20, pool, s));
    REQUIRE_OK(gpumem_malloc_from_pool_async(&b, 4096, pool, s));
    CHECK_OK(gpumem_pool_destroy(pool));
    CHECK_OK(gpumem_memset_async(a, 0x3d, 1u << 20, s));
    CHECK_OK(gpumem_free_async(a, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_memset_async(b, 1, 4096, s));
    CHECK_OK(gpumem_free_async(b, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_stream_destroy(s));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_list),
        TEST(test_release_threshold_applied),
        TEST(test_failed_native_alloc),
        TEST(test_registered_device_address),
        TEST(test_default_pool_does_not_leak),
        TEST(test_fill_across_reservations),
        TEST(test_pool_destroyed_with_live_blocks),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
