// The one check of a GPU vendor call's result, written once for CUDA and HIP.
//
// An API table (cuda::Driver, hip::Runtime) says `using Result`, `success`,
// and provides, found by argument-dependent lookup: status_of(api, r),
// remedy(api, r, status), error_name(api, r) and error_description(api, r).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "base/error.hpp"

namespace gpumem::detail::gpu {

// A vendor call's result and the vendor function's name, for messages.
template <typename Result> struct Call {
    Result r;
    const char *name;
};

// The results the shared backend branches on, in the vendor's values.
template <typename Result> struct Codes {
    Result not_ready;
    Result out_of_memory;
    Result not_supported;
    Result invalid_value;
    Result invalid_context; // an IPC handle opened in the process that made it
};

// The vendor's words for the remedies that differ between vendors.
struct RemedyWords {
    const char *invalid_value; // the arguments were rejected
    const char *not_supported;
    const char *other; // any other failure: how to check the device and its software
};

// Which side of sharing a call is on: an export's failure is remedied in the
// exporting process, an import's by what the importer was given.
enum class Sharing { none, exporting, importing_descriptor, importing_pointer };

// What a call's arguments are, from the vendor function's name (the same
// words in both runtimes): a rejected argument is the pool's, the stream's or
// event's, or the memory's (sizes, alignment, pointers).
enum class Subject { memory, pool, stream };
inline Subject subject_of(const char *call)
{
    if (std::strstr(call, "MemPool") || std::strstr(call, "FromPoolAsync"))
        return Subject::pool;
    if (std::strstr(call, "Stream") || std::strstr(call, "Event") || std::strstr(call, "Graph") ||
        std::strstr(call, "UserObject"))
        return Subject::stream;
    return Subject::memory;
}

// The call a remedy is for.
struct Advice {
    Sharing side = Sharing::none;
    Subject subject = Subject::memory;
};

// What the user can do about a failure of kind `status` of the call `advice`
// describes (after the vendor's remedies for particular results).
inline const char *remedy_by_status(status_t status, const Advice &advice, const RemedyWords &words)
{
    switch (status) {
    case GPUMEM_ERROR_OUT_OF_MEMORY: return "free memory or ask for less";
    case GPUMEM_ERROR_INVALID_VALUE:
        switch (advice.subject) {
        case Subject::pool:
            return "check that the pool is live and that what the call gives it (an attribute and its value, "
                   "access descriptors, a size) suits it; an imported pool allocates and exports nothing";
        case Subject::stream:
            return "check that the stream, event or graph is live and belongs to the device whose memory the call "
                   "uses";
        default: return words.invalid_value;
        }
    case GPUMEM_ERROR_INVALID_DEVICE: return "use a device below gpumem_device_count";
    case GPUMEM_ERROR_BUSY: return "the work has not finished; synchronise first";
    case GPUMEM_ERROR_NOT_SUPPORTED: return words.not_supported;
    case GPUMEM_ERROR_IPC:
        switch (advice.side) {
        case Sharing::exporting:
            return "export only what this process made to be shared: a pool or memory created with "
                   "GPUMEM_HANDLE_POSIX_FD in handle_types, or a block such a pool gave out (not one imported from "
                   "elsewhere)";
        case Sharing::importing_pointer:
            return "pass the export data gpumem_pool_export_pointer gave for a block that is still live in the pool "
                   "this one imports";
        default:
            return "pass a descriptor exported by gpumem on this machine and received with gpumem_ipc_recv_fd";
        }
    default: return words.other;
    }
}

// The runtimes' refusals during a stream capture.  CUDA and HIP number these
// errors alike (each vendor asserts it): UNSUPPORTED 900, INVALIDATED 901,
// ISOLATION 905, IMPLICIT 906, CAPTURED_EVENT 907, WRONG_THREAD 908; all are
// NOT_SUPPORTED, with one of three remedies.
enum class CaptureRefusal { refused, invalidated, wrong_thread };
constexpr int k_capture_unsupported = 900, k_capture_invalidated = 901, k_capture_isolation = 905,
              k_capture_implicit = 906, k_captured_event = 907, k_capture_wrong_thread = 908;
// False when `r` is none of them.
inline bool capture_refusal(int r, CaptureRefusal *kind)
{
    switch (r) {
    case k_capture_unsupported:
    case k_capture_isolation:
    case k_capture_implicit:
    case k_captured_event: *kind = CaptureRefusal::refused; return true;
    case k_capture_invalidated: *kind = CaptureRefusal::invalidated; return true;
    case k_capture_wrong_thread: *kind = CaptureRefusal::wrong_thread; return true;
    default: return false;
    }
}
inline const char *capture_remedy(CaptureRefusal r)
{
    switch (r) {
    case CaptureRefusal::refused:
        return "a stream is capturing a graph and the runtime refuses this call during the capture (which it ends "
               "as invalidated); make the call before or after the capture, or capture in relaxed mode "
               "(docs/graphs.md)";
    case CaptureRefusal::invalidated:
        return "an earlier call invalidated the stream's capture; end the capture, discard it and capture again "
               "(docs/graphs.md)";
    default: return "end the capture on the thread that began it, or begin it in relaxed mode";
    }
}

// A vendor result and the gpumem status it is.
template <typename Result> struct AsStatus {
    Result r;
    status_t status;
};

// The status of `r`: a capture refusal is NOT_SUPPORTED, a result of
// `table` its status, anything else BACKEND.
template <typename Result> status_t status_in(Result r, std::initializer_list<AsStatus<Result>> table)
{
    CaptureRefusal refusal;
    if (capture_refusal(static_cast<int>(r), &refusal))
        return GPUMEM_ERROR_NOT_SUPPORTED;
    for (const AsStatus<Result> &e : table)
        if (e.r == r)
            return e.status;
    return GPUMEM_ERROR_BACKEND;
}

// What the user can do about `r` of kind `status`: a capture refusal's
// remedy; `fatal_words` for the results that leave the runtime unusable;
// `deinitialized_words` while the runtime shuts down; else by kind.
template <typename Result>
const char *remedy_in(Result r, status_t status, const Advice &advice, std::initializer_list<Result> fatal,
                      const char *fatal_words, Result deinitialized, const char *deinitialized_words,
                      const RemedyWords &by_kind)
{
    CaptureRefusal refusal;
    if (capture_refusal(static_cast<int>(r), &refusal))
        return capture_remedy(refusal);
    for (Result f : fatal)
        if (f == r)
            return fatal_words;
    if (r == deinitialized)
        return deinitialized_words;
    return remedy_by_status(status, advice, by_kind);
}

// A vendor result and its spelling, for the names a loader knows itself
// (before the vendor's own error-name function can be used).
template <typename Result> struct Named {
    Result r;
    const char *name;
};
#define GPUMEM_NAMED(r) {r, #r}

// The spelling of `r` in `table`, or nullptr when it is not there.
template <typename Result> const char *name_in(Result r, std::initializer_list<Named<Result>> table)
{
    for (const Named<Result> &n : table)
        if (n.r == r)
            return n.name;
    return nullptr;
}

template <typename Api>
status_t vcheck(const Api &api, typename Api::Result r, Sharing side, const char *call, const char *what, va_list ap)
{
    status_t status = status_of(api, r);
    if (side != Sharing::none && status != GPUMEM_ERROR_OUT_OF_MEMORY)
        status = GPUMEM_ERROR_IPC;
    char asked[512];
    std::vsnprintf(asked, sizeof asked, what, ap);
    const Advice advice{side, subject_of(call)};
    return fail(status, "cannot %s: %s failed with %s (%s); %s", asked, call, error_name(api, r),
                error_description(api, r), remedy(api, r, status, advice));
}

// SUCCESS for the vendor's success; else it records "cannot <what>: <call>
// failed with <NAME> (<description>); <what to do>" and returns the gpumem
// status for the error: OUT_OF_MEMORY, INVALID_VALUE for rejected arguments,
// BUSY for not-ready, NOT_SUPPORTED, else BACKEND.
template <typename Api>
__attribute__((format(printf, 4, 5))) status_t check(const Api &api, typename Api::Result r, const char *call,
                                                      const char *what, ...)
{
    if (r == Api::success) [[likely]]
        return GPUMEM_SUCCESS;
    va_list ap;
    va_start(ap, what);
    status_t st = vcheck(api, r, Sharing::none, call, what, ap);
    va_end(ap);
    return st;
}

// The forms for a Call, which carries its own name.
template <typename Api>
__attribute__((format(printf, 3, 4))) status_t check(const Api &api, Call<typename Api::Result> c, const char *what,
                                                      ...)
{
    if (c.r == Api::success) [[likely]]
        return GPUMEM_SUCCESS;
    va_list ap;
    va_start(ap, what);
    status_t st = vcheck(api, c.r, Sharing::none, c.name, what, ap);
    va_end(ap);
    return st;
}

// The same for exporting and importing shareable handles (`side` says
// which, for the remedy): every failure but out-of-memory is GPUMEM_ERROR_IPC.
template <typename Api>
__attribute__((format(printf, 4, 5))) status_t check_ipc(const Api &api, Call<typename Api::Result> c, Sharing side,
                                                          const char *what, ...)
{
    if (c.r == Api::success) [[likely]]
        return GPUMEM_SUCCESS;
    va_list ap;
    va_start(ap, what);
    status_t st = vcheck(api, c.r, side, c.name, what, ap);
    va_end(ap);
    return st;
}

} // namespace gpumem::detail::gpu
