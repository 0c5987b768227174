// The pointer directory: the one place that says what an address is.  Behind
// it sit four books: the registry (core/registry.hpp: device, pinned,
// registered, managed and buffer memory), the two pool implementations' block
// tables (core/pools/), and the VMM reservations (core/vmm.hpp).  gpumem_free,
// gpumem_pointer_get_info, the copy range checks and the bad-pointer messages
// all ask it, in the same order.  A fifth, the graveyard (Graves in
// core/registry.hpp), remembers what was freed lately, so that memory given
// back is INVALID_POINTER for every call rather than an address the CPU or the
// vendor is handed as the caller's.
#pragma once

#include <cstdint>

#include "core/pinned.hpp"
#include "core/registry.hpp"
#include "core/stats.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class DeviceMemory;
struct VendorPointer;
class Pools;
class Vmm;

// What the directory knows of an address.
struct PointerInfo {
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    uintptr_t base = 0;
    size_t size = 0;
    int32_t device = GPUMEM_DEVICE_HOST;
    uint64_t pool = 0; // STREAM_ORDERED: the pool's handle
    bool emulated = false;
    int32_t memory = GPUMEM_POOL_MEMORY_UNKNOWN; // where the bytes live (GPUMEM_POOL_MEMORY_*)
    uint32_t flags = 0;
    void *device_pointer = nullptr;
};

const char *kind_name(int32_t kind);
// Where the bytes of an allocation of a registry or VMM `kind` live
// (GPUMEM_POOL_MEMORY_*): the one mapping pointer info, snapshots and the
// trace use.  A stream-ordered block's memory is its pool's
// (PoolBlock::memory), so STREAM_ORDERED, like UNKNOWN, gives UNKNOWN here.
int32_t memory_of_kind(int32_t kind);

class Pointers {
public:
    // The books of other services it asks (pool blocks, VMM reservations,
    // the pinned cache) and, once the backend is open, the runtime's word on
    // an address (DeviceMemory::pointer_device): nothing else.
    Pointers(const Pools &pools, const Vmm &vmm, Pinned &pinned);
    void open(DeviceMemory &memory) { memory_ = &memory; }
    // While gpumem_finalize gives back what is still held, the chunks gpumem's
    // own pool releases are buried as released by gpumem_finalize, so that a
    // later use of a block that was live then says so.
    static void finalizing(bool on);

    // Classify any address (interior pointers too); false when gpumem did not make it.
    bool find(const void *ptr, PointerInfo *out) const;
    // What the runtime says of an address gpumem did not make (find() false):
    // out->known false where it does not know it, and for what gpumem still
    // holds (its pools' free space, its reservations, the pinned cache), which
    // is gpumem's to describe, not the runtime's.
    status_t ask_runtime(const void *ptr, VendorPointer *out) const;
    // INVALID_POINTER with the most useful reason why `ptr` is not `expected`
    // (interior pointer, another kind, a VMM range, unknown).
    status_t explain_bad(const void *ptr, const char *expected) const;
    // A copy or fill must not run past the end of a gpumem allocation it
    // starts in, nor write memory mapped read-only, nor wrap the address
    // space; other memory gpumem did not make is the caller's to vouch for.
    // *one_mapping (when given): the bytes from ptr that one VMM mapping holds
    // (n unless the range spans VMM mappings).  *owner (when given): the
    // device whose memory ptr is (placement::owner_of), GPUMEM_DEVICE_HOST
    // for memory no device owns.  *memory (when given): where the bytes of
    // gpumem's registry allocations and pool blocks live (GPUMEM_POOL_MEMORY_*),
    // GPUMEM_POOL_MEMORY_UNKNOWN for the rest.
    status_t check_range(const void *ptr, size_t n, bool write, const char *what, size_t *one_mapping = nullptr,
                         int32_t *owner = nullptr, int32_t *memory = nullptr) const;

    // Whether `ptr` lies in memory gpumem freed that nobody has since made
    // memory again (*out: the grave): a block the pinned cache keeps (its own
    // book, for as long as it keeps it), or a recent grave.  A few loads when
    // neither can hold it; freed_slow() in pointers.cpp says what "nobody" means.
    bool freed(const void *ptr, Graves::Grave *out) const
    {
        return pinned_.cached(ptr, out) ||
               (graves_.may_hold(reinterpret_cast<uintptr_t>(ptr)) && freed_slow(ptr, out));
    }
    // Memory gpumem gave back: [base, base+size) was `kind` on `device`.
    void bury(const void *base, size_t size, int32_t kind, int32_t device, bool at_finalize = false)
    {
        graves_.bury(reinterpret_cast<uintptr_t>(base), size, kind, device, at_finalize);
    }

    // The registry's book (the other books belong to their services).
    // Records the allocation's birth (now, this thread) unless it has one.
    void record(const Allocation &a)
    {
        if (a.birth.time_ns) {
            registry_.insert(a);
            return;
        }
        Allocation born = a;
        born.birth = Birth::now();
        registry_.insert(born);
    }
    bool find_record(const void *ptr, Allocation *out) const { return registry_.find_containing(ptr, out); }
    bool find_record_base(const void *ptr, Allocation *out) const { return registry_.find_base(ptr, out); }
    // True when [ptr, ptr+size) meets memory gpumem holds: any allocation,
    // any memory of its own pools, any VMM reservation.
    bool overlaps(const void *ptr, size_t size) const;
    // Remove the allocation at ptr (see Registry::take) and bury it: it is
    // given back next (a release that fails records it again, which hides
    // the grave).  Registered memory is the caller's again, not buried.
    template <class Accept>
    bool take(const void *ptr, Accept accept, Allocation *out)
    {
        if (!registry_.take(ptr, accept, out))
            return false;
        bury_taken(*out);
        return true;
    }
    // gpumem_free and its kin: take ptr's record if accept() takes it,
    // give it back with release(record) and count the free; a release that
    // fails puts the record back (nothing lost).  A pointer not taken is
    // explained (explain_bad, naming what `expected` says was expected).
    template <class Release>
    status_t release_record(void *ptr, bool (*accept)(const Allocation &), const char *expected, Release &&release)
    {
        Allocation a;
        if (!take(ptr, accept, &a))
            return explain_bad(ptr, expected);
        if (status_t st = release(a)) {
            record(a);
            return st;
        }
        account_free(a.kind, ptr, a.size, a.device, a.emulated);
        return GPUMEM_SUCCESS;
    }
    // A new allocation into the registry and the statistics.
    void record_new(const Allocation &a)
    {
        record(a);
        account_alloc(a.kind, reinterpret_cast<void *>(a.base), a.size, a.device, a.emulated);
    }
    // A buffer's data shrinks: the bytes past `size` are buried.
    void resize(const void *base, size_t size);
    // Every allocation (gpumem_finalize, which releases them): buried.
    std::map<uintptr_t, Allocation> take_all()
    {
        std::map<uintptr_t, Allocation> all = registry_.take_all();
        for (const auto &entry : all)
            bury_taken(entry.second, true);
        return all;
    }
    std::vector<Allocation> registry_all() const { return registry_.all(); }

private:
    bool freed_slow(const void *ptr, Graves::Grave *out) const;
    void bury_taken(const Allocation &a, bool at_finalize = false);

    const Pools &pools_;
    const Vmm &vmm_;
    Pinned &pinned_;
    DeviceMemory *memory_ = nullptr;
    Registry registry_;
    // Process-wide: a pointer freed before gpumem_finalize is still freed
    // memory after the next gpumem_init.
    Graves &graves_;
};

} // namespace gpumem::detail
