// Both fakes (compiled once per vendor; see fake_api.hpp): the device address range, explicit device memory, page-locked and
// registered host memory, managed memory, copies and fills.
//
// Device memory.  At cuInit the fake reserves one large range of address space, the
// "device address range", mapped from a sparse memfd (the arena) with PROT_NONE: the CPU
// cannot touch device memory, as on a real GPU (a SIGSEGV handler says so when a test or
// gpumem tries).  The fake itself reads and writes device memory through a second,
// read-write mapping of the same memfd (the shadow).  Pools and VMM mappings replace parts
// of the range with mappings of their own memfds (so other processes can map them), each
// with its own shadow.  FAKE_*_HOST_ACCESS=1 maps everything readable and writable.
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The device address range, the bookkeeping of device and host memory and shared memfds
// are the engine's: fake_gpu_engine.cpp.

using namespace FAKE_NS;

// ---------------------------------------------------------------------------------------------
// Explicit device memory
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuMemGetInfo(size_t *free, size_t *total)
{
    FAKE_ENTER(API("MemGetInfo"), "%s", "");
    if (free == nullptr || total == nullptr)
        FAIL(kErrInvalidValue, "free or total is NULL");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    const uint64_t mem = config().memory, used = state().devices[(size_t)dev].used;
    *total = mem;
    *free = used >= mem ? 0 : mem - used;
    OUT("*free=%zu, *total=%zu", *free, *total);
    RET(kOk);
}

FAKE_API fake_cuMemAlloc(DevPtr *dptr, size_t bytesize)
{
    FAKE_ENTER(API("MemAlloc"), "bytesize=%zu", bytesize);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    if (dptr == nullptr)
        FAIL(kErrInvalidValue, "dptr is NULL");
    if (bytesize == 0) {
        if (kZeroAllocIsNull) { // hipMalloc(0): success with NULL
            *dptr = 0;
            RET(kOk);
        }
        FAIL(kErrInvalidValue, "bytesize is 0");
    }
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    Device &d = state().devices[(size_t)dev];
    uint64_t charged = 0;
    if (!round_up(bytesize, kPage, &charged) || charged > config().memory - std::min(d.used, config().memory))
        FAIL(kErrOutOfMemory, "%zu bytes asked, %llu free", bytesize,
             (unsigned long long)(config().memory - std::min(d.used, config().memory)));
    uint64_t va = 0;
    if (!region_alloc_locked(charged, charged >= kGranularity ? kGranularity : kPage, 0, &va))
        FAIL(kErrOutOfMemory, "no device address space left");
    Segment seg;
    seg.size = bytesize;
    seg.charged = charged;
    seg.shadow = region_shadow(va);
    seg.kind = SegKind::Device;
    seg.device = dev;
    state().segments[va] = std::move(seg);
    d.used += charged;
    *dptr = va;
    OUT("*dptr=0x%llx", (unsigned long long)va);
    RET(kOk);
}

FAKE_API fake_cuMemFree(DevPtr dptr)
{
    FAKE_ENTER(API("MemFree"), "dptr=0x%llx", (unsigned long long)dptr);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    if (dptr == 0)
        RET(kOk);
    if (config().defer)
        run_all_locked(-1); // freeing waits for the device, as cudaFree does
    State &s = state();
    uint64_t start = 0;
    if (Segment *seg = find_segment_locked(dptr, &start)) {
        if (start != dptr)
            FAIL(kErrInvalidValue, "an interior pointer (allocation at 0x%llx)", (unsigned long long)start);
        switch (seg->kind) {
        case SegKind::Device:
            free_device_segment_locked(start, *seg);
            s.segments.erase(start);
            RET(kOk);
        case SegKind::PoolBlock: {
            std::shared_ptr<Pool> pool = seg->pool;
            pool_free_block_locked(pool, dptr, nullptr); // synchronously
            RET(kOk);
        }
        case SegKind::PoolImport:
            s.segments.erase(start);
            RET(kOk);
        case SegKind::VmmMap:
            FAIL(kErrInvalidValue, "VMM-mapped memory is released with cuMemUnmap/cuMemRelease");
        case SegKind::GraphAlloc: { // a graph's allocation that outlived its launch
            std::shared_ptr<GraphMem> m = seg->gmem;
            graph_mem_set_live_locked(m, false);
            RET(kOk);
        }
        }
    }
    if (HostRange *h = find_host_locked(dptr, &start)) {
        if (h->kind == HostKind::Managed && start == dptr) {
            munmap(reinterpret_cast<void *>(start), h->map_size);
            s.host_used -= std::min(s.host_used, h->map_size);
            s.host.erase(start);
            RET(kOk);
        }
        FAIL(kErrInvalidValue, "%s memory is not freed with cuMemFree",
             h->kind == HostKind::Managed ? "an interior pointer of managed"
             : h->kind == HostKind::Pinned ? "page-locked host" : "registered host");
    }
    FAIL(kErrInvalidValue, "not a live allocation");
}

// Device memory is found only from a device that reaches it (see device_reaches_locked): driver
// 580 answers NOT_FOUND for another device's memory of every kind until access is granted.
FAKE_API fake_cuMemGetAddressRange(DevPtr *pbase, size_t *psize, DevPtr dptr)
{
    FAKE_ENTER(API("MemGetAddressRange"), "dptr=0x%llx", (unsigned long long)dptr);
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    uint64_t start = 0;
    if (Segment *seg = find_segment_locked(dptr, &start)) {
        std::string why;
        if (!device_reaches_locked(*seg, dev, Reach::Range, false, &why))
            FAIL(kErrNotFound, "0x%llx: %s", (unsigned long long)dptr, why.c_str());
        if (pbase)
            *pbase = start;
        if (psize)
            *psize = seg->size;
        RET(kOk);
    }
    if (HostRange *h = find_host_locked(dptr, &start)) {
        if (h->kind != HostKind::Registered) {
            if (pbase)
                *pbase = start;
            if (psize)
                *psize = h->size;
            RET(kOk);
        }
    }
    FAIL(kErrNotFound, "not a live allocation");
}

// ---------------------------------------------------------------------------------------------
// Page-locked and registered host memory
// ---------------------------------------------------------------------------------------------
static Result host_map_locked(size_t bytesize, void **out, uint64_t *map_size)
{
    State &s = state();
    uint64_t sz = 0;
    if (!round_up(bytesize, kPage, &sz) || sz > s.host_limit - std::min(s.host_used, s.host_limit))
        return kErrOutOfMemory;
    void *p = mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return kErrOutOfMemory;
    s.host_used += sz;
    *out = p;
    *map_size = sz;
    return kOk;
}

FAKE_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER(API("MemHostAlloc"), "bytesize=%zu, Flags=0x%x", bytesize, Flags);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    if (pp == nullptr)
        FAIL(kErrInvalidValue, "pp is NULL");
    if (const char *why = host_alloc_flags_why(Flags))
        FAIL(kErrInvalidValue, "%s", why);
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    if (bytesize == 0) {
        *pp = nullptr; // as driver 580 does
        RET(kOk);
    }
    void *p = nullptr;
    uint64_t map_size = 0;
    if (Result r = host_map_locked(bytesize, &p, &map_size))
        FAIL(r, "%zu bytes of page-locked memory", bytesize);
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Pinned;
    h.flags = Flags;
    h.device = dev;
    h.map_size = map_size;
    state().host[reinterpret_cast<uint64_t>(p)] = h;
    *pp = p;
    OUT("*pp=%p", p);
    RET(kOk);
}

FAKE_API fake_cuMemFreeHost(void *p)
{
    FAKE_ENTER(API("MemFreeHost"), "p=%p", p);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    uint64_t start = 0;
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), &start);
    if (h == nullptr || h->kind != HostKind::Pinned || start != reinterpret_cast<uint64_t>(p))
        FAIL(kErrInvalidValue, "not the start of memory from " FAKE_N_HOST_ALLOC);
    if (config().defer)
        run_all_locked(-1); // pending copies may still use it
    munmap(p, h->map_size);
    state().host_used -= std::min(state().host_used, h->map_size);
    state().host.erase(start);
    RET(kOk);
}

FAKE_API fake_cuMemHostGetDevicePointer(DevPtr *pdptr, void *p, unsigned int Flags)
{
    FAKE_ENTER(API("MemHostGetDevicePointer"), "p=%p, Flags=%u", p, Flags);
    if (pdptr == nullptr)
        FAIL(kErrInvalidValue, "pdptr is NULL");
    if (Flags != 0)
        FAIL(kErrInvalidValue, "Flags must be 0");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), nullptr);
    if (h == nullptr || h->kind == HostKind::Managed)
        FAIL(kErrInvalidValue, "not page-locked or registered host memory");
    // Unified addressing: the device sees host memory at the same address, except where the
    // reproduced bug maps registered memory elsewhere (an address the host must not touch).
    *pdptr = reinterpret_cast<DevPtr>(p);
    if (h->kind == HostKind::Registered && config().bug_register_device_address)
        *pdptr = reinterpret_cast<DevPtr>(p) ^ kRegisteredAlias;
    RET(kOk);
}

// Whether every page of [first, end) is mapped readable (`write`: and writable), from
// /proc/self/maps, whose lines come sorted by address.
static bool pages_allow(uint64_t first, uint64_t end, bool write)
{
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps)
        return true;
    uint64_t at = first;
    char *line = nullptr;
    size_t capacity = 0;
    while (at < end && getline(&line, &capacity, maps) > 0) {
        unsigned long long lo = 0, hi = 0;
        char perms[5] = {};
        if (sscanf(line, "%llx-%llx %4s", &lo, &hi, perms) != 3 || hi <= at)
            continue;
        if (lo > at || perms[0] != 'r' || (write && perms[1] != 'w'))
            break;
        at = hi;
    }
    free(line);
    fclose(maps);
    return at >= end;
}

FAKE_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER(API("MemHostRegister"), "p=%p, bytesize=%zu, Flags=0x%x", p, bytesize, Flags);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    if (!config().host_register)
        FAIL(kErrNotSupported, FAKE_ENV "NO_HOST_REGISTER is set");
    if (p == nullptr || bytesize == 0)
        FAIL(kErrInvalidValue, "p is NULL or bytesize is 0");
    if (Flags & ~kHostRegisterFlags)
        FAIL(kErrInvalidValue, "unknown flags");
    if (Flags & kHostRegisterIoMemory)
        FAIL(kErrNotSupported, FAKE_N_IOMEMORY " is not modelled");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    uint64_t a = reinterpret_cast<uint64_t>(p);
    if (a > UINT64_MAX - bytesize)
        FAIL(kErrInvalidValue, "range wraps around");
    if (in_region(a) || in_region(a + bytesize - 1))
        FAIL(kErrInvalidValue, "device memory cannot be registered");
    uint64_t which = 0;
    if (HostRange *h = overlapping_host_locked(a, bytesize, &which)) {
        // Driver 580: ALREADY_REGISTERED only for registered memory; other driver memory is invalid.
        if (h->kind != HostKind::Registered)
            FAIL(kErrInvalidValue, "overlaps %s memory at 0x%llx",
                 h->kind == HostKind::Managed ? "managed" : "page-locked", (unsigned long long)which);
        FAIL(kErrHostMemoryAlreadyRegistered, "overlaps registered memory at 0x%llx",
             (unsigned long long)which);
    }
    // The pages must exist (msync fails with ENOMEM on unmapped ones).
    uint64_t first = a / kPage * kPage, end = 0;
    if (!round_up(a + bytesize, kPage, &end) || msync(reinterpret_cast<void *>(first), end - first, MS_ASYNC) != 0)
        FAIL(kErrInvalidValue, "the range is not mapped memory");
    // Pinning takes the pages for writing unless READ_ONLY, and refuses inaccessible ones
    // (cuda_probe unknown: register_prot_none, register_readonly).
    if (!pages_allow(first, end, (Flags & kHostRegisterReadOnly) == 0))
        FAIL(kErrInvalidValue, "the range has pages this process cannot %s", (Flags & kHostRegisterReadOnly) ? "read" : "write");
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Registered;
    h.flags = Flags;
    h.device = dev;
    state().host[a] = h;
    RET(kOk);
}

FAKE_API fake_cuMemHostUnregister(void *p)
{
    FAKE_ENTER(API("MemHostUnregister"), "p=%p", p);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    if (!config().host_register)
        FAIL(kErrNotSupported, FAKE_ENV "NO_HOST_REGISTER is set");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    uint64_t start = 0;
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), &start);
    if (h == nullptr || h->kind != HostKind::Registered)
        FAIL(kErrHostMemoryNotRegistered, "not a registered range");
    if (start != reinterpret_cast<uint64_t>(p)) // (driver 580's answer for an interior pointer)
        FAIL(kErrInvalidValue, "an interior pointer of the registered range at 0x%llx",
             (unsigned long long)start);
    if (config().defer)
        run_all_locked(-1); // pending copies may still use it
    state().host.erase(start);
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// Copies and fills
// ---------------------------------------------------------------------------------------------
namespace {
struct Piece {
    char *p;
    uint64_t n;
};

// What the bytes [addr, addr+n) are, as pieces the fake can read/write.  Device memory must
// be live and reachable from the acting device `dev` for a copy or a fill (`how`; see
// device_reaches_locked); host memory is taken as it is, except that a fill needs memory the
// device can reach.  `keep` collects what must stay mapped until a deferred operation ran;
// `pageable` says whether the range is host memory the driver does not know.
Result resolve_locked(uint64_t addr, uint64_t n, bool write, Reach how, int dev, std::vector<Piece> *out,
                        std::vector<std::shared_ptr<void>> *keep, bool *pageable, std::string *why)
{
    const bool fill = how == Reach::Fill;
    // A fill refuses a near-NULL address; a copy takes it as host memory and
    // touches it, as driver 580 does (cuda_probe group unknown).
    if (addr == 0 || (fill && addr < 65536)) {
        *why = "a NULL (or near-NULL) pointer";
        return kErrInvalidValue;
    }
    if (addr > UINT64_MAX - n) {
        *why = "the range wraps around";
        return kErrInvalidValue;
    }
    char buf[160];
    if (!in_region(addr)) {
        if (in_region(addr + n - 1)) {
            *why = "a host range running into device memory";
            return kErrInvalidValue;
        }
        uint64_t start = 0;
        if (config().bug_register_device_address) {
            // The device address of registered memory (the reproduced bug): the same pages.
            HostRange *r = find_host_locked(addr ^ kRegisteredAlias, &start);
            if (r != nullptr && r->kind == HostKind::Registered && (addr ^ kRegisteredAlias) + n <= start + r->size) {
                out->push_back(Piece{reinterpret_cast<char *>(addr ^ kRegisteredAlias), n});
                return kOk;
            }
        }
        HostRange *h = find_host_locked(addr, &start);
        *pageable = *pageable || h == nullptr || addr + n > start + h->size;
        if (fill && !config().pageable) {
            if (h == nullptr || addr + n > start + h->size) {
                snprintf(buf, sizeof buf,
                         "0x%llx is pageable host memory the device cannot reach (" FAKE_ENV "PAGEABLE=1 allows it)",
                         (unsigned long long)addr);
                *why = buf;
                return kErrInvalidValue;
            }
        }
        if (h == nullptr && fill) {
            // A fill of host memory the driver does not know: refused where it is not mapped.
            // A copy is not checked: the driver reads and writes such memory with the CPU
            // and dies with SIGSEGV where nothing is mapped (cuda_probe group unknown), so
            // the fake touches it too.
            uint64_t first = addr / kPage * kPage, end = 0;
            if (!round_up(addr + n, kPage, &end) || msync(reinterpret_cast<void *>(first), end - first, MS_ASYNC) != 0) {
                snprintf(buf, sizeof buf, "0x%llx+%llu is not mapped host memory", (unsigned long long)addr,
                         (unsigned long long)n);
                *why = buf;
                return kErrInvalidValue;
            }
        }
        out->push_back(Piece{reinterpret_cast<char *>(addr), n});
        return kOk;
    }
    uint64_t cur = addr, left = n, start = 0;
    Segment *seg = find_segment_locked(cur, &start);
    Segment scoped; // a graph allocation of the graph captured or launched, allocated or not
    if (seg == nullptr) {
        if (const GraphMem *m = graph_scope_mem_locked(cur)) {
            scoped.size = m->size;
            scoped.charged = m->charged;
            scoped.shadow = region_shadow(m->va);
            scoped.kind = SegKind::GraphAlloc;
            scoped.device = m->device;
            start = m->va;
            seg = &scoped;
        }
    }
    if (seg == nullptr) {
        snprintf(buf, sizeof buf, "0x%llx is not in a live device allocation", (unsigned long long)addr);
        *why = buf;
        return kErrInvalidValue;
    }
    for (;;) {
        std::string unreachable;
        if (!device_reaches_locked(*seg, dev, how, write, &unreachable)) {
            snprintf(buf, sizeof buf, "0x%llx (allocation at 0x%llx, device %d): ", (unsigned long long)cur,
                     (unsigned long long)start, seg->device);
            *why = buf + unreachable;
            return kErrInvalidValue;
        }
        uint64_t take = std::min(left, start + seg->size - cur);
        out->push_back(Piece{seg->shadow + (cur - start), take});
        if (seg->pool)
            keep->push_back(seg->pool);
        if (seg->phys)
            keep->push_back(seg->phys);
        left -= take;
        cur += take;
        if (left == 0)
            return kOk;
        // Only VMM mappings continue into the next one: they are one range of address space.
        bool vmm = seg->kind == SegKind::VmmMap;
        seg = find_segment_locked(cur, &start);
        if (!vmm || seg == nullptr || start != cur || seg->kind != SegKind::VmmMap) {
            snprintf(buf, sizeof buf, "the range 0x%llx+%llu runs past the end of its allocation",
                     (unsigned long long)addr, (unsigned long long)n);
            *why = buf;
            return kErrInvalidValue;
        }
    }
}

void copy_pieces(const std::vector<Piece> &dst, const std::vector<Piece> &src)
{
    size_t di = 0, si = 0;
    uint64_t doff = 0, soff = 0;
    while (di < dst.size() && si < src.size()) {
        uint64_t n = std::min(dst[di].n - doff, src[si].n - soff);
        memmove(dst[di].p + doff, src[si].p + soff, n);
        doff += n;
        soff += n;
        if (doff == dst[di].n) {
            ++di;
            doff = 0;
        }
        if (soff == src[si].n) {
            ++si;
            soff = 0;
        }
    }
}

// The device a copy on `st` acts for: the current context's (HIP: the current device), even
// on another device's stream (driver 580 checks a copy's pointers against the current
// context); with no context current, the stream's.
int copy_device_locked(const Stream &st)
{
    int dev = -1;
    return current_device_locked(&dev) == kOk ? dev : st.device;
}

// The start of the VMM reservation holding `addr` (0 outside every reservation).
uint64_t reservation_start_locked(uint64_t addr)
{
    auto it = state().reservations.upper_bound(addr);
    if (it == state().reservations.begin())
        return 0;
    --it;
    return addr - it->first < it->second ? it->first : 0;
}
} // namespace

Result prepare_copy_locked(DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t n, std::function<void()> *run,
                           bool *pageable, std::string *why)
{
    std::vector<Piece> d, s;
    std::vector<std::shared_ptr<void>> keep;
    if (n != 0) {
        std::string w;
        if (Result r = resolve_locked(dst, n, true, Reach::Copy, dst_dev, &d, &keep, pageable, &w)) {
            *why = "destination: " + w;
            return r;
        }
        if (Result r = resolve_locked(src, n, false, Reach::Copy, src_dev, &s, &keep, pageable, &w)) {
            *why = "source: " + w;
            return r;
        }
    }
    *run = [d, s, keep] { copy_pieces(d, s); };
    return kOk;
}

Result prepare_fill_locked(DevPtr dst, unsigned char v, size_t n, int dev, std::function<void()> *run, bool *pageable,
                           std::string *why)
{
    return prepare_fill_elems_locked(dst, v, 1, n, dev, run, pageable, why);
}

Result prepare_fill_elems_locked(DevPtr dst, uint32_t v, unsigned elem, size_t n, int dev, std::function<void()> *run,
                                 bool *pageable, std::string *why)
{
    std::vector<Piece> d;
    std::vector<std::shared_ptr<void>> keep;
    if (n != 0) {
        if (Result r = resolve_locked(dst, n, true, Reach::Fill, dev, &d, &keep, pageable, why))
            return r;
        // Driver 580 (an H100) refuses a memset across the seam of two VMM reservations.
        if (d.size() > 1 && reservation_start_locked(dst) != reservation_start_locked(dst + n - 1)) {
            *why = "the range spans two VMM reservations: a fill stays inside one";
            return kErrInvalidValue;
        }
    }
    if (elem == 1) {
        *run = [d, v, keep] {
            for (const Piece &p : d)
                memset(p.p, (unsigned char)v, p.n);
        };
        return kOk;
    }
    // Elements of 2 or 4 bytes, the low byte first; pieces follow each other from dst.
    *run = [d, v, elem, keep] {
        uint64_t at = 0;
        for (const Piece &p : d)
            for (uint64_t i = 0; i < p.n; ++i, ++at)
                p.p[i] = (char)(unsigned char)(v >> (8 * (at % elem)));
    };
    return kOk;
}

Result prepare_rows_copy_locked(DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t width, const RowsGeom &g,
                                std::function<void()> *run, bool *pageable, std::string *why)
{
    if (g.height == 1 && g.depth == 1)
        return prepare_copy_locked(dst, dst_dev, src, src_dev, width, run, pageable, why);
    std::vector<std::function<void()>> rows;
    rows.reserve(g.height * g.depth);
    for (uint64_t z = 0; z < g.depth; ++z)
        for (uint64_t y = 0; y < g.height; ++y) {
            std::function<void()> one;
            std::string w;
            const DevPtr d = dst + (z * g.dst_rows + y) * g.dst_pitch, r = src + (z * g.src_rows + y) * g.src_pitch;
            if (Result res = prepare_copy_locked(d, dst_dev, r, src_dev, width, &one, pageable, &w)) {
                char at[64];
                snprintf(at, sizeof at, "row %llu of slice %llu: ", (unsigned long long)y, (unsigned long long)z);
                *why = at + w;
                return res;
            }
            rows.push_back(std::move(one));
        }
    *run = [rows] {
        for (const std::function<void()> &f : rows)
            f();
    };
    return kOk;
}

Result prepare_rows_fill_locked(DevPtr dst, size_t width, const RowsGeom &g, uint32_t value, int dev,
                                std::function<void()> *run, bool *pageable, std::string *why)
{
    if (g.height == 1)
        return prepare_fill_elems_locked(dst, value, g.elem, width, dev, run, pageable, why);
    std::vector<std::function<void()>> rows;
    rows.reserve(g.height);
    for (uint64_t y = 0; y < g.height; ++y) {
        std::function<void()> one;
        std::string w;
        if (Result res = prepare_fill_elems_locked(dst + y * g.dst_pitch, value, g.elem, width, dev, &one, pageable, &w)) {
            char at[32];
            snprintf(at, sizeof at, "row %llu: ", (unsigned long long)y);
            *why = at + w;
            return res;
        }
        rows.push_back(std::move(one));
    }
    *run = [rows] {
        for (const std::function<void()> &f : rows)
            f();
    };
    return kOk;
}

namespace {
// A copy or fill on `st`: checked now, executed in stream order.  `sync` (cuMemcpy,
// cuMemsetD8) and pageable host memory (which the driver stages) wait for it to finish.
// Each side is checked from its own device (the same one but for peer copies).  On a
// capturing stream it is a node of the capture instead (checked now, done at each launch).
// The synchronous forms pass the legacy stream's gate only (IMPLICIT while a blocking stream
// captures): they are not potentially unsafe, as driver 580 showed, which made them while a
// non-blocking stream captured in every mode, from the capturing thread and from others.
Result do_copy_locked(Call &call_, DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t n, Stream &st, bool sync)
{
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, st, &cap))
        return r;
    std::function<void()> run;
    bool pageable = false;
    std::string why;
    {
        GraphScope scope(cap ? &cap->graph->nodes : nullptr);
        if (Result r = prepare_copy_locked(dst, dst_dev, src, src_dev, n, &run, &pageable, &why))
            FAIL(r, "%s", why.c_str());
    }
    if (cap) {
        GraphNode &node = capture_node_locked(st, NodeKind::Copy);
        node.dst = dst;
        node.src = src;
        node.size = n;
        node.dst_dev = dst_dev;
        node.src_dev = src_dev;
        OUT("a copy node of capture %llu", (unsigned long long)cap->id);
        RET(kOk);
    }
    enqueue_locked(st, std::move(run));
    if (sync || pageable)
        run_stream_locked(st, st.seq);
    RET(kOk);
}

Result do_fill_locked(Call &call_, DevPtr dst, unsigned char v, size_t n, Stream &st, bool sync)
{
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, st, &cap))
        return r;
    std::function<void()> run;
    bool pageable = false;
    std::string why;
    {
        // A fill acts for its stream's device (the current context's for the NULL stream).
        GraphScope scope(cap ? &cap->graph->nodes : nullptr);
        if (Result r = prepare_fill_locked(dst, v, n, st.device, &run, &pageable, &why))
            FAIL(r, "%s", why.c_str());
    }
    if (cap) {
        GraphNode &node = capture_node_locked(st, NodeKind::Fill);
        node.dst = dst;
        node.value = v;
        node.size = n;
        node.dst_dev = st.device;
        OUT("a fill node of capture %llu", (unsigned long long)cap->id);
        RET(kOk);
    }
    enqueue_locked(st, std::move(run));
    if (sync || pageable)
        run_stream_locked(st, st.seq);
    RET(kOk);
}
} // namespace

FAKE_API fake_cuMemcpy(DevPtr dst, DevPtr src, size_t ByteCount)
{
    FAKE_ENTER(API("Memcpy"), "dst=0x%llx, src=0x%llx, ByteCount=%zu", (unsigned long long)dst, (unsigned long long)src,
               ByteCount);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(nullptr, &st))
        FAIL(r, FAKE_NO_CURRENT);
    const int dev = copy_device_locked(*st);
    return do_copy_locked(call_, dst, dev, src, dev, ByteCount, *st, true);
}

FAKE_API fake_cuMemcpyAsync(DevPtr dst, DevPtr src, size_t ByteCount, StreamH hStream)
{
    FAKE_ENTER(API("MemcpyAsync"), "dst=0x%llx, src=0x%llx, ByteCount=%zu, hStream=%p", (unsigned long long)dst,
               (unsigned long long)src, ByteCount, (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    const int dev = copy_device_locked(*st);
    return do_copy_locked(call_, dst, dev, src, dev, ByteCount, *st, false);
}

// cuMemcpyPeer(Async), hipMemcpyPeer(Async): each side is checked from the device the caller
// names for it (driver 580 copies another device's pool blocks and VMM mappings this way, where
// cuMemcpy from the current context is refused).  In stream order on `hStream` (the current
// context's NULL stream for the synchronous form, which waits for the copy).
Result memcpy_peer_locked(Call &call_, DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t n, StreamH hStream,
                          bool sync)
{
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, sync ? FAKE_NO_CURRENT : "not a live stream");
    // A peer copy without peer access is staged through the host and still
    // works there; the broken path is the peer mapping, used once access is on.
    const bool mapped = state().peers.count({dst_dev, src_dev}) || state().peers.count({src_dev, dst_dev});
    if (config().break_peer_copy && dst_dev != src_dev && mapped)
        FAIL(kErrPeerAccessUnsupported,
             FAKE_ENV "BREAK=peer_copy: the peer path maps but does not copy (device %d to device %d)", src_dev,
             dst_dev);
    return do_copy_locked(call_, dst, dst_dev, src, src_dev, n, *st, sync);
}

FAKE_API fake_cuMemsetD8(DevPtr dstDevice, unsigned char uc, size_t N)
{
    FAKE_ENTER(API("MemsetD8"), "dstDevice=0x%llx, uc=%u, N=%zu", (unsigned long long)dstDevice, (unsigned)uc, N);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(nullptr, &st))
        FAIL(r, FAKE_NO_CURRENT);
    return do_fill_locked(call_, dstDevice, uc, N, *st, true);
}

FAKE_API fake_cuMemsetD8Async(DevPtr dstDevice, unsigned char uc, size_t N, StreamH hStream)
{
    FAKE_ENTER(API("MemsetD8Async"), "dstDevice=0x%llx, uc=%u, N=%zu, hStream=%p", (unsigned long long)dstDevice,
               (unsigned)uc, N, (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    return do_fill_locked(call_, dstDevice, uc, N, *st, false);
}

// ---------------------------------------------------------------------------------------------
// Managed memory
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuMemAllocManaged(DevPtr *dptr, size_t bytesize, unsigned int flags)
{
    FAKE_ENTER(API("MemAllocManaged"), "bytesize=%zu, flags=0x%x", bytesize, flags);
    if (Result r = unsafe_during_capture_locked(call_))
        return r;
    if (!config().managed)
        FAIL(kErrNotSupported, FAKE_ENV "NO_MANAGED is set");
    if (dptr == nullptr || bytesize == 0)
        FAIL(kErrInvalidValue, "dptr is NULL or bytesize is 0");
    if (flags != kAttachGlobal && flags != kAttachHost)
        FAIL(kErrInvalidValue, "flags must be " FAKE_N_ATTACH_GLOBAL " or " FAKE_N_ATTACH_HOST);
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    void *p = nullptr;
    uint64_t map_size = 0;
    if (Result r = host_map_locked(bytesize, &p, &map_size))
        FAIL(r, "%zu bytes of managed memory", bytesize);
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Managed;
    h.flags = flags;
    h.device = dev;
    h.map_size = map_size;
    state().host[reinterpret_cast<uint64_t>(p)] = h;
    *dptr = reinterpret_cast<DevPtr>(p);
    OUT("*dptr=%p", p);
    RET(kOk);
}

// A range within one managed allocation (or any host memory, where the device reads
// pageable memory).
static bool managed_range_locked(uint64_t addr, uint64_t count, std::string *why)
{
    uint64_t start = 0;
    HostRange *h = find_host_locked(addr, &start);
    if (h && h->kind == HostKind::Managed && count <= start + h->size - addr)
        return true;
    if (config().pageable && !in_region(addr) && !(h && h->kind == HostKind::Pinned))
        return true;
    *why = h && h->kind == HostKind::Managed ? "the range runs past the end of the managed allocation"
                                             : "not managed memory";
    return false;
}

FAKE_API fake_cuStreamAttachMemAsync(StreamH hStream, DevPtr dptr, size_t length, unsigned int flags)
{
    FAKE_ENTER(API("StreamAttachMemAsync"), "hStream=%p, dptr=0x%llx, length=%zu, flags=0x%x", (void *)hStream,
               (unsigned long long)dptr, length, flags);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (flags != kAttachGlobal && flags != kAttachHost && flags != kAttachSingle)
        FAIL(kErrInvalidValue, "flags must be one of GLOBAL, HOST, SINGLE");
    if (flags == kAttachSingle && st->legacy)
        FAIL(kErrInvalidValue, FAKE_N_ATTACH_SINGLE " needs a stream other than the NULL stream");
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, *st, &cap))
        return r;
    if (Result r = refuse_if_capturing_locked(call_, *st, true, "attaching memory to a stream"))
        return r;
    uint64_t start = 0;
    HostRange *h = find_host_locked(dptr, &start);
    if (h == nullptr || h->kind != HostKind::Managed || start != dptr)
        FAIL(kErrInvalidValue, "not the start of a managed allocation");
    if (length != 0 && length != h->size)
        FAIL(kErrInvalidValue, "length must be 0 or the allocation's size");
    enqueue_locked(*st);
    h->flags = flags;
    RET(kOk);
}

// A prefetch/advice target: the CPU (kDeviceCpu) or a device.
static Result check_target_device(int dev, bool prefetch)
{
    if (dev == kDeviceCpu)
        return kOk;
    if (!valid_device(dev))
        return kErrInvalidDevice;
    if (prefetch && kPrefetchNeedsConcurrent && !config().concurrent_managed)
        return kErrInvalidDevice; // a GPU without concurrent managed access takes no prefetch
    return kOk;
}

Result prefetch_locked(Call &call_, DevPtr devPtr, size_t count, int dev, StreamH hStream)
{
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (count == 0)
        FAIL(kErrInvalidValue, "count is 0");
    if (Result r = check_target_device(dev, true))
        FAIL(r, "cannot prefetch to device %d", dev);
    if (config().break_managed_prefetch && dev != kDeviceCpu)
        FAIL(kErrInvalidDevice, FAKE_ENV "BREAK=managed_prefetch: the platform refuses prefetches to a device");
    std::string why;
    if (!managed_range_locked(devPtr, count, &why))
        FAIL(kErrInvalidValue, "%s", why.c_str());
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, *st, &cap))
        return r;
    if (Result r = refuse_if_capturing_locked(call_, *st, true, "a prefetch (no graph node type exists for it)"))
        return r;
    enqueue_locked(*st);
    RET(kOk);
}

FAKE_API fake_cuMemPrefetchAsync_v1(DevPtr devPtr, size_t count, int dstDevice, StreamH hStream)
{
    FAKE_ENTER(API("MemPrefetchAsync"), "devPtr=0x%llx, count=%zu, dstDevice=%d, hStream=%p", (unsigned long long)devPtr,
               count, (int)dstDevice, (void *)hStream);
    return prefetch_locked(call_, devPtr, count, dstDevice, hStream);
}

Result advise_locked(Call &call_, DevPtr devPtr, size_t count, Advice advice, int dev)
{
    int cur = -1;
    if (Result r = current_device_locked(&cur))
        FAIL(r, FAKE_NO_CURRENT);
    if (!advice_known(advice))
        FAIL(kErrInvalidValue, "unknown advice %d", (int)advice);
    if (count == 0)
        FAIL(kErrInvalidValue, "count is 0");
    if (advice_takes_device(advice)) {
        if (Result r = check_target_device(dev, false))
            FAIL(r, "bad device %d", dev);
    }
    std::string why;
    if (!managed_range_locked(devPtr, count, &why))
        FAIL(kErrInvalidValue, "%s", why.c_str());
    RET(kOk);
}

FAKE_API fake_cuMemAdvise_v1(DevPtr devPtr, size_t count, Advice advice, int device)
{
    FAKE_ENTER(API("MemAdvise"), "devPtr=0x%llx, count=%zu, advice=%d, device=%d", (unsigned long long)devPtr, count,
               (int)advice, (int)device);
    return advise_locked(call_, devPtr, count, advice, device);
}

// ---------------------------------------------------------------------------------------------
// Batched copies, prefetches and discards
// ---------------------------------------------------------------------------------------------
bool location_runs_ok(const size_t *locIdxs, size_t numLocs, size_t count)
{
    if (locIdxs == nullptr || numLocs == 0 || numLocs > count || locIdxs[0] != 0)
        return false;
    for (size_t k = 1; k < numLocs; ++k)
        if (locIdxs[k] <= locIdxs[k - 1] || locIdxs[k] >= count)
            return false;
    return true;
}

// The stream of a batched call: a live stream the batched calls take.
static Result batch_stream_locked(StreamH hStream, Stream **st)
{
    if (batch_refuses_stream(hStream))
        return kErrInvalidValue;
    return find_stream_locked(hStream, st);
}

Result copy_batch_locked(Call &call_, const DevPtr *dsts, const DevPtr *srcs, const size_t *sizes, size_t count,
                         bool order_ok, size_t *failIdx, StreamH hStream)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    Stream *st = nullptr;
    if (Result r = batch_stream_locked(hStream, &st))
        FAIL(r, "not a stream the batched copy takes (the NULL/legacy stream is refused)");
    if (Result r = refuse_if_capturing_locked(call_, *st, false, "a batched copy"))
        return r;
    if (dsts == nullptr || srcs == nullptr || sizes == nullptr || count == 0)
        FAIL(kErrInvalidValue, "dsts, srcs or sizes is NULL, or count is 0");
    if (!order_ok)
        FAIL(kErrInvalidValue, "the attributes do not give every copy a valid source access order");
    // Every copy is checked before any is enqueued.
    std::vector<std::vector<Piece>> d(count), s(count);
    std::vector<std::shared_ptr<void>> keep;
    bool pageable = false;
    std::string why;
    const int dev = copy_device_locked(*st);
    for (size_t i = 0; i < count; ++i) {
        Result r = kOk;
        if (sizes[i] == 0) {
            r = kErrInvalidValue;
            why = "size 0";
        } else if ((r = resolve_locked(dsts[i], sizes[i], true, Reach::Copy, dev, &d[i], &keep, &pageable, &why)) ==
                   kOk) {
            r = resolve_locked(srcs[i], sizes[i], false, Reach::Copy, dev, &s[i], &keep, &pageable, &why);
        }
        if (r != kOk) {
            if (failIdx)
                *failIdx = i;
            FAIL(r, "copy %zu: %s", i, why.c_str());
        }
    }
    enqueue_locked(*st, [d, s, keep] {
        for (size_t i = 0; i < d.size(); ++i)
            copy_pieces(d[i], s[i]);
    });
    if (pageable)
        run_stream_locked(*st, st->seq);
    RET(kOk);
}

Result prefetch_batch_locked(Call &call_, const DevPtr *ptrs, const size_t *sizes, size_t count, const int *devs,
                             unsigned long long flags, StreamH hStream)
{
    Stream *st = nullptr;
    if (Result r = batch_stream_locked(hStream, &st))
        FAIL(r, "not a stream the batched prefetch takes (the NULL/legacy stream is refused)");
    if (Result r = refuse_if_capturing_locked(call_, *st, true, "a batched prefetch"))
        return r;
    if (ptrs == nullptr || sizes == nullptr || count == 0 || flags != 0)
        FAIL(kErrInvalidValue, "dptrs or sizes is NULL, count is 0 or flags is not 0");
    if (kPrefetchNeedsConcurrent && !config().concurrent_managed)
        FAIL(kErrNotSupported, "every device must have concurrent managed access");
    std::string why;
    for (size_t i = 0; i < count; ++i) {
        if (Result r = check_target_device(devs[i], true))
            FAIL(r, "prefetch %zu: cannot prefetch to device %d", i, devs[i]);
        if (sizes[i] == 0 || !managed_range_locked(ptrs[i], sizes[i], &why))
            FAIL(kErrInvalidValue, "prefetch %zu: %s", i, sizes[i] == 0 ? "size 0" : why.c_str());
    }
    enqueue_locked(*st);
    RET(kOk);
}

Result discard_batch_locked(Call &call_, const DevPtr *ptrs, const size_t *sizes, size_t count,
                            unsigned long long flags, StreamH hStream)
{
    Stream *st = nullptr;
    if (Result r = batch_stream_locked(hStream, &st))
        FAIL(r, "not a stream the batched discard takes (the NULL/legacy stream is refused)");
    if (Result r = refuse_if_capturing_locked(call_, *st, true, "a batched discard"))
        return r;
    if (ptrs == nullptr || sizes == nullptr || count == 0 || flags != 0)
        FAIL(kErrInvalidValue, "dptrs or sizes is NULL, count is 0 or flags is not 0");
    if (kPrefetchNeedsConcurrent && !config().concurrent_managed)
        FAIL(kErrNotSupported, "every device must have concurrent managed access");
    std::string why;
    std::vector<std::pair<unsigned char *, size_t>> ranges;
    for (size_t i = 0; i < count; ++i) {
        if (sizes[i] == 0 || !managed_range_locked(ptrs[i], sizes[i], &why))
            FAIL(kErrInvalidValue, "discard %zu: %s", i, sizes[i] == 0 ? "size 0" : why.c_str());
        ranges.emplace_back(reinterpret_cast<unsigned char *>(ptrs[i]), sizes[i]);
    }
    // Managed memory is host memory here: the poison shows a program that reads discarded bytes.
    enqueue_locked(*st, [ranges] {
        for (const auto &r : ranges)
            memset(r.first, k_discard_poison, r.second);
    });
    RET(kOk);
}
