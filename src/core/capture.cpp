// Stream capture, as the core sees it (capture.hpp).
#include "core/capture.hpp"

#include "core/runtime.hpp"

namespace gpumem::detail::capture {

bool may_capture(const Runtime &rt, const StreamState &stream)
{
    return stream.native && !stream.synchronous && rt.backend->stream_capture();
}

status_t state_of(Runtime &rt, const StreamState &stream, CaptureState *out)
{
    *out = CaptureState{};
    if (!may_capture(rt, stream))
        return GPUMEM_SUCCESS;
    return rt.backend->stream_capture()->capture_state(stream.device, stream.native, out);
}

status_t refuse(const StreamState &stream, const CaptureState &state, const char *what)
{
    if (state.status == CaptureState::Status::invalidated)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "stream %p (device %d) is in a capture that an earlier call invalidated; %s was not done. End the "
                    "capture, discard it and capture again (docs/graphs.md)",
                    stream.native, stream.device, what);
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "stream %p (device %d) is capturing a graph (capture %llu) and %s cannot be recorded in one; do it "
                "before or after the capture (docs/graphs.md). The capture is intact",
                stream.native, stream.device, static_cast<unsigned long long>(state.id), what);
}

status_t refuse_if_capturing(Runtime &rt, const StreamState &stream, const char *what)
{
    CaptureState state;
    if (status_t st = state_of(rt, stream, &state))
        return st;
    return state.status == CaptureState::Status::none ? GPUMEM_SUCCESS : refuse(stream, state, what);
}

Relaxed::Relaxed(Runtime &rt) : capture_(rt.backend->stream_capture())
{
    if (capture_)
        mode_ = capture_->relax_capture_mode();
}

Relaxed::~Relaxed()
{
    if (capture_)
        capture_->restore_capture_mode(mode_);
}

} // namespace gpumem::detail::capture
