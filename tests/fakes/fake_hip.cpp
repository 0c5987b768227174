// The fake HIP runtime: configuration, tracing, error names and strings, init and versions,
// devices and their attributes, streams and events.  See fake_hip.hpp for the design.
// SPDX-License-Identifier: MIT
#include "fake_hip.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace fakehip {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------
// The settings both fakes share are read by the engine (read_engine_config); here the
// runtime's own.
static Config read_config()
{
    Config c;
    c.name = "fakehip";
    c.env_prefix = "FAKE_HIP_";
    read_engine_config(c, [&c] {
        if (const char *v = getenv("FAKE_HIP_VERSION")) {
            long n = atol(v);
            if (n >= 50000000 && n < 100000000)
                c.runtime_version = (int)n;
            else
                fprintf(stderr, "fakehip: FAKE_HIP_VERSION=%s ignored (a HIP_VERSION, e.g. 60241133)\n", v);
        }
    });
    c.xnack = c.managed && !env_flag(c, "NO_XNACK");
    c.concurrent_managed = c.xnack;
    c.pageable = c.xnack;
    return c;
}
const Config &config()
{
    static const Config c = read_config();
    return c;
}


} // namespace fakehip

// The engine's hooks.
const fakegpu::EngineConfig &fakegpu::engine_config() { return fakehip::config(); }

fakegpu::State &fakegpu::state()
{
    static State *s = new State; // never destroyed: no teardown races at exit
    return *s;
}

namespace fakehip {

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

hipError_t Call::done(hipError_t r)
{
    if (config().trace) {
        fprintf(stderr, "fakehip[%d]: %s(%s) -> %s%s%s%s%s\n", (int)getpid(), name_, args_.c_str(), error_name(r),
                out_.empty() ? "" : " ", out_.c_str(), why_.empty() ? "" : ": ", why_.c_str());
    }
    return r;
}

hipError_t Call::fail(hipError_t r, const char *fmt, ...)
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
// Error names and strings (hipGetErrorString's words are the fake's own)
// ---------------------------------------------------------------------------------------------
#define FAKE_ERRORS(X)                                                                                       \
    X(hipSuccess, "no error")                                                                                \
    X(hipErrorInvalidValue, "invalid argument")                                                              \
    X(hipErrorOutOfMemory, "out of memory")                                                                  \
    X(hipErrorNotInitialized, "initialization error")                                                        \
    X(hipErrorDeinitialized, "driver shutting down")                                                         \
    X(hipErrorInvalidDevicePointer, "invalid device pointer")                                                \
    X(hipErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                                   \
    X(hipErrorInsufficientDriver, "driver version is insufficient for runtime version")                      \
    X(hipErrorNoDevice, "no ROCm-capable device is detected")                                                \
    X(hipErrorInvalidDevice, "invalid device ordinal")                                                       \
    X(hipErrorInvalidContext, "invalid device context")                                                      \
    X(hipErrorMapFailed, "mapping of buffer object failed")                                                  \
    X(hipErrorOperatingSystem, "OS call failed or operation not supported on this OS")                       \
    X(hipErrorInvalidHandle, "invalid resource handle")                                                      \
    X(hipErrorIllegalState, "the operation is not valid in the current state")                               \
    X(hipErrorNotFound, "named symbol not found")                                                            \
    X(hipErrorNotReady, "device not ready")                                                                  \
    X(hipErrorIllegalAddress, "an illegal memory access was encountered")                                    \
    X(hipErrorContextIsDestroyed, "context is destroyed")                                                    \
    X(hipErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped")    \
    X(hipErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region")          \
    X(hipErrorNotSupported, "operation not supported")                                                       \
    X(hipErrorUnknown, "unknown error")

struct ErrorText {
    hipError_t code;
    const char *name;
    const char *text;
};
#define FAKE_ERROR_ENTRY(code, text) {code, #code, text},
static const ErrorText k_errors[] = {FAKE_ERRORS(FAKE_ERROR_ENTRY)};

static const ErrorText *find_error(hipError_t r)
{
    for (const ErrorText &e : k_errors)
        if (e.code == r)
            return &e;
    return nullptr;
}

const char *error_name(hipError_t r)
{
    const ErrorText *e = find_error(r);
    if (e)
        return e->name;
    static thread_local char buf[32];
    snprintf(buf, sizeof buf, "hipError_%d", (int)r);
    return buf;
}

static hipError_t init_locked();

// The HIP runtime initialises itself on the first call; a runtime that could not start
// answers every call with the reason.
hipError_t check_initialized()
{
    const Config &c = config();
    if (c.init_fail)
        return hipErrorNotInitialized;
    if (c.no_device)
        return hipErrorInvalidDevice; // ROCm 5.2 without a GPU: every call but hipGetDeviceCount
    std::lock_guard<std::mutex> lock(state().mu);
    return init_locked();
}


// ---------------------------------------------------------------------------------------------
// Devices: the current device is per thread (0 until hipSetDevice), as in the HIP runtime.
// ---------------------------------------------------------------------------------------------
static thread_local int tl_current = 0;

hipError_t current_device_locked(int *dev)
{
    if (!valid_device(tl_current))
        return hipErrorInvalidDevice;
    *dev = tl_current;
    return hipSuccess;
}

static Stream &make_stream_locked(int dev, unsigned flags, bool legacy)
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

static hipError_t init_locked()
{
    State &s = state();
    if (s.initialized)
        return hipSuccess;
    if (!region_init_locked())
        return hipErrorOutOfMemory;
    s.devices.assign((size_t)config().devices, Device{});
    for (int d = 0; d < config().devices; ++d)
        s.devices[(size_t)d].legacy_stream = make_stream_locked(d, 0, true).id;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    s.host_limit = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 16 * kGiB;
    s.initialized = true;
    return hipSuccess;
}

hipError_t find_stream_locked(hipStream_t h, Stream **out)
{
    State &s = state();
    if (h == nullptr || h == hipStreamPerThread) {
        // The per-thread default stream is modelled as the NULL stream.
        int dev = -1;
        if (hipError_t r = current_device_locked(&dev))
            return r;
        *out = s.streams.at(s.devices[(size_t)dev].legacy_stream).get();
        return hipSuccess;
    }
    auto it = s.streams.find(reinterpret_cast<uint64_t>(h));
    if (it == s.streams.end() || it->second->legacy)
        return hipErrorInvalidHandle;
    *out = it->second.get();
    return hipSuccess;
}

// Stream ordering, deferred execution and synchronisation are the engine's (fake_gpu_engine.cpp).

} // namespace fakehip

using namespace fakehip;

// Error strings work at any time, like the real ones.  Unknown codes: the runtime's words.
extern "C" const char *fake_hipGetErrorName(hipError_t e)
{
    const ErrorText *t = find_error(e);
    return t ? t->name : "hipErrorUnknown";
}

extern "C" const char *fake_hipGetErrorString(hipError_t e)
{
    const ErrorText *t = find_error(e);
    return t ? t->text : "unknown error";
}

// ---------------------------------------------------------------------------------------------
// Init and versions
// ---------------------------------------------------------------------------------------------
FAKE_HIP_API fake_hipInit(unsigned int flags)
{
    Call call_("hipInit");
    if (config().trace)
        call_.args("flags=%u", flags);
    const Config &c = config();
    if (flags != 0)
        FAIL(hipErrorInvalidValue, "flags must be 0");
    if (c.init_fail)
        FAIL(hipErrorNotInitialized, "FAKE_HIP_INIT_FAIL is set");
    if (c.no_device) // (what ROCm 5.2's hipInit says on a machine without an AMD GPU)
        FAIL(hipErrorInvalidDevice, "FAKE_HIP_NO_DEVICE is set (or FAKE_HIP_DEVICES=0)");
    std::lock_guard<std::mutex> lock(state().mu);
    if (hipError_t r = init_locked())
        FAIL(r, "could not reserve the device address range: %s", strerror(errno));
    RET(hipSuccess);
}

// HIP's driver version is the runtime's HIP_VERSION too on ROCm.
FAKE_HIP_API fake_hipDriverGetVersion(int *v)
{
    Call call_("hipDriverGetVersion");
    if (v == nullptr)
        FAIL(hipErrorInvalidValue, "driverVersion is NULL");
    *v = config().runtime_version;
    OUT("*driverVersion=%d", *v);
    RET(hipSuccess);
}

FAKE_HIP_API fake_hipRuntimeGetVersion(int *v)
{
    Call call_("hipRuntimeGetVersion");
    if (v == nullptr)
        FAIL(hipErrorInvalidValue, "runtimeVersion is NULL");
    *v = config().runtime_version;
    OUT("*runtimeVersion=%d", *v);
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------
static const char k_device_name[] = "gpumem fake HIP device";

FAKE_HIP_API fake_cuDeviceGetCount(int *count)
{
    Call call_("hipGetDeviceCount");
    if (count == nullptr)
        FAIL(hipErrorInvalidValue, "count is NULL");
    *count = 0;
    if (config().init_fail)
        FAIL(hipErrorNotInitialized, "FAKE_HIP_INIT_FAIL is set");
    if (config().no_device)
        FAIL(hipErrorNoDevice, "FAKE_HIP_NO_DEVICE is set (or FAKE_HIP_DEVICES=0)");
    if (hipError_t r = check_initialized())
        RET(r);
    *count = config().devices;
    OUT("*count=%d", *count);
    RET(hipSuccess);
}

FAKE_HIP_API fake_hipSetDevice(int dev)
{
    FAKE_ENTER("hipSetDevice", "dev=%d", dev);
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", dev);
    tl_current = dev;
    RET(hipSuccess);
}

FAKE_HIP_API fake_hipGetDevice(int *dev)
{
    FAKE_ENTER("hipGetDevice", "%s", "");
    if (dev == nullptr)
        FAIL(hipErrorInvalidValue, "deviceId is NULL");
    *dev = tl_current;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceGet(int *device, int ordinal)
{
    FAKE_ENTER("hipDeviceGet", "ordinal=%d", ordinal);
    if (device == nullptr)
        FAIL(hipErrorInvalidValue, "device is NULL");
    if (!valid_device(ordinal))
        FAIL(hipErrorInvalidDevice, "no device %d", ordinal);
    *device = ordinal;
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceGetName(char *name, int len, int dev)
{
    FAKE_ENTER("hipDeviceGetName", "len=%d, dev=%d", len, (int)dev);
    if (name == nullptr || len <= 0)
        FAIL(hipErrorInvalidValue, "name is NULL or len <= 0");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    snprintf(name, (size_t)len, "%s", k_device_name);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuDeviceTotalMem(size_t *bytes, int dev)
{
    FAKE_ENTER("hipDeviceTotalMem", "dev=%d", (int)dev);
    if (bytes == nullptr)
        FAIL(hipErrorInvalidValue, "bytes is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", (int)dev);
    *bytes = config().memory;
    RET(hipSuccess);
}

// The attributes gpumem asks, with an MI210-like device's values; others in the CUDA-compatible
// and AMD-specific ranges are 0, anything else hipErrorInvalidValue.
static bool device_attribute(int a, int *v)
{
    const Config &c = config();
    // ROCm 5's enum ends at MemoryPoolsSupported: later values are unknown attributes there.
    if (!c.v6() && a > fh_DeviceAttributeMemoryPoolsSupported && a < fh_DeviceAttributeCudaCompatibleEnd)
        return false;
    switch (a) {
    case hipDeviceAttributeCanMapHostMemory: *v = 1; break;
    case hipDeviceAttributeConcurrentManagedAccess: *v = c.managed && c.xnack; break;
    case hipDeviceAttributeDirectManagedMemAccessFromHost: *v = 0; break;
    case hipDeviceAttributeManagedMemory: *v = c.managed; break;
    case hipDeviceAttributePageableMemoryAccess: *v = c.pageable; break;
    case hipDeviceAttributePageableMemoryAccessUsesHostPageTables: *v = c.pageable; break;
    case hipDeviceAttributeUnifiedAddressing: *v = 1; break;
    case hipDeviceAttributeComputeCapabilityMajor: *v = 9; break;
    case hipDeviceAttributeComputeCapabilityMinor: *v = 0; break;
    case hipDeviceAttributeMultiprocessorCount: *v = 104; break;
    case hipDeviceAttributeWarpSize: *v = 64; break;
    case hipDeviceAttributeMaxThreadsPerBlock: *v = 1024; break;
    case hipDeviceAttributeClockRate: *v = 1700000; break;
    case hipDeviceAttributeMemoryClockRate: *v = 1600000; break;
    case hipDeviceAttributeMemoryBusWidth: *v = 4096; break;
    case hipDeviceAttributeL2CacheSize: *v = 8 * 1024 * 1024; break;
    case hipDeviceAttributeIntegrated: *v = 0; break;
    case hipDeviceAttributePciBusId: *v = 3; break;
    case hipDeviceAttributeConcurrentKernels: *v = 1; break;
    case fh_DeviceAttributeMemoryPoolsSupported: *v = c.pools; break;
    case fh_DeviceAttributeVirtualMemoryManagementSupported: *v = c.vmm; break;
    case fh_DeviceAttributeHostRegisterSupported: *v = c.host_register; break;
    case fh_DeviceAttributeMemoryPoolSupportedHandleTypes:
        *v = c.pools && c.ipc ? hipMemHandleTypePosixFileDescriptor : 0;
        break;
    case hipDeviceAttributeGcnArch: *v = 910; break;
    default:
        if ((a >= 0 && a < fh_DeviceAttributeCudaCompatibleEnd && a <= fh_DeviceAttributeMemoryPoolSupportedHandleTypes) ||
            (a >= fh_DeviceAttributeAmdSpecificBegin && a < fh_DeviceAttributeAmdSpecificBegin + 40)) {
            *v = 0;
            break;
        }
        return false;
    }
    return true;
}

FAKE_HIP_API fake_cuDeviceGetAttribute(int *pi, int attrib, int dev)
{
    FAKE_ENTER("hipDeviceGetAttribute", "attrib=%d, dev=%d", attrib, dev);
    if (pi == nullptr)
        FAIL(hipErrorInvalidValue, "pi is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", dev);
    if (!device_attribute(attrib, pi))
        FAIL(hipErrorInvalidValue, "unknown attribute %d", attrib);
    OUT("*pi=%d", *pi);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuCtxSynchronize(void)
{
    FAKE_ENTER("hipDeviceSynchronize", "%s", "");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no current device");
    device_synced_locked(dev);
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------
FAKE_HIP_API fake_cuStreamCreate(hipStream_t *phStream, unsigned int Flags)
{
    FAKE_ENTER("hipStreamCreate", "Flags=%u", Flags);
    if (phStream == nullptr)
        FAIL(hipErrorInvalidValue, "phStream is NULL");
    if (Flags & ~(unsigned)hipStreamNonBlocking)
        FAIL(hipErrorInvalidValue, "unknown flags");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    *phStream = reinterpret_cast<hipStream_t>(make_stream_locked(dev, Flags, false).id);
    OUT("*phStream=%p", (void *)*phStream);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuStreamDestroy(hipStream_t hStream)
{
    FAKE_ENTER("hipStreamDestroy", "hStream=%p", (void *)hStream);
    if (hStream == nullptr || hStream == hipStreamPerThread)
        FAIL(hipErrorInvalidHandle, "the default stream cannot be destroyed");
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    // Its work completes (at once here), but the host has not waited for it: frees on it
    // count as synchronised at the next synchronisation of anything.
    run_stream_locked(*st, st->seq);
    state().streams.erase(st->id);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuStreamSynchronize(hipStream_t hStream)
{
    FAKE_ENTER("hipStreamSynchronize", "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    stream_synced_locked(*st, st->seq);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuStreamQuery(hipStream_t hStream)
{
    FAKE_ENTER("hipStreamQuery", "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (!st->pending.empty()) {
        run_stream_locked(*st, st->seq); // busy now; done by the next look
        FAIL(hipErrorNotReady, "work was pending (FAKE_HIP_DEFER)");
    }
    RET(hipSuccess);
}

static hipError_t find_event_locked(hipEvent_t h, Event **out)
{
    auto it = state().events.find(reinterpret_cast<uint64_t>(h));
    if (it == state().events.end())
        return hipErrorInvalidHandle;
    *out = it->second.get();
    return hipSuccess;
}

FAKE_HIP_API fake_cuStreamWaitEvent(hipStream_t hStream, hipEvent_t hEvent, unsigned int Flags)
{
    FAKE_ENTER("hipStreamWaitEvent", "hStream=%p, hEvent=%p, Flags=%u", (void *)hStream, (void *)hEvent, Flags);
    Stream *st = nullptr;
    Event *ev = nullptr;
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (hipError_t r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (Flags & ~(unsigned)0)
        FAIL(hipErrorInvalidValue, "unknown flags");
    std::vector<Dep> deps;
    if (ev->recorded && ev->stream != st->id) {
        st->waited[ev->stream] = std::max(st->waited[ev->stream], ev->seq);
        deps.emplace_back(ev->stream, ev->seq);
    }
    enqueue_locked(*st, nullptr, std::move(deps));
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------
FAKE_HIP_API fake_cuEventCreate(hipEvent_t *phEvent, unsigned int Flags)
{
    FAKE_ENTER("hipEventCreate", "Flags=%u", Flags);
    if (phEvent == nullptr)
        FAIL(hipErrorInvalidValue, "phEvent is NULL");
    if (Flags & ~(unsigned)(hipEventBlockingSync | hipEventDisableTiming | hipEventInterprocess))
        FAIL(hipErrorInvalidValue, "unknown flags");
    if ((Flags & hipEventInterprocess) && !(Flags & hipEventDisableTiming))
        FAIL(hipErrorInvalidValue, "hipEventInterprocess needs hipEventDisableTiming");
    int dev = -1;
    if (hipError_t r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    std::unique_ptr<Event> ev(new Event);
    ev->id = new_handle(kEventTag);
    ev->device = dev;
    ev->flags = Flags;
    *phEvent = reinterpret_cast<hipEvent_t>(ev->id);
    state().events[ev->id] = std::move(ev);
    OUT("*phEvent=%p", (void *)*phEvent);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuEventDestroy(hipEvent_t hEvent)
{
    FAKE_ENTER("hipEventDestroy", "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (hipError_t r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    state().events.erase(ev->id);
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuEventRecord(hipEvent_t hEvent, hipStream_t hStream)
{
    FAKE_ENTER("hipEventRecord", "hEvent=%p, hStream=%p", (void *)hEvent, (void *)hStream);
    Event *ev = nullptr;
    Stream *st = nullptr;
    if (hipError_t r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (hipError_t r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (ev->device != st->device)
        FAIL(hipErrorInvalidHandle, "the event (device %d) and the stream (device %d) are of different contexts",
             ev->device, st->device);
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
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuEventSynchronize(hipEvent_t hEvent)
{
    FAKE_ENTER("hipEventSynchronize", "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (hipError_t r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (ev->recorded) {
        auto it = state().streams.find(ev->stream);
        if (it != state().streams.end())
            stream_synced_locked(*it->second, ev->seq);
    }
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuEventQuery(hipEvent_t hEvent)
{
    FAKE_ENTER("hipEventQuery", "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (hipError_t r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (ev->recorded && !ev->completed) {
        auto it = state().streams.find(ev->stream);
        if (it != state().streams.end())
            run_stream_locked(*it->second, ev->seq); // busy now; done by the next look
        FAIL(hipErrorNotReady, "the record was pending (FAKE_HIP_DEFER)");
    }
    RET(hipSuccess);
}

FAKE_HIP_API fake_cuEventElapsedTime(float *pMilliseconds, hipEvent_t hStart, hipEvent_t hEnd)
{
    FAKE_ENTER("hipEventElapsedTime", "hStart=%p, hEnd=%p", (void *)hStart, (void *)hEnd);
    Event *a = nullptr, *b = nullptr;
    if (pMilliseconds == nullptr)
        FAIL(hipErrorInvalidHandle, "pMilliseconds is NULL (driver 580 says INVALID_HANDLE)");
    if (hipError_t r = find_event_locked(hStart, &a))
        FAIL(r, "hStart is not a live event");
    if (hipError_t r = find_event_locked(hEnd, &b))
        FAIL(r, "hEnd is not a live event");
    if ((a->flags | b->flags) & hipEventDisableTiming)
        FAIL(hipErrorInvalidHandle, "an event was made with hipEventDisableTiming");
    if (!a->recorded || !b->recorded)
        FAIL(hipErrorInvalidHandle, "an event was never recorded");
    if (!a->completed || !b->completed)
        FAIL(hipErrorNotReady, "an event's record has not executed yet (FAKE_HIP_DEFER)");
    *pMilliseconds = (float)(b->ms - a->ms);
    OUT("*pMilliseconds=%f", (double)*pMilliseconds);
    RET(hipSuccess);
}
