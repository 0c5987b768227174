/*
 * pool, translated to gpumem: gpumem_pool_create (GPUMEM_POOL_AUTO: the vendor's pool where
 * the device has one) and gpumem_malloc_from_pool_async.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    int32_t device;
    CHECK(gpumem_get_device(&device));
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = device;
    gpumem_pool_t pool;
    CHECK(gpumem_pool_create(&pool, &props));

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes), *d_x, *d_y;
    ref_init_host(x, y, n);
    CHECK(gpumem_malloc_from_pool_async((void **)&d_x, bytes, pool, stream));
    CHECK(gpumem_malloc_from_pool_async((void **)&d_y, bytes, pool, stream));
    CHECK(gpumem_memcpy_async(d_x, x, bytes, stream));
    CHECK(gpumem_memcpy_async(d_y, y, bytes, stream));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, (hipStream_t)gpumem_stream_native(stream), n, 2.0f, d_x,
                       d_y);
    HIP_CHECK(hipGetLastError());
    CHECK(gpumem_memcpy_async(y, d_y, bytes, stream));
    CHECK(gpumem_free_async(d_x, stream));
    CHECK(gpumem_free_async(d_y, stream));
    CHECK(gpumem_stream_synchronize(stream));

    uint64_t used = 1;
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    SHOW("sum", "%.2f", ref_sum(y, n));
    SHOW("used_after_free", "%llu", (unsigned long long)used);
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_pool_destroy(pool));
    free(x);
    free(y);
    CHECK(gpumem_finalize());
    return 0;
}
