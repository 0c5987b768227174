// Batched copies, prefetches and discards: every entry checked before
// anything is enqueued, then one runtime call for the batch where the
// runtime has one and takes the stream (BatchMemops), else one call per entry.
#pragma once

#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

struct Runtime;

namespace batch {

// The API has checked the arrays (non-NULL, count > 0).
status_t copy(Runtime &rt, void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
              gpumem_stream_t stream);
status_t prefetch(Runtime &rt, const void *const *ptrs, const size_t *sizes, size_t count, const int32_t *devices,
                  gpumem_stream_t stream);
status_t discard(Runtime &rt, void *const *ptrs, const size_t *sizes, size_t count, gpumem_stream_t stream);

// GPUMEM_SUPPORT_NATIVE where `device` copies batches with one runtime call, else EMULATED.
int32_t support_level(const Runtime &rt, int32_t device);

} // namespace batch
} // namespace gpumem::detail
