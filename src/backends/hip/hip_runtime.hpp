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
#include "backends/gpu/gpu_check.hpp"
#include "backends/gpu/gpu_loader.hpp"
#include "base/error.hpp"

namespace gpumem::detail::hip {

struct Runtime : gpu::Features {
    using Result = hipError_t;
    static constexpr hipError_t success = hipSuccess;
    // Native handles: streams, events, pools, VMM allocations.
    using Stream = hipStream_t;
    using Event = hipEvent_t;
    using Pool = hipMemPool_t;
    using Handle = hipMemGenericAllocationHandle_t;

    void *handle = nullptr; // from dlopen, never closed
    std::string library;    // the file that was loaded (for messages)
    int runtime_version = 0; // hipRuntimeGetVersion (HIP_VERSION encoding)
    int driver_version = 0;
    int device_count = 0;

    // One pointer per entry of hip_symbols.def.
#define GPUMEM_HIP_REQUIRED(name) sig::name *name = nullptr;
#define GPUMEM_HIP_OPTIONAL(name, feature) sig::name *name = nullptr;
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

// What gpu::check needs to report a failed call: the gpumem status of a
// result, the runtime's description of it, and what the user can do.
status_t status_of(const Runtime &rt, hipError_t r);
const char *error_description(const Runtime &rt, hipError_t r);
// `advice`: the call's side of sharing and what its arguments are.
const char *remedy(const Runtime &rt, hipError_t r, status_t status, const gpu::Advice &advice);

// The one check of a runtime call's result (gpu/gpu_check.hpp).
using gpu::check;
using gpu::check_ipc;

} // namespace gpumem::detail::hip
