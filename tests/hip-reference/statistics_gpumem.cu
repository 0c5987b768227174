/*
 * statistics, translated to gpumem: GPUMEM_POOL_ATTR_{USED,RESERVED}_MEM_{CURRENT,HIGH}, and a
 * high mark reset by setting it to 0.
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
    uint64_t keep = UINT64_MAX, zero = 0;
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    const size_t sizes[3] = {2 * REF_MiB, 4 * REF_MiB, 16 * REF_MiB};
    void *p[3];
    for (int i = 0; i < 3; i++)
        CHECK(gpumem_malloc_from_pool_async(&p[i], sizes[i], pool, stream));
    SHOW("used", "%llu", (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT));
    SHOW("used_high", "%llu", (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH));
    SHOW("reserved_covers_used", "%d",
         attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT) >= attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT));

    CHECK(gpumem_free_async(p[2], stream));
    CHECK(gpumem_stream_synchronize(stream));
    SHOW("used_after_free", "%llu", (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT));
    SHOW("used_high_after_free", "%llu", (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH));
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &zero));
    SHOW("used_high_after_reset", "%llu", (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH));
    uint64_t reserved = attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT);
    SHOW("reserved_high_covers_reserved", "%d", attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH) >= reserved);
    printf("info: reserved %llu, reserved high %llu\n", (unsigned long long)reserved,
           (unsigned long long)attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH));

    for (int i = 0; i < 2; i++)
        CHECK(gpumem_free_async(p[i], stream));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_pool_destroy(pool));
    CHECK(gpumem_finalize());
    return 0;
}
