// Both fakes: configuration and engine hooks, tracing, error names, and streams and events (compiled once per vendor; see
// fake_api.hpp).  Stream ordering, deferred execution and synchronisation are the engine's.
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace FAKE_NS {

const Config &config()
{
    static const Config c = read_config();
    return c;
}

} // namespace FAKE_NS

// The engine's hooks.
const fakegpu::EngineConfig &fakegpu::engine_config() { return FAKE_NS::config(); }

fakegpu::State &fakegpu::state()
{
    static State *s = new State; // never destroyed: no teardown races at exit
    return *s;
}

namespace FAKE_NS {

// ---------------------------------------------------------------------------------------------
// Tracing
// ---------------------------------------------------------------------------------------------
static void vappend(std::string *s, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (!s->empty())
        *s += ", ";
    *s += buf;
}

void Call::args(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(&args_, fmt, ap);
    va_end(ap);
}

void Call::out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(&out_, fmt, ap);
    va_end(ap);
}

namespace {
std::atomic<bool> g_any_fault{false}; // the common case costs one load
} // namespace

Result sticky_fault(const char *name)
{
    if (!g_any_fault.load(std::memory_order_acquire))
        return kOk;
    // What answers as usual in a faulted context: device and context bookkeeping, and
    // what the driver knows of a pointer.
    static const char *const k_spared_prefixes[] = {
        "cuDevicePrimaryCtx", "cuCtxSetCurrent", "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGet", "cuPointerGet",
        "cuDriverGetVersion", "hipSetDevice", "hipGetDevice", "hipDeviceGetAttribute", "hipDeviceGetUuid",
        "hipDriverGetVersion", "hipRuntimeGetVersion",
    };
    for (const char *p : k_spared_prefixes)
        if (std::strncmp(name, p, std::strlen(p)) == 0)
            return kOk;
    const int dev = thread_device();
    std::lock_guard<std::mutex> lock(state().mu);
    if (dev < 0 || static_cast<size_t>(dev) >= state().devices.size() || !state().devices[(size_t)dev].faulted)
        return kOk;
    return kErrIllegalAddress;
}

void device_fault()
{
    const int dev = thread_device();
    std::lock_guard<std::mutex> lock(state().mu);
    if (dev < 0 || static_cast<size_t>(dev) >= state().devices.size())
        return;
    state().devices[(size_t)dev].faulted = true;
    g_any_fault.store(true, std::memory_order_release);
}

Result Call::done(Result r)
{
    if (config().trace) {
        fprintf(stderr, "%s[%d]: %s(%s) -> %s%s%s%s%s\n", config().name, (int)getpid(), name_, args_.c_str(), error_name(r),
                out_.empty() ? "" : " ", out_.c_str(), why_.empty() ? "" : ": ", why_.c_str());
    }
    return r;
}

Result Call::fail(Result r, const char *fmt, ...)
{
    if (config().trace) {
        va_list ap;
        va_start(ap, fmt);
        vappend(&why_, fmt, ap);
        va_end(ap);
    }
    return done(r);
}


// ---------------------------------------------------------------------------------------------
// Error names and strings (fake_errors.def: one table, this vendor's column)
// ---------------------------------------------------------------------------------------------
#if defined(FAKE_VENDOR_CUDA)
#define FAKE_ERROR(cuda, hip, text) FAKE_ERROR_ENTRY(cuda, text)
#define FAKE_ERROR_CUDA(code, text) FAKE_ERROR_ENTRY(code, text)
#define FAKE_ERROR_HIP(code, text)
#else
#define FAKE_ERROR(cuda, hip, text) FAKE_ERROR_ENTRY(hip, text)
#define FAKE_ERROR_CUDA(code, text)
#define FAKE_ERROR_HIP(code, text) FAKE_ERROR_ENTRY(code, text)
#endif
const ErrorText k_errors[] = {
#include "fake_errors.def"
};
const size_t k_error_count = sizeof k_errors / sizeof k_errors[0];
#undef FAKE_ERROR
#undef FAKE_ERROR_CUDA
#undef FAKE_ERROR_HIP

const ErrorText *find_error(Result r)
{
    for (size_t i = 0; i < k_error_count; ++i)
        if (k_errors[i].code == r)
            return &k_errors[i];
    return nullptr;
}

const char *error_name(Result r)
{
    const ErrorText *e = find_error(r);
    if (e)
        return e->name;
    // Initial-exec, as every thread_local of the fakes: a dlopen'd library's general-dynamic
    // TLS is malloc'd per thread by __tls_get_addr, and GCC 12's TSan reads the 16 bytes
    // before a block at 16 mod 4096 as a {size, start} header: another allocation's data,
    // whose bogus range it then clears ("ThreadSanitizer failed to allocate" at best).
    __attribute__((tls_model("initial-exec"))) static thread_local char buf[32];
    snprintf(buf, sizeof buf, FAKE_ERROR_FALLBACK, (int)r);
    return buf;
}

// ---------------------------------------------------------------------------------------------
// Stream handles
// ---------------------------------------------------------------------------------------------
Stream &make_stream_locked(int dev, unsigned flags, bool legacy)
{
    State &s = state();
    uint64_t id = new_handle(kStreamTag);
    std::unique_ptr<Stream> st(new Stream);
    st->id = id;
    st->device = dev;
    st->flags = flags;
    st->legacy = legacy;
    Stream &ref = *st;
    s.streams[id] = std::move(st);
    return ref;
}

Result find_stream_locked(StreamH h, Stream **out)
{
    State &s = state();
    if (is_default_stream(h)) {
        int dev = -1;
        if (Result r = current_device_locked(&dev))
            return r;
        *out = s.streams.at(s.devices[(size_t)dev].legacy_stream).get();
        return kOk;
    }
    auto it = s.streams.find(reinterpret_cast<uint64_t>(h));
    if (it == s.streams.end() || it->second->legacy)
        return kErrInvalidHandle;
    *out = it->second.get();
    return kOk;
}

} // namespace FAKE_NS

// ---------------------------------------------------------------------------------------------
// Devices (the vendor names them: k_device_name)
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuDeviceGet(int *device, int ordinal)
{
    FAKE_ENTER(API("DeviceGet"), "ordinal=%d", ordinal);
    if (device == nullptr)
        FAIL(kErrInvalidValue, "device is NULL");
    if (!valid_device(ordinal))
        FAIL(kErrInvalidDevice, "no device %d", ordinal);
    *device = ordinal;
    RET(kOk);
}

FAKE_API fake_cuDeviceCanAccessPeer(int *canAccessPeer, int dev, int peerDev)
{
    FAKE_ENTER(API("DeviceCanAccessPeer"), "dev=%d, peerDev=%d", dev, peerDev);
    if (canAccessPeer == nullptr)
        FAIL(kErrInvalidValue, "canAccessPeer is NULL");
    if (!valid_device(dev) || !valid_device(peerDev))
        FAIL(kErrInvalidDevice, "no device %d", valid_device(dev) ? peerDev : dev);
    *canAccessPeer = dev != peerDev; // every pair of fake devices is connected
    OUT("*canAccessPeer=%d", *canAccessPeer);
    RET(kOk);
}

FAKE_API fake_peer_enable(const char *name, int peer, unsigned int flags)
{
    FAKE_ENTER(name, "peer=%d, flags=%u", peer, flags);
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    if (flags != 0)
        FAIL(kErrInvalidValue, "flags must be 0");
    if (!valid_device(peer) || peer == dev)
        FAIL(kErrInvalidDevice, "peer %d is not another device", peer);
    if (!state().peers.insert({dev, peer}).second)
        FAIL(kErrPeerAccessAlreadyEnabled, "device %d already reaches device %d", dev, peer);
    OUT("device %d reaches device %d", dev, peer);
    RET(kOk);
}

FAKE_API fake_peer_disable(const char *name, int peer)
{
    FAKE_ENTER(name, "peer=%d", peer);
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    if (!valid_device(peer) || peer == dev)
        FAIL(kErrInvalidDevice, "peer %d is not another device", peer);
    if (state().peers.erase({dev, peer}) == 0)
        FAIL(kErrPeerAccessNotEnabled, "device %d does not reach device %d", dev, peer);
    RET(kOk);
}

FAKE_API fake_cuDeviceGetName(char *name, int len, int dev)
{
    FAKE_ENTER(API("DeviceGetName"), "len=%d, dev=%d", len, (int)dev);
    if (name == nullptr || len <= 0)
        FAIL(kErrInvalidValue, "name is NULL or len <= 0");
    if (!valid_device(dev))
        FAIL(kErrInvalidDevice, "no device %d", (int)dev);
    snprintf(name, (size_t)len, "%s", k_device_name);
    RET(kOk);
}

// Each device on a bus of its own in PCI domain 0 (0x1b, 0x2b, ...), as the GPUs of an
// eight-GPU server are, written as the vendor writes it and cut to `len` bytes as snprintf
// cuts (predicted: probe/h100-foreign.txt).  No sysfs device stands behind the address.
FAKE_API fake_cuDeviceGetPCIBusId(char *pciBusId, int len, int dev)
{
    FAKE_ENTER(API("DeviceGetPCIBusId"), "len=%d, dev=%d", len, (int)dev);
    if (pciBusId == nullptr || len <= 0)
        FAIL(kErrInvalidValue, "pciBusId is NULL or len <= 0");
    if (!valid_device(dev))
        FAIL(kErrInvalidDevice, "no device %d", (int)dev);
    // A buffer too short for the whole id is refused, not filled with a cut-off id
    // (cuda_probe foreign: pci_bus_id_short).
    char id[32];
    const int n = snprintf(id, sizeof id, k_pci_bus_id_format, 0, 0x1b + 0x10 * dev, 0);
    if (n < 0 || n >= len) {
        pciBusId[0] = '\0'; // the driver leaves a terminated buffer (pci_bus_id_short_terminated)
        FAIL(kErrInvalidValue, "len %d is too short for the bus id (%d bytes and a NUL)", len, n);
    }
    memcpy(pciBusId, id, (size_t)n + 1);
    OUT("pciBusId=%s", pciBusId);
    RET(kOk);
}

FAKE_API fake_cuDeviceTotalMem(size_t *bytes, int dev)
{
    FAKE_ENTER(API("DeviceTotalMem"), "dev=%d", (int)dev);
    if (bytes == nullptr)
        FAIL(kErrInvalidValue, "bytes is NULL");
    if (!valid_device(dev))
        FAIL(kErrInvalidDevice, "no device %d", (int)dev);
    *bytes = config().memory;
    RET(kOk);
}

FAKE_API fake_cuCtxSynchronize(void)
{
    FAKE_ENTER(FAKE_SYNC_NAME, "%s", "");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, FAKE_NO_CURRENT);
    if (Result r = device_sync_gate_locked(call_, dev))
        return r;
    device_synced_locked(dev);
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuStreamCreate(StreamH *phStream, unsigned int Flags)
{
    FAKE_ENTER(API("StreamCreate"), "Flags=%u", Flags);
    if (phStream == nullptr)
        FAIL(kErrInvalidValue, "phStream is NULL");
    if (Flags & ~(unsigned)kStreamNonBlocking)
        FAIL(kErrInvalidValue, "unknown flags");
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    *phStream = reinterpret_cast<StreamH>(make_stream_locked(dev, Flags, false).id);
    OUT("*phStream=%p", (void *)*phStream);
    RET(kOk);
}

FAKE_API fake_cuStreamDestroy(StreamH hStream)
{
    FAKE_ENTER(API("StreamDestroy"), "hStream=%p", (void *)hStream);
    if (is_default_stream(hStream))
        FAIL(kErrInvalidHandle, "the default stream cannot be destroyed");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    // Its work completes (at once here), but the host has not waited for it: frees on it
    // count as synchronised at the next synchronisation of anything.  A capture it takes part in
    // ends with it (its origin) or is invalidated (a stream that joined).
    stream_leaves_capture_locked(*st);
    run_stream_locked(*st, st->seq);
    state().streams.erase(st->id);
    RET(kOk);
}

// The device of a stream (the current one's NULL stream for a default-stream handle): behind
// cuStreamGetCtx (which answers its context) and hipStreamGetDevice.
FAKE_API fake_stream_device(const char *name, StreamH hStream, int *device)
{
    FAKE_ENTER(name, "hStream=%p", (void *)hStream);
    if (device == nullptr)
        FAIL(kErrInvalidValue, "the output pointer is NULL");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    *device = st->device;
    OUT("device %d", st->device);
    RET(kOk);
}

FAKE_API fake_cuStreamSynchronize(StreamH hStream)
{
    FAKE_ENTER(API("StreamSynchronize"), "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (Result r = stream_host_wait_gate_locked(call_, *st))
        return r;
    stream_synced_locked(*st, st->seq);
    RET(kOk);
}

FAKE_API fake_cuStreamQuery(StreamH hStream)
{
    FAKE_ENTER(API("StreamQuery"), "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (Result r = stream_host_wait_gate_locked(call_, *st))
        return r;
    if (!st->pending.empty()) {
        run_stream_locked(*st, st->seq); // busy now; done by the next look
        FAIL(kErrNotReady, "work was pending (" FAKE_ENV "DEFER)");
    }
    RET(kOk);
}

static Result find_event_locked(EventH h, Event **out) // (fake_api_graphs.cpp has its own)
{
    auto it = state().events.find(reinterpret_cast<uint64_t>(h));
    if (it == state().events.end())
        return kErrInvalidHandle;
    *out = it->second.get();
    return kOk;
}

FAKE_API fake_cuStreamWaitEvent(StreamH hStream, EventH hEvent, unsigned int Flags)
{
    FAKE_ENTER(API("StreamWaitEvent"), "hStream=%p, hEvent=%p, Flags=%u", (void *)hStream, (void *)hEvent, Flags);
    Stream *st = nullptr;
    Event *ev = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (Result r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (Flags & ~kEventWaitFlags)
        FAIL(kErrInvalidValue, "unknown flags");
    bool handled = false;
    Result captured = capture_wait_event_locked(call_, *st, *ev, Flags, &handled);
    if (handled || captured != kOk)
        return captured;
    if (ev->ipc) { // an event shared between processes: its records may be another process's
        ipc_event_waited_locked(*ev, *st);
        RET(kOk);
    }
    std::vector<Dep> deps;
    if (ev->recorded && ev->stream != st->id) {
        st->waited[ev->stream] = std::max(st->waited[ev->stream], ev->seq);
        deps.emplace_back(ev->stream, ev->seq);
    }
    enqueue_locked(*st, nullptr, std::move(deps));
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuEventCreate(EventH *phEvent, unsigned int Flags)
{
    FAKE_ENTER(API("EventCreate"), "Flags=%u", Flags);
    if (phEvent == nullptr)
        FAIL(kErrInvalidValue, "phEvent is NULL");
    if (Flags & ~(unsigned)(kEventBlockingSync | kEventDisableTiming | kEventInterprocess))
        FAIL(kErrInvalidValue, "unknown flags");
    if ((Flags & kEventInterprocess) && !(Flags & kEventDisableTiming))
        FAIL(kErrInvalidValue, FAKE_N_EVENT_INTERPROCESS " needs " FAKE_N_EVENT_DISABLE_TIMING);
    int dev = -1;
    if (Result r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    std::unique_ptr<Event> ev(new Event);
    ev->id = new_handle(kEventTag);
    ev->device = dev;
    ev->flags = Flags;
    *phEvent = reinterpret_cast<EventH>(ev->id);
    state().events[ev->id] = std::move(ev);
    OUT("*phEvent=%p", (void *)*phEvent);
    RET(kOk);
}

FAKE_API fake_cuEventDestroy(EventH hEvent)
{
    FAKE_ENTER(API("EventDestroy"), "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (Result r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    state().events.erase(ev->id);
    RET(kOk);
}

FAKE_API fake_cuEventRecord(EventH hEvent, StreamH hStream)
{
    FAKE_ENTER(API("EventRecord"), "hEvent=%p, hStream=%p", (void *)hEvent, (void *)hStream);
    Event *ev = nullptr;
    Stream *st = nullptr;
    if (Result r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (ev->device != st->device)
        FAIL(kErrInvalidHandle, "the event (device %d) and the stream (device %d) are of different contexts",
             ev->device, st->device);
    bool handled = false;
    Result captured = capture_record_event_locked(call_, *st, *ev, &handled);
    if (handled || captured != kOk)
        return captured;
    // The timestamp is the host's time of the record: the fake's device is infinitely fast.
    ev->recorded = true;
    ev->completed = false;
    ev->stream = st->id;
    ev->seq = st->seq + 1;
    ev->ms = now_ms();
    const uint64_t id = ev->id, stream = st->id, seq = ev->seq;
    enqueue_locked(*st, [id, stream, seq] {
        auto it = state().events.find(id);
        if (it != state().events.end() && it->second->stream == stream && it->second->seq == seq)
            it->second->completed = true; // (unless recorded again since)
    });
    if (ev->ipc)
        ipc_event_recorded_locked(*ev, *st);
    RET(kOk);
}

FAKE_API fake_cuEventSynchronize(EventH hEvent)
{
    FAKE_ENTER(API("EventSynchronize"), "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (Result r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (Result r = event_host_wait_gate_locked(call_, *ev))
        return r;
    if (ev->recorded) {
        auto it = state().streams.find(ev->stream);
        if (it != state().streams.end())
            stream_synced_locked(*it->second, ev->seq);
    }
    if (ev->ipc)
        ipc_event_wait(*ev); // the other process's records too
    RET(kOk);
}

FAKE_API fake_cuEventQuery(EventH hEvent)
{
    FAKE_ENTER(API("EventQuery"), "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (Result r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (Result r = event_host_wait_gate_locked(call_, *ev))
        return r;
    if (ev->recorded && !ev->completed) {
        auto it = state().streams.find(ev->stream);
        if (it != state().streams.end())
            run_stream_locked(*it->second, ev->seq); // busy now; done by the next look
        FAIL(kErrNotReady, "the record was pending (" FAKE_ENV "DEFER)");
    }
    if (ev->ipc && !ipc_event_done(*ev))
        FAIL(kErrNotReady, "a record of the shared event has not run yet (in another process)");
    RET(kOk);
}

FAKE_API fake_cuEventElapsedTime(float *pMilliseconds, EventH hStart, EventH hEnd)
{
    FAKE_ENTER(API("EventElapsedTime"), "hStart=%p, hEnd=%p", (void *)hStart, (void *)hEnd);
    Event *a = nullptr, *b = nullptr;
    if (pMilliseconds == nullptr)
        FAIL(kErrInvalidHandle, "pMilliseconds is NULL (driver 580 says INVALID_HANDLE)");
    if (Result r = find_event_locked(hStart, &a))
        FAIL(r, "hStart is not a live event");
    if (Result r = find_event_locked(hEnd, &b))
        FAIL(r, "hEnd is not a live event");
    if ((a->flags | b->flags) & kEventDisableTiming)
        FAIL(kErrInvalidHandle, "an event was made with " FAKE_N_EVENT_DISABLE_TIMING);
    if (!a->recorded || !b->recorded)
        FAIL(kErrInvalidHandle, "an event was never recorded");
    if (!a->completed || !b->completed)
        FAIL(kErrNotReady, "an event's record has not executed yet (" FAKE_ENV "DEFER)");
    *pMilliseconds = (float)(b->ms - a->ms);
    OUT("*pMilliseconds=%f", (double)*pMilliseconds);
    RET(kOk);
}
