/* Page-locked host memory and host registration. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <sys/mman.h>

#define PAGE 4096

static void test_host_alloc_flags(void)
{
    const uint32_t ok_flags[] = {
        0,
        GPUMEM_HOST_PORTABLE,
        GPUMEM_HOST_MAPPED,
        GPUMEM_HOST_WRITE_COMBINED,
        GPUMEM_HOST_COHERENT,
        GPUMEM_HOST_NONCOHERENT,
        GPUMEM_HOST_PORTABLE | GPUMEM_HOST_MAPPED | GPUMEM_HOST_WRITE_COMBINED,
        GPUMEM_HOST_MAPPED | GPUMEM_HOST_COHERENT,
        GPUMEM_HOST_MAPPED | GPUMEM_HOST_NONCOHERENT,
    };
    for (size_t i = 0; i < TST_COUNT(ok_flags); ++i) {
        void *p = NULL;
        const size_t n = 10000 + i;
        REQUIRE_OK(gpumem_host_alloc(&p, n, ok_flags[i]));
        CHECK(p != NULL);
        /* Pinned memory is host memory: the CPU uses it directly. */
        tst_fill(p, n, (unsigned)i);
        CHECK(tst_download_verify(p, n, (unsigned)i));
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info((char *)p + n - 1, &pi));
        CHECK(pi.kind == GPUMEM_KIND_HOST_PINNED);
        CHECK(pi.base == p);
        CHECK(pi.alloc_size == n);
        CHECK(pi.device == GPUMEM_DEVICE_HOST);
        CHECKF(pi.flags == ok_flags[i], "flags 0x%x recorded as 0x%x", (unsigned)ok_flags[i], (unsigned)pi.flags);
        CHECK(pi.emulated == 0);
        if (i % 2)
            CHECK_OK(gpumem_host_free(p));
        else
            CHECK_OK(gpumem_free(p)); /* gpumem_free takes pinned memory too */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(p));
    }
    void *p = (void *)1;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_alloc(&p, 64, GPUMEM_HOST_COHERENT | GPUMEM_HOST_NONCOHERENT));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_alloc(&p, 64, 0x20));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_alloc(&p, 64, 0x80000000u));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_alloc(NULL, 64, 0));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_host_alloc(&p, SIZE_MAX, 0));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_host_alloc(&p, SIZE_MAX / 2, GPUMEM_HOST_MAPPED));
    p = (void *)1;
    CHECK_OK(gpumem_host_alloc(&p, 0, 0));
    CHECK(p == NULL);
}

static void test_host_device_pointer(void)
{
    void *p = NULL, *d = NULL, *d2 = NULL;
    REQUIRE_OK(gpumem_host_alloc(&p, 8192, GPUMEM_HOST_MAPPED));
    REQUIRE_OK(gpumem_host_get_device_pointer(&d, p));
    CHECK(d != NULL);
    /* Interior pointers map to the same offset. */
    CHECK_OK(gpumem_host_get_device_pointer(&d2, (char *)p + 1000));
    CHECK((char *)d2 == (char *)d + 1000);
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    CHECK(pi.device_pointer == d);
    /* The device address reads the same bytes (through a copy). */
    tst_fill(p, 8192, 5);
    CHECK(tst_download_verify(d, 8192, 5));
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(d == p);

    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_get_device_pointer(NULL, p));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_get_device_pointer(&d, NULL));
    /* Memory gpumem did not pin, or device memory, has no such address.  (semantics.md does not say
     * which status: INVALID_POINTER by the header's wording, INVALID_VALUE by its default rule.) */
    int on_stack = 0;
    CHECK_ONE_OF(gpumem_host_get_device_pointer(&d, &on_stack), GPUMEM_ERROR_INVALID_POINTER, GPUMEM_ERROR_INVALID_VALUE);
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 64));
    CHECK_ONE_OF(gpumem_host_get_device_pointer(&d, dev), GPUMEM_ERROR_INVALID_POINTER, GPUMEM_ERROR_INVALID_VALUE);
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_host_free(p));
    CHECK_ONE_OF(gpumem_host_get_device_pointer(&d, p), GPUMEM_ERROR_INVALID_POINTER, GPUMEM_ERROR_INVALID_VALUE);
}

static void test_host_free_rules(void)
{
    void *p = NULL;
    REQUIRE_OK(gpumem_host_alloc(&p, 4096, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free((char *)p + 8));
    int on_stack = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(&on_stack));
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 64));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(dev));
    CHECK_OK(gpumem_free(dev));
    gpumem_device_info_t info = tst_info(0);
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        /* Emulated managed memory is pinned underneath, but it is not HOST_PINNED to the caller. */
        void *m = NULL;
        REQUIRE_OK(gpumem_managed_alloc(&m, 4096, 0));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(m));
        CHECK_OK(gpumem_free(m));
    }
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        void *a = NULL;
        REQUIRE_OK(gpumem_malloc_async(&a, 4096, NULL));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(a));
        CHECK_OK(gpumem_free_async(a, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
    }
    /* Still alive after all the refusals. */
    tst_fill(p, 4096, 9);
    CHECK(tst_verify(p, 4096, 9) == 4096);
    CHECK_OK(gpumem_host_free(p));
}

static void test_register(void)
{
    gpumem_device_info_t info = tst_info(0);
    const size_t n = 16 * PAGE;
    char *mem = (char *)aligned_alloc(PAGE, n);
    REQUIRE(mem != NULL);
    tst_fill(mem, n, 3);
    if (info.host_register == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_host_register(mem, n, 0));
        CHECKF(tst_contains(gpumem_last_error_message(), "regist"), "message does not name the feature: \"%s\"",
               gpumem_last_error_message());
        free(mem);
        SKIP("host registration is not supported (%s)", "GPUMEM_FALLBACK=deny?");
    }
    gpumem_stats_t before = tst_stats();
    REQUIRE_OK(gpumem_host_register(mem, n, GPUMEM_HOST_REGISTER_MAPPED | GPUMEM_HOST_REGISTER_PORTABLE));
    gpumem_stats_t after = tst_stats();
    CHECK(after.current_bytes[GPUMEM_KIND_HOST_REGISTERED] == before.current_bytes[GPUMEM_KIND_HOST_REGISTERED] + n);
    CHECK(after.fallback_count == before.fallback_count + (info.host_register == GPUMEM_SUPPORT_EMULATED ? 1 : 0));
    /* Registration keeps the contents. */
    CHECK(tst_verify(mem, n, 3) == n);

    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(mem + 5 * PAGE + 7, &pi));
    CHECK(pi.kind == GPUMEM_KIND_HOST_REGISTERED);
    CHECK(pi.base == mem);
    CHECK(pi.alloc_size == n);
    CHECK(pi.device == GPUMEM_DEVICE_HOST);
    CHECK(pi.emulated == (info.host_register == GPUMEM_SUPPORT_EMULATED));
    CHECK(pi.flags == (GPUMEM_HOST_REGISTER_MAPPED | GPUMEM_HOST_REGISTER_PORTABLE));

    void *d = NULL, *d2 = NULL;
    CHECK_OK(gpumem_host_get_device_pointer(&d, mem));
    CHECK_OK(gpumem_host_get_device_pointer(&d2, mem + 100));
    CHECK((char *)d2 == (char *)d + 100);
    CHECK(tst_download_verify(d, n, 3));
    /* Copies into registered memory land in the caller's memory. */
    CHECK_OK(tst_upload(mem + PAGE, PAGE, 4));
    CHECK(tst_verify(mem + PAGE, PAGE, 4) == PAGE);

    /* Overlaps are refused, whole or partial, and change nothing. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem, n, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem + PAGE, PAGE, 0));
    char *other = (char *)aligned_alloc(PAGE, 64 * PAGE);
    REQUIRE(other != NULL);
    /* Ranges that straddle either end of the registered one. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem + n - PAGE, 2 * PAGE, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem - PAGE, 2 * PAGE, 0));

    /* The wrong release calls. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(mem));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(mem));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_unregister(mem + PAGE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_unregister(other));
    CHECK_OK(gpumem_pointer_get_info(mem, &pi));
    CHECK(pi.kind == GPUMEM_KIND_HOST_REGISTERED);

    /* Two registrations side by side, READ_ONLY accepted. */
    CHECK_OK(gpumem_host_register(other, PAGE, GPUMEM_HOST_REGISTER_READ_ONLY));
    CHECK_OK(gpumem_host_register(other + PAGE, PAGE, 0));
    CHECK_OK(gpumem_host_unregister(other));
    CHECK_OK(gpumem_host_unregister(other + PAGE));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_unregister(other));

    CHECK_OK(gpumem_host_unregister(mem));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_unregister(mem));
    CHECK_OK(gpumem_pointer_get_info(mem, &pi));
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
    /* Unregistering leaves the caller's memory and contents alone. */
    CHECK(tst_verify(mem + PAGE, PAGE, 4) == PAGE);
    /* ...and it can be registered again. */
    CHECK_OK(gpumem_host_register(mem, n, 0));
    CHECK_OK(gpumem_host_unregister(mem));

    /* Bad arguments. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(NULL, PAGE, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem, 0, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem, PAGE, 0x4));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(mem, PAGE, 0x100));
    CHECK_ONE_OF(gpumem_host_unregister(NULL), GPUMEM_ERROR_INVALID_POINTER, GPUMEM_ERROR_INVALID_VALUE);
    free(other);
    free(mem);
}

/* Registering memory gpumem already owns is refused. */
static void test_register_gpumem_memory(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.host_register == GPUMEM_SUPPORT_NONE)
        SKIP("host registration is not supported");
    void *p = NULL;
    REQUIRE_OK(gpumem_host_alloc(&p, 4 * PAGE, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(p, 4 * PAGE, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register((char *)p + PAGE, PAGE, 0));
    CHECK_OK(gpumem_host_free(p));
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_managed_alloc(&p, 4 * PAGE, 0));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(p, PAGE, 0));
        CHECK_OK(gpumem_free(p));
    }
    /* Stream-ordered blocks and VMM reservations are gpumem's too: registering them is refused,
     * so a block never reports kind HOST_REGISTERED. */
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_malloc_async(&p, 4 * PAGE, NULL));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(p, PAGE, 0));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(p, 4 * PAGE, 0));
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(p, &pi));
        CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
    }
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        size_t g = 0;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        REQUIRE_OK(gpumem_mem_address_reserve(&p, 2 * g, 0, NULL));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(p, PAGE, 0));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register((char *)p + g, PAGE, 0));
        CHECK_OK(gpumem_mem_address_free(p, 2 * g));
    }
    if (tst_backend() == GPUMEM_BACKEND_HOST) {
        /* On the host backend device memory is host memory, still gpumem's own. */
        REQUIRE_OK(gpumem_malloc(&p, 4 * PAGE));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(p, PAGE, 0));
        CHECK_OK(gpumem_free(p));
    }
}

/* A freed block waiting in the pinned cache stays freed memory for as long as it waits there, however
 * many frees came since (the pointer directory remembers only the latest 4096): a late copy through the
 * stale pointer is refused, so the next gpumem_host_alloc cannot hand it out with the caller's stale bytes. */
static void test_cached_block_stays_freed(void)
{
    if (getenv("GPUMEM_PINNED_CACHE"))
        SKIP("GPUMEM_PINNED_CACHE is set: this case needs the default cache");
    const size_t n = 3u << 20;
    unsigned char *stale = NULL;
    REQUIRE_OK(gpumem_host_alloc((void **)&stale, n, 0));
    memset(stale, 0x11, n);
    REQUIRE_OK(gpumem_host_free(stale));
    /* More frees than the directory remembers. */
    for (int i = 0; i < 5000; ++i) {
        void *p = NULL;
        REQUIRE_OK(gpumem_malloc(&p, 4096));
        REQUIRE_OK(gpumem_free(p));
    }
    unsigned char buf[64];
    memset(buf, 0x5a, sizeof buf);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(stale, buf, sizeof buf));
    CHECKF(strstr(gpumem_last_error_message(), "freed") != NULL, "message: %s", gpumem_last_error_message());
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(stale + n - 64, buf, sizeof buf));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(buf, stale + 4096, sizeof buf));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset(stale, 0x5a, sizeof buf));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(stale));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(stale));
    /* Handed out again (from the cache, most likely at the same address): live memory, copies work,
     * and no refused write reached it. */
    unsigned char *again = NULL;
    REQUIRE_OK(gpumem_host_alloc((void **)&again, n, 0));
    if (again == stale) {
        size_t at = 0;
        while (at < sizeof buf && again[at] == 0x11)
            ++at;
        CHECKF(at == sizeof buf, "byte %zu of the reused block is 0x%02x", at, again[at]);
    }
    CHECK_OK(gpumem_memcpy(again, buf, sizeof buf));
    CHECK(again[0] == 0x5a && again[63] == 0x5a);
    CHECK_OK(gpumem_host_free(again));

    /* Emulated managed memory is pinned memory underneath, and waits in the same cache. */
    if (tst_info(0).managed_memory != GPUMEM_SUPPORT_EMULATED)
        return;
    unsigned char *m = NULL;
    REQUIRE_OK(gpumem_managed_alloc((void **)&m, n, 0));
    REQUIRE_OK(gpumem_free(m));
    for (int i = 0; i < 5000; ++i) {
        void *p = NULL;
        REQUIRE_OK(gpumem_malloc(&p, 4096));
        REQUIRE_OK(gpumem_free(p));
    }
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(m + 8, buf, sizeof buf));
    CHECKF(strstr(gpumem_last_error_message(), "managed") != NULL, "message: %s", gpumem_last_error_message());
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(m));
}

/* Registration refuses pages the process cannot use as the flags say (the vendors pin them and
 * refuse), and nothing later writes registered read-only memory: the copy or fill is
 * INVALID_VALUE, never a fault inside the library. */
static void test_register_inaccessible(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.host_register == GPUMEM_SUPPORT_NONE)
        SKIP("host registration is not supported");
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register((void *)0x1000, PAGE, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE,
                 gpumem_host_register((void *)0x1000, PAGE, GPUMEM_HOST_REGISTER_READ_ONLY));
    char *none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ro = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *rw = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(none != MAP_FAILED && ro != MAP_FAILED && rw != MAP_FAILED);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(none, PAGE, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(none, PAGE, GPUMEM_HOST_REGISTER_READ_ONLY));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(ro, PAGE, 0));
    CHECKF(strstr(gpumem_last_error_message(), "GPUMEM_HOST_REGISTER_READ_ONLY") != NULL, "message: %s",
           gpumem_last_error_message());
    /* A range whose second page went away. */
    REQUIRE(munmap(rw + PAGE, PAGE) == 0);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_host_register(rw, 2 * PAGE, 0));
    CHECK_OK(gpumem_host_register(rw, PAGE, 0));
    CHECK_OK(gpumem_host_unregister(rw));

    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, PAGE));
    REQUIRE_OK(gpumem_memset(d, 0x3c, PAGE));
    /* The HIP runtime pins every page for writing (hipHostRegisterReadOnly shares its bit with
     * coarse-grained registration): a read-only page is NOT_SUPPORTED there, writable pages still
     * register READ_ONLY. */
    const gpumem_status_t ro_st = gpumem_host_register(ro, PAGE, GPUMEM_HOST_REGISTER_READ_ONLY);
    if (tst_backend() == GPUMEM_BACKEND_HIP && info.host_register == GPUMEM_SUPPORT_NATIVE) {
        CHECK(ro_st == GPUMEM_ERROR_NOT_SUPPORTED);
        REQUIRE(mprotect(ro, PAGE, PROT_READ | PROT_WRITE) == 0);
        CHECK_OK(gpumem_host_register(ro, PAGE, GPUMEM_HOST_REGISTER_READ_ONLY));
    } else {
        CHECK(ro_st == GPUMEM_SUCCESS);
    }
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(ro, d, 4));
    CHECKF(strstr(gpumem_last_error_message(), "read-only") != NULL, "message: %s", gpumem_last_error_message());
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_async(ro + 8, d, 4, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(ro, 0, 4));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_async(ro, 0, PAGE, NULL));
    /* Reading it is what it is for. */
    CHECK_OK(gpumem_memcpy(d, ro, PAGE));
    unsigned char back[16];
    CHECK_OK(gpumem_memcpy(back, d, sizeof back));
    CHECK(back[0] == 0 && back[15] == 0);
    CHECK_OK(gpumem_host_unregister(ro));
    CHECK_OK(gpumem_free(d));
    munmap(none, PAGE);
    munmap(ro, PAGE);
    munmap(rw, PAGE);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_host_alloc_flags), TEST(test_host_device_pointer), TEST(test_host_free_rules),
        TEST(test_register),         TEST(test_register_gpumem_memory), TEST(test_cached_block_stays_freed),
        TEST(test_register_inaccessible),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
