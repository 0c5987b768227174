// Explicit device memory, gpumem_free of any kind, copies and fills.
#pragma once

#include <functional>
#include <string>

#include "backends/backend.hpp"
#include "core/placement.hpp"
#include "core/registry.hpp"
#include "pool/stream_state.hpp" // StreamState, which ordered() reads inline
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Devices;
class Managed;
class Pinned;
class Pointers;
class Pools;
class Vmm;

class Memory {
public:
    // `runtime`: the backend's device memory, copies and fills; `streams`:
    // its streams and events (a fill ordered across devices, a wait before
    // the CPU touches host memory); `pointers`: the directory; `pinned` and
    // `managed`: what releases those kinds; `pools`: what frees a
    // stream-ordered block and gives back unused memory when the device is
    // full; `vmm`: where VMM mappings meet; `devices`: checks and what each
    // device can do; `workarounds`: the backend's Workaround bits.
    Memory(DeviceMemory &runtime, Streams &streams, Pointers &pointers, Pinned &pinned, Managed &managed, Pools &pools,
           const Vmm &vmm, const Devices &devices, uint32_t workarounds)
        : runtime_(runtime), streams_(streams), pointers_(pointers), pinned_(pinned), managed_(managed), pools_(pools),
          vmm_(vmm), devices_(devices), workarounds_(workarounds)
    {
    }
    Memory(const Memory &) = delete;
    Memory &operator=(const Memory &) = delete;

    status_t device_alloc(size_t size, void **ptr);
    // Any kind gpumem_free takes: device, pinned, managed, stream-ordered.
    status_t free(void *ptr);
    status_t copy(void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async);
    // A checked copy where placement put it, on native stream `stream`.
    status_t copy_at(const placement::CopyPlace &at, void *dst, const void *src, size_t n, void *stream,
                     CopyMode mode);
    status_t fill(void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async);
    // gpumem_malloc_pitch on the current device: the runtime's pitched
    // allocation (`rows`), or, without it, rows 512 bytes apart of device_alloc.
    status_t pitch_alloc(RowMemops *rows, size_t width, size_t height, void **ptr, size_t *pitch);
    // Work on `device` (the owner of the memory it touches) in the order of
    // stream `s`: on `s` itself where it is that device's stream or the
    // default stream (`explicit_stream` false), else on the owner's default
    // stream, ordered after what `s` has enqueued and before what comes next
    // (a fill reaches only its own device's memory: the design note of
    // in_order_of in memory.cpp).  `work(on)` gets the native stream to use.
    // The common case calls `work` directly: a std::function made on every
    // fill would allocate.
    template <class Work> status_t ordered(int32_t device, const StreamState &s, bool explicit_stream, Work &&work)
    {
        if (!explicit_stream || s.device == device)
            return work(s.native);
        return ordered_on_owner(device, s, work);
    }
    // A fill of host memory no runtime knows (`size`-byte elements of
    // `value`), by the CPU through the kernel once `s`'s work is done:
    // INVALID_POINTER, saying `why` it came here, where it is no memory this
    // process can write.
    status_t fill_unknown(const StreamState &s, void *dst, uint32_t value, unsigned size, size_t n,
                          const std::string &why);
    // A copy's sides that gpumem does not know (check_range's memory UNKNOWN),
    // checked before any runtime sees them, on every backend: INVALID_POINTER,
    // naming the side and the first page, for a source this process cannot read
    // or a destination it cannot write, unless the runtime knows that page (its
    // own device, managed or page-locked memory).  SUCCESS at once when gpumem
    // knows both sides.  `async`: the copy is stream-ordered (the design note in
    // memory.cpp says what that changes).
    status_t check_unknown_memory(const StreamState &s, void *dst, int32_t dst_memory, const void *src,
                                  int32_t src_memory, size_t n, bool async);

    // Give back what the backend holds for a registry allocation.
    // `finalizing`: the pinned cache keeps nothing.
    status_t release(const Allocation &a, bool finalizing);
    // gpumem_finalize: every allocation of the registry; counts what leaked.
    void release_all(size_t *leaked_allocations, uint64_t *leaked_bytes);

private:
    // ordered's work on the owner's default stream, between two events.
    status_t ordered_on_owner(int32_t device, const StreamState &s, const std::function<status_t(void *on)> &work);
    // Remove a registry allocation of an accepted kind and free it; on a
    // backend failure the record goes back so nothing is lost.
    status_t take_and_release(void *ptr, bool (*accept)(const Allocation &), const char *expected);
    [[gnu::cold]] status_t retry_after_release(int32_t device, size_t size, void **p);

    DeviceMemory &runtime_;
    Streams &streams_;
    Pointers &pointers_;
    Pinned &pinned_;
    Managed &managed_;
    Pools &pools_;
    const Vmm &vmm_;
    const Devices &devices_;
    const uint32_t workarounds_;
};

} // namespace gpumem::detail
