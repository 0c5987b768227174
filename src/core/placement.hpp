// Design note: where a call runs (placement).
//
// Why: the driver checks a copy's and a fill's device pointers against the
// context current on the calling thread.  It reaches another device's memory
// only where peer access (plain memory, fills) or an access grant (pool and
// VMM memory, every call) allows it: plain memory of another device copies
// from any context, pool and VMM memory does not, and neither does an
// address-range query (the driver's answers: tests/fakes/probe/
// h100x4-placement.txt; the fakes give the same, suite fake-calibration).
// The owner's context always reaches its own memory, so running every call
// there is the one rule that works for every kind of memory and every grant.
//
// How:
//   - The owner.  Device memory, device-pool blocks, VMM mappings and buffer
//     data belong to the device they were made on (owner_of; the pointer
//     directory records it and Pointers::check_range returns it).  Pinned,
//     registered and managed memory belong to none.  A stream, an event and
//     a pool belong to their device.
//   - The decision is made here, in the core, by every service before it
//     calls the backend: for_copy, for_range.  With no owner the stream's
//     device decides; the NULL stream is the current device's default stream.
//   - A copy between two devices' memory is a peer copy: each pointer is
//     resolved in its own device's context (cuMemcpyPeerAsync), the one form
//     the driver accepts for memory only its owner reaches, and as fast as a
//     plain copy for the rest.  A batch whose entries do not all run on the
//     stream's device is made entry by entry (core/batch.cpp).
//   - Every backend method that touches memory, a stream, an event or a pool
//     takes the device first; the GPU backend enters it with one scoped guard
//     (GpuBackend::Placed), which switches only when another device is
//     current and puts the caller's context back.
//   - gpumem's current device is the runtime's (the thread's current
//     context), so cudaSetDevice and torch.cuda.set_device move it too, and
//     no gpumem call but gpumem_set_device changes it.
// Limits: a buffer or VMM range whose mappings lie on several devices is
// placed by its first mapping.  An imported pool learns its device from its
// first imported pointer (neither the pool's descriptor nor a pointer's
// export data can carry it).
#pragma once

#include <cstdint>

#include "gpumem/gpumem.h"

namespace gpumem::detail::placement {

// The device whose memory an allocation of `kind` is (`memory`: a pool
// block's GPUMEM_POOL_MEMORY_*), GPUMEM_DEVICE_HOST for memory no device owns.
inline int32_t owner_of(int32_t kind, int32_t memory, int32_t device)
{
    switch (kind) {
    case GPUMEM_KIND_DEVICE:
    case GPUMEM_KIND_VIRTUAL:
    case GPUMEM_KIND_BUFFER: return device;
    case GPUMEM_KIND_STREAM_ORDERED: return memory == GPUMEM_POOL_MEMORY_DEVICE ? device : GPUMEM_DEVICE_HOST;
    default: return GPUMEM_DEVICE_HOST;
    }
}

// Where a copy runs: `device`, or a peer copy from `src_device`'s memory to
// `device`'s.
struct CopyPlace {
    int32_t device = 0;
    int32_t src_device = 0;
    bool peer = false;
};

// `dst_owner` and `src_owner` from owner_of; `stream_device` the device of the
// stream named (for the NULL stream: the current device).
inline CopyPlace for_copy(int32_t dst_owner, int32_t src_owner, int32_t stream_device)
{
    const bool dst_owned = dst_owner != GPUMEM_DEVICE_HOST, src_owned = src_owner != GPUMEM_DEVICE_HOST;
    if (dst_owned && src_owned && dst_owner != src_owner)
        return CopyPlace{dst_owner, src_owner, true};
    const int32_t device = dst_owned ? dst_owner : src_owned ? src_owner : stream_device;
    return CopyPlace{device, device, false};
}

// Where a fill (and any call on one range of memory) runs.
inline int32_t for_range(int32_t owner, int32_t stream_device)
{
    return owner != GPUMEM_DEVICE_HOST ? owner : stream_device;
}

} // namespace gpumem::detail::placement
