/*
 * managed, translated to gpumem: gpumem_managed_alloc and gpumem_prefetch_async (to the device,
 * then to GPUMEM_DEVICE_HOST).
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
    float *x, *y;
    CHECK(gpumem_managed_alloc((void **)&x, bytes, GPUMEM_ATTACH_GLOBAL));
    CHECK(gpumem_managed_alloc((void **)&y, bytes, GPUMEM_ATTACH_GLOBAL));
    ref_init_host(x, y, n);

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    CHECK(gpumem_prefetch_async(x, bytes, device, stream));
    CHECK(gpumem_prefetch_async(y, bytes, device, stream));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, (hipStream_t)gpumem_stream_native(stream), n, 2.0f, x, y);
    HIP_CHECK(hipGetLastError());
    CHECK(gpumem_prefetch_async(y, bytes, GPUMEM_DEVICE_HOST, stream));
    CHECK(gpumem_stream_synchronize(stream));

    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK(gpumem_pointer_get_info(y, &info));
    printf("info: gpumem says the memory is %s\n", gpumem_kind_name(info.kind));
    SHOW("y[1]", "%.2f", y[1]);
    SHOW("sum", "%.2f", ref_sum(y, n));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_free(x));
    CHECK(gpumem_free(y));
    CHECK(gpumem_finalize());
    return 0;
}
