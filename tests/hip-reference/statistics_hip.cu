/*
 * statistics (ROCm guide, memory pools): a pool's used and reserved bytes, current and high,
 * and resetting the high marks.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <stdint.h>
#include <string.h>

static uint64_t attribute(hipMemPool_t pool, hipMemPoolAttr attr)
{
    uint64_t value = 0;
    HIP_CHECK(hipMemPoolGetAttribute(pool, attr, &value));
    return value;
}

int main(void)
{
    int device;
    HIP_CHECK(hipGetDevice(&device));
    hipMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = hipMemAllocationTypePinned;
    props.location.type = hipMemLocationTypeDevice;
    props.location.id = device;
    hipMemPool_t pool;
    HIP_CHECK(hipMemPoolCreate(&pool, &props));
    uint64_t keep = UINT64_MAX, zero = 0;
    HIP_CHECK(hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep));

    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    const size_t sizes[3] = {2 * REF_MiB, 4 * REF_MiB, 16 * REF_MiB};
    void *p[3];
    for (int i = 0; i < 3; i++)
        HIP_CHECK(hipMallocFromPoolAsync(&p[i], sizes[i], pool, stream));
    SHOW("used", "%llu", (unsigned long long)attribute(pool, hipMemPoolAttrUsedMemCurrent));
    SHOW("used_high", "%llu", (unsigned long long)attribute(pool, hipMemPoolAttrUsedMemHigh));
    SHOW("reserved_covers_used", "%d",
         attribute(pool, hipMemPoolAttrReservedMemCurrent) >= attribute(pool, hipMemPoolAttrUsedMemCurrent));

    HIP_CHECK(hipFreeAsync(p[2], stream));
    HIP_CHECK(hipStreamSynchronize(stream));
    SHOW("used_after_free", "%llu", (unsigned long long)attribute(pool, hipMemPoolAttrUsedMemCurrent));
    SHOW("used_high_after_free", "%llu", (unsigned long long)attribute(pool, hipMemPoolAttrUsedMemHigh));
    HIP_CHECK(hipMemPoolSetAttribute(pool, hipMemPoolAttrUsedMemHigh, &zero));
    SHOW("used_high_after_reset", "%llu", (unsigned long long)attribute(pool, hipMemPoolAttrUsedMemHigh));
    uint64_t reserved = attribute(pool, hipMemPoolAttrReservedMemCurrent);
    SHOW("reserved_high_covers_reserved", "%d", attribute(pool, hipMemPoolAttrReservedMemHigh) >= reserved);
    printf("info: reserved %llu, reserved high %llu\n", (unsigned long long)reserved,
           (unsigned long long)attribute(pool, hipMemPoolAttrReservedMemHigh));

    for (int i = 0; i < 2; i++)
        HIP_CHECK(hipFreeAsync(p[i], stream));
    HIP_CHECK(hipStreamSynchronize(stream));
    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipMemPoolDestroy(pool));
    return 0;
}
