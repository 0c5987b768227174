// The fake HIP runtime by itself, through dlopen as gpumem loads it: every name of
// src/backends/hip/hip_symbols.def resolves (the host-allocation spellings as the library
// built says), and the basics behave as the FAKE_HIP_* variables say.
//
//   fake_hip_selftest LIBRARY [newnames]
//
// SPDX-License-Identifier: MIT
#include <hip/hip_runtime_api.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static int g_failures = 0;
#define EXPECT(cond, ...)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            ++g_failures;                                                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                  \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
        }                                                                                                    \
    } while (0)

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBRARY [newnames]\n", argv[0]);
        return 2;
    }
    const bool newnames = argc > 2 && strcmp(argv[2], "newnames") == 0;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    // 1. Every name of the .def.
    struct Name {
        const char *name;
        bool required;
    };
    const Name names[] = {
#define GPUMEM_HIP_REQUIRED(n) {#n, true},
#define GPUMEM_HIP_OPTIONAL(n, feature) {#n, false},
#include "backends/hip/hip_symbols.def"
#undef GPUMEM_HIP_REQUIRED
#undef GPUMEM_HIP_OPTIONAL
    };
    for (const Name &n : names) {
        void *f = dlsym(lib, n.name);
        bool old_spelling = !strcmp(n.name, "hipHostMalloc") || !strcmp(n.name, "hipHostAlloc") || !strcmp(n.name, "hipHostFree");
        bool new_spelling = !strcmp(n.name, "hipExtHostAlloc");
        if (old_spelling)
            EXPECT((f != nullptr) == !newnames, "%s %s", n.name, f ? "exported" : "missing");
        else if (new_spelling)
            EXPECT((f != nullptr) == newnames, "%s %s", n.name, f ? "exported" : "missing");
        else
            EXPECT(f != nullptr, "%s missing", n.name);
    }
    // Nothing but hip* is exported (a few symbols from the C++ runtime aside).
    EXPECT(dlsym(lib, "fake_cuMemAlloc") == nullptr, "internal names are exported");

#define SYM(name) auto name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name))
    SYM(hipInit);
    SYM(hipGetDeviceCount);
    SYM(hipGetErrorName);
    auto hipMalloc = reinterpret_cast<hipError_t (*)(void **, size_t)>(dlsym(lib, "hipMalloc"));
    SYM(hipFree);
    SYM(hipMemcpy);
    SYM(hipMemset);
    SYM(hipDeviceGetAttribute);
    auto hipMallocManaged = reinterpret_cast<hipError_t (*)(void **, size_t, unsigned)>(dlsym(lib, "hipMallocManaged"));
    SYM(hipDeviceGetDefaultMemPool);
    SYM(hipMemGetAllocationGranularity);
    SYM(hipRuntimeGetVersion);
    SYM(hipPointerGetAttributes);
    if (!hipInit || !hipGetDeviceCount || !hipMalloc)
        return 1;

    EXPECT(strcmp(hipGetErrorName(hipErrorNotSupported), "hipErrorNotSupported") == 0, "hipGetErrorName");
    int count = -1;
    hipError_t r = hipGetDeviceCount(&count);
    if (env_on("FAKE_HIP_INIT_FAIL")) {
        EXPECT(hipInit(0) == hipErrorNotInitialized, "hipInit with FAKE_HIP_INIT_FAIL");
        EXPECT(r != hipSuccess && count == 0, "hipGetDeviceCount gave %d, %d", (int)r, count);
        goto done;
    }
    if (env_on("FAKE_HIP_NO_DEVICE")) {
        EXPECT(hipInit(0) == hipErrorInvalidDevice, "hipInit with FAKE_HIP_NO_DEVICE (as ROCm 5.2 says)");
        EXPECT(r == hipErrorNoDevice && count == 0, "hipGetDeviceCount gave %d, %d", (int)r, count);
        goto done;
    }
    EXPECT(hipInit(0) == hipSuccess, "hipInit");
    EXPECT(r == hipSuccess && count >= 1, "hipGetDeviceCount gave %d, %d", (int)r, count);
    {
        // Device memory round trip; the CPU does not touch it.
        void *d = nullptr;
        EXPECT(hipMalloc(&d, 1000) == hipSuccess && d, "hipMalloc");
        std::vector<unsigned char> a(1000, 7), b(1000, 0);
        EXPECT(hipMemset(d, 0x5a, 1000) == hipSuccess, "hipMemset");
        EXPECT(hipMemcpy(b.data(), d, 1000, hipMemcpyDefault) == hipSuccess && b[999] == 0x5a, "hipMemcpy D2H");
        EXPECT(hipMemcpy(d, a.data(), 1000, hipMemcpyHostToDevice) == hipSuccess, "hipMemcpy H2D");
        EXPECT(hipMemcpy(b.data(), d, 1000, hipMemcpyDeviceToHost) == hipSuccess && b[0] == 7, "hipMemcpy D2H");
        EXPECT(hipMemcpy(b.data(), d, 1001, hipMemcpyDeviceToHost) == hipErrorInvalidValue, "copy past the end");
        auto hipMemGetAddressRange =
            reinterpret_cast<hipError_t (*)(void **, size_t *, void *)>(dlsym(lib, "hipMemGetAddressRange"));
        void *base = nullptr;
        size_t size = 0;
        EXPECT(hipMemGetAddressRange && hipMemGetAddressRange(&base, &size, static_cast<char *>(d) + 10) == hipSuccess &&
                   base == d && size == 1000,
               "hipMemGetAddressRange of an interior pointer");
        EXPECT(hipFree(d) == hipSuccess, "hipFree");
        EXPECT(hipFree(d) == hipErrorInvalidValue, "double hipFree");
        EXPECT(hipMemGetAddressRange(&base, &size, d) == hipErrorNotFound, "hipMemGetAddressRange of freed memory");
        void *z = &z;
        EXPECT(hipMalloc(&z, 0) == hipSuccess && z == nullptr, "hipMalloc(0)");
        EXPECT(hipMalloc(&z, SIZE_MAX) == hipErrorOutOfMemory, "hipMalloc(SIZE_MAX)");

        int v = -1;
        EXPECT(hipDeviceGetAttribute(&v, hipDeviceAttributeManagedMemory, 0) == hipSuccess &&
                   v == !env_on("FAKE_HIP_NO_MANAGED"),
               "managed attribute %d", v);
        EXPECT(hipDeviceGetAttribute(&v, hipDeviceAttributePageableMemoryAccess, 0) == hipSuccess &&
                   v == (!env_on("FAKE_HIP_NO_MANAGED") && !env_on("FAKE_HIP_NO_XNACK")),
               "pageable attribute %d", v);
        EXPECT(hipDeviceGetAttribute(&v, hipDeviceAttributeMemoryPoolsSupported, 0) == hipSuccess &&
                   v == !env_on("FAKE_HIP_NO_POOLS"),
               "pools attribute %d", v);
        EXPECT(hipDeviceGetAttribute(&v, (hipDeviceAttribute_t)123456, 0) == hipErrorInvalidValue, "unknown attribute");

        void *m = nullptr;
        r = hipMallocManaged(&m, 4096, hipMemAttachGlobal);
        if (env_on("FAKE_HIP_NO_MANAGED")) {
            EXPECT(r == hipErrorNotSupported, "hipMallocManaged gave %d", (int)r);
        } else {
            EXPECT(r == hipSuccess && m, "hipMallocManaged gave %d", (int)r);
            static_cast<char *>(m)[4095] = 1; // host memory
            hipPointerAttribute_t pa;
            EXPECT(hipPointerGetAttributes(&pa, static_cast<char *>(m) + 10) == hipSuccess, "pointer attributes");
            EXPECT(hipFree(m) == hipSuccess, "hipFree managed");
        }
        hipMemPool_t pool = nullptr;
        r = hipDeviceGetDefaultMemPool(&pool, 0);
        EXPECT(env_on("FAKE_HIP_NO_POOLS") ? r == hipErrorNotSupported : r == hipSuccess && pool, "default pool %d", (int)r);
        int version = 0;
        EXPECT(hipRuntimeGetVersion(&version) == hipSuccess && version > 50000000, "version %d", version);
        hipMemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        int *p6 = reinterpret_cast<int *>(&prop); // ROCm 6 layout: type, requestedHandleTypes, location{type,id}
        p6[0] = 1;
        p6[2] = 1;
        size_t gran = 0;
        r = hipMemGetAllocationGranularity(&gran, &prop, hipMemAllocationGranularityMinimum);
        EXPECT(env_on("FAKE_HIP_NO_VMM") || version < 60000000 ? r == hipErrorNotSupported : r == hipSuccess && gran,
               "granularity %d, %zu", (int)r, gran);
    }
    {
        // Device UUIDs: distinct per device, the same each time.
        SYM(hipDeviceGetUuid);
        hipUUID u0, u0b, u1;
        EXPECT(hipDeviceGetUuid(&u0, 0) == hipSuccess && hipDeviceGetUuid(&u0b, 0) == hipSuccess &&
                   memcmp(&u0, &u0b, sizeof u0) == 0,
               "hipDeviceGetUuid of device 0");
        EXPECT(hipDeviceGetUuid(&u1, count) == hipErrorInvalidDevice, "hipDeviceGetUuid of no device");
        if (count >= 2)
            EXPECT(hipDeviceGetUuid(&u1, 1) == hipSuccess && memcmp(&u0, &u1, sizeof u0) != 0, "UUIDs differ");
    }
    if (count >= 2) {
        // Placement, with the current device in the part of CUDA's current context: copies act for
        // it, fills for their stream's device, peer copies for the device named per side.
        SYM(hipSetDevice);
        SYM(hipGetDevice);
        SYM(hipStreamCreate);
        SYM(hipStreamSynchronize);
        SYM(hipStreamDestroy);
        SYM(hipMemsetAsync);
        SYM(hipMemcpyAsync);
        SYM(hipMemcpyPeer);
        SYM(hipMemcpyPeerAsync);
        SYM(hipDeviceEnablePeerAccess);
        SYM(hipDeviceDisablePeerAccess);
        // (hipStreamGetDevice is ROCm 6's; hipMallocFromPoolAsync has C++ overloads)
        auto hipStreamGetDevice =
            reinterpret_cast<hipError_t (*)(hipStream_t, hipDevice_t *)>(dlsym(lib, "hipStreamGetDevice"));
        auto hipMallocFromPoolAsync = reinterpret_cast<hipError_t (*)(void **, size_t, hipMemPool_t, hipStream_t)>(
            dlsym(lib, "hipMallocFromPoolAsync"));
        SYM(hipFreeAsync);
        SYM(hipMemPoolSetAccess);
        auto hipMemGetAddressRange =
            reinterpret_cast<hipError_t (*)(void **, size_t *, void *)>(dlsym(lib, "hipMemGetAddressRange"));
        const size_t n = 4096;
        std::vector<unsigned char> src(n, 9), dst(n, 0);
        void *d0 = nullptr, *d1 = nullptr, *base = nullptr;
        size_t size = 0;
        hipStream_t s1 = nullptr;
        int dev = -1;
        EXPECT(hipSetDevice(1) == hipSuccess && hipGetDevice(&dev) == hipSuccess && dev == 1, "hipSetDevice(1)");
        EXPECT(hipMalloc(&d1, n) == hipSuccess && hipStreamCreate(&s1) == hipSuccess, "device 1's memory and stream");
        EXPECT(hipSetDevice(0) == hipSuccess && hipMalloc(&d0, n) == hipSuccess, "device 0's memory");
        EXPECT(hipStreamGetDevice(s1, &dev) == hipSuccess && dev == 1, "hipStreamGetDevice gave %d", dev);
        EXPECT(hipStreamGetDevice(nullptr, &dev) == hipSuccess && dev == 0, "hipStreamGetDevice(NULL) gave %d", dev);
        EXPECT(hipMemcpy(d1, src.data(), n, hipMemcpyHostToDevice) == hipSuccess, "copy into device 1's memory");
        EXPECT(hipMemset(d1, 1, n) == hipErrorInvalidValue, "fill of device 1's memory from device 0");
        EXPECT(hipMemsetAsync(d1, 1, 16, s1) == hipSuccess, "fill on device 1's stream");
        EXPECT(hipMemGetAddressRange(&base, &size, d1) == hipErrorNotFound, "range of device 1's memory");
        EXPECT(hipDeviceEnablePeerAccess(1, 0) == hipSuccess && hipMemset(d1, 2, 16) == hipSuccess &&
                   hipDeviceDisablePeerAccess(1) == hipSuccess,
               "fill under peer access");
        EXPECT(hipMemcpyPeer(d0, 0, d1, 1, n) == hipSuccess, "hipMemcpyPeer");
        EXPECT(hipMemcpy(dst.data(), d0, n, hipMemcpyDeviceToHost) == hipSuccess && dst[0] == 2 && dst[16] == 9,
               "what hipMemcpyPeer copied");
        EXPECT(hipMemcpyPeer(d0, 0, d1, count, n) == hipErrorInvalidDevice, "hipMemcpyPeer from no device");
        EXPECT(hipMemcpyPeerAsync(d1, 1, d0, 0, n, s1) == hipSuccess && hipStreamSynchronize(s1) == hipSuccess,
               "hipMemcpyPeerAsync");
        hipMemPool_t pool1 = nullptr;
        void *b1 = nullptr;
        if (!env_on("FAKE_HIP_NO_POOLS") && hipDeviceGetDefaultMemPool(&pool1, 1) == hipSuccess) {
            EXPECT(hipMallocFromPoolAsync(&b1, n, pool1, s1) == hipSuccess, "device 1's pool block");
            EXPECT(hipStreamSynchronize(s1) == hipSuccess, "sync");
            EXPECT(hipMemcpy(b1, src.data(), n, hipMemcpyHostToDevice) == hipErrorInvalidValue,
                   "copy into device 1's pool block from device 0");
            EXPECT(hipMemcpyAsync(b1, src.data(), n, hipMemcpyHostToDevice, s1) == hipErrorInvalidValue,
                   "copy into device 1's pool block from device 0, on device 1's stream");
            EXPECT(hipMemcpyPeerAsync(b1, 1, d0, 0, n, s1) == hipSuccess, "peer copy into the pool block");
            hipMemAccessDesc a;
            memset(&a, 0, sizeof a);
            a.location.type = hipMemLocationTypeDevice;
            a.location.id = 1;
            a.flags = hipMemAccessFlagsProtNone;
            EXPECT(hipMemPoolSetAccess(pool1, &a, 1) == hipErrorInvalidDevice, "revoking the owner's access");
            a.location.id = 0;
            a.flags = hipMemAccessFlagsProtReadWrite;
            EXPECT(hipMemPoolSetAccess(pool1, &a, 1) == hipSuccess && hipMemset(b1, 3, n) == hipSuccess &&
                       hipMemGetAddressRange(&base, &size, b1) == hipSuccess && base == b1,
                   "device 0 granted access");
            EXPECT(hipFreeAsync(b1, s1) == hipSuccess && hipStreamSynchronize(s1) == hipSuccess, "free");
        }
        EXPECT(hipFree(d0) == hipSuccess, "free d0");
        EXPECT(hipSetDevice(1) == hipSuccess && hipFree(d1) == hipSuccess && hipStreamDestroy(s1) == hipSuccess &&
                   hipSetDevice(0) == hipSuccess,
               "free d1");
    }
done:
    printf("%s\n", g_failures ? "FAIL" : "PASS");
    return g_failures ? 1 : 0;
}
