/*
 * managed (CSC course): one managed array, written by the host, prefetched to the GPU for a
 * kernel, prefetched back and read by the host.  (No hipPointerGetAttributes here: ROCm 5.2's
 * NVIDIA platform refuses it for managed memory.)
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

int main(void)
{
    const int n = REF_N;
    const size_t bytes = n * sizeof(float);
    int device;
    HIP_CHECK(hipGetDevice(&device));
    float *x, *y;
    HIP_CHECK(hipMallocManaged((void **)&x, bytes, hipMemAttachGlobal));
    HIP_CHECK(hipMallocManaged((void **)&y, bytes, hipMemAttachGlobal));
    ref_init_host(x, y, n);

    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    HIP_CHECK(hipMemPrefetchAsync(x, bytes, device, stream));
    HIP_CHECK(hipMemPrefetchAsync(y, bytes, device, stream));
    hipLaunchKernelGGL(saxpy, ref_grid(n), ref_block(), 0, stream, n, 2.0f, x, y);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipMemPrefetchAsync(y, bytes, hipCpuDeviceId, stream));
    HIP_CHECK(hipStreamSynchronize(stream));

    SHOW("y[1]", "%.2f", y[1]);
    SHOW("sum", "%.2f", ref_sum(y, n));
    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(y));
    return 0;
}
