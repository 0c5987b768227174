// The engine of the fake CUDA driver and the fake HIP runtime: what stream capture and graphs
// need in runtime-neutral terms: the calling thread's identity and capture interaction mode,
// graph allocations, user objects and the thread that runs their destructors.  The capture
// rules and the entry points are the front-end's (fake_api_graphs.cpp).
//
// SPDX-License-Identifier: MIT
#include "fake_gpu_engine.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <thread>
#include <vector>

namespace fakegpu {

// ---------------------------------------------------------------------------------------------
// The calling thread
// ---------------------------------------------------------------------------------------------
// Initial-exec, as every thread_local of the fakes (see error_name() in fake_api_streams.cpp).
__attribute__((tls_model("initial-exec"))) static thread_local uint64_t tl_serial = 0;
__attribute__((tls_model("initial-exec"))) static thread_local int tl_capture_mode = kCaptureGlobal;
__attribute__((tls_model("initial-exec"))) static thread_local bool tl_in_callback = false;
__attribute__((tls_model("initial-exec"))) static thread_local int tl_stream_work = 0; // StreamWorkScope depth
// Destructors due when the calling thread's API call returns (run_due_callbacks).  A pointer, so
// that the thread_local stays trivial (initial-exec).
__attribute__((tls_model("initial-exec"))) static thread_local std::vector<std::pair<void (*)(void *), void *>>
    *tl_due = nullptr;

uint64_t thread_serial()
{
    static std::atomic<uint64_t> next{1};
    if (tl_serial == 0)
        tl_serial = next.fetch_add(1);
    return tl_serial;
}

int thread_capture_mode() { return tl_capture_mode; }
void set_thread_capture_mode(int mode) { tl_capture_mode = mode; }

// ---------------------------------------------------------------------------------------------
// Graphs and their allocations
// ---------------------------------------------------------------------------------------------
bool Graph::has_mem_nodes() const
{
    for (const GraphNode &n : nodes)
        if (n.kind == NodeKind::Alloc || n.kind == NodeKind::Free)
            return true;
    return false;
}

GraphMem::~GraphMem()
{
    if (va == 0)
        return;
    region_release_locked(va, charged);
    auto it = state().graph_mems.find(va);
    if (it != state().graph_mems.end() && it->second.expired())
        state().graph_mems.erase(it);
}

void graph_mem_set_live_locked(const std::shared_ptr<GraphMem> &m, bool live)
{
    if (m->live == live)
        return;
    State &s = state();
    Device &d = s.devices[(size_t)m->device];
    m->live = live;
    if (live) {
        Segment seg;
        seg.size = m->size;
        seg.charged = m->charged;
        seg.shadow = region_shadow(m->va);
        seg.kind = SegKind::GraphAlloc;
        seg.device = m->device;
        seg.gmem = m;
        s.segments[m->va] = std::move(seg);
        d.used += m->charged;
    } else {
        d.used -= std::min(d.used, m->charged);
        s.segments.erase(m->va); // (the caller's reference keeps *m)
    }
}

ExecRefs::~ExecRefs()
{
    for (const auto &kv : user_refs)
        user_object_release_locked(kv.first, kv.second);
}

void user_object_release_locked(uint64_t id, uint64_t count)
{
    auto it = state().user_objects.find(id);
    if (it == state().user_objects.end())
        return;
    UserObject &o = it->second;
    o.refs -= std::min(o.refs, count);
    if (o.refs == 0) {
        if (tl_stream_work > 0) {
            schedule_callback_locked(o.destroy, o.ptr);
        } else {
            if (tl_due == nullptr)
                tl_due = new std::vector<std::pair<void (*)(void *), void *>>;
            tl_due->emplace_back(o.destroy, o.ptr);
        }
        state().user_objects.erase(it);
    }
}

StreamWorkScope::StreamWorkScope() { ++tl_stream_work; }
StreamWorkScope::~StreamWorkScope() { --tl_stream_work; }

void run_due_callbacks()
{
    while (tl_due != nullptr) {
        std::vector<std::pair<void (*)(void *), void *>> *due = tl_due;
        tl_due = nullptr;
        for (const std::pair<void (*)(void *), void *> &item : *due) {
            tl_in_callback = true;
            item.first(item.second);
            tl_in_callback = false;
        }
        delete due;
    }
}

// ---------------------------------------------------------------------------------------------
// The callback thread
// ---------------------------------------------------------------------------------------------
namespace {
struct Callbacks {
    std::mutex mu;
    std::condition_variable work;   // something queued, or a flush asked
    std::condition_variable ran;    // a callback finished
    std::deque<std::pair<void (*)(void *), void *>> queue;
    uint64_t scheduled = 0, done = 0;
    int flushers = 0;
    bool started = false;
};
Callbacks *g_callbacks = new Callbacks; // never destroyed: the thread may outlive main

// A child of fork() has no callback thread: it starts its own, with a state of its own.
void after_fork_in_child() { g_callbacks = new Callbacks; }

// How long the thread lets a scheduled callback wait when nobody flushes: long enough that a
// program that did not wait for it sees it not yet run, short enough not to matter otherwise.
constexpr auto kCallbackDelay = std::chrono::milliseconds(20);

void callback_thread(Callbacks *c)
{
    std::unique_lock<std::mutex> lock(c->mu);
    for (;;) {
        c->work.wait(lock, [c] { return !c->queue.empty(); });
        if (c->flushers == 0)
            c->work.wait_for(lock, kCallbackDelay, [c] { return c->flushers > 0; });
        while (!c->queue.empty()) {
            std::pair<void (*)(void *), void *> item = c->queue.front();
            c->queue.pop_front();
            lock.unlock();
            tl_in_callback = true;
            item.first(item.second);
            tl_in_callback = false;
            lock.lock();
            ++c->done;
            c->ran.notify_all();
        }
    }
}
} // namespace

void schedule_callback_locked(void (*fn)(void *), void *arg)
{
    static std::once_flag atfork;
    std::call_once(atfork, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
    Callbacks *c = g_callbacks;
    std::lock_guard<std::mutex> lock(c->mu);
    if (!c->started) {
        std::thread(callback_thread, c).detach();
        c->started = true;
    }
    c->queue.emplace_back(fn, arg);
    ++c->scheduled;
    c->work.notify_all();
}

void flush_callbacks()
{
    if (tl_in_callback)
        runtime_reentered("the flush function");
    Callbacks *c = g_callbacks;
    std::unique_lock<std::mutex> lock(c->mu);
    const uint64_t target = c->scheduled;
    if (c->done >= target)
        return;
    ++c->flushers;
    c->work.notify_all();
    c->ran.wait(lock, [c, target] { return c->done >= target; });
    --c->flushers;
}

bool in_runtime_callback() { return tl_in_callback; }
void set_in_runtime_callback(bool on) { tl_in_callback = on; }

void runtime_reentered(const char *api)
{
    fprintf(stderr,
            "%s: %s was called from a user-object destructor or a host function: neither may call the runtime "
            "(illegal on a real driver, which runs them on an internal thread); aborting\n",
            engine_config().name, api);
    abort();
}

} // namespace fakegpu
