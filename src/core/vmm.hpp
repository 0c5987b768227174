// Virtual memory management: physical handles, reservations and their
// mappings with per-device access.  The reservations are this service's own
// book; the pointer directory asks it about addresses (find, check_range).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/address_rooms.hpp"
#include "core/handles.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Ipc;
class Pointers;
class VirtualMemory;
struct PointerInfo;
class Devices;

struct MemHandleObject {
    void *phys = nullptr;
    size_t size = 0;
    int32_t device = 0;
    uint32_t handle_types = 0;
    // Made by gpumem_mem_import_from_shareable_handle: the memory is the
    // exporter's, and only its creator exports it (Vmm::export_fd).
    bool imported = false;
    // Made by gpumem_mem_retain_allocation_handle: a second reference to
    // memory that exists already, so the statistics count it neither at its
    // retain nor at its release.
    bool retained = false;
};
using MemHandleTable = HandleTable<MemHandleObject, HandleType::memory>;
MemHandleTable &mem_handle_table();

// A range that grows in place (a growable buffer's data): `reserved` bytes
// of address space at `base`, whose first `mapped` bytes are backed by
// `pieces` in address order, each one physical allocation of `device` with
// read-write access for it.  `reserved` is `limit` (max_size, rounded up)
// unless the environment allowed less address space (Vmm::reserve_room).
// Its owner records it (the registry knows the buffer's data): it is not in
// the reservations book.
struct GrowableRange {
    struct Piece {
        void *phys;
        size_t offset; // from base
        size_t size;
    };
    int32_t device = 0;
    void *base = nullptr;
    size_t reserved = 0;
    size_t limit = 0;
    size_t mapped = 0;
    size_t granularity = 0;
    std::vector<Piece> pieces;
};

class Vmm {
public:
    // `runtime` for its devices (support levels, granularity) and their
    // checks, `pointers` to bury the address space given back, and once the
    // backend is open its VirtualMemory and Ipc facets: nothing else.
    Vmm(const Devices &devices, Pointers &pointers) : devices_(devices), pointers_(pointers) {}
    void open(VirtualMemory &memory, Ipc &ipc)
    {
        vm_ = &memory;
        ipc_ = &ipc;
    }

    status_t granularity(const gpumem_alloc_props_t &props, int32_t option, size_t *granularity);
    status_t create(gpumem_mem_handle_t *handle, size_t size, const gpumem_alloc_props_t &props);
    status_t release(gpumem_mem_handle_t handle);
    status_t reserve(void **ptr, size_t size, size_t alignment, void *addr_hint);
    status_t address_free(void *ptr, size_t size);
    status_t map(void *ptr, size_t size, size_t offset, gpumem_mem_handle_t handle);
    status_t unmap(void *ptr, size_t size);
    status_t set_access(void *ptr, size_t size, const gpumem_access_desc_t *descs, size_t count);
    status_t get_access(uint64_t *flags, int32_t device, void *ptr);
    status_t export_fd(int32_t *fd, gpumem_mem_handle_t handle, int32_t handle_type);
    status_t import_fd(gpumem_mem_handle_t *handle, int32_t fd, int32_t handle_type);
    // gpumem_mem_retain_allocation_handle: a new handle to the physical memory
    // mapped at `ptr`, in a mapping of gpumem's or one the application made with
    // the runtime; gpumem_mem_get_allocation_properties: the runtime's word on a handle.
    status_t retain(gpumem_mem_handle_t *handle, void *ptr);
    status_t properties(gpumem_alloc_props_t *props, gpumem_mem_handle_t handle);

    // Growable ranges.  reserve_growable: address space for `max_size`
    // bytes on `device` (native VMM), or as much of it as the environment
    // allows (reserve_room), the first `size` of them backed; on failure
    // nothing is held.  grow: backed up to `bytes` (rounded up to the
    // granularity), the new memory mapped after the old; past a reservation
    // smaller than max_size the range moves first (relocate: r.base
    // changes).  shrink: the pieces
    // wholly past `bytes` given back, newest first.  release: every piece,
    // then the address space.  discard (gpumem_finalize): the same, going on
    // past failures.
    status_t reserve_growable(int32_t device, size_t max_size, size_t size, GrowableRange *out);
    status_t grow(GrowableRange &r, size_t bytes);
    status_t shrink(GrowableRange &r, size_t bytes);
    status_t release(GrowableRange &r);
    void discard(GrowableRange &r);

    // For the pointer directory: a mapped range, or an unmapped part of a
    // reservation (kind VIRTUAL); false outside every reservation.
    bool find(const void *ptr, PointerInfo *out) const;
    // True when [ptr, ptr+size) meets any reservation.
    bool overlaps(const void *ptr, size_t size) const;
    // [ptr, ptr+n) inside reservations must be mapped with the access a copy
    // needs (READWRITE to write, READ to read).  *inside false (and SUCCESS)
    // when ptr is in no reservation.  [ptr, ptr+n) must not wrap.  *first_run
    // (when given and inside): the bytes from ptr that lie in its mapping;
    // *owner (when given and inside) the device of that mapping's memory.
    status_t check_range(const void *ptr, size_t n, bool write, const char *what, bool *inside,
                         size_t *first_run = nullptr, int32_t *owner = nullptr) const;
    // The bytes of [ptr, ptr+n) from ptr to the end of the mapping holding ptr (n outside mappings).
    size_t mapped_run(const void *ptr, size_t n) const;

    // gpumem_finalize: mappings, reservations, then physical handles.
    void release_all(size_t *leaked_reservations, size_t *leaked_handles);

private:
    struct Mapping {
        size_t size = 0;
        int32_t device = 0;                // device holding the physical memory
        std::map<int32_t, int32_t> access; // device -> GPUMEM_ACCESS_* (absent = none)
    };
    // A reservation belongs to the device current when it was made: its
    // release runs there, and its unmapped parts name it.
    struct Reservation {
        size_t size = 0;
        int32_t device = 0;
        std::map<uintptr_t, Mapping> mappings; // by start address
    };
    using Mappings = std::map<uintptr_t, Mapping>;

    status_t require_vmm(int32_t device) const;
    // Address space for a growable range: `want` bytes, or where the
    // environment refuses that much (ulimit -v, a container's limit), half
    // of the largest halving of `want` that it allows, and at least `need`.
    // `max_size` is for the messages.
    status_t reserve_room(int32_t device, size_t want, size_t need, size_t granularity, size_t max_size,
                          void **base, size_t *reserved);
    // The range's memory remapped into a larger reservation holding at least
    // `need` bytes; the old one is freed.  No byte is copied.
    status_t relocate(GrowableRange &r, size_t need);
    // The reservation starting at or before p that holds [p, p+size); nullptr if none.
    const std::pair<const uintptr_t, Reservation> *reservation_of(uintptr_t p, size_t size) const;
    Reservation *reservation_of(uintptr_t p, size_t size);
    // The mapping holding p in `r`; nullptr if none.
    static const std::pair<const uintptr_t, Mapping> *mapping_of(const Reservation &r, uintptr_t p);
    // A program's reservation, with room after it for a later one hinted at
    // its end (address_rooms.hpp), and its release.
    status_t reserve_with_room(int32_t device, size_t size, size_t alignment, void *hint, void **ptr);
    bool reserve_block(int32_t device, size_t total, size_t size, size_t alignment, void *hint, void **ptr);
    status_t free_with_room(int32_t device, void *ptr, size_t size);

    const Devices &devices_;
    Pointers &pointers_;
    VirtualMemory *vm_ = nullptr;
    Ipc *ipc_ = nullptr;
    mutable std::mutex mutex_;
    std::map<uintptr_t, Reservation> reservations_; // by start address
    AddressRooms rooms_;                            // the vendor reservations behind them
};

} // namespace gpumem::detail
