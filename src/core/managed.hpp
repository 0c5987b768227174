// Managed memory: the vendor's where the device has it, else emulated with
// mapped pinned memory; advice, prefetch, range attributes and attach, with
// the attributes kept by gpumem so that queries answer the same everywhere.
#pragma once

#include <memory>

#include "core/registry.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Capture;
class Devices;
class ManagedMemory;
class Pinned;
class Pointers;

namespace managed {

// A checked range of one managed allocation: its attributes, where the range
// starts in it, and whether gpumem emulates it with pinned memory.
struct Range {
    std::shared_ptr<ManagedAttributes> attrs;
    size_t offset = 0;
    bool emulated = false;
};
// Record that [range, range + count) was prefetched to `device` (range attributes answer it).
void note_prefetch(const Range &range, size_t count, int32_t device);

} // namespace managed

class Managed {
public:
    // `runtime`: the backend's managed memory; `pinned`: what emulates it
    // where the device has none; `pointers`: the directory its allocations
    // are recorded in; `devices`: support levels and checks; `capture`: what
    // a stream captures (prefetch and attach cannot be recorded).
    Managed(ManagedMemory &runtime, Pointers &pointers, Pinned &pinned, const Devices &devices, const Capture &capture)
        : runtime_(runtime), pointers_(pointers), pinned_(pinned), devices_(devices), capture_(capture)
    {
    }
    Managed(const Managed &) = delete;
    Managed &operator=(const Managed &) = delete;

    // INVALID_VALUE unless [ptr, ptr + count) is non-empty and lies in one managed allocation.
    status_t find_range(const void *ptr, size_t count, managed::Range *out) const;
    // A prefetch or advice target: GPUMEM_DEVICE_HOST or a device of this backend.
    status_t check_location(int32_t device) const;
    // The backend's prefetch of one range to `target`, on `stream` of `device`,
    // or nothing where `target`'s pages do not migrate (hints, above managed.cpp's
    // prefetch).
    status_t prefetch_range(int32_t device, const void *ptr, size_t count, int32_t target, void *stream);

    status_t alloc(size_t size, uint32_t flags, void **ptr);
    status_t prefetch(const void *ptr, size_t count, int32_t device, gpumem_stream_t stream);
    status_t advise(const void *ptr, size_t count, int32_t advice, int32_t device);
    status_t range_attribute(void *data, size_t data_size, int32_t attribute, const void *ptr, size_t count) const;
    status_t attach(gpumem_stream_t stream, void *ptr, size_t length, uint32_t flags);
    // A registry allocation of kind MANAGED (emulated memory goes to the pinned cache).
    status_t release(const Allocation &a, bool finalizing);

private:
    bool pages_stay(int32_t device) const;

    ManagedMemory &runtime_;
    Pointers &pointers_;
    Pinned &pinned_;
    const Devices &devices_;
    const Capture &capture_;
};

} // namespace gpumem::detail
