/*
 * Memory pressure: the device is out of memory while gpumem's own pools hold memory nobody
 * uses.  gpumem_malloc gives that memory back and succeeds; what cannot fit is
 * OUT_OF_MEMORY with a message, and loses nothing.  (Another process's pressure is the GPU
 * test tests/gpu/pressure_test.cu: the fakes' devices are per process.)
 *
 * On the fakes the device is made small (1 GiB) before gpumem starts; on a device larger than
 * 8 GiB (a real GPU) the case is skipped here.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

static void test_pools_give_back_under_pressure(void)
{
    size_t free_bytes = 0, total = 0;
    REQUIRE_OK(gpumem_mem_get_info(&free_bytes, &total));
    if (total > ((size_t)8 << 30))
        SKIP("a device of %zu MiB: tests/gpu/pressure_test.cu covers it", total >> 20);
    const size_t big = free_bytes / 10 * 6; /* fits once, not twice */
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    gpumem_pool_t pool = NULL;
    void *block = NULL;
    int held = 0;
    if (gpumem_device_get_default_pool(&pool, 0) == GPUMEM_SUCCESS) {
        uint64_t keep_all = UINT64_MAX;
        CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep_all));
        if (gpumem_malloc_async(&block, big, s) == GPUMEM_SUCCESS) {
            CHECK_OK(gpumem_free_async(block, s));
            CHECK_OK(gpumem_stream_synchronize(s));
            uint64_t reserved = 0;
            CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
            held = reserved >= big;
        }
    }
    if (!held) {
        CHECK_OK(gpumem_stream_destroy(s));
        SKIP("no pool holds memory here (pools denied or absent)");
    }
    /* The pool holds `big` unused: only its release makes room. */
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, big));
    uint64_t reserved = 0;
    CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECKF(reserved < big, "the pool still holds %llu bytes", (unsigned long long)reserved);
    /* What cannot fit at all: OUT_OF_MEMORY, a message, nothing lost. */
    void *q = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&q, big));
    CHECK(q == NULL);
    CHECK(strlen(gpumem_last_error_message()) > 0);
    CHECK_OK(gpumem_memset(p, 1, 4096));
    CHECK_OK(gpumem_free(p));
    /* Once freed, it fits again. */
    CHECK_OK(gpumem_malloc(&q, big));
    CHECK_OK(gpumem_free(q));
    uint64_t zero = 0;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero));
    CHECK_OK(gpumem_stream_destroy(s));
}

int main(int argc, char **argv)
{
    /* A small device on the fakes (read when the fake starts, at gpumem's first call). */
    setenv("FAKE_CUDA_MEMORY", "1073741824", 0);
    setenv("FAKE_HIP_MEMORY", "1073741824", 0);
    static const tst_case_t cases[] = {TEST(test_pools_give_back_under_pressure)};
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
