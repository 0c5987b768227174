// What every extern "C" entry point shares: initialise on first use, run the
// body, prefix a failure's message with the function's name, and never let
// an exception cross the ABI.
#pragma once

#include <cstring>
#include <exception>
#include <new>

#include "base/error.hpp"
#include "core/runtime.hpp"
#include "gpumem/gpumem.h"

#define GPUMEM_EXPORT extern "C" GPUMEM_API

namespace gpumem::detail {

// Body with the runtime (initialised with AUTO on first use).
template <class Body>
inline status_t entry(const char *name, Body &&body) noexcept
{
    try {
        status_t status = GPUMEM_SUCCESS;
        Runtime *rt = runtime_or_init(&status);
        if (!rt) [[unlikely]] {
            prefix_error(name);
            return status;
        }
        status = body(*rt);
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
