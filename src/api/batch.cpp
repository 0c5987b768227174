// Batched copies, prefetches and discards of many ranges in one call.
#include "api/entry.hpp"
#include "core/batch.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy_batch_async(void *const *dsts, const void *const *srcs,
                                                        const size_t *sizes, size_t count, gpumem_stream_t stream)
{
    return entry("gpumem_memcpy_batch_async", [&](Runtime &rt) {
        if (count == 0)
            return GPUMEM_SUCCESS;
        GPUMEM_REQUIRE(dsts && srcs && sizes,
                       "dsts, srcs and sizes must be arrays of count (%zu) entries, not NULL (dsts %p, srcs %p, "
                       "sizes %p)", count, static_cast<const void *>(dsts), static_cast<const void *>(srcs),
                       static_cast<const void *>(sizes));
        return rt.batch.copy(dsts, srcs, sizes, count, stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_prefetch_batch_async(const void *const *ptrs, const size_t *sizes, size_t count,
                                                          const int32_t *devices, gpumem_stream_t stream)
{
    return entry("gpumem_prefetch_batch_async", [&](Runtime &rt) {
        if (count == 0)
            return GPUMEM_SUCCESS;
        GPUMEM_REQUIRE(ptrs && sizes && devices,
                       "ptrs, sizes and devices must be arrays of count (%zu) entries, not NULL (ptrs %p, sizes %p, "
                       "devices %p)", count, static_cast<const void *>(ptrs), static_cast<const void *>(sizes),
                       static_cast<const void *>(devices));
        return rt.batch.prefetch(ptrs, sizes, count, devices, stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_discard_batch_async(void *const *ptrs, const size_t *sizes, size_t count,
                                                         gpumem_stream_t stream)
{
    return entry("gpumem_discard_batch_async", [&](Runtime &rt) {
        if (count == 0)
            return GPUMEM_SUCCESS;
        GPUMEM_REQUIRE(ptrs && sizes,
                       "ptrs and sizes must be arrays of count (%zu) entries, not NULL (ptrs %p, sizes %p)", count,
                       static_cast<const void *>(ptrs), static_cast<const void *>(sizes));
        return rt.batch.discard(ptrs, sizes, count, stream);
    });
}
