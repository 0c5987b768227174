/*
 * trim (ROCm guide, memory pools): a pool that keeps freed memory (threshold UINT64_MAX) gives
 * it back on hipMemPoolTrimTo, never below what live allocations hold.
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
    uint64_t keep = UINT64_MAX;
    HIP_CHECK(hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep));

    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    const size_t bytes = 8 * REF_MiB;
    void *p[4];
    for (int i = 0; i < 4; i++)
        HIP_CHECK(hipMallocFromPoolAsync(&p[i], bytes, pool, stream));
    for (int i = 1; i < 4; i++)
        HIP_CHECK(hipFreeAsync(p[i], stream));
    HIP_CHECK(hipStreamSynchronize(stream));
    uint64_t reserved = attribute(pool, hipMemPoolAttrReservedMemCurrent);
    SHOW("kept_before_trim", "%d", reserved >= 4 * bytes);

    HIP_CHECK(hipMemPoolTrimTo(pool, 0));
    uint64_t trimmed = attribute(pool, hipMemPoolAttrReservedMemCurrent);
    SHOW("trim_released", "%d", trimmed < reserved);
    SHOW("trim_kept_live", "%d", trimmed >= bytes);
    printf("info: reserved %llu before the trim, %llu after\n", (unsigned long long)reserved,
           (unsigned long long)trimmed);

    HIP_CHECK(hipFreeAsync(p[0], stream));
    HIP_CHECK(hipStreamSynchronize(stream));
    HIP_CHECK(hipMemPoolTrimTo(pool, 0));
    SHOW("reserved_after_full_trim", "%llu", (unsigned long long)attribute(pool, hipMemPoolAttrReservedMemCurrent));
    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipMemPoolDestroy(pool));
    return 0;
}
