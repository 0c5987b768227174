/*
 * pinned_async: asynchronous copies from and to page-locked host memory.
 *
 * Copies between the device and *pinned* host memory can run in the
 * background while the CPU goes on; with pageable memory the runtime has to
 * stage them.  The copies are queued on a stream, an event marks their end,
 * and the host reads the result only once the event has completed.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

#define BYTES ((size_t)16 << 20)

int main(void)
{
    unsigned char *h_src, *h_dst;
    void *dev;
    CHECK(gpumem_host_alloc((void **)&h_src, BYTES, 0));
    CHECK(gpumem_host_alloc((void **)&h_dst, BYTES, 0));
    CHECK(gpumem_malloc(&dev, BYTES));

    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK(gpumem_pointer_get_info(h_src, &info));
    EXPECT(info.kind == GPUMEM_KIND_HOST_PINNED, "pinned memory reported as kind %d", info.kind);

    /* Pinned memory is host memory: the CPU fills it directly. */
    for (size_t i = 0; i < BYTES; i++)
        h_src[i] = (unsigned char)(i * 7 + 3);
    memset(h_dst, 0, BYTES);

    gpumem_stream_t stream;
    gpumem_event_t start, stop;
    CHECK(gpumem_stream_create(&stream));
    CHECK(gpumem_event_create(&start));
    CHECK(gpumem_event_create(&stop));

    /* All four operations are queued; they run in this order on the stream. */
    CHECK(gpumem_event_record(start, stream));
    CHECK(gpumem_memcpy_async(dev, h_src, BYTES, stream));
    CHECK(gpumem_memcpy_async(h_dst, dev, BYTES, stream));
    CHECK(gpumem_event_record(stop, stream));

    /* The CPU is free here (BUSY = still copying); it must not read h_dst
     * before the event completes. */
    gpumem_status_t q = gpumem_event_query(stop);
    EXPECT(q == GPUMEM_SUCCESS || q == GPUMEM_ERROR_BUSY, "event query: %s", gpumem_status_string(q));
    CHECK(gpumem_event_synchronize(stop));
    CHECK(gpumem_event_query(stop));
    CHECK(gpumem_stream_query(stream)); /* all the stream's work is done too */

    EXPECT(memcmp(h_src, h_dst, BYTES) == 0, "the async round trip returned different data");

    float ms = 0;
    CHECK(gpumem_event_elapsed_ms(&ms, start, stop));
    EXPECT(ms >= 0, "elapsed %f ms", (double)ms);
    printf("pinned_async: OK, %zu MiB there and back in %.3f ms", BYTES >> 20, (double)ms);
    if (ms > 0)
        printf(" (%.1f GB/s)", 2.0 * (double)BYTES / ((double)ms * 1e6));
    printf("\n");

    CHECK(gpumem_event_destroy(start));
    CHECK(gpumem_event_destroy(stop));
    CHECK(gpumem_stream_destroy(stream));
    CHECK(gpumem_free(dev));
    CHECK(gpumem_host_free(h_src));
    CHECK(gpumem_host_free(h_dst));
    CHECK(gpumem_finalize());
    return 0;
}
