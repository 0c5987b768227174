// The fake HIP runtime (ported from the fake CUDA driver): the device address range, explicit device memory, page-locked and
// registered host memory, managed memory, copies and fills.
//
// Device memory.  At cuInit the fake reserves one large range of address space, the
// "device address range", mapped from a sparse memfd (the arena) with PROT_NONE: the CPU
// cannot touch device memory, as on a real GPU (a SIGSEGV handler says so when a test or
// gpumem tries).  The fake itself reads and writes device memory through a second,
// read-write mapping of the same memfd (the shadow).  Pools and VMM mappings replace parts
// of the range with mappings of their own memfds (so other processes can map them), each
// with its own shadow.  FAKE_HIP_HOST_ACCESS=1 maps everything readable and writable.
//
// SPDX-License-Identifier: MIT
#include "fake_hip.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

// The device address range, the bookkeeping of device and host memory and shared memfds
// are the engine's: fake_gpu_engine.cpp.

using namespace fakehip;

// ---------------------------------------------------------------------------------------------
// Explicit device memory
// ---------------------------------------------------------------------------------------------
FAKE_HIP_API fake_cuMemGetInfo(size_t *free, size_t *total)
{
    FAKE_ENTER("hipMemGetInfo", "%s", "");
    if (free == nullptr || total == nullptr)
        FAIL(hipErrorInvalidValue, "free or total is NULL");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    const uint64_t mem = config().memory, used = state().devices[(size_t)dev].used;
    *total = mem;
    *free = used >= mem ? 0 : mem - used;
    OUT("*free=%zu, *total=%zu", *free, *total);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemAlloc(fh_devptr *dptr, size_t bytesize)
{
    FAKE_ENTER("hipMemAlloc", "bytesize=%zu", bytesize);
    if (dptr == nullptr)
        FAIL(hipErrorInvalidValue, "dptr is NULL");
    if (bytesize == 0) {
        *dptr = 0; // hipMalloc(0) is hipSuccess with NULL
        RET(hipSuccess);
    }
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    Device &d = state().devices[(size_t)dev];
    uint64_t charged = 0;
    if (!round_up(bytesize, kPage, &charged) || charged > config().memory - std::min(d.used, config().memory))
        FAIL(hipErrorOutOfMemory, "%zu bytes asked, %llu free", bytesize,
             (unsigned long long)(config().memory - std::min(d.used, config().memory)));
    uint64_t va = 0;
    if (!region_alloc_locked(charged, charged >= kGranularity ? kGranularity : kPage, 0, &va))
        FAIL(hipErrorOutOfMemory, "no device address space left");
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
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemFree(fh_devptr dptr)
{
    FAKE_ENTER("hipMemFree", "dptr=0x%llx", (unsigned long long)dptr);
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    if (dptr == 0)
        RET(hipSuccess);
    if (config().defer)
        run_all_locked(-1); // freeing waits for the device, as cudaFree does
    State &s = state();
    uint64_t start = 0;
    if (Segment *seg = find_segment_locked(dptr, &start)) {
        if (start != dptr)
            FAIL(hipErrorInvalidValue, "an interior pointer (allocation at 0x%llx)", (unsigned long long)start);
        switch (seg->kind) {
        case SegKind::Device:
            free_device_segment_locked(start, *seg);
            s.segments.erase(start);
            RET(hipSuccess);
        case SegKind::PoolBlock: {
            std::shared_ptr<Pool> pool = seg->pool;
            pool_free_block_locked(pool, dptr, nullptr); // synchronously
            RET(hipSuccess);
        }
        case SegKind::PoolImport:
            if (--seg->imports == 0)
                s.segments.erase(start);
            RET(hipSuccess);
        case SegKind::VmmMap:
            FAIL(hipErrorInvalidValue, "VMM-mapped memory is released with cuMemUnmap/cuMemRelease");
        }
    }
    if (HostRange *h = find_host_locked(dptr, &start)) {
        if (h->kind == HostKind::Managed && start == dptr) {
            munmap(reinterpret_cast<void *>(start), h->map_size);
            s.host_used -= std::min(s.host_used, h->map_size);
            s.host.erase(start);
            RET(hipSuccess);
        }
        FAIL(hipErrorInvalidValue, "%s memory is not freed with cuMemFree",
             h->kind == HostKind::Managed ? "an interior pointer of managed"
             : h->kind == HostKind::Pinned ? "page-locked host" : "registered host");
    }
    FAIL(hipErrorInvalidValue, "not a live allocation");
}

FAKE_HIP_API fake_cuMemGetAddressRange(fh_devptr *pbase, size_t *psize, fh_devptr dptr)
{
    FAKE_ENTER("hipMemGetAddressRange", "dptr=0x%llx", (unsigned long long)dptr);
    uint64_t start = 0;
    if (Segment *seg = find_segment_locked(dptr, &start)) {
        if (pbase)
            *pbase = start;
        if (psize)
            *psize = seg->size;
        RET(hipSuccess);
    }
    if (HostRange *h = find_host_locked(dptr, &start)) {
        if (h->kind != HostKind::Registered) {
            if (pbase)
                *pbase = start;
            if (psize)
                *psize = h->size;
            RET(hipSuccess);
        }
    }
    FAIL(hipErrorNotFound, "not a live allocation");
}

// What the runtime knows about an address (hipPointerGetAttributes).  Memory it did not make
// or register: ROCm 6 answers hipSuccess with hipMemoryTypeUnregistered, ROCm 5
// hipErrorInvalidValue.  hipMemoryType's values follow the runtime version.
FAKE_HIP_API fake_hipPointerGetAttributes(fh_PointerAttribute *attr, fh_devptr ptr)
{
    FAKE_ENTER("hipPointerGetAttributes", "ptr=0x%llx", (unsigned long long)ptr);
    if (attr == nullptr)
        FAIL(hipErrorInvalidValue, "attributes is NULL");
    const bool v6 = config().v6();
    uint64_t start = 0;
    memset(attr, 0, sizeof *attr);
    if (Segment *seg = find_segment_locked(ptr, &start)) {
        attr->type = v6 ? fh6_Device : fh5_Device;
        attr->device = seg->device;
        attr->devicePointer = reinterpret_cast<void *>(ptr);
    } else if (HostRange *h = find_host_locked(ptr, &start)) {
        attr->device = h->device;
        attr->devicePointer = reinterpret_cast<void *>(ptr);
        attr->hostPointer = reinterpret_cast<void *>(ptr);
        attr->allocationFlags = h->flags;
        if (h->kind == HostKind::Managed) {
            attr->type = v6 ? fh6_Managed : fh5_Unified;
            attr->isManaged = 1;
        } else {
            attr->type = v6 ? fh6_Host : fh5_Host;
        }
    } else if (v6) {
        attr->type = fh6_Unregistered;
        attr->device = -2;
        attr->hostPointer = reinterpret_cast<void *>(ptr);
    } else {
        FAIL(hipErrorInvalidValue, "0x%llx is not memory the runtime knows (ROCm 5)", (unsigned long long)ptr);
    }
    OUT("type=%d, device=%d, isManaged=%d", attr->type, attr->device, attr->isManaged);
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Page-locked and registered host memory
// ---------------------------------------------------------------------------------------------
static hipError_t host_map_locked(size_t bytesize, void **out, uint64_t *map_size)
{
    State &s = state();
    uint64_t sz = 0;
    if (!round_up(bytesize, kPage, &sz) || sz > s.host_limit - std::min(s.host_used, s.host_limit))
        return hipErrorOutOfMemory;
    void *p = mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return hipErrorOutOfMemory;
    s.host_used += sz;
    *out = p;
    *map_size = sz;
    return hipSuccess;
}

FAKE_HIP_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER("hipMemHostAlloc", "bytesize=%zu, Flags=0x%x", bytesize, Flags);
    if (pp == nullptr)
        FAIL(hipErrorInvalidValue, "pp is NULL");
    if (Flags & ~(unsigned)(hipHostMallocPortable | hipHostMallocMapped | hipHostMallocWriteCombined |
                            hipHostMallocNumaUser | hipHostMallocCoherent | hipHostMallocNonCoherent))
        FAIL(hipErrorInvalidValue, "unknown flags");
    if ((Flags & hipHostMallocCoherent) && (Flags & hipHostMallocNonCoherent))
        FAIL(hipErrorInvalidValue, "hipHostMallocCoherent together with hipHostMallocNonCoherent");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    if (bytesize == 0) {
        *pp = nullptr; // as driver 580 does
        RET(hipSuccess);
    }
    void *p = nullptr;
    uint64_t map_size = 0;
    if (hipError_t r = host_map_locked(bytesize, &p, &map_size))
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
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemFreeHost(void *p)
{
    FAKE_ENTER("hipMemFreeHost", "p=%p", p);
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    uint64_t start = 0;
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), &start);
    if (h == nullptr || h->kind != HostKind::Pinned || start != reinterpret_cast<uint64_t>(p))
        FAIL(hipErrorInvalidValue, "not the start of memory from hipHostMalloc");
    if (config().defer)
        run_all_locked(-1); // pending copies may still use it
    munmap(p, h->map_size);
    state().host_used -= std::min(state().host_used, h->map_size);
    state().host.erase(start);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemHostGetDevicePointer(fh_devptr *pdptr, void *p, unsigned int Flags)
{
    FAKE_ENTER("hipMemHostGetDevicePointer", "p=%p, Flags=%u", p, Flags);
    if (pdptr == nullptr)
        FAIL(hipErrorInvalidValue, "pdptr is NULL");
    if (Flags != 0)
        FAIL(hipErrorInvalidValue, "Flags must be 0");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), nullptr);
    if (h == nullptr || h->kind == HostKind::Managed)
        FAIL(hipErrorInvalidValue, "not page-locked or registered host memory");
    // Unified addressing: the device sees host memory at the same address.
    *pdptr = reinterpret_cast<fh_devptr>(p);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER("hipMemHostRegister", "p=%p, bytesize=%zu, Flags=0x%x", p, bytesize, Flags);
    if (!config().host_register)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_HOST_REGISTER is set");
    if (p == nullptr || bytesize == 0)
        FAIL(hipErrorInvalidValue, "p is NULL or bytesize is 0");
    if (Flags & ~(unsigned)(hipHostRegisterPortable | hipHostRegisterMapped | hipHostRegisterIoMemory | 0x8u))
        FAIL(hipErrorInvalidValue, "unknown flags");
    if (Flags & hipHostRegisterIoMemory)
        FAIL(hipErrorNotSupported, "hipHostRegisterIoMemory is not modelled");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    uint64_t a = reinterpret_cast<uint64_t>(p);
    if (a > UINT64_MAX - bytesize)
        FAIL(hipErrorInvalidValue, "range wraps around");
    if (in_region(a) || in_region(a + bytesize - 1))
        FAIL(hipErrorInvalidValue, "device memory cannot be registered");
    uint64_t which = 0;
    if (HostRange *h = overlapping_host_locked(a, bytesize, &which)) {
        // Driver 580: ALREADY_REGISTERED only for registered memory; other driver memory is invalid.
        if (h->kind != HostKind::Registered)
            FAIL(hipErrorInvalidValue, "overlaps %s memory at 0x%llx",
                 h->kind == HostKind::Managed ? "managed" : "page-locked", (unsigned long long)which);
        FAIL(hipErrorHostMemoryAlreadyRegistered, "overlaps registered memory at 0x%llx",
             (unsigned long long)which);
    }
    // The pages must exist (msync fails with ENOMEM on unmapped ones).
    uint64_t first = a / kPage * kPage, end = 0;
    if (!round_up(a + bytesize, kPage, &end) || msync(reinterpret_cast<void *>(first), end - first, MS_ASYNC) != 0)
        FAIL(hipErrorInvalidValue, "the range is not mapped memory");
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Registered;
    h.flags = Flags;
    h.device = dev;
    state().host[a] = h;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemHostUnregister(void *p)
{
    FAKE_ENTER("hipMemHostUnregister", "p=%p", p);
    if (!config().host_register)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_HOST_REGISTER is set");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    uint64_t start = 0;
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), &start);
    if (h == nullptr || h->kind != HostKind::Registered)
        FAIL(hipErrorHostMemoryNotRegistered, "not a registered range");
    if (start != reinterpret_cast<uint64_t>(p)) // (driver 580's answer for an interior pointer)
        FAIL(hipErrorInvalidValue, "an interior pointer of the registered range at 0x%llx",
             (unsigned long long)start);
    if (config().defer)
        run_all_locked(-1); // pending copies may still use it
    state().host.erase(start);
    RET(hipSuccess);
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
// be live (and, for VMM mappings, accessible to `dev`); host memory is taken as it is,
// except that a fill (`fill`) needs memory the device can reach.
// `keep` collects what must stay mapped until a deferred operation ran; `pageable` says
// whether the range is host memory the driver does not know.
hipError_t resolve_locked(uint64_t addr, uint64_t n, bool write, bool fill, int dev, std::vector<Piece> *out,
                        std::vector<std::shared_ptr<void>> *keep, bool *pageable, std::string *why)
{
    if (addr < 65536) {
        *why = "a NULL (or near-NULL) pointer";
        return hipErrorInvalidValue;
    }
    if (addr > UINT64_MAX - n) {
        *why = "the range wraps around";
        return hipErrorInvalidValue;
    }
    char buf[160];
    if (!in_region(addr)) {
        if (in_region(addr + n - 1)) {
            *why = "a host range running into device memory";
            return hipErrorInvalidValue;
        }
        uint64_t start = 0;
        HostRange *h = find_host_locked(addr, &start);
        *pageable = *pageable || h == nullptr || addr + n > start + h->size;
        if (fill && !config().pageable) {
            if (h == nullptr || addr + n > start + h->size) {
                snprintf(buf, sizeof buf,
                         "0x%llx is pageable host memory the device cannot reach (FAKE_HIP_PAGEABLE=1 allows it)",
                         (unsigned long long)addr);
                *why = buf;
                return hipErrorInvalidValue;
            }
        }
        if (h == nullptr) {
            // Host memory the driver does not know: it must at least be mapped (a made-up
            // pointer is an error, not a crash in the fake).
            uint64_t first = addr / kPage * kPage, end = 0;
            if (!round_up(addr + n, kPage, &end) || msync(reinterpret_cast<void *>(first), end - first, MS_ASYNC) != 0) {
                snprintf(buf, sizeof buf, "0x%llx+%llu is not mapped host memory", (unsigned long long)addr,
                         (unsigned long long)n);
                *why = buf;
                return hipErrorInvalidValue;
            }
        }
        out->push_back(Piece{reinterpret_cast<char *>(addr), n});
        return hipSuccess;
    }
    uint64_t cur = addr, left = n, start = 0;
    Segment *seg = find_segment_locked(cur, &start);
    if (seg == nullptr) {
        snprintf(buf, sizeof buf, "0x%llx is not in a live device allocation", (unsigned long long)addr);
        *why = buf;
        return hipErrorInvalidValue;
    }
    for (;;) {
        if (seg->kind == SegKind::VmmMap) {
            int acc = dev >= 0 && dev < (int)seg->access.size() ? seg->access[(size_t)dev] : 0;
            bool ok = write ? acc == hipMemAccessFlagsProtReadWrite : acc != hipMemAccessFlagsProtNone;
            if (!ok) {
                snprintf(buf, sizeof buf, "the mapping at 0x%llx is not %s for device %d (cuMemSetAccess)",
                         (unsigned long long)start, write ? "writable" : "readable", dev);
                *why = buf;
                return hipErrorInvalidValue;
            }
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
            return hipSuccess;
        // Only VMM mappings continue into the next one: they are one range of address space.
        bool vmm = seg->kind == SegKind::VmmMap;
        seg = find_segment_locked(cur, &start);
        if (!vmm || seg == nullptr || start != cur || seg->kind != SegKind::VmmMap) {
            snprintf(buf, sizeof buf, "the range 0x%llx+%llu runs past the end of its allocation",
                     (unsigned long long)addr, (unsigned long long)n);
            *why = buf;
            return hipErrorInvalidValue;
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

// A copy or fill on `st`: checked now, executed in stream order.  `sync` (cuMemcpy,
// cuMemsetD8) and pageable host memory (which the driver stages) wait for it to finish.
hipError_t do_copy_locked(Call &call_, fh_devptr dst, fh_devptr src, size_t n, Stream &st, bool sync)
{
    std::vector<Piece> d, s;
    std::vector<std::shared_ptr<void>> keep;
    bool pageable = false;
    std::string why;
    if (n != 0) {
        if (hipError_t r = resolve_locked(dst, n, true, false, st.device, &d, &keep, &pageable, &why))
            FAIL(r, "destination: %s", why.c_str());
        if (hipError_t r = resolve_locked(src, n, false, false, st.device, &s, &keep, &pageable, &why))
            FAIL(r, "source: %s", why.c_str());
    }
    enqueue_locked(st, [d, s, keep] { copy_pieces(d, s); });
    if (sync || pageable)
        run_stream_locked(st, st.seq);
    RET(hipSuccess);
}

hipError_t do_fill_locked(Call &call_, fh_devptr dst, unsigned char v, size_t n, Stream &st, bool sync)
{
    std::vector<Piece> d;
    std::vector<std::shared_ptr<void>> keep;
    bool pageable = false;
    std::string why;
    if (n != 0) {
        if (hipError_t r = resolve_locked(dst, n, true, true, st.device, &d, &keep, &pageable, &why))
            FAIL(r, "%s", why.c_str());
    }
    enqueue_locked(st, [d, v, keep] {
        for (const Piece &p : d)
            memset(p.p, v, p.n);
    });
    if (sync || pageable)
        run_stream_locked(st, st.seq);
    RET(hipSuccess);
}
} // namespace

FAKE_HIP_API fake_cuMemcpy(fh_devptr dst, fh_devptr src, size_t ByteCount)
{
    FAKE_ENTER("hipMemcpy", "dst=0x%llx, src=0x%llx, ByteCount=%zu", (unsigned long long)dst, (unsigned long long)src,
               ByteCount);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(nullptr, &st))
        FAIL(r, "no current device");
    return do_copy_locked(call_, dst, src, ByteCount, *st, true);
}

FAKE_HIP_API fake_cuMemcpyAsync(fh_devptr dst, fh_devptr src, size_t ByteCount, hipStream_t hStream)
{
    FAKE_ENTER("hipMemcpyAsync", "dst=0x%llx, src=0x%llx, ByteCount=%zu, hStream=%p", (unsigned long long)dst,
               (unsigned long long)src, ByteCount, (void *)hStream);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    return do_copy_locked(call_, dst, src, ByteCount, *st, false);
}

FAKE_HIP_API fake_cuMemsetD8(fh_devptr dstDevice, unsigned char uc, size_t N)
{
    FAKE_ENTER("hipMemsetD8", "dstDevice=0x%llx, uc=%u, N=%zu", (unsigned long long)dstDevice, (unsigned)uc, N);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(nullptr, &st))
        FAIL(r, "no current device");
    return do_fill_locked(call_, dstDevice, uc, N, *st, true);
}

FAKE_HIP_API fake_cuMemsetD8Async(fh_devptr dstDevice, unsigned char uc, size_t N, hipStream_t hStream)
{
    FAKE_ENTER("hipMemsetD8Async", "dstDevice=0x%llx, uc=%u, N=%zu, hStream=%p", (unsigned long long)dstDevice,
               (unsigned)uc, N, (void *)hStream);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    return do_fill_locked(call_, dstDevice, uc, N, *st, false);
}

// ---------------------------------------------------------------------------------------------
// Managed memory
// ---------------------------------------------------------------------------------------------
FAKE_HIP_API fake_cuMemAllocManaged(fh_devptr *dptr, size_t bytesize, unsigned int flags)
{
    FAKE_ENTER("hipMemAllocManaged", "bytesize=%zu, flags=0x%x", bytesize, flags);
    if (!config().managed)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_MANAGED is set");
    if (dptr == nullptr || bytesize == 0)
        FAIL(hipErrorInvalidValue, "dptr is NULL or bytesize is 0");
    if (flags != hipMemAttachGlobal && flags != hipMemAttachHost)
        FAIL(hipErrorInvalidValue, "flags must be hipMemAttachGlobal or hipMemAttachHost");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    void *p = nullptr;
    uint64_t map_size = 0;
    if (hipError_t r = host_map_locked(bytesize, &p, &map_size))
        FAIL(r, "%zu bytes of managed memory", bytesize);
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Managed;
    h.flags = flags;
    h.device = dev;
    h.map_size = map_size;
    state().host[reinterpret_cast<uint64_t>(p)] = h;
    *dptr = reinterpret_cast<fh_devptr>(p);
    OUT("*dptr=%p", p);
    RET(hipSuccess);
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

FAKE_HIP_API fake_cuStreamAttachMemAsync(hipStream_t hStream, fh_devptr dptr, size_t length, unsigned int flags)
{
    FAKE_ENTER("hipStreamAttachMemAsync", "hStream=%p, dptr=0x%llx, length=%zu, flags=0x%x", (void *)hStream,
               (unsigned long long)dptr, length, flags);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (flags != hipMemAttachGlobal && flags != hipMemAttachHost && flags != hipMemAttachSingle)
        FAIL(hipErrorInvalidValue, "flags must be one of GLOBAL, HOST, SINGLE");
    if (flags == hipMemAttachSingle && st->legacy)
        FAIL(hipErrorInvalidValue, "hipMemAttachSingle needs a stream other than the NULL stream");
    uint64_t start = 0;
    HostRange *h = find_host_locked(dptr, &start);
    if (h == nullptr || h->kind != HostKind::Managed || start != dptr)
        FAIL(hipErrorInvalidValue, "not the start of a managed allocation");
    if (length != 0 && length != h->size)
        FAIL(hipErrorInvalidValue, "length must be 0 or the allocation's size");
    enqueue_locked(*st);
    h->flags = flags;
    RET(hipSuccess);
}

// A prefetch/advice target: hipCpuDeviceId or a device.
static hipError_t check_target_device(int dev, bool prefetch)
{
    if (dev == hipCpuDeviceId)
        return hipSuccess;
    if (!valid_device(dev))
        return hipErrorInvalidDevice;
    (void)prefetch; // without XNACK ROCm still accepts a prefetch (the pages stay in host memory)
    return hipSuccess;
}

static hipError_t prefetch_locked(Call &call_, fh_devptr devPtr, size_t count, int dev, hipStream_t hStream)
{
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (count == 0)
        FAIL(hipErrorInvalidValue, "count is 0");
    if (hipError_t r = check_target_device(dev, true))
        FAIL(r, "cannot prefetch to device %d", dev);
    std::string why;
    if (!managed_range_locked(devPtr, count, &why))
        FAIL(hipErrorInvalidValue, "%s", why.c_str());
    enqueue_locked(*st);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemPrefetchAsync_v1(fh_devptr devPtr, size_t count, int dstDevice, hipStream_t hStream)
{
    FAKE_ENTER("hipMemPrefetchAsync", "devPtr=0x%llx, count=%zu, dstDevice=%d, hStream=%p", (unsigned long long)devPtr,
               count, (int)dstDevice, (void *)hStream);
    return prefetch_locked(call_, devPtr, count, dstDevice, hStream);
}

static hipError_t advise_locked(Call &call_, fh_devptr devPtr, size_t count, int advice, int dev)
{
    int cur = -1;
    if (hipError_t r = current_device_locked(&cur))
        FAIL(r, "no current device");
    if (!((advice >= hipMemAdviseSetReadMostly && advice <= hipMemAdviseUnsetAccessedBy) ||
          advice == hipMemAdviseSetCoarseGrain || advice == hipMemAdviseUnsetCoarseGrain))
        FAIL(hipErrorInvalidValue, "unknown advice %d", (int)advice);
    if (count == 0)
        FAIL(hipErrorInvalidValue, "count is 0");
    if (advice != hipMemAdviseSetReadMostly && advice != hipMemAdviseUnsetReadMostly && advice != hipMemAdviseSetCoarseGrain && advice != hipMemAdviseUnsetCoarseGrain) {
        if (hipError_t r = check_target_device(dev, false))
            FAIL(r, "bad device %d", dev);
    }
    std::string why;
    if (!managed_range_locked(devPtr, count, &why))
        FAIL(hipErrorInvalidValue, "%s", why.c_str());
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuMemAdvise_v1(fh_devptr devPtr, size_t count, int advice, int device)
{
    FAKE_ENTER("hipMemAdvise", "devPtr=0x%llx, count=%zu, advice=%d, device=%d", (unsigned long long)devPtr, count,
               (int)advice, (int)device);
    return advise_locked(call_, devPtr, count, advice, device);
}

