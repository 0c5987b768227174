// What every extern "C" entry point shares: initialise on first use, run the
// body, prefix a failure's message with the function's name, and never let
// an exception cross the ABI.
#pragma once

#include <cstring>
#include <exception>
#include <new>

#include "base/call_site.hpp"
#include "base/error.hpp"
#include "base/host_fn.hpp"
#include "core/inspect.hpp"
#include "core/runtime.hpp"
#include "gpumem/gpumem.h"

#define GPUMEM_EXPORT extern "C" GPUMEM_API

namespace gpumem::detail {

// Body with the runtime (initialised with AUTO on first use).
//
// The call is counted on the calling thread's own counter (core/lifecycle.hpp)
// for as long as it uses the runtime, so that gpumem_finalize on another
// thread waits for it before releasing anything.  A call nested in another
// on the same thread (a trace callback) uses that call's runtime.
template <class Body>
inline status_t entry(const char *name, Body &&body) noexcept
{
    try {
        CallCounter *calls = t_calls;
        if (!calls) [[unlikely]]
            calls = register_calling_thread();
        const uint32_t depth = calls->depth.load(std::memory_order_relaxed);
        Runtime *rt;
        if (depth == 0) [[likely]] {
            calls->depth.store(1, std::memory_order_relaxed);
            entry_barrier();
            rt = g_runtime.load(std::memory_order_acquire);
            if (!rt) [[unlikely]] {
                calls->depth.store(0, std::memory_order_release);
                status_t status = GPUMEM_SUCCESS;
                if (!(rt = runtime_enter_slow(calls, &status))) {
                    prefix_error(name);
                    return status;
                }
            }
            calls->rt = rt;
        } else {
            // A function of gpumem_launch_host_func that gpumem runs (base/host_fn.hpp).
            if (t_in_host_fn) [[unlikely]]
                return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                            "%s: called from a function of gpumem_launch_host_func, which must not call gpumem "
                            "(it runs with the stream's work); do the call after the stream's work, in the thread "
                            "that waits for it",
                            name);
            calls->depth.store(depth + 1, std::memory_order_relaxed);
            rt = calls->rt;
        }
        struct Leave {
            CallCounter *calls;
            uint32_t depth;
            ~Leave()
            {
                std::atomic_signal_fence(std::memory_order_seq_cst);
                calls->depth.store(depth, std::memory_order_release);
            }
        } leave{calls, depth};
        status_t status = body(*rt);
        if (status != GPUMEM_SUCCESS) [[unlikely]] {
            // Every OUT_OF_MEMORY says, in one place, where the memory went
            // and, last, what would have fit.
            if (status == GPUMEM_ERROR_OUT_OF_MEMORY) {
                rt->inspect.append_oom_report();
                rt->oom.on_out_of_memory();
            }
            prefix_error(name);
        }
        return status;
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s: gpumem ran out of host memory for its own bookkeeping", name);
    } catch (const std::exception &e) {
        return fail(GPUMEM_ERROR_BACKEND, "%s: internal error: %s (please report it)", name, e.what());
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "%s: internal error (please report it)", name);
    }
}

// Body that needs no runtime and may block for long (passing descriptors
// between processes): not counted, so finalize and fork never wait for it.
template <class Body>
inline status_t entry_no_runtime(const char *name, Body &&body) noexcept
{
    try {
        status_t status = body();
        if (status != GPUMEM_SUCCESS) [[unlikely]]
            prefix_error(name);
        return status;
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s: gpumem ran out of host memory for its own bookkeeping", name);
    } catch (const std::exception &e) {
        return fail(GPUMEM_ERROR_BACKEND, "%s: internal error: %s (please report it)", name, e.what());
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "%s: internal error (please report it)", name);
    }
}

// Argument checks that read well at the top of a body.
#define GPUMEM_REQUIRE(cond, ...)                                 \
    do {                                                          \
        if (!(cond)) [[unlikely]]                                 \
            return ::gpumem::detail::fail(GPUMEM_ERROR_INVALID_VALUE, __VA_ARGS__); \
    } while (0)

// An extensible struct's size must at least cover its size field.
#define GPUMEM_REQUIRE_STRUCT(ptr, type)                                                              \
    GPUMEM_REQUIRE((ptr) != nullptr, #ptr " is NULL: pass the address of a " #type " initialised with its _INIT macro"); \
    GPUMEM_REQUIRE((ptr)->size >= sizeof(size_t) && (ptr)->size <= (1u << 20),                        \
                   #ptr "->size is %zu: initialise the " #type " with its _INIT macro", (ptr)->size)

// Extensible structs: read the fields the caller's size covers (the rest
// keep their defaults); write back only the fields it covers.
template <class T>
inline T read_struct(const T *in)
{
    T out{};
    std::memcpy(&out, in, in->size < sizeof(T) ? in->size : sizeof(T));
    out.size = sizeof(T);
    return out;
}
template <class T>
inline void write_struct(T *out, const T &full)
{
    size_t n = out->size < sizeof(T) ? out->size : sizeof(T);
    std::memcpy(reinterpret_cast<char *>(out) + sizeof(size_t), reinterpret_cast<const char *>(&full) + sizeof(size_t),
                n - sizeof(size_t));
}

} // namespace gpumem::detail
