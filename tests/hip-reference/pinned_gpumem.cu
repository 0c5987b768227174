/*
 * pinned, translated to gpumem: gpumem_host_alloc (mapped and portable), a gpumem stream and
 * events; the kernel runs on the stream's native handle.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    float *x, *y, *d_x, *d_y;
    CHECK(gpumem_host_alloc((void **)&x, bytes, 0));
    CHECK(gpumem_host_alloc((void **)&y, bytes, 0));
    ref_init_host(x, y, n);
    CHECK(gpumem_malloc((void **)&d_x, bytes));
    CHECK(gpumem_malloc((void **)&d_y, bytes));

    gpumem_stream_t stream;
    gpumem_event_t start, stop;
    CHECK(gpumem_stream_create(&stream));
    CHECK(gpumem_event_create(&start));
    CHECK(gpumem_event_create(&stop));
    CHECK(gpumem_event_record(start, stream));
    CHECK(gpumem_memcpy_async(d_x, x, bytes, stream));
    CHECK(gpumem_memcpy_async(d_y, y, bytes, stream));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, (hipStream_t)gpumem_stream_native(stream), n, 2.0f, d_x,
                       d_y);
    HIP_CHECK(hipGetLastError());
    CHECK(gpumem_memcpy_async(y, d_y, bytes, stream));
    CHECK(gpumem_event_record(stop, stream));
    CHECK(gpumem_event_synchronize(stop));
    float ms = 0;
    CHECK(gpumem_event_elapsed_ms(&ms, start, stop));

    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK(gpumem_pointer_get_info(x, &info));
    SHOW("pinned", "%d", info.kind == GPUMEM_KIND_HOST_PINNED);
    SHOW("sum", "%.2f", ref_sum(y, n));
    SHOW("elapsed_positive", "%d", ms > 0);
    printf("info: copies and kernel %.3f ms\n", ms);

    CHECK(gpumem_event_destroy(start));
    CHECK(gpumem_event_destroy(stop));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_free(d_x));
    CHECK(gpumem_free(d_y));
    CHECK(gpumem_host_free(x));
    CHECK(gpumem_host_free(y));
    CHECK(gpumem_finalize());
    return 0;
}
