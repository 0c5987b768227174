// Loading the HIP runtime, resolving its entry points, and the one check of
// a runtime call's result.
#include "backends/hip/hip_runtime.hpp"

#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <unistd.h>

#include "base/log.hpp"

namespace gpumem::detail::hip {

namespace {

// --- Messages ---------------------------------------------------------------

// Names of the results loading can meet, for a library whose hipGetErrorName
// is not resolved (or is not a real HIP runtime).
const char *builtin_error_name(hipError_t r)
{
    return gpu::name_in<hipError_t>(r, {GPUMEM_NAMED(hipSuccess), GPUMEM_NAMED(hipErrorInvalidValue),
                                        GPUMEM_NAMED(hipErrorOutOfMemory), GPUMEM_NAMED(hipErrorNotInitialized),
                                        GPUMEM_NAMED(hipErrorDeinitialized), GPUMEM_NAMED(hipErrorInsufficientDriver),
                                        GPUMEM_NAMED(hipErrorNoDevice), GPUMEM_NAMED(hipErrorInvalidDevice),
                                        GPUMEM_NAMED(hipErrorNoBinaryForGpu),
                                        GPUMEM_NAMED(hipErrorSharedObjectInitFailed),
                                        GPUMEM_NAMED(hipErrorOperatingSystem), GPUMEM_NAMED(hipErrorNotSupported),
                                        GPUMEM_NAMED(hipErrorUnknown)});
}

static_assert(hipErrorStreamCaptureUnsupported == gpu::k_capture_unsupported &&
                  hipErrorStreamCaptureInvalidated == gpu::k_capture_invalidated &&
                  hipErrorStreamCaptureIsolation == gpu::k_capture_isolation &&
                  hipErrorStreamCaptureImplicit == gpu::k_capture_implicit &&
                  hipErrorCapturedEvent == gpu::k_captured_event &&
                  hipErrorStreamCaptureWrongThread == gpu::k_capture_wrong_thread,
              "HIP's capture errors moved");

// Each result's status: the HIP column of gpu/vendor_results.def.
status_t status_of_result(hipError_t r)
{
#define GPUMEM_VENDOR_RESULT(status, cuda, hip) {hip, status},
#define GPUMEM_HIP_RESULT(status, hip) {hip, status},
    return gpu::status_in<hipError_t>(r, {
#include "backends/gpu/vendor_results.def"
    });
#undef GPUMEM_VENDOR_RESULT
#undef GPUMEM_HIP_RESULT
}

// What the user can do about a failure, by its kind, in this vendor's words.
const char *remedy_of(hipError_t r, status_t status, const gpu::Advice &advice)
{
    return gpu::remedy_in<hipError_t>(
        r, status, advice, {hipErrorIllegalAddress, hipErrorLaunchFailure, hipErrorAssert, hipErrorECCNotCorrectable},
        "an earlier kernel or the GPU failed and the HIP runtime is unusable; find the fault (set AMD_LOG_LEVEL=3, "
        "or run under rocgdb) and restart the process",
        hipErrorDeinitialized, "the HIP runtime is shutting down (process exit); call gpumem earlier",
        {"the runtime rejected the arguments; check sizes, alignment and pointers",
         "this GPU or ROCm version does not support it",
         "check the GPU and the ROCm installation with rocm-smi (or amd-smi)"});
}

// --- Loading ------------------------------------------------------------------

// The sonames gpumem looks for, newest first.
constexpr const char *k_sonames[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};

// dlopen the runtime.  Sets *tried to the errors of the names attempted.
void *open_library(const char *library, std::string *tried)
{
    if (library)
        return gpu::open_noting(library, tried);
    // An instance the application already loaded: share it.
    for (const char *name : k_sonames)
        if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))
            return lib;
    for (const char *name : k_sonames)
        if (void *lib = gpu::open_noting(name, tried))
            return lib;
    std::string paths[2];
    if (const char *rocm = secure_getenv("ROCM_PATH"); rocm && *rocm)
        paths[0] = std::string(rocm) + "/lib/libamdhip64.so";
    paths[1] = "/opt/rocm/lib/libamdhip64.so";
    for (const std::string &path : paths)
        if (!path.empty())
            if (void *lib = gpu::open_noting(path.c_str(), tried))
                return lib;
    return nullptr;
}

template <typename Fn> Fn *symbol(void *lib, const char *name)
{
    return reinterpret_cast<Fn *>(dlsym(lib, name));
}

// The advice for a failure to start, by its result.
const char *init_remedy(hipError_t r)
{
    switch (r) {
    case hipErrorNoDevice:
        return "no AMD GPU is visible to this process: check rocm-smi, membership of the video and render groups, "
               "and HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES (leave GPUMEM_BACKEND unset to fall back to another "
               "backend)";
    case hipErrorInsufficientDriver:
        return "the amdgpu kernel driver is missing or older than this ROCm: install or update it (amdgpu-dkms)";
    default: return "check the ROCm installation with rocminfo and rocm-smi";
    }
}

// The words of the loading messages (gpu/gpu_loader.hpp).
const gpu::LoadWords k_words = {"hip", "HIP runtime", "GPUMEM_HIP_LIBRARY", "libamdhip64.so",
                                 "install ROCm (or Debian's libamdhip64)"};

// Load and start the runtime into `rt`.  On failure the last error is set.
status_t load(const char *library, Runtime *rt)
{
    if (status_t st = gpu::open_into(library, rt, open_library, k_words))
        return st;
    void *lib = rt->handle;
    const char *requested = library ? library : k_words.soname;

    const char *missing = nullptr;
#define GPUMEM_HIP_REQUIRED(name)                                                                          \
    rt->name = symbol<sig::name>(lib, #name);                                                              \
    if (!rt->name && !missing)                                                                             \
        missing = #name;
#define GPUMEM_HIP_OPTIONAL(name, feature)                                                                 \
    rt->name = symbol<sig::name>(lib, #name);                                                              \
    if (!rt->name)                                                                                         \
        rt->lack(gpu::Feature::feature);
#include "backends/hip/hip_symbols.def"
#undef GPUMEM_HIP_REQUIRED
#undef GPUMEM_HIP_OPTIONAL

    rt->library = gpu::loaded_from(reinterpret_cast<const void *>(rt->hipInit), requested);
    if (!rt->hipInit)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the hip backend is unavailable: %s has no hipInit, so it is not a HIP runtime; %s", requested,
                    library ? "point GPUMEM_HIP_LIBRARY at ROCm's libamdhip64.so, or unset it"
                            : "set GPUMEM_HIP_LIBRARY to ROCm's libamdhip64.so");
    if (missing)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the hip backend is unavailable: the HIP runtime %s lacks %s; install ROCm 5.2 or newer",
                    rt->library.c_str(), missing);

    // Host allocation: one spelling of each.  hipHostMalloc and hipExtHostAlloc
    // take hipHostMallocCoherent/NonCoherent; hipHostAlloc is CUDA's form.
    if (rt->hipHostMalloc) {
        rt->host_alloc = rt->hipHostMalloc;
        rt->host_alloc_name = "hipHostMalloc";
        rt->host_alloc_coherence = true;
    } else if (rt->hipExtHostAlloc) {
        rt->host_alloc = rt->hipExtHostAlloc;
        rt->host_alloc_name = "hipExtHostAlloc";
        rt->host_alloc_coherence = true;
    } else if (rt->hipHostAlloc) {
        rt->host_alloc = rt->hipHostAlloc;
        rt->host_alloc_name = "hipHostAlloc";
    }
    if (rt->hipHostFree) {
        rt->host_free = rt->hipHostFree;
        rt->host_free_name = "hipHostFree";
    } else if (rt->hipFreeHost) {
        rt->host_free = rt->hipFreeHost;
        rt->host_free_name = "hipFreeHost";
    }
    if (!rt->host_alloc || !rt->host_free)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the hip backend is unavailable: the HIP runtime %s has %s; gpumem needs hipHostMalloc, "
                    "hipExtHostAlloc or hipHostAlloc, and hipHostFree or hipFreeHost: install a complete ROCm",
                    rt->library.c_str(),
                    !rt->host_alloc ? "no host allocation function" : "no function to free host allocations");

    hipError_t r = rt->hipInit(0);
    if (r != hipSuccess) {
        // Without a GPU, ROCm 5 answers hipErrorInvalidDevice here, later
        // versions hipErrorNoDevice; /dev/kfd tells which case this is.
        const bool no_kfd = access("/dev/kfd", F_OK) != 0;
        const bool no_gpu = r == hipErrorNoDevice || (r == hipErrorInvalidDevice && no_kfd);
        // BACKEND_UNAVAILABLE either way: the contract's answer for a backend
        // that was asked for and cannot be used (the words say which case).
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the hip backend is unavailable: the HIP runtime %s %s (hipInit gave %s, %d)%s; %s",
                    rt->library.c_str(), no_gpu ? "found no AMD GPU" : "failed to start", error_name(*rt, r),
                    static_cast<int>(r),
                    no_kfd ? ", and there is no /dev/kfd (the amdgpu kernel driver is not loaded here)" : "",
                    no_gpu ? init_remedy(hipErrorNoDevice) : init_remedy(r));
    }
    if ((r = rt->hipRuntimeGetVersion(&rt->runtime_version)) != hipSuccess)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the hip backend is unavailable: hipRuntimeGetVersion in %s failed with %s; %s",
                    rt->library.c_str(), error_name(*rt, r), init_remedy(r));

    int count = 0;
    r = rt->hipGetDeviceCount(&count);
    if (r != hipSuccess || count <= 0) {
        const hipError_t shown = r != hipSuccess ? r : hipErrorNoDevice;
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the hip backend is unavailable: the HIP runtime %s (version %d) found no AMD GPU "
                    "(hipGetDeviceCount gave %s, %d devices); %s",
                    rt->library.c_str(), rt->runtime_version, error_name(*rt, shown), count, init_remedy(shown));
    }
    rt->device_count = count;
    // Only for messages: a failure changes nothing.
    if (rt->hipDriverGetVersion(&rt->driver_version) != hipSuccess)
        rt->driver_version = 0;
    log(LogLevel::debug, "hip: loaded %s, runtime version %d, driver version %d, %d device(s), host memory by %s/%s",
        rt->library.c_str(), rt->runtime_version, rt->driver_version, count, rt->host_alloc_name,
        rt->host_free_name);
    return GPUMEM_SUCCESS;
}

// True when `library` names the runtime this process already loaded.
bool names_loaded_runtime(const char *library, const Runtime &rt)
{
    if (!library)
        return true; // the search starts with what the process has loaded
    void *h = gpu::already_loaded(library);
    return h && h == rt.handle;
}

} // namespace

status_t load_runtime(const char *library, const Runtime **out)
{
    return gpu::load_once(library, out, k_words, load, names_loaded_runtime);
}

const char *error_name(const Runtime &rt, hipError_t r)
{
    // hipGetErrorName answers "hipErrorUnknown" for values it does not know.
    const char *name = rt.hipGetErrorName ? rt.hipGetErrorName(r) : nullptr;
    if (name && (r == hipErrorUnknown || std::strcmp(name, "hipErrorUnknown") != 0))
        return name;
    name = builtin_error_name(r);
    return name ? name : "an unknown HIP error";
}

status_t status_of(const Runtime &, hipError_t r) { return status_of_result(r); }

const char *error_description(const Runtime &rt, hipError_t r)
{
    const char *description = rt.hipGetErrorString ? rt.hipGetErrorString(r) : nullptr;
    return description ? description : "no description";
}

const char *remedy(const Runtime &, hipError_t r, status_t status, const gpu::Advice &advice)
{
    return remedy_of(r, status, advice);
}

} // namespace gpumem::detail::hip
