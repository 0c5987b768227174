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
// A copy's sides that gpumem does not know (check_range's memory UNKNOWN),
// checked before any runtime sees them, on every backend: INVALID_POINTER,
// naming the side and the first page, for a source this process cannot read
// or a destination it cannot write, unless the runtime knows that page (its
// own device, managed or page-locked memory).  SUCCESS at once when gpumem
// knows both sides.  `async`: the copy is stream-ordered (the design note in
// memory.cpp says what that changes).
status_t check_unknown_memory(Runtime &rt, const StreamState &s, void *dst, int32_t dst_memory, const void *src,
                              int32_t src_memory, size_t n, bool async);

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
