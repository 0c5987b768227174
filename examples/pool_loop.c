/*
 * pool_loop: allocating in a loop, and the release threshold that makes it fast.
 *
 * The loop allocates with gpumem_malloc_async, uses the memory, frees it with
 * gpumem_free_async and synchronizes, every iteration.  With the pool's
 * default release threshold (0) each synchronize hands the freed memory back
 * to the system, so the next iteration must get it again: slow.  With the
 * threshold at UINT64_MAX the pool keeps it, and every iteration after the
 * first reuses the same memory: fast.  Only the threshold differs.
 *
 * SPDX-License-Identifier: MIT
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <time.h>

#include "check.h"

#define SIZE ((size_t)32 << 20)
#define ITERATIONS 30

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t pool_attr(gpumem_pool_t pool, int32_t attr)
{
    uint64_t value = 0;
    CHECK(gpumem_pool_get_attribute(pool, attr, &value));
    return value;
}

/* Runs the loop; returns seconds.  *reserved_first: the pool's reserved
 * memory after the first iteration. */
static double run(gpumem_pool_t pool, gpumem_stream_t stream, uint64_t threshold, uint64_t *reserved_first)
{
    uint64_t zero = 0;
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK(gpumem_pool_trim_to(pool, 0)); /* start empty */
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, &zero)); /* reset the high mark */

    double t0 = seconds();
    for (int i = 0; i < ITERATIONS; i++) {
        void *p;
        unsigned char last = 0;
        CHECK(gpumem_malloc_async(&p, SIZE, stream));
        /* A fill stands in for a kernel using the memory; reading its last
         * byte back checks that the memory works. */
        CHECK(gpumem_memset_async(p, i, SIZE, stream));
        CHECK(gpumem_memcpy_async(&last, (unsigned char *)p + SIZE - 1, 1, stream));
        CHECK(gpumem_free_async(p, stream));
        CHECK(gpumem_stream_synchronize(stream)); /* the release threshold applies here */
        EXPECT(last == (unsigned char)i, "iteration %d read back %d", i, last);
        if (i == 0)
            *reserved_first = pool_attr(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT);
    }
    return seconds() - t0;
}

int main(void)
{
    int32_t device;
    gpumem_pool_t pool;
    gpumem_stream_t stream;
    uint64_t first;
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_pool(&pool, device)); /* the pool gpumem_malloc_async uses */
    CHECK(gpumem_stream_create(&stream));

    double slow = run(pool, stream, 0, &first);
    uint64_t slow_reserved = pool_attr(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT);
    printf("threshold 0:          %6.1f ms for %d iterations, %3llu MiB reserved after the loop\n", slow * 1e3,
           ITERATIONS, (unsigned long long)(slow_reserved >> 20));
    /* Nothing is in use and the threshold is 0: the last synchronize gave all back. */
    EXPECT(slow_reserved == 0, "threshold 0 still holds %llu bytes after a synchronize",
           (unsigned long long)slow_reserved);

    double fast = run(pool, stream, UINT64_MAX, &first);
    uint64_t fast_reserved = pool_attr(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT);
    uint64_t fast_high = pool_attr(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH);
    printf("threshold UINT64_MAX: %6.1f ms for %d iterations, %3llu MiB reserved after the loop\n", fast * 1e3,
           ITERATIONS, (unsigned long long)(fast_reserved >> 20));
    printf("speed-up: %.1fx\n", slow / fast);
    /* Reuse: the pool kept the first iteration's memory and never needed more. */
    EXPECT(fast_reserved >= SIZE, "the pool kept %llu bytes", (unsigned long long)fast_reserved);
    EXPECT(fast_high == first, "reserved memory grew from %llu to %llu bytes: not reused",
           (unsigned long long)first, (unsigned long long)fast_high);

    /* Give the memory back and leave the default pool as we found it. */
    uint64_t zero = 0;
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero));
    CHECK(gpumem_pool_trim_to(pool, 0));
    CHECK(gpumem_stream_destroy(stream));
    printf("pool_loop: OK\n");
    CHECK(gpumem_finalize());
    return 0;
}
