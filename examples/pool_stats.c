/*
 * pool_stats: an explicit pool, its statistics, and trimming it.
 *
 * A pool of one's own keeps one part of a program's memory apart: its own
 * limit (max_size), its own release threshold, its own numbers.  USED is what
 * live allocations hold, RESERVED what the pool took from the device; the
 * HIGH marks remember the peaks until reset.  gpumem_pool_trim_to gives
 * unused memory back whatever the threshold.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>

#include "check.h"

#define MiB ((size_t)1 << 20)

struct numbers {
    uint64_t used, used_high, reserved, reserved_high;
};

static struct numbers read_numbers(gpumem_pool_t pool, const char *when)
{
    struct numbers n;
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &n.used));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &n.used_high));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &n.reserved));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, &n.reserved_high));
    printf("%-30s %12llu %12llu %12llu %12llu\n", when, (unsigned long long)n.used, (unsigned long long)n.used_high,
           (unsigned long long)n.reserved, (unsigned long long)n.reserved_high);
    /* Whatever happens, live allocations fit in what the pool holds. */
    EXPECT(n.reserved >= n.used && n.used_high >= n.used && n.reserved_high >= n.reserved,
           "inconsistent pool numbers");
    return n;
}

int main(void)
{
    int32_t device;
    CHECK(gpumem_get_device(&device));

    gpumem_pool_t pool;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = device;
    props.max_size = 64 * MiB; /* this pool never holds more */
    CHECK(gpumem_pool_create(&pool, &props));
    /* Keep freed memory, so that trim_to has something to do below. */
    uint64_t keep = UINT64_MAX, zero = 0;
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    printf("%-30s %12s %12s %12s %12s\n", "bytes", "USED", "USED_HIGH", "RESERVED", "RESERVED_HIGH");
    read_numbers(pool, "new pool");

    const size_t sizes[4] = {1 * MiB, 3 * MiB, 8 * MiB, MiB / 2};
    size_t requested = 0;
    void *ptrs[4];
    for (int i = 0; i < 4; i++) {
        CHECK(gpumem_malloc_from_pool_async(&ptrs[i], sizes[i], pool, stream));
        requested += sizes[i];
    }
    struct numbers n = read_numbers(pool, "4 allocations (12.5 MiB)");
    EXPECT(n.used >= requested, "USED %llu < %zu requested", (unsigned long long)n.used, requested);

    /* Each pointer knows its pool; the process-wide stats count it too. */
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    gpumem_stats_t stats = GPUMEM_STATS_INIT;
    CHECK(gpumem_pointer_get_info(ptrs[2], &info));
    EXPECT(info.kind == GPUMEM_KIND_STREAM_ORDERED && info.pool == pool, "kind %d, pool %p", info.kind,
           (void *)info.pool);
    CHECK(gpumem_get_stats(&stats));
    EXPECT(stats.current_bytes[GPUMEM_KIND_STREAM_ORDERED] >= requested, "stream-ordered bytes %llu",
           (unsigned long long)stats.current_bytes[GPUMEM_KIND_STREAM_ORDERED]);

    /* The limit holds: 60 more MiB would pass max_size. */
    void *big = NULL;
    gpumem_status_t st = gpumem_malloc_from_pool_async(&big, 60 * MiB, pool, stream);
    EXPECT(st == GPUMEM_ERROR_OUT_OF_MEMORY, "allocation past max_size gave %s", gpumem_status_string(st));
    printf("past max_size: %s (%s)\n", gpumem_status_string(st), gpumem_last_error_message());

    /* Free the two largest: USED drops, the HIGH marks stay, RESERVED stays
       (threshold; a vendor pool may have reserved more while refusing the
       allocation above, so it can only have grown). */
    CHECK(gpumem_free_async(ptrs[1], stream));
    CHECK(gpumem_free_async(ptrs[2], stream));
    CHECK(gpumem_stream_synchronize(stream));
    struct numbers after = read_numbers(pool, "2 freed, synchronized");
    EXPECT(after.used < n.used && after.used_high == n.used_high && after.reserved >= n.reserved,
           "freeing changed the wrong numbers");

    /* Setting a HIGH mark to 0 resets it to the current value. */
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &zero));
    after = read_numbers(pool, "USED_HIGH reset");
    EXPECT(after.used_high == after.used, "USED_HIGH %llu after reset", (unsigned long long)after.used_high);

    /* Trim what is unused; live allocations keep their memory. */
    CHECK(gpumem_pool_trim_to(pool, 0));
    read_numbers(pool, "trimmed to 0 (2 live)");

    CHECK(gpumem_free_async(ptrs[0], stream));
    CHECK(gpumem_free_async(ptrs[3], stream));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_pool_trim_to(pool, 0));
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, &zero));
    after = read_numbers(pool, "all freed, trimmed, reset");
    EXPECT(after.used == 0 && after.reserved == 0 && after.reserved_high == 0, "the pool still holds memory");

    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_pool_destroy(pool));
    printf("pool_stats: OK\n");
    CHECK(gpumem_finalize());
    return 0;
}
