/* Stream capture and graphs of the runtime gpumem is using, for tests (header-only C11).
 *
 * gpumem's tests check that gpumem behaves under a capture an application began; this header
 * drives the capture itself, on the runtime gpumem loaded: the CUDA driver for
 * GPUMEM_BACKEND=cuda ($GPUMEM_CUDA_LIBRARY, else libcuda.so.1), the HIP runtime for
 * GPUMEM_BACKEND=hip ($GPUMEM_HIP_LIBRARY, else the libamdhip64 already loaded, else
 * libamdhip64.so).  dlopen() of a loaded library gives the same handle, so the capture and
 * gpumem's calls meet in one runtime: the fakes of tests/fakes on CI, a real driver on a GPU.
 * CUDA entry points are resolved with cuGetProcAddress at 12000, as gpumem's backend does.
 *
 *     if (!gd_open(GPUMEM_BACKEND_CUDA)) return 77;       // no capture API: skip
 *     void *s; gd_stream_create_nonblocking(&s);          // or gpumem_stream_wrap an app stream
 *     gd_begin(s, GD_MODE_GLOBAL);
 *     ... gpumem calls on s ...
 *     void *graph; int r = gd_end(s, &graph);             // 0 = success, else the runtime's code
 *     void *exec; gd_instantiate(&exec, graph); gd_launch(exec, s); gd_stream_synchronize(s);
 *     gd_exec_destroy(exec); gd_graph_destroy(graph);
 *     gd_flush_callbacks();                               // user-object destructors due have run
 *     gd_close();
 *
 * Every function returning int returns the runtime's raw result (0 = success; CUDA's and HIP's
 * capture errors have the same numbers: GD_ERR_*), or GD_ERR_NOT_OPEN before gd_open.  Modes and
 * statuses have the same numbers in both runtimes (GD_MODE_*, GD_STATUS_*).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_TEST_GRAPH_DRIVER_H
#define GPUMEM_TEST_GRAPH_DRIVER_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>

/* The backends, as gpumem numbers them (GPUMEM_BACKEND_CUDA, GPUMEM_BACKEND_HIP). */
#define GD_BACKEND_CUDA 2
#define GD_BACKEND_HIP 3

enum { GD_MODE_GLOBAL = 0, GD_MODE_THREAD_LOCAL = 1, GD_MODE_RELAXED = 2 };
enum { GD_STATUS_NONE = 0, GD_STATUS_ACTIVE = 1, GD_STATUS_INVALIDATED = 2 };
/* Results worth naming (the same in CUDA and HIP). */
enum {
    GD_OK = 0,
    GD_ERR_INVALID_VALUE = 1,
    GD_ERR_ILLEGAL_STATE = 401,
    GD_ERR_CAPTURE_UNSUPPORTED = 900,
    GD_ERR_CAPTURE_INVALIDATED = 901,
    GD_ERR_CAPTURE_MERGE = 902,
    GD_ERR_CAPTURE_UNMATCHED = 903,
    GD_ERR_CAPTURE_UNJOINED = 904,
    GD_ERR_CAPTURE_ISOLATION = 905,
    GD_ERR_CAPTURE_IMPLICIT = 906,
    GD_ERR_CAPTURED_EVENT = 907,
    GD_ERR_CAPTURE_WRONG_THREAD = 908,
    GD_ERR_NOT_OPEN = -1000 /* gd_open was not called, or failed */
};

struct gd_state_ {
    int backend; /* 0 until gd_open succeeds */
    void *lib;
    int (*begin)(void *stream, int mode);
    int (*end)(void *stream, void **graph);
    int (*is_capturing)(void *stream, int *status);
    int (*exchange)(int *mode);
    int (*instantiate)(void **exec, void *graph, unsigned long long flags);
    int (*launch)(void *exec, void *stream);
    int (*exec_destroy)(void *exec);
    int (*graph_destroy)(void *graph);
    int (*get_nodes)(void *graph, void **nodes, size_t *count);
    int (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream);
    /* CUDA: streams are made in a device's primary context, retained until gd_close */
    int (*cu_stream_create)(void **stream, unsigned flags);
    int (*cu_primary_retain)(void **ctx, int device);
    int (*cu_primary_release)(int device);
    int (*cu_ctx_get)(void **ctx);
    int (*cu_ctx_set)(void *ctx);
    int retained[64];
    /* HIP: streams are made on a device made current for the call */
    int (*hip_stream_create)(void **stream, unsigned flags);
    int (*hip_get_device)(int *device);
    int (*hip_set_device)(int device);
    void (*flush)(void); /* the fakes' fakecuda_flush_callbacks / fakehip_flush_callbacks */
};

static inline struct gd_state_ *gd_state_(void)
{
    static struct gd_state_ s;
    return &s;
}

/* dlsym into a function pointer without a cast ISO C forbids. */
static inline int gd_sym_(void *lib, const char *name, void *fn_out, size_t size)
{
    void *p = dlsym(lib, name);
    memcpy(fn_out, &p, size);
    return p != NULL;
}

typedef int (*gd_get_proc_v2_)(const char *, void **, int, unsigned long long, int *);
typedef int (*gd_get_proc_v1_)(const char *, void **, int, unsigned long long);

/* cuGetProcAddress at 12000, legacy default-stream semantics, as gpumem's backend resolves. */
static inline int gd_cu_proc_(void *lib, const char *name, void *fn_out, size_t size)
{
    gd_get_proc_v2_ v2 = NULL;
    gd_get_proc_v1_ v1 = NULL;
    void *p = NULL;
    int status = 1;
    if (gd_sym_(lib, "cuGetProcAddress_v2", &v2, sizeof v2)) {
        if (v2(name, &p, 12000, 1 /* CU_GET_PROC_ADDRESS_LEGACY_STREAM */, &status) != 0 || status != 0)
            p = NULL;
    } else if (gd_sym_(lib, "cuGetProcAddress", &v1, sizeof v1)) {
        if (v1(name, &p, 12000, 1) != 0)
            p = NULL;
    }
    memcpy(fn_out, &p, size);
    return p != NULL;
}

static inline void gd_close(void);

/**
 * Opens the capture API of the runtime gpumem uses for `backend` (GD_BACKEND_CUDA or
 * GD_BACKEND_HIP, gpumem's GPUMEM_BACKEND_* numbers).
 * @return 1; 0 when that backend has no capture API here (another backend, a runtime that
 *         cannot be loaded or lacks the entry points): the test then skips.
 */
static inline int gd_open(int backend)
{
    struct gd_state_ *s = gd_state_();
    if (s->backend != 0)
        gd_close();
    memset(s, 0, sizeof *s);
    const char *env = getenv(backend == GD_BACKEND_CUDA ? "GPUMEM_CUDA_LIBRARY" : "GPUMEM_HIP_LIBRARY");
    void *lib = NULL;
    if (backend == GD_BACKEND_CUDA) {
        lib = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL && !(env && *env))
            lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    } else if (backend == GD_BACKEND_HIP) {
        static const char *const names[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so"};
        if (env && *env) {
            lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        } else {
            for (size_t i = 0; lib == NULL && i < sizeof names / sizeof names[0]; ++i)
                lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD); /* the one gpumem loaded */
            if (lib == NULL)
                lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
        }
    } else {
        return 0;
    }
    if (lib == NULL)
        return 0;
    int ok = 1;
    if (backend == GD_BACKEND_CUDA) {
#define GD_CU_(field, name) ok = gd_cu_proc_(lib, name, &s->field, sizeof s->field) && ok
        GD_CU_(begin, "cuStreamBeginCapture"); /* (stream, mode) from 10.1 */
        GD_CU_(end, "cuStreamEndCapture");
        GD_CU_(is_capturing, "cuStreamIsCapturing");
        GD_CU_(exchange, "cuThreadExchangeStreamCaptureMode");
        GD_CU_(instantiate, "cuGraphInstantiateWithFlags"); /* (an 11.x driver's cuGraphInstantiate has 5 arguments) */
        GD_CU_(launch, "cuGraphLaunch");
        GD_CU_(exec_destroy, "cuGraphExecDestroy");
        GD_CU_(graph_destroy, "cuGraphDestroy");
        GD_CU_(get_nodes, "cuGraphGetNodes");
        GD_CU_(stream_destroy, "cuStreamDestroy");
        GD_CU_(stream_synchronize, "cuStreamSynchronize");
        GD_CU_(cu_stream_create, "cuStreamCreate");
        GD_CU_(cu_primary_retain, "cuDevicePrimaryCtxRetain");
        GD_CU_(cu_primary_release, "cuDevicePrimaryCtxRelease");
        GD_CU_(cu_ctx_get, "cuCtxGetCurrent");
        GD_CU_(cu_ctx_set, "cuCtxSetCurrent");
#undef GD_CU_
        gd_sym_(lib, "fakecuda_flush_callbacks", &s->flush, sizeof s->flush);
    } else {
#define GD_HIP_(field, name) ok = gd_sym_(lib, name, &s->field, sizeof s->field) && ok
        GD_HIP_(begin, "hipStreamBeginCapture");
        GD_HIP_(end, "hipStreamEndCapture");
        GD_HIP_(is_capturing, "hipStreamIsCapturing");
        GD_HIP_(exchange, "hipThreadExchangeStreamCaptureMode");
        GD_HIP_(instantiate, "hipGraphInstantiateWithFlags");
        GD_HIP_(launch, "hipGraphLaunch");
        GD_HIP_(exec_destroy, "hipGraphExecDestroy");
        GD_HIP_(graph_destroy, "hipGraphDestroy");
        GD_HIP_(get_nodes, "hipGraphGetNodes");
        GD_HIP_(stream_destroy, "hipStreamDestroy");
        GD_HIP_(stream_synchronize, "hipStreamSynchronize");
        GD_HIP_(hip_stream_create, "hipStreamCreateWithFlags");
        GD_HIP_(hip_get_device, "hipGetDevice");
        GD_HIP_(hip_set_device, "hipSetDevice");
#undef GD_HIP_
        gd_sym_(lib, "fakehip_flush_callbacks", &s->flush, sizeof s->flush);
    }
    if (!ok) {
        dlclose(lib);
        memset(s, 0, sizeof *s);
        return 0;
    }
    s->lib = lib;
    s->backend = backend;
    return 1;
}

/** Releases what gd_open and the stream functions hold (the primary contexts they retained). */
static inline void gd_close(void)
{
    struct gd_state_ *s = gd_state_();
    if (s->backend == 0)
        return;
    for (int dev = 0; dev < 64; ++dev)
        for (; s->retained[dev] > 0; --s->retained[dev])
            s->cu_primary_release(dev);
    dlclose(s->lib);
    memset(s, 0, sizeof *s);
}

/** Begins a capture on a runtime stream (CUstream, hipStream_t) in a GD_MODE_*. */
static inline int gd_begin(void *native_stream, int mode)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->begin(native_stream, mode) : GD_ERR_NOT_OPEN;
}

/** Ends the capture on `stream`; *graph is the graph (NULL when the result is not 0). */
static inline int gd_end(void *stream, void **graph)
{
    struct gd_state_ *s = gd_state_();
    *graph = NULL;
    return s->backend ? s->end(stream, graph) : GD_ERR_NOT_OPEN;
}

/** The capture status of `stream`: GD_STATUS_*, or -1 when the runtime refuses to say. */
static inline int gd_status(void *stream)
{
    struct gd_state_ *s = gd_state_();
    int status = -1;
    if (!s->backend || s->is_capturing(stream, &status) != 0)
        return -1;
    return status;
}

/** The raw result of asking `stream`'s capture status (the legacy stream can be refused). */
static inline int gd_status_result(void *stream, int *status)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->is_capturing(stream, status) : GD_ERR_NOT_OPEN;
}

/** Swaps the calling thread's capture interaction mode with *mode (GD_MODE_*). */
static inline int gd_exchange_mode(int *mode)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->exchange(mode) : GD_ERR_NOT_OPEN;
}

/** Instantiates `graph` (flags 0; gd_instantiate_flags for others, e.g. 1 = auto-free on launch). */
static inline int gd_instantiate_flags(void **exec, void *graph, unsigned long long flags)
{
    struct gd_state_ *s = gd_state_();
    *exec = NULL;
    return s->backend ? s->instantiate(exec, graph, flags) : GD_ERR_NOT_OPEN;
}
static inline int gd_instantiate(void **exec, void *graph) { return gd_instantiate_flags(exec, graph, 0); }

static inline int gd_launch(void *exec, void *stream)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->launch(exec, stream) : GD_ERR_NOT_OPEN;
}

static inline int gd_exec_destroy(void *exec)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->exec_destroy(exec) : GD_ERR_NOT_OPEN;
}

static inline int gd_graph_destroy(void *graph)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->graph_destroy(graph) : GD_ERR_NOT_OPEN;
}

/** The number of nodes of `graph`, or -1. */
static inline long gd_node_count(void *graph)
{
    struct gd_state_ *s = gd_state_();
    size_t n = 0;
    if (!s->backend || s->get_nodes(graph, NULL, &n) != 0)
        return -1;
    return (long)n;
}

static inline int gd_stream_synchronize(void *stream)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->stream_synchronize(stream) : GD_ERR_NOT_OPEN;
}

/** A runtime stream of `device` (blocking: ordered with the legacy stream; non-blocking: not). */
static inline int gd_stream_create_on(void **stream, int device, int nonblocking)
{
    struct gd_state_ *s = gd_state_();
    *stream = NULL;
    if (!s->backend)
        return GD_ERR_NOT_OPEN;
    const unsigned flags = nonblocking ? 1u : 0u; /* CU_STREAM_NON_BLOCKING, hipStreamNonBlocking */
    int r = 0;
    if (s->backend == GD_BACKEND_CUDA) {
        if (device < 0 || device >= 64)
            return GD_ERR_INVALID_VALUE;
        void *ctx = NULL, *saved = NULL;
        if ((r = s->cu_primary_retain(&ctx, device)) != 0)
            return r;
        ++s->retained[device];
        s->cu_ctx_get(&saved);
        s->cu_ctx_set(ctx);
        r = s->cu_stream_create(stream, flags);
        s->cu_ctx_set(saved);
    } else {
        int saved = 0;
        s->hip_get_device(&saved);
        if ((r = s->hip_set_device(device)) != 0)
            return r;
        r = s->hip_stream_create(stream, flags);
        s->hip_set_device(saved);
    }
    return r;
}
static inline int gd_stream_create_blocking(void **stream) { return gd_stream_create_on(stream, 0, 0); }
static inline int gd_stream_create_nonblocking(void **stream) { return gd_stream_create_on(stream, 0, 1); }

static inline int gd_stream_destroy(void *stream)
{
    struct gd_state_ *s = gd_state_();
    return s->backend ? s->stream_destroy(stream) : GD_ERR_NOT_OPEN;
}

static inline void gd_sleep_ms_(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    thrd_sleep(&ts, NULL);
}

/**
 * Lets the user-object destructors that are due run: with the fakes, waits until every one
 * scheduled so far has run (fakecuda_flush_callbacks / fakehip_flush_callbacks); with a real
 * runtime, which runs them on an internal thread when it will, waits a little (50 ms): poll
 * with gd_wait_flag for a result that does not depend on timing.
 * @return 1 when the runtime flushed exactly (a fake), 0 when it only waited.
 */
static inline int gd_flush_callbacks(void)
{
    struct gd_state_ *s = gd_state_();
    if (s->flush != NULL) {
        s->flush();
        return 1;
    }
    gd_sleep_ms_(50);
    return 0;
}

/** Waits until *flag == want (a destructor sets it), up to timeout_ms: 1 if it came, else 0. */
static inline int gd_wait_flag(const atomic_int *flag, int want, int timeout_ms)
{
    struct gd_state_ *s = gd_state_();
    if (s->flush != NULL)
        s->flush();
    for (int waited = 0; atomic_load(flag) != want; waited += 1) {
        if (waited >= timeout_ms)
            return 0;
        gd_sleep_ms_(1);
    }
    return 1;
}

#endif /* GPUMEM_TEST_GRAPH_DRIVER_H */
