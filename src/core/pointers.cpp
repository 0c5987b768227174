#include "core/pointers.hpp"

#include <cinttypes>

#include "core/placement.hpp"
#include "core/runtime.hpp"

namespace gpumem::detail {

const char *kind_name(int32_t kind)
{
    static const char *const names[] = {"unknown",        "device memory",        "pinned host memory",
                                        "registered host memory", "managed memory",
                                        "stream-ordered memory", "a VMM range", "growable-buffer data"};
    return kind >= 0 && kind < GPUMEM_KIND_COUNT ? names[kind] : "unknown";
}

// Emulated managed memory still says MANAGED (the memory the program asked
// for; `emulated` says how).
int32_t memory_of_kind(int32_t kind)
{
    switch (kind) {
    case GPUMEM_KIND_HOST_PINNED:
    case GPUMEM_KIND_HOST_REGISTERED: return GPUMEM_POOL_MEMORY_PINNED;
    case GPUMEM_KIND_MANAGED: return GPUMEM_POOL_MEMORY_MANAGED;
    case GPUMEM_KIND_DEVICE:
    case GPUMEM_KIND_VIRTUAL:
    case GPUMEM_KIND_BUFFER: return GPUMEM_POOL_MEMORY_DEVICE;
    default: return GPUMEM_POOL_MEMORY_UNKNOWN;
    }
}

namespace {

void from_record(const Allocation &a, PointerInfo *out)
{
    out->kind = a.kind;
    out->base = a.base;
    out->size = a.size;
    out->device = a.device;
    out->emulated = a.emulated;
    out->memory = memory_of_kind(a.kind);
    out->flags = a.flags;
    out->device_pointer = a.device_pointer ? a.device_pointer : reinterpret_cast<void *>(a.base);
    out->record = a;
}

void from_block(const PoolBlock &b, bool emulated, PointerInfo *out)
{
    out->kind = GPUMEM_KIND_STREAM_ORDERED;
    out->base = reinterpret_cast<uintptr_t>(b.base);
    out->size = b.size;
    out->device = b.device;
    out->pool = b.pool;
    out->emulated = emulated;
    out->memory = b.memory;
    out->device_pointer = b.base;
}

} // namespace

// The books in order: registry, pool blocks (gpumem's own, then the
// vendor's), VMM reservations.
bool Pointers::find(const void *ptr, PointerInfo *out) const
{
    *out = PointerInfo{};
    if (!ptr)
        return false; // NULL is nobody's memory
    Allocation a;
    if (registry_.find_containing(ptr, &a)) {
        from_record(a, out);
        return true;
    }
    PoolBlock block;
    bool emulated = false;
    if (rt_.pools.find(ptr, &block, true, &emulated)) {
        from_block(block, emulated, out);
        return true;
    }
    if (!rt_.vmm.find(ptr, out))
        return false;
    out->memory = memory_of_kind(out->kind);
    return true;
}

status_t Pointers::explain_bad(const void *ptr, const char *expected) const
{
    PointerInfo info;
    if (!find(ptr, &info))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is not a live gpumem allocation (never allocated by gpumem, already freed, or from before "
                    "gpumem_finalize); expected %s", ptr, expected);
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    switch (info.kind) {
    case GPUMEM_KIND_STREAM_ORDERED:
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is %s %s; release it with gpumem_free_async (or gpumem_free) on the pointer returned",
                    ptr, info.base == p ? "" : "inside", kind_name(GPUMEM_KIND_STREAM_ORDERED));
    case GPUMEM_KIND_VIRTUAL:
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p lies in a VMM reservation; release it with gpumem_mem_unmap and gpumem_mem_address_free", ptr);
    default:
        break;
    }
    if (p != info.base)
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p points %" PRIuPTR " bytes inside %s at %p; pass the pointer the allocation returned", ptr,
                    p - info.base, kind_name(info.kind), reinterpret_cast<void *>(info.base));
    const char *how = info.kind == GPUMEM_KIND_HOST_REGISTERED ? "gpumem_host_unregister"
                      : info.kind == GPUMEM_KIND_BUFFER        ? "gpumem_buffer_destroy on its buffer"
                      : info.kind == GPUMEM_KIND_HOST_PINNED   ? "gpumem_host_free or gpumem_free"
                                                               : "gpumem_free";
    return fail(GPUMEM_ERROR_INVALID_POINTER, "%p is %s, not %s; release it with %s", ptr, kind_name(info.kind),
                expected, how);
}

bool Pointers::overlaps(const void *ptr, size_t size) const
{
    PoolBlock block; // a vendor pool's block is known by its base and interior scan only
    return registry_.overlaps(ptr, size) || rt_.pools.holds(ptr, size) || rt_.pools.find(ptr, &block, true, nullptr) ||
           rt_.vmm.overlaps(ptr, size);
}

status_t Pointers::check_range(const void *ptr, size_t n, bool write, const char *what, size_t *one_mapping,
                               int32_t *owner) const
{
    if (one_mapping)
        *one_mapping = n;
    if (owner)
        *owner = GPUMEM_DEVICE_HOST;
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    if (n > UINTPTR_MAX - p)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%s %p + %zu bytes wraps around the address space", what, ptr, n);
    Extent e;
    PoolBlock block;
    uintptr_t base = 0;
    size_t size = 0;
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    if (registry_.find_extent(ptr, &e)) {
        base = e.base;
        size = e.size;
        kind = e.kind;
        if (owner)
            *owner = placement::owner_of(e.kind, GPUMEM_POOL_MEMORY_UNKNOWN, e.device);
    } else if (rt_.pools.find(ptr, &block, false, nullptr) && block.size) {
        // The vendor's blocks are found by base only here (interior
        // lookups there are a scan), and an imported one has size 0 where the vendor cannot say its range.
        base = reinterpret_cast<uintptr_t>(block.base);
        size = block.size;
        kind = GPUMEM_KIND_STREAM_ORDERED;
        if (owner)
            *owner = placement::owner_of(kind, block.memory, block.device);
    } else {
        bool inside = false;
        status_t st = rt_.vmm.check_range(ptr, n, write, what, &inside, one_mapping, owner);
        // Inside a vendor pool's block but not at its base: the runtime knows whose.
        if (owner && !inside && rt_.pools.native_may_hold(ptr))
            *owner = rt_.backend->pointer_device(ptr);
        // Freed memory is INVALID_POINTER for every call, as for gpumem_free.
        if (!inside && rt_.pools.holds(ptr, 1))
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%s %p lies in gpumem's own pool but in no live block: the memory was freed "
                        "(gpumem_free_async or gpumem_free); allocate it again before using it", what, ptr);
        return st;
    }
    if (n > size - (p - base))
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%s %p + %zu bytes runs past the end of %s at %p of %zu bytes", what,
                    ptr, n, kind_name(kind), reinterpret_cast<void *>(base), size);
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
