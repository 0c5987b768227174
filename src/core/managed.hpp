// Managed memory: the vendor's where the device has it, else emulated with
// mapped pinned memory; advice, prefetch, range attributes and attach, with
// the attributes kept by gpumem so that queries answer the same everywhere.
#pragma once

#include <memory>

#include "core/registry.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

struct Runtime;

namespace managed {

// A checked range of one managed allocation: its attributes, where the range
// starts in it, and whether gpumem emulates it with pinned memory.
struct Range {
    std::shared_ptr<ManagedAttributes> attrs;
    size_t offset = 0;
    bool emulated = false;
};
// INVALID_VALUE unless [ptr, ptr + count) is non-empty and lies in one managed allocation.
status_t find_range(Runtime &rt, const void *ptr, size_t count, Range *out);
// A prefetch or advice target: GPUMEM_DEVICE_HOST or a device of this backend.
status_t check_location(Runtime &rt, int32_t device);
// Record that [range, range + count) was prefetched to `device` (range attributes answer it).
void note_prefetch(const Range &range, size_t count, int32_t device);

// The backend's prefetch of one range to `target`, on `stream` of `device`,
// or nothing where `target`'s pages do not migrate (hints, above managed.cpp's
// prefetch).
status_t prefetch_range(Runtime &rt, int32_t device, const void *ptr, size_t count, int32_t target, void *stream);

status_t alloc(Runtime &rt, size_t size, uint32_t flags, void **ptr);
status_t prefetch(Runtime &rt, const void *ptr, size_t count, int32_t device, gpumem_stream_t stream);
status_t advise(Runtime &rt, const void *ptr, size_t count, int32_t advice, int32_t device);
status_t range_attribute(Runtime &rt, void *data, size_t data_size, int32_t attribute, const void *ptr, size_t count);
status_t attach(Runtime &rt, gpumem_stream_t stream, void *ptr, size_t length, uint32_t flags);
// A registry allocation of kind MANAGED (emulated memory goes to the pinned cache).
status_t release(Runtime &rt, const Allocation &a, bool finalizing);

} // namespace managed
} // namespace gpumem::detail
