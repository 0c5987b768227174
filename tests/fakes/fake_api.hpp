// The front-end both fakes share: tracing, and the API bodies (fake_api_*.cpp) that put the
// engine (fake_gpu_engine.hpp) behind a vendor's entry points.  Each fake_api_*.cpp is
// compiled once per vendor (dav1d's _tmpl style): meson passes -DFAKE_VENDOR_CUDA=1 to
// libfakecuda's sources and -DFAKE_VENDOR_HIP=1 to libfakehip's, and the vendor header
// chosen here supplies the traits the bodies are written in:
//   - namespace FAKE_NS (fakecuda, fakehip) with Config / config(), current_device_locked;
//   - types: Result, StreamH, EventH, PoolH, MemHandle, AllocProp, PoolProps, AccessDesc,
//     MemLocation, HandleType, PoolAttr, AccessFlags, PtrExportData, GranularityFlags, Advice;
//   - codes and values: kOk, kErr*, kLoc*, kAllocPinned, kPool*, kEvent*, kAttach*, kAdvise*...;
//   - spellings for traces and messages: FAKE_API_PREFIX ("cu", "hip"), FAKE_ENV
//     ("FAKE_CUDA_", "FAKE_HIP_"), FAKE_N_* (names quoted in messages);
//   - stream capture and graphs: GraphH, GraphExecH, GraphNodeH, UserObjectH, CaptureModeT,
//     CaptureStatusT, CaptureIdT, HostFnT, kErrCapture*, kErrCapturedEvent, kErrIllegalState,
//     kUserObjectNoDestructorSync, kGraphUserObjectMove, kEventWaitExternal;
//   - small behaviour switches (kZeroAllocIsNull, ...) where the runtimes answer differently.
// Every API function takes the one global mutex (state().mu) after the init check; helpers
// named *_locked expect it held.
//
// SPDX-License-Identifier: MIT
#pragma once

#if defined(FAKE_VENDOR_CUDA)
#include "fake_cuda.hpp"
#elif defined(FAKE_VENDOR_HIP)
#include "fake_hip.hpp"
#else
#error "build with -DFAKE_VENDOR_CUDA=1 or -DFAKE_VENDOR_HIP=1"
#endif

#include <cstdarg>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

namespace FAKE_NS {

// The vendor's settings (its .cpp), read once by config(), and its devices' name.
Config read_config();
extern const char k_device_name[];
// How the runtime writes a PCI address (printf, domain, bus, device): CUDA in uppercase hex,
// HIP in lowercase (ROCm's clr prints it with %04x:%02x:%02x.%01x).
extern const char k_pci_bus_id_format[];

// ---------------------------------------------------------------------------------------------
// Tracing.  Each API function opens a Call; its result goes through done()/fail(), which
// print one line with FAKE_*_TRACE=1 (and the reason for a failure).
// ---------------------------------------------------------------------------------------------
class Call {
public:
    // A user-object destructor must not call the runtime: the process aborts, saying so.
    explicit Call(const char *name) : name_(name)
    {
        if (::fakegpu::in_runtime_callback())
            ::fakegpu::runtime_reentered(name);
    }
    // User-object destructors this call let go of run now, the global mutex released (it is
    // declared after the Call: FAKE_ENTER), before the caller sees the result.
    ~Call() { ::fakegpu::run_due_callbacks(); }
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;
    const char *name() const { return name_; }
    void args(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    void out(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    Result done(Result r);
    Result fail(Result r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

private:
    const char *name_;
    std::string args_, out_, why_;
};

// The vendor's error table (fake_errors.def: k_errors, k_error_count); names fall back to
// FAKE_ERROR_FALLBACK with the number.
struct ErrorText {
    Result code;
    const char *name;
    const char *text;
};
#define FAKE_ERROR_ENTRY(code, text) {code, #code, text},
extern const ErrorText k_errors[];
extern const size_t k_error_count;
const ErrorText *find_error(Result r);
const char *error_name(Result r);

// kOk when the runtime may be used (the vendor's rules).
Result check_initialized();
// After a device fault (FAKE_EXPORT fake_{cuda,hip}_device_fault, standing in for a kernel
// that read a bad address), every call made on the faulted device's context answers
// kErrIllegalAddress, the sticky error, except those that only name devices and contexts, as
// driver 580 does (cuda_probe group fault).  Other devices' contexts already started keep
// working; the CUDA fake starts no new one after a fault (cuDevicePrimaryCtxRetain answers
// CUDA_ERROR_ILLEGAL_ADDRESS, as two H200s did).
Result sticky_fault(const char *name);
// Marks the calling thread's current device faulted.
void device_fault();

// The engine's status as this runtime's error code.
inline Result vendor_error(Status s)
{
    switch (s) {
    case kStatusOk: return kOk;
    case kStatusInvalidValue: return kErrInvalidValue;
    case kStatusOutOfMemory: return kErrOutOfMemory;
    }
    return kErrInvalidValue;
}

// The device of the calling thread (vendor: its context, or its current device).
Result current_device_locked(int *dev);
Stream &make_stream_locked(int dev, unsigned flags, bool legacy);
// A stream handle (the vendor's default-stream handles: the current device's NULL stream).
Result find_stream_locked(StreamH h, Stream **out);

// ---------------------------------------------------------------------------------------------
// Stream capture (fake_api_graphs.cpp, whose design note says what is modelled and why).
// ---------------------------------------------------------------------------------------------
// Every call that puts work on a stream passes this gate first.  kOk with *cap the capture `st`
// takes part in (the call records a node instead of running) or nullptr (it runs as usual);
// IMPLICIT for the legacy stream while a blocking stream of its device captures (those captures
// are invalidated); INVALIDATED on a stream whose capture was invalidated.
Result capture_gate_locked(Call &call_, Stream &st, Capture **cap);
// A stream-ordered allocation or free on `st`: kOk with *cap the capture it is recorded in, or
// nullptr when `st` is not capturing and the call, potentially unsafe then, is allowed (else the
// refusal of unsafe_during_capture_locked).
Result stream_ordered_gate_locked(Call &call_, Stream &st, Capture **cap);
// A call that a capturing stream refuses: UNSUPPORTED (and, with `invalidate`, the capture is).
Result refuse_if_capturing_locked(Call &call_, Stream &st, bool invalidate, const char *what);
// A potentially unsafe call (cuThreadExchangeStreamCaptureMode's rules): UNSUPPORTED, invalidating
// the captures that prohibit it, or kOk.
Result unsafe_during_capture_locked(Call &call_);
// Device (context) synchronisation: refused while any stream of `dev` captures, in any mode.
Result device_sync_gate_locked(Call &call_, int dev);
// The host waiting for (or asking about) a stream or an event.
Result stream_host_wait_gate_locked(Call &call_, Stream &st);
Result event_host_wait_gate_locked(Call &call_, Event &ev);
// cuEventRecord and cuStreamWaitEvent where a capture is concerned: *handled says whether the
// result is final (otherwise the call goes on as outside any capture).
Result capture_record_event_locked(Call &call_, Stream &st, Event &ev, bool *handled);
Result capture_wait_event_locked(Call &call_, Stream &st, Event &ev, unsigned flags, bool *handled);
// Stream-ordered allocation and free on a capturing stream: alloc and free nodes.
Result capture_alloc_locked(Call &call_, Stream &st, int device, uint64_t size, DevPtr *dptr);
Result capture_free_locked(Call &call_, Stream &st, DevPtr dptr);
// A node recorded on the capture `st` takes part in, after the stream's dependencies; it becomes
// the stream's only dependency.
GraphNode &capture_node_locked(Stream &st, NodeKind kind);
// A stream that goes away leaves its capture: its origin ends it (the graph is destroyed), a stream
// that joined invalidates it.
void stream_leaves_capture_locked(Stream &st);
// The capture information of a stream (cuStreamGetCaptureInfo, every form); *st_out the stream.
Result capture_info_locked(Call &call_, StreamH hStream, CaptureStatusT *status, CaptureIdT *id, GraphH *graph,
                           const GraphNodeH **deps, size_t *num, Stream **st_out);
// Events shared between processes (fake_api_rows.cpp): what a record, a host wait and a stream's
// wait do with the state both processes map (Event::ipc).
void ipc_event_recorded_locked(Event &ev, Stream &st);
bool ipc_event_done(const Event &ev);
void ipc_event_wait(const Event &ev); // until every record made so far has run
void ipc_event_waited_locked(Event &ev, Stream &st);
// A host node's function at a launch (fake_api_rows.cpp), as a runtime callback.
void run_host_node(void (*fn)(void *), void *user);
// While a graph is captured or launched its allocations are valid memory for the checks of its
// copies and fills, whether allocated at the moment or not.
class GraphScope {
public:
    explicit GraphScope(const std::vector<GraphNode> *nodes);
    ~GraphScope();
    GraphScope(const GraphScope &) = delete;
    GraphScope &operator=(const GraphScope &) = delete;

private:
    const std::vector<GraphNode> *prev_;
};
const GraphMem *graph_scope_mem_locked(uint64_t addr);

} // namespace FAKE_NS

using namespace FAKE_NS;

// A copy or fill checked now (memory as it is, and the allocations of the graph in scope), done
// by *run later (fake_api_memory.cpp): graph nodes at capture and at each launch.  *pageable: host
// memory the driver does not know is involved.
Result prepare_copy_locked(DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t n, std::function<void()> *run,
                           bool *pageable, std::string *why);
Result prepare_fill_locked(DevPtr dst, unsigned char v, size_t n, int dev, std::function<void()> *run,
                           bool *pageable, std::string *why);
// A fill of elements of `elem` bytes (1, 2, 4) of `v` over `n` bytes (dst aligned to elem).
Result prepare_fill_elems_locked(DevPtr dst, uint32_t v, unsigned elem, size_t n, int dev, std::function<void()> *run,
                                 bool *pageable, std::string *why);
// The rows of a 2-D or 3-D copy and of a 2-D fill (RowsGeom; one row: the plain forms), each row
// checked as the plain forms check a range (*why names the row).
Result prepare_rows_copy_locked(DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t width, const RowsGeom &g,
                                std::function<void()> *run, bool *pageable, std::string *why);
Result prepare_rows_fill_locked(DevPtr dst, size_t width, const RowsGeom &g, uint32_t value, int dev,
                                std::function<void()> *run, bool *pageable, std::string *why);

// The peer copies (cuMemcpyPeer(Async), hipMemcpyPeer(Async)) once the vendor front has turned
// what names each side's device (a context, an ordinal) into ordinals: `dst` is checked from
// `dst_dev`, `src` from `src_dev`; `sync`: on the current NULL stream, waited for.
Result memcpy_peer_locked(Call &call_, DevPtr dst, int dst_dev, DevPtr src, int src_dev, size_t n, StreamH hStream,
                          bool sync);

// Managed-memory helpers behind both prefetch and advice forms (CUDA's _v2 take a location).
Result prefetch_locked(Call &call_, DevPtr devPtr, size_t count, int dev, StreamH hStream);
Result advise_locked(Call &call_, DevPtr devPtr, size_t count, Advice advice, int dev);

// The batched calls (fake_api_memory.cpp), behind CUDA's two cuMemcpyBatchAsync forms, its
// cuMemPrefetchBatchAsync / cuMemDiscardBatchAsync, and HIP's three.  The vendor front checks
// its own structures (copy attributes, locations) and passes what they say: `order_ok` the
// attributes cover every copy with a valid source access order; `devs` one target per range.
// Every range is checked before anything is enqueued; *failIdx (when given) names the bad one.
Result copy_batch_locked(Call &call_, const DevPtr *dsts, const DevPtr *srcs, const size_t *sizes, size_t count,
                         bool order_ok, size_t *failIdx, StreamH hStream);
Result prefetch_batch_locked(Call &call_, const DevPtr *ptrs, const size_t *sizes, size_t count, const int *devs,
                             unsigned long long flags, StreamH hStream);
// A discard poisons the ranges (k_discard_poison) in stream order: their contents are undefined.
constexpr unsigned char k_discard_poison = 0xDB;
Result discard_batch_locked(Call &call_, const DevPtr *ptrs, const size_t *sizes, size_t count,
                            unsigned long long flags, StreamH hStream);
// Whether `locIdxs` (numLocs entries) splits `count` ranges validly: first 0, increasing, below count.
bool location_runs_ok(const size_t *locIdxs, size_t numLocs, size_t count);

// The trace name of an API function: API("MemAlloc") is "cuMemAlloc" or "hipMemAlloc".
#define API(name) FAKE_API_PREFIX name

#define FAKE_ENTER(name, ...)                                                                                \
    ::FAKE_NS::Call call_(name);                                                                             \
    if (::FAKE_NS::config().trace)                                                                           \
        call_.args(__VA_ARGS__);                                                                             \
    if (::FAKE_NS::Result init_rc_ = ::FAKE_NS::check_initialized())                                         \
        return call_.done(init_rc_);                                                                         \
    if (::FAKE_NS::Result fault_rc_ = ::FAKE_NS::sticky_fault(name))                                         \
        return call_.done(fault_rc_);                                                                        \
    std::lock_guard<std::mutex> state_lock_(::FAKE_NS::state().mu)

#define RET(r) return call_.done(r)
#define FAIL(r, ...) return call_.fail((r), __VA_ARGS__)
#define OUT(...)                                                                                             \
    do {                                                                                                     \
        if (::FAKE_NS::config().trace)                                                                       \
            call_.out(__VA_ARGS__);                                                                          \
    } while (0)

// The API functions both fakes implement (fake_api_*.cpp), named after the CUDA driver call
// and prefixed fake_.  CUDA's cuGetProcAddress table and HIP's exports reach them.
#define FAKE_API extern "C" Result
// fake_api_streams.cpp
FAKE_API fake_cuDeviceGet(int *device, int ordinal);
FAKE_API fake_cuDeviceGetName(char *name, int len, int dev);
FAKE_API fake_cuDeviceGetPCIBusId(char *pciBusId, int len, int dev);
FAKE_API fake_cuDeviceTotalMem(size_t *bytes, int dev);
FAKE_API fake_cuCtxSynchronize(void);
FAKE_API fake_cuStreamCreate(StreamH *phStream, unsigned int Flags);
FAKE_API fake_cuStreamDestroy(StreamH hStream);
FAKE_API fake_cuStreamSynchronize(StreamH hStream);
FAKE_API fake_stream_device(const char *name, StreamH hStream, int *device); // cuStreamGetCtx, hipStreamGetDevice
FAKE_API fake_cuStreamQuery(StreamH hStream);
FAKE_API fake_cuStreamWaitEvent(StreamH hStream, EventH hEvent, unsigned int Flags);
FAKE_API fake_cuEventCreate(EventH *phEvent, unsigned int Flags);
FAKE_API fake_cuEventDestroy(EventH hEvent);
FAKE_API fake_cuEventRecord(EventH hEvent, StreamH hStream);
FAKE_API fake_cuEventSynchronize(EventH hEvent);
FAKE_API fake_cuEventQuery(EventH hEvent);
FAKE_API fake_cuEventElapsedTime(float *pMilliseconds, EventH hStart, EventH hEnd);
// Peer access (fake_api_streams.cpp): possible between any two devices; the enabled pairs are
// recorded (State::peers).  Enable and disable act from the current device and take the peer's
// ordinal: HIP's form; the CUDA fake's cuCtxEnablePeerAccess / cuCtxDisablePeerAccess turn the
// peer's context into its ordinal.
FAKE_API fake_cuDeviceCanAccessPeer(int *canAccessPeer, int dev, int peerDev);
FAKE_API fake_peer_enable(const char *name, int peer, unsigned int flags);
FAKE_API fake_peer_disable(const char *name, int peer);
// fake_api_memory.cpp
FAKE_API fake_cuMemGetInfo(size_t *free, size_t *total);
FAKE_API fake_cuMemAlloc(DevPtr *dptr, size_t bytesize);
FAKE_API fake_cuMemFree(DevPtr dptr);
FAKE_API fake_cuMemGetAddressRange(DevPtr *pbase, size_t *psize, DevPtr dptr);
FAKE_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
FAKE_API fake_cuMemFreeHost(void *p);
FAKE_API fake_cuMemHostGetDevicePointer(DevPtr *pdptr, void *p, unsigned int Flags);
FAKE_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FAKE_API fake_cuMemHostUnregister(void *p);
FAKE_API fake_cuMemcpy(DevPtr dst, DevPtr src, size_t ByteCount);
FAKE_API fake_cuMemcpyAsync(DevPtr dst, DevPtr src, size_t ByteCount, StreamH hStream);
FAKE_API fake_cuMemsetD8(DevPtr dstDevice, unsigned char uc, size_t N);
FAKE_API fake_cuMemsetD8Async(DevPtr dstDevice, unsigned char uc, size_t N, StreamH hStream);
FAKE_API fake_cuMemAllocManaged(DevPtr *dptr, size_t bytesize, unsigned int flags);
FAKE_API fake_cuStreamAttachMemAsync(StreamH hStream, DevPtr dptr, size_t length, unsigned int flags);
FAKE_API fake_cuMemPrefetchAsync_v1(DevPtr devPtr, size_t count, int dstDevice, StreamH hStream);
FAKE_API fake_cuMemAdvise_v1(DevPtr devPtr, size_t count, Advice advice, int device);
// fake_api_pools.cpp
FAKE_API fake_cuDeviceGetDefaultMemPool(PoolH *pool_out, int dev);
FAKE_API fake_cuDeviceGetMemPool(PoolH *pool, int dev);
FAKE_API fake_cuDeviceSetMemPool(int dev, PoolH pool);
FAKE_API fake_cuMemPoolCreate(PoolH *pool, const PoolProps *poolProps);
FAKE_API fake_cuMemPoolDestroy(PoolH pool);
FAKE_API fake_cuMemAllocFromPoolAsync(DevPtr *dptr, size_t bytesize, PoolH pool, StreamH hStream);
FAKE_API fake_cuMemAllocAsync(DevPtr *dptr, size_t bytesize, StreamH hStream);
FAKE_API fake_cuMemFreeAsync(DevPtr dptr, StreamH hStream);
FAKE_API fake_cuMemPoolSetAttribute(PoolH pool, PoolAttr attr, void *value);
FAKE_API fake_cuMemPoolGetAttribute(PoolH pool, PoolAttr attr, void *value);
FAKE_API fake_cuMemPoolTrimTo(PoolH pool, size_t minBytesToKeep);
FAKE_API fake_cuMemPoolSetAccess(PoolH pool, const AccessDesc *map, size_t count);
FAKE_API fake_cuMemPoolGetAccess(AccessFlags *flags, PoolH memPool, MemLocation *location);
FAKE_API fake_cuMemPoolExportToShareableHandle(void *handle_out, PoolH pool, HandleType handleType,
                                               unsigned long long flags);
FAKE_API fake_cuMemPoolImportFromShareableHandle(PoolH *pool_out, void *handle, HandleType handleType,
                                                 unsigned long long flags);
FAKE_API fake_cuMemPoolExportPointer(PtrExportData *shareData_out, DevPtr ptr);
FAKE_API fake_cuMemPoolImportPointer(DevPtr *ptr_out, PoolH pool, PtrExportData *shareData);
// fake_api_vmm.cpp
FAKE_API fake_cuMemGetAllocationGranularity(size_t *granularity, const AllocProp *prop, GranularityFlags option);
FAKE_API fake_cuMemCreate(MemHandle *handle, size_t size, const AllocProp *prop, unsigned long long flags);
FAKE_API fake_cuMemRelease(MemHandle handle);
FAKE_API fake_cuMemAddressReserve(DevPtr *ptr, size_t size, size_t alignment, DevPtr addr, unsigned long long flags);
FAKE_API fake_cuMemAddressFree(DevPtr ptr, size_t size);
FAKE_API fake_cuMemMap(DevPtr ptr, size_t size, size_t offset, MemHandle handle, unsigned long long flags);
FAKE_API fake_cuMemUnmap(DevPtr ptr, size_t size);
FAKE_API fake_cuMemSetAccess(DevPtr ptr, size_t size, const AccessDesc *desc, size_t count);
FAKE_API fake_cuMemGetAccess(unsigned long long *flags, const MemLocation *location, DevPtr ptr);
FAKE_API fake_cuMemExportToShareableHandle(void *shareableHandle, MemHandle handle, HandleType handleType,
                                           unsigned long long flags);
FAKE_API fake_cuMemImportFromShareableHandle(MemHandle *handle, void *osHandle, HandleType shHandleType);
FAKE_API fake_cuMemGetAllocationPropertiesFromHandle(AllocProp *prop, MemHandle handle);
FAKE_API fake_cuMemRetainAllocationHandle(MemHandle *handle, void *addr);
// cuMemGetHandleForAddressRange, hipMemGetHandleForAddressRange (`name` in traces): a dma-buf
// descriptor (a memfd stand-in) written as an int at *handle.
FAKE_API fake_mem_range_handle(const char *name, void *handle, DevPtr dptr, size_t size, int handleType,
                               unsigned long long flags);
// fake_api_rows.cpp: streams with priorities, host functions, events shared between processes,
// pitched allocations, copies and fills of rows and boxes (0.5 of gpumem).  Each vendor front
// translates its own structures and passes `name` for traces.
FAKE_API fake_stream_create_priority(const char *name, StreamH *phStream, unsigned int flags, int priority);
FAKE_API fake_stream_get_priority(const char *name, StreamH hStream, int *priority);
FAKE_API fake_stream_get_flags(const char *name, StreamH hStream, unsigned int *flags);
FAKE_API fake_priority_range(const char *name, int *least, int *greatest);
FAKE_API fake_launch_host_func(const char *name, StreamH hStream, HostFnT fn, void *userData);
FAKE_API fake_ipc_get_event_handle(const char *name, void *handle64, EventH hEvent);
FAKE_API fake_ipc_open_event_handle(const char *name, EventH *phEvent, const void *handle64);
// `elem`: CUDA's ElementSizeBytes (4, 8 or 16), 0 for HIP's call, which has none.
FAKE_API fake_malloc_pitch(const char *name, DevPtr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem);
// A 2-D (depth 1) or 3-D copy of rows of `width` bytes: the geometry already checked against the
// vendor's structure (pitch >= width and the like) by the front.
FAKE_API fake_memcpy_rows(const char *name, DevPtr dst, DevPtr src, size_t width, const RowsGeom &g, StreamH hStream);
// `height` rows of `count` elements of `g.elem` bytes, `g.dst_pitch` apart, set to `value`.
FAKE_API fake_memset_rows(const char *name, DevPtr dst, uint32_t value, size_t count, const RowsGeom &g,
                          StreamH hStream);
// fake_api_graphs.cpp: stream capture, graphs and user objects, in their CUDA 12.0 forms (HIP's
// take the same arguments; hipGraphInstantiate is the 5-argument form)
FAKE_API fake_cuStreamBeginCapture_v2(StreamH hStream, CaptureModeT mode);
FAKE_API fake_cuStreamEndCapture(StreamH hStream, GraphH *phGraph);
FAKE_API fake_cuStreamIsCapturing(StreamH hStream, CaptureStatusT *captureStatus);
FAKE_API fake_cuStreamGetCaptureInfo_v2(StreamH hStream, CaptureStatusT *captureStatus_out, CaptureIdT *id_out,
                                        GraphH *graph_out, const GraphNodeH **dependencies_out,
                                        size_t *numDependencies_out);
FAKE_API fake_cuThreadExchangeStreamCaptureMode(CaptureModeT *mode);
FAKE_API fake_cuGraphInstantiateWithFlags(GraphExecH *phGraphExec, GraphH hGraph, unsigned long long flags);
FAKE_API fake_cuGraphInstantiate_v1(GraphExecH *phGraphExec, GraphH hGraph, GraphNodeH *phErrorNode, char *logBuffer,
                                    size_t bufferSize);
FAKE_API fake_cuGraphLaunch(GraphExecH hGraphExec, StreamH hStream);
FAKE_API fake_cuGraphExecDestroy(GraphExecH hGraphExec);
FAKE_API fake_cuGraphDestroy(GraphH hGraph);
FAKE_API fake_cuGraphGetNodes(GraphH hGraph, GraphNodeH *nodes, size_t *numNodes);
FAKE_API fake_cuUserObjectCreate(UserObjectH *object_out, void *ptr, HostFnT destroy, unsigned int initialRefcount,
                                 unsigned int flags);
FAKE_API fake_cuUserObjectRetain(UserObjectH object, unsigned int count);
FAKE_API fake_cuUserObjectRelease(UserObjectH object, unsigned int count);
FAKE_API fake_cuGraphRetainUserObject(GraphH graph, UserObjectH object, unsigned int count, unsigned int flags);
FAKE_API fake_cuGraphReleaseUserObject(GraphH graph, UserObjectH object, unsigned int count);
