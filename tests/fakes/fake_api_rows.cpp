// Both fakes (compiled once per vendor; see fake_api.hpp): what programs that move onto gpumem
// use besides memory (streams with priorities, host functions, events shared between processes)
// and rows and boxes (pitched allocations, 2-D and 3-D copies, fills of rows and of 16- and
// 32-bit elements).
//
// Design note: what the fake chose, and why.  Each choice is a question of cuda_probe group
// `rows` (probe/h100-rows.txt, the fake's predicted answers until the driver is asked):
// - Priorities are clamped to the device's range (CUDA's documentation says so); the range is
//   an H100's [0, -5] (HIP: [0, -1], not asked of an AMD GPU).  cuStreamGetPriority answers the
//   clamped value; cuStreamGetFlags the flags given.
// - A host function is stream work that calls fn(userData) when it runs: at once, or with
//   <prefix>DEFER=1 when the host waits for the stream.  It runs as a user-object destructor
//   does (tl_in_callback): a call of the runtime from it aborts the process (illegal on a real
//   driver, which runs it on its own thread).  On a capturing stream it is a host node, run at
//   each launch.  A NULL function is INVALID_VALUE.
// - Events shared between processes keep their records in a memfd both processes map, named by
//   the handle (pid and descriptor, opened through /proc): a record adds one to `recorded`, and
//   sets `completed` when it runs; a query, a synchronisation or a wait compares the two.  With
//   <prefix>DEFER=1 a record of such an event runs its stream's work at once, since another
//   process may wait for it, as a GPU would not wait for this process.  The handle of an event
//   made without INTERPROCESS is INVALID_HANDLE (ROCm's test expects hipErrorInvalidResourceHandle,
//   CUDA's number for it); opening a handle in the process that made it is INVALID_CONTEXT (what
//   CUDA 10 answered in ROCm's test of it).
// - Pitched allocations round the width up to 512 bytes (what NVIDIA GPUs give); CUDA's element
//   size must be 4, 8 or 16; a width or height of 0 is INVALID_VALUE (HIP: success with NULL,
//   as hipMalloc(0)).
// - A 2-D or 3-D copy checks every row as cuMemcpyAsync checks its range; a pitch below the
//   width (plus the x offset) is INVALID_VALUE whatever the height, and a slice height below
//   the rows (plus the y offset) too where there is more than one slice.  Rows of pageable
//   memory are copied (staged) as cuMemcpyAsync copies them.  A fill of rows or elements checks
//   each row as cuMemsetD8Async does; a destination not aligned to the element is INVALID_VALUE.
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>

using namespace FAKE_NS;

IpcEvent::~IpcEvent()
{
    if (shared)
        munmap(shared, kPage);
    if (fd >= 0)
        close(fd);
}

namespace {

constexpr char kIpcMagic[8] = {'f', 'a', 'k', 'e', 'i', 'p', 'c', 'e'};

// The 64 bytes of a handle: the exporting process, its descriptor of the memfd, the event's uid.
struct IpcHandleBytes {
    char magic[8];
    int64_t pid;
    int64_t fd;
    uint64_t uid;
    char unused[32];
};
static_assert(sizeof(IpcHandleBytes) == 64, "an IPC event handle is 64 bytes");

uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// The device a copy on `st` acts for (as cuMemcpyAsync: the current context's, else the stream's).
int copy_device_locked(const Stream &st)
{
    int dev = -1;
    return current_device_locked(&dev) == kOk ? dev : st.device;
}

bool find_event(EventH h, Event **out)
{
    auto it = state().events.find(reinterpret_cast<uint64_t>(h));
    if (it == state().events.end())
        return false;
    *out = it->second.get();
    return true;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Streams with priorities
// ---------------------------------------------------------------------------------------------
FAKE_API fake_stream_create_priority(const char *name, StreamH *phStream, unsigned int flags, int priority)
{
    FAKE_ENTER(name, "flags=%u, priority=%d", flags, priority);
    if (phStream == nullptr)
        FAIL(kErrInvalidValue, "phStream is NULL");
    if (flags & ~(unsigned)kStreamNonBlocking)
        FAIL(kErrInvalidValue, "unknown flags");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    Stream &st = make_stream_locked(dev, flags, false);
    st.priority = std::min(kPriorityLeast, std::max(kPriorityGreatest, priority)); // clamped to the range
    *phStream = reinterpret_cast<StreamH>(st.id);
    OUT("*phStream=%p, priority %d", (void *)*phStream, st.priority);
    RET(kOk);
}

FAKE_API fake_stream_get_priority(const char *name, StreamH hStream, int *priority)
{
    FAKE_ENTER(name, "hStream=%p", (void *)hStream);
    if (priority == nullptr)
        FAIL(kErrInvalidValue, "priority is NULL");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    *priority = st->priority;
    OUT("*priority=%d", *priority);
    RET(kOk);
}

FAKE_API fake_stream_get_flags(const char *name, StreamH hStream, unsigned int *flags)
{
    FAKE_ENTER(name, "hStream=%p", (void *)hStream);
    if (flags == nullptr)
        FAIL(kErrInvalidValue, "flags is NULL");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    *flags = st->flags;
    OUT("*flags=%u", *flags);
    RET(kOk);
}

FAKE_API fake_priority_range(const char *name, int *least, int *greatest)
{
    FAKE_ENTER(name, "%s", "");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    if (least)
        *least = kPriorityLeast;
    if (greatest)
        *greatest = kPriorityGreatest;
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// Host functions
// ---------------------------------------------------------------------------------------------
// fn(user) as stream work: as a runtime callback, which must not call the runtime.
void FAKE_NS::run_host_node(void (*fn)(void *), void *user)
{
    struct Mark {
        Mark() { set_in_runtime_callback(true); }
        ~Mark() { set_in_runtime_callback(false); }
    } mark;
    fn(user);
}

FAKE_API fake_launch_host_func(const char *name, StreamH hStream, HostFnT fn, void *userData)
{
    FAKE_ENTER(name, "hStream=%p, fn=%p, userData=%p", (void *)hStream, reinterpret_cast<void *>(fn), userData);
    if (fn == nullptr)
        FAIL(kErrInvalidValue, "fn is NULL");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, *st, &cap))
        return r;
    void (*f)(void *) = fn;
    if (cap) {
        GraphNode &node = capture_node_locked(*st, NodeKind::Host);
        node.fn = f;
        node.user = userData;
        OUT("a host node of capture %llu", (unsigned long long)cap->id);
        RET(kOk);
    }
    enqueue_locked(*st, [f, userData] { run_host_node(f, userData); });
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// Events shared between processes
// ---------------------------------------------------------------------------------------------
FAKE_API fake_ipc_get_event_handle(const char *name, void *handle64, EventH hEvent)
{
    FAKE_ENTER(name, "hEvent=%p", (void *)hEvent);
    if (handle64 == nullptr)
        FAIL(kErrInvalidValue, "the handle is NULL");
    // The driver asks for a current context even though the event names its own
    // (cuda_probe rows: ipc_handle_no_context).
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    Event *ev = nullptr;
    if (!find_event(hEvent, &ev))
        FAIL(kErrInvalidHandle, "not a live event");
    if (!(ev->flags & kEventInterprocess))
        FAIL(kErrInvalidHandle, "the event was made without " FAKE_N_EVENT_INTERPROCESS);
    if (ev->ipc && ev->ipc->opened)
        FAIL(kErrInvalidHandle, "the event was opened from another process's handle");
    if (!ev->ipc) {
        auto ipc = std::make_shared<IpcEvent>();
        ipc->fd = memfd_create("fake-ipc-event", MFD_CLOEXEC);
        if (ipc->fd < 0 || ftruncate(ipc->fd, (off_t)kPage) != 0)
            FAIL(kErrOperatingSystem, "memfd_create: %s", strerror(errno));
        void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, ipc->fd, 0);
        if (p == MAP_FAILED)
            FAIL(kErrOperatingSystem, "mmap: %s", strerror(errno));
        ipc->shared = static_cast<IpcEventShared *>(p);
        ipc->uid = random_uid();
        memcpy(ipc->shared->magic, kIpcMagic, sizeof kIpcMagic);
        ipc->shared->uid = ipc->uid;
        // A record made before the first handle counts as done once it ran.
        const uint64_t earlier = ev->recorded && !ev->completed ? 1 : 0;
        __atomic_store_n(&ipc->shared->recorded, earlier, __ATOMIC_RELEASE);
        __atomic_store_n(&ipc->shared->completed, 0, __ATOMIC_RELEASE);
        if (earlier) {
            auto it = state().streams.find(ev->stream);
            if (it != state().streams.end())
                run_stream_locked(*it->second, ev->seq);
            __atomic_store_n(&ipc->shared->completed, 1, __ATOMIC_RELEASE);
        }
        ev->ipc = std::move(ipc);
    }
    IpcHandleBytes h{};
    memcpy(h.magic, kIpcMagic, sizeof kIpcMagic);
    h.pid = getpid();
    h.fd = ev->ipc->fd;
    h.uid = ev->ipc->uid;
    memcpy(handle64, &h, sizeof h);
    RET(kOk);
}

FAKE_API fake_ipc_open_event_handle(const char *name, EventH *phEvent, const void *handle64)
{
    FAKE_ENTER(name, "%s", "");
    if (phEvent == nullptr || handle64 == nullptr)
        FAIL(kErrInvalidValue, "phEvent or the handle is NULL");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    IpcHandleBytes h;
    memcpy(&h, handle64, sizeof h);
    if (memcmp(h.magic, kIpcMagic, sizeof kIpcMagic) != 0)
        FAIL(kErrInvalidValue, "not an event handle of this fake");
    if (h.pid == getpid())
        FAIL(kErrInvalidContext, "the handle was made in this process (CUDA answers INVALID_CONTEXT)");
    char path[64];
    snprintf(path, sizeof path, "/proc/%lld/fd/%lld", (long long)h.pid, (long long)h.fd);
    auto ipc = std::make_shared<IpcEvent>();
    ipc->fd = open(path, O_RDWR | O_CLOEXEC);
    if (ipc->fd < 0)
        FAIL(kErrInvalidValue, "%s: %s (the exporting process is gone?)", path, strerror(errno));
    void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, ipc->fd, 0);
    if (p == MAP_FAILED)
        FAIL(kErrInvalidValue, "mmap of %s: %s", path, strerror(errno));
    ipc->shared = static_cast<IpcEventShared *>(p);
    if (memcmp(ipc->shared->magic, kIpcMagic, sizeof kIpcMagic) != 0 || ipc->shared->uid != h.uid)
        FAIL(kErrInvalidValue, "%s is not the event the handle names", path);
    ipc->uid = h.uid;
    ipc->opened = true;
    std::unique_ptr<Event> ev(new Event);
    ev->id = new_handle(kEventTag);
    ev->device = dev;
    ev->flags = kEventInterprocess | kEventDisableTiming;
    ev->ipc = std::move(ipc);
    *phEvent = reinterpret_cast<EventH>(ev->id);
    state().events[ev->id] = std::move(ev);
    OUT("*phEvent=%p", (void *)*phEvent);
    RET(kOk);
}

// The hooks fake_api_streams.cpp calls for an event with shared state.
void FAKE_NS::ipc_event_recorded_locked(Event &ev, Stream &st)
{
    IpcEventShared *sh = ev.ipc->shared;
    const uint64_t seq = __atomic_add_fetch(&sh->recorded, 1, __ATOMIC_ACQ_REL);
    std::shared_ptr<IpcEvent> keep = ev.ipc;
    enqueue_locked(st, [keep, seq] {
        uint64_t done = load(&keep->shared->completed);
        while (done < seq &&
               !__atomic_compare_exchange_n(&keep->shared->completed, &done, seq, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
        }
    });
    // Another process may be waiting: a GPU would run this without the host waiting.
    run_stream_locked(st, st.seq);
}

bool FAKE_NS::ipc_event_done(const Event &ev) { return load(&ev.ipc->shared->completed) >= load(&ev.ipc->shared->recorded); }

void FAKE_NS::ipc_event_wait(const Event &ev)
{
    const uint64_t target = load(&ev.ipc->shared->recorded);
    while (load(&ev.ipc->shared->completed) < target) {
        struct timespec ms{0, 1000000};
        nanosleep(&ms, nullptr);
    }
}

void FAKE_NS::ipc_event_waited_locked(Event &ev, Stream &st)
{
    std::shared_ptr<IpcEvent> keep = ev.ipc;
    const uint64_t target = load(&keep->shared->recorded);
    enqueue_locked(st, [keep, target] {
        while (load(&keep->shared->completed) < target) {
            struct timespec ms{0, 1000000};
            nanosleep(&ms, nullptr);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Pitched allocations
// ---------------------------------------------------------------------------------------------
FAKE_API fake_malloc_pitch(const char *name, DevPtr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem)
{
    {
        FAKE_ENTER(name, "width=%zu, height=%zu, elem=%u", width, height, elem);
        if (dptr == nullptr || pitch == nullptr)
            FAIL(kErrInvalidValue, "dptr or pitch is NULL");
        if (elem != 0 && elem != 4 && elem != 8 && elem != 16)
            FAIL(kErrInvalidValue, "ElementSizeBytes must be 4, 8 or 16");
        if (width == 0 || height == 0) {
            if (kZeroAllocIsNull) {
                *dptr = 0;
                *pitch = 0;
                RET(kOk);
            }
            FAIL(kErrInvalidValue, "a width or height of 0");
        }
    }
    uint64_t p = 0, bytes = 0;
    if (!round_up(width, kPitchAlignment, &p) || __builtin_mul_overflow(p, (uint64_t)height, &bytes))
        return kErrOutOfMemory;
    Result r = fake_cuMemAlloc(dptr, (size_t)bytes);
    if (r == kOk)
        *pitch = (size_t)p;
    return r;
}

// ---------------------------------------------------------------------------------------------
// Copies and fills of rows
// ---------------------------------------------------------------------------------------------
FAKE_API fake_memcpy_rows(const char *name, DevPtr dst, DevPtr src, size_t width, const RowsGeom &g, StreamH hStream)
{
    FAKE_ENTER(name, "dst=0x%llx, src=0x%llx, width=%zu, height=%llu, depth=%llu, dpitch=%llu, spitch=%llu, hStream=%p",
               (unsigned long long)dst, (unsigned long long)src, width, (unsigned long long)g.height,
               (unsigned long long)g.depth, (unsigned long long)g.dst_pitch, (unsigned long long)g.src_pitch,
               (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    if (width == 0 || g.height == 0 || g.depth == 0)
        RET(kOk);
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, *st, &cap))
        return r;
    const int dev = copy_device_locked(*st);
    std::function<void()> run;
    bool pageable = false;
    std::string why;
    {
        GraphScope scope(cap ? &cap->graph->nodes : nullptr);
        if (Result r = prepare_rows_copy_locked(dst, dev, src, dev, width, g, &run, &pageable, &why))
            FAIL(r, "%s", why.c_str());
    }
    if (cap) {
        GraphNode &node = capture_node_locked(*st, NodeKind::Copy);
        node.dst = dst;
        node.src = src;
        node.size = width;
        node.rows = g;
        node.dst_dev = node.src_dev = dev;
        OUT("a copy node of capture %llu", (unsigned long long)cap->id);
        RET(kOk);
    }
    enqueue_locked(*st, std::move(run));
    if (pageable)
        run_stream_locked(*st, st->seq); // staged, as cuMemcpyAsync stages pageable memory
    RET(kOk);
}

FAKE_API fake_memset_rows(const char *name, DevPtr dst, uint32_t value, size_t count, const RowsGeom &g,
                          StreamH hStream)
{
    FAKE_ENTER(name, "dst=0x%llx, value=0x%x, count=%zu, elem=%u, height=%llu, pitch=%llu, hStream=%p",
               (unsigned long long)dst, value, count, g.elem, (unsigned long long)g.height,
               (unsigned long long)g.dst_pitch, (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    if (dst % g.elem != 0)
        FAIL(kErrInvalidValue, "0x%llx is not aligned to the %u-byte element", (unsigned long long)dst, g.elem);
    if (g.height > 1 && g.dst_pitch % g.elem != 0)
        FAIL(kErrInvalidValue, "the pitch %llu is not a multiple of the %u-byte element",
             (unsigned long long)g.dst_pitch, g.elem);
    if (count == 0 || g.height == 0)
        RET(kOk);
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, *st, &cap))
        return r;
    uint64_t width = 0;
    if (__builtin_mul_overflow((uint64_t)count, (uint64_t)g.elem, &width))
        FAIL(kErrInvalidValue, "the row wraps around");
    std::function<void()> run;
    bool pageable = false;
    std::string why;
    {
        GraphScope scope(cap ? &cap->graph->nodes : nullptr);
        if (Result r = prepare_rows_fill_locked(dst, (size_t)width, g, value, st->device, &run, &pageable, &why))
            FAIL(r, "%s", why.c_str());
    }
    if (cap) {
        GraphNode &node = capture_node_locked(*st, NodeKind::Fill);
        node.dst = dst;
        node.value = value;
        node.size = width;
        node.rows = g;
        node.dst_dev = st->device;
        OUT("a fill node of capture %llu", (unsigned long long)cap->id);
        RET(kOk);
    }
    enqueue_locked(*st, std::move(run));
    if (pageable)
        run_stream_locked(*st, st->seq);
    RET(kOk);
}
