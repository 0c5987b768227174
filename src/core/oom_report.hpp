// The out-of-memory report: when an allocation fails, what each remedy would
// have freed and whether the request would then have fit (trimming gpumem's
// pools, waiting for frees pending on other streams, the own pool's free
// memory as one block, a higher GPUMEM_LIMIT, memory held outside gpumem).
//
// Every figure is read from the books (the pools' views, the directory, the
// limit, the device's free/total); nothing is changed to find them, and
// nothing is computed until an allocation fails.  The request itself is noted
// by the allocating entry point only when it fails (note_request), so the
// allocation paths pay nothing.  One report per thread: the one that failed.
#pragma once

#include <cstdint>

#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Backend;
class Devices;
class Pointers;
class Pools;

// What an allocation that failed asked for.
struct OomRequest {
    int32_t device = 0;
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    uint64_t bytes = 0;
    gpumem_pool_t pool = nullptr;     // stream-ordered requests: NULL = the device's current pool
    gpumem_stream_t stream = nullptr; // NULL: the default stream
};

class OomReports {
public:
    // `runtime`: asked only for the device's free and total memory and
    // whether its context runs; `pointers` and `pools`: the books;
    // `devices`: how many there are and which backend serves them.
    OomReports(Backend &runtime, const Pointers &pointers, Pools &pools, const Devices &devices)
        : runtime_(runtime), pointers_(pointers), pools_(pools), devices_(devices)
    {
    }
    OomReports(const OomReports &) = delete;
    OomReports &operator=(const OomReports &) = delete;

    // The calling thread's failed call returned OUT_OF_MEMORY: build its
    // report from the request noted (if any), keep it for the thread, and end
    // the thread's message with the verdict.  Never fails.
    void on_out_of_memory() noexcept;

private:
    void build(const OomRequest *request, gpumem_oom_report_t *out);

    Backend &runtime_;
    const Pointers &pointers_;
    Pools &pools_;
    const Devices &devices_;
};

namespace oom {

// From an allocating entry point whose call failed with OUT_OF_MEMORY (only
// then): what it asked for.  Returns `status` so that a body ends with it.
status_t note_request(status_t status, const OomRequest &request) noexcept;
inline status_t note(status_t status, int32_t device, int32_t kind, uint64_t bytes, gpumem_pool_t pool = nullptr,
                     gpumem_stream_t stream = nullptr) noexcept
{
    if (status != GPUMEM_ERROR_OUT_OF_MEMORY) [[likely]]
        return status;
    return note_request(status, OomRequest{device, kind, bytes, pool, stream});
}
// As note, for a request on the calling thread's current device, which is
// asked of the runtime (a driver call on a GPU) only when the call failed:
// the allocation that succeeds pays nothing for its report.
status_t note_current_request(status_t status, int32_t kind, uint64_t bytes, gpumem_pool_t pool,
                              gpumem_stream_t stream) noexcept;
inline status_t note_current(status_t status, int32_t kind, uint64_t bytes, gpumem_pool_t pool = nullptr,
                             gpumem_stream_t stream = nullptr) noexcept
{
    if (status != GPUMEM_ERROR_OUT_OF_MEMORY) [[likely]]
        return status;
    return note_current_request(status, kind, bytes, pool, stream);
}

// gpumem_last_oom_report: the calling thread's last report (has_report 0: none).
void last(gpumem_oom_report_t *out);

} // namespace oom
} // namespace gpumem::detail
