/*
 * soma, translated to gpumem: gpumem_malloc_async from the device's pool (gpumem_device_get_pool),
 * its release threshold and statistics through gpumem_pool_{set,get}_attribute.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

int main(void)
{
    int32_t device;
    CHECK(gpumem_get_device(&device));
    gpumem_pool_t pool;
    CHECK(gpumem_device_get_pool(&pool, device));
    uint64_t keep = UINT64_MAX, none = 0, used = 0, reserved = 0;
    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    const size_t bytes = 8 * REF_MiB;
    void *a, *b;
    CHECK(gpumem_malloc_async(&a, bytes, stream));
    CHECK(gpumem_malloc_async(&b, bytes, stream));
    CHECK(gpumem_memset_async(a, 1, bytes, stream));
    CHECK(gpumem_memset_async(b, 2, bytes, stream));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    SHOW("used_covers_live", "%d", used >= 2 * bytes);
    CHECK(gpumem_free_async(a, stream));
    CHECK(gpumem_free_async(b, stream));
    CHECK(gpumem_stream_synchronize(stream));

    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    SHOW("used_after_free", "%llu", (unsigned long long)used);
    SHOW("reserved_kept", "%d", reserved >= 2 * bytes);
    printf("info: reserved %llu bytes with the threshold at UINT64_MAX\n", (unsigned long long)reserved);

    uint64_t before = reserved;
    CHECK(gpumem_malloc_async(&a, bytes, stream));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    SHOW("reused", "%d", reserved == before);
    CHECK(gpumem_free_async(a, stream));

    CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &none));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    SHOW("reserved_after_release", "%llu", (unsigned long long)reserved);
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_finalize());
    return 0;
}
