// The fake HIP runtime by itself, through dlopen as gpumem loads it: every name of
// src/backends/hip/hip_symbols.def resolves (the host-allocation spellings as the library
// built says), and the basics behave as the FAKE_HIP_* variables say.
//
//   fake_hip_selftest LIBRARY [newnames]
//
// SPDX-License-Identifier: MIT
#include <hip/hip_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>

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

// Stream capture, graphs and user objects (fake_api_graphs.cpp's design note): the CUDA fake's
// model under HIP's names, types and error codes.
static int g_destroyed = 0;
static pthread_t g_destroyer;
static void count_destroy(void *p)
{
    g_destroyer = pthread_self();
    __atomic_add_fetch(static_cast<int *>(p), 1, __ATOMIC_SEQ_CST);
}

typedef struct hipUserObject *UserObject; // ROCm 6's hipUserObject_t
struct HipCapture {
    decltype(&::hipStreamBeginCapture) Begin;
    decltype(&::hipStreamEndCapture) End;
    decltype(&::hipStreamIsCapturing) IsCapturing;
    decltype(&::hipStreamGetCaptureInfo) Info;
    decltype(&::hipStreamGetCaptureInfo_v2) Info2;
    decltype(&::hipThreadExchangeStreamCaptureMode) Exchange;
    decltype(&::hipGraphInstantiate) Instantiate;
    decltype(&::hipGraphInstantiateWithFlags) InstantiateWithFlags;
    decltype(&::hipGraphLaunch) Launch;
    decltype(&::hipGraphExecDestroy) ExecDestroy;
    decltype(&::hipGraphDestroy) Destroy;
    decltype(&::hipGraphGetNodes) GetNodes;
    hipError_t (*UoCreate)(UserObject *, void *, hipHostFn_t, unsigned, unsigned);
    hipError_t (*UoRelease)(UserObject, unsigned);
    hipError_t (*UoRetain)(UserObject, unsigned);
    hipError_t (*GraphRetainUo)(hipGraph_t, UserObject, unsigned, unsigned);
    hipError_t (*GraphReleaseUo)(hipGraph_t, UserObject, unsigned);
    void (*Flush)(void);
    hipError_t (*Malloc)(void **, size_t);
    decltype(&::hipFree) Free;
    decltype(&::hipMemcpy) Memcpy;
    decltype(&::hipMemcpyAsync) MemcpyAsync;
    decltype(&::hipMemsetAsync) MemsetAsync;
    decltype(&::hipMemset) Memset;
    decltype(&::hipStreamCreateWithFlags) StreamCreateWithFlags;
    decltype(&::hipStreamDestroy) StreamDestroy;
    decltype(&::hipStreamSynchronize) StreamSynchronize;
    decltype(&::hipStreamQuery) StreamQuery;
    decltype(&::hipStreamWaitEvent) StreamWaitEvent;
    decltype(&::hipEventCreate) EventCreate;
    decltype(&::hipEventDestroy) EventDestroy;
    decltype(&::hipEventRecord) EventRecord;
    decltype(&::hipEventQuery) EventQuery;
    decltype(&::hipDeviceSynchronize) DeviceSynchronize;
    hipError_t (*MallocAsync)(void **, size_t, hipStream_t);
    decltype(&::hipFreeAsync) FreeAsync;
} H;

static int hip_status(hipStream_t s) // -1: refused
{
    hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
    return H.IsCapturing(s, &st) == hipSuccess ? (int)st : -1;
}

template <class F> static hipError_t hip_other_thread(F f)
{
    struct Arg {
        F *f;
        hipError_t r;
    } arg{&f, hipErrorUnknown};
    pthread_t t;
    auto body = [](void *p) -> void * {
        Arg *a = static_cast<Arg *>(p);
        a->r = (*a->f)();
        return nullptr;
    };
    if (pthread_create(&t, nullptr, body, &arg) != 0)
        return hipErrorUnknown;
    pthread_join(t, nullptr);
    return arg.r;
}

static void hip_end_invalidated(hipStream_t s, int line)
{
    hipGraph_t g = reinterpret_cast<hipGraph_t>(1);
    hipError_t r = H.End(s, &g);
    EXPECT(r == hipErrorStreamCaptureInvalidated && g == nullptr, "line %d: end of an invalidated capture gave %d", line,
           (int)r);
}
#define END_INVALIDATED(s) hip_end_invalidated((s), __LINE__)
#define HOK(expr) EXPECT((expr) == hipSuccess, "%s", #expr)
#define HIS(code, expr)                                                                                      \
    do {                                                                                                     \
        hipError_t r_ = (expr);                                                                              \
        EXPECT(r_ == (code), "%s gave %d, not %s", #expr, (int)r_, #code);                                  \
    } while (0)

static void test_hip_capture(void *lib)
{
#define HSYM(field, name) H.field = reinterpret_cast<decltype(H.field)>(dlsym(lib, name))
    HSYM(Begin, "hipStreamBeginCapture");
    HSYM(End, "hipStreamEndCapture");
    HSYM(IsCapturing, "hipStreamIsCapturing");
    HSYM(Info, "hipStreamGetCaptureInfo");
    HSYM(Info2, "hipStreamGetCaptureInfo_v2");
    HSYM(Exchange, "hipThreadExchangeStreamCaptureMode");
    HSYM(Instantiate, "hipGraphInstantiate");
    HSYM(InstantiateWithFlags, "hipGraphInstantiateWithFlags");
    HSYM(Launch, "hipGraphLaunch");
    HSYM(ExecDestroy, "hipGraphExecDestroy");
    HSYM(Destroy, "hipGraphDestroy");
    HSYM(GetNodes, "hipGraphGetNodes");
    HSYM(UoCreate, "hipUserObjectCreate");
    HSYM(UoRelease, "hipUserObjectRelease");
    HSYM(UoRetain, "hipUserObjectRetain");
    HSYM(GraphRetainUo, "hipGraphRetainUserObject");
    HSYM(GraphReleaseUo, "hipGraphReleaseUserObject");
    HSYM(Flush, "fakehip_flush_callbacks");
    HSYM(Malloc, "hipMalloc");
    HSYM(Free, "hipFree");
    HSYM(Memcpy, "hipMemcpy");
    HSYM(MemcpyAsync, "hipMemcpyAsync");
    HSYM(MemsetAsync, "hipMemsetAsync");
    HSYM(Memset, "hipMemset");
    HSYM(StreamCreateWithFlags, "hipStreamCreateWithFlags");
    HSYM(StreamDestroy, "hipStreamDestroy");
    HSYM(StreamSynchronize, "hipStreamSynchronize");
    HSYM(StreamQuery, "hipStreamQuery");
    HSYM(StreamWaitEvent, "hipStreamWaitEvent");
    HSYM(EventCreate, "hipEventCreate");
    HSYM(EventDestroy, "hipEventDestroy");
    HSYM(EventRecord, "hipEventRecord");
    HSYM(EventQuery, "hipEventQuery");
    HSYM(DeviceSynchronize, "hipDeviceSynchronize");
    HSYM(MallocAsync, "hipMallocAsync");
    HSYM(FreeAsync, "hipFreeAsync");
#undef HSYM
    const void *const *all = reinterpret_cast<const void *const *>(&H);
    for (size_t i = 0; i < sizeof H / sizeof(void *); ++i)
        EXPECT(all[i] != nullptr, "capture entry point %zu not exported", i);
    for (size_t i = 0; i < sizeof H / sizeof(void *); ++i)
        if (all[i] == nullptr)
            return;
    const bool pools = !env_on("FAKE_HIP_NO_POOLS");
    const bool defer = env_on("FAKE_HIP_DEFER");

    hipStream_t s = nullptr, s2 = nullptr, b = nullptr;
    HOK(H.StreamCreateWithFlags(&s, hipStreamNonBlocking));
    HOK(H.StreamCreateWithFlags(&s2, hipStreamNonBlocking));
    HOK(H.StreamCreateWithFlags(&b, hipStreamDefault));
    hipGraph_t g = nullptr;
    hipGraphExec_t e = nullptr;
    const size_t k = 4096;
    void *d = nullptr, *d2 = nullptr;
    HOK(H.Malloc(&d, k));
    HOK(H.Malloc(&d2, k));
    HOK(H.Memset(d, 0, k));
    std::vector<unsigned char> host(k, 0x42), back(k, 0);

    // Begin and end; status and ids.
    HIS(hipErrorStreamCaptureUnsupported, H.Begin(nullptr, hipStreamCaptureModeGlobal));
    HIS(hipErrorIllegalState, H.End(s, &g));
    HIS(hipErrorIllegalState, H.End(nullptr, &g));
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HIS(hipErrorIllegalState, H.Begin(s, hipStreamCaptureModeGlobal));
    hipStreamCaptureStatus cs = hipStreamCaptureStatusNone;
    unsigned long long id1 = 0, id2 = 0;
    hipGraph_t cg = nullptr;
    const hipGraphNode_t *deps = nullptr;
    size_t ndeps = 9;
    HOK(H.Info2(s, &cs, &id1, &cg, &deps, &ndeps));
    EXPECT(cs == hipStreamCaptureStatusActive && id1 && cg && ndeps == 0, "capture info %d %llu %zu", (int)cs, id1, ndeps);
    // Captured work runs at each launch, not before.
    HOK(H.MemcpyAsync(d, host.data(), k, hipMemcpyHostToDevice, s));
    HOK(H.MemsetAsync(static_cast<char *>(d) + 16, 0x17, 16, s));
    size_t expect_nodes = 2;
    void *p = nullptr;
    if (pools) {
        HOK(H.MallocAsync(&p, k, s));
        HOK(H.MemsetAsync(p, 0x33, k, s));
        HOK(H.MemcpyAsync(d2, p, k, hipMemcpyDeviceToDevice, s));
        HOK(H.FreeAsync(p, s));
        expect_nodes += 4;
    }
    HOK(H.End(s, &g));
    EXPECT(g == cg, "the graph ended is the one captured");
    size_t n = 0;
    HOK(H.GetNodes(g, nullptr, &n));
    EXPECT(n == expect_nodes, "%zu nodes, not %zu", n, expect_nodes);
    HOK(H.Memcpy(back.data(), d, k, hipMemcpyDeviceToHost));
    EXPECT(back[0] == 0, "captured work ran before a launch");
    hipGraphNode_t err = nullptr;
    char log[64];
    HOK(H.Instantiate(&e, g, &err, log, sizeof log));
    HOK(H.Launch(e, s));
    HOK(H.Launch(e, s));
    HOK(H.StreamSynchronize(s));
    HOK(H.Memcpy(back.data(), d, k, hipMemcpyDeviceToHost));
    EXPECT(back[0] == 0x42 && back[16] == 0x17 && back[32] == 0x42, "what the launch did");
    HOK(H.ExecDestroy(e));
    HOK(H.Destroy(g));
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HOK(H.Info(s, &cs, &id2));
    EXPECT(id2 != id1, "capture ids differ");
    HOK(H.End(s, &g));
    HOK(H.Destroy(g));
    if (pools) {
        // An allocation the graph does not free: the next launch first needs it freed.
        HOK(H.Begin(s, hipStreamCaptureModeGlobal));
        HOK(H.MallocAsync(&p, k, s));
        HOK(H.End(s, &g));
        HOK(H.InstantiateWithFlags(&e, g, 0));
        HOK(H.Launch(e, s));
        HIS(hipErrorInvalidValue, H.Launch(e, s));
        HOK(H.FreeAsync(p, s));
        HOK(H.Launch(e, s));
        HOK(H.Free(p));
        HOK(H.ExecDestroy(e));
        HOK(H.Destroy(g));
        // A free in a capture is of a graph allocation only.
        void *before = nullptr;
        HOK(H.MallocAsync(&before, k, s));
        HOK(H.Begin(s, hipStreamCaptureModeGlobal));
        HIS(hipErrorInvalidValue, H.FreeAsync(before, s));
        EXPECT(hip_status(s) == hipStreamCaptureStatusActive, "a refused free leaves the capture going");
        HOK(H.End(s, &g));
        HOK(H.Destroy(g));
        // Outside the capture (the null stream, which a non-blocking capture leaves alone), a free
        // is potentially unsafe: refused during a GLOBAL capture, allowed in RELAXED mode.
        HOK(H.Begin(s, hipStreamCaptureModeGlobal));
        HIS(hipErrorStreamCaptureUnsupported, H.FreeAsync(before, nullptr));
        END_INVALIDATED(s);
        HOK(H.Begin(s, hipStreamCaptureModeGlobal));
        hipStreamCaptureMode rm = hipStreamCaptureModeRelaxed;
        HOK(H.Exchange(&rm));
        HOK(H.FreeAsync(before, nullptr));
        HOK(H.Exchange(&rm));
        EXPECT(hip_status(s) == hipStreamCaptureStatusActive, "a RELAXED thread's free leaves the capture going");
        HOK(H.End(s, &g));
        HOK(H.Destroy(g));
        HOK(H.StreamSynchronize(nullptr));
    }

    // Refused on a capturing stream, invalidating it.
    HOK(H.Begin(s, hipStreamCaptureModeRelaxed));
    HIS(hipErrorStreamCaptureUnsupported, H.StreamSynchronize(s));
    EXPECT(hip_status(s) == hipStreamCaptureStatusInvalidated, "sync invalidates");
    HIS(hipErrorStreamCaptureInvalidated, H.MemsetAsync(d, 1, 16, s));
    END_INVALIDATED(s);
    HOK(H.Begin(s, hipStreamCaptureModeRelaxed));
    HIS(hipErrorStreamCaptureUnsupported, H.StreamQuery(s));
    END_INVALIDATED(s);
    hipEvent_t ev = nullptr, ev_out = nullptr;
    HOK(H.EventCreate(&ev));
    HOK(H.EventCreate(&ev_out));
    HOK(H.EventRecord(ev_out, s2));
    HOK(H.Begin(s, hipStreamCaptureModeRelaxed));
    HOK(H.EventRecord(ev, s));
    HIS(hipErrorCapturedEvent, H.EventQuery(ev));
    END_INVALIDATED(s);
    HIS(hipErrorInvalidValue, H.EventQuery(ev)); // last recorded in a capture that ended
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HIS(hipErrorStreamCaptureIsolation, H.StreamWaitEvent(s, ev_out, 0));
    END_INVALIDATED(s);
    // A fork joined back, and one that was not.
    for (int joined = 0; joined < 2; ++joined) {
        HOK(H.Begin(s, hipStreamCaptureModeGlobal));
        HOK(H.EventRecord(ev, s));
        HOK(H.StreamWaitEvent(s2, ev, 0));
        EXPECT(hip_status(s2) == hipStreamCaptureStatusActive, "the stream joined");
        HOK(H.MemsetAsync(d2, 2, 16, s2));
        if (joined) {
            HOK(H.EventRecord(ev, s2));
            HOK(H.StreamWaitEvent(s, ev, 0));
            HOK(H.End(s, &g));
            HOK(H.Destroy(g));
        } else {
            HIS(hipErrorStreamCaptureUnjoined, H.End(s, &g));
        }
    }
    // An end on the stream that joined: UNMATCHED, and the capture is invalidated.
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HOK(H.EventRecord(ev, s));
    HOK(H.StreamWaitEvent(s2, ev, 0));
    HIS(hipErrorStreamCaptureUnmatched, H.End(s2, &g));
    EXPECT(hip_status(s) == hipStreamCaptureStatusInvalidated, "an end on a joined stream invalidates");
    END_INVALIDATED(s);
    HOK(H.EventRecord(ev, s));

    // Potentially unsafe calls by mode.
    void *x = nullptr;
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HIS(hipErrorStreamCaptureUnsupported, H.Malloc(&x, 64));
    END_INVALIDATED(s);
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    hipStreamCaptureMode mode = hipStreamCaptureModeRelaxed;
    HOK(H.Exchange(&mode));
    EXPECT(mode == hipStreamCaptureModeGlobal, "a thread starts GLOBAL");
    HOK(H.Malloc(&x, 64));
    HOK(H.Free(x));
    HOK(H.Exchange(&mode));
    HIS(hipErrorStreamCaptureUnsupported, hip_other_thread([] {
            void *y = nullptr;
            return H.Malloc(&y, 64);
        }));
    END_INVALIDATED(s);
    HOK(H.Begin(s, hipStreamCaptureModeThreadLocal));
    HOK(hip_other_thread([] {
        void *y = nullptr;
        hipError_t r = H.Malloc(&y, 64);
        return r != hipSuccess ? r : H.Free(y);
    }));
    EXPECT(hip_status(s) == hipStreamCaptureStatusActive, "another thread's call leaves a THREAD_LOCAL capture");
    HIS(hipErrorStreamCaptureWrongThread, hip_other_thread([&] {
            hipGraph_t og = nullptr;
            return H.End(s, &og);
        }));
    EXPECT(hip_status(s) == hipStreamCaptureStatusNone, "an end from the wrong thread ends the capture");
    HOK(H.Begin(s, hipStreamCaptureModeThreadLocal));
    HIS(hipErrorStreamCaptureUnsupported, H.DeviceSynchronize());
    END_INVALIDATED(s);
    // Synchronous copies and fills on the null stream are not unsafe while a non-blocking stream
    // captures; asking about a capture from another thread is no unsafe call either.
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HOK(H.Memcpy(back.data(), d, 16, hipMemcpyDeviceToHost));
    HOK(H.Memset(d, 0, 16));
    HOK(hip_other_thread([&] {
        hipStreamCaptureStatus os = hipStreamCaptureStatusNone;
        unsigned long long oid = 0;
        hipError_t r = H.Info(s, &os, &oid);
        return r != hipSuccess ? r : os == hipStreamCaptureStatusActive ? hipSuccess : hipErrorUnknown;
    }));
    EXPECT(hip_status(s) == hipStreamCaptureStatusActive, "the capture goes on");
    HOK(H.End(s, &g));
    HOK(H.Destroy(g));
    // The legacy (null) stream while a blocking stream captures.
    HOK(H.Begin(b, hipStreamCaptureModeRelaxed));
    HIS(hipErrorStreamCaptureImplicit, H.IsCapturing(nullptr, &cs));
    HIS(hipErrorStreamCaptureImplicit, H.MemsetAsync(d, 1, 16, nullptr));
    END_INVALIDATED(b);
    HOK(H.Begin(b, hipStreamCaptureModeRelaxed));
    HIS(hipErrorStreamCaptureImplicit, H.Memcpy(back.data(), d, 16, hipMemcpyDeviceToHost));
    END_INVALIDATED(b);

    // User objects.
    UserObject uo = nullptr;
    HIS(hipErrorInvalidValue, H.UoCreate(&uo, &g_destroyed, count_destroy, 1, 0));
    HOK(H.UoCreate(&uo, &g_destroyed, count_destroy, 1, 1 /* hipUserObjectNoDestructorSync */));
    HOK(H.UoRetain(uo, 1));
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HOK(H.MemsetAsync(d, 3, 16, s));
    HOK(H.End(s, &g));
    HOK(H.GraphRetainUo(g, uo, 2, 1 /* hipGraphUserObjectMove */));
    HIS(hipErrorInvalidValue, H.GraphReleaseUo(g, uo, 3));
    HOK(H.InstantiateWithFlags(&e, g, 0));
    HOK(H.Destroy(g));
    H.Flush();
    EXPECT(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 0, "the executable graph holds it");
    HOK(H.Launch(e, s));
    HOK(H.ExecDestroy(e));
    if (defer) {
        H.Flush();
        EXPECT(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 0, "a pending launch holds it");
        HOK(H.StreamSynchronize(s));
        H.Flush();
        EXPECT(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 1 && !pthread_equal(g_destroyer, pthread_self()),
               "the completed launch let go: the destructor ran on the runtime's thread");
    } else {
        EXPECT(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 1 && pthread_equal(g_destroyer, pthread_self()),
               "the executable graph's destruction let go: the destructor ran within it, on this thread");
    }
    // An invalidated capture's graph goes, with its references.
    HOK(H.Begin(s, hipStreamCaptureModeGlobal));
    HOK(H.Info2(s, &cs, nullptr, &cg, nullptr, nullptr));
    HOK(H.UoCreate(&uo, &g_destroyed, count_destroy, 1, 1));
    HOK(H.GraphRetainUo(cg, uo, 1, 1));
    HIS(hipErrorStreamCaptureUnsupported, H.Malloc(&x, 64));
    END_INVALIDATED(s);
    EXPECT(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 2, "an invalidated capture releases its graph's objects");

    HOK(H.EventDestroy(ev));
    HOK(H.EventDestroy(ev_out));
    HOK(H.StreamDestroy(s));
    HOK(H.StreamDestroy(s2));
    HOK(H.StreamDestroy(b));
    HOK(H.Free(d));
    HOK(H.Free(d2));
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
    test_hip_capture(lib);
done:
    printf("%s\n", g_failures ? "FAIL" : "PASS");
    return g_failures ? 1 : 0;
}
