/*
 * pinned (CSC course): page-locked host buffers, asynchronous copies and a kernel on one
 * stream, timed with events.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    float *x, *y, *d_x, *d_y;
    HIP_CHECK(hipHostMalloc((void **)&x, bytes, hipHostMallocDefault));
    HIP_CHECK(hipHostMalloc((void **)&y, bytes, hipHostMallocDefault));
    ref_init_host(x, y, n);
    HIP_CHECK(hipMalloc((void **)&d_x, bytes));
    HIP_CHECK(hipMalloc((void **)&d_y, bytes));

    hipStream_t stream;
    hipEvent_t start, stop;
    HIP_CHECK(hipStreamCreate(&stream));
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    HIP_CHECK(hipEventRecord(start, stream));
    HIP_CHECK(hipMemcpyAsync(d_x, x, bytes, hipMemcpyHostToDevice, stream));
    HIP_CHECK(hipMemcpyAsync(d_y, y, bytes, hipMemcpyHostToDevice, stream));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, stream, n, 2.0f, d_x, d_y);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipMemcpyAsync(y, d_y, bytes, hipMemcpyDeviceToHost, stream));
    HIP_CHECK(hipEventRecord(stop, stream));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));

    hipPointerAttribute_t attr;
    HIP_CHECK(hipPointerGetAttributes(&attr, x));
    SHOW("pinned", "%d", attr.hostPointer == x && attr.devicePointer != NULL);
    SHOW("sum", "%.2f", ref_sum(y, n));
    SHOW("elapsed_positive", "%d", ms > 0);
    printf("info: copies and kernel %.3f ms\n", ms);

    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipFree(d_x));
    HIP_CHECK(hipFree(d_y));
    HIP_CHECK(hipHostFree(x));
    HIP_CHECK(hipHostFree(y));
    return 0;
}
