#include "core/pointers.hpp"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "backends/backend.hpp"
#include "base/cpu_reach.hpp"
#include "core/pinned.hpp"
#include "core/placement.hpp"
#include "core/pools/own_pools.hpp"
#include "core/pools/pools.hpp"
#include "core/vmm.hpp"

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

void from_record(const Extent &a, PointerInfo *out)
{
    out->kind = a.kind;
    out->base = a.base;
    out->size = a.size;
    out->device = a.device;
    out->emulated = a.emulated;
    out->memory = memory_of_kind(a.kind);
    out->flags = a.flags;
    out->device_pointer = a.device_pointer ? a.device_pointer : reinterpret_cast<void *>(a.base);
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

Graves &process_graves()
{
    static Graves *graves = new Graves; // leaked: it outlives every runtime
    return *graves;
}

std::atomic<bool> g_finalizing{false};

// gpumem's own pool gives a chunk back: its addresses are freed memory now.
void on_chunk_released(void *base, size_t size, int32_t device, int32_t)
{
    process_graves().bury(reinterpret_cast<uintptr_t>(base), size, GPUMEM_KIND_STREAM_ORDERED, device,
                          g_finalizing.load(std::memory_order_relaxed));
}

// How memory of `kind` is given back, for the messages.
const char *released_by(int32_t kind)
{
    switch (kind) {
    case GPUMEM_KIND_HOST_PINNED: return "gpumem_host_free or gpumem_free";
    case GPUMEM_KIND_VIRTUAL: return "gpumem_mem_address_free";
    case GPUMEM_KIND_BUFFER: return "gpumem_buffer_destroy or gpumem_buffer_resize";
    default: return "gpumem_free";
    }
}

// What a grave was, for the messages.  A stream-ordered grave is a chunk gpumem's own pool gave
// back once its blocks were freed, not the block the caller had: the chunk is named as such.
std::string grave_words(const Graves::Grave &grave)
{
    char text[256];
    if (grave.kind == GPUMEM_KIND_STREAM_ORDERED && grave.at_finalize)
        snprintf(text, sizeof text,
                 "stream-ordered memory (%zu bytes at %p) still held at gpumem_finalize, which released it",
                 grave.size, reinterpret_cast<void *>(grave.base));
    else if (grave.kind == GPUMEM_KIND_STREAM_ORDERED)
        snprintf(text, sizeof text,
                 "a stream-ordered block freed with gpumem_free_async or gpumem_free, whose chunk of gpumem's own "
                 "pool (%zu bytes at %p) has gone back to the device",
                 grave.size, reinterpret_cast<void *>(grave.base));
    else if (grave.at_finalize)
        snprintf(text, sizeof text, "%s at %p (%zu bytes), still live at gpumem_finalize, which released it",
                 kind_name(grave.kind), reinterpret_cast<void *>(grave.base), grave.size);
    else
        snprintf(text, sizeof text, "%s at %p (%zu bytes), given back with %s", kind_name(grave.kind),
                 reinterpret_cast<void *>(grave.base), grave.size, released_by(grave.kind));
    return text;
}

} // namespace

// Whether the CPU can read the byte at p (see cpu_reaches).
static bool cpu_readable(const void *p)
{
    uintptr_t bad = 0;
    return cpu_reaches(const_cast<void *>(p), 1, false, &bad);
}

void Pointers::finalizing(bool on) { g_finalizing.store(on, std::memory_order_relaxed); }

Pointers::Pointers(const Pools &pools, const Vmm &vmm, Pinned &pinned)
    : pools_(pools), vmm_(vmm), pinned_(pinned), graves_(process_graves())
{
    own_pools::on_chunk_released(on_chunk_released);
}

// Freed memory stays freed until somebody makes memory there again: gpumem
// (its books, asked first, know that), a vendor pool (a block's interior,
// which the copy path finds by base only), another library through the
// vendor (the vendor knows the address), or the OS for any mapping at all
// (the CPU can read it).  gpumem has no say over such an address: the call
// treats it as the caller's memory.  What is still freed is
// unmapped, or address space that no CPU access reaches (a GPU's, a PROT_NONE
// reservation), where handing it on would crash.
//
// The grave stays all the same: whoever made memory there may give it back
// before the grave is forgotten, and then the address is freed memory again.
// (So an allocation of another library at a freed address pays this lookup on
// each call until the grave ages out; the vendor's knowledge says nothing
// about how long it lasts: a freed block in the vendor's pool is still known
// to the vendor.  Freed pinned memory waiting in gpumem's cache, mapped and
// the vendor's too, is the cache's to say: freed() asks it first.)
bool Pointers::freed_slow(const void *ptr, Graves::Grave *out) const
{
    Graves::Grave grave;
    if (!graves_.find(reinterpret_cast<uintptr_t>(ptr), &grave))
        return false;
    PoolBlock block;
    if (pools_.find(ptr, &block, true, nullptr) || memory_->pointer_device(ptr) != GPUMEM_DEVICE_HOST ||
        cpu_readable(ptr))
        return false;
    *out = grave;
    return true;
}

void Pointers::bury_taken(const Allocation &a, bool at_finalize)
{
    if (a.kind == GPUMEM_KIND_HOST_REGISTERED)
        return;
    graves_.bury(a.base, a.size, a.kind, a.device, at_finalize);
    const uintptr_t alias = reinterpret_cast<uintptr_t>(a.device_pointer);
    if (alias && alias != a.base) // mapped host memory's device address
        graves_.bury(alias, a.size, a.kind, a.device, at_finalize);
}

void Pointers::resize(const void *base, size_t size)
{
    Allocation a;
    const bool shrinks = registry_.find_base(base, &a) && size < a.size;
    registry_.resize(base, size);
    if (shrinks)
        graves_.bury(a.base + size, a.size - size, a.kind, a.device);
}

// The books in order: registry, pool blocks (gpumem's own, then the
// vendor's), VMM reservations.  The cheap questions go first: what this
// thread remembers of the registry (no lock), then the pools' blocks by their
// base (a hash probe); a pointer is in at most one book, so the order changes
// only the cost.
bool Pointers::find(const void *ptr, PointerInfo *out) const
{
    *out = PointerInfo{};
    if (!ptr)
        return false; // NULL is nobody's memory
    Extent a;
    PoolBlock block;
    bool emulated = false;
    if (registry_.find_remembered(ptr, &a)) {
        from_record(a, out);
        return true;
    }
    if (pools_.find_base(ptr, &block, &emulated)) {
        from_block(block, emulated, out);
        return true;
    }
    if (registry_.find_extent(ptr, &a)) {
        from_record(a, out);
        return true;
    }
    if (pools_.find(ptr, &block, true, &emulated)) {
        from_block(block, emulated, out);
        return true;
    }
    if (!vmm_.find(ptr, out))
        return false;
    out->memory = memory_of_kind(out->kind);
    return true;
}

status_t Pointers::explain_bad(const void *ptr, const char *expected) const
{
    PointerInfo info;
    Graves::Grave grave;
    if (!find(ptr, &info) && freed(ptr, &grave))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p was already freed: it lies in %s; expected %s", ptr, grave_words(grave).c_str(), expected);
    if (info.kind == GPUMEM_KIND_UNKNOWN)
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is not a live gpumem allocation (never allocated by gpumem, already freed, or from before "
                    "gpumem_finalize); expected %s", ptr, expected);
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    switch (info.kind) {
    case GPUMEM_KIND_STREAM_ORDERED:
        // Any call on a block (a free, an export) takes the pointer the allocation returned.
        if (info.base != p)
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%p points %" PRIuPTR " bytes inside the %s block at %p; pass the pointer the allocation "
                        "returned (expected %s)", ptr, p - info.base, kind_name(GPUMEM_KIND_STREAM_ORDERED),
                        reinterpret_cast<void *>(info.base), expected);
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is a %s block, not %s; release it with gpumem_free_async (or gpumem_free)", ptr,
                    kind_name(GPUMEM_KIND_STREAM_ORDERED), expected);
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

status_t Pointers::ask_runtime(const void *ptr, VendorPointer *out) const
{
    *out = VendorPointer{};
    Graves::Grave held;
    if (!ptr || !memory_ || overlaps(ptr, 1) || pinned_.cached(ptr, &held))
        return GPUMEM_SUCCESS;
    return memory_->vendor_pointer(ptr, out);
}

bool Pointers::overlaps(const void *ptr, size_t size) const
{
    PoolBlock block; // a vendor pool's block is known by its base and interior scan only
    return registry_.overlaps(ptr, size) || pools_.holds(ptr, size) || pools_.find(ptr, &block, true, nullptr) ||
           vmm_.overlaps(ptr, size);
}

status_t Pointers::check_range(const void *ptr, size_t n, bool write, const char *what, size_t *one_mapping,
                               int32_t *owner, int32_t *memory) const
{
    if (one_mapping)
        *one_mapping = n;
    if (owner)
        *owner = GPUMEM_DEVICE_HOST;
    if (memory)
        *memory = GPUMEM_POOL_MEMORY_UNKNOWN;
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
        if (memory)
            *memory = memory_of_kind(e.kind);
        if (write && e.kind == GPUMEM_KIND_HOST_REGISTERED && (e.flags & GPUMEM_HOST_REGISTER_READ_ONLY)) [[unlikely]]
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "%s %p lies in host memory registered read-only at %p (GPUMEM_HOST_REGISTER_READ_ONLY): "
                        "nothing may write it; write into other memory, or register the range without the flag",
                        what, ptr, reinterpret_cast<void *>(e.base));
    } else if (pools_.find(ptr, &block, false, nullptr) && block.size) {
        // The vendor's blocks are found by base only here (interior
        // lookups there are a scan), and an imported one has size 0 where the vendor cannot say its range.
        base = reinterpret_cast<uintptr_t>(block.base);
        size = block.size;
        kind = GPUMEM_KIND_STREAM_ORDERED;
        if (owner)
            *owner = placement::owner_of(kind, block.memory, block.device);
        if (memory)
            *memory = block.memory;
    } else {
        bool inside = false;
        status_t st = vmm_.check_range(ptr, n, write, what, &inside, one_mapping, owner);
        if (inside) {
            if (memory)
                *memory = memory_of_kind(GPUMEM_KIND_VIRTUAL);
            return st;
        }
        // Among the vendor pools' blocks but at the base of none: inside a
        // live block (the runtime knows whose), or where a freed one was.
        // Memory the CPU reaches is host memory (pageable, or a vendor pool's pinned or managed
        // block, which belongs to no device): the runtime, whose answer for pageable memory is
        // an error path of about a microsecond, is asked only about memory the CPU cannot reach.
        const bool among_blocks = pools_.native_may_hold(ptr);
        const bool cpu_reaches_it = among_blocks && cpu_readable(ptr);
        const int32_t known_to =
            among_blocks && !cpu_reaches_it ? memory_->pointer_device(ptr) : GPUMEM_DEVICE_HOST;
        if (owner && among_blocks)
            *owner = known_to;
        // Freed memory is INVALID_POINTER for every call, as for gpumem_free:
        // held by gpumem's own pool, given back lately (the graveyard, which
        // costs the caller's own memory a few loads and no lock), or a vendor
        // pool's block (below).
        if (pools_.holds(ptr, 1))
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%s %p lies in gpumem's own pool but in no live block: the memory was freed "
                        "(gpumem_free_async or gpumem_free); allocate it again before using it", what, ptr);
        Graves::Grave grave;
        if (freed(ptr, &grave)) [[unlikely]]
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%s %p lies in freed memory: %s; allocate memory again before using it", what, ptr,
                        grave_words(grave).c_str());
        // A vendor pool's block leaves no grave (gpumem_free_async is a thin
        // path there): among their blocks, an address the vendor does not
        // know and the CPU cannot reach is where a freed block was.
        if (among_blocks && known_to == GPUMEM_DEVICE_HOST && !cpu_reaches_it) [[unlikely]] {
            // Unless a live block holds it that the runtime has not mapped
            // yet: a graph's allocation while the graph is being captured.
            PoolBlock block;
            const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
            if (pools_.find(ptr, &block, true, nullptr)) {
                const uintptr_t base = reinterpret_cast<uintptr_t>(block.base);
                if (n > block.size - (p - base))
                    return fail(GPUMEM_ERROR_INVALID_VALUE, "%s %p + %zu bytes runs past the end of the block at %p "
                                "of %zu bytes", what, ptr, n, block.base, block.size);
                if (owner)
                    *owner = block.device;
                if (memory)
                    *memory = block.memory; // gpumem's block: no check of unknown memory
                return st;
            }
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "%s %p lies among the blocks of the vendor's pools but in none, and no memory is there: its "
                        "block was freed (gpumem_free_async or gpumem_free); allocate memory again before using it",
                        what, ptr);
        }
        return st;
    }
    if (n > size - (p - base))
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%s %p + %zu bytes runs past the end of %s at %p of %zu bytes", what,
                    ptr, n, kind_name(kind), reinterpret_cast<void *>(base), size);
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
