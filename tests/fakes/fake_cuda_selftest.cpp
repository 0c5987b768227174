// Checks the fake CUDA driver itself, through dlopen and cuGetProcAddress only (as gpumem's
// backend reaches it), in whatever configuration the FAKE_CUDA_* environment selects.
//
//   fake_cuda_selftest /path/to/libfakecuda.so
//
// Exit 0 when every check passed, 1 otherwise.  SPDX-License-Identifier: MIT
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                                 \
            ++g_failures;                                                                                    \
        }                                                                                                    \
    } while (0)

#define CHECK_CU(expected, expr)                                                                             \
    do {                                                                                                     \
        CUresult e_ = (expected), a_ = (expr);                                                               \
        if (a_ != e_) {                                                                                      \
            fprintf(stderr, "%s:%d: FAIL: %s\n    expected %d, got %d\n", __FILE__, __LINE__, #expr, (int)e_, \
                    (int)a_);                                                                                \
            ++g_failures;                                                                                    \
        }                                                                                                    \
    } while (0)
#define OK(expr) CHECK_CU(CUDA_SUCCESS, expr)

bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

struct Expect {
    bool managed = !env_on("FAKE_CUDA_NO_MANAGED");
    bool concurrent_managed = managed && !env_on("FAKE_CUDA_NO_CONCURRENT_MANAGED");
    bool pools = !env_on("FAKE_CUDA_NO_POOLS");
    bool vmm = !env_on("FAKE_CUDA_NO_VMM");
    bool ipc = !env_on("FAKE_CUDA_NO_IPC");
    bool rdma = !env_on("FAKE_CUDA_NO_RDMA"); // GPUDirect RDMA with VMM memory (an H200 has it)
    bool old_driver = env_on("FAKE_CUDA_OLD_DRIVER");
    bool host_access = env_on("FAKE_CUDA_HOST_ACCESS");
    // The driver version the fake reports (FAKE_CUDA_DRIVER_VERSION; 13.0 by default, 11.8 when old).
    int driver = old_driver ? 11080 : getenv("FAKE_CUDA_DRIVER_VERSION") ? atoi(getenv("FAKE_CUDA_DRIVER_VERSION")) : 13000;
    bool batch_128 = driver >= 12080; // cuMemcpyBatchAsync, CUDA 12.8's form
    bool batch_130 = driver >= 13000; // its 13.0 form, cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync
} X;

// The entry points, resolved like gpumem's backend does.
using GetProc = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
using GetProcV1 = CUresult (*)(const char *, void **, int, cuuint64_t);
GetProc g_get_proc;
GetProcV1 g_get_proc_v1;
bool g_has_v2;

// cuGetProcAddress_v2 in terms of the 4-argument form (which has no status).
CUresult get_proc_through_v1(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    CUresult r = g_get_proc_v1(symbol, pfn, version, flags);
    if (status)
        *status = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS
                  : r == CUDA_ERROR_NOT_FOUND && symbol && strcmp(symbol, "cuMemPoolCreate") == 0 && version < 11020
                      ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return r;
}

template <class F> F resolve(const char *name, int version = 12000)
{
    void *fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = g_get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st);
    if (r != CUDA_SUCCESS || fn == nullptr || st != CU_GET_PROC_ADDRESS_SUCCESS) {
        fprintf(stderr, "FAIL: cannot resolve %s (result %d, status %d)\n", name, (int)r, (int)st);
        ++g_failures;
        return nullptr;
    }
    return reinterpret_cast<F>(fn);
}

#define FN(name) static auto p_##name = resolve<decltype(&::name)>(#name)

struct Api {
    decltype(&::cuDeviceGetCount) DeviceGetCount;
    decltype(&::cuDeviceGetAttribute) DeviceGetAttribute;
    decltype(&::cuDeviceGetName) DeviceGetName;
    decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain;
    decltype(&::cuDevicePrimaryCtxRelease) PrimaryCtxRelease;
    decltype(&::cuCtxSetCurrent) CtxSetCurrent;
    decltype(&::cuCtxSynchronize) CtxSynchronize;
    decltype(&::cuMemGetInfo) MemGetInfo;
    decltype(&::cuMemAlloc) MemAlloc;
    decltype(&::cuMemFree) MemFree;
    decltype(&::cuMemcpy) Memcpy;
    decltype(&::cuMemsetD8) MemsetD8;
    decltype(&::cuMemHostAlloc) MemHostAlloc;
    decltype(&::cuMemFreeHost) MemFreeHost;
    decltype(&::cuMemHostGetDevicePointer) MemHostGetDevicePointer;
    decltype(&::cuMemHostRegister) MemHostRegister;
    decltype(&::cuMemHostUnregister) MemHostUnregister;
    decltype(&::cuStreamCreate) StreamCreate;
    decltype(&::cuStreamDestroy) StreamDestroy;
    decltype(&::cuStreamSynchronize) StreamSynchronize;
    decltype(&::cuStreamQuery) StreamQuery;
    decltype(&::cuMemcpyAsync) MemcpyAsync;
    decltype(&::cuMemsetD8Async) MemsetD8Async;
    decltype(&::cuStreamWaitEvent) StreamWaitEvent;
    decltype(&::cuEventCreate) EventCreate;
    decltype(&::cuEventDestroy) EventDestroy;
    decltype(&::cuEventRecord) EventRecord;
    decltype(&::cuEventSynchronize) EventSynchronize;
    decltype(&::cuEventQuery) EventQuery;
    decltype(&::cuEventElapsedTime) EventElapsedTime;
    decltype(&::cuGetErrorName) GetErrorName;
    decltype(&::cuMemAllocManaged) MemAllocManaged;
} A;

void load_api()
{
#define R(field, name) A.field = resolve<decltype(A.field)>(#name)
    R(DeviceGetCount, cuDeviceGetCount);
    R(DeviceGetAttribute, cuDeviceGetAttribute);
    R(DeviceGetName, cuDeviceGetName);
    R(PrimaryCtxRetain, cuDevicePrimaryCtxRetain);
    R(PrimaryCtxRelease, cuDevicePrimaryCtxRelease);
    R(CtxSetCurrent, cuCtxSetCurrent);
    R(CtxSynchronize, cuCtxSynchronize);
    R(MemGetInfo, cuMemGetInfo);
    R(MemAlloc, cuMemAlloc);
    R(MemFree, cuMemFree);
    R(Memcpy, cuMemcpy);
    R(MemsetD8, cuMemsetD8);
    R(MemHostAlloc, cuMemHostAlloc);
    R(MemFreeHost, cuMemFreeHost);
    R(MemHostGetDevicePointer, cuMemHostGetDevicePointer);
    R(MemHostRegister, cuMemHostRegister);
    R(MemHostUnregister, cuMemHostUnregister);
    R(StreamCreate, cuStreamCreate);
    R(StreamDestroy, cuStreamDestroy);
    R(StreamSynchronize, cuStreamSynchronize);
    R(StreamQuery, cuStreamQuery);
    R(MemcpyAsync, cuMemcpyAsync);
    R(MemsetD8Async, cuMemsetD8Async);
    R(StreamWaitEvent, cuStreamWaitEvent);
    R(EventCreate, cuEventCreate);
    R(EventDestroy, cuEventDestroy);
    R(EventRecord, cuEventRecord);
    R(EventSynchronize, cuEventSynchronize);
    R(EventQuery, cuEventQuery);
    R(EventElapsedTime, cuEventElapsedTime);
    R(GetErrorName, cuGetErrorName);
    R(MemAllocManaged, cuMemAllocManaged);
#undef R
}

CUdeviceptr dp(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

// ---------------------------------------------------------------------------------------------
void test_symbols()
{
    void *fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    // Every name of gpumem's symbol list resolves, unless its feature is off.
    struct Name {
        const char *name;
        bool required;
    };
    static const Name names[] = {
#define GPUMEM_CUDA_REQUIRED(n) {#n, true},
#define GPUMEM_CUDA_OPTIONAL(n, feature) {#n, false},
#include "backends/cuda/cuda_symbols.def"
#undef GPUMEM_CUDA_REQUIRED
#undef GPUMEM_CUDA_OPTIONAL
    };
    for (const Name &n : names) {
        static const char *const vmm_names[] = {
            "cuMemGetAllocationGranularity", "cuMemCreate", "cuMemRelease", "cuMemAddressReserve",
            "cuMemAddressFree", "cuMemMap", "cuMemUnmap", "cuMemSetAccess", "cuMemGetAccess",
            "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle",
            "cuMemGetAllocationPropertiesFromHandle", "cuMemRetainAllocationHandle"};
        bool pool = strncmp(n.name, "cuMemPool", 9) == 0 || strcmp(n.name, "cuDeviceGetDefaultMemPool") == 0 ||
                    strcmp(n.name, "cuMemAllocFromPoolAsync") == 0 || strcmp(n.name, "cuMemFreeAsync") == 0;
        bool vmm = false;
        for (const char *v : vmm_names)
            vmm = vmm || strcmp(n.name, v) == 0;
        bool expect = !(pool && !X.pools) && !(vmm && !X.vmm);
        fn = nullptr;
        CUresult r = g_get_proc(n.name, &fn, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st);
        if (expect != (r == CUDA_SUCCESS && fn != nullptr)) {
            fprintf(stderr, "FAIL: %s %s (result %d)\n", n.name, expect ? "does not resolve" : "resolves", (int)r);
            ++g_failures;
        }
        if (n.required)
            CHECK(r == CUDA_SUCCESS);
    }
    // Unknown names: NULL and SYMBOL_NOT_FOUND; the 5-argument form says CUDA_SUCCESS (as
    // driver 580 does), the 4-argument one CUDA_ERROR_NOT_FOUND.
    const CUresult not_found = g_has_v2 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    fn = reinterpret_cast<void *>(1);
    CHECK_CU(not_found, g_get_proc("cuNoSuchFunction", &fn, 13000, 0, &st));
    CHECK(fn == nullptr && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    // Too old a version for the form: VERSION_NOT_SUFFICIENT.
    if (X.pools) {
        CHECK_CU(not_found, g_get_proc("cuMemPoolCreate", &fn, 11000, 0, &st));
        CHECK(fn == nullptr && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    } else {
        CHECK_CU(not_found, g_get_proc("cuMemPoolCreate", &fn, 13000, 0, &st));
        CHECK(fn == nullptr && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    }
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, g_get_proc(nullptr, &fn, 12000, 0, &st));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, g_get_proc("cuInit", nullptr, 12000, 0, &st));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, g_get_proc("cuInit", &fn, 12000, 0x80, &st));
    // Prefetch and advice: the location forms only for a 12.2 request on a 12.2+ driver.
    void *old_p = nullptr, *new_p = nullptr, *old_a = nullptr, *new_a = nullptr;
    OK(g_get_proc("cuMemPrefetchAsync", &old_p, 12000, 0, &st));
    OK(g_get_proc("cuMemPrefetchAsync", &new_p, 12020, 0, &st));
    OK(g_get_proc("cuMemAdvise", &old_a, 11080, 0, &st));
    OK(g_get_proc("cuMemAdvise", &new_a, 13000, 0, nullptr)); // symbolStatus is optional
    CHECK(old_p && new_p && old_a && new_a);
    CHECK((old_p != new_p) == !X.old_driver);
    CHECK((old_a != new_a) == !X.old_driver);
    // The batched copy: CUDA 12.8's form (with failIdx) for a 12.8 request, 13.0's for a 13.0
    // request on a 13.0 driver; nothing for a 12.0 request or on an older driver.  The batched
    // prefetch and discard are 13.0's.
    void *copy_128 = nullptr, *copy_130 = nullptr, *pf = nullptr, *dc = nullptr;
    g_get_proc("cuMemcpyBatchAsync", &copy_128, 12080, 0, &st);
    g_get_proc("cuMemcpyBatchAsync", &copy_130, 13000, 0, &st);
    g_get_proc("cuMemPrefetchBatchAsync", &pf, 13000, 0, &st);
    g_get_proc("cuMemDiscardBatchAsync", &dc, 13000, 0, &st);
    CHECK((copy_128 != nullptr) == X.batch_128);
    CHECK((copy_130 != nullptr && copy_130 != copy_128) == X.batch_130);
    CHECK((pf != nullptr && dc != nullptr) == X.batch_130);
    fn = nullptr;
    if (X.batch_128) {
        CHECK_CU(not_found, g_get_proc("cuMemcpyBatchAsync", &fn, 12000, 0, &st));
        CHECK(fn == nullptr && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    }
    // The 4-argument cuGetProcAddress of CUDA 11.3.
    auto v1 = g_get_proc_v1;
    if (v1) {
        OK(v1("cuMemAlloc", &fn, 12000, 0));
        CHECK(fn != nullptr);
        CHECK_CU(CUDA_ERROR_NOT_FOUND, v1("cuMemAlloc_v9", &fn, 12000, 0));
    }
}

// ---------------------------------------------------------------------------------------------
void test_devices_and_memory(CUcontext ctx)
{
    int n = 0;
    OK(A.DeviceGetCount(&n));
    CHECK(n >= 1);
    char name[64];
    OK(A.DeviceGetName(name, sizeof name, 0));
    CHECK(strcmp(name, "gpumem fake CUDA device") == 0);
    CHECK_CU(CUDA_ERROR_INVALID_DEVICE, A.DeviceGetName(name, sizeof name, n));
    int v = -1;
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK(v == 9);
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    CHECK(v == 1);
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
    CHECK(v == X.managed);
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    CHECK(v == X.pools);
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    CHECK(v == X.vmm);
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0));
    CHECK((v & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == (X.pools && X.ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0));
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0));
    CHECK(v == (X.vmm && X.ipc));
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 0));
    CHECK(v == (X.vmm && X.rdma));
    OK(A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0)); // not modelled: 0
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0));
    CHECK_CU(CUDA_ERROR_INVALID_DEVICE, A.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, n));

    size_t free0 = 0, total = 0, free1 = 0;
    OK(A.MemGetInfo(&free0, &total));
    CHECK(free0 <= total && total > 0);
    CUdeviceptr d = 0;
    OK(A.MemAlloc(&d, 1 << 20));
    OK(A.MemGetInfo(&free1, &total));
    CHECK(free1 + (1 << 20) <= free0);
    CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, A.MemAlloc(&d, total + 1));
    CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, A.MemAlloc(&d, SIZE_MAX));
    CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, A.MemAlloc(&d, SIZE_MAX - 4095));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemAlloc(&d, 0));
    OK(A.MemAlloc(&d, 1 << 20));
    std::vector<unsigned char> h(1 << 20), back(1 << 20);
    for (size_t i = 0; i < h.size(); ++i)
        h[i] = (unsigned char)(i * 7);
    OK(A.Memcpy(d, dp(h.data()), h.size()));
    OK(A.Memcpy(dp(back.data()), d, back.size()));
    CHECK(h == back);
    OK(A.MemsetD8(d + 10, 0xab, 100));
    OK(A.Memcpy(dp(back.data()), d, 200));
    CHECK(back[9] == h[9] && back[10] == 0xab && back[109] == 0xab && back[110] == h[110]);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(dp(back.data()), d + 1, 1 << 20)); // runs past the end
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(0, d, 16));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFree(d + 64)); // interior
    OK(A.MemFree(d));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFree(d)); // twice
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(dp(back.data()), d, 16)); // freed
    // Pageable host memory: copies yes, fills no (the device cannot reach it).
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8(dp(back.data()), 1, 16));
    // Host memory where nothing is mapped: a copy touches it and dies with SIGSEGV, as driver
    // 580 does (probe/h200-unknown-fault.txt); a registration refuses it.
    void *gone = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(gone != MAP_FAILED);
    munmap(gone, 4096);
    auto dies = [](const std::function<void()> &call) {
        fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            call();
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        // SIGSEGV, or a sanitizer's report of it (AddressSanitizer catches the signal and exits).
        return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    };
    CHECK(dies([&] { A.Memcpy(dp(back.data()), dp(gone), 16); }));
    CHECK(dies([&] { A.Memcpy(dp(gone), dp(back.data()), 16); }));
    CHECK(dies([&] { A.Memcpy(dp(back.data()), (CUdeviceptr)0x1000, 16); }));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemHostRegister(gone, 4096, 0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(dp(back.data()), UINT64_MAX - 8, 16));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFree(dp(back.data())));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFreeHost(back.data()));

    // Page-locked memory: one address for host and device.
    void *ph = nullptr;
    OK(A.MemHostAlloc(&ph, 10000, CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr pd = 0;
    OK(A.MemHostGetDevicePointer(&pd, static_cast<char *>(ph) + 100, 0));
    CHECK(pd == dp(ph) + 100);
    OK(A.MemsetD8(pd, 0x5a, 100));
    CHECK(static_cast<unsigned char *>(ph)[100] == 0x5a);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemHostRegister(ph, 4096, 0)); // page-locked already
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFreeHost(static_cast<char *>(ph) + 1));
    OK(A.MemFreeHost(ph));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFreeHost(ph));
    // Registration.
    std::vector<char> buf(3 * 4096);
    OK(A.MemHostRegister(buf.data(), buf.size(), 0));
    CHECK_CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, A.MemHostRegister(buf.data() + 100, 10, 0));
    OK(A.MemsetD8(dp(buf.data()), 3, buf.size()));
    CHECK(buf[5000] == 3);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemHostUnregister(buf.data() + 1)); // interior
    OK(A.MemHostUnregister(buf.data()));
    CHECK_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, A.MemHostUnregister(buf.data()));

    // Managed memory.
    CUdeviceptr m = 0;
    if (X.managed) {
        OK(A.MemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL));
        reinterpret_cast<char *>(m)[8191] = 1; // host-accessible
        OK(A.MemFree(m));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemAllocManaged(&m, 8192, 0));
    } else {
        CHECK_CU(CUDA_ERROR_NOT_SUPPORTED, A.MemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL));
    }
    (void)ctx;
}

// ---------------------------------------------------------------------------------------------
void test_streams_and_events()
{
    CUstream s = nullptr, s2 = nullptr;
    CUevent a = nullptr, b = nullptr, nt = nullptr;
    OK(A.StreamCreate(&s, 0));
    OK(A.StreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.StreamCreate(&s2, 0x10));
    OK(A.EventCreate(&a, 0));
    OK(A.EventCreate(&b, 0));
    OK(A.EventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    float ms = -1;
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventElapsedTime(&ms, a, b)); // never recorded
    OK(A.EventSynchronize(a));
    OK(A.EventRecord(a, s));
    usleep(2000);
    OK(A.EventRecord(b, s));
    OK(A.EventSynchronize(b));
    OK(A.EventElapsedTime(&ms, a, b));
    CHECK(ms >= 1.0f && ms < 10000.0f);
    OK(A.EventRecord(nt, s));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventElapsedTime(&ms, a, nt));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventElapsedTime(nullptr, a, b)); // (driver 580's answer)
    OK(A.StreamWaitEvent(s2, a, 0));
    OK(A.StreamWaitEvent(nullptr, b, 0));
    OK(A.EventDestroy(b));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventDestroy(b));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventRecord(b, s));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventRecord(a, reinterpret_cast<CUstream>(a)));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.StreamDestroy(nullptr));
    OK(A.StreamSynchronize(nullptr));
    OK(A.StreamSynchronize(CU_STREAM_LEGACY));
    OK(A.StreamDestroy(s2));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.StreamSynchronize(s2));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.StreamSynchronize(reinterpret_cast<CUstream>(0x12345670)));
    if (env_on("FAKE_CUDA_DEFER")) {
        // Stream work waits for the host: a fill of pinned memory shows only after a sync.
        void *ph = nullptr;
        OK(A.MemHostAlloc(&ph, 4096, 0));
        volatile unsigned char *b = static_cast<unsigned char *>(ph);
        OK(A.MemsetD8Async(dp(ph), 0x3c, 4096, s));
        CHECK(b[0] == 0 && b[4095] == 0);
        CUevent c = nullptr, d = nullptr;
        OK(A.EventCreate(&c, 0));
        OK(A.EventCreate(&d, 0));
        OK(A.EventRecord(c, s));
        OK(A.EventRecord(d, s));
        CHECK_CU(CUDA_ERROR_NOT_READY, A.EventElapsedTime(&ms, c, d)); // not executed yet
        CHECK_CU(CUDA_ERROR_NOT_READY, A.StreamQuery(s)); // ...and it progresses meanwhile
        OK(A.StreamQuery(s));
        CHECK(b[0] == 0x3c && b[4095] == 0x3c);
        OK(A.MemsetD8Async(dp(ph), 0x11, 4096, s));
        CHECK(b[7] == 0x3c);
        OK(A.StreamSynchronize(s));
        CHECK(b[7] == 0x11);
        // A pageable destination: the copy is done when the call returns.
        unsigned char out[16] = {0};
        OK(A.MemsetD8Async(dp(ph), 0x22, 4096, s));
        OK(A.MemcpyAsync(dp(out), dp(ph), sizeof out, s));
        CHECK(out[0] == 0x22 && out[15] == 0x22);
        OK(A.EventElapsedTime(&ms, c, d));
        OK(A.EventDestroy(c));
        OK(A.EventDestroy(d));
        OK(A.MemFreeHost(ph));
    }
    if (X.batch_130) {
        // The two forms of cuMemcpyBatchAsync, each called with its own argument list and with
        // the other's: the fake tells them apart (failIdx sits where 13.0's form has its stream).
        using CopyBatch128 = PFN_cuMemcpyBatchAsync_v12080;
        using CopyBatch130 = PFN_cuMemcpyBatchAsync_v13000;
        void *f128 = nullptr, *f130 = nullptr;
        CUdriverProcAddressQueryResult qs;
        OK(g_get_proc("cuMemcpyBatchAsync", &f128, 12080, 0, &qs));
        OK(g_get_proc("cuMemcpyBatchAsync", &f130, 13000, 0, &qs));
        unsigned char from[64], to[64] = {0};
        memset(from, 0x6b, sizeof from);
        CUdeviceptr dsts[1] = {dp(to)}, srcs[1] = {dp(from)};
        size_t sizes[1] = {sizeof from}, first = 0, fail_idx = 7;
        CUmemcpyAttributes attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        OK(reinterpret_cast<CopyBatch128>(f128)(dsts, srcs, sizes, 1, &attrs, &first, 1, &fail_idx, s));
        OK(reinterpret_cast<CopyBatch130>(f130)(dsts, srcs, sizes, 1, &attrs, &first, 1, s));
        OK(A.StreamSynchronize(s));
        CHECK(to[0] == 0x6b && to[63] == 0x6b);
        // 12.8's function given 13.0's arguments: the stream lands in failIdx.
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, reinterpret_cast<CopyBatch128>(f128)(dsts, srcs, sizes, 1, &attrs, &first, 1,
                                                                                reinterpret_cast<size_t *>(s), s));
        // 13.0's function given failIdx where the stream goes; the legacy stream; a bad entry.
        CHECK_CU(CUDA_ERROR_INVALID_HANDLE, reinterpret_cast<CopyBatch130>(f130)(dsts, srcs, sizes, 1, &attrs, &first,
                                                                                 1, reinterpret_cast<CUstream>(&fail_idx)));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, reinterpret_cast<CopyBatch130>(f130)(dsts, srcs, sizes, 1, &attrs, &first,
                                                                                1, nullptr));
        size_t zero[1] = {0};
        CHECK_CU(CUDA_ERROR_INVALID_VALUE,
                 reinterpret_cast<CopyBatch128>(f128)(dsts, srcs, zero, 1, &attrs, &first, 1, &fail_idx, s));
        CHECK(fail_idx == 0);
        attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, reinterpret_cast<CopyBatch130>(f130)(dsts, srcs, sizes, 1, &attrs, &first,
                                                                                1, s));
    }
    OK(A.EventDestroy(a));
    OK(A.EventDestroy(nt));
    OK(A.StreamDestroy(s));
    const char *n = nullptr;
    OK(A.GetErrorName(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, &n));
    CHECK(n && strcmp(n, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED") == 0);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.GetErrorName((CUresult)123456, &n));
}

// ---------------------------------------------------------------------------------------------
void test_pools()
{
    if (!X.pools)
        return;
    FN(cuMemPoolCreate);
    FN(cuMemPoolDestroy);
    FN(cuMemAllocFromPoolAsync);
    FN(cuMemFreeAsync);
    FN(cuMemPoolSetAttribute);
    FN(cuMemPoolGetAttribute);
    FN(cuMemPoolTrimTo);
    FN(cuDeviceGetDefaultMemPool);
    FN(cuMemPoolExportToShareableHandle);
    FN(cuMemPoolImportFromShareableHandle);
    FN(cuMemPoolExportPointer);
    FN(cuMemPoolImportPointer);
    FN(cuMemGetAddressRange);
    CUmemoryPool def = nullptr, pool = nullptr;
    // Made-up pools and streams.
    CUmemoryPool junk_pool = reinterpret_cast<CUmemoryPool>(0x5550);
    cuuint64_t junk_v = 0;
    CUdeviceptr junk_p = 0;
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolDestroy(junk_pool));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolGetAttribute(junk_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &junk_v));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemAllocFromPoolAsync(&junk_p, 64, junk_pool, nullptr));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolDestroy(nullptr));
    OK(p_cuDeviceGetDefaultMemPool(&def, 0));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, p_cuMemAllocFromPoolAsync(&junk_p, 64, def, reinterpret_cast<CUstream>(def)));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemFreeAsync(dp(&junk_v), nullptr));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolDestroy(def));
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.handleTypes = X.ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    OK(p_cuMemPoolCreate(&pool, &props));
    auto attr = [&](CUmemPool_attribute a) {
        cuuint64_t v = 12345;
        OK(p_cuMemPoolGetAttribute(pool, a, &v));
        return v;
    };
    CUstream s1 = nullptr, s2 = nullptr;
    OK(A.StreamCreate(&s1, 0));
    OK(A.StreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p = 0, q = 0;
    // Memory is reserved in granules (FAKE_CUDA_POOL_GRANULE, 32 MiB by default).
    const char *gv = getenv("FAKE_CUDA_POOL_GRANULE");
    char *unit = nullptr;
    cuuint64_t granule = gv ? strtoull(gv, &unit, 0) : 32u << 20;
    if (gv && unit && *unit)
        granule <<= *unit == 'K' || *unit == 'k' ? 10 : *unit == 'M' || *unit == 'm' ? 20 : 30;
    OK(p_cuMemAllocFromPoolAsync(&p, 4 << 20, pool, s1));
    CHECK(attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == std::max<cuuint64_t>(granule, 4u << 20));
    CHECK(attr(CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 4u << 20);
    OK(p_cuMemFreeAsync(p, s1));
    CHECK(attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 4u << 20); // cached until a synchronisation
    OK(A.StreamSynchronize(s1));
    CHECK(attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0); // threshold 0
    CHECK(attr(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == std::max<cuuint64_t>(granule, 4u << 20));
    // Stream order: with every reuse rule off, another stream does not get a fresh free.
    int zero = 0;
    OK(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &zero));
    OK(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &zero));
    int two = 2, got = -1; // any non-zero is 1 (driver 580)
    OK(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &two));
    OK(p_cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &got));
    CHECK(got == 1);
    cuuint64_t big = UINT64_MAX, five = 5;
    OK(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &big));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &five));
    OK(p_cuMemAllocFromPoolAsync(&p, 65536, pool, s1));
    OK(p_cuMemFreeAsync(p, s1));
    OK(p_cuMemAllocFromPoolAsync(&q, 65536, pool, s1));
    CHECK(q == p); // the same stream: at once
    OK(p_cuMemFreeAsync(q, s1));
    OK(p_cuMemAllocFromPoolAsync(&q, 65536, pool, s2));
    CHECK(q != p); // another stream, no dependency
    CUevent ev = nullptr;
    OK(A.EventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    OK(A.EventRecord(ev, s1));
    OK(A.StreamWaitEvent(s2, ev, 0));
    CUdeviceptr r = 0;
    OK(p_cuMemAllocFromPoolAsync(&r, 65536, pool, s2));
    CHECK(r == p); // the event dependency allows it (FOLLOW_EVENT_DEPENDENCIES is on)
    OK(p_cuMemFreeAsync(q, s2));
    // Data and IPC (within this process: the import maps the same memory again).
    std::vector<unsigned char> h(65536, 0x42), back(65536, 0);
    OK(A.Memcpy(r, dp(h.data()), h.size()));
    if (X.ipc) {
        int fd = -1;
        CUmemPoolPtrExportData data;
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolExportPointer(&data, r)); // the pool first
        OK(p_cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        OK(p_cuMemPoolExportPointer(&data, r));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolExportPointer(&data, r + 8));
        CUmemoryPool imp = nullptr;
        OK(p_cuMemPoolImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)fd),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        close(fd);
        CUdeviceptr ir = 0, x = 0;
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemAllocFromPoolAsync(&x, 64, imp, s1));
        OK(p_cuMemPoolImportPointer(&ir, imp, &data));
        CHECK(ir != r);
        // Pool blocks, imported ones too, have the exporter's size.
        CUdeviceptr rb = 0;
        size_t rs = 0;
        OK(p_cuMemGetAddressRange(&rb, &rs, r + 100));
        CHECK(rb == r && rs == 65536);
        rb = 0;
        rs = 0;
        OK(p_cuMemGetAddressRange(&rb, &rs, ir + 100));
        CHECK(rb == ir && rs == 65536);
        OK(A.Memcpy(dp(back.data()), ir, back.size()));
        CHECK(back == h);
        CUmemPoolPtrExportData junk;
        memset(&junk, 0xff, sizeof junk);
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolImportPointer(&x, imp, &junk));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolImportPointer(&x, pool, &data)); // not imported
        OK(A.MemFree(ir));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFree(ir));
        OK(p_cuMemPoolDestroy(imp));
        int pp[2];
        CHECK(pipe(pp) == 0);
        CHECK_CU(CUDA_ERROR_UNKNOWN, // (driver 580's answer for a descriptor that is no pool)
                 p_cuMemPoolImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)pp[0]),
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        close(pp[0]);
        close(pp[1]);
    } else {
        int fd = -1;
        CUresult e = p_cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        CHECK(e == CUDA_ERROR_NOT_SUPPORTED || e == CUDA_ERROR_INVALID_VALUE);
        props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        CUmemoryPool nope = nullptr;
        CHECK_CU(CUDA_ERROR_NOT_SUPPORTED, p_cuMemPoolCreate(&nope, &props));
    }
    // Destroying with an allocation outstanding: the memory stays until freed.
    OK(p_cuMemPoolDestroy(pool));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolTrimTo(pool, 0));
    OK(A.Memcpy(dp(back.data()), r, back.size()));
    CHECK(back == h);
    OK(p_cuMemFreeAsync(r, s2));
    OK(A.CtxSynchronize());
    OK(A.EventDestroy(ev));
    OK(A.StreamDestroy(s1));
    OK(A.StreamDestroy(s2));
    // maxSize needs a 12.2 driver.
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    const cuuint64_t max_size = std::max<cuuint64_t>(64u << 20, 2 * granule);
    props.maxSize = max_size;
    if (X.old_driver) {
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemPoolCreate(&pool, &props));
    } else {
        OK(p_cuMemPoolCreate(&pool, &props));
        CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, p_cuMemAllocFromPoolAsync(&p, max_size + 1, pool, nullptr));
        OK(p_cuMemAllocFromPoolAsync(&p, max_size, pool, nullptr));
        OK(p_cuMemFreeAsync(p, nullptr));
        OK(p_cuMemPoolDestroy(pool));
    }
}

// ---------------------------------------------------------------------------------------------
void test_vmm()
{
    if (!X.vmm)
        return;
    FN(cuMemGetAllocationGranularity);
    FN(cuMemCreate);
    FN(cuMemRelease);
    FN(cuMemAddressReserve);
    FN(cuMemAddressFree);
    FN(cuMemMap);
    FN(cuMemUnmap);
    FN(cuMemSetAccess);
    FN(cuMemExportToShareableHandle);
    FN(cuMemImportFromShareableHandle);
    FN(cuMemGetAllocationPropertiesFromHandle);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = X.ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    size_t g = 0;
    OK(p_cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK(g == 2u << 20);
    CUmemGenericAllocationHandle h = 0, h2 = 0;
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemRelease(0x1234567));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemMap(0x200000, g, 0, 0x1234567, 0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemUnmap(0x200000, g));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemAddressFree(0x200000, g));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemCreate(&h, g + 1, &prop, 0));
    CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY, p_cuMemCreate(&h, SIZE_MAX / g * g, &prop, 0));
    // RDMA-capable memory: made and reported where the device has it (probe group export,
    // vmm_rdma_create on an H200), refused where it has not.
    {
        CUmemAllocationProp rdma = prop;
        rdma.allocFlags.gpuDirectRDMACapable = 1;
        CUmemGenericAllocationHandle hr = 0;
        if (X.rdma) {
            OK(p_cuMemCreate(&hr, g, &rdma, 0));
            CUmemAllocationProp got;
            OK(p_cuMemGetAllocationPropertiesFromHandle(&got, hr));
            CHECK(got.allocFlags.gpuDirectRDMACapable == 1);
            OK(p_cuMemRelease(hr));
        } else {
            CHECK_CU(CUDA_ERROR_NOT_SUPPORTED, p_cuMemCreate(&hr, g, &rdma, 0));
        }
    }
    OK(p_cuMemCreate(&h, 2 * g, &prop, 0));
    CUdeviceptr va = 0;
    OK(p_cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
    CHECK(va % g == 0);
    OK(p_cuMemMap(va, 2 * g, 0, h, 0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemMap(va + g, g, 0, h, 0)); // already mapped
    CHECK_CU(CUDA_ERROR_NOT_SUPPORTED, p_cuMemMap(va + 3 * g, 2 * g, 0, h, 0)); // past the reservation (580)
    std::vector<unsigned char> data(2 * g, 0x77), back(2 * g, 0);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(va, dp(data.data()), 16)); // no access yet
    CUmemAccessDesc rw;
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = 0;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemSetAccess(va, 3 * g, &rw, 1)); // runs past the mapping
    OK(p_cuMemSetAccess(va, 2 * g, &rw, 1));
    OK(A.Memcpy(va, dp(data.data()), data.size()));
    OK(p_cuMemRelease(h)); // still mapped: the memory stays
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemRelease(h));
    OK(A.Memcpy(dp(back.data()), va, back.size()));
    CHECK(back == data);
    // A second allocation mapped right after: one copy crosses both.
    OK(p_cuMemCreate(&h2, g, &prop, 0));
    OK(p_cuMemMap(va + 2 * g, g, 0, h2, 0));
    OK(p_cuMemSetAccess(va, 3 * g, &rw, 1));
    OK(A.Memcpy(dp(back.data()), va + g, 2 * g));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemUnmap(va + g, g)); // part of a mapping
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemAddressFree(va, 4 * g)); // still mapped
    if (X.ipc) {
        int fd = -1;
        OK(p_cuMemExportToShareableHandle(&fd, h2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        CUmemGenericAllocationHandle imp = 0;
        OK(p_cuMemImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)fd),
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        close(fd);
        CUmemAllocationProp got;
        OK(p_cuMemGetAllocationPropertiesFromHandle(&got, imp));
        CHECK(got.location.id == 0 && got.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        CUdeviceptr va2 = 0;
        OK(p_cuMemAddressReserve(&va2, g, 0, 0, 0));
        OK(p_cuMemMap(va2, g, 0, imp, 0));
        OK(p_cuMemSetAccess(va2, g, &rw, 1));
        OK(A.MemsetD8(va2, 0x31, g));
        OK(A.Memcpy(dp(back.data()), va + 2 * g, g)); // the exporter's mapping sees it
        CHECK(back[0] == 0x31 && back[g - 1] == 0x31);
        OK(p_cuMemUnmap(va2, g));
        OK(p_cuMemRelease(imp));
        OK(p_cuMemAddressFree(va2, g));
        CHECK_CU(CUDA_ERROR_UNKNOWN, p_cuMemImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)0),
                                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    }
    OK(p_cuMemUnmap(va, 3 * g));
    OK(p_cuMemRelease(h2));
    OK(p_cuMemAddressFree(va, 4 * g));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemAddressFree(va, 4 * g));
    // A hint that is free is honoured.
    CUdeviceptr again = 0;
    OK(p_cuMemAddressReserve(&again, 4 * g, 0, va, 0));
    CHECK(again == va);
    OK(p_cuMemAddressFree(again, 4 * g));
}

// ---------------------------------------------------------------------------------------------
CUcontext g_ctx;

// Where calls act (probe/ has driver 580's answers): copies for the current
// context's device, fills for their stream's, peer copies for the device named per side; another
// device's memory reached through peer access (fills of plain memory) or access grants (pools,
// VMM).  Also the device UUIDs and cuCtxGetDevice.  Context 0 is current on entry and on return.
void test_placement()
{
    FN(cuCtxGetDevice);
    FN(cuDeviceGetUuid);
    FN(cuMemcpyPeer);
    FN(cuMemcpyPeerAsync);
    FN(cuMemGetAddressRange);
    FN(cuCtxEnablePeerAccess);
    FN(cuCtxDisablePeerAccess);
    int n = 0;
    OK(A.DeviceGetCount(&n));
    CUdevice dv = -1;
    OK(p_cuCtxGetDevice(&dv));
    CHECK(dv == 0);
    // UUIDs: 16 bytes per device, distinct, the same each time (and in every process).
    CUuuid u0, u0b, u1;
    OK(p_cuDeviceGetUuid(&u0, 0));
    OK(p_cuDeviceGetUuid(&u0b, 0));
    CHECK(memcmp(&u0, &u0b, sizeof u0) == 0);
    CHECK_CU(CUDA_ERROR_INVALID_DEVICE, p_cuDeviceGetUuid(&u1, n));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuDeviceGetUuid(nullptr, 0));
    void *uuid_old = nullptr, *uuid_new = nullptr;
    CUdriverProcAddressQueryResult qs;
    OK(g_get_proc("cuDeviceGetUuid", &uuid_old, 9020, 0, &qs));
    OK(g_get_proc("cuDeviceGetUuid", &uuid_new, 11040, 0, &qs));
    CHECK(uuid_old != nullptr && uuid_new != nullptr && uuid_old != uuid_new);
    uuid_old = reinterpret_cast<void *>(1);
    g_get_proc("cuDeviceGetUuid_v2", &uuid_old, 12000, 0, &qs); // base names only, as driver 580
    CHECK(uuid_old == nullptr);
    if (n < 2)
        return;
    OK(p_cuDeviceGetUuid(&u1, 1));
    CHECK(memcmp(&u0, &u1, sizeof u0) != 0);

    const size_t k = 4096;
    std::vector<unsigned char> src(k), dst(k);
    for (size_t i = 0; i < k; ++i)
        src[i] = (unsigned char)(i * 13 + 1);
    CUcontext c0 = g_ctx, c1 = nullptr;
    CUstream s0 = nullptr, s1 = nullptr;
    CUdeviceptr d0 = 0, d1 = 0, base = 0;
    size_t size = 0;
    OK(A.PrimaryCtxRetain(&c1, 1));
    OK(A.CtxSetCurrent(c1));
    OK(p_cuCtxGetDevice(&dv));
    CHECK(dv == 1);
    OK(A.StreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    OK(A.MemAlloc(&d1, k));
    CUevent e1 = nullptr, e0 = nullptr;
    OK(A.EventCreate(&e1, 0));
    OK(A.CtxSetCurrent(c0));
    OK(A.StreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    OK(A.MemAlloc(&d0, k));
    OK(A.EventCreate(&e0, 0));
    // Plain memory: copied from any context; filled by its owner (its stream) or under peer
    // access; found by its owner alone.
    OK(A.Memcpy(d1, dp(src.data()), k));
    OK(A.Memcpy(dp(dst.data()), d1, k));
    CHECK(dst == src);
    OK(A.MemcpyAsync(d1, dp(src.data()), k, s0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8(d1, 1, k));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8Async(d1, 1, k, nullptr));
    OK(A.MemsetD8Async(d1, 1, 16, s1));
    OK(A.StreamSynchronize(s1));
    OK(A.StreamSynchronize(s0));
    CHECK_CU(CUDA_ERROR_NOT_FOUND, p_cuMemGetAddressRange(&base, &size, d1));
    OK(p_cuMemGetAddressRange(&base, &size, d0 + 5));
    CHECK(base == d0 && size == k);
    OK(p_cuCtxEnablePeerAccess(c1, 0));
    OK(A.MemsetD8(d1, 2, 16));
    OK(p_cuMemGetAddressRange(&base, &size, d1 + 3));
    CHECK(base == d1 && size == k);
    OK(p_cuCtxDisablePeerAccess(c1));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8(d1, 2, 16));
    // Peer copies: each side in its own context, in stream order.
    OK(p_cuMemcpyPeer(d0, c0, d1, c1, k));
    OK(A.Memcpy(dp(dst.data()), d0, k));
    CHECK(dst[0] == 2 && dst[15] == 2 && dst[16] == src[16]);
    OK(p_cuMemcpyPeerAsync(d1, c1, dp(src.data()), c0, k, s1));
    OK(A.StreamSynchronize(s1));
    OK(A.Memcpy(dp(dst.data()), d1, k));
    CHECK(dst == src);
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, p_cuMemcpyPeer(d1, reinterpret_cast<CUcontext>(s1), d0, c0, k));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemcpyPeer(d1, c1, d0 + k - 8, c0, 16)); // past the end
    // Events and streams of another context.
    FN(cuStreamGetCtx);
    CUcontext sc = nullptr;
    OK(p_cuStreamGetCtx(s1, &sc));
    CHECK(sc == c1);
    OK(p_cuStreamGetCtx(nullptr, &sc));
    CHECK(sc == c0);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuStreamGetCtx(s1, nullptr));
    CHECK_CU(CUDA_ERROR_INVALID_HANDLE, A.EventRecord(e0, s1));
    OK(A.EventRecord(e1, s1));
    OK(A.StreamWaitEvent(s0, e1, 0));
    // No context current: a copy or fill on a stream acts for the stream's device.
    OK(A.CtxSetCurrent(nullptr));
    OK(A.MemcpyAsync(d1, dp(src.data()), k, s1));
    OK(A.MemsetD8Async(d1, 4, 8, s1));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8Async(d0, 4, 8, s1)); // device 1 without peer access
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, p_cuMemGetAddressRange(&base, &size, d1));
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, p_cuCtxGetDevice(&dv));
    CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, p_cuMemcpyPeer(d1, c1, d0, c0, k));
    OK(A.StreamSynchronize(s1));
    OK(A.CtxSetCurrent(c0));

    if (X.pools) {
        FN(cuDeviceGetDefaultMemPool);
        FN(cuMemAllocFromPoolAsync);
        FN(cuMemFreeAsync);
        FN(cuMemPoolSetAccess);
        CUmemoryPool pool1 = nullptr;
        CUdeviceptr b1 = 0;
        OK(p_cuDeviceGetDefaultMemPool(&pool1, 1));
        OK(p_cuMemAllocFromPoolAsync(&b1, k, pool1, s0)); // another device's pool on this stream
        OK(A.StreamSynchronize(s0));
        // Every copy form from context 0 is refused, even on the owner's stream; the owner's
        // stream fills; a peer copy naming the owner copies.
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(b1, dp(src.data()), k));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemcpyAsync(b1, dp(src.data()), k, s1));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(d0, b1, k));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8(b1, 1, k));
        OK(A.MemsetD8Async(b1, 1, k, s1));
        OK(p_cuMemcpyPeerAsync(b1, c1, dp(src.data()), c0, k, s1));
        OK(A.StreamSynchronize(s1));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemcpyPeer(b1, c0, d0, c0, k)); // b1 is not context 0's
        CHECK_CU(CUDA_ERROR_NOT_FOUND, p_cuMemGetAddressRange(&base, &size, b1));
        // The owner keeps read-write access; another device gets what it is granted.
        CUmemAccessDesc a;
        a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        a.location.id = 1;
        a.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        CHECK_CU(CUDA_ERROR_INVALID_DEVICE, p_cuMemPoolSetAccess(pool1, &a, 1));
        a.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
        CHECK_CU(CUDA_ERROR_NOT_SUPPORTED, p_cuMemPoolSetAccess(pool1, &a, 1));
        a.location.id = 0;
        OK(p_cuMemPoolSetAccess(pool1, &a, 1));
        OK(A.Memcpy(dp(dst.data()), b1, k));
        CHECK(dst == src);
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(b1, dp(src.data()), k)); // read-only
        OK(p_cuMemGetAddressRange(&base, &size, b1 + 1));
        CHECK(base == b1 && size == k);
        a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        OK(p_cuMemPoolSetAccess(pool1, &a, 1));
        OK(A.MemsetD8(b1, 3, k));
        a.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        OK(p_cuMemPoolSetAccess(pool1, &a, 1));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8(b1, 3, k));
        OK(p_cuMemFreeAsync(b1, s0)); // another device's block, freed on this device's stream
        OK(A.StreamSynchronize(s0));
    }
    if (X.vmm) {
        FN(cuMemCreate);
        FN(cuMemRelease);
        FN(cuMemAddressReserve);
        FN(cuMemAddressFree);
        FN(cuMemMap);
        FN(cuMemUnmap);
        FN(cuMemSetAccess);
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 1;
        const size_t g = 2u << 20;
        CUmemGenericAllocationHandle h = 0;
        CUdeviceptr v1 = 0;
        OK(p_cuMemCreate(&h, g, &prop, 0));
        OK(p_cuMemAddressReserve(&v1, g, 0, 0, 0));
        OK(p_cuMemMap(v1, g, 0, h, 0));
        CHECK_CU(CUDA_ERROR_NOT_FOUND, p_cuMemGetAddressRange(&base, &size, v1)); // no access for device 0
        CUmemAccessDesc a;
        a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        a.location.id = 1;
        a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        OK(p_cuMemSetAccess(v1, g, &a, 1));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(v1, dp(src.data()), k));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemsetD8(v1, 1, k));
        OK(A.MemsetD8Async(v1, 1, k, s1));
        OK(p_cuMemcpyPeer(v1, c1, d0, c0, k));
        a.location.id = 0;
        OK(p_cuMemSetAccess(v1, g, &a, 1));
        OK(p_cuMemGetAddressRange(&base, &size, v1 + 1));
        CHECK(base == v1 && size == g);
        OK(A.Memcpy(dp(dst.data()), v1, k));
        OK(A.MemsetD8(v1, 1, k));
        OK(A.StreamSynchronize(s1));
        OK(p_cuMemUnmap(v1, g));
        OK(p_cuMemRelease(h));
        OK(p_cuMemAddressFree(v1, g));
    }
    OK(A.StreamDestroy(s0));
    OK(A.EventDestroy(e0));
    OK(A.MemFree(d0));
    OK(A.CtxSetCurrent(c1));
    OK(A.StreamDestroy(s1));
    OK(A.EventDestroy(e1));
    OK(A.MemFree(d1));
    OK(A.CtxSetCurrent(c0));
    OK(A.PrimaryCtxRelease(1));
}

void *thread_body(void *arg)
{
    long failures = 0;
    if (A.CtxSetCurrent(g_ctx) != CUDA_SUCCESS)
        ++failures;
    for (int i = 0; i < 200; ++i) {
        CUdeviceptr d = 0;
        unsigned char v = (unsigned char)i, back = 0;
        if (A.MemAlloc(&d, 4096 + (size_t)i) != CUDA_SUCCESS || A.MemsetD8(d, v, 4096) != CUDA_SUCCESS ||
            A.Memcpy(dp(&back), d + 4095, 1) != CUDA_SUCCESS || back != v || A.MemFree(d) != CUDA_SUCCESS)
            ++failures;
    }
    *static_cast<long *>(arg) = failures;
    return nullptr;
}

void test_threads_and_contexts()
{
    // A thread without a current context has none.
    pthread_t t;
    long failures = -1;
    auto no_ctx = [](void *arg) -> void * {
        CUdeviceptr d = 0;
        *static_cast<CUresult *>(arg) = A.MemAlloc(&d, 64);
        return nullptr;
    };
    CUresult r = CUDA_SUCCESS;
    CHECK(pthread_create(&t, nullptr, no_ctx, &r) == 0);
    pthread_join(t, nullptr);
    CHECK(r == CUDA_ERROR_INVALID_CONTEXT);
    size_t free0 = 0, free1 = 0, total = 0;
    OK(A.MemGetInfo(&free0, &total));
    std::vector<pthread_t> ts(8);
    std::vector<long> fs(8, -1);
    for (int i = 0; i < 8; ++i)
        CHECK(pthread_create(&ts[(size_t)i], nullptr, thread_body, &fs[(size_t)i]) == 0);
    for (int i = 0; i < 8; ++i) {
        pthread_join(ts[(size_t)i], nullptr);
        CHECK(fs[(size_t)i] == 0);
    }
    OK(A.MemGetInfo(&free1, &total));
    CHECK(free1 == free0);
    (void)failures;
}

// ---------------------------------------------------------------------------------------------
// Stream capture, graphs and user objects (fake_api_graphs.cpp's design note says why each
// answer is what it is).
void *g_lib; // the fake itself (its fake-only flush function)

struct CaptureApi {
    decltype(&::cuStreamBeginCapture) Begin;
    decltype(&::cuStreamEndCapture) End;
    decltype(&::cuStreamIsCapturing) IsCapturing;
    PFN_cuStreamGetCaptureInfo_v11030 Info; // what a 12.0 request gets
    decltype(&::cuThreadExchangeStreamCaptureMode) Exchange;
    decltype(&::cuGraphInstantiateWithFlags) Instantiate;
    decltype(&::cuGraphLaunch) Launch;
    decltype(&::cuGraphExecDestroy) ExecDestroy;
    decltype(&::cuGraphDestroy) Destroy;
    decltype(&::cuGraphGetNodes) GetNodes;
    decltype(&::cuUserObjectCreate) UoCreate;
    decltype(&::cuUserObjectRetain) UoRetain;
    decltype(&::cuUserObjectRelease) UoRelease;
    decltype(&::cuGraphRetainUserObject) GraphRetainUo;
    decltype(&::cuGraphReleaseUserObject) GraphReleaseUo;
    void (*Flush)(void);
} C;

int capture_status(CUstream s) // -1: refused
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (C.IsCapturing(s, &st) != CUDA_SUCCESS)
        return -1;
    return (int)st;
}

// Runs `f` on a thread of its own (with the primary context current) and returns its result.
template <class F> CUresult on_other_thread(F f)
{
    struct Arg {
        F *f;
        CUresult r;
    } arg{&f, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    auto body = [](void *p) -> void * {
        Arg *a = static_cast<Arg *>(p);
        A.CtxSetCurrent(g_ctx);
        a->r = (*a->f)();
        return nullptr;
    };
    if (pthread_create(&t, nullptr, body, &arg) != 0)
        return CUDA_ERROR_UNKNOWN;
    pthread_join(t, nullptr);
    return arg.r;
}

// A capture that must end invalidated: ends it, checking so.
void end_invalidated(CUstream s)
{
    CUgraph g = reinterpret_cast<CUgraph>(1);
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, C.End(s, &g));
    CHECK(g == nullptr);
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_NONE);
}

// The user objects' destructors count here, and say which thread ran them.
int g_destroyed = 0;
pthread_t g_destroyer;
void count_destroy(void *p)
{
    g_destroyer = pthread_self();
    __atomic_add_fetch(static_cast<int *>(p), 1, __ATOMIC_SEQ_CST);
}
int destroyed()
{
    C.Flush();
    return __atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST);
}
// A destructor that calls the runtime, which the fake refuses loudly (a child process runs it).
decltype(&::cuMemGetInfo) g_mem_get_info;
void bad_destroy(void *)
{
    size_t f = 0, t = 0;
    g_mem_get_info(&f, &t);
}

void test_capture()
{
#define RC(field, name, version) C.field = resolve<decltype(C.field)>(name, version)
    RC(Begin, "cuStreamBeginCapture", 12000);
    RC(End, "cuStreamEndCapture", 12000);
    RC(IsCapturing, "cuStreamIsCapturing", 12000);
    RC(Info, "cuStreamGetCaptureInfo", 12000);
    RC(Exchange, "cuThreadExchangeStreamCaptureMode", 12000);
    RC(Instantiate, "cuGraphInstantiateWithFlags", 12000);
    RC(Launch, "cuGraphLaunch", 12000);
    RC(ExecDestroy, "cuGraphExecDestroy", 12000);
    RC(Destroy, "cuGraphDestroy", 12000);
    RC(GetNodes, "cuGraphGetNodes", 12000);
    RC(UoCreate, "cuUserObjectCreate", 12000);
    RC(UoRetain, "cuUserObjectRetain", 12000);
    RC(UoRelease, "cuUserObjectRelease", 12000);
    RC(GraphRetainUo, "cuGraphRetainUserObject", 12000);
    RC(GraphReleaseUo, "cuGraphReleaseUserObject", 12000);
#undef RC
    C.Flush = reinterpret_cast<void (*)(void)>(dlsym(g_lib, "fakecuda_flush_callbacks"));
    CHECK(C.Flush != nullptr);
    if (!C.Begin || !C.End || !C.IsCapturing || !C.Info || !C.Exchange || !C.Instantiate || !C.Launch || !C.Flush ||
        !C.UoCreate)
        return;
    // What a configuration may lack (pools): found or NULL, without counting a failure.
    auto maybe = [](const char *name, int version = 12000) -> void * {
        void *fn = nullptr;
        CUdriverProcAddressQueryResult q;
        return g_get_proc(name, &fn, version, 0, &q) == CUDA_SUCCESS ? fn : nullptr;
    };
    auto p_cuMemAllocAsync = reinterpret_cast<decltype(&::cuMemAllocAsync)>(maybe("cuMemAllocAsync"));
    auto p_cuMemFreeAsync = reinterpret_cast<decltype(&::cuMemFreeAsync)>(maybe("cuMemFreeAsync"));
    auto p_cuMemPoolTrimTo = reinterpret_cast<decltype(&::cuMemPoolTrimTo)>(maybe("cuMemPoolTrimTo"));
    auto p_cuDeviceGetDefaultMemPool =
        reinterpret_cast<decltype(&::cuDeviceGetDefaultMemPool)>(maybe("cuDeviceGetDefaultMemPool"));
    auto p_cuMemPrefetchAsync = reinterpret_cast<PFN_cuMemPrefetchAsync_v8000>(maybe("cuMemPrefetchAsync"));
    auto p_cuStreamAttachMemAsync = reinterpret_cast<decltype(&::cuStreamAttachMemAsync)>(maybe("cuStreamAttachMemAsync"));

    // The forms by version: begin took a mode from 10.1, the capture information the graph from
    // 11.3 and edge data from 12.3, instantiation flags from 12.0 (an 11.8 driver has not that one).
    void *f1 = nullptr, *f2 = nullptr, *f3 = nullptr;
    CUdriverProcAddressQueryResult st;
    OK(g_get_proc("cuStreamBeginCapture", &f1, 10000, 0, &st));
    OK(g_get_proc("cuStreamBeginCapture", &f2, 12000, 0, &st));
    CHECK(f1 && f2 && f1 != f2 && f2 == reinterpret_cast<void *>(C.Begin));
    OK(g_get_proc("cuStreamGetCaptureInfo", &f1, 10010, 0, &st));
    OK(g_get_proc("cuStreamGetCaptureInfo", &f2, 11030, 0, &st));
    OK(g_get_proc("cuStreamGetCaptureInfo", &f3, 13000, 0, &st));
    CHECK(f1 && f2 && f3 && f1 != f2 && f2 == reinterpret_cast<void *>(C.Info));
    CHECK((f3 != f2) == !X.old_driver);
    OK(g_get_proc("cuGraphInstantiate", &f1, 11000, 0, &st));
    OK(g_get_proc("cuGraphInstantiate", &f2, 12000, 0, &st));
    CHECK(f1 && f2);
    CHECK((f2 == reinterpret_cast<void *>(C.Instantiate)) == !X.old_driver && (f1 != f2) == !X.old_driver);

    CUstream s = nullptr, s2 = nullptr, b = nullptr;
    OK(A.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(A.StreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    OK(A.StreamCreate(&b, 0)); // a blocking stream
    CUgraph g = nullptr;
    CUgraphExec e = nullptr;

    // Begin and end.
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, C.Begin(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, C.Begin(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Begin(s, (CUstreamCaptureMode)7));
    CHECK_CU(CUDA_ERROR_ILLEGAL_STATE, C.End(s, &g));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(CUDA_ERROR_ILLEGAL_STATE, C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id1 = 0, id2 = 0;
    CUgraph cg = nullptr;
    const CUgraphNode *deps = nullptr;
    size_t ndeps = 99;
    OK(C.Info(s, &cs, &id1, &cg, &deps, &ndeps));
    CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && id1 != 0 && cg != nullptr && ndeps == 0);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Info(s, nullptr, &id1, nullptr, nullptr, nullptr));
    OK(C.End(s, &g));
    CHECK(g != nullptr && g == cg);
    size_t n = 99;
    OK(C.GetNodes(g, nullptr, &n));
    CHECK(n == 0);
    OK(C.Destroy(g));
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(C.Info(s, &cs, &id2, nullptr, nullptr, nullptr));
    CHECK(id2 != id1);
    OK(C.End(s, &g));
    OK(C.Destroy(g));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Destroy(g));
    // The thread's mode: GLOBAL until exchanged; exchange swaps.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(C.Exchange(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(C.Exchange(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    mode = (CUstreamCaptureMode)9;
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Exchange(&mode));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Exchange(nullptr));

    // Captured work is recorded, not run; a launch runs it, in order, each time.
    const size_t k = 4096;
    CUdeviceptr d = 0, d2 = 0;
    OK(A.MemAlloc(&d, k));
    OK(A.MemAlloc(&d2, k));
    OK(A.MemsetD8(d, 0, k));
    OK(A.MemsetD8(d2, 0, k));
    void *ph = nullptr;
    OK(A.MemHostAlloc(&ph, k, 0));
    memset(ph, 0x42, k);
    std::vector<unsigned char> back(k);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.MemcpyAsync(d, dp(ph), k, s)); // a copy node
    OK(A.MemsetD8Async(d + 16, 0x17, 16, s)); // a fill node
    OK(C.Info(s, &cs, nullptr, nullptr, &deps, &ndeps));
    CHECK(ndeps == 1 && deps != nullptr && deps[0] != nullptr);
    size_t expect_nodes = 2;
    CUdeviceptr p = 0;
    if (p_cuMemAllocAsync && p_cuMemFreeAsync) {
        OK(p_cuMemAllocAsync(&p, k, s)); // an alloc node: its address now, its memory at each launch
        CHECK(p != 0);
        OK(A.MemsetD8Async(p, 0x33, k, s));
        OK(A.MemcpyAsync(d2, p, k, s));
        OK(p_cuMemFreeAsync(p, s)); // its free node
        expect_nodes += 4;
    }
    OK(A.Memcpy(dp(back.data()), d, k)); // not run yet (the legacy stream: s does not block)
    CHECK(back[0] == 0);
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE); // (a synchronous copy is not unsafe)
    memset(ph, 0x43, k); // a launch copies what the host memory holds then
    OK(C.End(s, &g));
    OK(C.GetNodes(g, nullptr, &n));
    CHECK(n == expect_nodes);
    std::vector<CUgraphNode> nodes(n + 2, reinterpret_cast<CUgraphNode>(1));
    size_t room = n + 2;
    OK(C.GetNodes(g, nodes.data(), &room));
    CHECK(room == n && nodes[n] == nullptr && nodes[0] != nullptr);
    OK(C.Instantiate(&e, g, 0));
    OK(C.Launch(e, s));
    OK(A.StreamSynchronize(s));
    OK(A.Memcpy(dp(back.data()), d, k));
    CHECK(back[0] == 0x43 && back[16] == 0x17 && back[31] == 0x17 && back[32] == 0x43);
    if (p != 0) {
        OK(A.Memcpy(dp(back.data()), d2, k));
        CHECK(back[0] == 0x33 && back[k - 1] == 0x33);
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(dp(back.data()), p, k)); // freed within the graph
    }
    OK(C.Launch(e, s)); // again: the allocation was freed in the graph
    OK(C.Launch(e, nullptr));
    OK(A.CtxSynchronize());
    OK(C.ExecDestroy(e));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Launch(e, s));
    OK(C.Destroy(g));

    // Pageable host memory is captured too; the launch copies what it holds then.
    std::vector<unsigned char> pageable(k, 0x51);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.MemcpyAsync(d, dp(pageable.data()), k, s));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(C.End(s, &g));
    pageable[0] = 0x52;
    OK(C.Instantiate(&e, g, 0));
    OK(C.Launch(e, s));
    OK(A.StreamSynchronize(s));
    OK(A.Memcpy(dp(back.data()), d, k));
    CHECK(back[0] == 0x52 && back[1] == 0x51);
    OK(C.ExecDestroy(e));
    OK(C.Destroy(g));

    if (p_cuMemAllocAsync && p_cuMemFreeAsync && p_cuMemPoolTrimTo && p_cuDeviceGetDefaultMemPool) {
        // An allocation the graph does not free outlives the launch; launching again before it
        // is freed is INVALID_VALUE, unless AUTO_FREE_ON_LAUNCH.
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        OK(p_cuMemAllocAsync(&p, k, s));
        OK(A.MemsetD8Async(p, 0x61, k, s));
        OK(C.End(s, &g));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(dp(back.data()), p, k)); // not allocated before a launch
        OK(C.Instantiate(&e, g, 0));
        CUgraphExec e2 = nullptr;
        CHECK_CU(CUDA_ERROR_NOT_SUPPORTED, C.Instantiate(&e2, g, 0)); // memory nodes: one exec at a time
        OK(C.Launch(e, s));
        OK(A.StreamSynchronize(s));
        OK(A.Memcpy(dp(back.data()), p, k)); // allocated after the launch
        CHECK(back[0] == 0x61);
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Launch(e, s));
        OK(p_cuMemFreeAsync(p, s));
        OK(C.Launch(e, s));
        OK(A.StreamSynchronize(s));
        OK(A.MemFree(p)); // a graph allocation freed synchronously
        OK(C.ExecDestroy(e));
        OK(C.Instantiate(&e, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
        OK(C.Launch(e, s));
        OK(C.Launch(e, s)); // the previous launch's allocation freed first
        OK(A.StreamSynchronize(s));
        OK(C.Destroy(g)); // the exec and the allocation live on
        OK(A.Memcpy(dp(back.data()), p, k));
        OK(C.ExecDestroy(e));
        OK(A.Memcpy(dp(back.data()), p, k)); // still allocated: its free is the program's
        OK(p_cuMemFreeAsync(p, s));
        OK(A.StreamSynchronize(s));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.Memcpy(dp(back.data()), p, k));
        // A free in a capture must be of a graph allocation: a block from before is refused, and
        // the capture goes on without it.
        CUdeviceptr before = 0;
        OK(p_cuMemAllocAsync(&before, k, s));
        OK(A.StreamSynchronize(s));
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, p_cuMemFreeAsync(before, s));
        CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(A.MemsetD8Async(d, 1, 16, s));
        OK(C.End(s, &g));
        OK(C.GetNodes(g, nullptr, &n));
        CHECK(n == 1);
        OK(C.Destroy(g));
        // Stream-ordered allocation and frees outside the capture (here: on the legacy stream, which
        // a non-blocking capture leaves alone) are potentially unsafe: refused during a GLOBAL
        // capture of this thread, invalidating it; allowed from a thread in RELAXED mode, and
        // during a RELAXED capture.
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, p_cuMemFreeAsync(before, nullptr));
        end_invalidated(s);
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CUdeviceptr la = 0;
        CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, p_cuMemAllocAsync(&la, k, nullptr));
        end_invalidated(s);
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        OK(C.Exchange(&mode));
        OK(p_cuMemAllocAsync(&la, k, nullptr));
        OK(p_cuMemFreeAsync(la, nullptr));
        OK(C.Exchange(&mode));
        CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(C.End(s, &g));
        OK(C.Destroy(g));
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        OK(p_cuMemFreeAsync(before, nullptr));
        CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(C.End(s, &g));
        OK(C.Destroy(g));
        // Pool calls are potentially unsafe (they would not be captured).
        CUmemoryPool pool = nullptr;
        OK(p_cuDeviceGetDefaultMemPool(&pool, 0));
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, on_other_thread([&] { return p_cuMemPoolTrimTo(pool, 0); }));
        end_invalidated(s);
    }

    // Refused on a capturing stream: waiting for it or asking about it (the capture is
    // invalidated); the batched copy (the capture goes on); the batched prefetch and discard
    // (invalidated).
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.StreamSynchronize(s));
    end_invalidated(s);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.StreamQuery(s));
    end_invalidated(s);
    if (X.batch_130) {
        auto copy = resolve<PFN_cuMemcpyBatchAsync_v13000>("cuMemcpyBatchAsync", 13000);
        CUdeviceptr dsts[1] = {d2}, srcs[1] = {d};
        size_t sizes[1] = {k}, idx[1] = {0};
        CUmemcpyAttributes attr;
        memset(&attr, 0, sizeof attr);
        attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, copy(dsts, srcs, sizes, 1, &attr, idx, 1, s));
        CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(C.End(s, &g));
        OK(C.Destroy(g));
        if (X.managed && X.concurrent_managed) {
            auto prefetch = resolve<decltype(&::cuMemPrefetchBatchAsync)>("cuMemPrefetchBatchAsync", 13000);
            auto discard = resolve<decltype(&::cuMemDiscardBatchAsync)>("cuMemDiscardBatchAsync", 13000);
            CUdeviceptr m = 0;
            OK(A.MemAllocManaged(&m, k, CU_MEM_ATTACH_GLOBAL));
            CUdeviceptr ptrs[1] = {m};
            size_t msizes[1] = {k};
            CUmemLocation loc;
            loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
            loc.id = 0;
            OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
            CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, prefetch(ptrs, msizes, 1, &loc, idx, 1, 0, s));
            end_invalidated(s);
            OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
            CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, discard(ptrs, msizes, 1, 0, s));
            end_invalidated(s);
            OK(A.MemFree(m));
        }
    }
    CUevent ev = nullptr, ev_out = nullptr;
    OK(A.EventCreate(&ev, 0));
    OK(A.EventCreate(&ev_out, 0));
    OK(A.EventRecord(ev_out, s2)); // recorded outside any capture
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(A.EventRecord(ev, s));
    CHECK_CU(CUDA_ERROR_CAPTURED_EVENT, A.EventQuery(ev)); // even in RELAXED
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s);
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.EventQuery(ev)); // last recorded in a capture that ended
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.EventSynchronize(ev));
    OK(A.EventRecord(ev, s));
    OK(A.EventSynchronize(ev));
    if (X.managed && X.concurrent_managed && p_cuMemPrefetchAsync) {
        CUdeviceptr m = 0;
        OK(A.MemAllocManaged(&m, k, CU_MEM_ATTACH_GLOBAL));
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, p_cuMemPrefetchAsync(m, k, 0, s));
        end_invalidated(s);
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, p_cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE));
        end_invalidated(s);
        OK(A.MemFree(m));
    }

    // Events across the capture's boundary: an event recorded outside it isolates; with the
    // external-wait flag it is a node; a captured event forks another stream into the capture,
    // which must be joined back before the end, on the origin (an end on the forked stream is
    // UNMATCHED and invalidates the capture).
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, A.StreamWaitEvent(s, ev_out, 0));
    end_invalidated(s);
    CHECK_CU(CUDA_ERROR_ILLEGAL_STATE, A.StreamWaitEvent(s, ev_out, CU_EVENT_WAIT_EXTERNAL)); // outside a capture
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.StreamWaitEvent(s, ev_out, CU_EVENT_WAIT_EXTERNAL));
    OK(C.End(s, &g));
    OK(C.GetNodes(g, nullptr, &n));
    CHECK(n == 1);
    OK(C.Instantiate(&e, g, 0));
    OK(C.Launch(e, s));
    OK(A.StreamSynchronize(s));
    OK(C.ExecDestroy(e));
    OK(C.Destroy(g));
    CUevent forked = nullptr, join = nullptr;
    OK(A.EventCreate(&forked, CU_EVENT_DISABLE_TIMING));
    OK(A.EventCreate(&join, CU_EVENT_DISABLE_TIMING));
    for (int joined = 0; joined < 2; ++joined) {
        OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        OK(A.MemsetD8Async(d, 1, 16, s));
        OK(A.EventRecord(forked, s));
        OK(A.StreamWaitEvent(s2, forked, 0)); // s2 joins the capture
        CHECK(capture_status(s2) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        cuuint64_t a = 0, bid = 0;
        OK(C.Info(s, &cs, &a, nullptr, nullptr, nullptr));
        OK(C.Info(s2, &cs, &bid, nullptr, nullptr, nullptr));
        CHECK(a == bid);
        OK(A.MemsetD8Async(d2, 2, 16, s2));
        if (joined) {
            OK(A.EventRecord(join, s2));
            OK(A.StreamWaitEvent(s, join, 0));
            OK(C.End(s, &g));
            OK(C.GetNodes(g, nullptr, &n));
            CHECK(n == 2);
            OK(C.Destroy(g));
        } else {
            CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, C.End(s, &g));
            CHECK(g == nullptr);
        }
        CHECK(capture_status(s2) == CU_STREAM_CAPTURE_STATUS_NONE);
    }
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.EventRecord(forked, s));
    OK(A.StreamWaitEvent(s2, forked, 0));
    OK(A.EventRecord(join, s2));
    OK(A.StreamWaitEvent(s, join, 0));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, C.End(s2, &g));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s);
    CHECK(capture_status(s2) == CU_STREAM_CAPTURE_STATUS_NONE);
    // A wait on an event of another capture would merge them.
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(C.Begin(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.EventRecord(forked, s2));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_MERGE, A.StreamWaitEvent(s, forked, 0));
    end_invalidated(s);
    OK(C.End(s2, &g));
    OK(C.Destroy(g));
    OK(A.EventRecord(forked, s2));

    // Potentially unsafe calls, by mode: the capturing thread's own (unless its mode is
    // RELAXED), another thread's during a GLOBAL capture (unless THREAD_LOCAL or RELAXED).
    CUdeviceptr x = 0;
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.MemAlloc(&x, 64));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.MemAlloc(&x, 64)); // until it ends
    end_invalidated(s);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(C.Exchange(&mode));
    OK(A.MemAlloc(&x, 64));
    OK(A.MemFree(x));
    OK(C.Exchange(&mode));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, on_other_thread([] {
                 CUdeviceptr y = 0;
                 return A.MemAlloc(&y, 64);
             }));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s);
    for (CUstreamCaptureMode m : {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_RELAXED}) {
        OK(C.Begin(s, m));
        OK(on_other_thread([] {
            CUdeviceptr y = 0;
            CUresult r = A.MemAlloc(&y, 64);
            return r != CUDA_SUCCESS ? r : A.MemFree(y);
        }));
        if (m == CU_STREAM_CAPTURE_MODE_RELAXED) {
            OK(A.MemAlloc(&x, 64)); // own calls too
            OK(A.MemFree(x));
        } else {
            CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.MemAlloc(&x, 64));
        }
        CHECK(capture_status(s) ==
              (m == CU_STREAM_CAPTURE_MODE_RELAXED ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_INVALIDATED));
        if (m == CU_STREAM_CAPTURE_MODE_RELAXED) {
            OK(C.End(s, &g));
            OK(C.Destroy(g));
        } else {
            end_invalidated(s);
        }
    }
    // Asking about a GLOBAL capture from another thread is no unsafe call.
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(on_other_thread([&] {
        CUstreamCaptureStatus os = CU_STREAM_CAPTURE_STATUS_NONE;
        CUresult r = C.Info(s, &os, nullptr, nullptr, nullptr, nullptr);
        return r != CUDA_SUCCESS ? r : os == CU_STREAM_CAPTURE_STATUS_ACTIVE ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
    }));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(C.End(s, &g));
    OK(C.Destroy(g));
    // A GLOBAL capture of another thread, with this thread's mode THREAD_LOCAL: allowed.
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(on_other_thread([] {
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        C.Exchange(&m);
        CUevent e1 = nullptr;
        A.EventCreate(&e1, 0);
        CUresult r = A.EventQuery(e1); // not captured
        A.EventDestroy(e1);
        return r;
    }));
    // The host waiting for uncaptured work, from the capturing thread: potentially unsafe.
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.EventQuery(ev_out));
    end_invalidated(s);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.StreamSynchronize(s2));
    end_invalidated(s);
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.Memcpy(dp(back.data()), d, 16)); // synchronous copies and fills are not unsafe
    OK(A.MemsetD8(d, 0, 16));
    OK(on_other_thread([&] { return A.MemsetD8(d, 0, 16); }));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    // Nor are the VMM calls.
    if (X.vmm) {
        FN(cuMemCreate);
        FN(cuMemRelease);
        CUmemAllocationProp vp;
        memset(&vp, 0, sizeof vp);
        vp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        vp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        vp.location.id = 0;
        CUmemGenericAllocationHandle vh = 0;
        OK(p_cuMemCreate(&vh, 2 << 20, &vp, 0));
        OK(p_cuMemRelease(vh));
        CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    }
    OK(C.End(s, &g));
    OK(C.Destroy(g));
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    void *hp = nullptr;
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.MemHostAlloc(&hp, 64, 0));
    end_invalidated(s);
    // Device synchronisation: refused in any mode, and invalidating.
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(C.Exchange(&mode));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.CtxSynchronize());
    OK(C.Exchange(&mode));
    end_invalidated(s);

    // The legacy stream while a blocking stream captures: any use is IMPLICIT, from any thread,
    // and invalidates; asking whether it captures is IMPLICIT and does not.
    OK(C.Begin(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, C.IsCapturing(nullptr, &cs));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, C.Info(CU_STREAM_LEGACY, &cs, nullptr, nullptr, nullptr, nullptr));
    CHECK(capture_status(b) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, on_other_thread([&] { return A.MemsetD8Async(d, 1, 16, nullptr); }));
    CHECK(capture_status(b) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(b);
    OK(C.Begin(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, A.MemsetD8(d, 1, 16));
    end_invalidated(b);
    OK(C.Begin(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, A.StreamSynchronize(nullptr));
    end_invalidated(b);
    OK(C.Begin(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, A.EventRecord(ev, nullptr));
    end_invalidated(b);

    // The end: on the thread that began a GLOBAL or THREAD_LOCAL capture (from another thread it is
    // WRONG_THREAD, and the capture is over); any for RELAXED.
    for (CUstreamCaptureMode m : {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                  CU_STREAM_CAPTURE_MODE_RELAXED}) {
        OK(C.Begin(s, m));
        CUresult r = on_other_thread([&] {
            CUgraph og = nullptr;
            CUresult rr = C.End(s, &og);
            if (rr == CUDA_SUCCESS)
                C.Destroy(og);
            return rr;
        });
        if (m == CU_STREAM_CAPTURE_MODE_RELAXED) {
            OK(r);
        } else {
            CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, r);
            CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_NONE);
            CHECK_CU(CUDA_ERROR_ILLEGAL_STATE, C.End(s, &g));
        }
    }

    // User objects: a destructor runs once the last reference (the caller's, a graph's, an
    // executable graph's) is gone: within the call that let go of it, on its thread; on the fake's
    // own thread when a completed launch did.
    CUuserObject uo = nullptr;
    g_destroyed = 0;
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.UoCreate(&uo, &g_destroyed, count_destroy, 1, 0));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.UoCreate(&uo, &g_destroyed, count_destroy, 0, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.UoCreate(&uo, &g_destroyed, nullptr, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    OK(C.UoCreate(&uo, &g_destroyed, count_destroy, 2, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    OK(C.UoRetain(uo, 1));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.UoRetain(uo, 0));
    OK(C.UoRelease(uo, 2));
    CHECK(destroyed() == 0);
    OK(C.UoRelease(uo, 1));
    CHECK(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 1); // at the return, without a flush
    CHECK(pthread_equal(g_destroyer, pthread_self()));
    // A graph's reference (moved from the caller): destroying the graph releases it.
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(A.MemsetD8Async(d, 3, 16, s));
    OK(C.End(s, &g));
    OK(C.UoCreate(&uo, &g_destroyed, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.GraphRetainUo(g, uo, 1, 7));
    OK(C.GraphRetainUo(g, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    OK(C.GraphRetainUo(g, uo, 2, 0));
    OK(C.GraphReleaseUo(g, uo, 2));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.GraphReleaseUo(g, uo, 2));
    // An executable graph holds references of its own, until it and its launches are done.
    OK(C.Instantiate(&e, g, 0));
    OK(C.Destroy(g));
    CHECK(destroyed() == 1);
    OK(C.Launch(e, s));
    OK(C.ExecDestroy(e));
    if (env_on("FAKE_CUDA_DEFER")) {
        CHECK(destroyed() == 1); // the launch is pending: it holds them
        OK(A.StreamSynchronize(s));
        CHECK(destroyed() == 2);
        CHECK(!pthread_equal(g_destroyer, pthread_self())); // the launch let go: the fake's thread
    } else {
        CHECK(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 2); // the exec let go, at its destruction
        CHECK(pthread_equal(g_destroyer, pthread_self()));
    }
    // A capture's graph is destroyed with an invalidated capture, and its references with it.
    OK(C.Begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(C.Info(s, &cs, nullptr, &cg, nullptr, nullptr));
    OK(C.UoCreate(&uo, &g_destroyed, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    OK(C.GraphRetainUo(cg, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    CHECK_CU(CUDA_ERROR_INVALID_VALUE, C.Destroy(cg)); // not while it is captured
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, C.Instantiate(&e, cg, 0)); // nor instantiated
    CHECK_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, A.MemAlloc(&x, 64));
    end_invalidated(s);
    CHECK(destroyed() == 3);
    // A destructor that calls the runtime: the fake aborts, saying so.
    g_mem_get_info = A.MemGetInfo;
    printf("(a child now calls the runtime from a destructor: the fake's message below is expected)\n");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        CUuserObject bad = nullptr;
        if (C.UoCreate(&bad, nullptr, bad_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) != CUDA_SUCCESS ||
            C.UoRelease(bad, 1) != CUDA_SUCCESS)
            _exit(3);
        C.Flush();
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);

    // A stream destroyed while it captures ends the capture (its graph and references go).
    OK(C.Begin(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(C.Info(s2, &cs, nullptr, &cg, nullptr, nullptr));
    OK(C.UoCreate(&uo, &g_destroyed, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    OK(C.GraphRetainUo(cg, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    OK(A.StreamDestroy(s2));
    CHECK(destroyed() == 4);

    OK(A.EventDestroy(ev));
    OK(A.EventDestroy(ev_out));
    OK(A.EventDestroy(forked));
    OK(A.EventDestroy(join));
    OK(A.StreamDestroy(s));
    OK(A.StreamDestroy(b));
    OK(A.MemFree(d));
    OK(A.MemFree(d2));
    OK(A.MemFreeHost(ph));
}

// The CPU touching device memory dies (as on a real GPU), unless FAKE_CUDA_HOST_ACCESS=1.
void test_device_memory_is_not_host_memory()
{
    CUdeviceptr d = 0;
    OK(A.MemAlloc(&d, 4096));
    if (!X.host_access)
        printf("(a child now touches device memory: the fake's SIGSEGV hint below is expected)\n");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        volatile char *p = reinterpret_cast<volatile char *>(d);
        p[0] = 1;
        _exit(p[0] == 1 ? 0 : 3);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (X.host_access)
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    else
        CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0)); // SIGSEGV (or a sanitizer's exit)
    OK(A.MemFree(d));
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s /path/to/libfakecuda.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    g_lib = lib;
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    // What a real libcuda exports and gpumem dlsyms; nothing else is needed.
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
    auto version = reinterpret_cast<CUresult (*)(int *)>(dlsym(lib, "cuDriverGetVersion"));
    g_get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    g_get_proc_v1 = reinterpret_cast<GetProcV1>(dlsym(lib, "cuGetProcAddress"));
    CHECK(init && version && g_get_proc_v1);
    CHECK(dlsym(lib, "cuMemAlloc_v2") == nullptr); // internal functions are not exported
    g_has_v2 = g_get_proc != nullptr;
    if (g_get_proc == nullptr) {
        // A CUDA 11.x driver (libfakecuda_v1.so): only the 4-argument form.
        CHECK(X.old_driver);
        g_get_proc = get_proc_through_v1;
    }
    if (!init || !version || !g_get_proc_v1)
        return 1;

    if (env_on("FAKE_CUDA_STUB")) {
        CHECK_CU(CUDA_ERROR_STUB_LIBRARY, init(0));
        int v = 0;
        CHECK_CU(CUDA_ERROR_STUB_LIBRARY, version(&v));
    } else if (env_on("FAKE_CUDA_INIT_FAIL")) {
        CHECK_CU(CUDA_ERROR_UNKNOWN, init(0));
    } else if (env_on("FAKE_CUDA_NO_DEVICE")) {
        CHECK_CU(CUDA_ERROR_NO_DEVICE, init(0));
    } else {
        load_api(); // cuGetProcAddress works before cuInit
        CUdeviceptr d = 0;
        CHECK_CU(CUDA_ERROR_NOT_INITIALIZED, A.MemAlloc(&d, 64));
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, init(1));
        OK(init(0));
        OK(init(0));
        int v = 0;
        OK(version(&v));
        const char *asked = getenv("FAKE_CUDA_DRIVER_VERSION"); // a chosen version, as the driver-12.6 config asks
        CHECK(v == (X.old_driver ? 11080 : asked ? atoi(asked) : 13000));
        test_symbols();
        CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, A.MemAlloc(&d, 64));
        OK(A.PrimaryCtxRetain(&g_ctx, 0));
        OK(A.CtxSetCurrent(g_ctx));
        test_devices_and_memory(g_ctx);
        test_streams_and_events();
        test_pools();
        test_vmm();
        test_placement();
        test_threads_and_contexts();
        test_capture();
        test_device_memory_is_not_host_memory();
        // Releasing the primary context frees what was made in it.
        OK(A.MemAlloc(&d, 4096));
        OK(A.PrimaryCtxRelease(0));
        CHECK_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, A.MemFree(d));
        CHECK_CU(CUDA_ERROR_INVALID_CONTEXT, A.PrimaryCtxRelease(0));
        CUcontext again = nullptr;
        OK(A.PrimaryCtxRetain(&again, 0));
        CHECK(again == g_ctx);
        CHECK_CU(CUDA_ERROR_INVALID_VALUE, A.MemFree(d));
        OK(A.PrimaryCtxRelease(0));
    }
    printf("%s: %d failed checks\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
