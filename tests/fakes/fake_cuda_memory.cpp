// The fake CUDA driver: the device address range, explicit device memory, page-locked and
// registered host memory, managed memory, copies and fills.
//
// Device memory.  At cuInit the fake reserves one large range of address space, the
// "device address range", mapped from a sparse memfd (the arena) with PROT_NONE: the CPU
// cannot touch device memory, as on a real GPU (a SIGSEGV handler says so when a test or
// gpumem tries).  The fake itself reads and writes device memory through a second,
// read-write mapping of the same memfd (the shadow).  Pools and VMM mappings replace parts
// of the range with mappings of their own memfds (so other processes can map them), each
// with its own shadow.  FAKE_CUDA_HOST_ACCESS=1 maps everything readable and writable.
//
// SPDX-License-Identifier: MIT
#include "fake_cuda.hpp"

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

using namespace fakecuda;

// ---------------------------------------------------------------------------------------------
// Explicit device memory
// ---------------------------------------------------------------------------------------------
FAKE_CUDA_API fake_cuMemGetInfo(size_t *free, size_t *total)
{
    FAKE_ENTER("cuMemGetInfo", "%s", "");
    if (free == nullptr || total == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "free or total is NULL");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    const uint64_t mem = config().memory, used = state().devices[(size_t)dev].used;
    *total = mem;
    *free = used >= mem ? 0 : mem - used;
    OUT("*free=%zu, *total=%zu", *free, *total);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    FAKE_ENTER("cuMemAlloc", "bytesize=%zu", bytesize);
    if (dptr == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "dptr is NULL");
    if (bytesize == 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "bytesize is 0");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    Device &d = state().devices[(size_t)dev];
    uint64_t charged = 0;
    if (!round_up(bytesize, kPage, &charged) || charged > config().memory - std::min(d.used, config().memory))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes asked, %llu free", bytesize,
             (unsigned long long)(config().memory - std::min(d.used, config().memory)));
    uint64_t va = 0;
    if (!region_alloc_locked(charged, charged >= kGranularity ? kGranularity : kPage, 0, &va))
        FAIL(CUDA_ERROR_OUT_OF_MEMORY, "no device address space left");
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
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemFree(CUdeviceptr dptr)
{
    FAKE_ENTER("cuMemFree", "dptr=0x%llx", (unsigned long long)dptr);
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    if (dptr == 0)
        RET(CUDA_SUCCESS);
    if (config().defer)
        run_all_locked(-1); // freeing waits for the device, as cudaFree does
    State &s = state();
    uint64_t start = 0;
    if (Segment *seg = find_segment_locked(dptr, &start)) {
        if (start != dptr)
            FAIL(CUDA_ERROR_INVALID_VALUE, "an interior pointer (allocation at 0x%llx)", (unsigned long long)start);
        switch (seg->kind) {
        case SegKind::Device:
            free_device_segment_locked(start, *seg);
            s.segments.erase(start);
            RET(CUDA_SUCCESS);
        case SegKind::PoolBlock: {
            std::shared_ptr<Pool> pool = seg->pool;
            pool_free_block_locked(pool, dptr, nullptr); // synchronously
            RET(CUDA_SUCCESS);
        }
        case SegKind::PoolImport:
            if (--seg->imports == 0)
                s.segments.erase(start);
            RET(CUDA_SUCCESS);
        case SegKind::VmmMap:
            FAIL(CUDA_ERROR_INVALID_VALUE, "VMM-mapped memory is released with cuMemUnmap/cuMemRelease");
        }
    }
    if (HostRange *h = find_host_locked(dptr, &start)) {
        if (h->kind == HostKind::Managed && start == dptr) {
            munmap(reinterpret_cast<void *>(start), h->map_size);
            s.host_used -= std::min(s.host_used, h->map_size);
            s.host.erase(start);
            RET(CUDA_SUCCESS);
        }
        FAIL(CUDA_ERROR_INVALID_VALUE, "%s memory is not freed with cuMemFree",
             h->kind == HostKind::Managed ? "an interior pointer of managed"
             : h->kind == HostKind::Pinned ? "page-locked host" : "registered host");
    }
    FAIL(CUDA_ERROR_INVALID_VALUE, "not a live allocation");
}

FAKE_CUDA_API fake_cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    FAKE_ENTER("cuMemGetAddressRange", "dptr=0x%llx", (unsigned long long)dptr);
    uint64_t start = 0;
    if (Segment *seg = find_segment_locked(dptr, &start)) {
        if (pbase)
            *pbase = start;
        if (psize)
            *psize = seg->size;
        RET(CUDA_SUCCESS);
    }
    if (HostRange *h = find_host_locked(dptr, &start)) {
        if (h->kind != HostKind::Registered) {
            if (pbase)
                *pbase = start;
            if (psize)
                *psize = h->size;
            RET(CUDA_SUCCESS);
        }
    }
    FAIL(CUDA_ERROR_NOT_FOUND, "not a live allocation");
}

// What the driver knows about an address.  Memory it did not make or register (plain
// malloc memory, stack) is CUDA_ERROR_INVALID_VALUE, as with a real driver.
FAKE_CUDA_API fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    FAKE_ENTER("cuPointerGetAttribute", "attribute=%d, ptr=0x%llx", (int)attribute, (unsigned long long)ptr);
    if (data == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "data is NULL");
    uint64_t start = 0, size = 0;
    int dev = 0;
    bool host = false, managed = false;
    CUmemoryPool pool = nullptr;
    if (Segment *seg = find_segment_locked(ptr, &start)) {
        size = seg->size;
        dev = seg->device;
        if (seg->pool)
            pool = reinterpret_cast<CUmemoryPool>(seg->pool->id);
    } else if (HostRange *h = find_host_locked(ptr, &start)) {
        size = h->size;
        dev = h->device;
        host = h->kind != HostKind::Managed;
        managed = h->kind == HostKind::Managed;
    } else {
        FAIL(CUDA_ERROR_INVALID_VALUE, "0x%llx is not memory the driver knows", (unsigned long long)ptr);
    }
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext *>(data) = reinterpret_cast<CUcontext>(kCtxTag + ((uint64_t)dev << 4));
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int *>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr *>(data) = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host && !managed)
            FAIL(CUDA_ERROR_INVALID_VALUE, "device memory has no host address");
        *static_cast<void **>(data) = reinterpret_cast<void *>(ptr);
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned int *>(data) = managed; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int *>(data) = dev; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr *>(data) = start; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t *>(data) = size; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<unsigned int *>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<unsigned int *>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long *>(data) = start; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *static_cast<CUmemoryPool *>(data) = pool; break;
    default: FAIL(CUDA_ERROR_INVALID_VALUE, "attribute %d is not modelled", (int)attribute);
    }
    RET(CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Page-locked and registered host memory
// ---------------------------------------------------------------------------------------------
static CUresult host_map_locked(size_t bytesize, void **out, uint64_t *map_size)
{
    State &s = state();
    uint64_t sz = 0;
    if (!round_up(bytesize, kPage, &sz) || sz > s.host_limit - std::min(s.host_used, s.host_limit))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s.host_used += sz;
    *out = p;
    *map_size = sz;
    return CUDA_SUCCESS;
}

FAKE_CUDA_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER("cuMemHostAlloc", "bytesize=%zu, Flags=0x%x", bytesize, Flags);
    if (pp == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pp is NULL");
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    if (bytesize == 0) {
        *pp = nullptr; // as driver 580 does
        RET(CUDA_SUCCESS);
    }
    void *p = nullptr;
    uint64_t map_size = 0;
    if (CUresult r = host_map_locked(bytesize, &p, &map_size))
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
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemFreeHost(void *p)
{
    FAKE_ENTER("cuMemFreeHost", "p=%p", p);
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    uint64_t start = 0;
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), &start);
    if (h == nullptr || h->kind != HostKind::Pinned || start != reinterpret_cast<uint64_t>(p))
        FAIL(CUDA_ERROR_INVALID_VALUE, "not the start of memory from cuMemHostAlloc");
    if (config().defer)
        run_all_locked(-1); // pending copies may still use it
    munmap(p, h->map_size);
    state().host_used -= std::min(state().host_used, h->map_size);
    state().host.erase(start);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    FAKE_ENTER("cuMemHostGetDevicePointer", "p=%p, Flags=%u", p, Flags);
    if (pdptr == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pdptr is NULL");
    if (Flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "Flags must be 0");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), nullptr);
    if (h == nullptr || h->kind == HostKind::Managed)
        FAIL(CUDA_ERROR_INVALID_VALUE, "not page-locked or registered host memory");
    // Unified addressing: the device sees host memory at the same address.
    *pdptr = reinterpret_cast<CUdeviceptr>(p);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    FAKE_ENTER("cuMemHostRegister", "p=%p, bytesize=%zu, Flags=0x%x", p, bytesize, Flags);
    if (!config().host_register)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_HOST_REGISTER is set");
    if (p == nullptr || bytesize == 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "p is NULL or bytesize is 0");
    if (Flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                            CU_MEMHOSTREGISTER_READ_ONLY))
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "CU_MEMHOSTREGISTER_IOMEMORY is not modelled");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    uint64_t a = reinterpret_cast<uint64_t>(p);
    if (a > UINT64_MAX - bytesize)
        FAIL(CUDA_ERROR_INVALID_VALUE, "range wraps around");
    if (in_region(a) || in_region(a + bytesize - 1))
        FAIL(CUDA_ERROR_INVALID_VALUE, "device memory cannot be registered");
    uint64_t which = 0;
    if (HostRange *h = overlapping_host_locked(a, bytesize, &which)) {
        // Driver 580: ALREADY_REGISTERED only for registered memory; other driver memory is invalid.
        if (h->kind != HostKind::Registered)
            FAIL(CUDA_ERROR_INVALID_VALUE, "overlaps %s memory at 0x%llx",
                 h->kind == HostKind::Managed ? "managed" : "page-locked", (unsigned long long)which);
        FAIL(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "overlaps registered memory at 0x%llx",
             (unsigned long long)which);
    }
    // The pages must exist (msync fails with ENOMEM on unmapped ones).
    uint64_t first = a / kPage * kPage, end = 0;
    if (!round_up(a + bytesize, kPage, &end) || msync(reinterpret_cast<void *>(first), end - first, MS_ASYNC) != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "the range is not mapped memory");
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Registered;
    h.flags = Flags;
    h.device = dev;
    state().host[a] = h;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemHostUnregister(void *p)
{
    FAKE_ENTER("cuMemHostUnregister", "p=%p", p);
    if (!config().host_register)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_HOST_REGISTER is set");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    uint64_t start = 0;
    HostRange *h = find_host_locked(reinterpret_cast<uint64_t>(p), &start);
    if (h == nullptr || h->kind != HostKind::Registered)
        FAIL(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "not a registered range");
    if (start != reinterpret_cast<uint64_t>(p)) // (driver 580's answer for an interior pointer)
        FAIL(CUDA_ERROR_INVALID_VALUE, "an interior pointer of the registered range at 0x%llx",
             (unsigned long long)start);
    if (config().defer)
        run_all_locked(-1); // pending copies may still use it
    state().host.erase(start);
    RET(CUDA_SUCCESS);
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
CUresult resolve_locked(uint64_t addr, uint64_t n, bool write, bool fill, int dev, std::vector<Piece> *out,
                        std::vector<std::shared_ptr<void>> *keep, bool *pageable, std::string *why)
{
    if (addr < 65536) {
        *why = "a NULL (or near-NULL) pointer";
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (addr > UINT64_MAX - n) {
        *why = "the range wraps around";
        return CUDA_ERROR_INVALID_VALUE;
    }
    char buf[160];
    if (!in_region(addr)) {
        if (in_region(addr + n - 1)) {
            *why = "a host range running into device memory";
            return CUDA_ERROR_INVALID_VALUE;
        }
        uint64_t start = 0;
        HostRange *h = find_host_locked(addr, &start);
        *pageable = *pageable || h == nullptr || addr + n > start + h->size;
        if (fill && !config().pageable) {
            if (h == nullptr || addr + n > start + h->size) {
                snprintf(buf, sizeof buf,
                         "0x%llx is pageable host memory the device cannot reach (FAKE_CUDA_PAGEABLE=1 allows it)",
                         (unsigned long long)addr);
                *why = buf;
                return CUDA_ERROR_INVALID_VALUE;
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
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
        out->push_back(Piece{reinterpret_cast<char *>(addr), n});
        return CUDA_SUCCESS;
    }
    uint64_t cur = addr, left = n, start = 0;
    Segment *seg = find_segment_locked(cur, &start);
    if (seg == nullptr) {
        snprintf(buf, sizeof buf, "0x%llx is not in a live device allocation", (unsigned long long)addr);
        *why = buf;
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (;;) {
        if (seg->kind == SegKind::VmmMap) {
            int acc = dev >= 0 && dev < (int)seg->access.size() ? seg->access[(size_t)dev] : 0;
            bool ok = write ? acc == CU_MEM_ACCESS_FLAGS_PROT_READWRITE : acc != CU_MEM_ACCESS_FLAGS_PROT_NONE;
            if (!ok) {
                snprintf(buf, sizeof buf, "the mapping at 0x%llx is not %s for device %d (cuMemSetAccess)",
                         (unsigned long long)start, write ? "writable" : "readable", dev);
                *why = buf;
                return CUDA_ERROR_INVALID_VALUE;
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
            return CUDA_SUCCESS;
        // Only VMM mappings continue into the next one: they are one range of address space.
        bool vmm = seg->kind == SegKind::VmmMap;
        seg = find_segment_locked(cur, &start);
        if (!vmm || seg == nullptr || start != cur || seg->kind != SegKind::VmmMap) {
            snprintf(buf, sizeof buf, "the range 0x%llx+%llu runs past the end of its allocation",
                     (unsigned long long)addr, (unsigned long long)n);
            *why = buf;
            return CUDA_ERROR_INVALID_VALUE;
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
CUresult do_copy_locked(Call &call_, CUdeviceptr dst, CUdeviceptr src, size_t n, Stream &st, bool sync)
{
    std::vector<Piece> d, s;
    std::vector<std::shared_ptr<void>> keep;
    bool pageable = false;
    std::string why;
    if (n != 0) {
        if (CUresult r = resolve_locked(dst, n, true, false, st.device, &d, &keep, &pageable, &why))
            FAIL(r, "destination: %s", why.c_str());
        if (CUresult r = resolve_locked(src, n, false, false, st.device, &s, &keep, &pageable, &why))
            FAIL(r, "source: %s", why.c_str());
    }
    enqueue_locked(st, [d, s, keep] { copy_pieces(d, s); });
    if (sync || pageable)
        run_stream_locked(st, st.seq);
    RET(CUDA_SUCCESS);
}

CUresult do_fill_locked(Call &call_, CUdeviceptr dst, unsigned char v, size_t n, Stream &st, bool sync)
{
    std::vector<Piece> d;
    std::vector<std::shared_ptr<void>> keep;
    bool pageable = false;
    std::string why;
    if (n != 0) {
        if (CUresult r = resolve_locked(dst, n, true, true, st.device, &d, &keep, &pageable, &why))
            FAIL(r, "%s", why.c_str());
    }
    enqueue_locked(st, [d, v, keep] {
        for (const Piece &p : d)
            memset(p.p, v, p.n);
    });
    if (sync || pageable)
        run_stream_locked(st, st.seq);
    RET(CUDA_SUCCESS);
}
} // namespace

FAKE_CUDA_API fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    FAKE_ENTER("cuMemcpy", "dst=0x%llx, src=0x%llx, ByteCount=%zu", (unsigned long long)dst, (unsigned long long)src,
               ByteCount);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(nullptr, &st))
        FAIL(r, "no usable current context");
    return do_copy_locked(call_, dst, src, ByteCount, *st, true);
}

FAKE_CUDA_API fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    FAKE_ENTER("cuMemcpyAsync", "dst=0x%llx, src=0x%llx, ByteCount=%zu, hStream=%p", (unsigned long long)dst,
               (unsigned long long)src, ByteCount, (void *)hStream);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    return do_copy_locked(call_, dst, src, ByteCount, *st, false);
}

FAKE_CUDA_API fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    FAKE_ENTER("cuMemsetD8", "dstDevice=0x%llx, uc=%u, N=%zu", (unsigned long long)dstDevice, (unsigned)uc, N);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(nullptr, &st))
        FAIL(r, "no usable current context");
    return do_fill_locked(call_, dstDevice, uc, N, *st, true);
}

FAKE_CUDA_API fake_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    FAKE_ENTER("cuMemsetD8Async", "dstDevice=0x%llx, uc=%u, N=%zu, hStream=%p", (unsigned long long)dstDevice,
               (unsigned)uc, N, (void *)hStream);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    return do_fill_locked(call_, dstDevice, uc, N, *st, false);
}

// ---------------------------------------------------------------------------------------------
// Managed memory
// ---------------------------------------------------------------------------------------------
FAKE_CUDA_API fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    FAKE_ENTER("cuMemAllocManaged", "bytesize=%zu, flags=0x%x", bytesize, flags);
    if (!config().managed)
        FAIL(CUDA_ERROR_NOT_SUPPORTED, "FAKE_CUDA_NO_MANAGED is set");
    if (dptr == nullptr || bytesize == 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "dptr is NULL or bytesize is 0");
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags must be CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    void *p = nullptr;
    uint64_t map_size = 0;
    if (CUresult r = host_map_locked(bytesize, &p, &map_size))
        FAIL(r, "%zu bytes of managed memory", bytesize);
    HostRange h;
    h.size = bytesize;
    h.kind = HostKind::Managed;
    h.flags = flags;
    h.device = dev;
    h.map_size = map_size;
    state().host[reinterpret_cast<uint64_t>(p)] = h;
    *dptr = reinterpret_cast<CUdeviceptr>(p);
    OUT("*dptr=%p", p);
    RET(CUDA_SUCCESS);
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

FAKE_CUDA_API fake_cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
{
    FAKE_ENTER("cuStreamAttachMemAsync", "hStream=%p, dptr=0x%llx, length=%zu, flags=0x%x", (void *)hStream,
               (unsigned long long)dptr, length, flags);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags must be one of GLOBAL, HOST, SINGLE");
    if (flags == CU_MEM_ATTACH_SINGLE && st->legacy)
        FAIL(CUDA_ERROR_INVALID_VALUE, "CU_MEM_ATTACH_SINGLE needs a stream other than the NULL stream");
    uint64_t start = 0;
    HostRange *h = find_host_locked(dptr, &start);
    if (h == nullptr || h->kind != HostKind::Managed || start != dptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "not the start of a managed allocation");
    if (length != 0 && length != h->size)
        FAIL(CUDA_ERROR_INVALID_VALUE, "length must be 0 or the allocation's size");
    enqueue_locked(*st);
    h->flags = flags;
    RET(CUDA_SUCCESS);
}

// A prefetch/advice target: CU_DEVICE_CPU or a device.
static CUresult check_target_device(int dev, bool prefetch)
{
    if (dev == CU_DEVICE_CPU)
        return CUDA_SUCCESS;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (prefetch && !config().concurrent_managed)
        return CUDA_ERROR_INVALID_DEVICE; // a GPU without concurrent managed access takes no prefetch
    return CUDA_SUCCESS;
}

static CUresult location_device(CUmemLocation loc, int *dev)
{
    switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *dev = loc.id;
        return valid_device(loc.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        *dev = CU_DEVICE_CPU;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        *dev = CU_DEVICE_CPU;
        return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult prefetch_locked(Call &call_, CUdeviceptr devPtr, size_t count, int dev, CUstream hStream)
{
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (count == 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "count is 0");
    if (CUresult r = check_target_device(dev, true))
        FAIL(r, "cannot prefetch to device %d", dev);
    std::string why;
    if (!managed_range_locked(devPtr, count, &why))
        FAIL(CUDA_ERROR_INVALID_VALUE, "%s", why.c_str());
    enqueue_locked(*st);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemPrefetchAsync_v1(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
    FAKE_ENTER("cuMemPrefetchAsync", "devPtr=0x%llx, count=%zu, dstDevice=%d, hStream=%p", (unsigned long long)devPtr,
               count, (int)dstDevice, (void *)hStream);
    return prefetch_locked(call_, devPtr, count, dstDevice, hStream);
}

FAKE_CUDA_API fake_cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                         CUstream hStream)
{
    FAKE_ENTER("cuMemPrefetchAsync_v2", "devPtr=0x%llx, count=%zu, location={%d,%d}, flags=%u, hStream=%p",
               (unsigned long long)devPtr, count, (int)location.type, location.id, flags, (void *)hStream);
    if (flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    int dev = 0;
    if (CUresult r = location_device(location, &dev))
        FAIL(r, "bad location {%d,%d}", (int)location.type, location.id);
    return prefetch_locked(call_, devPtr, count, dev, hStream);
}

static CUresult advise_locked(Call &call_, CUdeviceptr devPtr, size_t count, CUmem_advise advice, int dev)
{
    int cur = -1;
    if (CUresult r = current_device_locked(&cur))
        FAIL(r, "no usable current context");
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown advice %d", (int)advice);
    if (count == 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "count is 0");
    if (advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY) {
        if (CUresult r = check_target_device(dev, false))
            FAIL(r, "bad device %d", dev);
    }
    std::string why;
    if (!managed_range_locked(devPtr, count, &why))
        FAIL(CUDA_ERROR_INVALID_VALUE, "%s", why.c_str());
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuMemAdvise_v1(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
    FAKE_ENTER("cuMemAdvise", "devPtr=0x%llx, count=%zu, advice=%d, device=%d", (unsigned long long)devPtr, count,
               (int)advice, (int)device);
    return advise_locked(call_, devPtr, count, advice, device);
}

FAKE_CUDA_API fake_cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    FAKE_ENTER("cuMemAdvise_v2", "devPtr=0x%llx, count=%zu, advice=%d, location={%d,%d}", (unsigned long long)devPtr,
               count, (int)advice, (int)location.type, location.id);
    int dev = CU_DEVICE_CPU;
    if (advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY) {
        if (CUresult r = location_device(location, &dev))
            FAIL(r, "bad location {%d,%d}", (int)location.type, location.id);
    }
    return advise_locked(call_, devPtr, count, advice, dev);
}
