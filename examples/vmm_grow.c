/*
 * vmm_grow: a device array that grows without moving.
 *
 * Growing an ordinary allocation means allocate-new, copy, free-old: old and
 * new size must fit at once and every pointer into the array goes stale.
 * With virtual memory management one reserves a large address range once
 * and maps physical memory into it chunk by chunk as the array grows; the
 * address never changes and nothing is copied.  gpumem_buffer does the same
 * bookkeeping for you (and falls back to allocate-copy-free where the device
 * has no VMM).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

/* Byte i of the array holds the number of the growth step that wrote it:
 * copies the whole array back and checks each region. */
static void verify(const void *dev, const size_t *ends, int steps)
{
    size_t bytes = ends[steps - 1];
    unsigned char *host = malloc(bytes);
    EXPECT(host != NULL, "host malloc of %zu bytes", bytes);
    CHECK(gpumem_memcpy(host, dev, bytes));
    for (int s = 0, i = 0; s < steps; s++)
        for (; (size_t)i < ends[s]; i++)
            EXPECT(host[i] == s + 1, "byte %d is %d, written by step %d", i, host[i], s + 1);
    free(host);
}

/* Raw VMM: reserve once, map chunk by chunk. */
static void grow_with_vmm(int32_t device)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = device;
    size_t chunk;
    CHECK(gpumem_mem_get_granularity(&chunk, &props, GPUMEM_GRANULARITY_RECOMMENDED));

    /* Address space is cheap: reserve far more than will be used. */
    size_t reserved = 256 * chunk;
    char *base;
    CHECK(gpumem_mem_address_reserve((void **)&base, reserved, 0, NULL));

    const int chunks_at[3] = {1, 4, 10}; /* the array's size, in chunks, after each step */
    size_t ends[3], mapped = 0;
    gpumem_access_desc_t rw = {device, GPUMEM_ACCESS_READWRITE};
    for (int s = 0; s < 3; s++) {
        size_t target = (size_t)chunks_at[s] * chunk;
        while (mapped < target) {
            gpumem_mem_handle_t handle;
            CHECK(gpumem_mem_create(&handle, chunk, &props));
            CHECK(gpumem_mem_map(base + mapped, chunk, 0, handle));
            /* The mapping keeps the memory alive: the handle is no longer needed. */
            CHECK(gpumem_mem_release(handle));
            /* Mapped memory is inaccessible until access is granted. */
            CHECK(gpumem_mem_set_access(base + mapped, chunk, &rw, 1));
            mapped += chunk;
        }
        uint64_t flags = 0;
        CHECK(gpumem_mem_get_access(&flags, device, base + mapped - 1));
        EXPECT(flags == GPUMEM_ACCESS_READWRITE, "access flags %llu", (unsigned long long)flags);

        /* Only the new part is written: the old part is where it was. */
        size_t start = s ? ends[s - 1] : 0;
        CHECK(gpumem_memset(base + start, s + 1, target - start));
        ends[s] = target;
        verify(base, ends, s + 1);
        printf("vmm: %3d chunks of %zu KiB mapped at %p\n", chunks_at[s], chunk >> 10, (void *)base);
    }

    /* One unmap covers all the mappings; then the reservation goes. */
    CHECK(gpumem_mem_unmap(base, mapped));
    CHECK(gpumem_mem_address_free(base, reserved));
}

/* The same with gpumem_buffer. */
static void grow_with_buffer(int32_t device, int vmm_native)
{
    const size_t step = (size_t)1 << 20;
    gpumem_buffer_t buffer;
    void *first, *data;
    size_t size, ends[3];
    CHECK(gpumem_buffer_create(&buffer, step, 0, device)); /* max_size 0: up to the device's memory */
    CHECK(gpumem_buffer_data(buffer, &first));

    for (int s = 0; s < 3; s++) {
        size_t target = step * (size_t)(1 << (2 * s)) + 123; /* any size, no granularity needed */
        size_t start = s ? ends[s - 1] : 0;
        CHECK(gpumem_buffer_resize(buffer, target));
        /* Always ask for the address after a resize: without VMM it moves. */
        CHECK(gpumem_buffer_data(buffer, &data));
        CHECK(gpumem_buffer_size(buffer, &size));
        EXPECT(size == target, "buffer size %zu, asked %zu", size, target);
        if (vmm_native)
            EXPECT(data == first, "the buffer moved from %p to %p with native VMM", first, data);
        CHECK(gpumem_memset((char *)data + start, s + 1, target - start));
        ends[s] = target;
        verify(data, ends, s + 1);
        printf("buffer: %8zu bytes at %p%s\n", target, data, data == first ? "" : " (moved)");
    }

    /* Shrinking keeps the bytes below the new size. */
    CHECK(gpumem_buffer_resize(buffer, ends[0]));
    CHECK(gpumem_buffer_data(buffer, &data));
    verify(data, ends, 1);
    CHECK(gpumem_buffer_destroy(buffer));
}

int main(void)
{
    int32_t device;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &info));

    /* Raw VMM calls have no fallback: without native VMM they are NOT_SUPPORTED. */
    int vmm_native = info.virtual_memory == GPUMEM_SUPPORT_NATIVE;
    if (vmm_native)
        grow_with_vmm(device);
    else
        printf("vmm: not native on this device; raw VMM part skipped\n");
    grow_with_buffer(device, vmm_native);

    printf("vmm_grow: OK\n");
    CHECK(gpumem_finalize());
    return 0;
}
