/* Virtual memory management. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

static gpumem_device_info_t g_info;
static size_t g; /* minimum granularity */
static const gpumem_access_desc_t RW = {0, GPUMEM_ACCESS_READWRITE};

/* Native VMM, else SKIP (test_raw_calls_without_native_vmm checks what happens then). */
#define NEED_VMM()                                                                                                \
    do {                                                                                                          \
        if (!need_vmm())                                                                                          \
            SKIP("virtual memory management is not native here (level %d)", (int)g_info.virtual_memory);        \
        if (g == 0)                                                                                               \
            return;                                                                                               \
    } while (0)

static int need_vmm(void)
{
    g_info = tst_info(0);
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    if (g_info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        return 0;
    g = 0;
    if (gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM) != GPUMEM_SUCCESS || g == 0) {
        tst_fail(__FILE__, __LINE__, "no granularity: %s", gpumem_last_error_message());
        g = 0;
    }
    return 1;
}

/* Without native VMM every raw call is NOT_SUPPORTED, naming the feature. */
static void test_raw_calls_without_native_vmm(void)
{
    g_info = tst_info(0);
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    if (g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is native");
    {
        /* There is nothing to emulate the raw calls with. */
        size_t gran = 0;
        gpumem_mem_handle_t h = 0;
        void *p = NULL;
        char buf[8192];
        uint64_t flags = 0;
        int32_t fd = -1;
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_get_granularity(&gran, &props, GPUMEM_GRANULARITY_MINIMUM));
        CHECKF(tst_contains(gpumem_last_error_message(), "virtual") || tst_contains(gpumem_last_error_message(), "vmm"),
               "message does not name the feature: \"%s\"", gpumem_last_error_message());
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, 4096, &props));
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_address_reserve(&p, 4096, 0, NULL));
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_import_from_shareable_handle(&h, 0, GPUMEM_HANDLE_POSIX_FD));
        /* These need a handle or a reservation, which cannot exist here: either answer is right. */
        CHECK_ONE_OF(gpumem_mem_map(buf, 4096, 0, 1), GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_HANDLE);
        CHECK_ONE_OF(gpumem_mem_unmap(buf, 4096), GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_VALUE);
        CHECK_ONE_OF(gpumem_mem_set_access(buf, 4096, &RW, 1), GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_VALUE);
        CHECK_ONE_OF(gpumem_mem_get_access(&flags, 0, buf), GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_VALUE);
        CHECK_ONE_OF(gpumem_mem_address_free(buf, 4096), GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_POINTER);
        CHECK_ONE_OF(gpumem_mem_release(1), GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_HANDLE);
        CHECK_ONE_OF(gpumem_mem_export_to_shareable_handle(&fd, 1, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_NOT_SUPPORTED,
                     GPUMEM_ERROR_INVALID_HANDLE);
    }
}

static gpumem_mem_handle_t create(size_t size)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    gpumem_mem_handle_t h = 0;
    gpumem_status_t st = gpumem_mem_create(&h, size, &props);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_mem_create(%zu): %s", size, gpumem_last_error_message());
    return h;
}

static char *reserve(size_t size)
{
    void *p = NULL;
    gpumem_status_t st = gpumem_mem_address_reserve(&p, size, 0, NULL);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_mem_address_reserve(%zu): %s", size, gpumem_last_error_message());
    return (char *)p;
}

static uint64_t access_of(void *p)
{
    uint64_t f = 999;
    gpumem_status_t st = gpumem_mem_get_access(&f, 0, p);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_mem_get_access: %s", gpumem_last_error_message());
    return f;
}

static void test_granularity(void)
{
    NEED_VMM();
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    size_t rec = 0;
    CHECK(g == g_info.vmm_granularity);
    CHECK_OK(gpumem_mem_get_granularity(&rec, &props, GPUMEM_GRANULARITY_RECOMMENDED));
    CHECK(rec == g_info.vmm_recommended_granularity);
    CHECK(rec >= g && rec % g == 0);
    size_t x = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_granularity(&x, &props, 2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_granularity(&x, &props, -1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_granularity(NULL, &props, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_granularity(&x, NULL, 0));
    int32_t count = 1;
    CHECK_OK(gpumem_device_count(&count));
    props.device = count;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_mem_get_granularity(&x, &props, 0));
    gpumem_mem_handle_t h = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_mem_create(&h, g, &props));
    props.device = 0;
    props.handle_types = 0x4; /* 0x1 is POSIX_FD, 0x2 FABRIC */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, g, &props));
}

static void test_map_and_access(void)
{
    NEED_VMM();
    gpumem_mem_handle_t h = create(2 * g);
    char *va = reserve(4 * g);
    REQUIRE(h && va);
    CHECK(((uintptr_t)va % g) == 0);
    CHECK_OK(gpumem_mem_map(va, 2 * g, 0, h));
    /* Inaccessible until set_access. */
    CHECK(access_of(va) == GPUMEM_ACCESS_NONE);
    CHECK_OK(gpumem_mem_set_access(va, 2 * g, &RW, 1));
    CHECK(access_of(va) == GPUMEM_ACCESS_READWRITE);
    CHECK(access_of(va + 2 * g - 1) == GPUMEM_ACCESS_READWRITE);
    CHECK_OK(tst_upload(va, 2 * g, 1));
    CHECK(tst_download_verify(va, 2 * g, 1));
    if (tst_device_memory_is_host())
        CHECK(tst_verify(va, 2 * g, 1) == 2 * g);
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(va + g, &pi));
    CHECK(pi.kind == GPUMEM_KIND_VIRTUAL);

    /* Part of an allocation cannot be mapped: CUDA and HIP map whole allocations only. */
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_map(va + 3 * g, g, g, h));
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_map(va + 3 * g, g, 0, h));

    /* Read-only on a second mapping (another handle); the first keeps READWRITE. */
    gpumem_access_desc_t ro = {0, GPUMEM_ACCESS_READ};
    gpumem_mem_handle_t h1 = create(g);
    REQUIRE(h1 != 0);
    CHECK_OK(gpumem_mem_map(va + 3 * g, g, 0, h1));
    CHECK(access_of(va + 3 * g) == GPUMEM_ACCESS_NONE);
    CHECK_OK(gpumem_mem_set_access(va + 3 * g, g, &RW, 1));
    CHECK_OK(tst_upload(va + 3 * g, g, 3));
    CHECK_OK(gpumem_mem_set_access(va + 3 * g, g, &ro, 1));
    CHECK(access_of(va + 3 * g) == GPUMEM_ACCESS_READ);
    CHECK(access_of(va) == GPUMEM_ACCESS_READWRITE);
    CHECK(tst_download_verify(va, 2 * g, 1));
    CHECK(tst_download_verify(va + 3 * g, g, 3)); /* reading a READ mapping */
    /* Writing it through gpumem is refused, never a fault (every protection short of READ_WRITE, not only NONE). */
    char host[64] = {0};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(va + 3 * g, 7, 16));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(va + 3 * g, host, sizeof host));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_async(va + 3 * g, 7, 16, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_async(va + 3 * g, va, 64, NULL));
    CHECK_OK(gpumem_memcpy(host, va + 3 * g, sizeof host)); /* reading it is fine */
    CHECK(tst_download_verify(va + 3 * g, g, 3));
    CHECK_OK(gpumem_mem_unmap(va + 3 * g, g));
    CHECK_OK(gpumem_mem_release(h1));

    /* Bad access requests. */
    int32_t count = 1;
    CHECK_OK(gpumem_device_count(&count));
    gpumem_access_desc_t far = {count, GPUMEM_ACCESS_READWRITE};
    gpumem_access_desc_t odd = {0, 2};
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_mem_set_access(va, 2 * g, &far, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va, 2 * g, &odd, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va, 2 * g, NULL, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va, 2 * g, &RW, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va, 0, &RW, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va + 2 * g, g, &RW, 1)); /* reserved, not mapped */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va, 3 * g, &RW, 1));     /* runs past the mapping */
    uint64_t f = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_access(NULL, 0, va));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_mem_get_access(&f, count, va));
    CHECK(access_of(va) == GPUMEM_ACCESS_READWRITE);
    CHECK(tst_download_verify(va, 2 * g, 1));

    /* Lengths that wrap the address space are refused, never run (p + n must not overflow). */
    char one[1];
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(va, 1, SIZE_MAX));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(va + g, 1, SIZE_MAX - 4096));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(va, one, SIZE_MAX));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(one, va, SIZE_MAX));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_async(va, 1, SIZE_MAX, NULL));
    CHECK(tst_download_verify(va, 2 * g, 1));

    CHECK_OK(gpumem_mem_unmap(va, 2 * g));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_address_free(va, 4 * g));
}

static void test_remap_and_offsets(void)
{
    NEED_VMM();
    gpumem_mem_handle_t h = create(2 * g);
    char *va = reserve(6 * g);
    REQUIRE(h && va);
    CHECK_OK(gpumem_mem_map(va, 2 * g, 0, h));
    CHECK_OK(gpumem_mem_set_access(va, 2 * g, &RW, 1));
    CHECK_OK(tst_upload(va, 2 * g, 7));
    CHECK_OK(gpumem_mem_unmap(va, 2 * g));
    /* The physical memory keeps its contents; map it elsewhere in the reservation. */
    CHECK_OK(gpumem_mem_map(va + 4 * g, 2 * g, 0, h));
    CHECK_OK(gpumem_mem_set_access(va + 4 * g, 2 * g, &RW, 1));
    CHECK(tst_download_verify(va + 4 * g, 2 * g, 7));
    /* An offset into the handle is refused (whole allocations only)... */
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_map(va, g, g, h));
    /* ...but the whole handle can be mapped twice. */
    CHECK_OK(gpumem_mem_map(va, 2 * g, 0, h));
    CHECK_OK(gpumem_mem_set_access(va, 2 * g, &RW, 1));
    unsigned char *a = (unsigned char *)malloc(g), *b = (unsigned char *)malloc(g);
    REQUIRE(a && b);
    CHECK_OK(gpumem_memcpy(a, va + g, g));
    CHECK_OK(gpumem_memcpy(b, va + 5 * g, g));
    CHECK(memcmp(a, b, g) == 0);
    /* Two mappings of one handle share the memory. */
    CHECK_OK(gpumem_memset(va + g, 0x6b, g));
    CHECK_OK(gpumem_memcpy(b, va + 5 * g, g));
    CHECK(tst_verify_byte(b, g, 0x6b) == g);
    free(a);
    free(b);
    CHECK_OK(gpumem_mem_unmap(va, 2 * g));
    CHECK_OK(gpumem_mem_unmap(va + 4 * g, 2 * g));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_address_free(va, 6 * g));
}

static void test_hint_and_alignment(void)
{
    NEED_VMM();
    char *r = reserve(4 * g);
    REQUIRE(r != NULL);
    CHECK_OK(gpumem_mem_address_free(r, 4 * g));
    /* A hint that can be honoured may be; either way the call succeeds. */
    void *p = NULL;
    CHECK_OK(gpumem_mem_address_reserve(&p, 4 * g, 0, r));
    if (p == r)
        NOTE("the hint address was honoured");
    else
        NOTE("the hint address %p was not honoured (got %p)", (void *)r, p);
    /* A hint inside a live reservation cannot be honoured: the result must not overlap. */
    void *q = NULL;
    CHECK_OK(gpumem_mem_address_reserve(&q, 2 * g, 0, (char *)p + g));
    CHECK(q != NULL);
    CHECKF((char *)q + 2 * g <= (char *)p || (char *)p + 4 * g <= (char *)q, "reservation %p overlaps the live %p", q,
           p);
    CHECK_OK(gpumem_mem_address_free(q, 2 * g));
    CHECK_OK(gpumem_mem_address_free(p, 4 * g));

    /* Alignment is honoured. */
    void *al = NULL;
    CHECK_OK(gpumem_mem_address_reserve(&al, 2 * g, 8 * g, NULL));
    CHECKF(((uintptr_t)al % (8 * g)) == 0, "%p is not aligned to %zu", al, 8 * g);
    CHECK_OK(gpumem_mem_address_free(al, 2 * g));
    if (g > 1)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_address_reserve(&al, 2 * g, g / 2 + 1, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_address_reserve(NULL, 2 * g, 0, NULL));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_mem_address_reserve(&al, SIZE_MAX / g * g, 0, NULL));
}

static void test_misaligned_sizes(void)
{
    NEED_VMM();
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    gpumem_mem_handle_t h = 0;
    void *p = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, g + 1, &props));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, 0, &props));
    if (g > 1)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, g / 2, &props));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(NULL, g, &props));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, g, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_address_reserve(&p, g + 1, 0, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_address_reserve(&p, 0, 0, NULL));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_mem_create(&h, SIZE_MAX / g * g, &props));

    h = create(2 * g);
    char *va = reserve(4 * g);
    REQUIRE(h && va);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, g + 1, 0, h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, g, 1, h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va + 1, g, 0, h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, 0, 0, h));
    CHECK_OK(gpumem_mem_map(va, 2 * g, 0, h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va, g + 1, &RW, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(va + 1, g, &RW, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_unmap(va, 2 * g + 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_unmap(va + 1, g));
    CHECK_OK(gpumem_mem_unmap(va, 2 * g));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_address_free(va, 4 * g + 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_address_free(va, 3 * g));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_address_free(va, 4 * g));
}

static void test_map_outside_reservation(void)
{
    NEED_VMM();
    gpumem_mem_handle_t h = create(2 * g);
    char *va = reserve(4 * g);
    REQUIRE(h && va);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va + 4 * g, g, 0, h));     /* just past the end */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va + 3 * g, 2 * g, 0, h)); /* crosses the end */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va - g, 2 * g, 0, h));     /* crosses the start */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, 3 * g, 0, h));         /* more than the handle */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, 2 * g, g, h));         /* offset + size too big */
    /* Memory no reservation holds. */
    char *plain = (char *)aligned_alloc(g, 2 * g);
    REQUIRE(plain != NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(plain, g, 0, h));
    free(plain);
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4 * g));
    char *dev_aligned = (char *)(((uintptr_t)dev + g - 1) / g * g);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(dev_aligned, g, 0, h));
    CHECK_OK(gpumem_free(dev));

    /* Over an existing mapping. */
    gpumem_mem_handle_t h1 = create(g);
    REQUIRE(h1 != 0);
    CHECK_OK(gpumem_mem_map(va, g, 0, h1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, 2 * g, 0, h));
    gpumem_mem_handle_t h2 = create(2 * g);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_map(va, 2 * g, 0, h2)); /* overlaps the first granule */
    CHECK_OK(gpumem_mem_map(va + g, 2 * g, 0, h2));
    CHECK_OK(gpumem_mem_set_access(va, 3 * g, &RW, 1)); /* across two adjacent mappings */
    CHECK_OK(tst_upload(va, 3 * g, 2));
    CHECK(tst_download_verify(va, 3 * g, 2));
    /* Unmapping takes whole mappings: part of one is refused, two at once is fine. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_unmap(va + g, g));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_unmap(va + 3 * g, g)); /* not mapped */
    CHECK(tst_download_verify(va, 3 * g, 2));
    CHECK_OK(gpumem_mem_unmap(va, 3 * g));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_release(h1));
    CHECK_OK(gpumem_mem_release(h2));
    CHECK_OK(gpumem_mem_address_free(va, 4 * g));
}

static void test_release_while_mapped(void)
{
    NEED_VMM();
    gpumem_stats_t before = tst_stats();
    gpumem_mem_handle_t h = create(g);
    char *va = reserve(2 * g);
    REQUIRE(h && va);
    CHECK_OK(gpumem_mem_map(va, g, 0, h));
    CHECK_OK(gpumem_mem_set_access(va, g, &RW, 1));
    CHECK_OK(tst_upload(va, g, 9));
    CHECK_OK(gpumem_mem_release(h));
    /* The mapping keeps the memory alive and readable... */
    CHECK(tst_download_verify(va, g, 9));
    CHECK_OK(tst_upload(va, g, 10));
    CHECK(tst_download_verify(va, g, 10));
    /* ...but the handle is dead for every other call. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_map(va + g, g, 0, h));
    int32_t fd = -1;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD));
    CHECK_OK(gpumem_mem_unmap(va, g));
    CHECK_OK(gpumem_mem_address_free(va, 2 * g));
    gpumem_stats_t after = tst_stats();
    CHECK(after.current_bytes[GPUMEM_KIND_VIRTUAL] == before.current_bytes[GPUMEM_KIND_VIRTUAL]);
}

static void test_address_free_rules(void)
{
    NEED_VMM();
    gpumem_mem_handle_t h = create(g);
    char *va = reserve(2 * g);
    REQUIRE(h && va);
    CHECK_OK(gpumem_mem_map(va + g, g, 0, h));
    CHECK_STATUS(GPUMEM_ERROR_BUSY, gpumem_mem_address_free(va, 2 * g));
    CHECK(strlen(gpumem_last_error_message()) > 0);
    /* Still mapped and usable after the refusal. */
    CHECK_OK(gpumem_mem_set_access(va + g, g, &RW, 1));
    CHECK_OK(tst_upload(va + g, g, 3));
    CHECK(tst_download_verify(va + g, g, 3));
    CHECK_OK(gpumem_mem_unmap(va + g, g));
    /* not the start of the reservation: an interior pointer */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_mem_address_free(va + g, g));
    CHECK_OK(gpumem_mem_address_free(va, 2 * g));
    /* Freed twice, or never reserved. */
    CHECK_ONE_OF(gpumem_mem_address_free(va, 2 * g), GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_INVALID_POINTER);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_unmap(va, g));
    /* A reservation is not freed by gpumem_free. */
    char *r = reserve(g);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(r));
    CHECK_OK(gpumem_mem_address_free(r, g));
    CHECK_OK(gpumem_mem_release(h));
}

static void test_dead_mem_handles(void)
{
    NEED_VMM();
    char *va = reserve(g);
    REQUIRE(va != NULL);
    int32_t fd = -1;
    const gpumem_mem_handle_t bad[] = {0, 0xdeadbeefcafeull, UINT64_MAX};
    for (size_t i = 0; i < TST_COUNT(bad); ++i) {
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(bad[i]));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_map(va, g, 0, bad[i]));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE,
                     gpumem_mem_export_to_shareable_handle(&fd, bad[i], GPUMEM_HANDLE_POSIX_FD));
    }
    gpumem_mem_handle_t h = create(g);
    CHECK_OK(gpumem_mem_release(h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_map(va, g, 0, h));
    /* Handles are not reused at once: a new one differs from the dead one. */
    gpumem_mem_handle_t h2 = create(g);
    CHECK(h2 != h);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_release(h2));
    CHECK_OK(gpumem_mem_address_free(va, g));
}

/* A descriptor gpumem never exported is not a memory handle, even a page-sized memfd. */
static void test_import_foreign_descriptor(void)
{
    NEED_VMM();
    if (!(g_info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD))
        SKIP("no POSIX-fd sharing here");
    int fd = memfd_create("not-gpumem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, (off_t)g) == 0);
    gpumem_mem_handle_t h = 0;
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_mem_import_from_shareable_handle(&h, fd, GPUMEM_HANDLE_POSIX_FD));
    CHECK(h == 0);
    /* Even with the seals gpumem puts on its own. */
    CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_mem_import_from_shareable_handle(&h, fd, GPUMEM_HANDLE_POSIX_FD));
    close(fd);
    /* What gpumem exported imports. */
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_mem_handle_t mine = 0;
    REQUIRE_OK(gpumem_mem_create(&mine, g, &props));
    int32_t efd = -1;
    CHECK_OK(gpumem_mem_export_to_shareable_handle(&efd, mine, GPUMEM_HANDLE_POSIX_FD));
    CHECK_OK(gpumem_mem_import_from_shareable_handle(&h, efd, GPUMEM_HANDLE_POSIX_FD));
    if (h)
        CHECK_OK(gpumem_mem_release(h));
    close(efd);
    CHECK_OK(gpumem_mem_release(mine));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_raw_calls_without_native_vmm),
        TEST(test_granularity),          TEST(test_map_and_access),
        TEST(test_remap_and_offsets),    TEST(test_hint_and_alignment),
        TEST(test_misaligned_sizes),     TEST(test_map_outside_reservation),
        TEST(test_release_while_mapped), TEST(test_address_free_rules),
        TEST(test_dead_mem_handles),     TEST(test_import_foreign_descriptor),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
