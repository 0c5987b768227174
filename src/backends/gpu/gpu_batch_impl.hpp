// GpuBackend<Vendor>: the runtime's batched copies, prefetches and discards.
// Included once per vendor by the file that instantiates the template.  The
// core has checked every entry and picked the stream; each call here is one
// vendor call for the whole batch.
#pragma once

#include "backends/gpu/gpu_backend.hpp"

namespace gpumem::detail::gpu {

template <typename Vendor>
status_t GpuBackend<Vendor>::copy_batch(int32_t device, void *const *dsts, const void *const *srcs, const size_t *sizes,
                                        size_t count, void *stream, size_t *failed)
{
    *failed = SIZE_MAX;
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.memcpy_batch(dsts, srcs, sizes, count, stream, failed), "copy a batch of %zu ranges on stream %p",
                 count, stream);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::prefetch_batch(int32_t device, const void *const *ptrs, const size_t *sizes, size_t count,
                                            const int32_t *devices, void *stream)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.prefetch_batch(ptrs, sizes, count, devices, stream),
                 "prefetch a batch of %zu managed ranges on stream %p", count, stream);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::discard_batch(int32_t device, void *const *ptrs, const size_t *sizes, size_t count,
                                           void *stream)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.discard_batch(ptrs, sizes, count, stream), "discard a batch of %zu managed ranges on stream %p",
                 count, stream);
}

} // namespace gpumem::detail::gpu
