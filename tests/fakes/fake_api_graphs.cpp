// Both fakes: stream capture, graphs and user objects (compiled once per vendor; see fake_api.hpp).
//
// Design note: stream capture.  What the fakes answer, and what each answer rests on.  Every
// answer is a question of cuda_probe's group "capture", which driver 580.159.04 (CUDA 13.0) answered
// on an H100 (probe/h100-capture.txt; suite fake-calibration compares): the fake answers as it
// did.  Where a rule reaches past the questions asked, the fake generalises the driver's answers;
// what no driver was asked yet is said so (the README lists the open questions).  HIP follows CUDA.
//
// - State.  A capture belongs to its origin stream; it has a process-unique id, the mode it began
//   with, the thread that began it and the graph being built (GetCaptureInfo returns it while
//   active, to any thread, and asking never changes the capture).  Another stream joins it by
//   waiting on an event recorded in it (a fork).  The end: where nothing captures, ILLEGAL_STATE;
//   on a stream that joined, UNMATCHED, and the capture is invalidated (the driver's forked
//   captures then ended INVALIDATED, joined back or not); from another thread than the one that
//   began a GLOBAL or THREAD_LOCAL capture, WRONG_THREAD, and the capture is over (no graph; the
//   stream captures no more); an invalidated capture ends INVALIDATED with a NULL graph, its graph
//   destroyed; a fork not joined back, UNJOINED (not observed yet: the driver's forks were
//   invalidated first).  Beginning on the legacy stream is UNSUPPORTED, on a capturing stream
//   ILLEGAL_STATE.
// - Captured work.  Copies (pageable host memory too: the launch copies what it holds then),
//   fills, stream-ordered allocation (an alloc node: the address is fixed at capture and the
//   memory exists from a launch's alloc node to its free) and frees of graph allocations (a free
//   node).  A free in a capture of memory that is no graph allocation (a block from before it) is
//   INVALID_VALUE and the capture goes on without it (the graph instantiates and launches).  An
//   event recorded in a capture is a captured event; a wait on it joins or orders; a wait on an
//   event recorded outside the capture crosses its boundary: ISOLATION, invalidating, unless
//   CU_EVENT_WAIT_EXTERNAL makes it an external wait node (that flag outside a capture:
//   ILLEGAL_STATE); a wait on an event of another capture: MERGE, invalidating.  Work on an
//   invalidated capture: INVALIDATED.
// - Refused on a capturing stream: synchronising or querying it (UNSUPPORTED, invalidating, in
//   every mode), querying or synchronising a captured event (CAPTURED_EVENT, invalidating, even
//   from a thread in RELAXED mode; once its capture ended, INVALID_VALUE until recorded again
//   outside one), cuStreamAttachMemAsync and prefetches, batched or not, and batched discards
//   (UNSUPPORTED, invalidating), the batched copy (UNSUPPORTED, and the capture goes on), graph
//   launches (UNSUPPORTED, invalidating: child graphs are not modelled).  Instantiating the graph
//   of a capture under way: UNSUPPORTED.
// - The legacy stream while a blocking stream of its device captures: IMPLICIT for any use (work,
//   synchronous copies and fills, synchronisation, a query, stream-ordered allocation), whatever
//   the thread or mode, and the blocking captures are invalidated; asking cuStreamIsCapturing or
//   GetCaptureInfo of it is IMPLICIT too, without invalidating.  While only non-blocking streams
//   capture, the legacy stream is an ordinary stream that does not capture.  Device
//   synchronisation (cuCtxSynchronize) is UNSUPPORTED while any stream of the device captures, in
//   any mode and from a thread in RELAXED mode too, and invalidates those captures.
// - Potentially unsafe calls follow cuThreadExchangeStreamCaptureMode: a thread whose mode is
//   RELAXED may make them; otherwise they are UNSUPPORTED when the thread began a capture that is
//   not RELAXED (ongoing, active or invalidated) or, for a thread in GLOBAL mode, when another
//   thread began a GLOBAL one; those captures are invalidated.  The calls: cuMemAlloc, cuMemFree,
//   cuMemHostAlloc, cuMemFreeHost, cuMemHostRegister/Unregister, cuMemAllocManaged, the pool calls
//   cuMemPoolCreate/Destroy/SetAttribute/GetAttribute/SetAccess/TrimTo, the host waiting for or
//   asking about a stream or event outside the capture (cuStreamSynchronize/Query,
//   cuEventSynchronize/Query), and stream-ordered allocation and frees on a stream that does not
//   capture (cuMemFreeAsync measured on the legacy stream; cuMemAllocAsync and
//   cuMemAllocFromPoolAsync assumed alike).  Not potentially unsafe (the driver made them in every
//   mode): the VMM calls (cuMemCreate/Release/Map/Unmap/SetAccess) and the synchronous copies and
//   fills (cuMemcpy, cuMemsetD8: the legacy stream's gate alone applies to them).
// - Graphs.  An executable graph holds its own user-object references, released when it and its
//   pending launches are done; a launch enqueues the nodes in capture order on its stream (with
//   FAKE_*_DEFER like any stream work), checking every copy and fill at the launch; a launch while
//   the previous launch's allocation is not freed is INVALID_VALUE unless instantiated with
//   AUTO_FREE_ON_LAUNCH; a graph with memory nodes has at most one executable graph at a time (a
//   second instantiation: NOT_SUPPORTED).
// - User objects: a destructor runs on the thread whose call let go of the last reference, before
//   that call returns (cuUserObjectRelease, cuGraphDestroy, cuGraphExecDestroy, the end of an
//   invalidated capture), as the driver did; when completed stream work lets go (a launch that
//   outlived its executable graph), on the fake's own thread, later (fake_gpu_graphs.cpp), as the
//   driver's "shared internal thread" (cuUserObjectCreate's documentation).
// Not modelled: kernels, host nodes, child graphs, graph editing, capture to an existing graph,
// the per-thread default stream as a stream of its own (capturing it is UNSUPPORTED here).
//
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

namespace FAKE_NS {

namespace {

const char *mode_name(int m)
{
    return m == kCaptureGlobal ? "GLOBAL" : m == kCaptureThreadLocal ? "THREAD_LOCAL" : m == kCaptureRelaxed ? "RELAXED"
                                                                                                            : "?";
}

void invalidate_locked(Capture &c, const std::string &why)
{
    if (c.invalidated)
        return;
    c.invalidated = true;
    c.why = why;
}

// The captures a blocking stream of `dev` takes part in (the legacy stream of `dev` orders after them).
std::vector<std::shared_ptr<Capture>> blocking_captures_locked(int dev)
{
    std::vector<std::shared_ptr<Capture>> out;
    for (auto &kv : state().streams) {
        const Stream &s = *kv.second;
        if (s.capture && s.device == dev && !(s.flags & kStreamNonBlocking) &&
            std::find(out.begin(), out.end(), s.capture) == out.end())
            out.push_back(s.capture);
    }
    return out;
}

// Every stream of the capture leaves it; the capture is over (its graph stays with the caller).
void end_capture_locked(Capture &c)
{
    for (auto &kv : state().streams) {
        Stream &s = *kv.second;
        if (s.capture.get() == &c) {
            s.capture.reset();
            s.capture_deps.clear();
            s.capture_deps_out.clear();
        }
    }
    c.graph->capture = 0;
    state().captures.erase(c.id); // (the caller holds a reference to c)
}

void destroy_graph_locked(const std::shared_ptr<Graph> &g)
{
    for (const auto &kv : g->user_refs)
        user_object_release_locked(kv.first, kv.second);
    g->user_refs.clear();
    if (g->execs == 0)
        for (GraphNode &n : g->nodes)
            if (n.kind == NodeKind::Free)
                n.mem->freed_in_graph = false;
    state().graphs.erase(g->id);
}

std::shared_ptr<Graph> find_graph_locked(GraphH h)
{
    auto it = state().graphs.find(reinterpret_cast<uint64_t>(h));
    return it == state().graphs.end() ? nullptr : it->second;
}

UserObject *find_user_object_locked(UserObjectH h)
{
    auto it = state().user_objects.find(reinterpret_cast<uint64_t>(h));
    return it == state().user_objects.end() ? nullptr : &it->second;
}

Result find_event_locked(EventH h, Event **out)
{
    auto it = state().events.find(reinterpret_cast<uint64_t>(h));
    if (it == state().events.end())
        return kErrInvalidHandle;
    *out = it->second.get();
    return kOk;
}

void add_deps(std::vector<uint64_t> *to, const std::vector<uint64_t> &from)
{
    for (uint64_t d : from)
        if (std::find(to->begin(), to->end(), d) == to->end())
            to->push_back(d);
}

const std::vector<GraphNode> *g_scope = nullptr; // the graph being captured or launched (state().mu held)

// A mode as the caller passed it (its bits: an out-of-range value is not loaded as the enum).
int mode_value(const CaptureModeT &m)
{
    int v = 0;
    static_assert(sizeof v == sizeof m, "capture modes are ints");
    memcpy(&v, &m, sizeof v);
    return v;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// The rules (see the design note above)
// ---------------------------------------------------------------------------------------------
GraphScope::GraphScope(const std::vector<GraphNode> *nodes) : prev_(g_scope) { g_scope = nodes; }
GraphScope::~GraphScope() { g_scope = prev_; }

const GraphMem *graph_scope_mem_locked(uint64_t addr)
{
    if (g_scope == nullptr)
        return nullptr;
    for (const GraphNode &n : *g_scope)
        if (n.kind == NodeKind::Alloc && addr >= n.mem->va && addr - n.mem->va < n.mem->size)
            return n.mem.get();
    return nullptr;
}

Result capture_gate_locked(Call &call_, Stream &st, Capture **cap)
{
    *cap = nullptr;
    if (st.legacy) {
        std::vector<std::shared_ptr<Capture>> victims = blocking_captures_locked(st.device);
        if (victims.empty())
            return kOk;
        for (const std::shared_ptr<Capture> &c : victims)
            invalidate_locked(*c, std::string(call_.name()) + " used the legacy stream");
        return call_.fail(kErrCaptureImplicit,
                          "the legacy stream of device %d would wait for capture %llu, on a blocking stream "
                          "(capture on a stream made with the non-blocking flag, or use another stream); "
                          "%zu capture(s) invalidated",
                          st.device, (unsigned long long)victims[0]->id, victims.size());
    }
    if (!st.capture)
        return kOk;
    if (st.capture->invalidated)
        return call_.fail(kErrCaptureInvalidated, "capture %llu on this stream was invalidated (%s): end it",
                          (unsigned long long)st.capture->id, st.capture->why.c_str());
    *cap = st.capture.get();
    return kOk;
}

Result stream_ordered_gate_locked(Call &call_, Stream &st, Capture **cap)
{
    if (Result r = capture_gate_locked(call_, st, cap))
        return r;
    return *cap ? kOk : unsafe_during_capture_locked(call_);
}

Result refuse_if_capturing_locked(Call &call_, Stream &st, bool invalidate, const char *what)
{
    if (!st.capture)
        return kOk;
    Capture &c = *st.capture;
    if (invalidate)
        invalidate_locked(c, std::string(call_.name()) + " on a capturing stream");
    return call_.fail(kErrCaptureUnsupported, "%s cannot be captured (capture %llu%s)", what, (unsigned long long)c.id,
                      invalidate ? ", now invalidated" : ", which goes on");
}

Result unsafe_during_capture_locked(Call &call_)
{
    const int mode = thread_capture_mode();
    if (mode == kCaptureRelaxed || state().captures.empty())
        return kOk;
    const uint64_t me = thread_serial();
    std::vector<std::shared_ptr<Capture>> victims;
    for (auto &kv : state().captures) {
        const Capture &c = *kv.second;
        if (c.thread == me ? c.mode != kCaptureRelaxed : mode == kCaptureGlobal && c.mode == kCaptureGlobal)
            victims.push_back(kv.second);
    }
    if (victims.empty())
        return kOk;
    for (const std::shared_ptr<Capture> &c : victims)
        invalidate_locked(*c, std::string(call_.name()) + " (potentially unsafe) during the capture");
    const Capture &c = *victims[0];
    return call_.fail(kErrCaptureUnsupported,
                      "%s is potentially unsafe during capture %llu (begun %s by %s; this thread's mode is %s): "
                      "%zu capture(s) invalidated (exchange this thread's mode to RELAXED for the call, or make "
                      "it before the capture)",
                      call_.name(), (unsigned long long)c.id, mode_name(c.mode),
                      c.thread == me ? "this thread" : "another thread", mode_name(mode), victims.size());
}

Result device_sync_gate_locked(Call &call_, int dev)
{
    std::vector<std::shared_ptr<Capture>> victims;
    for (auto &kv : state().streams) {
        const Stream &s = *kv.second;
        if (s.capture && s.device == dev && std::find(victims.begin(), victims.end(), s.capture) == victims.end())
            victims.push_back(s.capture);
    }
    if (victims.empty())
        return kOk;
    for (const std::shared_ptr<Capture> &c : victims)
        invalidate_locked(*c, std::string(call_.name()) + " synchronised the device");
    return call_.fail(kErrCaptureUnsupported,
                      "device %d cannot be synchronised while its streams capture (capture %llu, in any mode): "
                      "%zu capture(s) invalidated (synchronise the streams you need instead)",
                      dev, (unsigned long long)victims[0]->id, victims.size());
}

Result stream_host_wait_gate_locked(Call &call_, Stream &st)
{
    if (st.legacy) {
        Capture *cap = nullptr;
        if (Result r = capture_gate_locked(call_, st, &cap))
            return r;
    } else if (st.capture) {
        Capture &c = *st.capture;
        invalidate_locked(c, std::string(call_.name()) + " of the capturing stream");
        return call_.fail(kErrCaptureUnsupported,
                          "the stream is capturing (capture %llu): its work does not run until a launch, so the "
                          "host cannot wait for it or ask about it; capture invalidated",
                          (unsigned long long)c.id);
    }
    return unsafe_during_capture_locked(call_);
}

Result event_host_wait_gate_locked(Call &call_, Event &ev)
{
    if (ev.capture != 0) {
        auto it = state().captures.find(ev.capture);
        if (it != state().captures.end()) {
            invalidate_locked(*it->second, std::string(call_.name()) + " of an event recorded in the capture");
            return call_.fail(kErrCapturedEvent,
                              "the event was recorded in capture %llu, which is under way (it stands for work that "
                              "never runs as such): capture invalidated",
                              (unsigned long long)ev.capture);
        }
        return call_.fail(kErrInvalidValue,
                          "the event was last recorded in capture %llu, which has ended (it stands for a node of "
                          "that graph, not for work): record it outside a capture first",
                          (unsigned long long)ev.capture);
    }
    return unsafe_during_capture_locked(call_);
}

GraphNode &capture_node_locked(Stream &st, NodeKind kind)
{
    Graph &g = *st.capture->graph;
    g.nodes.emplace_back();
    GraphNode &n = g.nodes.back();
    n.id = new_handle(kNodeTag);
    n.kind = kind;
    n.deps = st.capture_deps;
    st.capture_deps.assign(1, n.id);
    return n;
}

Result capture_record_event_locked(Call &call_, Stream &st, Event &ev, bool *handled)
{
    *handled = true;
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, st, &cap))
        return r;
    if (cap == nullptr) {
        ev.capture = 0; // recorded outside any capture from now on
        ev.capture_deps.clear();
        *handled = false;
        return kOk;
    }
    ev.capture = cap->id;
    ev.capture_deps = st.capture_deps;
    ev.recorded = true;
    ev.completed = false;
    ev.stream = st.id;
    return call_.done(kOk);
}

Result capture_wait_event_locked(Call &call_, Stream &st, Event &ev, unsigned flags, bool *handled)
{
    *handled = true;
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, st, &cap))
        return r;
    auto ongoing = ev.capture ? state().captures.find(ev.capture) : state().captures.end();
    const bool captured_event = ongoing != state().captures.end();
    if (cap == nullptr) {
        if (flags & kEventWaitExternal)
            return call_.fail(kErrIllegalState, "the external-wait flag is for waits in a capture, and the stream "
                                                "does not capture");
        if (ev.capture == 0) {
            *handled = false; // an ordinary wait
            return kOk;
        }
        if (!captured_event)
            return call_.fail(kErrInvalidValue,
                              "the event was last recorded in capture %llu, which has ended: record it again outside "
                              "a capture",
                              (unsigned long long)ev.capture);
        Capture &c = *ongoing->second;
        if (st.legacy) {
            invalidate_locked(c, "the legacy stream waited on an event recorded in it");
            return call_.fail(kErrCaptureUnsupported, "the legacy stream cannot join capture %llu; invalidated",
                              (unsigned long long)c.id);
        }
        if (c.invalidated)
            return call_.fail(kErrCaptureInvalidated, "capture %llu, which recorded the event, was invalidated (%s)",
                              (unsigned long long)c.id, c.why.c_str());
        // A fork: the stream joins the capture, after what the event recorded.
        st.capture = ongoing->second;
        st.capture_deps = ev.capture_deps;
        OUT("the stream joins capture %llu", (unsigned long long)c.id);
        return call_.done(kOk);
    }
    if (captured_event && ev.capture == cap->id) {
        add_deps(&st.capture_deps, ev.capture_deps); // a join (or an order within the capture)
        return call_.done(kOk);
    }
    if (captured_event) {
        invalidate_locked(*cap, "a wait on an event of another capture");
        return call_.fail(kErrCaptureMerge, "the event belongs to capture %llu, this stream to capture %llu: invalidated",
                          (unsigned long long)ev.capture, (unsigned long long)cap->id);
    }
    if (!ev.recorded)
        return call_.done(kOk); // an event never recorded stands for no work
    if (ev.capture == 0 && (flags & kEventWaitExternal)) {
        GraphNode &n = capture_node_locked(st, NodeKind::EventWait);
        n.event = ev.id;
        OUT("external wait node");
        return call_.done(kOk);
    }
    invalidate_locked(*cap, "a wait on an event recorded outside the capture");
    return call_.fail(kErrCaptureIsolation,
                      "the event was recorded outside capture %llu: waiting on it would cross the capture's "
                      "boundary (wait before beginning the capture%s); invalidated",
                      (unsigned long long)cap->id, kEventWaitExternal ? ", or pass the external-wait flag" : "");
}

Result capture_alloc_locked(Call &call_, Stream &st, int device, uint64_t size, DevPtr *dptr)
{
    uint64_t charged = 0, va = 0;
    if (!round_up(size, kPage, &charged) || charged > config().memory)
        return call_.fail(kErrOutOfMemory, "%llu bytes: more than the device has", (unsigned long long)size);
    if (!region_alloc_locked(charged, charged >= kGranularity ? kGranularity : kPage, 0, &va))
        return call_.fail(kErrOutOfMemory, "no device address space left");
    std::shared_ptr<GraphMem> m = std::make_shared<GraphMem>();
    m->va = va;
    m->size = size;
    m->charged = charged;
    m->device = device;
    m->graph = st.capture->graph->id;
    state().graph_mems[va] = m;
    GraphNode &n = capture_node_locked(st, NodeKind::Alloc);
    n.mem = m;
    *dptr = va;
    OUT("*dptr=0x%llx (an alloc node of capture %llu)", (unsigned long long)va, (unsigned long long)st.capture->id);
    return call_.done(kOk);
}

Result capture_free_locked(Call &call_, Stream &st, DevPtr dptr)
{
    Capture &c = *st.capture;
    auto it = state().graph_mems.find(dptr);
    std::shared_ptr<GraphMem> m = it == state().graph_mems.end() ? nullptr : it->second.lock();
    if (!m)
        return call_.fail(kErrInvalidValue,
                          "0x%llx is not a graph allocation: a free in a capture becomes a free node, which frees "
                          "only what an alloc node allocated (free it before the capture or after); capture %llu "
                          "goes on without it",
                          (unsigned long long)dptr, (unsigned long long)c.id);
    if (m->freed_in_graph)
        return call_.fail(kErrInvalidValue, "0x%llx already has a free node; capture %llu goes on without this one",
                          (unsigned long long)dptr, (unsigned long long)c.id);
    m->freed_in_graph = true;
    GraphNode &n = capture_node_locked(st, NodeKind::Free);
    n.mem = m;
    OUT("a free node of capture %llu", (unsigned long long)c.id);
    return call_.done(kOk);
}

void stream_leaves_capture_locked(Stream &st)
{
    if (!st.capture)
        return;
    std::shared_ptr<Capture> c = st.capture;
    if (c->origin == st.id) {
        end_capture_locked(*c);
        destroy_graph_locked(c->graph);
        return;
    }
    st.capture.reset();
    st.capture_deps.clear();
    invalidate_locked(*c, "a stream that had joined it was destroyed");
}

Result capture_info_locked(Call &call_, StreamH hStream, CaptureStatusT *status, CaptureIdT *id, GraphH *graph,
                           const GraphNodeH **deps, size_t *num, Stream **st_out)
{
    if (status == nullptr)
        return call_.fail(kErrInvalidValue, "the status pointer is NULL");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        return call_.fail(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    *st_out = st;
    if (st->legacy) {
        std::vector<std::shared_ptr<Capture>> blocking = blocking_captures_locked(st->device);
        if (!blocking.empty())
            return call_.fail(kErrCaptureImplicit,
                              "the legacy stream of device %d is unusable while capture %llu runs on a blocking stream "
                              "(the capture goes on)",
                              st->device, (unsigned long long)blocking[0]->id);
    }
    if (!st->capture) {
        *status = (CaptureStatusT)kCaptureNone;
        if (num)
            *num = 0;
        return kOk;
    }
    const Capture &c = *st->capture;
    *status = (CaptureStatusT)(c.invalidated ? kCaptureInvalidated : kCaptureActive);
    if (id)
        *id = (CaptureIdT)c.id;
    if (graph)
        *graph = reinterpret_cast<GraphH>(c.graph->id);
    st->capture_deps_out.clear();
    for (uint64_t d : st->capture_deps)
        st->capture_deps_out.push_back(reinterpret_cast<void *>(d));
    if (deps)
        *deps = st->capture_deps_out.empty() ? nullptr : reinterpret_cast<const GraphNodeH *>(st->capture_deps_out.data());
    if (num)
        *num = st->capture_deps_out.size();
    return kOk;
}

} // namespace FAKE_NS

// ---------------------------------------------------------------------------------------------
// Stream capture
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuStreamBeginCapture_v2(StreamH hStream, CaptureModeT mode_arg)
{
    const int mode = mode_value(mode_arg);
    FAKE_ENTER(API("StreamBeginCapture"), "hStream=%p, mode=%d", (void *)hStream, mode);
    if (mode < kCaptureGlobal || mode > kCaptureRelaxed)
        FAIL(kErrInvalidValue, "unknown mode %d", mode);
    if (is_default_stream(hStream))
        FAIL(kErrCaptureUnsupported, "the legacy default stream cannot capture (the per-thread one is not modelled)");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (st->capture)
        FAIL(kErrIllegalState, "the stream takes part in capture %llu already (%s)", (unsigned long long)st->capture->id,
             st->capture->invalidated ? "invalidated" : "active");
    State &s = state();
    std::shared_ptr<Capture> c = std::make_shared<Capture>();
    c->id = s.next_capture_id++;
    c->mode = mode;
    c->thread = thread_serial();
    c->origin = st->id;
    c->device = st->device;
    c->graph = std::make_shared<Graph>();
    c->graph->id = new_handle(kGraphTag);
    c->graph->device = st->device;
    c->graph->capture = c->id;
    s.graphs[c->graph->id] = c->graph;
    s.captures[c->id] = c;
    st->capture = c;
    st->capture_deps.clear();
    OUT("capture %llu, graph %p", (unsigned long long)c->id, reinterpret_cast<void *>(c->graph->id));
    RET(kOk);
}

FAKE_API fake_cuStreamEndCapture(StreamH hStream, GraphH *phGraph)
{
    FAKE_ENTER(API("StreamEndCapture"), "hStream=%p", (void *)hStream);
    if (phGraph == nullptr)
        FAIL(kErrInvalidValue, "phGraph is NULL");
    if (is_default_stream(hStream))
        FAIL(kErrIllegalState, "the legacy stream never captures");
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (!st->capture)
        FAIL(kErrIllegalState, "the stream is not capturing");
    std::shared_ptr<Capture> c = st->capture;
    *phGraph = nullptr;
    if (c->origin != st->id) {
        invalidate_locked(*c, std::string(call_.name()) + " on a stream that had joined it");
        FAIL(kErrCaptureUnmatched, "capture %llu began on another stream: end it there (it is invalidated now)",
             (unsigned long long)c->id);
    }
    if (c->mode != kCaptureRelaxed && c->thread != thread_serial()) {
        end_capture_locked(*c);
        destroy_graph_locked(c->graph);
        FAIL(kErrCaptureWrongThread,
             "capture %llu began in %s mode on another thread, which alone may end it (or begin RELAXED): the "
             "capture is over, its graph destroyed",
             (unsigned long long)c->id, mode_name(c->mode));
    }
    const std::vector<uint64_t> origin_deps = st->capture_deps;
    end_capture_locked(*c);
    std::shared_ptr<Graph> g = c->graph;
    if (c->invalidated) {
        destroy_graph_locked(g);
        FAIL(kErrCaptureInvalidated, "capture %llu was invalidated (%s): its graph is destroyed", (unsigned long long)c->id,
             c->why.c_str());
    }
    // Every node must lead to where the origin stands: a fork not joined back is an error.
    std::unordered_map<uint64_t, const GraphNode *> by_id;
    for (const GraphNode &n : g->nodes)
        by_id[n.id] = &n;
    std::set<uint64_t> reached;
    std::vector<uint64_t> todo = origin_deps;
    while (!todo.empty()) {
        uint64_t id = todo.back();
        todo.pop_back();
        if (!reached.insert(id).second)
            continue;
        auto it = by_id.find(id);
        if (it != by_id.end())
            todo.insert(todo.end(), it->second->deps.begin(), it->second->deps.end());
    }
    for (const GraphNode &n : g->nodes) {
        if (!reached.count(n.id)) {
            destroy_graph_locked(g);
            FAIL(kErrCaptureUnjoined,
                 "capture %llu forked to another stream whose work was not joined back (record an event there and "
                 "wait on it in the origin stream before ending); its graph is destroyed",
                 (unsigned long long)c->id);
        }
    }
    *phGraph = reinterpret_cast<GraphH>(g->id);
    OUT("*phGraph=%p, %zu nodes", (void *)*phGraph, g->nodes.size());
    RET(kOk);
}

FAKE_API fake_cuStreamIsCapturing(StreamH hStream, CaptureStatusT *captureStatus)
{
    FAKE_ENTER(API("StreamIsCapturing"), "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (Result r = capture_info_locked(call_, hStream, captureStatus, nullptr, nullptr, nullptr, nullptr, &st))
        return r;
    OUT("*captureStatus=%d", (int)*captureStatus);
    RET(kOk);
}

FAKE_API fake_cuStreamGetCaptureInfo_v2(StreamH hStream, CaptureStatusT *captureStatus_out, CaptureIdT *id_out,
                                        GraphH *graph_out, const GraphNodeH **dependencies_out,
                                        size_t *numDependencies_out)
{
    FAKE_ENTER(API("StreamGetCaptureInfo_v2"), "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (Result r = capture_info_locked(call_, hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                       numDependencies_out, &st))
        return r;
    OUT("*captureStatus_out=%d", (int)*captureStatus_out);
    RET(kOk);
}

FAKE_API fake_cuThreadExchangeStreamCaptureMode(CaptureModeT *mode)
{
    const int want = mode ? mode_value(*mode) : -1;
    FAKE_ENTER(API("ThreadExchangeStreamCaptureMode"), "mode=%d", want);
    if (mode == nullptr)
        FAIL(kErrInvalidValue, "mode is NULL");
    if (want < kCaptureGlobal || want > kCaptureRelaxed)
        FAIL(kErrInvalidValue, "unknown mode %d", want);
    const int old = thread_capture_mode();
    set_thread_capture_mode(want);
    *mode = (CaptureModeT)old;
    OUT("previous mode %s", mode_name(old));
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// Graphs
// ---------------------------------------------------------------------------------------------
static Result instantiate_locked(Call &call_, GraphExecH *phGraphExec, GraphH hGraph, unsigned long long flags)
{
    if (phGraphExec == nullptr)
        FAIL(kErrInvalidValue, "phGraphExec is NULL");
    // Instantiation needs a current context (probe capture.instantiate_no_context:
    // INVALID_CONTEXT from a thread with none); HIP always has a current device.
    int dev = 0;
    if (Result r = current_device_locked(&dev))
        FAIL(r, "no current context on this thread: make one current before instantiating");
    std::shared_ptr<Graph> g = find_graph_locked(hGraph);
    if (!g)
        FAIL(kErrInvalidValue, "not a live graph");
    if (g->capture)
        FAIL(kErrCaptureUnsupported, "the graph is still being captured (capture %llu): end the capture first",
             (unsigned long long)g->capture);
    if (flags & ~(kInstantiateAutoFree | kInstantiateNodePriority | kInstantiateUpload | kInstantiateDeviceLaunch))
        FAIL(kErrInvalidValue, "unknown flags 0x%llx", flags);
    if (flags & (kInstantiateUpload | kInstantiateDeviceLaunch))
        FAIL(kErrInvalidValue, "upload and device-launch instantiation are not modelled");
    if (g->has_mem_nodes() && g->execs > 0)
        FAIL(kErrNotSupported,
             "the graph has memory nodes and an executable graph already: destroy that one first (one at a time)");
    std::unique_ptr<GraphExec> e(new GraphExec);
    e->id = new_handle(kExecTag);
    e->device = g->device;
    e->graph = g->id;
    e->flags = flags;
    e->nodes = g->nodes;
    e->refs = std::make_shared<ExecRefs>();
    for (const auto &kv : g->user_refs) {
        auto it = state().user_objects.find(kv.first);
        if (it != state().user_objects.end()) {
            it->second.refs += kv.second; // references of its own
            e->refs->user_refs[kv.first] += kv.second;
        }
    }
    ++g->execs;
    *phGraphExec = reinterpret_cast<GraphExecH>(e->id);
    state().execs[e->id] = std::move(e);
    OUT("*phGraphExec=%p", (void *)*phGraphExec);
    RET(kOk);
}

FAKE_API fake_cuGraphInstantiateWithFlags(GraphExecH *phGraphExec, GraphH hGraph, unsigned long long flags)
{
    FAKE_ENTER(API("GraphInstantiateWithFlags"), "hGraph=%p, flags=0x%llx", (void *)hGraph, flags);
    return instantiate_locked(call_, phGraphExec, hGraph, flags);
}

FAKE_API fake_cuGraphInstantiate_v1(GraphExecH *phGraphExec, GraphH hGraph, GraphNodeH *phErrorNode, char *logBuffer,
                                    size_t bufferSize)
{
    FAKE_ENTER(API("GraphInstantiate"), "hGraph=%p, bufferSize=%zu", (void *)hGraph, bufferSize);
    if (phErrorNode)
        *phErrorNode = nullptr;
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return instantiate_locked(call_, phGraphExec, hGraph, 0);
}

FAKE_API fake_cuGraphLaunch(GraphExecH hGraphExec, StreamH hStream)
{
    FAKE_ENTER(API("GraphLaunch"), "hGraphExec=%p, hStream=%p", (void *)hGraphExec, (void *)hStream);
    auto eit = state().execs.find(reinterpret_cast<uint64_t>(hGraphExec));
    if (eit == state().execs.end())
        FAIL(kErrInvalidValue, "not a live executable graph");
    GraphExec &e = *eit->second;
    Stream *st = nullptr;
    if (Result r = find_stream_locked(hStream, &st))
        FAIL(r, is_default_stream(hStream) ? FAKE_NO_CURRENT : "not a live stream");
    Capture *cap = nullptr;
    if (Result r = capture_gate_locked(call_, *st, &cap))
        return r;
    if (Result r = refuse_if_capturing_locked(call_, *st, true, "a graph launch (a child graph: not modelled)"))
        return r;
    // The memory nodes in order: each allocation must be free when its alloc node comes (the
    // previous launch's freed, or AUTO_FREE_ON_LAUNCH), each free node's allocation allocated.
    const bool auto_free = (e.flags & kInstantiateAutoFree) != 0;
    std::set<const GraphMem *> live;
    for (const GraphNode &n : e.nodes) {
        if (n.kind == NodeKind::Alloc) {
            if (n.mem->live && !auto_free)
                FAIL(kErrInvalidValue,
                     "graph allocation 0x%llx of an earlier launch is not freed (free it, or instantiate with "
                     "AUTO_FREE_ON_LAUNCH)",
                     (unsigned long long)n.mem->va);
            live.insert(n.mem.get());
        } else if (n.kind == NodeKind::Free) {
            if (!live.erase(n.mem.get()) && !n.mem->live)
                FAIL(kErrInvalidValue, "a free node frees 0x%llx, which is not allocated at this launch",
                     (unsigned long long)n.mem->va);
        }
    }
    // Every copy and fill checked now, the graph's allocations counting as memory.
    std::vector<std::function<void()>> steps;
    std::vector<Dep> deps;
    {
        GraphScope scope(&e.nodes);
        for (size_t i = 0; i < e.nodes.size(); ++i) {
            const GraphNode &n = e.nodes[i];
            std::function<void()> run;
            std::string why;
            bool pageable = false;
            Result r = kOk;
            if (n.kind == NodeKind::Copy && n.size != 0)
                r = prepare_rows_copy_locked(n.dst, n.dst_dev, n.src, n.src_dev, n.size, n.rows, &run, &pageable, &why);
            else if (n.kind == NodeKind::Fill && n.size != 0)
                r = prepare_rows_fill_locked(n.dst, n.size, n.rows, n.value, n.dst_dev, &run, &pageable, &why);
            else if (n.kind == NodeKind::Host)
                run = [fn = n.fn, user = n.user] { run_host_node(fn, user); };
            if (r != kOk)
                FAIL(kErrIllegalAddress, "node %zu (a %s) touches memory that is gone: %s", i,
                     n.kind == NodeKind::Copy ? "copy" : "fill", why.c_str());
            if (run)
                steps.push_back(std::move(run));
            if (n.kind == NodeKind::EventWait) {
                Event *ev = nullptr;
                if (find_event_locked(reinterpret_cast<EventH>(n.event), &ev) == kOk && ev->recorded && ev->capture == 0 &&
                    ev->stream != st->id)
                    deps.emplace_back(ev->stream, ev->seq);
            }
        }
    }
    for (const GraphNode &n : e.nodes) {
        if (n.kind == NodeKind::Alloc) {
            if (n.mem->live) // AUTO_FREE_ON_LAUNCH
                graph_mem_set_live_locked(n.mem, false);
            graph_mem_set_live_locked(n.mem, true);
        } else if (n.kind == NodeKind::Free) {
            graph_mem_set_live_locked(n.mem, false);
        }
    }
    // Its references go with the launch until it has run (an exec destroyed meanwhile keeps them).
    std::shared_ptr<ExecRefs> refs = e.refs;
    enqueue_locked(*st, [steps, refs] {
        for (const std::function<void()> &f : steps)
            f();
    }, std::move(deps));
    RET(kOk);
}

FAKE_API fake_cuGraphExecDestroy(GraphExecH hGraphExec)
{
    FAKE_ENTER(API("GraphExecDestroy"), "hGraphExec=%p", (void *)hGraphExec);
    auto it = state().execs.find(reinterpret_cast<uint64_t>(hGraphExec));
    if (it == state().execs.end())
        FAIL(kErrInvalidValue, "not a live executable graph");
    auto g = state().graphs.find(it->second->graph);
    if (g != state().graphs.end())
        --g->second->execs;
    state().execs.erase(it); // pending launches keep its references until they ran
    RET(kOk);
}

FAKE_API fake_cuGraphDestroy(GraphH hGraph)
{
    FAKE_ENTER(API("GraphDestroy"), "hGraph=%p", (void *)hGraph);
    std::shared_ptr<Graph> g = find_graph_locked(hGraph);
    if (!g)
        FAIL(kErrInvalidValue, "not a live graph");
    if (g->capture)
        FAIL(kErrInvalidValue, "the graph is being captured (capture %llu): end the capture", (unsigned long long)g->capture);
    destroy_graph_locked(g);
    RET(kOk);
}

FAKE_API fake_cuGraphGetNodes(GraphH hGraph, GraphNodeH *nodes, size_t *numNodes)
{
    FAKE_ENTER(API("GraphGetNodes"), "hGraph=%p, nodes=%p", (void *)hGraph, (void *)nodes);
    if (numNodes == nullptr)
        FAIL(kErrInvalidValue, "numNodes is NULL");
    std::shared_ptr<Graph> g = find_graph_locked(hGraph);
    if (!g)
        FAIL(kErrInvalidValue, "not a live graph");
    if (nodes == nullptr) {
        *numNodes = g->nodes.size();
    } else {
        const size_t room = *numNodes;
        for (size_t i = 0; i < room; ++i)
            nodes[i] = i < g->nodes.size() ? reinterpret_cast<GraphNodeH>(g->nodes[i].id) : nullptr;
        *numNodes = std::min(room, g->nodes.size());
    }
    OUT("*numNodes=%zu", *numNodes);
    RET(kOk);
}

// ---------------------------------------------------------------------------------------------
// User objects
// ---------------------------------------------------------------------------------------------
FAKE_API fake_cuUserObjectCreate(UserObjectH *object_out, void *ptr, HostFnT destroy, unsigned int initialRefcount,
                                 unsigned int flags)
{
    FAKE_ENTER(API("UserObjectCreate"), "ptr=%p, initialRefcount=%u, flags=%u", ptr, initialRefcount, flags);
    if (object_out == nullptr || destroy == nullptr)
        FAIL(kErrInvalidValue, "object_out or destroy is NULL");
    if (initialRefcount == 0 || initialRefcount > INT_MAX)
        FAIL(kErrInvalidValue, "initialRefcount must be 1..INT_MAX");
    if (flags != kUserObjectNoDestructorSync)
        FAIL(kErrInvalidValue, "flags must be the no-destructor-sync flag (the only one defined)");
    UserObject o;
    o.id = new_handle(kUserObjTag);
    o.ptr = ptr;
    o.destroy = destroy;
    o.refs = initialRefcount;
    state().user_objects[o.id] = o;
    *object_out = reinterpret_cast<UserObjectH>(o.id);
    OUT("*object_out=%p", (void *)*object_out);
    RET(kOk);
}

FAKE_API fake_cuUserObjectRetain(UserObjectH object, unsigned int count)
{
    FAKE_ENTER(API("UserObjectRetain"), "object=%p, count=%u", (void *)object, count);
    if (count == 0 || count > INT_MAX)
        FAIL(kErrInvalidValue, "count must be 1..INT_MAX");
    UserObject *o = find_user_object_locked(object);
    if (o == nullptr)
        FAIL(kErrInvalidValue, "not a live user object");
    o->refs += count;
    RET(kOk);
}

FAKE_API fake_cuUserObjectRelease(UserObjectH object, unsigned int count)
{
    FAKE_ENTER(API("UserObjectRelease"), "object=%p, count=%u", (void *)object, count);
    if (count == 0 || count > INT_MAX)
        FAIL(kErrInvalidValue, "count must be 1..INT_MAX");
    UserObject *o = find_user_object_locked(object);
    if (o == nullptr)
        FAIL(kErrInvalidValue, "not a live user object");
    if (count > o->refs)
        FAIL(kErrInvalidValue, "releases %u references of %llu (undefined on a real driver)", count,
             (unsigned long long)o->refs);
    user_object_release_locked(o->id, count);
    RET(kOk);
}

FAKE_API fake_cuGraphRetainUserObject(GraphH graph, UserObjectH object, unsigned int count, unsigned int flags)
{
    FAKE_ENTER(API("GraphRetainUserObject"), "graph=%p, object=%p, count=%u, flags=%u", (void *)graph, (void *)object,
               count, flags);
    if (count == 0 || count > INT_MAX)
        FAIL(kErrInvalidValue, "count must be 1..INT_MAX");
    if (flags != 0 && flags != kGraphUserObjectMove)
        FAIL(kErrInvalidValue, "flags must be 0 or the move flag");
    std::shared_ptr<Graph> g = find_graph_locked(graph);
    UserObject *o = find_user_object_locked(object);
    if (!g || o == nullptr)
        FAIL(kErrInvalidValue, "not a live graph or user object");
    if (flags == kGraphUserObjectMove) {
        // (The caller's references are not told apart from the graphs': only the total is checked.)
        if (o->refs < count)
            FAIL(kErrInvalidValue, "moves %u references of %llu", count, (unsigned long long)o->refs);
    } else {
        o->refs += count;
    }
    g->user_refs[o->id] += count;
    RET(kOk);
}

FAKE_API fake_cuGraphReleaseUserObject(GraphH graph, UserObjectH object, unsigned int count)
{
    FAKE_ENTER(API("GraphReleaseUserObject"), "graph=%p, object=%p, count=%u", (void *)graph, (void *)object, count);
    if (count == 0 || count > INT_MAX)
        FAIL(kErrInvalidValue, "count must be 1..INT_MAX");
    std::shared_ptr<Graph> g = find_graph_locked(graph);
    if (!g)
        FAIL(kErrInvalidValue, "not a live graph");
    auto it = g->user_refs.find(reinterpret_cast<uint64_t>(object));
    if (it == g->user_refs.end() || it->second < count)
        FAIL(kErrInvalidValue, "the graph owns %u references of that object", it == g->user_refs.end() ? 0u : it->second);
    const uint64_t id = it->first;
    if ((it->second -= count) == 0)
        g->user_refs.erase(it);
    user_object_release_locked(id, count);
    RET(kOk);
}
