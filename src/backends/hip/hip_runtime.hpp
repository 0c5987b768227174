// The HIP runtime (libamdhip64), loaded at run time: nothing in gpumem links
// against HIP.
//
// Every entry point of hip_symbols.def comes from dlsym, typed with the
// prototype gpumem declares itself (hip_types.hpp).  An instance the
// application already loaded is preferred, so that gpumem and the application
// share one runtime (one set of devices, streams and allocations).  The
// runtime is loaded and initialised once per process and never unloaded; the
// result, failure included, is cached, so a backend created again after
// gpumem_finalize reuses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/hip/hip_types.hpp"
#include "base/error.hpp"

namespace gpumem::detail::hip {

struct Runtime {
    void *handle = nullptr; // from dlopen, never closed
    std::string library;    // the file that was loaded (for messages)
    int runtime_version = 0; // hipRuntimeGetVersion (HIP_VERSION encoding)
    int driver_version = 0;
    int device_count = 0;

    // One pointer per entry of hip_symbols.def.
#define GPUMEM_HIP_REQUIRED(name) sig::name *name = nullptr;
#define GPUMEM_HIP_OPTIONAL(name) sig::name *name = nullptr;
#include "backends/hip/hip_symbols.def"
#undef GPUMEM_HIP_REQUIRED
#undef GPUMEM_HIP_OPTIONAL

    // The host allocation spelling this runtime has (hipHostMalloc, else
    // hipExtHostAlloc, else hipHostAlloc), its name, and whether it takes the
    // coherence flags; the free function likewise (hipHostFree, else hipFreeHost).
    sig::hipHostMalloc *host_alloc = nullptr;
    const char *host_alloc_name = nullptr;
    bool host_alloc_coherence = false;
    sig::hipHostFree *host_free = nullptr;
    const char *host_free_name = nullptr;

    bool rocm6() const { return runtime_version >= k_rocm6_runtime; }

    // Feature groups: every entry point of the feature resolved.
    bool has_managed() const;
    bool has_host_register() const;
    bool has_pools() const;
    bool has_pool_ipc() const;
    bool has_vmm() const;
    bool has_vmm_ipc() const;
};

// The process's HIP runtime, loading and initialising it on first use.
// `library` is GPUMEM_HIP_LIBRARY or nullptr (see make_hip_backend for the
// search in backend.hpp).  BACKEND_UNAVAILABLE when it cannot be loaded or
// started or sees no GPU (the public contract's answer for a backend asked
// for that cannot be used); the message names the library, the error and
// which case it is.
status_t load_runtime(const char *library, const Runtime **out);

// The runtime's name for a result ("hipErrorOutOfMemory"); never NULL.
const char *error_name(const Runtime &rt, hipError_t r);

// The one check of a runtime call's result.  SUCCESS for hipSuccess; else it
// records "cannot <what>: <call> failed with <NAME> (<description>); <what to
// do>" and returns the gpumem status for the error: OUT_OF_MEMORY,
// INVALID_VALUE for rejected arguments, BUSY for hipErrorNotReady,
// NOT_SUPPORTED, else BACKEND.
status_t check(const Runtime &rt, hipError_t r, const char *call, const char *what, ...)
    __attribute__((format(printf, 4, 5)));
// The same for exporting and importing shareable handles: every failure but
// out-of-memory is GPUMEM_ERROR_IPC.
status_t check_ipc(const Runtime &rt, hipError_t r, const char *call, const char *what, ...)
    __attribute__((format(printf, 4, 5)));

} // namespace gpumem::detail::hip
