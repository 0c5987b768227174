// Where a call runs: the one rule every service applies before it calls the
// backend (docs/architecture.md, "Where a call runs").
//
// Every call runs in the context of the device that owns what it touches:
// device memory, stream-ordered blocks of device pools, VMM mappings and
// buffer data belong to the device they were made on; pinned, registered and
// managed memory belong to none.  With no owner the stream's device decides
// (the NULL stream: the calling thread's current device), so gpumem's current
// device only picks where new allocations go and whose default stream NULL
// means.
//
// Why the owner: the driver checks a copy's and a fill's device pointers
// against the context current on the thread, and reaches another device's
// memory only where peer access (plain memory, fills) or an access grant
// (pool and VMM memory, every call) allows it.  Plain memory of another device
// copies from any context; pool and VMM memory does not, and neither does an
// address-range query (tests/fakes/probe/h100x4-placement.txt has the driver's
// answers).  The owner's context always reaches its own memory.
//
// A copy between memory of two devices is a peer copy: each pointer is
// resolved in its own device's context (cuMemcpyPeerAsync), the one form the
// driver accepts for pool and VMM memory that only its owner reaches, and as
// fast as a plain copy for the rest.
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
