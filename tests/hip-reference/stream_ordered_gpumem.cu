/*
 * stream_ordered, translated to gpumem: gpumem_malloc_async / gpumem_free_async on a gpumem
 * stream (the device's pool: native where the device has one, else gpumem's own).
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

int main(void)
{
    const int n = REF_N, iterations = 8;
    const size_t bytes = n * sizeof(float);
    float *result = (float *)malloc(bytes);
    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    hipStream_t native = (hipStream_t)gpumem_stream_native(stream);
    double total = 0;
    for (int it = 0; it < iterations; it++) {
        float *d;
        CHECK(gpumem_malloc_async((void **)&d, bytes, stream));
        hipLaunchKernelGGL(fill, ref_grid(n), ref_block(), 0, native, n, (float)it, d);
        HIP_CHECK(hipGetLastError());
        CHECK(gpumem_memcpy_async(result, d, bytes, stream));
        CHECK(gpumem_free_async(d, stream));
        CHECK(gpumem_stream_synchronize(stream));
        total += ref_sum(result, n);
    }
    SHOW("iterations", "%d", iterations);
    SHOW("last[n-1]", "%.2f", result[n - 1]);
    SHOW("total", "%.2f", total);
    CHECK(gpumem_stream_destroy(stream));
    free(result);
    CHECK(gpumem_finalize());
    return 0;
}
