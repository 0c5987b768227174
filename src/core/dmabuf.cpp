// dma-buf export (core/dmabuf.hpp).
//
// The runtimes refuse much the same ranges (an H200's driver: pinned,
// managed, freed and unknown memory, a range past its allocation; probe group
// export), but answer CUDA_ERROR_INVALID_VALUE for all of them.  The checks
// here come first so that the message says which, and so that every backend,
// the host one included, refuses the same ranges the same way.
#include "core/dmabuf.hpp"

#include <cinttypes>

#include "backends/backend.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools.hpp"

namespace gpumem::detail {

namespace {

const char *const k_what_to_export =
    "export device memory of one allocation: gpumem_malloc memory, a block of a device pool, mapped VMM memory "
    "or a buffer's data";

} // namespace

// Where the range [p, end) goes past the allocation [base, base+size) of `kind`.
status_t DmaBuf::past_allocation(uintptr_t p, uintptr_t end, uintptr_t base, size_t size, const char *kind) const
{
    const uintptr_t last = end - 1;
    PointerInfo next;
    if (pointers_.find(reinterpret_cast<const void *>(last), &next) && next.base != base)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot export %p + %zu bytes as a dma-buf: the range runs across two allocations, %s at %p "
                    "of %zu bytes and %s at %p; a dma-buf covers one allocation: export each separately",
                    reinterpret_cast<void *>(p), static_cast<size_t>(end - p), kind, reinterpret_cast<void *>(base),
                    size, kind_name(next.kind), reinterpret_cast<void *>(next.base));
    return fail(GPUMEM_ERROR_INVALID_VALUE,
                "cannot export %p + %zu bytes as a dma-buf: the range runs past the end of the allocation of %s at "
                "%p of %zu bytes; export at most the %" PRIuPTR " bytes from %p",
                reinterpret_cast<void *>(p), static_cast<size_t>(end - p), kind, reinterpret_cast<void *>(base), size,
                base + size - p, reinterpret_cast<void *>(p));
}

bool DmaBuf::supported(int32_t device) const
{
    return runtime_ && device >= 0 && device < devices_.count() && devices_[device].caps.dmabuf;
}

status_t DmaBuf::export_range(const void *ptr, size_t size, int *fd) const
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    const uintptr_t end = p + size; // the caller checked that it does not wrap
    PointerInfo info;
    if (!pointers_.find(ptr, &info)) {
        Graves::Grave grave;
        if (pointers_.freed(ptr, &grave) || pools_.holds(ptr, 1))
            return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot export %p as a dma-buf: the memory was freed; %s", ptr,
                        k_what_to_export);
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot export %p as a dma-buf: gpumem did not make this memory (pageable host memory, or "
                    "another allocator's); %s",
                    ptr, k_what_to_export);
    }
    int32_t owner = info.device;
    switch (info.kind) {
    case GPUMEM_KIND_DEVICE:
    case GPUMEM_KIND_BUFFER:
        break;
    case GPUMEM_KIND_STREAM_ORDERED:
        if (info.memory != GPUMEM_POOL_MEMORY_DEVICE)
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "cannot export %p as a dma-buf: it is a block of a pool of %s memory, and a dma-buf is made "
                        "of device memory only; %s",
                        ptr, info.memory == GPUMEM_POOL_MEMORY_PINNED ? "pinned host" : "managed", k_what_to_export);
        if (info.size == 0) // an imported block whose size the runtime does not say
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "cannot export %p as a dma-buf: it is a block imported from another process whose size the "
                        "runtime does not say; export it in the process that allocated it",
                        ptr);
        break;
    case GPUMEM_KIND_VIRTUAL: {
        // Mappings that follow one another form one range, as the runtime
        // takes them (an H200 exports across two mappings); every byte must be mapped.
        if (status_t st = pointers_.check_range(ptr, size, false, "dma-buf export:", nullptr, &owner))
            return st;
        info.base = p;
        info.size = size;
        break;
    }
    case GPUMEM_KIND_HOST_PINNED:
    case GPUMEM_KIND_HOST_REGISTERED:
    case GPUMEM_KIND_MANAGED:
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot export %p as a dma-buf: it is %s (%s), and a dma-buf is made of device memory only; %s",
                    ptr, kind_name(info.kind),
                    info.kind == GPUMEM_KIND_MANAGED ? "managed memory that migrates between host and device"
                                                     : "page-locked host memory",
                    k_what_to_export);
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot export %p as a dma-buf: it is %s; %s", ptr,
                    kind_name(info.kind), k_what_to_export);
    }
    if (size > info.size - (p - info.base))
        return past_allocation(p, end, info.base, info.size, kind_name(info.kind));

    if (!runtime_)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot export %p + %zu bytes as a dma-buf: the %s backend has no dma-buf export (its device "
                    "memory is this process's own memory, which no other driver can import); "
                    "gpumem_device_info_t.dmabuf says GPUMEM_SUPPORT_NONE",
                    ptr, size, backend_name(devices_.backend_id()));
    if (const char *broken = devices_.broken_reason(selftest_dmabuf, owner))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot export %p + %zu bytes as a dma-buf: dma-buf export on device %d is %s; "
                    "gpumem_device_info_t.dmabuf says GPUMEM_SUPPORT_BROKEN",
                    ptr, size, owner, broken);
    if (!supported(owner))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot export %p + %zu bytes as a dma-buf: device %d cannot (CUDA needs a driver with the open "
                    "kernel module, whose DMA_BUF_SUPPORTED attribute says 1; HIP needs "
                    "hipMemGetHandleForAddressRange); gpumem_device_info_t.dmabuf says GPUMEM_SUPPORT_NONE",
                    ptr, size, owner);
    return runtime_->export_dmabuf(owner, ptr, size, fd);
}

} // namespace gpumem::detail
