// dma-buf export: the policy of gpumem_mem_export_dmabuf.  The core decides
// which memory may be exported (device memory of one gpumem allocation, as
// the pointer directory knows it) and where the call runs (the owner of that
// memory); the backend's DmaBufExport facet makes the descriptor.
#pragma once

#include <cstddef>

#include "base/error.hpp"

namespace gpumem::detail {

struct Runtime;

namespace dmabuf {

// A new dma-buf descriptor for [ptr, ptr+size), which the caller has checked
// to be non-empty, page-aligned and not wrapping.  INVALID_VALUE, saying why,
// for memory that is not device memory of one live gpumem allocation;
// NOT_SUPPORTED where the owner device cannot export dma-bufs.
status_t export_range(Runtime &rt, const void *ptr, size_t size, int *fd);

} // namespace dmabuf
} // namespace gpumem::detail
