// The fake CUDA driver: configuration, tracing, error strings, the exported entry points
// and cuGetProcAddress, devices, primary contexts, pointer attributes and the CUmemLocation forms
// of prefetch and advice.  The shared bodies are fake_api_*.cpp (see fake_api.hpp).  SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <cudaTypedefs.h> // the PFN_ types of the device-id forms of prefetch and advice

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

namespace fakecuda {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------
// The settings both fakes share are read by the engine (read_engine_config); here the
// driver's own.
Config read_config()
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
    c.host_pools = !env_flag(c, "NO_HOST_POOLS");
    c.rows = !env_flag(c, "NO_ROWS");
    c.stream_extras = !env_flag(c, "NO_STREAM_EXTRAS");
    c.stub = env_flag(c, "STUB");
    return c;
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

enum Feature { kAlways, kPools, kVmm, kRows, kStreamExtras };

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
// CUDA's own entries (defined below), beside the shared bodies of fake_api.hpp.
FAKE_CUDA_API fake_cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                                  CUmemRangeHandleType handleType, unsigned long long flags);

// clang-format off
#define FAKE_PROCS(X) \
    X(cuGetErrorName, 6000, kAlways) \
    X(cuGetErrorString, 6000, kAlways) \
    X(cuDeviceGetCount, 2000, kAlways) \
    X(cuDeviceGet, 2000, kAlways) \
    X(cuDeviceGetName, 2000, kAlways) \
    X(cuDeviceGetPCIBusId, 4010, kAlways) \
    X(cuDeviceTotalMem, 3020, kAlways) \
    X(cuDeviceGetAttribute, 2000, kAlways) \
    X(cuDevicePrimaryCtxRetain, 7000, kAlways) \
    X(cuDevicePrimaryCtxRelease, 7000, kAlways) \
    X(cuDevicePrimaryCtxGetState, 7000, kAlways) \
    X(cuCtxSetCurrent, 4000, kAlways) \
    X(cuCtxGetCurrent, 4000, kAlways) \
    X(cuCtxGetDevice, 2000, kAlways) \
    X(cuCtxSynchronize, 2000, kAlways) \
    X(cuDeviceCanAccessPeer, 4000, kAlways) \
    X(cuCtxEnablePeerAccess, 4000, kAlways) \
    X(cuCtxDisablePeerAccess, 4000, kAlways) \
    X(cuMemcpyPeer, 4000, kAlways) \
    X(cuMemcpyPeerAsync, 4000, kAlways) \
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
    X(cuStreamGetCtx, 9020, kAlways) \
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
    X(cuMemGetAllocationPropertiesFromHandle, 10020, kVmm) \
    X(cuMemRetainAllocationHandle, 11000, kVmm) \
    X(cuMemPrefetchBatchAsync, 13000, kAlways) \
    X(cuMemDiscardBatchAsync, 13000, kAlways) \
    X(cuStreamEndCapture, 10000, kAlways) \
    X(cuStreamIsCapturing, 10000, kAlways) \
    X(cuThreadExchangeStreamCaptureMode, 10010, kAlways) \
    X(cuGraphInstantiateWithFlags, 11040, kAlways) \
    X(cuGraphLaunch, 10000, kAlways) \
    X(cuGraphExecDestroy, 10000, kAlways) \
    X(cuGraphDestroy, 10000, kAlways) \
    X(cuGraphGetNodes, 10000, kAlways) \
    X(cuUserObjectCreate, 11030, kAlways) \
    X(cuUserObjectRetain, 11030, kAlways) \
    X(cuUserObjectRelease, 11030, kAlways) \
    X(cuGraphRetainUserObject, 11030, kAlways) \
    X(cuGraphReleaseUserObject, 11030, kAlways) \
    X(cuMemGetHandleForAddressRange, 11070, kAlways) \
    X(cuStreamCreateWithPriority, 5050, kStreamExtras) \
    X(cuStreamGetPriority, 5050, kStreamExtras) \
    X(cuStreamGetFlags, 5050, kStreamExtras) \
    X(cuCtxGetStreamPriorityRange, 5050, kStreamExtras) \
    X(cuLaunchHostFunc, 10000, kStreamExtras) \
    X(cuIpcGetEventHandle, 4010, kStreamExtras) \
    X(cuIpcOpenEventHandle, 4010, kStreamExtras) \
    X(cuMemAllocPitch, 3020, kRows) \
    X(cuMemcpy2DAsync, 3020, kRows) \
    X(cuMemcpy3DAsync, 3020, kRows) \
    X(cuMemsetD2D8Async, 3020, kRows) \
    X(cuMemsetD16Async, 3020, kRows) \
    X(cuMemsetD32Async, 3020, kRows)
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
static_assert(std::is_same<decltype(&fake_cuDeviceGetUuid_v1), PFN_cuDeviceGetUuid_v9020>::value, "v1 uuid");
static_assert(std::is_same<decltype(&fake_cuDeviceGetUuid_v2), decltype(&::cuDeviceGetUuid)>::value, "v2 uuid");
static_assert(std::is_same<decltype(&fake_cuMemcpyBatchAsync_v1), PFN_cuMemcpyBatchAsync_v12080>::value, "12.8 batch copy");
static_assert(std::is_same<decltype(&fake_cuMemcpyBatchAsync_v2), PFN_cuMemcpyBatchAsync_v13000>::value, "13.0 batch copy");
// Stream capture's forms by version (cudaTypedefs.h declares the oldest ones only internally).
static_assert(std::is_same<decltype(&fake_cuStreamBeginCapture_v1), CUresult (*)(CUstream)>::value, "10.0 begin capture");
static_assert(std::is_same<decltype(&fake_cuStreamBeginCapture_v2), PFN_cuStreamBeginCapture_v10010>::value, "10.1 begin capture");
static_assert(std::is_same<decltype(&fake_cuStreamBeginCapture_v2), decltype(&::cuStreamBeginCapture)>::value, "begin capture");
static_assert(std::is_same<decltype(&fake_cuStreamGetCaptureInfo_v1), PFN_cuStreamGetCaptureInfo_v10010>::value, "10.1 capture info");
static_assert(std::is_same<decltype(&fake_cuStreamGetCaptureInfo_v2), PFN_cuStreamGetCaptureInfo_v11030>::value, "11.3 capture info");
static_assert(std::is_same<decltype(&fake_cuStreamGetCaptureInfo_v3), PFN_cuStreamGetCaptureInfo_v12030>::value, "12.3 capture info");
static_assert(std::is_same<decltype(&fake_cuStreamGetCaptureInfo_v3), decltype(&::cuStreamGetCaptureInfo)>::value, "capture info");
static_assert(std::is_same<decltype(&fake_cuGraphInstantiate_v1),
                           CUresult (*)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t)>::value,
              "10.0 instantiate");
static_assert(std::is_same<decltype(&fake_cuGraphInstantiateWithFlags), decltype(&::cuGraphInstantiate)>::value,
              "12.0 instantiate");

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
// Fault injection: FAKE_CUDA_FAIL=<entry point>[=<error>] hands out a function
// that fails with CUDA_ERROR_UNKNOWN (or the error named: INVALID_VALUE,
// INVALID_HANDLE, OUT_OF_MEMORY, NOT_SUPPORTED, NOT_PERMITTED) instead, so that
// the backend's error paths (the status, and a message naming the call, the
// error and a remedy of that call's own) are tested.  It takes no parameters:
// the caller's arguments land in registers it never reads.
CUresult injected_failure() { return CUDA_ERROR_UNKNOWN; }
CUresult injected_invalid_value() { return CUDA_ERROR_INVALID_VALUE; }
CUresult injected_invalid_handle() { return CUDA_ERROR_INVALID_HANDLE; }
CUresult injected_out_of_memory() { return CUDA_ERROR_OUT_OF_MEMORY; }
CUresult injected_not_supported() { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult injected_not_permitted() { return CUDA_ERROR_NOT_PERMITTED; }

// The injected function for `symbol`, or nullptr where FAKE_CUDA_FAIL names another.
void *injected_for(const char *symbol)
{
    const char *fail = getenv("FAKE_CUDA_FAIL");
    if (!fail)
        return nullptr;
    const char *eq = strchr(fail, '=');
    const size_t n = eq ? static_cast<size_t>(eq - fail) : strlen(fail);
    if (strlen(symbol) != n || strncmp(fail, symbol, n) != 0)
        return nullptr;
    const struct {
        const char *name;
        CUresult (*fn)();
    } errors[] = {{"INVALID_VALUE", injected_invalid_value}, {"INVALID_HANDLE", injected_invalid_handle},
                  {"OUT_OF_MEMORY", injected_out_of_memory}, {"NOT_SUPPORTED", injected_not_supported},
                  {"NOT_PERMITTED", injected_not_permitted}};
    if (eq)
        for (const auto &e : errors)
            if (strcmp(eq + 1, e.name) == 0)
                return reinterpret_cast<void *>(e.fn);
    return reinterpret_cast<void *>(&injected_failure);
}

void *lookup_proc(const char *symbol, int cuda_version, CUdriverProcAddressQueryResult *status)
{
    if (void *injected = injected_for(symbol)) {
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return injected;
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
        void *newest_fn = nullptr; // a third form (cuStreamGetCaptureInfo's 12.3 one)
        int newest_since = 0;
    };
    const Versioned versioned[] = {
        {"cuMemPrefetchAsync", reinterpret_cast<void *>(&fake_cuMemPrefetchAsync_v1),
         reinterpret_cast<void *>(&fake_cuMemPrefetchAsync_v2), 12020, 8000},
        {"cuMemAdvise", reinterpret_cast<void *>(&fake_cuMemAdvise_v1), reinterpret_cast<void *>(&fake_cuMemAdvise_v2),
         12020, 8000},
        {"cuGetProcAddress", reinterpret_cast<void *>(&fake_cuGetProcAddress_v1),
         reinterpret_cast<void *>(&fake_cuGetProcAddress_v2), 12000, 11030},
        {"cuMemcpyBatchAsync", reinterpret_cast<void *>(&fake_cuMemcpyBatchAsync_v1),
         reinterpret_cast<void *>(&fake_cuMemcpyBatchAsync_v2), 13000, 12080},
        // (cuDeviceGetUuid_v2 reports a MIG instance's own UUID; the fake has no MIG: the same bytes)
        {"cuDeviceGetUuid", reinterpret_cast<void *>(&fake_cuDeviceGetUuid_v1),
         reinterpret_cast<void *>(&fake_cuDeviceGetUuid_v2), 11040, 9020},
        // Stream capture: cuStreamBeginCapture took a mode from 10.1; cuStreamGetCaptureInfo gave
        // the graph and dependencies from 11.3 (_v2, what a 12.0 request gets) and edge data from
        // 12.3; cuGraphInstantiate took flags instead of an error node and log from 12.0.
        {"cuStreamBeginCapture", reinterpret_cast<void *>(&fake_cuStreamBeginCapture_v1),
         reinterpret_cast<void *>(&fake_cuStreamBeginCapture_v2), 10010, 10000},
        {"cuStreamGetCaptureInfo", reinterpret_cast<void *>(&fake_cuStreamGetCaptureInfo_v1),
         reinterpret_cast<void *>(&fake_cuStreamGetCaptureInfo_v2), 11030, 10010,
         reinterpret_cast<void *>(&fake_cuStreamGetCaptureInfo_v3), 12030},
        {"cuGraphInstantiate", reinterpret_cast<void *>(&fake_cuGraphInstantiate_v1),
         reinterpret_cast<void *>(&fake_cuGraphInstantiateWithFlags), 12000, 10000},
    };
    for (const Versioned &v : versioned) {
        if (strcmp(symbol, v.name) != 0)
            continue;
        if (driver < v.old_since)
            return nullptr; // this driver does not have it
        if (cuda_version < v.old_since) {
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return nullptr;
        }
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        if (v.newest_fn && cuda_version >= v.newest_since && driver >= v.newest_since)
            return v.newest_fn;
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
        if ((p.feature == kPools && !c.pools) || (p.feature == kVmm && !c.vmm) || (p.feature == kRows && !c.rows) ||
            (p.feature == kStreamExtras && !c.stream_extras) || p.since > driver)
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

// Fake-only: waits until the user-object destructors already due have run (they run on the fake's
// own thread when a completed launch released the last reference; those released by a call ran
// within it: fake_gpu_graphs.cpp).
FAKE_EXPORT void fakecuda_flush_callbacks(void);
void fakecuda_flush_callbacks(void) { flush_callbacks(); }
// A kernel of the current context read a bad address (the fake runs no kernels): the context's
// sticky error from here on (sticky_fault).
FAKE_EXPORT void fake_cuda_device_fault(void);
void fake_cuda_device_fault(void) { device_fault(); }

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
const char fakecuda::k_device_name[] = "gpumem fake CUDA device";
const char fakecuda::k_pci_bus_id_format[] = "%04X:%02X:%02X.0";

FAKE_CUDA_API fake_cuDeviceGetCount(int *count)
{
    FAKE_ENTER("cuDeviceGetCount", "count=%p", (void *)count);
    if (count == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "count is NULL");
    *count = (int)state().devices.size();
    OUT("*count=%d", *count);
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
    case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED: *v = host_pools_ok(); break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED: *v = host_pools_ok(); break;
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
    // What an H200 with the open kernel module says (probe group export); only dma-buf export
    // is modelled (cuMemGetHandleForAddressRange), fabric handles are refused when made.
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *v = c.vmm; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: *v = c.vmm && c.rdma; break;
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

// dma-buf export: the body both fakes share (fake_api_vmm.cpp, fake_mem_range_handle).
FAKE_CUDA_API fake_cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                                  CUmemRangeHandleType handleType, unsigned long long flags)
{
    return fake_mem_range_handle("cuMemGetHandleForAddressRange", handle, dptr, size, (int)handleType, flags);
}

static CUresult device_get_uuid(const char *name, CUuuid *uuid, CUdevice dev)
{
    FAKE_ENTER(name, "dev=%d", (int)dev);
    if (uuid == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "uuid is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    static_assert(sizeof uuid->bytes == 16, "CUuuid");
    device_uuid(dev, reinterpret_cast<unsigned char *>(uuid->bytes));
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuDeviceGetUuid_v1(CUuuid *uuid, CUdevice dev) { return device_get_uuid("cuDeviceGetUuid", uuid, dev); }
FAKE_CUDA_API fake_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return device_get_uuid("cuDeviceGetUuid_v2", uuid, dev);
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
// The current context is the engine's current device (thread_device(): -1 none); a context
// handle is its device's ordinal, tagged.
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
    const int cur = thread_device();
    if (cur < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (state().devices[(size_t)cur].ctx_refs == 0)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *dev = cur;
    return CUDA_SUCCESS;
}

} // namespace fakecuda

FAKE_CUDA_API fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRetain", "dev=%d", (int)dev);
    if (pctx == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    if (!valid_device(dev))
        FAIL(CUDA_ERROR_INVALID_DEVICE, "no device %d", (int)dev);
    Device &d = state().devices[(size_t)dev];
    // After a device fault anywhere in the process the driver starts no new context: on two
    // H200s (driver 580.159.04) device 1's first retain after device 0's fault answers
    // CUDA_ERROR_ILLEGAL_ADDRESS.  (Whether a context started before the fault keeps working
    // has not been asked; the fake lets it.)
    if (d.ctx_refs == 0)
        for (const Device &other : state().devices)
            if (other.faulted)
                FAIL(CUDA_ERROR_ILLEGAL_ADDRESS, "a device fault earlier in this process: no new context starts");
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
        for (auto &kv : s.streams)
            if (kv.second->device == dev)
                stream_leaves_capture_locked(*kv.second);
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
        // Peer access belongs to the context, both ways.
        for (auto it = s.peers.begin(); it != s.peers.end();)
            it = it->first == dev || it->second == dev ? s.peers.erase(it) : std::next(it);
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
        set_thread_device(-1);
        RET(CUDA_SUCCESS);
    }
    int dev = ctx_device(ctx);
    if (dev < 0)
        FAIL(CUDA_ERROR_INVALID_CONTEXT, "not a context handle");
    set_thread_device(dev); // an inactive primary context may be current; using it fails
    RET(CUDA_SUCCESS);
}

FAKE_CUDA_API fake_cuCtxGetCurrent(CUcontext *pctx)
{
    FAKE_ENTER("cuCtxGetCurrent", "pctx=%p", (void *)pctx);
    if (pctx == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "pctx is NULL");
    const int cur = thread_device();
    *pctx = cur < 0 ? nullptr : ctx_handle(cur);
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

// ---------------------------------------------------------------------------------------------
// Streams with priorities, host functions, IPC events, rows and boxes: CUDA's structures turned
// into the shared bodies' terms (fake_api_rows.cpp has the design note).
// ---------------------------------------------------------------------------------------------
FAKE_CUDA_API fake_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return fake_stream_create_priority("cuStreamCreateWithPriority", phStream, flags, priority);
}
FAKE_CUDA_API fake_cuStreamGetPriority(CUstream hStream, int *priority)
{
    return fake_stream_get_priority("cuStreamGetPriority", hStream, priority);
}
FAKE_CUDA_API fake_cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return fake_stream_get_flags("cuStreamGetFlags", hStream, flags);
}
FAKE_CUDA_API fake_cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    return fake_priority_range("cuCtxGetStreamPriorityRange", leastPriority, greatestPriority);
}
FAKE_CUDA_API fake_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return fake_launch_host_func("cuLaunchHostFunc", hStream, fn, userData);
}
FAKE_CUDA_API fake_cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    static_assert(sizeof(CUipcEventHandle) == 64, "CUipcEventHandle");
    return fake_ipc_get_event_handle("cuIpcGetEventHandle", pHandle, event);
}
FAKE_CUDA_API fake_cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    return fake_ipc_open_event_handle("cuIpcOpenEventHandle", phEvent, &handle);
}
FAKE_CUDA_API fake_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes)
{
    return fake_malloc_pitch("cuMemAllocPitch", dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

namespace {
// One side of a CUDA_MEMCPY2D/3D as an address: host, device and unified memory (arrays are
// not modelled).  `why` says what is wrong with it.
bool side_address(CUmemorytype type, const void *host, CUdeviceptr device, CUarray array, DevPtr *out,
                  const char **why)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: *out = (DevPtr)reinterpret_cast<uintptr_t>(host); return true;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: *out = device; return true;
    case CU_MEMORYTYPE_ARRAY: *why = array ? "CUDA arrays are not modelled" : "a NULL array"; return false;
    default: *why = "an unknown memory type"; return false;
    }
}

// The trace name and the refusal of a copy whose structure is wrong.
CUresult refuse_copy(const char *name, const char *why)
{
    Call call_(name);
    FAIL(CUDA_ERROR_INVALID_VALUE, "%s", why);
}
} // namespace

FAKE_CUDA_API fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream hStream)
{
    const char *name = "cuMemcpy2DAsync";
    if (p == nullptr)
        return refuse_copy(name, "pCopy is NULL");
    DevPtr src = 0, dst = 0;
    const char *why = nullptr;
    if (!side_address(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, &src, &why) ||
        !side_address(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &dst, &why))
        return refuse_copy(name, why);
    // A pitch below the row (whatever the height): cuda_probe rows copy2d_pitch_below_width*.
    if (p->srcPitch < p->srcXInBytes + p->WidthInBytes || p->dstPitch < p->dstXInBytes + p->WidthInBytes)
        return refuse_copy(name, "a pitch below the row's offset and width");
    RowsGeom g;
    g.height = p->Height;
    g.src_pitch = p->srcPitch;
    g.dst_pitch = p->dstPitch;
    g.src_rows = g.dst_rows = p->Height;
    return fake_memcpy_rows(name, dst + p->dstY * p->dstPitch + p->dstXInBytes, src + p->srcY * p->srcPitch + p->srcXInBytes,
                            p->WidthInBytes, g, hStream);
}

FAKE_CUDA_API fake_cuMemcpy3DAsync(const CUDA_MEMCPY3D *p, CUstream hStream)
{
    const char *name = "cuMemcpy3DAsync";
    if (p == nullptr)
        return refuse_copy(name, "pCopy is NULL");
    DevPtr src = 0, dst = 0;
    const char *why = nullptr;
    if (!side_address(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, &src, &why) ||
        !side_address(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &dst, &why))
        return refuse_copy(name, why);
    if (p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
        return refuse_copy(name, "srcLOD, dstLOD, reserved0 and reserved1 must be 0");
    if (p->srcPitch < p->srcXInBytes + p->WidthInBytes || p->dstPitch < p->dstXInBytes + p->WidthInBytes)
        return refuse_copy(name, "a pitch below the row's offset and width");
    // Slices of fewer rows than the box needs, where there is more than one slice.
    if (p->Depth > 1 && (p->srcHeight < p->srcY + p->Height || p->dstHeight < p->dstY + p->Height))
        return refuse_copy(name, "a slice height below the box's offset and height");
    RowsGeom g;
    g.height = p->Height;
    g.depth = p->Depth;
    g.src_pitch = p->srcPitch;
    g.dst_pitch = p->dstPitch;
    g.src_rows = p->srcHeight;
    g.dst_rows = p->dstHeight;
    const DevPtr s = src + (p->srcZ * p->srcHeight + p->srcY) * p->srcPitch + p->srcXInBytes;
    const DevPtr d = dst + (p->dstZ * p->dstHeight + p->dstY) * p->dstPitch + p->dstXInBytes;
    return fake_memcpy_rows(name, d, s, p->WidthInBytes, g, hStream);
}

FAKE_CUDA_API fake_cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                     size_t Height, CUstream hStream)
{
    if (dstPitch < Width)
        return refuse_copy("cuMemsetD2D8Async", "dstPitch is below Width"); // cuda_probe rows fill2d_pitch_below_width
    RowsGeom g;
    g.height = Height;
    g.dst_pitch = dstPitch;
    return fake_memset_rows("cuMemsetD2D8Async", dstDevice, uc, Width, g, hStream);
}

FAKE_CUDA_API fake_cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    RowsGeom g;
    g.elem = 2;
    return fake_memset_rows("cuMemsetD16Async", dstDevice, us, N, g, hStream);
}

FAKE_CUDA_API fake_cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    RowsGeom g;
    g.elem = 4;
    return fake_memset_rows("cuMemsetD32Async", dstDevice, ui, N, g, hStream);
}

// A stream's context: its device's primary context (the only contexts the fake has).
FAKE_CUDA_API fake_cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    if (pctx == nullptr)
        return fake_stream_device("cuStreamGetCtx", hStream, nullptr); // (says INVALID_VALUE)
    int dev = -1;
    CUresult r = fake_stream_device("cuStreamGetCtx", hStream, &dev);
    if (r == CUDA_SUCCESS)
        *pctx = ctx_handle(dev);
    return r;
}

// Peer access names the peer by its primary context; the front-end takes its ordinal.
FAKE_CUDA_API fake_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    int peer = ctx_device(peerContext);
    if (peer < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return fake_peer_enable("cuCtxEnablePeerAccess", peer, Flags);
}

FAKE_CUDA_API fake_cuCtxDisablePeerAccess(CUcontext peerContext)
{
    int peer = ctx_device(peerContext);
    if (peer < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return fake_peer_disable("cuCtxDisablePeerAccess", peer);
}

// A copy between the memory of two contexts: each pointer is checked from its own context's
// device (memcpy_peer_locked); the synchronous form runs on the current context's NULL stream.
static CUresult peer_devices(CUcontext dstContext, CUcontext srcContext, int *dst, int *src, const char **why)
{
    *dst = ctx_device(dstContext);
    *src = ctx_device(srcContext);
    if (*dst < 0 || *src < 0) {
        *why = "dstContext or srcContext is not a context";
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (state().devices[(size_t)*dst].ctx_refs == 0 || state().devices[(size_t)*src].ctx_refs == 0) {
        *why = "dstContext or srcContext was released";
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    return CUDA_SUCCESS;
}

FAKE_CUDA_API fake_cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                                size_t ByteCount)
{
    FAKE_ENTER("cuMemcpyPeer", "dstDevice=0x%llx, dstContext=%p, srcDevice=0x%llx, srcContext=%p, ByteCount=%zu",
               (unsigned long long)dstDevice, (void *)dstContext, (unsigned long long)srcDevice, (void *)srcContext,
               ByteCount);
    int dst = -1, src = -1;
    const char *why = "";
    if (CUresult r = peer_devices(dstContext, srcContext, &dst, &src, &why))
        FAIL(r, "%s", why);
    return memcpy_peer_locked(call_, dstDevice, dst, srcDevice, src, ByteCount, nullptr, true);
}

FAKE_CUDA_API fake_cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                     CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    FAKE_ENTER("cuMemcpyPeerAsync",
               "dstDevice=0x%llx, dstContext=%p, srcDevice=0x%llx, srcContext=%p, ByteCount=%zu, hStream=%p",
               (unsigned long long)dstDevice, (void *)dstContext, (unsigned long long)srcDevice, (void *)srcContext,
               ByteCount, (void *)hStream);
    int dst = -1, src = -1;
    const char *why = "";
    if (CUresult r = peer_devices(dstContext, srcContext, &dst, &src, &why))
        FAIL(r, "%s", why);
    return memcpy_peer_locked(call_, dstDevice, dst, srcDevice, src, ByteCount, hStream, false);
}

// ---------------------------------------------------------------------------------------------
// Pointer attributes and the CUmemLocation forms of prefetch and advice (CUDA 12.2+)
// ---------------------------------------------------------------------------------------------
// What the driver knows about an address.  Memory it did not make or register (plain
// malloc memory, stack) is CUDA_ERROR_INVALID_VALUE, as with a real driver.
FAKE_CUDA_API fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    FAKE_ENTER("cuPointerGetAttribute", "attribute=%d, ptr=0x%llx", (int)attribute, (unsigned long long)ptr);
    if (data == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "data is NULL");
    uint64_t start = 0, size = 0;
    int dev = 0;
    bool host = false, managed = false;
    CUmemoryPool pool = nullptr;
    if (Segment *seg = find_segment_locked(ptr, &start)) {
        size = seg->size;
        dev = seg->device;
        if (seg->pool)
            pool = reinterpret_cast<CUmemoryPool>(seg->pool->id);
    } else if (HostRange *h = find_host_locked(ptr, &start)) {
        size = h->size;
        dev = h->device;
        host = h->kind != HostKind::Managed;
        managed = h->kind == HostKind::Managed;
    } else {
        FAIL(CUDA_ERROR_INVALID_VALUE, "0x%llx is not memory the driver knows", (unsigned long long)ptr);
    }
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext *>(data) = reinterpret_cast<CUcontext>(kCtxTag + ((uint64_t)dev << 4));
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int *>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr *>(data) = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host && !managed)
            FAIL(CUDA_ERROR_INVALID_VALUE, "device memory has no host address");
        *static_cast<void **>(data) = reinterpret_cast<void *>(ptr);
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned int *>(data) = managed; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int *>(data) = dev; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr *>(data) = start; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t *>(data) = size; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<unsigned int *>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<unsigned int *>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long *>(data) = start; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *static_cast<CUmemoryPool *>(data) = pool; break;
    default: FAIL(CUDA_ERROR_INVALID_VALUE, "attribute %d is not modelled", (int)attribute);
    }
    RET(CUDA_SUCCESS);
}

static CUresult location_device(CUmemLocation loc, int *dev)
{
    switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *dev = loc.id;
        return valid_device(loc.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        *dev = CU_DEVICE_CPU;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        *dev = CU_DEVICE_CPU;
        return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

FAKE_CUDA_API fake_cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                         CUstream hStream)
{
    FAKE_ENTER("cuMemPrefetchAsync_v2", "devPtr=0x%llx, count=%zu, location={%d,%d}, flags=%u, hStream=%p",
               (unsigned long long)devPtr, count, (int)location.type, location.id, flags, (void *)hStream);
    if (flags != 0)
        FAIL(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    int dev = 0;
    if (CUresult r = location_device(location, &dev))
        FAIL(r, "bad location {%d,%d}", (int)location.type, location.id);
    return prefetch_locked(call_, devPtr, count, dev, hStream);
}

FAKE_CUDA_API fake_cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    FAKE_ENTER("cuMemAdvise_v2", "devPtr=0x%llx, count=%zu, advice=%d, location={%d,%d}", (unsigned long long)devPtr,
               count, (int)advice, (int)location.type, location.id);
    int dev = CU_DEVICE_CPU;
    if (advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY) {
        if (CUresult r = location_device(location, &dev))
            FAIL(r, "bad location {%d,%d}", (int)location.type, location.id);
    }
    return advise_locked(call_, devPtr, count, advice, dev);
}

// --- Batched calls ---------------------------------------------------------------------------
// Both forms of cuMemcpyBatchAsync check that they were called with their own argument list:
// the 12.8 form's failIdx sits where the 13.0 form has its stream, so a caller that mixed the
// two up passes a stream as failIdx (12.8) or a size_t * as the stream (13.0).

// Every copy has an attribute with a valid source access order and known flags.
static bool copy_attributes_ok(const CUmemcpyAttributes *attrs, const size_t *attrsIdxs, size_t numAttrs, size_t count)
{
    if (attrs == nullptr || !location_runs_ok(attrsIdxs, numAttrs, count))
        return false;
    for (size_t k = 0; k < numAttrs; ++k)
        if (attrs[k].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
            attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY ||
            (attrs[k].flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
            return false;
    return true;
}

FAKE_CUDA_API fake_cuMemcpyBatchAsync_v1(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                         size_t *failIdx, CUstream hStream)
{
    FAKE_ENTER("cuMemcpyBatchAsync", "count=%zu, numAttrs=%zu, failIdx=%p, hStream=%p", count, numAttrs,
               (void *)failIdx, (void *)hStream);
    Stream *probe = nullptr;
    if (failIdx == nullptr || (!is_default_stream(reinterpret_cast<CUstream>(failIdx)) &&
                               find_stream_locked(reinterpret_cast<CUstream>(failIdx), &probe) == CUDA_SUCCESS))
        FAIL(CUDA_ERROR_INVALID_VALUE, "failIdx is NULL or a stream: the CUDA 12.8 form takes failIdx before the "
                                       "stream (called with the 13.0 argument list?)");
    return copy_batch_locked(call_, dsts, srcs, sizes, count, copy_attributes_ok(attrs, attrsIdxs, numAttrs, count),
                             failIdx, hStream);
}

FAKE_CUDA_API fake_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                         CUstream hStream)
{
    FAKE_ENTER("cuMemcpyBatchAsync_v2", "count=%zu, numAttrs=%zu, hStream=%p", count, numAttrs, (void *)hStream);
    return copy_batch_locked(call_, dsts, srcs, sizes, count, copy_attributes_ok(attrs, attrsIdxs, numAttrs, count),
                             nullptr, hStream);
}

FAKE_CUDA_API fake_cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                           CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                           size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)
{
    FAKE_ENTER("cuMemPrefetchBatchAsync", "count=%zu, numPrefetchLocs=%zu, flags=%llu, hStream=%p", count,
               numPrefetchLocs, flags, (void *)hStream);
    if (prefetchLocs == nullptr || !location_runs_ok(prefetchLocIdxs, numPrefetchLocs, count))
        FAIL(CUDA_ERROR_INVALID_VALUE, "prefetchLocs/prefetchLocIdxs do not split the batch");
    std::vector<int> devs(count);
    for (size_t k = 0; k < numPrefetchLocs; ++k) {
        int dev = 0;
        if (CUresult r = location_device(prefetchLocs[k], &dev))
            FAIL(r, "bad location %zu {%d,%d}", k, (int)prefetchLocs[k].type, prefetchLocs[k].id);
        const size_t end = k + 1 < numPrefetchLocs ? prefetchLocIdxs[k + 1] : count;
        for (size_t i = prefetchLocIdxs[k]; i < end; ++i)
            devs[i] = dev;
    }
    return prefetch_batch_locked(call_, dptrs, sizes, count, devs.data(), flags, hStream);
}

FAKE_CUDA_API fake_cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                          CUstream hStream)
{
    FAKE_ENTER("cuMemDiscardBatchAsync", "count=%zu, flags=%llu, hStream=%p", count, flags, (void *)hStream);
    return discard_batch_locked(call_, dptrs, sizes, count, flags, hStream);
}

// --- Stream capture forms of other versions -------------------------------------------------
// CUDA 10.0's cuStreamBeginCapture had no mode: GLOBAL.
FAKE_CUDA_API fake_cuStreamBeginCapture_v1(CUstream hStream)
{
    return fake_cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

FAKE_CUDA_API fake_cuStreamGetCaptureInfo_v1(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out)
{
    FAKE_ENTER("cuStreamGetCaptureInfo", "hStream=%p", (void *)hStream);
    Stream *st = nullptr;
    if (CUresult r = capture_info_locked(call_, hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, &st))
        return r;
    RET(CUDA_SUCCESS);
}

// CUDA 12.3's form adds edge data: every edge of a captured graph is a default one here.
FAKE_CUDA_API fake_cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out, CUgraph *graph_out,
                                             const CUgraphNode **dependencies_out,
                                             const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    FAKE_ENTER("cuStreamGetCaptureInfo_v3", "hStream=%p", (void *)hStream);
    if (edgeData_out != nullptr && dependencies_out == nullptr)
        FAIL(CUDA_ERROR_INVALID_VALUE, "edgeData_out needs dependencies_out");
    size_t n = 0;
    Stream *st = nullptr;
    if (CUresult r = capture_info_locked(call_, hStream, captureStatus_out, id_out, graph_out, dependencies_out, &n, &st))
        return r;
    if (numDependencies_out)
        *numDependencies_out = n;
    if (edgeData_out) {
        st->capture_edges_out.assign(n * sizeof(CUgraphEdgeData), 0);
        *edgeData_out = n ? reinterpret_cast<const CUgraphEdgeData *>(st->capture_edges_out.data()) : nullptr;
    }
    RET(CUDA_SUCCESS);
}
