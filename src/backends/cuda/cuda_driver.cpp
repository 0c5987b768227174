// Loading the CUDA driver, resolving its entry points, and the one check of
// a driver call's result.
#include "backends/cuda/cuda_driver.hpp"

#include <dlfcn.h>

#include "base/log.hpp"

namespace gpumem::detail::cuda {

namespace {

// --- Messages ---------------------------------------------------------------

// Names of the results cuInit can give, for when cuGetErrorName is not
// resolved yet (or the library is not a real driver).
const char *builtin_error_name(CUresult r)
{
    return gpu::name_in<CUresult>(r, {GPUMEM_NAMED(CUDA_SUCCESS), GPUMEM_NAMED(CUDA_ERROR_INVALID_VALUE),
                                      GPUMEM_NAMED(CUDA_ERROR_OUT_OF_MEMORY), GPUMEM_NAMED(CUDA_ERROR_NOT_INITIALIZED),
                                      GPUMEM_NAMED(CUDA_ERROR_DEINITIALIZED), GPUMEM_NAMED(CUDA_ERROR_STUB_LIBRARY),
                                      GPUMEM_NAMED(CUDA_ERROR_NO_DEVICE), GPUMEM_NAMED(CUDA_ERROR_INVALID_DEVICE),
                                      GPUMEM_NAMED(CUDA_ERROR_OPERATING_SYSTEM), GPUMEM_NAMED(CUDA_ERROR_NOT_FOUND),
                                      GPUMEM_NAMED(CUDA_ERROR_NOT_SUPPORTED),
                                      GPUMEM_NAMED(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
                                      GPUMEM_NAMED(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE),
                                      GPUMEM_NAMED(CUDA_ERROR_UNKNOWN)});
}

static_assert(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED == gpu::k_capture_unsupported &&
                  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED == gpu::k_capture_invalidated &&
                  CUDA_ERROR_STREAM_CAPTURE_ISOLATION == gpu::k_capture_isolation &&
                  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT == gpu::k_capture_implicit &&
                  CUDA_ERROR_CAPTURED_EVENT == gpu::k_captured_event &&
                  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD == gpu::k_capture_wrong_thread,
              "CUDA's capture errors moved");

// Each result's status: the CUDA column of gpu/vendor_results.def.
status_t status_of_result(CUresult r)
{
#define GPUMEM_VENDOR_RESULT(status, cuda, hip) {cuda, status},
#define GPUMEM_HIP_RESULT(status, hip)
    return gpu::status_in<CUresult>(r, {
#include "backends/gpu/vendor_results.def"
    });
#undef GPUMEM_VENDOR_RESULT
#undef GPUMEM_HIP_RESULT
}

// What the user can do about a failure, by its kind, in this vendor's words.
const char *remedy_of(CUresult r, status_t status, const gpu::Advice &advice)
{
    return gpu::remedy_in<CUresult>(
        r, status, advice,
        {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_MISALIGNED_ADDRESS,
         CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_INVALID_PC, CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ASSERT,
         CUDA_ERROR_ECC_UNCORRECTABLE},
        "an earlier kernel or the device failed and this CUDA context is unusable; find the fault "
        "(compute-sanitizer) and restart the process",
        CUDA_ERROR_DEINITIALIZED, "the CUDA driver is shutting down (process exit); call gpumem earlier",
        {"the driver rejected the arguments; check sizes, alignment and pointers",
         "this device or driver does not support it", "check the device and driver with nvidia-smi"});
}

// --- Loading ------------------------------------------------------------------

using InitFn = CUresult(CUDAAPI *)(unsigned int);
using DriverGetVersionFn = CUresult(CUDAAPI *)(int *);
// cuGetProcAddress_v2 (CUDA 12.0+) and the older cuGetProcAddress (11.3+).
using GetProcAddressV2Fn = CUresult(CUDAAPI *)(const char *, void **, int, cuuint64_t,
                                               CUdriverProcAddressQueryResult *);
using GetProcAddressV1Fn = CUresult(CUDAAPI *)(const char *, void **, int, cuuint64_t);

struct Resolver {
    GetProcAddressV2Fn v2 = nullptr;
    GetProcAddressV1Fn v1 = nullptr;

    // The entry point `name` as of ABI `version`, with legacy default-stream
    // semantics (a null stream is the legacy stream); nullptr when absent.
    void *get(const char *name, int version) const
    {
        void *p = nullptr;
        if (v2) {
            CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            if (v2(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
                found != CU_GET_PROC_ADDRESS_SUCCESS)
                return nullptr;
        } else if (v1(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS) {
            return nullptr;
        }
        return p;
    }
};

template <typename Fn> Fn symbol(void *lib, const char *name)
{
    return reinterpret_cast<Fn>(dlsym(lib, name));
}

// The names to try: `library` alone if given, else the driver's sonames.
size_t candidates(const char *library, const char *names[2])
{
    if (library) {
        names[0] = library;
        return 1;
    }
    names[0] = "libcuda.so.1";
    names[1] = "libcuda.so";
    return 2;
}

// dlopen the driver.  Sets *tried to the errors of the names attempted.
void *open_library(const char *library, std::string *tried)
{
    const char *names[2];
    for (size_t i = 0, n = candidates(library, names); i < n; ++i)
        if (void *lib = gpu::open_noting(names[i], tried))
            return lib;
    return nullptr;
}

// True when `library` names the driver this process already loaded.
bool names_loaded_driver(const char *library, const Driver &d)
{
    const char *names[2];
    for (size_t i = 0, n = candidates(library, names); i < n; ++i)
        if (void *h = gpu::already_loaded(names[i]); h && h == d.handle)
            return true;
    return false;
}

// The advice for a cuInit failure, by its result.
const char *init_remedy(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_STUB_LIBRARY:
        return "this is the CUDA toolkit's stub library, not a driver: install the NVIDIA driver, or set "
               "GPUMEM_CUDA_LIBRARY to the driver's libcuda.so.1";
    case CUDA_ERROR_NO_DEVICE:
        return "no NVIDIA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return "the user-space driver and the kernel module do not match: reinstall the NVIDIA driver or reboot";
    default: return "check the NVIDIA driver installation with nvidia-smi";
    }
}

// The words of the loading messages (gpu/gpu_loader.hpp).
const gpu::LoadWords k_words = {"cuda", "CUDA driver", "GPUMEM_CUDA_LIBRARY", "libcuda.so.1",
                                 "install the NVIDIA driver"};

// Load and start the driver into `d`.  On failure the last error is set.
status_t load(const char *library, Driver *d)
{
    if (status_t st = gpu::open_into(library, d, open_library, k_words))
        return st;
    void *lib = d->handle;
    const char *requested = library ? library : k_words.soname;
    auto init = symbol<InitFn>(lib, "cuInit");
    auto get_version = symbol<DriverGetVersionFn>(lib, "cuDriverGetVersion");
    Resolver resolver;
    resolver.v2 = symbol<GetProcAddressV2Fn>(lib, "cuGetProcAddress_v2");
    if (!resolver.v2)
        resolver.v1 = symbol<GetProcAddressV1Fn>(lib, "cuGetProcAddress");
    if (!init || !get_version)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the cuda backend is unavailable: %s has no %s, so it is not a CUDA driver; %s",
                    requested, init ? "cuDriverGetVersion" : "cuInit",
                    library ? "point GPUMEM_CUDA_LIBRARY at the driver's libcuda.so.1, or unset it"
                            : "set GPUMEM_CUDA_LIBRARY to the driver's libcuda.so.1");
    d->library = gpu::loaded_from(reinterpret_cast<const void *>(init), requested);

    CUresult r = init(0);
    if (r != CUDA_SUCCESS) {
        const char *name = builtin_error_name(r);
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the cuda backend is unavailable: cuInit in %s failed with %s (%d); %s", d->library.c_str(),
                    name ? name : "an unknown error", static_cast<int>(r), init_remedy(r));
    }
    if ((r = get_version(&d->version)) != CUDA_SUCCESS)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the cuda backend is unavailable: cuDriverGetVersion in %s failed with error %d; %s",
                    d->library.c_str(), static_cast<int>(r), init_remedy(r));
    if (!resolver.v1 && !resolver.v2)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the cuda backend is unavailable: the CUDA driver %s (version %d) has no cuGetProcAddress; "
                    "gpumem needs a CUDA 12 driver or newer: update the NVIDIA driver",
                    d->library.c_str(), d->version);

    // Every other entry point, at the ABI of cuda_symbols.def.
    const char *missing = nullptr;
#define GPUMEM_CUDA_REQUIRED(name)                                                                         \
    d->name = reinterpret_cast<decltype(d->name)>(resolver.get(#name, k_cuda_abi_version));               \
    if (!d->name && !missing)                                                                              \
        missing = #name;
#define GPUMEM_CUDA_OPTIONAL(name, feature)                                                                \
    d->name = reinterpret_cast<decltype(d->name)>(resolver.get(#name, k_cuda_abi_version));               \
    if (!d->name)                                                                                          \
        d->lack(gpu::Feature::feature);
#include "backends/cuda/cuda_symbols.def"
#undef GPUMEM_CUDA_REQUIRED
#undef GPUMEM_CUDA_OPTIONAL
    if (missing)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the cuda backend is unavailable: the CUDA driver %s (version %d) lacks %s; update the NVIDIA "
                    "driver",
                    d->library.c_str(), d->version, missing);

    // Prefetch and advice changed signature in 12.2: ask for the form this
    // driver has, and call it with that form's arguments.
    if (d->version >= k_location_api_version) {
        d->prefetch_location = reinterpret_cast<PrefetchLocationFn>(resolver.get("cuMemPrefetchAsync", 12020));
        d->advise_location = reinterpret_cast<AdviseLocationFn>(resolver.get("cuMemAdvise", 12020));
    } else {
        d->prefetch_device = reinterpret_cast<PrefetchDeviceFn>(resolver.get("cuMemPrefetchAsync", 8000));
        d->advise_device = reinterpret_cast<AdviseDeviceFn>(resolver.get("cuMemAdvise", 8000));
    }
    if ((!d->prefetch_location && !d->prefetch_device) || (!d->advise_location && !d->advise_device))
        d->lack(gpu::Feature::managed);

    // The batched copy in the newest form this driver has (13.0 dropped
    // failIdx), and the batched prefetch and discard of 13.0.  Asked by
    // version: a 12.8 request to a 13.0 driver still gets the 12.8 form.
#if CUDA_VERSION >= 12080
    if (d->version >= k_batch_copy_v2_version)
        d->memcpy_batch_v2 =
            reinterpret_cast<MemcpyBatchV2Fn>(resolver.get("cuMemcpyBatchAsync", k_batch_copy_v2_version));
    else if (d->version >= k_batch_copy_v1_version)
        d->memcpy_batch_v1 =
            reinterpret_cast<MemcpyBatchV1Fn>(resolver.get("cuMemcpyBatchAsync", k_batch_copy_v1_version));
#endif
    if (!d->memcpy_batch_v1 && !d->memcpy_batch_v2)
        d->lack(gpu::Feature::batch_copy);
    if (d->version >= k_batch_managed_version) {
        d->prefetch_batch =
            reinterpret_cast<PrefetchBatchFn>(resolver.get("cuMemPrefetchBatchAsync", k_batch_managed_version));
        d->discard_batch =
            reinterpret_cast<DiscardBatchFn>(resolver.get("cuMemDiscardBatchAsync", k_batch_managed_version));
    }
    d->capture_info = reinterpret_cast<CaptureInfoFn>(resolver.get("cuStreamGetCaptureInfo", k_capture_info_version));
    if (!d->capture_info)
        d->lack(gpu::Feature::capture);
    if (!d->prefetch_batch || !d->discard_batch)
        d->lack(gpu::Feature::batch_managed);

    int count = 0;
    if (check(*d, d->cuDeviceGetCount(&count), "cuDeviceGetCount", "count CUDA devices") != GPUMEM_SUCCESS) {
        const std::string why = last_error_message(); // fail() overwrites it
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE, "the cuda backend is unavailable: %s", why.c_str());
    }
    if (count <= 0)
        return fail(GPUMEM_ERROR_NO_DEVICE,
                    "the cuda backend has no device: the CUDA driver %s works but sees no GPU; check nvidia-smi and "
                    "CUDA_VISIBLE_DEVICES",
                    d->library.c_str());
    d->device_count = count;
    log(LogLevel::debug, "cuda: loaded %s, driver version %d, %d device(s), %s", d->library.c_str(), d->version,
        count, resolver.v2 ? "cuGetProcAddress_v2" : "cuGetProcAddress");
    return GPUMEM_SUCCESS;
}

} // namespace

status_t load_driver(const char *library, const Driver **out)
{
    return gpu::load_once(library, out, k_words, load, names_loaded_driver);
}

const char *error_name(const Driver &d, CUresult r)
{
    const char *name = nullptr;
    if (d.cuGetErrorName && d.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
        return name;
    name = builtin_error_name(r);
    return name ? name : "an unknown CUDA error";
}

status_t status_of(const Driver &, CUresult r) { return status_of_result(r); }

const char *error_description(const Driver &d, CUresult r)
{
    const char *description = nullptr;
    if (!d.cuGetErrorString || d.cuGetErrorString(r, &description) != CUDA_SUCCESS || !description)
        description = "no description";
    return description;
}

const char *remedy(const Driver &, CUresult r, status_t status, const gpu::Advice &advice)
{
    return remedy_of(r, status, advice);
}

} // namespace gpumem::detail::cuda
