// The fake CUDA driver: configuration, tracing, error strings, the exported entry points
// and cuGetProcAddress, devices, primary contexts, streams and events.
// See fake_cuda.hpp for the design.  SPDX-License-Identifier: MIT
#include "fake_cuda.hpp"

#include <cudaTypedefs.h> // the PFN_ types of the device-id forms of prefetch and advice

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace fakecuda {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------
// The settings both fakes share are read by the engine (read_engine_config); here the
// driver's own.
static Config read_config()
{
    Config c;
    c.name = "fakecuda";
    c.env_prefix = "FAKE_CUDA_";
    read_engine_config(c, [&c] {
        if (env_flag(c, "OLD_DRIVER") || FAKE_CUDA_V1_ONLY)
            c.driver_version = 11080;
        if (const char *v = getenv("FAKE_CUDA_DRIVER_VERSION")) {
            int n = atoi(v);
            if (n >= 11030 && n < (FAKE_CUDA_V1_ONLY ? 12000 : 100000))
                c.driver_version = n;
            else
                fprintf(stderr, "fakecuda: FAKE_CUDA_DRIVER_VERSION=%s ignored (>= 11030)\n", v);
        }
    });
    c.concurrent_managed = c.managed && !env_flag(c, "NO_CONCURRENT_MANAGED");
    c.pageable = env_flag(c, "PAGEABLE");
    c.stub = env_flag(c, "STUB");
    return c;
}

const Config &config()
{
    static const Config c = read_config();
    return c;
}


} // namespace fakecuda

// The engine's hooks.
const fakegpu::EngineConfig &fakegpu::engine_config() { return fakecuda::config(); }

fakegpu::State &fakegpu::state()
{
    static State *s = new State; // never destroyed: no teardown races at exit
    return *s;
}

namespace fakecuda {

// ---------------------------------------------------------------------------------------------
// Tracing
// ---------------------------------------------------------------------------------------------
static void vappend(std::string *s, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (!s->empty())
        *s += ", ";
    *s += buf;
}

void Call::args(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(&args_, fmt, ap);
    va_end(ap);
}

void Call::out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(&out_, fmt, ap);
    va_end(ap);
}

CUresult Call::done(CUresult r)
{
    if (config().trace) {
        fprintf(stderr, "fakecuda[%d]: %s(%s) -> %s%s%s%s%s\n", (int)getpid(), name_, args_.c_str(), error_name(r),
                out_.empty() ? "" : " ", out_.c_str(), why_.empty() ? "" : ": ", why_.c_str());
    }
    return r;
}

CUresult Call::fail(CUresult r, const char *fmt, ...)
{
    if (config().trace) {
        va_list ap;
        va_start(ap, fmt);
        vappend(&why_, fmt, ap);
        va_end(ap);
    }
    return done(r);
}

// ---------------------------------------------------------------------------------------------
// Error names and strings (the descriptions are the fake's own words)
// ---------------------------------------------------------------------------------------------
#define FAKE_ERRORS(X)                                                                                       \
    X(CUDA_SUCCESS, "no error")                                                                              \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                                          \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                             \
    X(CUDA_ERROR_NOT_INITIALIZED, "driver not initialized (call cuInit first)")                              \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                                      \
    X(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled")                                                     \
    X(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                                              \
    X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "call requires a newer driver")                                 \
    X(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) busy or unavailable")                           \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                                            \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                                   \
    X(CUDA_ERROR_DEVICE_NOT_LICENSED, "device not licensed")                                                 \
    X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                                            \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                                  \
    X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current")                                         \
    X(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed")                                              \
    X(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed")                                          \
    X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped")                                                  \
    X(CUDA_ERROR_NOT_MAPPED, "resource not mapped")                                                          \
    X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "context already in use")                                           \
    X(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid")                                           \
    X(CUDA_ERROR_FILE_NOT_FOUND, "file not found")                                                           \
    X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found")                           \
    X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed")                           \
    X(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed")                                                         \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                                  \
    X(CUDA_ERROR_ILLEGAL_STATE, "the operation is not valid in the current state")                           \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                                        \
    X(CUDA_ERROR_NOT_READY, "device not ready")                                                              \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                                \
    X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                                \
    X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access already enabled")                                 \
    X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access not enabled")                                         \
    X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context already active")                                   \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                                               \
    X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "host memory already registered")                           \
    X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "host memory not registered")                                   \
    X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                                   \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                                   \
    X(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized")                                             \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination")  \
    X(CUDA_ERROR_TIMEOUT, "wait operation timed out")                                                        \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

struct ErrorText {
    CUresult code;
    const char *name;
    const char *text;
};
#define FAKE_ERROR_ENTRY(code, text) {code, #code, text},
static const ErrorText k_errors[] = {FAKE_ERRORS(FAKE_ERROR_ENTRY)};

static const ErrorText *find_error(CUresult r)
{
    for (const ErrorText &e : k_errors)
        if (e.code == r)
            return &e;
    return nullptr;
}

const char *error_name(CUresult r)
{
    const ErrorText *e = find_error(r);
    if (e)
        return e->name;
    static thread_local char buf[32];
    snprintf(buf, sizeof buf, "CUDA_ERROR_%d", (int)r);
    return buf;
}

CUresult check_initialized()
{
    if (config().stub)
        return CUDA_ERROR_STUB_LIBRARY;
    std::lock_guard<std::mutex> lock(state().mu);
    return state().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}


} // namespace fakecuda

using namespace fakecuda;

// Error strings work at any time (even for the stub), like the real ones.
FAKE_CUDA_API fake_cuGetErrorName(CUresult error, const char **pStr)
{
    Call call_("cuGetErrorName");
    if (config().trace)
        call_.args("error=%d", (int)error);
    if (pStr == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pStr is NULL");
    const ErrorText *e = find_error(error);
    *pStr = e ? e->name : nullptr;
    if (!e)
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown error code");
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuGetErrorString(CUresult error, const char **pStr)
{
    Call call_("cuGetErrorString");
    if (config().trace)
        call_.args("error=%d", (int)error);
    if (pStr == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pStr is NULL");
    const ErrorText *e = find_error(error);
    *pStr = e ? e->text : nullptr;
    if (!e)
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown error code");
    RET(CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Init and version (exported)
// ---------------------------------------------------------------------------------------------
static CUresult fake_cuInit(unsigned int flags)
{
    Call call_("cuInit");
    if (config().trace)
        call_.args("flags=%u", flags);
    const Config &c = config();
    if (c.stub)
        FAIL(CUDA_ERROR_STUB_LIBRARY, "FAKE_CUDA_STUB is set");
    if (flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    if (c.init_fail)
        FAIL(CUDA_ERROR_UNKNOWN, "FAKE_CUDA_INIT_FAIL is set");
    if (c.no_device)
        FAIL(CUDA_ERROR_NO_DEVICE, "FAKE_CUDA_NO_DEVICE is set (or FAKE_CUDA_DEVICES=0)");
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.initialized)
        RET(CUDA_SUCCESS);
    if (!region_init_locked())
        FAIL(CUDA_ERROR_OPERATING_SYSTEM, "could not reserve the device address range: %s", strerror(errno));
    s.devices.assign((size_t)c.devices, Device{});
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    s.host_limit = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 16 * kGiB;
    s.initialized = true;
    RET(CUDA_SUCCESS);
}

static CUresult fake_cuDriverGetVersion(int *driverVersion)
{
    Call call_("cuDriverGetVersion");
    if (config().stub)
        FAIL(CUDA_ERROR_STUB_LIBRARY, "FAKE_CUDA_STUB is set");
    if (driverVersion == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "driverVersion is NULL");
    *driverVersion = config().driver_version;
    OUT("*driverVersion=%d", *driverVersion);
    RET(CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// cuGetProcAddress
// ---------------------------------------------------------------------------------------------
namespace {

enum Feature { kAlways, kPools, kVmm };

struct Proc {
    const char *name;
    void *fn;
    int since;       // CUDA version that introduced this form (requests below it find nothing)
    Feature feature; // turned off by FAKE_CUDA_NO_POOLS / FAKE_CUDA_NO_VMM
};

CUresult fake_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *symbolStatus);
CUresult fake_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

// Each entry is checked against the prototype <cuda.h> gives the name (decltype(&cuX)
// names the versioned function the header maps cuX to: cuMemAlloc -> cuMemAlloc_v2, ...).
// clang-format off
#define FAKE_PROCS(X) \
    X(cuGetErrorName, 6000, kAlways) \
    X(cuGetErrorString, 6000, kAlways) \
    X(cuDeviceGetCount, 2000, kAlways) \
    X(cuDeviceGet, 2000, kAlways) \
    X(cuDeviceGetName, 2000, kAlways) \
    X(cuDeviceTotalMem, 3020, kAlways) \
    X(cuDeviceGetAttribute, 2000, kAlways) \
    X(cuDevicePrimaryCtxRetain, 7000, kAlways) \
    X(cuDevicePrimaryCtxRelease, 7000, kAlways) \
    X(cuDevicePrimaryCtxGetState, 7000, kAlways) \
    X(cuCtxSetCurrent, 4000, kAlways) \
    X(cuCtxGetCurrent, 4000, kAlways) \
    X(cuCtxGetDevice, 2000, kAlways) \
    X(cuCtxSynchronize, 2000, kAlways) \
    X(cuMemGetInfo, 3020, kAlways) \
    X(cuMemAlloc, 3020, kAlways) \
    X(cuMemFree, 3020, kAlways) \
    X(cuMemGetAddressRange, 3020, kAlways) \
    X(cuPointerGetAttribute, 4000, kAlways) \
    X(cuMemHostAlloc, 2020, kAlways) \
    X(cuMemFreeHost, 2000, kAlways) \
    X(cuMemHostGetDevicePointer, 3020, kAlways) \
    X(cuMemHostRegister, 6050, kAlways) \
    X(cuMemHostUnregister, 4000, kAlways) \
    X(cuMemcpy, 4000, kAlways) \
    X(cuMemcpyAsync, 4000, kAlways) \
    X(cuMemsetD8, 3020, kAlways) \
    X(cuMemsetD8Async, 3020, kAlways) \
    X(cuStreamCreate, 2000, kAlways) \
    X(cuStreamDestroy, 4000, kAlways) \
    X(cuStreamSynchronize, 2000, kAlways) \
    X(cuStreamQuery, 2000, kAlways) \
    X(cuStreamWaitEvent, 3020, kAlways) \
    X(cuEventCreate, 2000, kAlways) \
    X(cuEventDestroy, 4000, kAlways) \
    X(cuEventRecord, 2000, kAlways) \
    X(cuEventSynchronize, 2000, kAlways) \
    X(cuEventQuery, 2000, kAlways) \
    X(cuEventElapsedTime, 2000, kAlways) \
    X(cuMemAllocManaged, 6000, kAlways) \
    X(cuStreamAttachMemAsync, 6000, kAlways) \
    X(cuDeviceGetDefaultMemPool, 11020, kPools) \
    X(cuDeviceGetMemPool, 11020, kPools) \
    X(cuDeviceSetMemPool, 11020, kPools) \
    X(cuMemPoolCreate, 11020, kPools) \
    X(cuMemPoolDestroy, 11020, kPools) \
    X(cuMemAllocFromPoolAsync, 11020, kPools) \
    X(cuMemAllocAsync, 11020, kPools) \
    X(cuMemFreeAsync, 11020, kPools) \
    X(cuMemPoolSetAttribute, 11020, kPools) \
    X(cuMemPoolGetAttribute, 11020, kPools) \
    X(cuMemPoolTrimTo, 11020, kPools) \
    X(cuMemPoolSetAccess, 11020, kPools) \
    X(cuMemPoolGetAccess, 11020, kPools) \
    X(cuMemPoolExportToShareableHandle, 11020, kPools) \
    X(cuMemPoolImportFromShareableHandle, 11020, kPools) \
    X(cuMemPoolExportPointer, 11020, kPools) \
    X(cuMemPoolImportPointer, 11020, kPools) \
    X(cuMemGetAllocationGranularity, 10020, kVmm) \
    X(cuMemCreate, 10020, kVmm) \
    X(cuMemRelease, 10020, kVmm) \
    X(cuMemAddressReserve, 10020, kVmm) \
    X(cuMemAddressFree, 10020, kVmm) \
    X(cuMemMap, 10020, kVmm) \
    X(cuMemUnmap, 10020, kVmm) \
    X(cuMemSetAccess, 10020, kVmm) \
    X(cuMemGetAccess, 10020, kVmm) \
    X(cuMemExportToShareableHandle, 10020, kVmm) \
    X(cuMemImportFromShareableHandle, 10020, kVmm) \
    X(cuMemGetAllocationPropertiesFromHandle, 10020, kVmm)
// clang-format on
#define FAKE_PROC_ENTRY(name, since, feature) Proc{#name, reinterpret_cast<void *>(&fake_##name), since, feature},
#define FAKE_PROC_CHECK(name, since, feature) \
    static_assert(std::is_same<decltype(&fake_##name), decltype(&::name)>::value, \
                  "fake_" #name " does not have the prototype <cuda.h> gives " #name);
const Proc k_procs[] = {FAKE_PROCS(FAKE_PROC_ENTRY)};
FAKE_PROCS(FAKE_PROC_CHECK)

static_assert(std::is_same<decltype(&fake_cuMemPrefetchAsync_v1), PFN_cuMemPrefetchAsync_v8000>::value, "v1 prefetch");
static_assert(std::is_same<decltype(&fake_cuMemPrefetchAsync_v2), decltype(&::cuMemPrefetchAsync)>::value, "v2 prefetch");
static_assert(std::is_same<decltype(&fake_cuMemAdvise_v1), PFN_cuMemAdvise_v8000>::value, "v1 advise");
static_assert(std::is_same<decltype(&fake_cuMemAdvise_v2), decltype(&::cuMemAdvise)>::value, "v2 advise");

const char *status_name(CUdriverProcAddressQueryResult s)
{
    switch (s) {
    case CU_GET_PROC_ADDRESS_SUCCESS: return "SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: return "VERSION_NOT_SUFFICIENT";
    default: return "?";
    }
}

// The lookup proper.  Returns the function, or nullptr with *status saying why.
// Fault injection: FAKE_CUDA_FAIL=<entry point> hands out a function that
// fails with CUDA_ERROR_UNKNOWN instead, so that the backend's error path
// (GPUMEM_ERROR_BACKEND naming the call and the error) is tested.  It takes no
// parameters: the caller's arguments land in registers it never reads.
CUresult injected_failure() { return CUDA_ERROR_UNKNOWN; }

void *lookup_proc(const char *symbol, int cuda_version, CUdriverProcAddressQueryResult *status)
{
    if (const char *fail = getenv("FAKE_CUDA_FAIL"); fail && strcmp(fail, symbol) == 0) {
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return reinterpret_cast<void *>(&injected_failure);
    }
    const Config &c = config();
    const int driver = c.driver_version;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // The entries whose form depends on the version asked for: the newest form the
    // driver has that is not newer than the request.
    struct Versioned {
        const char *name;
        void *old_fn;
        void *new_fn;
        int new_since;
        int old_since;
    };
    const Versioned versioned[] = {
        {"cuMemPrefetchAsync", reinterpret_cast<void *>(&fake_cuMemPrefetchAsync_v1),
         reinterpret_cast<void *>(&fake_cuMemPrefetchAsync_v2), 12020, 8000},
        {"cuMemAdvise", reinterpret_cast<void *>(&fake_cuMemAdvise_v1), reinterpret_cast<void *>(&fake_cuMemAdvise_v2),
         12020, 8000},
        {"cuGetProcAddress", reinterpret_cast<void *>(&fake_cuGetProcAddress_v1),
         reinterpret_cast<void *>(&fake_cuGetProcAddress_v2), 12000, 11030},
    };
    for (const Versioned &v : versioned) {
        if (strcmp(symbol, v.name) != 0)
            continue;
        if (cuda_version < v.old_since) {
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return nullptr;
        }
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return cuda_version >= v.new_since && driver >= v.new_since ? v.new_fn : v.old_fn;
    }
    if (strcmp(symbol, "cuInit") == 0 || strcmp(symbol, "cuDriverGetVersion") == 0) {
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return strcmp(symbol, "cuInit") == 0 ? reinterpret_cast<void *>(&fake_cuInit)
                                             : reinterpret_cast<void *>(&fake_cuDriverGetVersion);
    }
    for (const Proc &p : k_procs) {
        if (strcmp(symbol, p.name) != 0)
            continue;
        if ((p.feature == kPools && !c.pools) || (p.feature == kVmm && !c.vmm) || p.since > driver)
            return nullptr; // this driver does not have it
        if (p.since > cuda_version) {
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return nullptr;
        }
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return p.fn;
    }
    return nullptr;
}

CUresult fake_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *symbolStatus)
{
    Call call_("cuGetProcAddress_v2");
    if (config().trace)
        call_.args("symbol=\"%s\", cudaVersion=%d, flags=%llu", symbol ? symbol : "(null)", cudaVersion,
                   (unsigned long long)flags);
    if (config().stub)
        FAIL(CUDA_ERROR_STUB_LIBRARY, "FAKE_CUDA_STUB is set");
    if (symbol == nullptr || pfn == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "symbol or pfn is NULL");
    *pfn = nullptr;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    CUdriverProcAddressQueryResult status;
    void *fn = lookup_proc(symbol, cudaVersion, &status);
    if (symbolStatus)
        *symbolStatus = status;
    OUT("status=%s", status_name(status));
    // As driver 580 does: the 5-argument form answers through symbolStatus alone (*pfn NULL
    // and CUDA_SUCCESS for a name it does not have); the 4-argument form says NOT_FOUND.
    *pfn = fn;
    RET(CUDA_SUCCESS);
}

CUresult fake_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    Call call_("cuGetProcAddress");
    if (config().trace)
        call_.args("symbol=\"%s\", cudaVersion=%d, flags=%llu", symbol ? symbol : "(null)", cudaVersion,
                   (unsigned long long)flags);
    if (config().stub)
        FAIL(CUDA_ERROR_STUB_LIBRARY, "FAKE_CUDA_STUB is set");
    if (symbol == nullptr || pfn == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "symbol or pfn is NULL");
    *pfn = nullptr;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    CUdriverProcAddressQueryResult status;
    void *fn = lookup_proc(symbol, cudaVersion, &status);
    OUT("status=%s", status_name(status));
    if (fn == nullptr)
        RET(CUDA_ERROR_NOT_FOUND);
    *pfn = fn;
    RET(CUDA_SUCCESS);
}

} // namespace

// The exported names: what gpumem (like NCCL) dlsyms.  Written with explicit assembler
// names because <cuda.h> #defines cuGetProcAddress to cuGetProcAddress_v2.
#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))
FAKE_EXPORT CUresult export_cuInit(unsigned int flags) __asm__("cuInit");
FAKE_EXPORT CUresult export_cuDriverGetVersion(int *v) __asm__("cuDriverGetVersion");
FAKE_EXPORT CUresult export_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
    __asm__("cuGetProcAddress");
#if !FAKE_CUDA_V1_ONLY // a CUDA 11.x driver has no cuGetProcAddress_v2
FAKE_EXPORT CUresult export_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *symbolStatus)
    __asm__("cuGetProcAddress_v2");
#endif

CUresult export_cuInit(unsigned int flags) { return fake_cuInit(flags); }
CUresult export_cuDriverGetVersion(int *v) { return fake_cuDriverGetVersion(v); }
CUresult export_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return fake_cuGetProcAddress_v1(symbol, pfn, cudaVersion, flags);
}
#if !FAKE_CUDA_V1_ONLY
CUresult export_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    return fake_cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
}
#endif

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------
static const char k_device_name[] = "gpumem fake CUDA device";

FAKE_CUDA_API fake_cuDeviceGetCount(int *count)
{
    FAKE_ENTER("cuDeviceGetCount", "count=%p", (void *)count);
    if (count == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "count is NULL");
    *count = (int)state().devices.size();
    OUT("*count=%d", *count);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDeviceGet(CUdevice *device, int ordinal)
{
    FAKE_ENTER("cuDeviceGet", "ordinal=%d", ordinal);
    if (device == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "device is NULL");
    if (!valid_device(ordinal))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", ordinal);
    *device = ordinal;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetName", "len=%d, dev=%d", len, (int)dev);
    if (name == nullptr || len <= 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "name is NULL or len <= 0");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    snprintf(name, (size_t)len, "%s", k_device_name);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    FAKE_ENTER("cuDeviceTotalMem", "dev=%d", (int)dev);
    if (bytes == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "bytes is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    *bytes = config().memory;
    RET(CUDA_SUCCESS);
}

static bool device_attribute(CUdevice_attribute a, CUdevice dev, int *v)
{
    const Config &c = config();
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 64 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1755000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0x10 + dev; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 * 1024 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 2; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 228 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = c.managed; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *v = c.pageable; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = c.concurrent_managed; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: *v = c.host_register; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: *v = c.pageable; break;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = c.vmm; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = c.vmm && c.ipc; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: *v = c.host_register; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = c.pools; break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
        // An H200 says POSIX fd and fabric; the fake refuses fabric handles when asked for them.
        *v = c.pools && c.ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC : 0;
        break;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: *v = -1; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *v = -1; break;
    default:
        if ((int)a <= 0 || (int)a >= (int)CU_DEVICE_ATTRIBUTE_MAX)
            return false;
        *v = 0; // everything the fake does not model: absent
    }
    return true;
}

FAKE_CUDA_API fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetAttribute", "attrib=%d, dev=%d", (int)attrib, (int)dev);
    if (pi == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pi is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    if (!device_attribute(attrib, dev, pi))
        FAIL(CUDA_ERROR_INVALID_VALUE, "no attribute %d", (int)attrib);
    OUT("*pi=%d", *pi);
    RET(CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Primary contexts.  Context handles are stable per device; a context whose retain count
// dropped to 0 is inactive and everything made in it is gone.
// ---------------------------------------------------------------------------------------------
static thread_local int tl_current = -1; // device of the current context, -1 none

static CUcontext ctx_handle(int dev) { return reinterpret_cast<CUcontext>(kCtxTag + ((uint64_t)dev << 4)); }
static int ctx_device(CUcontext ctx)
{
    uint64_t v = reinterpret_cast<uint64_t>(ctx);
    if (v < kCtxTag || (v - kCtxTag) % 16 != 0)
        return -1;
    uint64_t dev = (v - kCtxTag) >> 4;
    return dev < state().devices.size() ? (int)dev : -1;
}

namespace fakecuda {

CUresult current_device_locked(int *dev)
{
    if (tl_current < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (state().devices[(size_t)tl_current].ctx_refs == 0)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *dev = tl_current;
    return CUDA_SUCCESS;
}

static Stream &make_stream_locked(int dev, unsigned flags, bool legacy)
{
    State &s = state();
    uint64_t id = new_handle(kStreamTag);
    std::unique_ptr<Stream> st(new Stream);
    st->id = id;
    st->device = dev;
    st->flags = flags;
    st->legacy = legacy;
    Stream &ref = *st;
    s.streams[id] = std::move(st);
    return ref;
}

CUresult find_stream_locked(CUstream h, Stream **out)
{
    State &s = state();
    if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        // The per-thread default stream is modelled as the NULL stream (the fake is synchronous).
        int dev = -1;
        if (CUresult r = current_device_locked(&dev))
            return r;
        *out = s.streams.at(s.devices[(size_t)dev].legacy_stream).get();
        return CUDA_SUCCESS;
    }
    auto it = s.streams.find(reinterpret_cast<uint64_t>(h));
    if (it == s.streams.end() || it->second->legacy)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = it->second.get();
    return CUDA_SUCCESS;
}

// Stream ordering, deferred execution and synchronisation are the engine's (fake_gpu_engine.cpp).

} // namespace fakecuda

FAKE_CUDA_API fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRetain", "dev=%d", (int)dev);
    if (pctx == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    Device &d = state().devices[(size_t)dev];
    if (d.ctx_refs++ == 0) {
        // (Re)activation: a fresh context with its NULL stream.
        d.legacy_stream = make_stream_locked(dev, 0, true).id;
    }
    *pctx = ctx_handle(dev);
    OUT("*pctx=%p, refs=%d", (void *)*pctx, d.ctx_refs);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRelease", "dev=%d", (int)dev);
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    State &s = state();
    Device &d = s.devices[(size_t)dev];
    if (d.ctx_refs == 0)
        FAIL(CUDA_ERROR_INVALID_CONTEXT, "the primary context of device %d is not retained", (int)dev);
    if (--d.ctx_refs == 0) {
        // Like a real driver: the context's work finishes and its resources go with it.
        run_all_locked(dev);
        size_t streams = 0, events = 0;
        for (auto it = s.streams.begin(); it != s.streams.end();) {
            if (it->second->device == dev) {
                streams += !it->second->legacy;
                it = s.streams.erase(it);
            } else {
                ++it;
            }
        }
        for (auto it = s.events.begin(); it != s.events.end();) {
            if (it->second->device == dev) {
                ++events;
                it = s.events.erase(it);
            } else {
                ++it;
            }
        }
        d.legacy_stream = 0;
        destroy_context_pools_locked(dev);
        destroy_context_memory_locked(dev);
        if (streams || events)
            OUT("destroyed with the context: %zu streams, %zu events", streams, events);
    }
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    FAKE_ENTER("cuDevicePrimaryCtxGetState", "dev=%d", (int)dev);
    if (flags == nullptr || active == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags or active is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    *flags = 0;
    *active = state().devices[(size_t)dev].ctx_refs > 0;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuCtxSetCurrent(CUcontext ctx)
{
    FAKE_ENTER("cuCtxSetCurrent", "ctx=%p", (void *)ctx);
    if (ctx == nullptr) {
        tl_current = -1;
        RET(CUDA_SUCCESS);
    }
    int dev = ctx_device(ctx);
    if (dev < 0)
        FAIL(CUDA_ERROR_INVALID_CONTEXT, "not a context handle");
    tl_current = dev; // an inactive primary context may be current; using it fails
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuCtxGetCurrent(CUcontext *pctx)
{
    FAKE_ENTER("cuCtxGetCurrent", "pctx=%p", (void *)pctx);
    if (pctx == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    *pctx = tl_current < 0 ? nullptr : ctx_handle(tl_current);
    OUT("*pctx=%p", (void *)*pctx);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuCtxGetDevice(CUdevice *device)
{
    FAKE_ENTER("cuCtxGetDevice", "device=%p", (void *)device);
    if (device == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "device is NULL");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    *device = dev;
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuCtxSynchronize(void)
{
    FAKE_ENTER("cuCtxSynchronize", "%s", "");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    device_synced_locked(dev);
    RET(CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------
FAKE_CUDA_API fake_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    FAKE_ENTER("cuStreamCreate", "Flags=%u", Flags);
    if (phStream == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "phStream is NULL");
    if (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    *phStream = reinterpret_cast<CUstream>(make_stream_locked(dev, Flags, false).id);
    OUT("*phStream=%p", (void *)*phStream);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuStreamDestroy(CUstream hStream)
{
    FAKE_ENTER("cuStreamDestroy", "hStream=%p", (void *)hStream);
    if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
        FAIL(CUDA_ERROR_INVALID_HANDLE, "the default stream cannot be destroyed");
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    // Its work completes (at once here), but the host has not waited for it: frees on it
    // count as synchronised at the next synchronisation of anything.
    run_stream_locked(*st, st->seq);
    state().streams.erase(st->id);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuStreamSynchronize(CUstream hStream)
{
    FAKE_ENTER("cuStreamSynchronize", "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    stream_synced_locked(*st, st->seq);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuStreamQuery(CUstream hStream)
{
    FAKE_ENTER("cuStreamQuery", "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (!st->pending.empty()) {
        run_stream_locked(*st, st->seq); // busy now; done by the next look
        FAIL(CUDA_ERROR_NOT_READY, "work was pending (FAKE_CUDA_DEFER)");
    }
    RET(CUDA_SUCCESS);
}

static CUresult find_event_locked(CUevent h, Event **out)
{
    auto it = state().events.find(reinterpret_cast<uint64_t>(h));
    if (it == state().events.end())
        return CUDA_ERROR_INVALID_HANDLE;
    *out = it->second.get();
    return CUDA_SUCCESS;
}

FAKE_CUDA_API fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    FAKE_ENTER("cuStreamWaitEvent", "hStream=%p, hEvent=%p, Flags=%u", (void *)hStream, (void *)hEvent, Flags);
    Stream *st = nullptr;
    Event *ev = nullptr;
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (CUresult r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    std::vector<Dep> deps;
    if (ev->recorded && ev->stream != st->id) {
        st->waited[ev->stream] = std::max(st->waited[ev->stream], ev->seq);
        deps.emplace_back(ev->stream, ev->seq);
    }
    enqueue_locked(*st, nullptr, std::move(deps));
    RET(CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------
FAKE_CUDA_API fake_cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    FAKE_ENTER("cuEventCreate", "Flags=%u", Flags);
    if (phEvent == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "phEvent is NULL");
    if (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        FAIL(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        FAIL(CUDA_ERROR_INVALID_VALUE, "CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING");
    int dev = -1;
    if (CUresult r = current_device_locked(&dev))
        FAIL(r, "no usable current context");
    std::unique_ptr<Event> ev(new Event);
    ev->id = new_handle(kEventTag);
    ev->device = dev;
    ev->flags = Flags;
    *phEvent = reinterpret_cast<CUevent>(ev->id);
    state().events[ev->id] = std::move(ev);
    OUT("*phEvent=%p", (void *)*phEvent);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuEventDestroy(CUevent hEvent)
{
    FAKE_ENTER("cuEventDestroy", "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (CUresult r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    state().events.erase(ev->id);
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuEventRecord(CUevent hEvent, CUstream hStream)
{
    FAKE_ENTER("cuEventRecord", "hEvent=%p, hStream=%p", (void *)hEvent, (void *)hStream);
    Event *ev = nullptr;
    Stream *st = nullptr;
    if (CUresult r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (CUresult r = find_stream_locked(hStream, &st))
        FAIL(r, "not a live stream");
    if (ev->device != st->device)
        FAIL(CUDA_ERROR_INVALID_HANDLE, "the event (device %d) and the stream (device %d) are of different contexts",
             ev->device, st->device);
    // The timestamp is the host's time of the record: the fake's device is infinitely fast.
    ev->recorded = true;
    ev->completed = false;
    ev->stream = st->id;
    ev->seq = st->seq + 1;
    ev->ms = now_ms();
    const uint64_t id = ev->id, stream = st->id, seq = ev->seq;
    enqueue_locked(*st, [id, stream, seq] {
        auto it = state().events.find(id);
        if (it != state().events.end() && it->second->stream == stream && it->second->seq == seq)
            it->second->completed = true; // (unless recorded again since)
    });
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuEventSynchronize(CUevent hEvent)
{
    FAKE_ENTER("cuEventSynchronize", "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (CUresult r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (ev->recorded) {
        auto it = state().streams.find(ev->stream);
        if (it != state().streams.end())
            stream_synced_locked(*it->second, ev->seq);
    }
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuEventQuery(CUevent hEvent)
{
    FAKE_ENTER("cuEventQuery", "hEvent=%p", (void *)hEvent);
    Event *ev = nullptr;
    if (CUresult r = find_event_locked(hEvent, &ev))
        FAIL(r, "not a live event");
    if (ev->recorded && !ev->completed) {
        auto it = state().streams.find(ev->stream);
        if (it != state().streams.end())
            run_stream_locked(*it->second, ev->seq); // busy now; done by the next look
        FAIL(CUDA_ERROR_NOT_READY, "the record was pending (FAKE_CUDA_DEFER)");
    }
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    FAKE_ENTER("cuEventElapsedTime", "hStart=%p, hEnd=%p", (void *)hStart, (void *)hEnd);
    Event *a = nullptr, *b = nullptr;
    if (pMilliseconds == nullptr)
        FAIL(CUDA_ERROR_INVALID_HANDLE, "pMilliseconds is NULL (driver 580 says INVALID_HANDLE)");
    if (CUresult r = find_event_locked(hStart, &a))
        FAIL(r, "hStart is not a live event");
    if (CUresult r = find_event_locked(hEnd, &b))
        FAIL(r, "hEnd is not a live event");
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        FAIL(CUDA_ERROR_INVALID_HANDLE, "an event was made with CU_EVENT_DISABLE_TIMING");
    if (!a->recorded || !b->recorded)
        FAIL(CUDA_ERROR_INVALID_HANDLE, "an event was never recorded");
    if (!a->completed || !b->completed)
        FAIL(CUDA_ERROR_NOT_READY, "an event's record has not executed yet (FAKE_CUDA_DEFER)");
    *pMilliseconds = (float)(b->ms - a->ms);
    OUT("*pMilliseconds=%f", (double)*pMilliseconds);
    RET(CUDA_SUCCESS);
}
