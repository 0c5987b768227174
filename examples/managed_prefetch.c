/*
 * managed_prefetch: managed memory with advice and prefetching.
 *
 * Managed memory is one pointer valid on the host and the device.  Advice
 * tells the runtime how the data will be used (mostly read; best kept on the
 * device; also read by the CPU), and prefetching moves pages before they are
 * needed instead of faulting them in.  The range attributes report what is
 * in force.  Where the device has no managed memory gpumem emulates it with
 * mapped pinned memory, and the same calls still answer.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

#define COUNT (1u << 20) /* int32 values: 4 MiB */

static const char *location(int32_t loc)
{
    static char buf[32];
    if (loc == GPUMEM_DEVICE_HOST)
        return "host";
    if (loc == GPUMEM_LOCATION_INVALID)
        return "none";
    snprintf(buf, sizeof buf, "device %d", loc);
    return buf;
}

int main(void)
{
    int32_t device;
    gpumem_device_info_t dinfo = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &dinfo));

    size_t bytes = COUNT * sizeof(int32_t);
    int32_t *data;
    CHECK(gpumem_managed_alloc((void **)&data, bytes, GPUMEM_ATTACH_GLOBAL));
    gpumem_pointer_info_t pinfo = GPUMEM_POINTER_INFO_INIT;
    CHECK(gpumem_pointer_get_info(data, &pinfo));
    EXPECT(pinfo.kind == GPUMEM_KIND_MANAGED, "managed memory reported as kind %d", pinfo.kind);
    printf("managed memory: %s%s, pages %s\n", dinfo.managed_memory == GPUMEM_SUPPORT_NATIVE ? "native" : "emulated",
           pinfo.emulated ? " (mapped pinned memory)" : "", dinfo.managed_migrates ? "migrate" : "do not migrate");

    /* The host writes managed memory directly: that is what it is for. */
    for (uint32_t i = 0; i < COUNT; i++)
        data[i] = (int32_t)i;

    /* The device will mostly read it, it should live on the device, and the
     * CPU reads it too (so keep a CPU mapping rather than fault on access). */
    CHECK(gpumem_advise(data, bytes, GPUMEM_ADVISE_SET_READ_MOSTLY, device));
    CHECK(gpumem_advise(data, bytes, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, device));
    CHECK(gpumem_advise(data, bytes, GPUMEM_ADVISE_SET_ACCESSED_BY, GPUMEM_DEVICE_HOST));

    gpumem_stream_t stream;
    CHECK(gpumem_stream_create(&stream));
    CHECK(gpumem_prefetch_async(data, bytes, device, stream));

    /* Device work on the prefetched data, in stream order: a copy into
     * device memory stands in for a kernel. */
    void *dev;
    CHECK(gpumem_malloc(&dev, bytes));
    CHECK(gpumem_memcpy_async(dev, data, bytes, stream));
    CHECK(gpumem_stream_synchronize(stream));

    /* All four attributes in one call. */
    int32_t read_mostly = -1, preferred = -1, last_prefetch = -1, accessed_by[4];
    void *values[4] = {&read_mostly, &preferred, accessed_by, &last_prefetch};
    size_t sizes[4] = {sizeof read_mostly, sizeof preferred, sizeof accessed_by, sizeof last_prefetch};
    int32_t attrs[4] = {GPUMEM_RANGE_READ_MOSTLY, GPUMEM_RANGE_PREFERRED_LOCATION, GPUMEM_RANGE_ACCESSED_BY,
                        GPUMEM_RANGE_LAST_PREFETCH_LOCATION};
    CHECK(gpumem_range_get_attributes(values, sizes, attrs, 4, data, bytes));
    printf("range attributes: read_mostly %d, preferred location %s, ", read_mostly, location(preferred));
    printf("accessed by %s, ", location(accessed_by[0]));
    printf("last prefetch %s\n", location(last_prefetch));
    EXPECT(read_mostly == 1, "read_mostly %d", read_mostly);
    EXPECT(preferred == device, "preferred location %d", preferred);
    EXPECT(accessed_by[0] == GPUMEM_DEVICE_HOST && accessed_by[1] == GPUMEM_LOCATION_INVALID,
           "accessed_by {%d, %d}", accessed_by[0], accessed_by[1]);
    EXPECT(last_prefetch == device, "last prefetch location %d", last_prefetch);

    /* Back to the CPU before it reads: the prefetch moves the pages in
     * stream order, the synchronize makes the host wait for it. */
    CHECK(gpumem_prefetch_async(data, bytes, GPUMEM_DEVICE_HOST, stream));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_range_get_attribute(&last_prefetch, sizeof last_prefetch, GPUMEM_RANGE_LAST_PREFETCH_LOCATION,
                                     data, bytes));
    EXPECT(last_prefetch == GPUMEM_DEVICE_HOST, "last prefetch location %d", last_prefetch);
    for (uint32_t i = 0; i < COUNT; i++)
        EXPECT(data[i] == (int32_t)i, "data[%u] = %d", i, data[i]);

    /* What the device copied is the same data. */
    int32_t *check = malloc(bytes);
    EXPECT(check != NULL, "host malloc");
    CHECK(gpumem_memcpy(check, dev, bytes));
    EXPECT(memcmp(check, data, bytes) == 0, "the device's copy differs");

    /* Advice can be taken back, and the attributes follow. */
    CHECK(gpumem_advise(data, bytes, GPUMEM_ADVISE_UNSET_READ_MOSTLY, device));
    CHECK(gpumem_advise(data, bytes, GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION, device));
    CHECK(gpumem_range_get_attribute(&read_mostly, sizeof read_mostly, GPUMEM_RANGE_READ_MOSTLY, data, bytes));
    CHECK(gpumem_range_get_attribute(&preferred, sizeof preferred, GPUMEM_RANGE_PREFERRED_LOCATION, data, bytes));
    EXPECT(read_mostly == 0 && preferred == GPUMEM_LOCATION_INVALID, "after unset: read_mostly %d, preferred %d",
           read_mostly, preferred);

    free(check);
    CHECK(gpumem_free(dev));
    CHECK(gpumem_free(data));
    CHECK(gpumem_stream_destroy(stream));
    printf("managed_prefetch: OK\n");
    CHECK(gpumem_finalize());
    return 0;
}
