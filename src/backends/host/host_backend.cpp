// The host backend: device information, the memory kinds, streams, events,
// copies.  VMM lives in host_vmm.cpp, pool upstreams in host_pool.cpp.
#include "backends/host/host_backend.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <new>
#include <utility>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/host_fn.hpp"
#include "base/log.hpp"

namespace gpumem::detail {

namespace host {

namespace {

// A native stream.  Work runs synchronously in order (in strict mode it waits
// in the backend's DeferredWork, keyed by this address), so it holds nothing;
// it exists to be a distinct, destroyable handle.  Streams the caller wraps
// (any non-NULL pointer) are never dereferenced.
struct HostStream {
    int32_t device;
};

// A native event: when it was recorded (CLOCK_MONOTONIC, ns), -1 until then.
// Strict mode: the stream and the point in its deferred work it stands for.
// An event made GPUMEM_EVENT_INTERPROCESS has an id its handle carries; one
// opened from a handle stands for another process's event, whose records
// complete when they are made (this backend's streams run their work when it
// is enqueued, and strict mode runs it at an interprocess event's record,
// since another process may be waiting for it): it is always complete here.
struct HostEvent {
    std::atomic<int64_t> recorded_ns{-1};
    int32_t device = 0;
    uint32_t flags = 0;
    uint64_t ipc_id = 0; // GPUMEM_EVENT_INTERPROCESS: what its handle names
    bool opened = false; // opened from another process's handle
    std::mutex mark_mutex; // event_record races event_synchronize on other threads
    bool marked = false;
    void *stream = nullptr;
    uint64_t work_mark = 0;
};

// The 64 bytes of a host event's handle: the process and the event.
struct EventHandleBytes {
    char magic[8];
    uint64_t pid;
    uint64_t id;
    uint64_t check; // guards against bytes that only look like a handle
    char unused[32];
};
static_assert(sizeof(EventHandleBytes) == sizeof(gpumem_ipc_event_handle_t), "a host event handle is 64 bytes");
constexpr char k_event_magic[8] = {'g', 'p', 'u', 'm', 'e', 'v', 'h', '1'};
uint64_t handle_check(uint64_t pid, uint64_t id) { return (pid * 0x9e3779b97f4a7c15ull) ^ (id + 0x6770756d656d6576ull); }

int64_t monotonic_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Freed device, pinned and managed memory, and the chunks gpumem's own pools
// give back: the pages go at once, the address range stays reserved
// (PROT_NONE, no memory) for the k_kept most recent frees, as a GPU keeps a
// freed address out of use for a while.  A
// late call on the address then finds nothing the CPU can reach there and is
// refused as a call on freed memory (core/pointers.cpp), where an address the
// OS had handed out again (mmap reuses a hole at once) would have let a stale
// copy write into whoever holds it now.  Process-wide, as the address space is.
class RetiredRanges {
public:
    // False when the range could not be kept (the caller unmaps it).
    bool retire(void *ptr, size_t len)
    {
        void *p = mmap(ptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return false;
        std::pair<void *, size_t> oldest{nullptr, 0};
        {
            std::lock_guard<std::mutex> lock(mutex_);
            try {
                ranges_.emplace_back(ptr, len);
            } catch (...) {
                oldest = {ptr, len}; // not remembered: not kept either
            }
            if (!oldest.first && ranges_.size() > k_kept) {
                oldest = ranges_.front();
                ranges_.pop_front();
            }
        }
        if (oldest.first)
            munmap(oldest.first, oldest.second);
        return true;
    }

private:
    static constexpr size_t k_kept = 4096; // as strict mode keeps freed device memory
    std::mutex mutex_;
    std::deque<std::pair<void *, size_t>> ranges_; // oldest first
};

} // namespace

bool retire_mapping(void *ptr, size_t len)
{
    static RetiredRanges *ranges = new RetiredRanges; // leaked: frees may come from static destructors
    return ranges->retire(ptr, len);
}

HostBackend::HostBackend(bool strict) : name_(cpu_name()), arch_(machine_name())
{
    if (strict)
        strict_ = std::make_unique<StrictMode>();
}

void HostBackend::run_stream_work(void *stream)
{
    if (strict_)
        strict_->work.run_stream(stream, nonblocking(stream), UINT64_MAX);
}

void HostBackend::run_all_work()
{
    if (strict_)
        strict_->work.run_all();
}

status_t HostBackend::get_caps(int32_t device, DeviceCaps *caps)
{
    if (device != 0)
        return fail(GPUMEM_ERROR_INVALID_DEVICE,
                    "device %d does not exist: the host backend has one device, 0 (the CPU)", device);
    caps->name = name_;
    caps->arch = arch_;
    caps->backing_page = uint64_t(sysconf(_SC_PAGESIZE));
    memory_info(&caps->total_memory, &caps->free_memory);
    caps->managed = true;
    caps->managed_migrates = true; // one memory: every page is always "resident"
    caps->pageable_access = true;
    caps->cpu_fills_pageable = true; // fill() is a memset
    caps->pools = true; // served by gpumem's own pool over this backend's upstreams
    caps->vmm = true;
    caps->host_register = true;
    caps->host_register_read_only = true; // mlock takes read-only pages
    caps->ipc_handle_types = GPUMEM_HANDLE_POSIX_FD;
    caps->builtin_pool_ipc = true; // pools keep their memory in one memfd
    // The "device" is the CPU: its memory is ordinary host memory, which an
    // RDMA NIC registers as it is; there is no GPU memory for NCCL to map.
    caps->rdma_any_memory = true;
    caps->vmm_granularity = page_size();
    caps->vmm_recommended_granularity = k_large_granule;
    caps->compute_capability = 0;
    caps->uuid = machine_id();
    caps->stream_priorities = true; // recorded (cpu_device: EMULATED)
    caps->host_funcs = true;        // run in stream order
    caps->ipc_events = true;        // events complete when recorded: a handle needs no shared state
    caps->cpu_device = true;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes)
{
    if (device != 0)
        return fail(GPUMEM_ERROR_INVALID_DEVICE,
                    "device %d does not exist: the host backend has one device, 0 (the CPU)", device);
    uint64_t total, available;
    memory_info(&total, &available);
    *free_bytes = static_cast<size_t>(available);
    *total_bytes = static_cast<size_t>(total);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::set_current_device(int32_t) { return GPUMEM_SUCCESS; }

// --- Device, pinned and managed memory --------------------------------------

status_t HostBackend::check_size(size_t size, const char *what, size_t *rounded)
{
    size_t len;
    if (!round_up(size, page_size(), &len))
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of %s: the size overflows when rounded up to the page size; "
                    "allocate less",
                    size, what);
    // Without this, overcommit would hand out what can never be backed and
    // the process would die on first touch; a GPU refuses such a request.
    const uint64_t ceiling = memory_ceiling();
    if (len > ceiling)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes of %s: more than this machine's memory and swap (%llu bytes); "
                    "allocate less",
                    size, what, static_cast<unsigned long long>(ceiling));
    *rounded = len;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::map_memory(size_t size, const char *what, void **ptr)
{
    size_t len;
    if (status_t st = check_size(size, what, &len))
        return st;
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        return fail(alloc_errno_status(err),
                    "cannot allocate %zu bytes of %s: mmap failed: %s; free memory or allocate less", size, what,
                    std::strerror(err));
    }
    *ptr = p;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::unmap_memory(void *ptr, size_t size, const char *what)
{
    size_t len;
    if (!round_up(size, page_size(), &len))
        len = size;
    if (retire_mapping(ptr, len))
        return GPUMEM_SUCCESS;
    if (munmap(ptr, len) != 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_BACKEND, "cannot free %s at %p (%zu bytes): munmap failed: %s", what, ptr, size,
                    std::strerror(err));
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::device_alloc(int32_t, size_t size, void **ptr)
{
    if (!strict_)
        return map_memory(size, "device memory", ptr);
    size_t len;
    if (status_t st = check_size(size, "device memory", &len))
        return st;
    return strict_->views.map(len, size, page_size(), "device allocation", ptr);
}

status_t HostBackend::device_free(int32_t, void *ptr, size_t size)
{
    if (!strict_)
        return unmap_memory(ptr, size, "device memory");
    // Freeing device memory waits for the device, as cudaFree and hipFree do;
    // queued work may still use the alias.
    run_all_work();
    if (!strict_->views.unmap(ptr))
        return fail(GPUMEM_ERROR_BACKEND, "cannot free device memory at %p (%zu bytes): strict mode has no view "
                    "there (please report it)", ptr, size);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::host_alloc(int32_t, size_t size, uint32_t, void **ptr)
{
    status_t st = map_memory(size, "pinned host memory", ptr);
    if (st != GPUMEM_SUCCESS)
        return st;
    // Page-lock where RLIMIT_MEMLOCK allows; unlocked memory behaves the same
    // here, only slower to swap.  munmap drops the lock, so nothing to remember.
    size_t len;
    round_up(size, page_size(), &len);
    if (mlock(*ptr, len) != 0) {
        int err = errno;
        static std::atomic<bool> logged{false};
        if (!logged.exchange(true))
            log(LogLevel::info,
                "pinned host memory is not page-locked: mlock failed: %s; raise the locked-memory limit "
                "(ulimit -l) to lock it",
                std::strerror(err));
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::host_free(int32_t, void *ptr, size_t size)
{
    return unmap_memory(ptr, size, "pinned host memory");
}

status_t HostBackend::host_register(int32_t, void *ptr, size_t size, uint32_t)
{
    const size_t page = page_size();
    const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
    uintptr_t end;
    if (__builtin_add_overflow(start, size, &end) || end > UINTPTR_MAX - page)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot register %zu bytes at %p: the range wraps the address space",
                    size, ptr);
    const uintptr_t lo = start & ~(uintptr_t{page} - 1);
    const uintptr_t hi = (end + page - 1) & ~(uintptr_t{page} - 1);
    // Best effort: registration keeps its meaning (a recorded range whose
    // device pointer is itself) even where the lock limit refuses.
    if (mlock(reinterpret_cast<void *>(lo), hi - lo) != 0) {
        int err = errno;
        log(LogLevel::debug, "host_register: mlock of %zu bytes at %p failed (%s); the range stays unlocked",
            static_cast<size_t>(hi - lo), reinterpret_cast<void *>(lo), std::strerror(err));
        return GPUMEM_SUCCESS;
    }
    try {
        std::lock_guard<std::mutex> lock(locked_mutex_);
        locked_[start] = LockedRange{lo, hi};
    } catch (...) {
        munlock(reinterpret_cast<void *>(lo), hi - lo);
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::host_unregister(int32_t, void *ptr, size_t)
{
    const size_t page = page_size();
    uintptr_t lo, hi;
    {
        std::lock_guard<std::mutex> lock(locked_mutex_);
        auto it = locked_.find(reinterpret_cast<uintptr_t>(ptr));
        if (it == locked_.end())
            return GPUMEM_SUCCESS; // never locked
        lo = it->second.lo;
        hi = it->second.hi;
        locked_.erase(it);
        // Registered ranges do not overlap, but two may share a boundary
        // page; mlock does not nest, so leave such a page locked.
        for (const auto &entry : locked_) {
            const LockedRange &r = entry.second;
            if (lo < hi && r.lo <= lo && lo < r.hi)
                lo += page;
            if (lo < hi && r.lo <= hi - page && hi - page < r.hi)
                hi -= page;
        }
    }
    if (lo < hi && munlock(reinterpret_cast<void *>(lo), hi - lo) != 0) {
        int err = errno;
        log(LogLevel::debug, "host_unregister: munlock at %p failed (%s)", reinterpret_cast<void *>(lo),
            std::strerror(err));
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::host_device_pointer(int32_t, void *host_ptr, void **device_ptr)
{
    *device_ptr = host_ptr; // one address space
    return GPUMEM_SUCCESS;
}

status_t HostBackend::managed_alloc(int32_t, size_t size, uint32_t, void **ptr)
{
    return map_memory(size, "managed memory", ptr);
}

status_t HostBackend::managed_free(int32_t, void *ptr, size_t size)
{
    return unmap_memory(ptr, size, "managed memory");
}

// One memory: nothing migrates, so prefetch (immediate on a synchronous
// stream), advice and attachment only need recording, which the core does.
status_t HostBackend::prefetch(int32_t, const void *, size_t, int32_t, void *) { return GPUMEM_SUCCESS; }
status_t HostBackend::advise(int32_t, const void *, size_t, int32_t, int32_t) { return GPUMEM_SUCCESS; }
status_t HostBackend::stream_attach(int32_t, void *, void *, size_t, uint32_t) { return GPUMEM_SUCCESS; }

// --- Streams and events --------------------------------------------------------

status_t HostBackend::stream_create(int32_t device, uint32_t flags, int32_t priority, void **stream)
{
    HostStream *s = new (std::nothrow) HostStream{device};
    if (!s)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create a stream: out of host memory");
    // Priorities schedule nothing here (every stream's work runs when it is
    // enqueued, or when waited for): they are recorded within CUDA's range.
    int32_t least = 0, greatest = 0;
    priority_range(device, &least, &greatest);
    const int32_t got = priority > least ? least : priority < greatest ? greatest : priority;
    try {
        std::lock_guard<std::mutex> lock(streams_mutex_);
        streams_[s] = StreamInfo{flags, got};
    } catch (...) {
        delete s;
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create a stream: out of host memory");
    }
    *stream = s;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::stream_flags(int32_t, void *stream, uint32_t *flags)
{
    std::lock_guard<std::mutex> lock(streams_mutex_);
    auto it = streams_.find(stream);
    *flags = it == streams_.end() ? GPUMEM_STREAM_DEFAULT : it->second.flags;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::stream_priority(int32_t, void *stream, int32_t *priority)
{
    std::lock_guard<std::mutex> lock(streams_mutex_);
    auto it = streams_.find(stream);
    *priority = it == streams_.end() ? 0 : it->second.priority;
    return GPUMEM_SUCCESS;
}

// CUDA's range on current NVIDIA GPUs (0 to -5), so that a program reads
// back on the host what it would on a GPU; nothing is scheduled by it.
status_t HostBackend::priority_range(int32_t, int32_t *least, int32_t *greatest)
{
    *least = 0;
    *greatest = -5;
    return GPUMEM_SUCCESS;
}

bool HostBackend::nonblocking(void *stream)
{
    if (!stream)
        return false;
    std::lock_guard<std::mutex> lock(streams_mutex_);
    auto it = streams_.find(stream);
    return it != streams_.end() && (it->second.flags & GPUMEM_STREAM_NON_BLOCKING);
}

status_t HostBackend::stream_destroy(int32_t, void *stream)
{
    run_stream_work(stream); // its work completes, as on a GPU
    {
        std::lock_guard<std::mutex> lock(streams_mutex_);
        streams_.erase(stream);
    }
    delete static_cast<HostStream *>(stream);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::stream_synchronize(int32_t, void *stream)
{
    run_stream_work(stream);
    return GPUMEM_SUCCESS;
}

// Strict mode: a query is when the program looks, so the work runs then
// (polling until idle terminates, and a program that never looks sees none).
status_t HostBackend::stream_query(int32_t, void *stream)
{
    run_stream_work(stream);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_create(int32_t device, uint32_t flags, void **event)
{
    HostEvent *e = new (std::nothrow) HostEvent;
    if (!e)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create an event: out of host memory");
    e->device = device;
    e->flags = flags;
    if (flags & GPUMEM_EVENT_INTERPROCESS)
        e->ipc_id = random_id() | 1;
    *event = e;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_ipc_handle(int32_t, void *event, gpumem_ipc_event_handle_t *handle)
{
    const HostEvent *e = static_cast<HostEvent *>(event);
    if (!e->ipc_id)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "event %p was not made with GPUMEM_EVENT_INTERPROCESS (or was opened from a handle): only "
                    "the process that made an interprocess event shares it",
                    event);
    EventHandleBytes h{};
    std::memcpy(h.magic, k_event_magic, sizeof h.magic);
    h.pid = static_cast<uint64_t>(getpid());
    h.id = e->ipc_id;
    h.check = handle_check(h.pid, h.id);
    std::memcpy(handle, &h, sizeof h);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_ipc_open(int32_t device, const gpumem_ipc_event_handle_t *handle, void **event)
{
    EventHandleBytes h;
    std::memcpy(&h, handle, sizeof h);
    if (std::memcmp(h.magic, k_event_magic, sizeof h.magic) != 0 || h.check != handle_check(h.pid, h.id))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the bytes at %p are no event handle of the host backend; pass what "
                    "gpumem_ipc_get_event_handle gave in the other process",
                    static_cast<const void *>(handle));
    if (h.pid == static_cast<uint64_t>(getpid()))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the event handle was made in this process, which opens no handle of its own (as CUDA "
                    "refuses it): use the event itself here, and open the handle in another process");
    if (kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the event handle names process %llu, which has exited: its events are gone",
                    static_cast<unsigned long long>(h.pid));
    HostEvent *e = new (std::nothrow) HostEvent;
    if (!e)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot open an event: out of host memory");
    e->device = device;
    e->flags = GPUMEM_EVENT_DISABLE_TIMING | GPUMEM_EVENT_INTERPROCESS;
    e->opened = true;
    *event = e;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::launch_host_func(int32_t, void *stream, void (*fn)(void *), void *user)
{
    if (strict_) {
        try {
            strict_->work.host_fn(stream, nonblocking(stream), fn, user);
        } catch (const std::bad_alloc &) {
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot enqueue a host function: out of host memory");
        }
        return GPUMEM_SUCCESS;
    }
    run_host_fn(fn, user); // the stream's earlier work is done: it ran when enqueued
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_destroy(int32_t, void *event)
{
    delete static_cast<HostEvent *>(event);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_record(int32_t, void *event, void *stream)
{
    HostEvent *e = static_cast<HostEvent *>(event);
    // Another process may wait for an interprocess event: the work before it
    // runs now, as a GPU would run it without this process waiting.
    if (strict_ && (e->flags & GPUMEM_EVENT_INTERPROCESS))
        run_stream_work(stream);
    // The work before it has already run (strict: it runs when the event is
    // waited for): the event completes now.
    e->recorded_ns.store(monotonic_ns(), std::memory_order_release);
    if (strict_) {
        std::lock_guard<std::mutex> lock(e->mark_mutex);
        e->marked = true;
        e->stream = stream;
        e->work_mark = strict_->work.mark();
    }
    return GPUMEM_SUCCESS;
}

void HostBackend::run_event_work(void *event)
{
    if (!strict_)
        return;
    HostEvent *e = static_cast<HostEvent *>(event);
    void *stream;
    uint64_t mark;
    {
        std::lock_guard<std::mutex> lock(e->mark_mutex);
        if (!e->marked)
            return; // never recorded: complete, as on a GPU
        stream = e->stream;
        mark = e->work_mark;
    }
    strict_->work.run_stream(stream, nonblocking(stream), mark);
}

status_t HostBackend::event_synchronize(int32_t, void *event)
{
    run_event_work(event);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_query(int32_t, void *event)
{
    run_event_work(event);
    return GPUMEM_SUCCESS;
}

// Strict mode runs the awaited work now rather than ordering the waiter
// after it: the same result, and the program did wait.
status_t HostBackend::stream_wait_event(int32_t, void *, void *event)
{
    run_event_work(event);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::event_elapsed_ms(int32_t, float *ms, void *start, void *end)
{
    int64_t t0 = static_cast<HostEvent *>(start)->recorded_ns.load(std::memory_order_acquire);
    int64_t t1 = static_cast<HostEvent *>(end)->recorded_ns.load(std::memory_order_acquire);
    if (t0 < 0 || t1 < 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot time events: the %s event was never recorded; record both events first",
                    t0 < 0 ? "start" : "end");
    *ms = static_cast<float>(static_cast<double>(t1 - t0) / 1e6);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::device_synchronize(int32_t)
{
    run_all_work();
    return GPUMEM_SUCCESS;
}

// --- Copies and fills (synchronous: the stream's earlier work is done) ------
//
// Strict mode: device memory is reached through its alias; async work waits
// in the queue; a synchronous copy or fill first runs the work it is ordered
// after (on the default stream: all of it).

status_t HostBackend::copy(int32_t, void *dst, const void *src, size_t n, void *stream, CopyMode mode)
{
    if (strict_) {
        if (status_t st = strict_->views.accessible(dst, n, "destination", &dst))
            return st;
        void *from = nullptr;
        if (status_t st = strict_->views.accessible(src, n, "source", &from))
            return st;
        src = from;
        if (mode == CopyMode::async) {
            strict_->work.copy(stream, nonblocking(stream), dst, src, n);
            return GPUMEM_SUCCESS;
        }
        run_stream_work(stream);
    }
    if (n != 0 && dst != src)
        std::memmove(dst, src, n);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::copy_peer(int32_t dst_device, void *, int32_t src_device, const void *, size_t, void *, bool)
{
    return fail(GPUMEM_ERROR_INVALID_DEVICE, "the host backend has one device; no copy runs from device %d to %d",
                src_device, dst_device);
}

status_t HostBackend::fill(int32_t, void *dst, int32_t value, size_t n, void *stream, bool async)
{
    const unsigned char byte = static_cast<unsigned char>(value);
    if (strict_) {
        if (status_t st = strict_->views.accessible(dst, n, "destination", &dst))
            return st;
        if (async) {
            strict_->work.fill(stream, nonblocking(stream), dst, byte, n);
            return GPUMEM_SUCCESS;
        }
        run_stream_work(stream);
    }
    if (n != 0)
        std::memset(dst, byte, n);
    return GPUMEM_SUCCESS;
}

// --- Rows and boxes: one memmove or fill per row, in stream order ------------

status_t HostBackend::alloc_pitch(int32_t device, size_t width, size_t height, void **ptr, size_t *pitch)
{
    size_t p = 0;
    if (!round_up(width, k_pitch_alignment, &p) || height > SIZE_MAX / p)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu rows of %zu bytes: the size overflows; allocate less", height, width);
    if (status_t st = device_alloc(device, p * height, ptr))
        return st;
    *pitch = p;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::copy_rows(int32_t device, const RowsCopy &c, void *stream, CopyMode mode)
{
    for (size_t z = 0; z < c.depth; ++z)
        for (size_t y = 0; y < c.height; ++y) {
            char *dst = static_cast<char *>(c.dst) + (z * c.dst_rows + y) * c.dst_pitch;
            const char *src = static_cast<const char *>(c.src) + (z * c.src_rows + y) * c.src_pitch;
            if (status_t st = copy(device, dst, src, c.width, stream, mode == CopyMode::async ? mode : CopyMode::sync))
                return st;
        }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::fill_rows(int32_t device, void *dst, size_t pitch, unsigned char byte, size_t width,
                                size_t height, void *stream, bool async)
{
    for (size_t y = 0; y < height; ++y)
        if (status_t st = fill(device, static_cast<char *>(dst) + y * pitch, byte, width, stream, async))
            return st;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::fill_elements(int32_t, void *dst, uint32_t value, unsigned size, size_t count, void *stream,
                                    bool async)
{
    if (strict_) {
        if (status_t st = strict_->views.accessible(dst, count * size, "destination", &dst))
            return st;
        if (async) {
            strict_->work.fill_elements(stream, nonblocking(stream), dst, value, size, count);
            return GPUMEM_SUCCESS;
        }
        run_stream_work(stream);
    }
    fill_pattern(dst, value, size, count);
    return GPUMEM_SUCCESS;
}

} // namespace host

status_t make_host_backend(bool strict, std::unique_ptr<Backend> *out)
{
    try {
        *out = std::make_unique<host::HostBackend>(strict);
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot start the host backend: out of host memory");
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "cannot start the host backend: unexpected failure");
    }
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
