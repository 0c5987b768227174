/*
 * stream_ordered (CSC course): a work buffer allocated and freed in stream order each
 * iteration, so that the next iteration can reuse it without a synchronisation.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

int main(void)
{
    const int n = REF_N, iterations = 8;
    const size_t bytes = n * sizeof(float);
    float *result = (float *)malloc(bytes);
    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    double total = 0;
    for (int it = 0; it < iterations; it++) {
        float *d;
        HIP_CHECK(hipMallocAsync((void **)&d, bytes, stream));
        hipLaunchKernelGGL(fill, ref_grid(n), ref_block(), 0, stream, n, (float)it, d);
        HIP_CHECK(hipGetLastError());
        HIP_CHECK(hipMemcpyAsync(result, d, bytes, hipMemcpyDeviceToHost, stream));
        HIP_CHECK(hipFreeAsync(d, stream));
        HIP_CHECK(hipStreamSynchronize(stream));
        total += ref_sum(result, n);
    }
    SHOW("iterations", "%d", iterations);
    SHOW("last[n-1]", "%.2f", result[n - 1]);
    SHOW("total", "%.2f", total);
    HIP_CHECK(hipStreamDestroy(stream));
    free(result);
    return 0;
}
