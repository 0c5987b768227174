// GPUMEM_LIMIT: a per-device cap on the bytes gpumem holds for the program.
// What counts (docs/semantics.md, "Memory limit"): the live bytes of device,
// managed, stream-ordered, VMM physical and growable-buffer allocations on
// the device, as accounted by account_alloc/account_free (core/stats.hpp).
// Pinned and registered host memory do not count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/error.hpp"
#include "core/stats.hpp"

namespace gpumem::detail {

class Devices;
struct Options;

namespace limit {

// From the options, once the devices are known (init); off when unset.
void configure(const Options &options, const Devices &devices);
// gpumem_finalize: off, and nothing held.
void stop();

// Whether `kind` counts against the cap.
bool counts(int32_t kind);
// The kind a block counts as: one from a pool of pinned host memory is pinned
// memory (not counted), whatever pool served it.
inline int32_t counted_kind(int32_t kind, int32_t pool_memory)
{
    return kind == GPUMEM_KIND_STREAM_ORDERED && pool_memory == GPUMEM_POOL_MEMORY_PINNED ? GPUMEM_KIND_HOST_PINNED
                                                                                          : kind;
}
// The cap and what counts now on `device` (0 and 0 when off).
uint64_t cap(int32_t device);
uint64_t held(int32_t device);

status_t check_slow(int32_t kind, int32_t device, size_t bytes);
// Before allocating `bytes` of `kind` on `device`: OUT_OF_MEMORY when they
// would take what gpumem holds there past the cap.  Threads allocating at the
// same moment may each pass: the cap can be overshot by what is in flight.
inline status_t check(int32_t kind, int32_t device, size_t bytes)
{
    if (!(g_watchers.load(std::memory_order_relaxed) & watch_limit)) [[likely]]
        return GPUMEM_SUCCESS;
    return check_slow(kind, device, bytes);
}

// From account_alloc / account_free (watch_alloc, watch_free).
void on_alloc(int32_t kind, int32_t device, uint64_t bytes);
void on_free(int32_t kind, int32_t device, uint64_t bytes);

} // namespace limit
} // namespace gpumem::detail
