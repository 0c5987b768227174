// Stream capture, as the core sees it (capture.hpp).
#include "core/capture.hpp"

namespace gpumem::detail {

namespace capture {

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

Relaxed::Relaxed(const Capture &capture) : capture_(capture.runtime())
{
    if (capture_)
        mode_ = capture_->relax_capture_mode();
}

Relaxed::~Relaxed()
{
    if (capture_)
        capture_->restore_capture_mode(mode_);
}

} // namespace capture

status_t Capture::refuse_if_capturing(const StreamState &stream, const char *what) const
{
    CaptureState state;
    if (status_t st = state_of(stream, &state))
        return st;
    return state.status == CaptureState::Status::none ? GPUMEM_SUCCESS : capture::refuse(stream, state, what);
}

} // namespace gpumem::detail
