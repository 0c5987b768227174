/*
 * A device fault: a kernel reads address 0x10 and leaves its context unusable (CUDA's
 * "sticky" CUDA_ERROR_ILLEGAL_ADDRESS).  Afterwards every gpumem call on that device returns
 * GPUMEM_ERROR_BACKEND with the driver's error and the remedy, nothing hangs, the books stay
 * as they were (a free the driver refused keeps its allocation), another device not started
 * before the fault is refused with the driver's error (CUDA starts no new context after a fault)
 * or works, and gpumem_finalize returns.
 *
 * The fault: on a real GPU a kernel, loaded as PTX through the driver (no nvcc needed); on the
 * fakes, which run no kernels, their fake_{cuda,hip}_device_fault hook, calibrated against
 * the driver's answers (cuda_probe group fault).  The host backend has no device to fault:
 * skipped.  Each case runs in a process of its own (the fault cannot be undone).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1
#include "harness.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*get_proc_t)(const char *, void **, int, uint64_t, int *);

/* The driver gpumem loaded, or NULL. */
static void *loaded_driver(const char *variable, const char *fallback)
{
    const char *path = getenv(variable);
    return dlopen(path && *path ? path : fallback, RTLD_NOW | RTLD_NOLOAD);
}

/* A kernel reading 0x10 on device 0, through the CUDA driver (real GPUs: the cuda backend, and
 * the hip backend over a HIP runtime on CUDA).  1 when launched. */
static int launch_bad_kernel(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda)
        return 0;
    get_proc_t get = (get_proc_t)dlsym(cuda, "cuGetProcAddress_v2");
    int (*retain)(void **, int) = NULL, (*set_current)(void *) = NULL, (*load)(void **, const void *) = NULL;
    int (*function)(void **, void *, const char *) = NULL;
    int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
                  void **) = NULL;
    int found = 0;
    if (!get || get("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, 0, &found) != 0 || !retain ||
        get("cuCtxSetCurrent", (void **)&set_current, 12000, 0, &found) != 0 || !set_current ||
        get("cuModuleLoadData", (void **)&load, 12000, 0, &found) != 0 || !load ||
        get("cuModuleGetFunction", (void **)&function, 12000, 0, &found) != 0 || !function ||
        get("cuLaunchKernel", (void **)&launch, 12000, 0, &found) != 0 || !launch)
        return 0;
    static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry read_0x10()\n{\n .reg .b64 %rd<2>;\n .reg .b32 %r<2>;\n"
                              " mov.u64 %rd1, 16;\n ld.volatile.global.u32 %r1, [%rd1];\n"
                              " st.volatile.global.u32 [%rd1+4], %r1;\n ret;\n}\n";
    void *ctx = NULL, *module = NULL, *fn = NULL;
    return retain(&ctx, 0) == 0 && set_current(ctx) == 0 && load(&module, ptx) == 0 &&
           function(&fn, module, "read_0x10") == 0 &&
           launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == 0 && set_current(NULL) == 0;
}

/* Faults device 0; 0 when this backend has no way to. */
static int fault_device_0(void)
{
    void (*hook)(void) = NULL;
    int32_t backend = tst_backend();
    void *lib = backend == GPUMEM_BACKEND_CUDA  ? loaded_driver("GPUMEM_CUDA_LIBRARY", "libcuda.so.1")
                : backend == GPUMEM_BACKEND_HIP ? loaded_driver("GPUMEM_HIP_LIBRARY", "libamdhip64.so")
                                                : NULL;
    if (lib)
        hook = (void (*)(void))dlsym(lib, backend == GPUMEM_BACKEND_CUDA ? "fake_cuda_device_fault"
                                                                          : "fake_hip_device_fault");
    if (hook) {
        if (gpumem_set_device(0) != GPUMEM_SUCCESS)
            return 0;
        hook(); /* the calling thread's current device: gpumem's current device */
        return 1;
    }
    return backend != GPUMEM_BACKEND_HOST && launch_bad_kernel();
}

/* What a call on the faulted device must say: BACKEND, the driver's error, the remedy. */
#define CHECK_FAULTED(expr)                                                                                         \
    do {                                                                                                            \
        gpumem_status_t st_ = (expr);                                                                               \
        const char *m_ = gpumem_last_error_message();                                                               \
        CHECKF(st_ == GPUMEM_ERROR_BACKEND, "%s: %s (%s)", #expr, gpumem_status_string(st_), m_);                   \
        CHECKF(strstr(m_, "llegal") != NULL && strstr(m_, "restart") != NULL,                                      \
               "%s: the message names the sticky error and the remedy: %s", #expr, m_);                           \
    } while (0)

static void faulted_process(void)
{
    int32_t devices = 0;
    REQUIRE_OK(gpumem_device_count(&devices));
    void *dev = NULL, *block = NULL, *pinned = NULL;
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_set_device(0));
    REQUIRE_OK(gpumem_malloc(&dev, 1 << 20));
    REQUIRE_OK(gpumem_host_alloc(&pinned, 4096, 0));
    REQUIRE_OK(gpumem_stream_create(&s));
    const gpumem_status_t pools = gpumem_malloc_async(&block, 4096, s);
    REQUIRE_OK(gpumem_stream_synchronize(s));
    gpumem_stats_t before = tst_stats();

    if (!fault_device_0())
        SKIP("no way to fault a device on the %s backend here", gpumem_backend_name(tst_backend()));

    CHECK_FAULTED(gpumem_device_synchronize());
    CHECK_FAULTED(gpumem_device_synchronize()); /* sticky */
    void *more = NULL;
    CHECK_FAULTED(gpumem_malloc(&more, 4096));
    CHECK(more == NULL);
    CHECK_FAULTED(gpumem_memcpy(pinned, dev, 64));
    CHECK_FAULTED(gpumem_memset(dev, 0, 64));
    gpumem_stream_t s2 = NULL;
    CHECK_FAULTED(gpumem_stream_create(&s2));
    CHECK_FAULTED(gpumem_stream_synchronize(s));
    size_t free_bytes = 0, total = 0;
    CHECK_FAULTED(gpumem_mem_get_info(&free_bytes, &total));
    if (pools == GPUMEM_SUCCESS) {
        void *b2 = NULL;
        gpumem_status_t st = gpumem_malloc_async(&b2, 4096, s);
        /* A block the pool already holds may be handed out with no driver call: the next
         * stream-ordered call that reaches the driver reports the fault. */
        if (st == GPUMEM_SUCCESS)
            CHECK_FAULTED(gpumem_free_async(b2, s) == GPUMEM_SUCCESS ? gpumem_stream_synchronize(s)
                                                                       : GPUMEM_ERROR_BACKEND);
        else
            CHECKF(st == GPUMEM_ERROR_BACKEND, "malloc_async: %s (%s)", gpumem_status_string(st),
                   gpumem_last_error_message());
    }
    /* A free the driver refuses keeps its allocation: the books say it is still there. */
    gpumem_status_t freed = gpumem_free(dev);
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(dev, &info));
    if (freed == GPUMEM_SUCCESS)
        CHECK(info.kind == GPUMEM_KIND_UNKNOWN);
    else
        CHECKF(freed == GPUMEM_ERROR_BACKEND && info.kind == GPUMEM_KIND_DEVICE, "free: %s, kind %d",
               gpumem_status_string(freed), (int)info.kind);
    gpumem_stats_t after = tst_stats();
    for (int k = 0; k < GPUMEM_KIND_COUNT; ++k)
        if (k != GPUMEM_KIND_DEVICE || freed != GPUMEM_SUCCESS)
            CHECKF(after.current_bytes[k] == before.current_bytes[k], "kind %d: %llu live bytes, %llu before", k,
                   (unsigned long long)after.current_bytes[k], (unsigned long long)before.current_bytes[k]);

    /* Another device, unused before the fault: the CUDA driver starts no new context in a process
     * with a device fault (two H200s: cuDevicePrimaryCtxRetain answers
     * CUDA_ERROR_ILLEGAL_ADDRESS), so gpumem refuses it with the driver's error; where a runtime
     * starts it (HIP: not known on AMD), it works. */
    gpumem_status_t other_device = devices > 1 ? gpumem_set_device(1) : GPUMEM_SUCCESS;
    if (devices > 1 && other_device != GPUMEM_SUCCESS) {
        CHECKF(other_device == GPUMEM_ERROR_BACKEND && tst_contains(gpumem_last_error_message(), "ILLEGAL_ADDRESS"),
               "device 1 after the fault: %s (%s)", gpumem_status_string(other_device), gpumem_last_error_message());
    } else if (devices > 1) {
        CHECKF(tst_backend() != GPUMEM_BACKEND_CUDA, "the cuda backend started device 1 after a device fault");
        void *other = NULL;
        CHECK_OK(gpumem_malloc(&other, 1 << 20));
        CHECK_OK(gpumem_memset(other, 7, 4096));
        CHECK_OK(gpumem_memcpy(pinned, other, 4096));
        CHECK(tst_verify_byte(pinned, 4096, 7) == 4096);
        CHECK_OK(gpumem_free(other));
        CHECK_OK(gpumem_device_synchronize());
    }
    /* finalize returns (the leaks it reports are what the driver would not free). */
    gpumem_finalize();
}

/* The fault in a process of its own (exec'd: CUDA does not work in a forked child), which must
 * end by itself within the alarm. */
static void test_device_fault(void)
{
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        SKIP("the host backend has no device to fault");
    fflush(stdout);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        setenv("GPUMEM_TEST_FAULTED_PROCESS", "1", 1);
        execl("/proc/self/exe", "test_device_fault", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status), "the faulted process ended with signal %d (SIGALRM %d: it hung)",
           WIFSIGNALED(status) ? WTERMSIG(status) : 0, SIGALRM);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        SKIP("no way to fault a device here");
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the faulted process failed (exit %d)",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(int argc, char **argv)
{
    if (getenv("GPUMEM_TEST_FAULTED_PROCESS")) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        alarm(120); /* a hang is a failure, never a stuck job */
        faulted_process();
        return tst_skipped_ ? 77 : atomic_load(&tst_failures_) ? 1 : 0;
    }
    static const tst_case_t cases[] = {TEST(test_device_fault)};
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
}
