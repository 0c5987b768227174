/* tests/graph_driver.h by itself, on a fake runtime (no gpumem): it opens the runtime named by
 * GPUMEM_CUDA_LIBRARY / GPUMEM_HIP_LIBRARY, captures, instantiates, launches, and flushes
 * user-object destructors.
 *
 *     test_graph_driver cuda|hip
 *
 * SPDX-License-Identifier: MIT
 */
#include "../graph_driver.h"

#include <stdio.h>

static int failures = 0;
#define EXPECT(cond)                                                                                         \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                                 \
            ++failures;                                                                                      \
        }                                                                                                    \
    } while (0)

static atomic_int destroyed;
static void on_destroy(void *arg)
{
    (void)arg;
    atomic_store(&destroyed, 1);
}

int main(int argc, char **argv)
{
    const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    const char *path = getenv(cuda ? "GPUMEM_CUDA_LIBRARY" : "GPUMEM_HIP_LIBRARY");
    if (argc != 2 || path == NULL) {
        fprintf(stderr, "usage: GPUMEM_CUDA_LIBRARY=... %s cuda | GPUMEM_HIP_LIBRARY=... %s hip\n", argv[0], argv[0]);
        return 2;
    }
    EXPECT(gd_open(1) == 0); /* the host backend has no capture API */
    EXPECT(gd_begin(NULL, GD_MODE_GLOBAL) == GD_ERR_NOT_OPEN);
    /* What gpumem would have done: start the runtime (and, for CUDA, make a context current). */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return 1;
    int (*memset_async)(void *dst, int value, size_t n, void *stream) = NULL; /* hipMemsetAsync's shape */
    int (*cu_memset_async)(unsigned long long dst, unsigned char value, size_t n, void *stream) = NULL;
    int (*cu_malloc)(unsigned long long *p, size_t n) = NULL;
    int (*hip_malloc)(void **p, size_t n) = NULL;
    int (*uo_create)(void **obj, void *ptr, void (*fn)(void *), unsigned refs, unsigned flags) = NULL;
    int (*uo_release)(void *obj, unsigned count) = NULL;
    if (cuda) {
        int (*init)(unsigned) = NULL;
        int (*retain)(void **, int) = NULL;
        int (*set)(void *) = NULL;
        void *ctx = NULL;
        if (!gd_sym_(lib, "cuInit", &init, sizeof init) || init(0) != 0 ||
            !gd_cu_proc_(lib, "cuDevicePrimaryCtxRetain", &retain, sizeof retain) ||
            !gd_cu_proc_(lib, "cuCtxSetCurrent", &set, sizeof set) || retain(&ctx, 0) != 0 || set(ctx) != 0)
            return 1;
        gd_cu_proc_(lib, "cuMemsetD8Async", &cu_memset_async, sizeof cu_memset_async);
        gd_cu_proc_(lib, "cuMemAlloc", &cu_malloc, sizeof cu_malloc);
        gd_cu_proc_(lib, "cuUserObjectCreate", &uo_create, sizeof uo_create);
        gd_cu_proc_(lib, "cuUserObjectRelease", &uo_release, sizeof uo_release);
    } else {
        int (*init)(unsigned) = NULL;
        if (!gd_sym_(lib, "hipInit", &init, sizeof init) || init(0) != 0)
            return 1;
        gd_sym_(lib, "hipMemsetAsync", &memset_async, sizeof memset_async);
        gd_sym_(lib, "hipMalloc", &hip_malloc, sizeof hip_malloc);
        gd_sym_(lib, "hipUserObjectCreate", &uo_create, sizeof uo_create);
        gd_sym_(lib, "hipUserObjectRelease", &uo_release, sizeof uo_release);
    }
    EXPECT((cu_memset_async || memset_async) && (cu_malloc || hip_malloc) && uo_create && uo_release);

    EXPECT(gd_open(cuda ? GD_BACKEND_CUDA : GD_BACKEND_HIP) == 1);
    void *s = NULL, *b = NULL, *graph = NULL, *exec = NULL;
    EXPECT(gd_stream_create_nonblocking(&s) == 0 && s != NULL);
    EXPECT(gd_stream_create_blocking(&b) == 0 && b != NULL);
    EXPECT(gd_status(s) == GD_STATUS_NONE);
    unsigned long long d = 0;
    void *hd = NULL;
    EXPECT(cuda ? cu_malloc(&d, 4096) == 0 : hip_malloc(&hd, 4096) == 0);

    /* A capture with one fill: one node; launched twice. */
    EXPECT(gd_begin(s, GD_MODE_GLOBAL) == 0);
    EXPECT(gd_status(s) == GD_STATUS_ACTIVE);
    EXPECT(gd_begin(s, GD_MODE_GLOBAL) == GD_ERR_ILLEGAL_STATE);
    EXPECT((cuda ? cu_memset_async(d, 7, 4096, s) : memset_async(hd, 7, 4096, s)) == 0);
    EXPECT(gd_end(s, &graph) == 0 && graph != NULL);
    EXPECT(gd_node_count(graph) == 1);
    EXPECT(gd_instantiate(&exec, graph) == 0 && exec != NULL);
    EXPECT(gd_launch(exec, s) == 0 && gd_launch(exec, s) == 0);
    EXPECT(gd_stream_synchronize(s) == 0);
    EXPECT(gd_exec_destroy(exec) == 0 && gd_graph_destroy(graph) == 0);

    /* The thread's mode; an invalidated capture; the legacy stream while a blocking one captures. */
    int mode = GD_MODE_RELAXED;
    EXPECT(gd_exchange_mode(&mode) == 0 && mode == GD_MODE_GLOBAL);
    EXPECT(gd_exchange_mode(&mode) == 0 && mode == GD_MODE_RELAXED);
    EXPECT(gd_begin(s, GD_MODE_GLOBAL) == 0);
    EXPECT(gd_stream_synchronize(s) == GD_ERR_CAPTURE_UNSUPPORTED);
    EXPECT(gd_status(s) == GD_STATUS_INVALIDATED);
    EXPECT(gd_end(s, &graph) == GD_ERR_CAPTURE_INVALIDATED && graph == NULL);
    EXPECT(gd_begin(b, GD_MODE_RELAXED) == 0);
    int status = -1;
    EXPECT(gd_status_result(NULL, &status) == GD_ERR_CAPTURE_IMPLICIT);
    EXPECT(gd_end(b, &graph) == 0 && gd_graph_destroy(graph) == 0);

    /* A user object's destructor, run on the runtime's thread, waited for. */
    void *obj = NULL;
    EXPECT(uo_create(&obj, NULL, on_destroy, 1, 1 /* the no-destructor-sync flag */) == 0);
    EXPECT(uo_release(obj, 1) == 0);
    EXPECT(gd_wait_flag(&destroyed, 1, 5000) == 1);
    EXPECT(gd_flush_callbacks() == 1); /* a fake flushes exactly */

    EXPECT(gd_stream_destroy(s) == 0 && gd_stream_destroy(b) == 0);
    gd_close();
    EXPECT(gd_begin(s, GD_MODE_GLOBAL) == GD_ERR_NOT_OPEN);
    printf("%s: %d failed checks\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
