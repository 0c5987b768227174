// Seeing memory: snapshots (gpumem_snapshot_*) and the report appended to
// every OUT_OF_MEMORY message.  Both walk the pointer directory's books (the
// registry, both pool implementations' live blocks) and gpumem's own pool
// segments; neither changes anything.
#pragma once

#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

struct Runtime;

namespace inspect {

status_t snapshot_take(Runtime &rt, gpumem_snapshot_t **out);
// INVALID_VALUE for a snapshot this library did not make or already released.
status_t snapshot_release(const gpumem_snapshot_t *snapshot);
status_t snapshot_write_json(const gpumem_snapshot_t *snapshot, const char *path);

// Append the state of memory to the calling thread's OUT_OF_MEMORY message:
// each device's free/total, each pool's reserved and used bytes, the largest
// free block in gpumem's own pools, the five largest live allocations.
// Never fails: what cannot be read is left out.
void append_oom_report(Runtime &rt) noexcept;

} // namespace inspect
} // namespace gpumem::detail
