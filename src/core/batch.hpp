// Batched copies, prefetches and discards: every entry checked before
// anything is enqueued, then one runtime call for the batch where the
// runtime has one and takes the stream (BatchMemops), else one call per entry.
#pragma once

#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class BatchMemops;
class Capture;
class Devices;
class Managed;
class Memory;
class Pointers;
struct DeviceCaps;
struct StreamObject;

class Batch {
public:
    // `runtime`: the backend's batched calls (nullptr where it has none);
    // `memory`: the one-call-per-entry copies and their checks; `managed`:
    // ranges and prefetches of managed memory; `pointers`: the directory;
    // `devices`: what each device can batch; `capture`: what a stream
    // captures (the batched calls cannot be recorded); `workarounds`: the
    // backend's Workaround bits.
    Batch(BatchMemops *runtime, Memory &memory, Managed &managed, Pointers &pointers, const Devices &devices,
          const Capture &capture, uint32_t workarounds)
        : runtime_(runtime), memory_(memory), managed_(managed), pointers_(pointers), devices_(devices),
          capture_(capture), workarounds_(workarounds)
    {
    }
    Batch(const Batch &) = delete;
    Batch &operator=(const Batch &) = delete;

    // The API has checked the arrays (non-NULL, count > 0).
    status_t copy(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                  gpumem_stream_t stream);
    status_t prefetch(const void *const *ptrs, const size_t *sizes, size_t count, const int32_t *devices,
                      gpumem_stream_t stream);
    status_t discard(void *const *ptrs, const size_t *sizes, size_t count, gpumem_stream_t stream);

    // GPUMEM_SUPPORT_NATIVE where `device` copies batches with one runtime call, else EMULATED.
    int32_t support_level(int32_t device) const;

private:
    BatchMemops *native_for(const StreamObject &s, bool DeviceCaps::*call) const;

    BatchMemops *const runtime_;
    Memory &memory_;
    Managed &managed_;
    Pointers &pointers_;
    const Devices &devices_;
    const Capture &capture_;
    const uint32_t workarounds_;
};

} // namespace gpumem::detail
