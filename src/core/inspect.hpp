// Seeing memory: snapshots (gpumem_snapshot_*) and the report appended to
// every OUT_OF_MEMORY message.  Both walk the pointer directory's books (the
// registry, both pool implementations' live blocks) and gpumem's own pool
// segments; neither changes anything.
#pragma once

#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Backend;
class Devices;
class Pointers;
class Pools;

class Inspect {
public:
    // `runtime`: asked only for each device's free and total memory and
    // whether its context runs; `pointers` and `pools`: the books;
    // `devices`: what each device is; `epoch_ns`: when gpumem_init ran
    // (times count from it).
    Inspect(Backend &runtime, const Pointers &pointers, Pools &pools, const Devices &devices, const uint64_t &epoch_ns)
        : runtime_(runtime), pointers_(pointers), pools_(pools), devices_(devices), epoch_ns_(epoch_ns)
    {
    }
    Inspect(const Inspect &) = delete;
    Inspect &operator=(const Inspect &) = delete;

    status_t snapshot_take(gpumem_snapshot_t **out);

    // Append the state of memory to the calling thread's OUT_OF_MEMORY message:
    // each device's free/total, each pool's reserved and used bytes, the largest
    // free block in gpumem's own pools, the five largest live allocations.
    // Never fails: what cannot be read is left out.
    void append_oom_report() noexcept;

private:
    Backend &runtime_;
    const Pointers &pointers_;
    Pools &pools_;
    const Devices &devices_;
    const uint64_t &epoch_ns_;
};

namespace inspect {

// INVALID_VALUE for a snapshot this library did not make or already released.
status_t snapshot_release(const gpumem_snapshot_t *snapshot);
status_t snapshot_write_json(const gpumem_snapshot_t *snapshot, const char *path);

} // namespace inspect
} // namespace gpumem::detail
