/*
 * soma (ROCm guide, stream-ordered memory allocator): hipMallocAsync from the device's default
 * pool; a release threshold keeps freed memory in the pool across synchronisations, and a
 * threshold of 0 gives it back at the next one.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <stdint.h>

int main(void)
{
    int device;
    HIP_CHECK(hipGetDevice(&device));
    hipMemPool_t pool;
    HIP_CHECK(hipDeviceGetDefaultMemPool(&pool, device));
    uint64_t keep = UINT64_MAX, none = 0, used = 0, reserved = 0;
    HIP_CHECK(hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep));

    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    const size_t bytes = 8 * REF_MiB;
    void *a, *b;
    HIP_CHECK(hipMallocAsync(&a, bytes, stream));
    HIP_CHECK(hipMallocAsync(&b, bytes, stream));
    HIP_CHECK(hipMemsetAsync(a, 1, bytes, stream));
    HIP_CHECK(hipMemsetAsync(b, 2, bytes, stream));
    HIP_CHECK(hipMemPoolGetAttribute(pool, hipMemPoolAttrUsedMemCurrent, &used));
    SHOW("used_covers_live", "%d", used >= 2 * bytes);
    HIP_CHECK(hipFreeAsync(a, stream));
    HIP_CHECK(hipFreeAsync(b, stream));
    HIP_CHECK(hipStreamSynchronize(stream));

    HIP_CHECK(hipMemPoolGetAttribute(pool, hipMemPoolAttrUsedMemCurrent, &used));
    HIP_CHECK(hipMemPoolGetAttribute(pool, hipMemPoolAttrReservedMemCurrent, &reserved));
    SHOW("used_after_free", "%llu", (unsigned long long)used);
    SHOW("reserved_kept", "%d", reserved >= 2 * bytes);
    printf("info: reserved %llu bytes with the threshold at UINT64_MAX\n", (unsigned long long)reserved);

    /* The memory kept is reused: no new reservation for the same sizes. */
    uint64_t before = reserved;
    HIP_CHECK(hipMallocAsync(&a, bytes, stream));
    HIP_CHECK(hipMemPoolGetAttribute(pool, hipMemPoolAttrReservedMemCurrent, &reserved));
    SHOW("reused", "%d", reserved == before);
    HIP_CHECK(hipFreeAsync(a, stream));

    HIP_CHECK(hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &none));
    HIP_CHECK(hipStreamSynchronize(stream));
    HIP_CHECK(hipMemPoolGetAttribute(pool, hipMemPoolAttrReservedMemCurrent, &reserved));
    SHOW("reserved_after_release", "%llu", (unsigned long long)reserved);
    HIP_CHECK(hipStreamDestroy(stream));
    return 0;
}
