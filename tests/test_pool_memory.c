/*
 * Pools of pinned host memory and of managed memory (0.2), on every backend:
 * allocation from both, host access, copies to and from device memory, stream
 * order, the pool attributes, trim and statistics, the `memory` field of
 * pointer info for every kind, gpumem_get_default_pool_for, and bad input.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <stddef.h>

static const int32_t k_memories[] = {GPUMEM_POOL_MEMORY_PINNED, GPUMEM_POOL_MEMORY_MANAGED};

static const char *memory_name(int32_t memory)
{
    return memory == GPUMEM_POOL_MEMORY_PINNED ? "pinned" : memory == GPUMEM_POOL_MEMORY_MANAGED ? "managed" : "device";
}

static int32_t level_of(const gpumem_device_info_t *info, int32_t memory)
{
    return memory == GPUMEM_POOL_MEMORY_PINNED ? info->pinned_pools : info->managed_pools;
}

static gpumem_pointer_info_t info_of(const void *p)
{
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    return pi;
}

/* A pool of `memory` on device 0, or NULL (skipped) where there are none. */
static gpumem_pool_t make_pool(int32_t memory, int32_t implementation)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.memory = memory;
    props.implementation = implementation;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    CHECKF(st == GPUMEM_SUCCESS, "a %s pool: %s", memory_name(memory), gpumem_last_error_message());
    return st == GPUMEM_SUCCESS ? pool : NULL;
}

static void test_device_info_levels(void)
{
    gpumem_device_info_t info = tst_info(0);
    for (size_t i = 0; i < TST_COUNT(k_memories); ++i) {
        int32_t level = level_of(&info, k_memories[i]);
        CHECK(level >= GPUMEM_SUPPORT_NONE && level <= GPUMEM_SUPPORT_NATIVE);
        /* No pools at all: none of pinned or managed memory either. */
        if (info.memory_pools == GPUMEM_SUPPORT_NONE)
            CHECK(level == GPUMEM_SUPPORT_NONE);
    }
    if (info.managed_memory == GPUMEM_SUPPORT_NONE)
        CHECK(info.managed_pools == GPUMEM_SUPPORT_NONE);
    /* The host backend's pools are its own: native like its device pools. */
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(info.pinned_pools == info.memory_pools);
    /* A struct of 0.1's size is filled up to its end only. */
    gpumem_device_info_t old = GPUMEM_DEVICE_INFO_INIT;
    old.size = offsetof(gpumem_device_info_t, pinned_pools);
    old.pinned_pools = 77;
    old.managed_pools = 77;
    CHECK_OK(gpumem_device_get_info(0, &old));
    CHECK(old.pinned_pools == 77 && old.managed_pools == 77);
}

/* Levels say what creating gives: NONE refuses, NATIVE accepts GPUMEM_POOL_NATIVE, others refuse it. */
static void test_levels_match_creation(void)
{
    gpumem_device_info_t info = tst_info(0);
    for (size_t i = 0; i < TST_COUNT(k_memories); ++i) {
        const int32_t memory = k_memories[i];
        const int32_t level = level_of(&info, memory);
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.memory = memory;
        gpumem_pool_t pool = NULL;
        if (level == GPUMEM_SUPPORT_NONE) {
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
            CHECK(pool == NULL);
            CHECK(tst_contains(gpumem_last_error_message(), memory_name(memory)));
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_get_default_pool_for(&pool, memory, memory ==
                                                                                  GPUMEM_POOL_MEMORY_PINNED ? -1 : 0));
            continue;
        }
        props.implementation = GPUMEM_POOL_NATIVE;
        if (level == GPUMEM_SUPPORT_NATIVE) {
            CHECK_OK(gpumem_pool_create(&pool, &props));
            CHECK_OK(gpumem_pool_destroy(pool));
        } else {
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
            CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_POOL_AUTO"));
        }
        /* gpumem's own pool serves these memories wherever pools exist. */
        props.implementation = GPUMEM_POOL_BUILTIN;
        CHECK_OK(gpumem_pool_create(&pool, &props));
        CHECK_OK(gpumem_pool_destroy(pool));
    }
}

/* Allocate, touch from the host, copy to and from device memory, read the pointer's info. */
static void use_pool(int32_t memory, int32_t implementation)
{
    gpumem_device_info_t info = tst_info(0);
    if (level_of(&info, memory) == GPUMEM_SUPPORT_NONE)
        SKIP("no pools of %s memory here", memory_name(memory));
    gpumem_pool_t pool = make_pool(memory, implementation);
    REQUIRE(pool != NULL);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));

    const size_t n = (1u << 20) + 100;
    unsigned char *p = NULL;
    const gpumem_stats_t before = tst_stats();
    REQUIRE_OK(gpumem_malloc_from_pool_async((void **)&p, n, pool, s));
    REQUIRE(p != NULL);
    /* Each allocation gpumem's own pool serves in place of a native one counts as a fallback. */
    const int emulated = level_of(&info, memory) == GPUMEM_SUPPORT_EMULATED;
    CHECK(tst_stats().fallback_count == before.fallback_count + (uint64_t)emulated);
    CHECK_OK(gpumem_stream_synchronize(s));

    /* The host reaches it directly. */
    tst_fill(p, n, 3);
    CHECK(tst_verify(p, n, 3) == n);

    /* Copies to and from device memory. */
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, n));
    CHECK_OK(gpumem_memcpy(dev, p, n));
    memset(p, 0, n);
    CHECK_OK(gpumem_memcpy(p, dev, n));
    CHECK(tst_verify(p, n, 3) == n);
    /* And in stream order: a fill of the device copy, then back into the pool's block. */
    CHECK_OK(gpumem_memset_async(dev, 0x5a, n, s));
    CHECK_OK(gpumem_memcpy_async(p, dev, n, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    size_t same = 0;
    for (size_t i = 0; i < n; ++i)
        same += p[i] == 0x5a;
    CHECK(same == n);
    CHECK_OK(gpumem_free(dev));

    /* Pointer info: a stream-ordered block of this memory, interior pointers too. */
    gpumem_pointer_info_t pi = info_of(p + 1000);
    CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);
    CHECKF(pi.memory == memory, "memory %d, expected %d", pi.memory, memory);
    CHECK(pi.base == p);
    CHECK(pi.alloc_size >= n);
    CHECK(pi.pool == pool);
    /* Emulated exactly where gpumem's own pool stands in for absent native ones. */
    CHECK(pi.emulated == emulated);

    CHECK_OK(gpumem_free_async(p, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(info_of(p).kind == GPUMEM_KIND_UNKNOWN);

    /* gpumem_free takes a block of these pools too (synchronously). */
    REQUIRE_OK(gpumem_malloc_from_pool_async((void **)&p, 4096, pool, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    p[4095] = 7;
    CHECK_OK(gpumem_free(p));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));

    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

static void test_pinned_pool(void) { use_pool(GPUMEM_POOL_MEMORY_PINNED, GPUMEM_POOL_AUTO); }
static void test_managed_pool(void) { use_pool(GPUMEM_POOL_MEMORY_MANAGED, GPUMEM_POOL_AUTO); }
static void test_pinned_pool_builtin(void) { use_pool(GPUMEM_POOL_MEMORY_PINNED, GPUMEM_POOL_BUILTIN); }
static void test_managed_pool_builtin(void) { use_pool(GPUMEM_POOL_MEMORY_MANAGED, GPUMEM_POOL_BUILTIN); }

/* Freed on a stream, a block serves that stream's next allocation: the pool does not grow. */
static void test_stream_order_reuse(void)
{
    gpumem_device_info_t info = tst_info(0);
    for (size_t i = 0; i < TST_COUNT(k_memories); ++i) {
        const int32_t memory = k_memories[i];
        if (level_of(&info, memory) == GPUMEM_SUPPORT_NONE)
            continue;
        gpumem_pool_t pool = make_pool(memory, GPUMEM_POOL_AUTO);
        REQUIRE(pool != NULL);
        gpumem_stream_t s = NULL;
        REQUIRE_OK(gpumem_stream_create(&s));
        const uint64_t big = UINT64_MAX;
        CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &big));
        void *a = NULL, *b = NULL;
        REQUIRE_OK(gpumem_malloc_from_pool_async(&a, 1 << 20, pool, s));
        uint64_t reserved = 0, reserved_after = 0;
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
        CHECK(reserved >= (1u << 20));
        /* Work queued on the block before its free is ordered before the next user. */
        CHECK_OK(gpumem_memset_async(a, 0x11, 1 << 20, s));
        CHECK_OK(gpumem_free_async(a, s));
        REQUIRE_OK(gpumem_malloc_from_pool_async(&b, 1 << 20, pool, s));
        CHECK_OK(gpumem_memset_async(b, 0x22, 1 << 20, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(((unsigned char *)b)[12345] == 0x22);
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved_after));
        CHECKF(reserved_after == reserved, "%s pool grew from %" PRIu64 " to %" PRIu64 " bytes instead of reusing",
               memory_name(memory), reserved, reserved_after);
        CHECK_OK(gpumem_free_async(b, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_pool_destroy(pool));
    }
}

/* Attributes, threshold, trim, high-water marks and statistics, as for device pools. */
static void test_attributes_trim_stats(void)
{
    gpumem_device_info_t info = tst_info(0);
    for (size_t i = 0; i < TST_COUNT(k_memories); ++i) {
        const int32_t memory = k_memories[i];
        if (level_of(&info, memory) == GPUMEM_SUPPORT_NONE)
            continue;
        gpumem_pool_t pool = make_pool(memory, GPUMEM_POOL_AUTO);
        REQUIRE(pool != NULL);
        for (int32_t attr = GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES;
             attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES; ++attr) {
            int32_t v = 1;
            CHECK_OK(gpumem_pool_get_attribute(pool, attr, &v));
            CHECK(v == 1); /* the default */
            v = 0;
            CHECK_OK(gpumem_pool_set_attribute(pool, attr, &v));
            v = 1;
            CHECK_OK(gpumem_pool_get_attribute(pool, attr, &v));
            CHECK(v == 0);
            v = 2;
            CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_set_attribute(pool, attr, &v));
        }
        const uint64_t threshold = 64u << 20;
        uint64_t v64 = 0;
        CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &v64));
        CHECK(v64 == threshold);

        gpumem_stats_t before = tst_stats();
        gpumem_stream_t s = NULL;
        REQUIRE_OK(gpumem_stream_create(&s));
        void *p = NULL;
        const size_t n = 3u << 20;
        REQUIRE_OK(gpumem_malloc_from_pool_async(&p, n, pool, s));
        gpumem_stats_t during = tst_stats();
        CHECK(during.current_bytes[GPUMEM_KIND_STREAM_ORDERED] == before.current_bytes[GPUMEM_KIND_STREAM_ORDERED] + n);
        CHECK(during.alloc_count[GPUMEM_KIND_STREAM_ORDERED] == before.alloc_count[GPUMEM_KIND_STREAM_ORDERED] + 1);
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v64));
        CHECK(v64 >= n);
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &v64));
        CHECK(v64 >= n);
        CHECK_OK(gpumem_free_async(p, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        gpumem_stats_t after = tst_stats();
        CHECK(after.current_bytes[GPUMEM_KIND_STREAM_ORDERED] == before.current_bytes[GPUMEM_KIND_STREAM_ORDERED]);
        CHECK(after.free_count[GPUMEM_KIND_STREAM_ORDERED] == before.free_count[GPUMEM_KIND_STREAM_ORDERED] + 1);
        /* Below the threshold the memory stays; trim gives it back. */
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &v64));
        CHECK(v64 >= n);
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v64));
        CHECK(v64 == 0);
        CHECK_OK(gpumem_pool_trim_to(pool, 0));
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &v64));
        CHECKF(v64 == 0, "%s pool keeps %" PRIu64 " bytes after trim_to(0)", memory_name(memory), v64);
        /* The high-water marks remember the allocation, and reset to the current value. */
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &v64));
        CHECK(v64 >= n);
        const uint64_t zero = 0;
        CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &zero));
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &v64));
        CHECK(v64 == 0);
        /* With threshold 0 the memory goes back at the next synchronisation. */
        CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero));
        REQUIRE_OK(gpumem_malloc_from_pool_async(&p, n, pool, s));
        CHECK_OK(gpumem_free_async(p, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &v64));
        CHECKF(v64 == 0, "%s pool keeps %" PRIu64 " bytes above a threshold of 0", memory_name(memory), v64);
        CHECK_OK(gpumem_stream_destroy(s));
        CHECK_OK(gpumem_pool_destroy(pool));
    }
}

/* Every device reaches pinned and managed pools; access cannot be reduced; they are not shareable. */
static void test_access_and_sharing(void)
{
    gpumem_device_info_t info = tst_info(0);
    int32_t count = 0;
    CHECK_OK(gpumem_device_count(&count));
    for (size_t i = 0; i < TST_COUNT(k_memories); ++i) {
        const int32_t memory = k_memories[i];
        if (level_of(&info, memory) == GPUMEM_SUPPORT_NONE)
            continue;
        gpumem_pool_t pool = make_pool(memory, GPUMEM_POOL_AUTO);
        REQUIRE(pool != NULL);
        for (int32_t d = 0; d < count; ++d) {
            int32_t flags = 0;
            CHECK_OK(gpumem_pool_get_access(&flags, pool, d));
            CHECK(flags == GPUMEM_ACCESS_READWRITE);
        }
        gpumem_access_desc_t rw = {count - 1, GPUMEM_ACCESS_READWRITE};
        CHECK_OK(gpumem_pool_set_access(pool, &rw, 1));
        gpumem_access_desc_t none = {count - 1, GPUMEM_ACCESS_NONE};
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_set_access(pool, &none, 1));
        CHECK(tst_contains(gpumem_last_error_message(), "every device"));
        int32_t fd = -1;
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
        CHECK(fd == -1);
        CHECK(tst_contains(gpumem_last_error_message(), "cannot be shared"));
        void *p = NULL;
        REQUIRE_OK(gpumem_malloc_from_pool_async(&p, 256, pool, NULL));
        gpumem_pool_ptr_export_data_t data;
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_export_pointer(&data, p));
        /* A device's current pool holds device memory. */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_set_pool(0, pool));
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_device_synchronize());
        CHECK_OK(gpumem_pool_destroy(pool));
    }
}

/* Where the bytes of every kind of allocation live. */
static void test_pointer_info_memory(void)
{
    gpumem_device_info_t info = tst_info(0);
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 1000));
    CHECK(info_of((char *)p + 10).memory == GPUMEM_POOL_MEMORY_DEVICE);
    CHECK_OK(gpumem_free(p));

    REQUIRE_OK(gpumem_host_alloc(&p, 1000, 0));
    CHECK(info_of((char *)p + 999).memory == GPUMEM_POOL_MEMORY_PINNED);
    CHECK_OK(gpumem_host_free(p));

    if (info.host_register != GPUMEM_SUPPORT_NONE) {
        size_t n = 1 << 16;
        void *h = aligned_alloc(4096, n);
        REQUIRE(h != NULL);
        REQUIRE_OK(gpumem_host_register(h, n, 0));
        gpumem_pointer_info_t pi = info_of((char *)h + 100);
        CHECK(pi.kind == GPUMEM_KIND_HOST_REGISTERED);
        CHECK(pi.memory == GPUMEM_POOL_MEMORY_PINNED);
        CHECK_OK(gpumem_host_unregister(h));
        free(h);
    }

    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_managed_alloc(&p, 1000, 0));
        gpumem_pointer_info_t pi = info_of(p);
        CHECK(pi.kind == GPUMEM_KIND_MANAGED);
        CHECK(pi.memory == GPUMEM_POOL_MEMORY_MANAGED);
        CHECK(pi.emulated == (info.managed_memory == GPUMEM_SUPPORT_EMULATED));
        CHECK_OK(gpumem_free(p));
    }

    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_malloc_async(&p, 1000, NULL));
        gpumem_pointer_info_t pi = info_of((char *)p + 1);
        CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);
        CHECK(pi.memory == GPUMEM_POOL_MEMORY_DEVICE);
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_device_synchronize());
    }

    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        gpumem_mem_handle_t mh = 0;
        char *va = NULL;
        REQUIRE_OK(gpumem_mem_create(&mh, g, &props));
        REQUIRE_OK(gpumem_mem_address_reserve((void **)&va, g, 0, NULL));
        REQUIRE_OK(gpumem_mem_map(va, g, 0, mh));
        gpumem_pointer_info_t pi = info_of(va + 5);
        CHECK(pi.kind == GPUMEM_KIND_VIRTUAL);
        CHECK(pi.memory == GPUMEM_POOL_MEMORY_DEVICE);
        CHECK_OK(gpumem_mem_unmap(va, g));
        CHECK_OK(gpumem_mem_release(mh));
        CHECK_OK(gpumem_mem_address_free(va, g));
    }

    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        gpumem_buffer_t buf = NULL;
        REQUIRE_OK(gpumem_buffer_create(&buf, 10000, 1 << 20, 0));
        REQUIRE_OK(gpumem_buffer_data(buf, &p));
        gpumem_pointer_info_t pi = info_of((char *)p + 9999);
        CHECK(pi.kind == GPUMEM_KIND_BUFFER);
        CHECK(pi.memory == GPUMEM_POOL_MEMORY_DEVICE);
        CHECK_OK(gpumem_buffer_destroy(buf));
    }

    /* Memory gpumem did not make. */
    int on_stack = 0;
    gpumem_pointer_info_t pi = info_of(&on_stack);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
    CHECK(pi.memory == GPUMEM_POOL_MEMORY_UNKNOWN);
    pi = info_of(NULL);
    CHECK(pi.memory == GPUMEM_POOL_MEMORY_UNKNOWN);
    /* A 0.1-sized struct is written up to its end only. */
    gpumem_pointer_info_t old = GPUMEM_POINTER_INFO_INIT;
    old.size = offsetof(gpumem_pointer_info_t, memory);
    old.memory = 77;
    CHECK_OK(gpumem_pointer_get_info(&on_stack, &old));
    CHECK(old.memory == 77);
}

static void test_default_pool_for(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_pool_t a = NULL, b = NULL;
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        CHECK_OK(gpumem_get_default_pool_for(&a, GPUMEM_POOL_MEMORY_DEVICE, 0));
        CHECK_OK(gpumem_device_get_default_pool(&b, 0));
        CHECK(a == b && a != NULL);
    }
    gpumem_pool_t seen[2] = {NULL, NULL};
    for (size_t i = 0; i < TST_COUNT(k_memories); ++i) {
        const int32_t memory = k_memories[i];
        const int32_t location = memory == GPUMEM_POOL_MEMORY_PINNED ? -1 : 0;
        if (level_of(&info, memory) == GPUMEM_SUPPORT_NONE)
            continue;
        a = b = NULL;
        REQUIRE_OK(gpumem_get_default_pool_for(&a, memory, location));
        REQUIRE_OK(gpumem_get_default_pool_for(&b, memory, location));
        CHECK(a == b && a != NULL);
        seen[i] = a;
        gpumem_pool_t device_default = NULL;
        if (gpumem_device_get_default_pool(&device_default, 0) == GPUMEM_SUCCESS)
            CHECK(a != device_default);
        /* It serves allocations, and cannot be destroyed. */
        unsigned char *p = NULL;
        REQUIRE_OK(gpumem_malloc_from_pool_async((void **)&p, 5000, a, NULL));
        CHECK_OK(gpumem_device_synchronize());
        p[4999] = 1;
        gpumem_pointer_info_t pi = info_of(p);
        CHECK(pi.memory == memory);
        CHECK(pi.pool == a);
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_device_synchronize());
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_destroy(a));
        CHECK_OK(gpumem_get_default_pool_for(&b, memory, location));
        CHECK(a == b);
    }
    if (seen[0] && seen[1])
        CHECK(seen[0] != seen[1]);

    /* Bad input. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_default_pool_for(NULL, GPUMEM_POOL_MEMORY_PINNED, -1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_default_pool_for(&a, 3, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_default_pool_for(&a, GPUMEM_POOL_MEMORY_UNKNOWN, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_default_pool_for(&a, GPUMEM_POOL_MEMORY_PINNED, -2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_get_default_pool_for(&a, GPUMEM_POOL_MEMORY_MANAGED, 999));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_get_default_pool_for(&a, GPUMEM_POOL_MEMORY_DEVICE, -1));
}

static void test_bad_props(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_pool_t pool = NULL;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    CHECK(props.numa_node == -1);
    props.memory = 3;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_POOL_MEMORY_"));
    props.memory = GPUMEM_POOL_MEMORY_UNKNOWN;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
    /* numa_node is for pinned pools only. */
    props.memory = GPUMEM_POOL_MEMORY_DEVICE;
    props.numa_node = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
    CHECK(tst_contains(gpumem_last_error_message(), "numa_node"));
    props.memory = GPUMEM_POOL_MEMORY_MANAGED;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
    props.memory = GPUMEM_POOL_MEMORY_PINNED;
    props.numa_node = -2;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_create(&pool, &props));
    CHECK(pool == NULL);
    if (info.pinned_pools == GPUMEM_SUPPORT_NONE)
        return;
    /* Pinned and managed pools are not shareable. */
    props.numa_node = -1;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_HANDLE_NONE"));
    props.handle_types = GPUMEM_HANDLE_NONE;
    /* gpumem's own pool cannot place memory on a NUMA node. */
    props.numa_node = 0;
    props.implementation = GPUMEM_POOL_BUILTIN;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
    CHECK(tst_contains(gpumem_last_error_message(), "NUMA"));
    CHECK(pool == NULL);
    /* A caller whose struct ends before numa_node gets "any node". */
    gpumem_pool_props_t old = GPUMEM_POOL_PROPS_INIT;
    old.size = offsetof(gpumem_pool_props_t, numa_node);
    old.memory = GPUMEM_POOL_MEMORY_PINNED;
    old.numa_node = 12345; /* beyond the caller's size: never read */
    old.implementation = GPUMEM_POOL_BUILTIN;
    CHECK_OK(gpumem_pool_create(&pool, &old));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* A pinned pool on a chosen NUMA node: native where the device has HOST_NUMA pools, else refused. */
static void test_numa_node(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.pinned_pools == GPUMEM_SUPPORT_NONE)
        SKIP("no pools of pinned memory here");
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.memory = GPUMEM_POOL_MEMORY_PINNED;
    props.numa_node = 0;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (info.pinned_pools != GPUMEM_SUPPORT_NATIVE || tst_backend() == GPUMEM_BACKEND_HOST) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
        CHECK(tst_contains(gpumem_last_error_message(), "NUMA"));
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_get_default_pool_for(&pool, GPUMEM_POOL_MEMORY_PINNED, 0));
        return;
    }
    if (st == GPUMEM_ERROR_NOT_SUPPORTED)
        SKIP("the device has no native pools on a chosen NUMA node: %s", gpumem_last_error_message());
    REQUIRE_OK(st);
    unsigned char *p = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async((void **)&p, 1 << 16, pool, NULL));
    CHECK_OK(gpumem_device_synchronize());
    p[0] = 1;
    p[(1 << 16) - 1] = 2;
    CHECK(info_of(p).memory == GPUMEM_POOL_MEMORY_PINNED);
    CHECK_OK(gpumem_free_async(p, NULL));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_pool_destroy(pool));
    gpumem_pool_t a = NULL, any = NULL;
    CHECK_OK(gpumem_get_default_pool_for(&a, GPUMEM_POOL_MEMORY_PINNED, 0));
    CHECK_OK(gpumem_get_default_pool_for(&any, GPUMEM_POOL_MEMORY_PINNED, -1));
    CHECK(a != NULL && a != any);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_device_info_levels),   TEST(test_levels_match_creation), TEST(test_pinned_pool),
        TEST(test_managed_pool),         TEST(test_pinned_pool_builtin),   TEST(test_managed_pool_builtin),
        TEST(test_stream_order_reuse),   TEST(test_attributes_trim_stats), TEST(test_access_and_sharing),
        TEST(test_pointer_info_memory),  TEST(test_default_pool_for),      TEST(test_bad_props),
        TEST(test_numa_node),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
