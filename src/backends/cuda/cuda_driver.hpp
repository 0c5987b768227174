// The CUDA driver, loaded at run time: nothing in gpumem links against CUDA.
//
// Only cuInit, cuDriverGetVersion and cuGetProcAddress come from dlsym; every
// other entry point is resolved with cuGetProcAddress at an explicit ABI
// version (cuda_symbols.def), so that gpumem gets the same variant of each
// function whatever driver it meets.  The driver is loaded and initialised
// once per process and never unloaded; the result, failure included, is
// cached, so a backend created again after gpumem_finalize reuses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda.h>

#include "backends/gpu/gpu_check.hpp"
#include "backends/gpu/gpu_loader.hpp"
#include "base/error.hpp"

namespace gpumem::detail::cuda {

// The ABI version every symbol of cuda_symbols.def is resolved at.
constexpr int k_cuda_abi_version = 12000;
// Drivers from this version take a CUmemLocation in cuMemPrefetchAsync and
// cuMemAdvise (the device-id forms are gone from CUDA 13).
constexpr int k_location_api_version = 12020;
// Drivers from this version read CUmemPoolProps::maxSize (before, reserved bytes that must be 0).
constexpr int k_pool_max_size_version = 12020;
// Drivers from this version make pools of host memory (location HOST / HOST_NUMA).
constexpr int k_host_pools_version = 12060;
// Drivers from this version make pools of managed memory (allocation type MANAGED).
constexpr int k_managed_pools_version = 13000;

// The two signatures of prefetch and advice, declared here because <cuda.h>
// shows only the one of its own version.
using PrefetchLocationFn = CUresult(CUDAAPI *)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
using PrefetchDeviceFn = CUresult(CUDAAPI *)(CUdeviceptr, size_t, CUdevice, CUstream);
using AdviseLocationFn = CUresult(CUDAAPI *)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
using AdviseDeviceFn = CUresult(CUDAAPI *)(CUdeviceptr, size_t, CUmem_advise, CUdevice);

// cuMemcpyBatchAsync has two ABIs: CUDA 12.8's reports the failing copy
// through a failIdx argument before the stream; CUDA 13.0's (cuMemcpyBatchAsync_v2
// in <cuda.h>) has no failIdx.  The batched prefetch and discard are CUDA 13.0's.
// Declared here because <cuda.h> shows only its own version's form.
constexpr int k_batch_copy_v1_version = 12080;
constexpr int k_batch_copy_v2_version = 13000;
constexpr int k_batch_managed_version = 13000;
#if CUDA_VERSION >= 12080
using MemcpyBatchV1Fn = CUresult(CUDAAPI *)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                                            size_t *, size_t, size_t *, CUstream);
using MemcpyBatchV2Fn = CUresult(CUDAAPI *)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                                            size_t *, size_t, CUstream);
#else
using MemcpyBatchV1Fn = void *; // headers older than 12.8: never resolved
using MemcpyBatchV2Fn = void *;
#endif
using PrefetchBatchFn = CUresult(CUDAAPI *)(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                            unsigned long long, CUstream);
using DiscardBatchFn = CUresult(CUDAAPI *)(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);

// cuStreamGetCaptureInfo as CUDA 11.3 made it (the form at the 12.0 ABI);
// CUDA 13's <cuda.h> names its 12.3 form, with edge data, so.
constexpr int k_capture_info_version = 11030;
using CaptureInfoFn = CUresult(CUDAAPI *)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                          const CUgraphNode **, size_t *);

struct Driver : gpu::Features {
    using Result = CUresult;
    static constexpr CUresult success = CUDA_SUCCESS;
    // Native handles: streams, events, pools, VMM allocations.
    using Stream = CUstream;
    using Event = CUevent;
    using Pool = CUmemoryPool;
    using Handle = CUmemGenericAllocationHandle;

    void *handle = nullptr; // from dlopen, never closed
    std::string library;    // the file that was loaded (for messages)
    int version = 0;     // cuDriverGetVersion: 1000*major + 10*minor
    int device_count = 0;

    // One pointer per entry of cuda_symbols.def, typed with <cuda.h>'s
    // prototype.  <cuda.h> #defines many names to their _v2 variant; the
    // member is then spelled that way too, and d.cuMemAlloc(...) still reads
    // naturally because the same #define applies where it is called.
#define GPUMEM_CUDA_REQUIRED(name) decltype(&::name) name = nullptr;
#define GPUMEM_CUDA_OPTIONAL(name, feature) decltype(&::name) name = nullptr;
#include "backends/cuda/cuda_symbols.def"
#undef GPUMEM_CUDA_REQUIRED
#undef GPUMEM_CUDA_OPTIONAL

    // Exactly one of each pair is set (or neither, when the driver lacks it).
    PrefetchLocationFn prefetch_location = nullptr;
    PrefetchDeviceFn prefetch_device = nullptr;
    AdviseLocationFn advise_location = nullptr;
    AdviseDeviceFn advise_device = nullptr;
    // At most one form of the batched copy (Feature::batch_copy), and the
    // batched prefetch and discard (Feature::batch_managed).
    MemcpyBatchV1Fn memcpy_batch_v1 = nullptr;
    MemcpyBatchV2Fn memcpy_batch_v2 = nullptr;
    PrefetchBatchFn prefetch_batch = nullptr;
    DiscardBatchFn discard_batch = nullptr;
    CaptureInfoFn capture_info = nullptr; // Feature::capture
};

// The process's driver, loading and initialising it on first use.
// `library` is GPUMEM_CUDA_LIBRARY or nullptr (libcuda.so.1, then libcuda.so).
// BACKEND_UNAVAILABLE when it cannot be loaded or started (the message names
// the library and the error), NO_DEVICE when it starts but sees no device.
status_t load_driver(const char *library, const Driver **out);

// The driver's name for a result ("CUDA_ERROR_OUT_OF_MEMORY"); never NULL.
const char *error_name(const Driver &d, CUresult r);

// What gpu::check needs to report a failed call: the gpumem status of a
// result, the driver's description of it, and what the user can do.
status_t status_of(const Driver &d, CUresult r);
const char *error_description(const Driver &d, CUresult r);
// `advice`: the call's side of sharing and what its arguments are.
const char *remedy(const Driver &d, CUresult r, status_t status, const gpu::Advice &advice);

// The one check of a driver call's result (gpu/gpu_check.hpp).
using gpu::check;
using gpu::check_ipc;

} // namespace gpumem::detail::cuda
