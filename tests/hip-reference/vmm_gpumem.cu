/*
 * vmm, translated to gpumem: gpumem_mem_get_granularity, gpumem_mem_address_reserve,
 * gpumem_mem_create, gpumem_mem_map and gpumem_mem_set_access.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "check.h"

int main(void)
{
    int32_t device;
    CHECK(gpumem_get_device(&device));
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = device;
    size_t granularity = 0;
    CHECK(gpumem_mem_get_granularity(&granularity, &props, GPUMEM_GRANULARITY_MINIMUM));
    const size_t chunk = granularity, range = 2 * chunk;

    void *base = NULL;
    CHECK(gpumem_mem_address_reserve(&base, range, 0, NULL));
    gpumem_mem_handle_t handles[2];
    for (int i = 0; i < 2; i++) {
        CHECK(gpumem_mem_create(&handles[i], chunk, &props));
        CHECK(gpumem_mem_map((char *)base + i * chunk, chunk, 0, handles[i]));
    }
    gpumem_access_desc_t access = {device, GPUMEM_ACCESS_READWRITE};
    CHECK(gpumem_mem_set_access(base, range, &access, 1));

    const int n = (int)(range / sizeof(float));
    float *data = (float *)base, *host = (float *)malloc(range);
    hipLaunchKernelGGL(fill, ref_grid(n), ref_block(), 0, 0, n, 3.0f, data);
    HIP_CHECK(hipGetLastError());
    CHECK(gpumem_device_synchronize());
    CHECK(gpumem_memcpy(host, data, range));
    SHOW("granularity", "%zu", granularity);
    SHOW("elements", "%d", n);
    SHOW("sum", "%.2f", ref_sum(host, n));

    CHECK(gpumem_mem_unmap(base, range));
    for (int i = 0; i < 2; i++)
        CHECK(gpumem_mem_release(handles[i]));
    CHECK(gpumem_mem_address_free(base, range));
    free(host);
    CHECK(gpumem_finalize());
    return 0;
}
