#include "core/memory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/cpu_reach.hpp"
#include "core/limit.hpp"
#include "core/devices.hpp"
#include "core/managed.hpp"
#include "core/pinned.hpp"
#include "core/placement.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools.hpp"
#include "core/streams.hpp"
#include "core/vmm.hpp"

namespace gpumem::detail {

status_t Memory::release(const Allocation &a, bool finalizing)
{
    void *ptr = reinterpret_cast<void *>(a.base);
    switch (a.kind) {
    case GPUMEM_KIND_DEVICE: return runtime_.device_free(a.device, ptr, a.size);
    case GPUMEM_KIND_HOST_PINNED: return pinned_.release(a, a.flags, finalizing);
    case GPUMEM_KIND_MANAGED: return managed_.release(a, finalizing);
    case GPUMEM_KIND_HOST_REGISTERED: return pinned_.unregister(a);
    default: return fail(GPUMEM_ERROR_INVALID_POINTER, "%s cannot be released here", kind_name(a.kind));
    }
}

status_t Memory::take_and_release(void *ptr, bool (*accept)(const Allocation &), const char *expected)
{
    return pointers_.release_record(ptr, accept, expected, [&](const Allocation &a) { return release(a, false); });
}

// The device is out of memory while gpumem's pools there hold memory nobody
// uses (kept under their release thresholds): they give it back and the
// allocation is tried once more.  Another process's need is met the same way
// when it is what filled the device.  The first failure's message stays when
// nothing was given back or the retry fails too.
status_t Memory::retry_after_release(int32_t device, size_t size, void **p)
{
    const std::string why = last_error_message();
    const uint64_t released = pools_.release_unused(device);
    if (released == 0)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s", why.c_str());
    if (runtime_.device_alloc(device, size, p) == GPUMEM_SUCCESS) {
        log(LogLevel::info, "device %d was out of memory for %zu bytes: its pools gave back %llu unused bytes, and "
            "the allocation succeeded then", device, size, static_cast<unsigned long long>(released));
        return GPUMEM_SUCCESS;
    }
    return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s (after gpumem's pools on device %d gave back %llu unused bytes)",
                why.c_str(), device, static_cast<unsigned long long>(released));
}

status_t Memory::device_alloc(size_t size, void **ptr)
{
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    if (status_t st = limit::check(GPUMEM_KIND_DEVICE, device, size))
        return st;
    void *p = nullptr;
    status_t st = runtime_.device_alloc(device, size, &p);
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY)
        st = retry_after_release(device, size, &p);
    if (st)
        return st;
    Allocation a;
    a.base = reinterpret_cast<uintptr_t>(p);
    a.size = size;
    a.kind = GPUMEM_KIND_DEVICE;
    a.device = device;
    pointers_.record_new(a);
    *ptr = p;
    return GPUMEM_SUCCESS;
}

namespace {
// The registry's kinds gpumem_free releases (a stream-ordered block is the pools').
bool freed_by_gpumem_free(int32_t kind)
{
    return kind == GPUMEM_KIND_DEVICE || kind == GPUMEM_KIND_HOST_PINNED || kind == GPUMEM_KIND_MANAGED;
}
} // namespace

status_t Memory::free(void *ptr)
{
    bool (*freeable)(const Allocation &) = [](const Allocation &a) { return freed_by_gpumem_free(a.kind); };
    const char *expected = "memory from gpumem_malloc, _host_alloc, _managed_alloc or _malloc_async";
    PointerInfo info;
    if (pointers_.find(ptr, &info) && info.base == reinterpret_cast<uintptr_t>(ptr)) {
        if (freed_by_gpumem_free(info.kind))
            return take_and_release(ptr, freeable, "memory from gpumem_malloc, _host_alloc or _managed_alloc");
        if (info.kind == GPUMEM_KIND_STREAM_ORDERED) {
            PoolBlock block;
            block.base = ptr;
            block.size = info.size;
            block.device = info.device;
            block.pool = info.pool;
            return pools_.free_now(ptr, block);
        }
    }
    return pointers_.explain_bad(ptr, expected);
}

namespace {

// Work that must run on `device` (the memory's owner) in the order of stream
// `s` of another device.  The runtime runs a fill in its stream's context,
// which reaches no other device's memory without peer access or a grant
// (cuda_probe bridge: refused even for plain memory); a copy is checked
// against the current context and runs on any stream, so only fills need
// this.  The work goes on the owner's default stream instead, after
// everything enqueued on `s` so far and before anything enqueued on it later
// (two events).
template <class Work> status_t in_order_of(Streams &b, int32_t device, const StreamState &s, Work &&work)
{
    void *before = nullptr, *after = nullptr;
    status_t st = b.event_create(s.device, GPUMEM_EVENT_DISABLE_TIMING, &before);
    if (st == GPUMEM_SUCCESS)
        st = b.event_record(s.device, before, s.native);
    if (st == GPUMEM_SUCCESS)
        st = b.stream_wait_event(device, nullptr, before);
    if (st == GPUMEM_SUCCESS)
        st = work();
    if (st == GPUMEM_SUCCESS)
        st = b.event_create(device, GPUMEM_EVENT_DISABLE_TIMING, &after);
    if (st == GPUMEM_SUCCESS)
        st = b.event_record(device, after, nullptr);
    if (st == GPUMEM_SUCCESS)
        st = b.stream_wait_event(s.device, s.native, after);
    // An event destroyed after its record and waits still orders them.
    const std::string why = st ? last_error_message() : std::string();
    if (before)
        b.event_destroy(s.device, before);
    if (after)
        b.event_destroy(device, after);
    return st ? fail(st, "%s", why.c_str()) : GPUMEM_SUCCESS;
}

// Writes `n` bytes at `dst` through the kernel, which answers EFAULT where
// this process cannot write instead of faulting: false then, with *done the
// bytes written before it.  The bytes repeat `value`'s low `size` bytes (1, 2
// or 4, in the machine's order; `dst` aligned to `size`, `n` a multiple of
// it), so every piece starts on an element.  process_vm_writev on this
// process, or where a seccomp filter refuses that, reads from a pipe of its own.
bool kernel_fill(void *dst, uint32_t value, unsigned size, size_t n, size_t *done)
{
    constexpr size_t k_piece = 4096, k_pieces = 256;
    alignas(4) unsigned char pattern[k_piece];
    for (size_t i = 0; i < k_piece; i += size)
        std::memcpy(pattern + i, &value, size); // little-endian: the low bytes first
    iovec local[k_pieces];
    for (iovec &v : local)
        v = iovec{pattern, k_piece};
    char *at = static_cast<char *>(dst);
    *done = 0;
    const int saved = errno;
    bool ok = true;
    while (*done < n) {
        const size_t chunk = std::min(n - *done, k_piece * k_pieces);
        const size_t pieces = (chunk + k_piece - 1) / k_piece;
        local[pieces - 1].iov_len = chunk - (pieces - 1) * k_piece;
        iovec remote{at + *done, chunk};
        const ssize_t r = process_vm_writev(getpid(), local, pieces, &remote, 1, 0);
        local[pieces - 1].iov_len = k_piece;
        if (r > 0) {
            *done += static_cast<size_t>(r);
            continue;
        }
        if (r == 0 || errno == EFAULT) {
            ok = false;
            break;
        }
        // Refused as a call (EPERM, ENOSYS): the pipe writes what remains.
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) {
            ok = false;
            break;
        }
        while (*done < n) {
            const size_t k = std::min(n - *done, k_piece);
            const ssize_t r = write(fds[1], pattern, k) == static_cast<ssize_t>(k) ? read(fds[0], at + *done, k) : -1;
            if (r <= 0) {
                ok = false;
                break;
            }
            *done += static_cast<size_t>(r);
        }
        close(fds[0]);
        close(fds[1]);
        break;
    }
    errno = saved;
    return ok;
}

} // namespace

// Why it is done this way (design note):
// - Where the runtime copies pageable memory it reads and writes it with the
//   CPU (CUDA's driver 580 dies with SIGSEGV on an address where no memory
//   is, in every copy direction: cuda_probe group unknown), and the host
//   backend's copy is a plain memcpy.  So memory gpumem does not know is
//   asked of the kernel first (cpu_reaches), which answers EFAULT instead of
//   faulting.
// - Memory gpumem knows pays nothing: the directory answered already.
// - A source costs one system call per 1024 pages.  A page the CPU cannot
//   reach may still be another allocator's device memory (a PROT_NONE range
//   of the runtime): the runtime is asked about that page only.
// - A destination must also be writable.  The write check puts back the byte
//   it read in each page, so the stream's earlier work, which may touch those
//   bytes, finishes first (a synchronous copy into pageable memory waits for
//   it anyway).  An asynchronous copy into host memory the runtime knows
//   (another library's page-locked memory) keeps its asynchrony: one read
//   check and the runtime's answer, and the runtime writes it by DMA.
// Limits: a foreign managed range is read a byte per page by the CPU, which
// may migrate those pages to the host; docs/benchmarks.md has what the check
// costs a 4 KiB pageable copy.
status_t Memory::check_unknown_memory(const StreamState &s, void *dst, int32_t dst_memory, const void *src,
                              int32_t src_memory, size_t n, bool async)
{
    const bool src_unknown = src_memory == GPUMEM_POOL_MEMORY_UNKNOWN;
    const bool dst_unknown = dst_memory == GPUMEM_POOL_MEMORY_UNKNOWN;
    if (!src_unknown && !dst_unknown)
        return GPUMEM_SUCCESS;
    // The runtime's own memory (device, managed or page-locked), which it checks itself.
    auto runtime_knows = [&](uintptr_t at) { return runtime_.pointer_device(reinterpret_cast<void *>(at)) != GPUMEM_DEVICE_HOST; };
    uintptr_t bad = 0;
    if (src_unknown && !cpu_reaches(const_cast<void *>(src), n, false, &bad) && !runtime_knows(bad))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "cannot copy %zu bytes from %p to %p: the source is neither memory gpumem or the runtime knows "
                    "nor memory this process can read (at %p); pass memory from gpumem or from malloc",
                    n, src, dst, reinterpret_cast<void *>(bad));
    if (!dst_unknown)
        return GPUMEM_SUCCESS;
    if (async) {
        if (!cpu_reaches(dst, n, false, &bad)) {
            if (runtime_knows(bad))
                return GPUMEM_SUCCESS;
            return fail(GPUMEM_ERROR_INVALID_POINTER,
                        "cannot copy %zu bytes from %p to %p: the destination is neither memory gpumem or the runtime "
                        "knows nor memory this process can write (at %p); pass memory from gpumem or from malloc",
                        n, src, dst, reinterpret_cast<void *>(bad));
        }
        if (runtime_knows(reinterpret_cast<uintptr_t>(dst)))
            return GPUMEM_SUCCESS;
    }
    if (status_t st = streams_.stream_synchronize(s.device, s.native))
        return st;
    if (cpu_reaches(dst, n, true, &bad) || runtime_knows(bad))
        return GPUMEM_SUCCESS;
    return fail(GPUMEM_ERROR_INVALID_POINTER,
                "cannot copy %zu bytes from %p to %p: the destination is neither memory gpumem or the runtime knows "
                "nor memory this process can write (at %p); pass memory from gpumem or from malloc",
                n, src, dst, reinterpret_cast<void *>(bad));
}

namespace {

// A fill the runtime refused because `dst` is host memory it does not know:
// plain pageable memory, which the device cannot write.  The CPU fills it
// once the stream's earlier work is done, so stream order holds (the fill is
// complete on return).  An address that is no memory of this process at all
// is INVALID_POINTER: the CPU's write goes through the kernel, never faults.
// On the host backend every fill of memory gpumem does not know comes here
// first (its backend fill is a plain memset).  `why`: what sent it here, for the message.
[[gnu::cold]] status_t fill_host(Streams &streams, int32_t device, void *dst, int32_t value, size_t n, void *stream,
                                 const std::string &why, unsigned size = 1)
{
    if (status_t st = streams.stream_synchronize(device, stream))
        return st;
    size_t done = 0;
    const uint32_t pattern = size == 1 ? static_cast<unsigned char>(value) : static_cast<uint32_t>(value);
    if (!kernel_fill(dst, pattern, size, n, &done))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "cannot set %zu bytes at %p: %p is neither memory gpumem or the runtime knows nor host memory this "
                    "process can write (%s); pass memory from gpumem or from malloc",
                    n, dst, static_cast<char *>(dst) + done, why.c_str());
    return GPUMEM_SUCCESS;
}

} // namespace

status_t Memory::copy(void *dst, const void *src, size_t n, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    int32_t dst_owner = GPUMEM_DEVICE_HOST, src_owner = GPUMEM_DEVICE_HOST;
    int32_t dst_memory = GPUMEM_POOL_MEMORY_UNKNOWN, src_memory = GPUMEM_POOL_MEMORY_UNKNOWN;
    if (status_t st = pointers_.check_range(dst, n, true, "destination", nullptr, &dst_owner, &dst_memory))
        return st;
    if (status_t st = pointers_.check_range(src, n, false, "source", nullptr, &src_owner, &src_memory))
        return st;
    if (status_t st = check_unknown_memory(s->state, dst, dst_memory, src, src_memory, n, async))
        return st;
    const placement::CopyPlace at = placement::for_copy(dst_owner, src_owner, s->state.device);
    // Into pinned memory the runtime's synchronous copy is complete when it
    // returns.  Memory gpumem does not know may be another allocator's device
    // memory, where a copy may still be in flight: it waits.  (Asking the
    // runtime whether it knows the address costs a synchronous copy into
    // pageable memory more than the wait: the driver's answer for unknown
    // memory is an error, a slow path; docs/benchmarks.md.)
    const CopyMode mode = async                                     ? CopyMode::async
                          : dst_memory == GPUMEM_POOL_MEMORY_PINNED ? CopyMode::sync_into_host
                                                                    : CopyMode::sync;
    return copy_at(at, dst, src, n, s->state.native, mode);
}

status_t Memory::copy_at(const placement::CopyPlace &at, void *dst, const void *src, size_t n, void *stream,
                 CopyMode mode)
{
    // Both take a stream of another device (cuda_probe placement and bridge:
    // accepted, and the copy runs).
    if (at.peer)
        return runtime_.copy_peer(at.device, dst, at.src_device, src, n, stream, mode == CopyMode::async);
    return runtime_.copy(at.device, dst, src, n, stream, mode);
}

status_t Memory::fill_unknown(const StreamState &s, void *dst, uint32_t value, unsigned size, size_t n,
                              const std::string &why)
{
    return fill_host(streams_, s.device, dst, static_cast<int32_t>(value), n, s.native, why, size);
}

status_t Memory::ordered_on_owner(int32_t device, const StreamState &s, const std::function<status_t(void *on)> &work)
{
    return in_order_of(streams_, device, s, [&] { return work(nullptr); });
}

status_t Memory::pitch_alloc(RowMemops *rows, size_t width, size_t height, void **ptr, size_t *pitch)
{
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    // What the limit counts: the rows at the least pitch a device gives
    // (the vendor's may be wider; its allocation is counted in full below).
    constexpr size_t k_least_pitch = 256;
    const size_t least = (width + k_least_pitch - 1) / k_least_pitch * k_least_pitch;
    if (status_t st = limit::check(GPUMEM_KIND_DEVICE, device, least * height))
        return st;
    void *p = nullptr;
    size_t got = 0;
    status_t st;
    if (rows) {
        st = rows->alloc_pitch(device, width, height, &p, &got);
    } else {
        // Without the runtime's pitched allocation: rows 512 bytes apart, as cuMemAllocPitch makes them.
        constexpr size_t k_pitch = 512;
        got = (width + k_pitch - 1) / k_pitch * k_pitch;
        st = runtime_.device_alloc(device, got * height, &p);
    }
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY) {
        const std::string why = last_error_message();
        const uint64_t released = pools_.release_unused(device);
        if (released && (rows ? rows->alloc_pitch(device, width, height, &p, &got)
                              : runtime_.device_alloc(device, got * height, &p)) == GPUMEM_SUCCESS)
            st = GPUMEM_SUCCESS;
        else
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s", why.c_str());
    }
    if (st)
        return st;
    Allocation a;
    a.base = reinterpret_cast<uintptr_t>(p);
    a.size = got * height;
    a.kind = GPUMEM_KIND_DEVICE;
    a.device = device;
    pointers_.record_new(a);
    *ptr = p;
    *pitch = got;
    return GPUMEM_SUCCESS;
}

status_t Memory::fill(void *dst, int32_t value, size_t n, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    size_t run = n;
    int32_t owner = GPUMEM_DEVICE_HOST, memory = GPUMEM_POOL_MEMORY_UNKNOWN;
    if (status_t st = pointers_.check_range(dst, n, true, "destination", &run, &owner, &memory))
        return st;
    if (memory == GPUMEM_POOL_MEMORY_UNKNOWN && devices_[s->state.device].caps.cpu_fills_pageable)
        return fill_host(streams_, s->state.device, dst, value, n, s->state.native, "the kernel refused the write");
    const int32_t device = placement::for_range(owner, s->state.device);
    // An explicit stream of another device than the memory's (NULL is already the owner's).
    const bool bridged = stream != nullptr && s->state.device != device;
    void *on = bridged ? nullptr : s->state.native;
    auto fill_one = [&](char *at, size_t len) {
        status_t st = runtime_.fill(device, at, value, len, on, async);
        if (st == GPUMEM_ERROR_INVALID_POINTER && owner == GPUMEM_DEVICE_HOST) [[unlikely]]
            st = fill_host(streams_, device, at, value, len, on, last_error_message());
        return st;
    };
    // Across the seam of two VMM mappings, one fill per mapping where the
    // runtime refuses a fill that spans two reservations
    // (workaround_split_fill_at_seams, vendor_bugs.def).
    auto fill_all = [&] {
        char *at = static_cast<char *>(dst);
        size_t left = n;
        size_t first = run < n && (workarounds_ & workaround_split_fill_at_seams) ? run : n;
        while (first < left) {
            if (status_t st = fill_one(at, first))
                return st;
            at += first;
            left -= first;
            first = vmm_.mapped_run(at, left);
        }
        return fill_one(at, left);
    };
    return bridged ? in_order_of(streams_, device, s->state, fill_all) : fill_all();
}

void Memory::release_all(size_t *leaked_allocations, uint64_t *leaked_bytes)
{
    for (auto &[base, a] : pointers_.take_all()) {
        if (a.kind != GPUMEM_KIND_BUFFER) {
            ++*leaked_allocations;
            *leaked_bytes += a.size;
        }
        if (a.kind != GPUMEM_KIND_BUFFER)
            release(a, true);
    }
}

} // namespace gpumem::detail
