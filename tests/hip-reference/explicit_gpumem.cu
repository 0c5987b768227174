/*
 * explicit, translated to gpumem: gpumem_malloc and gpumem_memcpy (the direction comes from
 * the pointers); the kernel is the HIP program's.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes);
    ref_init_host(x, y, n);

    float *d_x, *d_y;
    CHECK(gpumem_malloc((void **)&d_x, bytes));
    CHECK(gpumem_malloc((void **)&d_y, bytes));
    CHECK(gpumem_memcpy(d_x, x, bytes));
    CHECK(gpumem_memcpy(d_y, y, bytes));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, 0, n, 2.0f, d_x, d_y);
    HIP_CHECK(hipGetLastError());
    CHECK(gpumem_device_synchronize());
    CHECK(gpumem_memcpy(y, d_y, bytes));

    SHOW("n", "%d", n);
    SHOW("y[1]", "%.2f", y[1]);
    SHOW("y[n-1]", "%.2f", y[n - 1]);
    SHOW("sum", "%.2f", ref_sum(y, n));
    CHECK(gpumem_free(d_x));
    CHECK(gpumem_free(d_y));
    free(x);
    free(y);
    CHECK(gpumem_finalize());
    return 0;
}
