/*
 * vmm (ROCm guide, virtual memory management): reserve an address range, back it with two
 * physical chunks, make it readable and writable by the device, run a kernel over the whole
 * range, then unmap, release and free.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <string.h>

int main(void)
{
    int device;
    HIP_CHECK(hipGetDevice(&device));
    hipMemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = hipMemAllocationTypePinned;
    prop.location.type = hipMemLocationTypeDevice;
    prop.location.id = device;
    size_t granularity = 0;
    HIP_CHECK(hipMemGetAllocationGranularity(&granularity, &prop, hipMemAllocationGranularityMinimum));
    const size_t chunk = granularity, range = 2 * chunk;

    void *base = NULL;
    HIP_CHECK(hipMemAddressReserve(&base, range, 0, NULL, 0));
    hipMemGenericAllocationHandle_t handles[2];
    for (int i = 0; i < 2; i++) {
        HIP_CHECK(hipMemCreate(&handles[i], chunk, &prop, 0));
        HIP_CHECK(hipMemMap((char *)base + i * chunk, chunk, 0, handles[i], 0));
    }
    hipMemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = hipMemAccessFlagsProtReadWrite;
    HIP_CHECK(hipMemSetAccess(base, range, &access, 1));

    const int n = (int)(range / sizeof(float));
    float *data = (float *)base, *host = (float *)malloc(range);
    hipLaunchKernelGGL(fill, ref_grid(n), ref_block(), 0, 0, n, 3.0f, data);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipMemcpy(host, data, range, hipMemcpyDeviceToHost));
    SHOW("granularity", "%zu", granularity);
    SHOW("elements", "%d", n);
    SHOW("sum", "%.2f", ref_sum(host, n));

    HIP_CHECK(hipMemUnmap(base, range));
    for (int i = 0; i < 2; i++)
        HIP_CHECK(hipMemRelease(handles[i]));
    HIP_CHECK(hipMemAddressFree(base, range));
    free(host);
    return 0;
}
