/* Fallbacks: GPUMEM_DISABLE and GPUMEM_FALLBACK shape the support levels, and emulated features
 * behave as the contract says.  Runs in every suite; what it expects follows the environment.
 * SPDX-License-Identifier: MIT */
#include "harness.h"

#define PAGE 4096

static int disabled(const char *feature)
{
    const char *e = getenv("GPUMEM_DISABLE");
    if (!e)
        return 0;
    size_t n = strlen(feature);
    const char *p = e;
    while (*p) {
        while (*p == ',' || *p == ' ')
            ++p;
        const char *q = p;
        while (*q && *q != ',')
            ++q;
        const char *end = q;
        while (end > p && end[-1] == ' ')
            --end;
        if ((size_t)(end - p) == n && strncmp(p, feature, n) == 0)
            return 1;
        p = q;
    }
    return 0;
}

static int deny(void)
{
    const char *e = getenv("GPUMEM_FALLBACK");
    return e && strcmp(e, "deny") == 0;
}

static void test_levels_follow_environment(void)
{
    gpumem_device_info_t info = tst_info(0);
    const int dn = deny();
    struct {
        const char *feature;
        int32_t level;
        const char *field;
    } f[] = {
        {"managed", info.managed_memory, "managed_memory"},
        {"pools", info.memory_pools, "memory_pools"},
        {"vmm", info.virtual_memory, "virtual_memory"},
        {"host_register", info.host_register, "host_register"},
    };
    for (size_t i = 0; i < TST_COUNT(f); ++i) {
        if (disabled(f[i].feature)) {
            int32_t want = dn ? GPUMEM_SUPPORT_NONE : GPUMEM_SUPPORT_EMULATED;
            CHECKF(f[i].level == want, "GPUMEM_DISABLE=%s%s: %s is %d, want %d", f[i].feature,
                   dn ? " with deny" : "", f[i].field, (int)f[i].level, (int)want);
        } else if (dn) {
            /* deny never emulates */
            CHECKF(f[i].level != GPUMEM_SUPPORT_EMULATED, "GPUMEM_FALLBACK=deny but %s is EMULATED", f[i].field);
        } else {
            /* every one of these has a fallback: never NONE when fallbacks are allowed */
            CHECKF(f[i].level != GPUMEM_SUPPORT_NONE, "%s is NONE although fallbacks are allowed", f[i].field);
        }
    }
    if (disabled("ipc"))
        CHECKF(info.ipc_handle_types == 0, "GPUMEM_DISABLE=ipc but ipc_handle_types is 0x%x",
               (unsigned)info.ipc_handle_types);
    if (disabled("vmm"))
        CHECK(info.virtual_memory != GPUMEM_SUPPORT_NATIVE);
    if (info.managed_memory != GPUMEM_SUPPORT_NATIVE)
        CHECK(info.managed_migrates == 0);
}

static void test_native_allocations_are_not_fallbacks(void)
{
    gpumem_stats_t s0 = tst_stats();
    void *d = NULL, *h = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 4096));
    REQUIRE_OK(gpumem_host_alloc(&h, 4096, 0));
    gpumem_stats_t s1 = tst_stats();
    CHECK(s1.fallback_count == s0.fallback_count);
    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_host_free(h));
}

static void test_managed_fallback(void)
{
    gpumem_device_info_t info = tst_info(0);
    void *p = (void *)1;
    if (info.managed_memory == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_managed_alloc(&p, 4096, 0));
        CHECK(tst_contains(gpumem_last_error_message(), "managed"));
        return;
    }
    if (info.managed_memory != GPUMEM_SUPPORT_EMULATED)
        SKIP("managed memory is native");
    gpumem_stats_t s0 = tst_stats();
    void *m[3];
    for (int i = 0; i < 3; ++i) {
        REQUIRE_OK(gpumem_managed_alloc(&m[i], 3 * PAGE, 0));
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(m[i], &pi));
        CHECK(pi.kind == GPUMEM_KIND_MANAGED);
        CHECK(pi.emulated == 1);
        /* mapped pinned memory: one pointer for host and device */
        CHECK(pi.device_pointer == m[i]);
        tst_fill(m[i], 3 * PAGE, (unsigned)i);
        CHECK(tst_download_verify(m[i], 3 * PAGE, (unsigned)i));
        /* prefetch and advice succeed and are recorded */
        CHECK_OK(gpumem_prefetch_async(m[i], PAGE, 0, NULL));
        CHECK_OK(gpumem_advise(m[i], 3 * PAGE, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, GPUMEM_DEVICE_HOST));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        int32_t v = 99;
        CHECK_OK(gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_LAST_PREFETCH_LOCATION, m[i], PAGE));
        CHECK(v == 0);
        CHECK_OK(gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_PREFERRED_LOCATION, m[i], 3 * PAGE));
        CHECK(v == GPUMEM_DEVICE_HOST);
    }
    gpumem_stats_t s1 = tst_stats();
    CHECKF(s1.fallback_count == s0.fallback_count + 3, "fallback_count grew by %" PRIu64 " for 3 emulated allocations",
           s1.fallback_count - s0.fallback_count);
    CHECK(s1.current_bytes[GPUMEM_KIND_MANAGED] == s0.current_bytes[GPUMEM_KIND_MANAGED] + 9 * PAGE);
    CHECK(s1.current_bytes[GPUMEM_KIND_HOST_PINNED] == s0.current_bytes[GPUMEM_KIND_HOST_PINNED]);
    for (int i = 0; i < 3; ++i) {
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(m[i]));
        CHECK_OK(gpumem_free(m[i]));
    }
}

static void test_pool_fallback(void)
{
    gpumem_device_info_t info = tst_info(0);
    void *p = (void *)1;
    if (info.memory_pools == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_malloc_async(&p, 4096, NULL));
        CHECK(tst_contains(gpumem_last_error_message(), "pool"));
        return;
    }
    if (info.memory_pools != GPUMEM_SUPPORT_EMULATED)
        SKIP("memory pools are native");
    gpumem_stats_t s0 = tst_stats();
    void *a[4];
    for (int i = 0; i < 4; ++i) {
        REQUIRE_OK(gpumem_malloc_async(&a[i], 1000, NULL));
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(a[i], &pi));
        CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);
        CHECK(pi.emulated == 1);
    }
    gpumem_stats_t s1 = tst_stats();
    CHECKF(s1.fallback_count == s0.fallback_count + 4, "fallback_count grew by %" PRIu64 " for 4 emulated allocations",
           s1.fallback_count - s0.fallback_count);
    for (int i = 0; i < 4; ++i)
        CHECK_OK(gpumem_free_async(a[i], NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.implementation = GPUMEM_POOL_NATIVE;
    gpumem_pool_t pool = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
}

static void test_vmm_fallback(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is native");
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    size_t g = 0;
    gpumem_mem_handle_t h = 0;
    void *va = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, 1 << 21, &props));
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_address_reserve(&va, 1 << 21, 0, NULL));
    gpumem_buffer_t b = NULL;
    if (info.virtual_memory == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_buffer_create(&b, 4096, 1 << 20, 0));
        return;
    }
    gpumem_stats_t s0 = tst_stats();
    REQUIRE_OK(gpumem_buffer_create(&b, 4096, 1 << 24, 0));
    gpumem_stats_t s1 = tst_stats();
    CHECK(s1.fallback_count > s0.fallback_count);
    void *d = NULL;
    CHECK_OK(gpumem_buffer_data(b, &d));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(d, &pi));
    CHECK(pi.kind == GPUMEM_KIND_BUFFER && pi.emulated == 1);
    CHECK_OK(tst_upload(d, 4096, 5));
    CHECK_OK(gpumem_buffer_resize(b, 1 << 22));
    CHECK_OK(gpumem_buffer_data(b, &d)); /* may have moved */
    CHECK(tst_download_verify(d, 4096, 5));
    CHECK_OK(gpumem_buffer_destroy(b));
}

static void test_ipc_fallback(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD)
        SKIP("IPC handles are available");
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.handle_types = GPUMEM_HANDLE_POSIX_FD;
        gpumem_pool_t pool = NULL;
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
    }
    gpumem_pool_t pool = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_import_from_shareable_handle(&pool, 0, GPUMEM_HANDLE_POSIX_FD));
}

static void test_register_fallback(void)
{
    gpumem_device_info_t info = tst_info(0);
    char *r = (char *)aligned_alloc(PAGE, 2 * PAGE);
    REQUIRE(r != NULL);
    if (info.host_register == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_host_register(r, 2 * PAGE, 0));
        CHECK(tst_contains(gpumem_last_error_message(), "regist"));
        free(r);
        return;
    }
    if (info.host_register != GPUMEM_SUPPORT_EMULATED) {
        free(r);
        SKIP("host registration is native");
    }
    gpumem_stats_t s0 = tst_stats();
    REQUIRE_OK(gpumem_host_register(r, 2 * PAGE, GPUMEM_HOST_REGISTER_MAPPED));
    gpumem_stats_t s1 = tst_stats();
    CHECK(s1.fallback_count == s0.fallback_count + 1);
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(r + 5, &pi));
    CHECK(pi.kind == GPUMEM_KIND_HOST_REGISTERED && pi.emulated == 1 && pi.base == r);
    /* Still refuses overlaps: the registration is recorded. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(r + PAGE, PAGE, 0));
    tst_fill(r, 2 * PAGE, 3);
    CHECK(tst_download_verify(r, 2 * PAGE, 3));
    CHECK_OK(gpumem_host_unregister(r));
    free(r);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_levels_follow_environment), TEST(test_native_allocations_are_not_fallbacks),
        TEST(test_managed_fallback),          TEST(test_pool_fallback),
        TEST(test_vmm_fallback),              TEST(test_ipc_fallback),
        TEST(test_register_fallback),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
