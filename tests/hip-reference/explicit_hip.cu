/*
 * explicit (CSC course): device memory, explicit copies each way, a kernel in between.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes);
    ref_init_host(x, y, n);

    float *d_x, *d_y;
    HIP_CHECK(hipMalloc((void **)&d_x, bytes));
    HIP_CHECK(hipMalloc((void **)&d_y, bytes));
    HIP_CHECK(hipMemcpy(d_x, x, bytes, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_y, y, bytes, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, 0, n, 2.0f, d_x, d_y);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipMemcpy(y, d_y, bytes, hipMemcpyDeviceToHost));

    SHOW("n", "%d", n);
    SHOW("y[1]", "%.2f", y[1]);
    SHOW("y[n-1]", "%.2f", y[n - 1]);
    SHOW("sum", "%.2f", ref_sum(y, n));
    HIP_CHECK(hipFree(d_x));
    HIP_CHECK(hipFree(d_y));
    free(x);
    free(y);
    return 0;
}
