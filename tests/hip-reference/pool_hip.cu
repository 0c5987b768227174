/*
 * pool (ROCm guide, memory pools): a pool of one's own on the device, allocations from it in
 * stream order, a kernel over them, and the pool destroyed once empty.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <stdint.h>
#include <string.h>

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    int device;
    HIP_CHECK(hipGetDevice(&device));
    hipMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = hipMemAllocationTypePinned;
    props.handleTypes = hipMemHandleTypeNone;
    props.location.type = hipMemLocationTypeDevice;
    props.location.id = device;
    hipMemPool_t pool;
    HIP_CHECK(hipMemPoolCreate(&pool, &props));

    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes), *d_x, *d_y;
    ref_init_host(x, y, n);
    HIP_CHECK(hipMallocFromPoolAsync((void **)&d_x, bytes, pool, stream));
    HIP_CHECK(hipMallocFromPoolAsync((void **)&d_y, bytes, pool, stream));
    HIP_CHECK(hipMemcpyAsync(d_x, x, bytes, hipMemcpyHostToDevice, stream));
    HIP_CHECK(hipMemcpyAsync(d_y, y, bytes, hipMemcpyHostToDevice, stream));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, stream, n, 2.0f, d_x, d_y);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipMemcpyAsync(y, d_y, bytes, hipMemcpyDeviceToHost, stream));
    HIP_CHECK(hipFreeAsync(d_x, stream));
    HIP_CHECK(hipFreeAsync(d_y, stream));
    HIP_CHECK(hipStreamSynchronize(stream));

    uint64_t used = 1;
    HIP_CHECK(hipMemPoolGetAttribute(pool, hipMemPoolAttrUsedMemCurrent, &used));
    SHOW("sum", "%.2f", ref_sum(y, n));
    SHOW("used_after_free", "%llu", (unsigned long long)used);
    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipMemPoolDestroy(pool));
    free(x);
    free(y);
    return 0;
}
