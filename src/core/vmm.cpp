#include "core/vmm.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "core/devices.hpp"
#include "core/limit.hpp"
#include "core/pointers.hpp"
#include "core/stats.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {

MemHandleTable &mem_handle_table() { static MemHandleTable table; return table; }

namespace {

constexpr uint32_t k_handle_types = GPUMEM_HANDLE_POSIX_FD | GPUMEM_HANDLE_FABRIC;

status_t resolve_mem(gpumem_mem_handle_t handle, MemHandleObject **out)
{
    MemHandleObject *m = mem_handle_table().get(handle);
    if (!m)
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "memory handle 0x%llx is not live (released, never created, or from "
                    "before gpumem_finalize)", static_cast<unsigned long long>(handle));
    *out = m;
    return GPUMEM_SUCCESS;
}

} // namespace

status_t Vmm::require_vmm(int32_t device) const
{
    if (status_t st = devices_.check(device))
        return st;
    if (devices_[device].vmm_level != GPUMEM_SUPPORT_NATIVE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "virtual memory management (vmm) is %s on device %d; raw VMM calls cannot be emulated "
                    "(growable buffers still work by allocate-copy-free)",
                    devices_.why_absent(feature_vmm, device), device);
    return GPUMEM_SUCCESS;
}

const std::pair<const uintptr_t, Vmm::Reservation> *Vmm::reservation_of(uintptr_t p, size_t size) const
{
    auto it = reservations_.upper_bound(p);
    if (it == reservations_.begin())
        return nullptr;
    --it;
    if (p - it->first >= it->second.size || size > it->second.size - (p - it->first))
        return nullptr;
    return &*it;
}

Vmm::Reservation *Vmm::reservation_of(uintptr_t p, size_t size)
{
    auto *r = static_cast<const Vmm *>(this)->reservation_of(p, size);
    return r ? const_cast<Reservation *>(&r->second) : nullptr;
}

const std::pair<const uintptr_t, Vmm::Mapping> *Vmm::mapping_of(const Reservation &r, uintptr_t p)
{
    auto m = r.mappings.upper_bound(p);
    if (m == r.mappings.begin() || p >= std::prev(m)->first + std::prev(m)->second.size)
        return nullptr;
    return &*std::prev(m);
}

namespace {
// The mappings that exactly tile [p, p+size); empty if they don't.
template <class Mappings>
std::vector<typename Mappings::iterator> whole_mappings(Mappings &mappings, uintptr_t p, size_t size)
{
    std::vector<typename Mappings::iterator> out;
    uintptr_t at = p, end = p + size;
    auto it = mappings.find(p);
    while (it != mappings.end() && it->first == at && at < end) {
        out.push_back(it);
        at += it->second.size;
        ++it;
    }
    if (at != end)
        out.clear();
    return out;
}
} // namespace

bool Vmm::find(const void *ptr, PointerInfo *out) const
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto *r = reservation_of(p, 1);
    if (!r)
        return false;
    out->kind = GPUMEM_KIND_VIRTUAL;
    out->base = r->first;
    out->size = r->second.size;
    out->device = r->second.device;
    if (auto *m = mapping_of(r->second, p)) {
        out->base = m->first;
        out->size = m->second.size;
        out->device = m->second.device;
    }
    out->device_pointer = reinterpret_cast<void *>(out->base);
    return true;
}

bool Vmm::overlaps(const void *ptr, size_t size) const
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr), end = size > UINTPTR_MAX - p ? UINTPTR_MAX : p + size;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = reservations_.lower_bound(end);
    return it != reservations_.begin() && std::prev(it)->first + std::prev(it)->second.size > p;
}

namespace {
// The bytes of [p, p+n) that lie in the mapping [start, start+size) holding p.
size_t run_in(uintptr_t start, size_t size, uintptr_t p, size_t n)
{
    size_t left = start + size - p;
    return left < n ? left : n;
}
} // namespace

size_t Vmm::mapped_run(const void *ptr, size_t n) const
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto *r = reservation_of(p, 1);
    auto *m = r ? mapping_of(r->second, p) : nullptr;
    return m ? run_in(m->first, m->second.size, p, n) : n;
}

status_t Vmm::check_range(const void *ptr, size_t n, bool write, const char *what, bool *inside,
                          size_t *first_run, int32_t *owner) const
{
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    *inside = reservation_of(p, 1) != nullptr;
    if (!*inside)
        return GPUMEM_SUCCESS;
    // Every byte must be mapped with the access the copy needs.  Mappings in
    // reservations that touch form one range (a range grown in place by
    // reserving right after it), so the walk follows the address, not one
    // reservation.
    const int32_t needed = write ? GPUMEM_ACCESS_READWRITE : GPUMEM_ACCESS_READ;
    uintptr_t at = p, end = p + n; // the caller checked that p + n does not wrap
    while (at < end) {
        auto *r = reservation_of(at, 1);
        auto *m = r ? mapping_of(r->second, at) : nullptr;
        if (!m)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s range %p + %zu bytes includes unmapped VMM address space at %p",
                        what, ptr, n, reinterpret_cast<void *>(at));
        auto granted = m->second.access.find(m->second.device);
        int32_t flags = granted == m->second.access.end() ? GPUMEM_ACCESS_NONE : granted->second;
        if ((flags & needed) != needed)
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "%s range %p + %zu bytes includes VMM memory at %p with %s access, and this copy %s it; "
                        "call gpumem_mem_set_access with %s first",
                        what, ptr, n, reinterpret_cast<void *>(m->first),
                        flags == GPUMEM_ACCESS_NONE ? "no" : "read-only", write ? "writes" : "reads",
                        write ? "GPUMEM_ACCESS_READWRITE" : "GPUMEM_ACCESS_READ or _READWRITE");
        if (at == p) {
            if (first_run)
                *first_run = run_in(m->first, m->second.size, p, n);
            if (owner)
                *owner = m->second.device;
        }
        at = m->first + m->second.size;
    }
    return GPUMEM_SUCCESS;
}

status_t Vmm::granularity(const gpumem_alloc_props_t &props, int32_t option, size_t *granularity)
{
    if (status_t st = require_vmm(props.device))
        return st;
    return vm_->vmm_granularity(props.device, option, granularity);
}

status_t Vmm::create(gpumem_mem_handle_t *handle, size_t size, const gpumem_alloc_props_t &p)
{
    if (status_t st = require_vmm(p.device))
        return st;
    if (p.handle_types & ~k_handle_types)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "handle_types 0x%x has unknown bits", p.handle_types);
    if ((p.handle_types & GPUMEM_HANDLE_POSIX_FD) && !(devices_[p.device].ipc_types & GPUMEM_HANDLE_POSIX_FD))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "POSIX file-descriptor handles are %s on device %d",
                    devices_.why_absent(feature_ipc, p.device), p.device);
    if (status_t st = devices_.require_fabric(p.device, p.handle_types))
        return st;
    size_t g = devices_[p.device].caps.vmm_granularity;
    if (!(size > 0 && size % g == 0))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "size %zu is not a non-zero multiple of the granularity %zu (gpumem_mem_get_granularity)", size, g);
    const bool rdma = (p.flags & GPUMEM_POOL_RDMA) != 0;
    if (rdma && devices_[p.device].rdma_level == GPUMEM_SUPPORT_NONE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "memory for GPUDirect RDMA and NCCL (GPUMEM_POOL_RDMA) is not available on device %d: %s", p.device,
                    devices_[p.device].rdma_missing.c_str());
    if (status_t st = limit::check(GPUMEM_KIND_VIRTUAL, p.device, size))
        return st;
    void *phys = nullptr;
    if (status_t st = vm_->vmm_create(p.device, size, p.handle_types, rdma, &phys))
        return st;
    MemHandleTable::Reservation m(mem_handle_table()); // published once filled
    m->phys = phys;
    m->size = size;
    m->device = p.device;
    m->handle_types = p.handle_types;
    m->imported = false; // table slots are reused
    m->retained = false;
    // Counted with no address, so not in the trace file: that shows the mappings (map, unmap).
    account_alloc(GPUMEM_KIND_VIRTUAL, nullptr, size, p.device, false);
    *handle = m.publish();
    return GPUMEM_SUCCESS;
}

status_t Vmm::release(gpumem_mem_handle_t handle)
{
    MemHandleObject *m = nullptr;
    if (status_t st = resolve_mem(handle, &m))
        return st;
    if (!mem_handle_table().retire(handle))
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "memory handle was released by another thread");
    // Mappings keep the memory alive until they are unmapped.
    status_t st = vm_->vmm_release(m->device, m->phys);
    if (!m->retained)
        account_free(GPUMEM_KIND_VIRTUAL, nullptr, m->size, m->device, false);
    m->phys = nullptr;
    mem_handle_table().recycle(handle);
    return st;
}

status_t Vmm::reserve(void **ptr, size_t size, size_t alignment, void *addr_hint)
{
    int32_t device = current_device();
    if (status_t st = require_vmm(device))
        return st;
    size_t g = devices_[device].caps.vmm_granularity;
    if (!(size > 0 && size % g == 0))
        return fail(GPUMEM_ERROR_INVALID_VALUE, "size %zu is not a non-zero multiple of the granularity %zu", size, g);
    if (alignment & (alignment - 1))
        return fail(GPUMEM_ERROR_INVALID_VALUE, "alignment %zu is not a power of two", alignment);
    if (alignment < g)
        alignment = g;
    // A hint that is not aligned cannot be honoured: not an error.
    if (reinterpret_cast<uintptr_t>(addr_hint) % alignment)
        addr_hint = nullptr;
    void *p = nullptr;
    if (status_t st = reserve_with_room(device, size, alignment, addr_hint, &p))
        return st;
    std::lock_guard<std::mutex> lock(mutex_);
    Reservation &r = reservations_[reinterpret_cast<uintptr_t>(p)];
    r.size = size;
    r.device = device;
    r.mappings.clear();
    *ptr = p;
    return GPUMEM_SUCCESS;
}

// A hint inside the room of an earlier reservation is carved from it; else
// the vendor is asked for the hinted address with room, then without; else an
// address anywhere, with room while address space allows.  The attempts that
// fail are the core's own questions and leave the caller's last error as it
// was; only the last, exactly what was asked, reports its failure.
status_t Vmm::reserve_with_room(int32_t device, size_t size, size_t alignment, void *hint, void **ptr)
{
    if (hint && rooms_.take(reinterpret_cast<uintptr_t>(hint), size)) {
        *ptr = hint;
        return GPUMEM_SUCCESS;
    }
    size_t total = 0;
    const bool room = !__builtin_add_overflow(size, address_room_for(size), &total);
    const std::string kept = last_error_message();
    if ((hint && room && reserve_block(device, total, size, alignment, hint, ptr)) ||
        (hint && reserve_block(device, size, size, alignment, hint, ptr)) ||
        (room && reserve_block(device, total, size, alignment, nullptr, ptr))) {
        fail(GPUMEM_SUCCESS, "%s", kept.c_str());
        return GPUMEM_SUCCESS;
    }
    void *p = nullptr;
    if (status_t st = vm_->vmm_reserve(device, size, alignment, nullptr, &p))
        return st;
    rooms_.add_block(reinterpret_cast<uintptr_t>(p), size, size, device);
    *ptr = p;
    return GPUMEM_SUCCESS;
}

// One vendor reservation of `total` bytes whose first `size` are handed out;
// with a hint, only at the hint.
bool Vmm::reserve_block(int32_t device, size_t total, size_t size, size_t alignment, void *hint, void **ptr)
{
    void *p = nullptr;
    if (vm_->vmm_reserve(device, total, alignment, hint, &p) != GPUMEM_SUCCESS)
        return false;
    if (hint && p != hint) { // not honoured: the address was taken
        (void)vm_->vmm_free(device, p, total);
        return false;
    }
    rooms_.add_block(reinterpret_cast<uintptr_t>(p), total, size, device);
    *ptr = p;
    return true;
}

// The vendor's reservation goes back once nothing of its block is handed
// out, on the device where the block was made (a reservation carved from it
// may be another device's).
status_t Vmm::free_with_room(int32_t device, void *ptr, size_t size)
{
    uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
    size_t total = size;
    if (rooms_.release(base, size, &base, &total, &device) == AddressRooms::Release::kept)
        return GPUMEM_SUCCESS;
    return vm_->vmm_free(device, reinterpret_cast<void *>(base), total);
}

status_t Vmm::address_free(void *ptr, size_t size)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = reservations_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == reservations_.end())
        return fail(GPUMEM_ERROR_INVALID_POINTER, "%p is not the start of a reservation from "
                    "gpumem_mem_address_reserve (or it was freed already)", ptr);
    if (size != it->second.size)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "size %zu differs from the reservation's %zu bytes", size,
                    it->second.size);
    if (!it->second.mappings.empty())
        return fail(GPUMEM_ERROR_BUSY, "the reservation at %p still has %zu mapping(s); gpumem_mem_unmap them first",
                    ptr, it->second.mappings.size());
    const int32_t device = it->second.device;
    if (status_t st = free_with_room(device, ptr, size))
        return st;
    reservations_.erase(it);
    pointers_.bury(ptr, size, GPUMEM_KIND_VIRTUAL, device);
    return GPUMEM_SUCCESS;
}

status_t Vmm::map(void *ptr, size_t size, size_t offset, gpumem_mem_handle_t handle)
{
    MemHandleObject *m = nullptr;
    if (status_t st = resolve_mem(handle, &m))
        return st;
    if (status_t st = require_vmm(m->device))
        return st;
    size_t g = devices_[m->device].caps.vmm_granularity;
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    if (!(p % g == 0 && size > 0 && size % g == 0 && offset % g == 0))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "ptr %p, size %zu and offset %zu must be multiples of the granularity %zu (size non-zero)", ptr,
                    size, offset, g);
    if (!(offset <= m->size && size <= m->size - offset))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "offset %zu + size %zu runs past the end of the %zu-byte physical allocation", offset, size,
                    m->size);
    std::lock_guard<std::mutex> lock(mutex_);
    Reservation *r = reservation_of(p, size);
    if (!r)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "range %p + %zu bytes is not inside one reservation from gpumem_mem_address_reserve", ptr, size);
    auto next = r->mappings.lower_bound(p);
    bool overlaps = (next != r->mappings.end() && next->first < p + size) ||
                    (next != r->mappings.begin() && std::prev(next)->first + std::prev(next)->second.size > p);
    if (overlaps)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "range %p + %zu bytes overlaps an existing mapping; unmap it first",
                    ptr, size);
    // CUDA and HIP map whole allocations only; every backend follows them
    // so that code written on one machine runs on the others.
    if (offset != 0 || size != m->size)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "mapping part of a physical allocation (offset %zu, size %zu of %zu bytes) is not supported: "
                    "map whole allocations (offset 0, size = the size given to gpumem_mem_create)", offset, size,
                    m->size);
    if (status_t st = vm_->vmm_map(m->device, ptr, size, offset, m->phys))
        return st;
    Mapping &mapping = r->mappings[p];
    mapping.size = size;
    mapping.device = m->device;
    mapping.access.clear();
    trace::on_map(ptr, size, m->device);
    return GPUMEM_SUCCESS;
}

status_t Vmm::unmap(void *ptr, size_t size)
{
    std::lock_guard<std::mutex> lock(mutex_);
    Reservation *r = reservation_of(reinterpret_cast<uintptr_t>(ptr), size);
    if (!r)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "range %p + %zu bytes is not inside a reservation", ptr, size);
    auto covered = whole_mappings(r->mappings, reinterpret_cast<uintptr_t>(ptr), size);
    if (covered.empty())
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "range %p + %zu bytes does not cover whole mappings made by gpumem_mem_map", ptr, size);
    for (auto it : covered) {
        if (status_t st = vm_->vmm_unmap(it->second.device, reinterpret_cast<void *>(it->first),
                                                 it->second.size))
            return st;
        trace::on_unmap(reinterpret_cast<void *>(it->first), it->second.size, it->second.device);
        r->mappings.erase(it);
    }
    return GPUMEM_SUCCESS;
}

status_t Vmm::set_access(void *ptr, size_t size, const gpumem_access_desc_t *descs, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        if (status_t st = devices_.check(descs[i].device))
            return st;
        int32_t f = descs[i].flags;
        if (f != GPUMEM_ACCESS_NONE && f != GPUMEM_ACCESS_READ && f != GPUMEM_ACCESS_READWRITE)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "descs[%zu].flags %d is not GPUMEM_ACCESS_NONE, _READ or _READWRITE",
                        i, f);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    // The range may run on through reservations that touch (a range grown in
    // place): one piece per reservation, each made of whole mappings.
    struct Piece {
        uintptr_t start;
        size_t size;
        std::vector<Mappings::iterator> mappings;
    };
    std::vector<Piece> pieces;
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr), at = p, end = p + size;
    if (size > UINTPTR_MAX - p)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "range %p + %zu bytes wraps around the address space", ptr, size);
    while (at < end) {
        auto r = reservations_.upper_bound(at);
        if (r == reservations_.begin() || at - std::prev(r)->first >= std::prev(r)->second.size)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "range %p + %zu bytes is not inside a reservation (at %p)", ptr,
                        size, reinterpret_cast<void *>(at));
        --r;
        uintptr_t piece_end = std::min<uintptr_t>(end, r->first + r->second.size);
        auto covered = whole_mappings(r->second.mappings, at, piece_end - at);
        if (covered.empty())
            return fail(GPUMEM_ERROR_INVALID_VALUE,
                        "range %p + %zu bytes is not fully mapped by whole gpumem_mem_map mappings", ptr, size);
        pieces.push_back(Piece{at, piece_end - at, std::move(covered)});
        at = piece_end;
    }
    for (const Piece &piece : pieces)
        for (size_t i = 0; i < count; ++i)
            if (status_t st = vm_->vmm_set_access(piece.mappings.front()->second.device,
                                                          reinterpret_cast<void *>(piece.start), piece.size,
                                                          descs[i].device, descs[i].flags))
                return st;
    for (const Piece &piece : pieces)
        for (auto it : piece.mappings)
            for (size_t i = 0; i < count; ++i)
                it->second.access[descs[i].device] = descs[i].flags;
    return GPUMEM_SUCCESS;
}

status_t Vmm::get_access(uint64_t *flags, int32_t device, void *ptr)
{
    if (status_t st = devices_.check(device))
        return st;
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto *r = reservation_of(p, 1)) {
        if (auto *m = mapping_of(*r, p)) {
            auto a = m->second.access.find(device);
            *flags = a == m->second.access.end() ? GPUMEM_ACCESS_NONE : static_cast<uint64_t>(a->second);
            return GPUMEM_SUCCESS;
        }
    }
    return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is not in memory mapped with gpumem_mem_map", ptr);
}

status_t Vmm::export_fd(int32_t *fd, gpumem_mem_handle_t handle, int32_t handle_type)
{
    MemHandleObject *m = nullptr;
    if (status_t st = resolve_mem(handle, &m))
        return st;
    // Driver 580 refuses to export an imported handle (INVALID_VALUE,
    // probe/h100-imported.txt); the descriptor it came from already shares it.
    if (m->imported)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "memory handle 0x%llx is imported (gpumem_mem_import_from_shareable_handle), and only the process "
                    "that created the memory can export it; pass on the descriptor it was imported from "
                    "(gpumem_ipc_send_fd), which shares the same memory, or have the creating process export it again",
                    static_cast<unsigned long long>(handle));
    if (status_t st = devices_.require_ipc(m->device, handle_type, false))
        return st;
    if (!(m->handle_types & GPUMEM_HANDLE_POSIX_FD))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the handle was created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it cannot be shared");
    int out = -1;
    if (status_t st = ipc_->vmm_export(m->device, m->phys, handle_type, &out))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

status_t Vmm::import_fd(gpumem_mem_handle_t *handle, int32_t fd, int32_t handle_type)
{
    if (status_t st = devices_.require_ipc(current_device(), handle_type, false))
        return st;
    if (status_t st = require_vmm(current_device()))
        return st;
    void *phys = nullptr;
    int32_t device = 0;
    size_t size = 0;
    if (status_t st = ipc_->vmm_import(current_device(), fd, handle_type, &device, &size, &phys))
        return st;
    if (device < 0 || device >= devices_.count())
        device = current_device();
    MemHandleTable::Reservation m(mem_handle_table()); // published once filled
    m->phys = phys;
    m->size = size;
    m->device = device;
    m->handle_types = GPUMEM_HANDLE_POSIX_FD;
    m->imported = true;
    m->retained = false;
    account_alloc(GPUMEM_KIND_VIRTUAL, nullptr, size, device, false);
    *handle = m.publish();
    return GPUMEM_SUCCESS;
}

// A mapping gpumem made names its device and size; elsewhere (a mapping the
// application made with the runtime's own calls, gpumem's own pool's pages)
// the runtime is asked from the current device, and it says which allocation
// is there.  Address space that gpumem reserved but did not map is refused
// here, with the reason, rather than asked.
status_t Vmm::retain(gpumem_mem_handle_t *handle, void *ptr)
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    int32_t device = current_device();
    size_t known_size = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (auto *r = reservation_of(p, 1)) {
            auto *m = mapping_of(*r, p);
            if (!m)
                return fail(GPUMEM_ERROR_INVALID_VALUE,
                            "cannot retain the allocation handle of %p: it lies in address space reserved with "
                            "gpumem_mem_address_reserve where nothing is mapped; pass an address inside a mapping "
                            "(gpumem_mem_map)",
                            ptr);
            device = m->second.device;
            known_size = m->second.size;
        }
    }
    if (status_t st = require_vmm(device))
        return st;
    void *phys = nullptr;
    int32_t owner = device;
    size_t size = 0;
    if (status_t st = vm_->vmm_retain(device, ptr, &owner, &size, &phys))
        return st;
    if (known_size)
        size = known_size;
    if (owner < 0 || owner >= devices_.count())
        owner = device;
    uint32_t types = 0, flags = 0;
    int32_t said = owner;
    if (vm_->vmm_properties(owner, phys, &said, &types, &flags) != GPUMEM_SUCCESS)
        types = 0; // the runtime's properties are asked again by gpumem_mem_get_allocation_properties
    MemHandleTable::Reservation m(mem_handle_table()); // published once filled
    m->phys = phys;
    m->size = size;
    m->device = owner;
    m->handle_types = types;
    m->imported = false;
    m->retained = true;
    *handle = m.publish();
    return GPUMEM_SUCCESS;
}

status_t Vmm::properties(gpumem_alloc_props_t *props, gpumem_mem_handle_t handle)
{
    MemHandleObject *m = nullptr;
    if (status_t st = resolve_mem(handle, &m))
        return st;
    int32_t device = m->device;
    uint32_t types = 0, flags = 0;
    if (status_t st = vm_->vmm_properties(m->device, m->phys, &device, &types, &flags))
        return st;
    props->device = device;
    props->handle_types = types;
    props->flags = flags;
    return GPUMEM_SUCCESS;
}

// A process may be allowed far less address space than a device has memory
// (ulimit -v, a container's limit, valgrind), and a reservation of max_size
// (by default the device's whole memory) is then refused although the
// buffer needs little of it.  So the reservation shrinks by halves until one
// fits, and half of that is kept: the rest of the program (its malloc, its
// other buffers) keeps at least as much again.  Growth past it moves the
// range (relocate).
status_t Vmm::reserve_room(int32_t device, size_t want, size_t need, size_t granularity, size_t max_size,
                           void **base, size_t *reserved)
{
    status_t st = vm_->vmm_reserve(device, want, 0, nullptr, base);
    if (st == GPUMEM_SUCCESS)
        *reserved = want;
    if (st != GPUMEM_ERROR_OUT_OF_MEMORY)
        return st;
    const std::string why = last_error_message();
    const auto halve = [granularity, need](size_t n) { return std::max(n / 2 / granularity * granularity, need); };
    size_t fits = 0;
    for (size_t s = halve(want);; s = halve(s)) {
        if (vm_->vmm_reserve(device, s, 0, nullptr, base) == GPUMEM_SUCCESS) {
            fits = s;
            break;
        }
        if (s == need)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "cannot reserve address space for a growable buffer on device %d: neither max_size %zu "
                        "bytes nor the %zu bytes its size needs can be reserved (%s); free address space, raise "
                        "the process's limit on it (ulimit -v), or create fewer or smaller buffers",
                        device, max_size, need, why.c_str());
    }
    const size_t keep = halve(fits);
    if (keep < fits) {
        vm_->vmm_free(device, *base, fits);
        if (vm_->vmm_reserve(device, keep, 0, nullptr, base) == GPUMEM_SUCCESS)
            fits = keep;
        else if (status_t again = vm_->vmm_reserve(device, fits, 0, nullptr, base))
            return again; // another thread took the room meanwhile
    }
    *reserved = fits;
    log(LogLevel::info,
        "growable buffer on device %d: reserved %zu bytes of address space, not max_size %zu (%s); growing past "
        "them moves the buffer (gpumem_buffer_data gives the new address)",
        device, fits, max_size, why.c_str());
    return GPUMEM_SUCCESS;
}

status_t Vmm::reserve_growable(int32_t device, size_t max_size, size_t size, GrowableRange *out)
{
    GrowableRange r;
    r.device = device;
    r.granularity = devices_[device].caps.vmm_granularity;
    if (max_size > SIZE_MAX - r.granularity)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "max_size %zu cannot be reserved", max_size);
    r.limit = std::max((max_size + r.granularity - 1) / r.granularity * r.granularity, r.granularity);
    const size_t need = std::max((size + r.granularity - 1) / r.granularity * r.granularity, r.granularity);
    if (status_t st = reserve_room(device, r.limit, need, r.granularity, max_size, &r.base, &r.reserved))
        return st;
    if (status_t st = grow(r, size)) {
        vm_->vmm_free(device, r.base, r.reserved);
        return st;
    }
    *out = std::move(r);
    return GPUMEM_SUCCESS;
}

// Each piece is mapped again at its offset in the new reservation before any
// leaves the old one, so a failure leaves the range as it was.  The address
// space of both is held meanwhile, the memory only once.
status_t Vmm::relocate(GrowableRange &r, size_t need)
{
    const size_t want = std::min(r.limit, std::max(need, r.reserved > r.limit / 2 ? r.limit : 2 * r.reserved));
    void *base = nullptr;
    size_t reserved = 0;
    if (status_t st = reserve_room(r.device, want, need, r.granularity, r.limit, &base, &reserved)) {
        if (st != GPUMEM_ERROR_OUT_OF_MEMORY)
            return st;
        const std::string why = last_error_message();
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot grow the buffer to %zu bytes: the %zu bytes of address space it could reserve, of the "
                    "%zu its max_size asks for, are full, and no larger range can be reserved to move it to (%s); "
                    "free address space or raise the process's limit on it (ulimit -v)",
                    need, r.reserved, r.limit, why.c_str());
    }
    size_t moved = 0;
    status_t st = GPUMEM_SUCCESS;
    for (const GrowableRange::Piece &piece : r.pieces) {
        char *at = static_cast<char *>(base) + piece.offset;
        st = vm_->vmm_map(r.device, at, piece.size, 0, piece.phys);
        if (st == GPUMEM_SUCCESS) {
            ++moved;
            st = vm_->vmm_set_access_all(r.device, at, piece.size, &r.device, 1, GPUMEM_ACCESS_READWRITE);
        }
        if (st != GPUMEM_SUCCESS)
            break;
    }
    if (st != GPUMEM_SUCCESS) {
        for (size_t i = 0; i < moved; ++i)
            vm_->vmm_unmap(r.device, static_cast<char *>(base) + r.pieces[i].offset, r.pieces[i].size);
        vm_->vmm_free(r.device, base, reserved);
        return st;
    }
    for (const GrowableRange::Piece &piece : r.pieces)
        vm_->vmm_unmap(r.device, static_cast<char *>(r.base) + piece.offset, piece.size);
    vm_->vmm_free(r.device, r.base, r.reserved);
    r.base = base;
    r.reserved = reserved;
    return GPUMEM_SUCCESS;
}

status_t Vmm::grow(GrowableRange &r, size_t bytes)
{
    const size_t target = (bytes + r.granularity - 1) / r.granularity * r.granularity;
    if (target <= r.mapped)
        return GPUMEM_SUCCESS;
    if (target > r.reserved)
        if (status_t st = relocate(r, target))
            return st;
    const size_t piece = target - r.mapped;
    void *phys = nullptr;
    if (status_t st = vmm_map_new(*vm_, r.device, static_cast<char *>(r.base) + r.mapped, piece, &r.device,
                                  1, &phys))
        return st;
    r.pieces.push_back(GrowableRange::Piece{phys, r.mapped, piece});
    r.mapped = target;
    return GPUMEM_SUCCESS;
}

status_t Vmm::shrink(GrowableRange &r, size_t bytes)
{
    while (!r.pieces.empty() && r.pieces.back().offset >= bytes) {
        const GrowableRange::Piece piece = r.pieces.back();
        if (status_t st = vm_->vmm_unmap(r.device, static_cast<char *>(r.base) + piece.offset, piece.size))
            return st;
        vm_->vmm_release(r.device, piece.phys);
        r.pieces.pop_back();
        r.mapped = piece.offset;
    }
    return GPUMEM_SUCCESS;
}

status_t Vmm::release(GrowableRange &r)
{
    if (status_t st = shrink(r, 0))
        return st;
    return vm_->vmm_free(r.device, r.base, r.reserved);
}

void Vmm::discard(GrowableRange &r)
{
    for (const GrowableRange::Piece &piece : r.pieces) {
        vm_->vmm_unmap(r.device, static_cast<char *>(r.base) + piece.offset, piece.size);
        vm_->vmm_release(r.device, piece.phys);
    }
    vm_->vmm_free(r.device, r.base, r.reserved);
    r.pieces.clear();
    r.mapped = 0;
}

void Vmm::release_all(size_t *leaked_reservations, size_t *leaked_handles)
{
    std::lock_guard<std::mutex> lock(mutex_);
    *leaked_reservations += reservations_.size();
    for (auto &[base, reservation] : reservations_) {
        for (auto &[at, mapping] : reservation.mappings)
            vm_->vmm_unmap(mapping.device, reinterpret_cast<void *>(at), mapping.size);
        free_with_room(reservation.device, reinterpret_cast<void *>(base), reservation.size);
        pointers_.bury(reinterpret_cast<void *>(base), reservation.size, GPUMEM_KIND_VIRTUAL, reservation.device);
    }
    reservations_.clear();
    for (uint64_t h : mem_handle_table().live_handles()) {
        if (MemHandleObject *m = mem_handle_table().get(h)) {
            ++*leaked_handles;
            vm_->vmm_release(m->device, m->phys);
            mem_handle_table().destroy(h);
        }
    }
}

} // namespace gpumem::detail
