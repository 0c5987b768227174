// GpuBackend<Vendor>: what a stream captures, a thread's capture mode, and a
// callback when a graph is gone.  Included once per vendor by the file that
// instantiates the template.
//
// None of these calls needs a context: a stream names its own, the capture
// mode is the thread's, and user objects belong to the graph.
#pragma once

#include <atomic>
#include <new>

#include "backends/gpu/gpu_backend.hpp"

namespace gpumem::detail::gpu {

template <typename Vendor>
status_t GpuBackend<Vendor>::capture_state(int32_t, void *stream, CaptureState *out)
{
    int status = 0;
    uint64_t id = 0;
    void *graph = nullptr;
    // Asked on each allocation and free of gpumem's own pool: the success
    // path makes no variadic call (check() cannot be inlined).
    const auto c = v_.capture_info(stream, &status, &id, &graph);
    if (c.r != Api::success) [[unlikely]]
        return check(api(), c, "ask whether stream %p is capturing a graph", stream);
    *out = CaptureState{};
    if (status == Vendor::capture_active)
        *out = CaptureState{CaptureState::Status::active, id, graph};
    else if (status == Vendor::capture_invalidated)
        *out = CaptureState{CaptureState::Status::invalidated, id, nullptr};
    return GPUMEM_SUCCESS;
}

// A failed exchange leaves the thread's mode as it was, which is what the
// caller asked to put back: nothing to report.
template <typename Vendor> int32_t GpuBackend<Vendor>::relax_capture_mode()
{
    int mode = Vendor::relaxed_capture_mode;
    if (v_.exchange_capture_mode(&mode).r != Api::success)
        return Vendor::relaxed_capture_mode;
    return mode;
}

template <typename Vendor> void GpuBackend<Vendor>::restore_capture_mode(int32_t mode)
{
    if (mode == Vendor::relaxed_capture_mode)
        return; // relaxed before, and so still
    int m = mode;
    (void)v_.exchange_capture_mode(&m);
}

namespace {

// What a user object's destructor calls: the caller's release, unless the
// object never reached the graph (then the caller keeps its data, and the
// destructor, which the runtime still runs, only frees this).
struct GraphCallback {
    void (*release)(void *);
    void *data;
    std::atomic<bool> cancelled{false};

    static void run(void *self)
    {
        auto *cb = static_cast<GraphCallback *>(self);
        if (!cb->cancelled.load(std::memory_order_acquire))
            cb->release(cb->data);
        delete cb;
    }
};

} // namespace

template <typename Vendor>
status_t GpuBackend<Vendor>::on_graph_destroyed(void *graph, void (*release)(void *), void *data)
{
    if (!api().has_user_objects())
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "this %s runtime has no graph user objects, so gpumem cannot tell when graph %p is destroyed",
                    Vendor::name, graph);
    auto *cb = new (std::nothrow) GraphCallback{release, data};
    if (!cb)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "out of host memory for graph %p's callback", graph);
    void *object = nullptr;
    if (status_t st = check(api(), v_.user_object_create(&object, GraphCallback::run, cb),
                            "make a user object for graph %p", graph)) {
        delete cb;
        return st;
    }
    if (status_t st = check(api(), v_.graph_take_user_object(graph, object), "hand a user object to graph %p", graph)) {
        cb->cancelled.store(true, std::memory_order_release);
        (void)v_.user_object_release(object); // its destructor frees cb
        return st;
    }
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::gpu
