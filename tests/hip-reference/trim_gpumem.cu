/*
 * trim, translated to gpumem: gpumem_pool_trim_to on a pool whose release threshold keeps
 * freed memory.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

static uint64_t attribute(gpumem_pool_t pool, int32_t attr)
{
    uint64_t value = 0;
    CHECK(gpumem_pool_get_attribute(pool, attr, &value));
    return value;
}

int main(void)
{
    int32_t device;
    CHECK(gpumem_get_device(&device));
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = device;
    gpumem_pool_t pool;
    CHECK(gpumem_pool_create(&pool, &props));
    uint64_t keep = UINT64_MAX;
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    const size_t bytes = 8 * REF_MiB;
    void *p[4];
    for (int i = 0; i < 4; i++)
        CHECK(gpumem_malloc_from_pool_async(&p[i], bytes, pool, stream));
    for (int i = 1; i < 4; i++)
        CHECK(gpumem_free_async(p[i], stream));
    CHECK(gpumem_stream_synchronize(stream));
    uint64_t reserved = attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT);
    SHOW("kept_before_trim", "%d", reserved >= 4 * bytes);

    CHECK(gpumem_pool_trim_to(pool, 0));
    uint64_t trimmed = attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT);
    SHOW("trim_released", "%d", trimmed < reserved);
    SHOW("trim_kept_live", "%d", trimmed >= bytes);
    printf("info: reserved %llu before the trim, %llu after\n", (unsigned long long)reserved,
           (unsigned long long)trimmed);

    CHECK(gpumem_free_async(p[0], stream));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_pool_trim_to(pool, 0));
    SHOW("reserved_after_full_trim", "%llu", (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_pool_destroy(pool));
    CHECK(gpumem_finalize());
    return 0;
}
