// Stream capture (CUDA and HIP graphs), as the core sees it.
//
// gpumem begins and ends no capture: the application (torch.cuda.graph,
// cudaStreamBeginCapture) does, and the runtime then records the work of
// the capturing stream as graph nodes instead of running it.  The core asks
// whether a stream is capturing only where the answer changes what it does
// (design note: docs/graphs.md):
//   - a batch on a capturing stream becomes one call per entry (the batched
//     calls cannot be captured);
//   - gpumem's own pool gives a capture private blocks, which the graph owns
//     until it is destroyed (core/pools/graph_blocks.hpp);
//   - a failed vendor-pool allocation on a capturing stream is not retried
//     after a synchronisation (which the capture cannot contain).
// The thin paths (copies, fills, the vendor's pools) never ask: the runtime
// records them.  gpumem's own calls that are not on the capturing stream
// (chunk allocation, trims, queries of its marks) run in the relaxed capture
// mode (Relaxed below), so they invalidate no capture of any thread.
#pragma once

#include "backends/backend.hpp"
#include "pool/stream_state.hpp"

namespace gpumem::detail {

// The backend's capture interface as the core asks it (none on a backend
// without capture).  The runtime owns one; services that ask take it.
class Capture {
public:
    explicit Capture(StreamCapture *runtime) : runtime_(runtime) {}

    // Whether work on `stream` may be captured at all (a cheap test first).
    bool may_capture(const StreamState &stream) const
    {
        return stream.native && !stream.synchronous && runtime_;
    }
    // What `stream` captures.  Status none, without asking the runtime, where
    // nothing can capture: a backend without capture (host), a synchronous
    // stream, a device's default stream (the legacy stream, which cannot
    // capture and which asking about could invalidate another stream's capture).
    // Inline for the own pool's allocation and free.  The runtime is asked
    // every time: a capture begins without gpumem (cudaStreamBeginCapture on
    // the native stream), so no earlier answer stands for this one.
    status_t state_of(const StreamState &stream, CaptureState *out) const
    {
        *out = CaptureState{};
        if (!may_capture(stream))
            return GPUMEM_SUCCESS;
        return runtime_->capture_state(stream.device, stream.native, out);
    }
    // SUCCESS when `stream` is not capturing; else capture::refuse() for
    // `what`, before the runtime is asked (it would refuse too, and
    // invalidate the capture).
    status_t refuse_if_capturing(const StreamState &stream, const char *what) const;

    StreamCapture *runtime() const { return runtime_; }

private:
    StreamCapture *runtime_;
};

namespace capture {

// NOT_SUPPORTED, naming the capture: `what` cannot be recorded in a graph.
status_t refuse(const StreamState &stream, const CaptureState &state, const char *what);

// The calling thread in the relaxed capture mode for the scope, where the
// backend has capture (gpumem's own calls in the middle of an application's
// capture); nothing otherwise.
class Relaxed {
public:
    explicit Relaxed(const Capture &capture);
    ~Relaxed();
    Relaxed(const Relaxed &) = delete;
    Relaxed &operator=(const Relaxed &) = delete;

private:
    StreamCapture *capture_;
    int32_t mode_ = 0;
};

} // namespace capture
} // namespace gpumem::detail
