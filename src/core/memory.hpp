// Explicit device memory, gpumem_free of any kind, copies and fills.
#pragma once

#include "backends/backend.hpp"
#include "core/placement.hpp"
#include "core/registry.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

struct Runtime;
struct StreamState;

namespace memory {

status_t device_alloc(Runtime &rt, size_t size, void **ptr);
// Any kind gpumem_free takes: device, pinned, managed, stream-ordered.
status_t free(Runtime &rt, void *ptr);
status_t copy(Runtime &rt, void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async);
// A checked copy where placement put it, on native stream `stream`.
status_t copy_at(Runtime &rt, const placement::CopyPlace &at, void *dst, const void *src, size_t n, void *stream,
                 CopyMode mode);
status_t fill(Runtime &rt, void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async);
// Where device memory is this process's own memory (the host backend), the
// backend's copy is a plain memcpy: memory gpumem does not know (check_range's
// memory UNKNOWN) is first asked of the kernel, so that an address no memory
// is at is INVALID_POINTER instead of a fault.  The check (SUCCESS at once
// elsewhere, or where both sides are gpumem's): the source's pages readable,
// the destination's writable (after the stream's earlier work).
status_t check_unknown_on_host(Runtime &rt, const StreamState &s, void *dst, int32_t dst_memory, const void *src,
                               int32_t src_memory, size_t n);

// Record a new registry allocation (the directory and the statistics).
void record(Runtime &rt, const Allocation &a);
// Remove a registry allocation of an accepted kind and free it; on a
// backend failure the record goes back so nothing is lost.
status_t take_and_release(Runtime &rt, void *ptr, bool (*accept)(const Allocation &), const char *expected);
// Give back what the backend holds for a registry allocation.
// `finalizing`: the pinned cache keeps nothing.
status_t release(Runtime &rt, const Allocation &a, bool finalizing);
// gpumem_finalize: every allocation of the registry; counts what leaked.
void release_all(Runtime &rt, size_t *leaked_allocations, uint64_t *leaked_bytes);

} // namespace memory
} // namespace gpumem::detail
