// dma-buf export: the policy of gpumem_mem_export_dmabuf.  The core decides
// which memory may be exported (device memory of one gpumem allocation, as
// the pointer directory knows it) and where the call runs (the owner of that
// memory); the backend's DmaBufExport facet makes the descriptor.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/error.hpp"

namespace gpumem::detail {

class DmaBufExport;
class Devices;
class Pointers;
class Pools;

class DmaBuf {
public:
    // `runtime`: the backend's dma-buf export (nullptr where it has none);
    // `pointers`: the directory that says what memory a range is; `pools`:
    // whether a pointer it does not know lies in memory a pool holds (freed);
    // `devices`: which devices export dma-bufs.
    DmaBuf(DmaBufExport *runtime, const Pointers &pointers, const Pools &pools, const Devices &devices)
        : runtime_(runtime), pointers_(pointers), pools_(pools), devices_(devices)
    {
    }
    DmaBuf(const DmaBuf &) = delete;
    DmaBuf &operator=(const DmaBuf &) = delete;

    // Whether `device` exports dma-bufs (gpumem_device_info_t.dmabuf).
    bool supported(int32_t device) const;
    // A new dma-buf descriptor for [ptr, ptr+size), which the caller has checked
    // to be non-empty, page-aligned and not wrapping.  INVALID_VALUE, saying why,
    // for memory that is not device memory of one live gpumem allocation;
    // NOT_SUPPORTED where the owner device cannot export dma-bufs.
    status_t export_range(const void *ptr, size_t size, int *fd) const;

private:
    status_t past_allocation(uintptr_t p, uintptr_t end, uintptr_t base, size_t size, const char *kind) const;

    DmaBufExport *runtime_;
    const Pointers &pointers_;
    const Pools &pools_;
    const Devices &devices_;
};

} // namespace gpumem::detail
