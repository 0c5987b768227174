/*
 * explicit_copies: device memory filled and read back with explicit copies.
 *
 * The classic pattern: allocate on the device, copy host -> device, work,
 * copy device -> host, check.  The host never dereferences a device pointer:
 * on a GPU that would crash, so the example runs unchanged there.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

#define COUNT (1u << 20) /* int32 values: 4 MiB */

int main(void)
{
    size_t bytes = COUNT * sizeof(int32_t);
    /* Plain malloc memory: gpumem_memcpy infers the direction from the pointers. */
    int32_t *src = malloc(bytes), *dst = malloc(bytes);
    EXPECT(src && dst, "host malloc of %zu bytes", bytes);
    for (uint32_t i = 0; i < COUNT; i++)
        src[i] = (int32_t)(i * 3u + 1u);

    void *dev_a, *dev_b;
    CHECK(gpumem_malloc(&dev_a, bytes));
    CHECK(gpumem_malloc(&dev_b, bytes));

    /* gpumem knows what it handed out, interior pointers included. */
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK(gpumem_pointer_get_info((char *)dev_a + 100, &info));
    EXPECT(info.kind == GPUMEM_KIND_DEVICE && info.base == dev_a && info.alloc_size == bytes,
           "kind %d base %p size %zu", info.kind, info.base, info.alloc_size);

    /* Host -> device -> host. */
    CHECK(gpumem_memcpy(dev_a, src, bytes));
    memset(dst, 0, bytes);
    CHECK(gpumem_memcpy(dst, dev_a, bytes));
    EXPECT(memcmp(src, dst, bytes) == 0, "device round trip returned different data");

    /* Device -> device over a filled buffer: the first half is copied, the
     * second keeps the fill. */
    CHECK(gpumem_memset(dev_b, 0xab, bytes));
    CHECK(gpumem_memcpy(dev_b, dev_a, bytes / 2));
    CHECK(gpumem_memcpy(dst, dev_b, bytes));
    EXPECT(memcmp(dst, src, bytes / 2) == 0, "device-to-device copy lost data");
    const unsigned char *tail = (const unsigned char *)dst + bytes / 2;
    for (size_t i = 0; i < bytes / 2; i++)
        EXPECT(tail[i] == 0xab, "byte %zu of the fill is 0x%02x", i, tail[i]);

    CHECK(gpumem_free(dev_a));
    CHECK(gpumem_free(dev_b));
    free(src);
    free(dst);

    int32_t backend;
    CHECK(gpumem_get_backend(&backend));
    printf("explicit_copies: OK (backend %s, %zu bytes each way)\n", gpumem_backend_name(backend), bytes);
    CHECK(gpumem_finalize());
    return 0;
}
