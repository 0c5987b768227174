/* Loading the CUDA backend over the fake driver: what gpumem does when the driver is a stub,
 * has no device, fails to start, is missing or is not a driver at all, and that it reports
 * the fake's devices and capabilities when it works.
 *
 *   test_cuda_loading explicit NEEDLES   gpumem_init(GPUMEM_BACKEND_CUDA) fails (BACKEND_UNAVAILABLE
 *                                        or NO_DEVICE) with a message containing one of NEEDLES
 *                                        ('|'-separated); AUTO then falls through to the host backend
 *   test_cuda_loading forced NEEDLES     the same with GPUMEM_BACKEND=cuda in the environment: every
 *                                        call fails the same way, AUTO included (a forced choice holds)
 *   test_cuda_loading auto-host          without GPUMEM_BACKEND the first call picks the host backend
 *   test_cuda_loading auto-cuda          ...or the CUDA backend, when the driver works
 *   test_cuda_loading caps               the CUDA backend reports what the FAKE_CUDA_* variables say
 *
 * SPDX-License-Identifier: MIT
 */
#include "../harness.h"

static int needle_found(const char *msg, const char *needles)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", needles);
    for (char *save = NULL, *n = strtok_r(buf, "|", &save); n; n = strtok_r(NULL, "|", &save))
        if (tst_contains(msg, n))
            return 1;
    return 0;
}

static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* A failed start: the status and the words of its message. */
static void check_failure(const char *what, gpumem_status_t st, const char *needles)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
    CHECKF(st == GPUMEM_ERROR_BACKEND_UNAVAILABLE || st == GPUMEM_ERROR_NO_DEVICE,
           "%s gave %s (%d), expected BACKEND_UNAVAILABLE or NO_DEVICE; message \"%s\"", what,
           gpumem_status_string(st), (int)st, msg);
    CHECKF(needle_found(msg, needles), "%s: the message \"%s\" names none of \"%s\"", what, msg, needles);
    printf("  %s -> %s: %s\n", what, gpumem_status_string(st), msg);
}

static void explicit_init(const char *needles)
{
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_CUDA);
    check_failure("gpumem_init(GPUMEM_BACKEND_CUDA)", st, needles);
    /* Asking again gives the same answer (a failure is not half an init). */
    gpumem_status_t again = gpumem_init(GPUMEM_BACKEND_CUDA);
    CHECKF(again == st, "the second gpumem_init(CUDA) gave %s, the first %s", gpumem_status_string(again),
           gpumem_status_string(st));
    /* AUTO never fails: it falls through to the host backend. */
    CHECK_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    CHECK(tst_backend() == GPUMEM_BACKEND_HOST);
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 64));
    CHECK_OK(gpumem_free(p));
    CHECK_OK(gpumem_finalize());
}

static void forced(const char *needles)
{
    void *p = NULL;
    check_failure("gpumem_malloc with GPUMEM_BACKEND=cuda", gpumem_malloc(&p, 64), needles);
    int32_t n = 0;
    check_failure("gpumem_device_count with GPUMEM_BACKEND=cuda", gpumem_device_count(&n), needles);
    check_failure("gpumem_init(AUTO) with GPUMEM_BACKEND=cuda", gpumem_init(GPUMEM_BACKEND_AUTO), needles);
    /* Nothing was silently replaced by the host backend. */
    int32_t b = -1;
    gpumem_status_t st = gpumem_get_backend(&b);
    CHECKF(st != GPUMEM_SUCCESS || b != GPUMEM_BACKEND_HOST, "GPUMEM_BACKEND=cuda fell back to the host backend");
}

static void auto_pick(int32_t expected)
{
    int32_t n = 0;
    CHECK_OK(gpumem_device_count(&n));
    CHECK(n >= 1);
    CHECKF(tst_backend() == expected, "AUTO picked %s, expected %s", gpumem_backend_name(tst_backend()),
           gpumem_backend_name(expected));
    CHECK_OK(gpumem_finalize());
}

/* What the CUDA backend reports over the fake, against the FAKE_CUDA_* variables. */
static void caps(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_CUDA));
    CHECK(tst_backend() == GPUMEM_BACKEND_CUDA);
    const char *nd = getenv("FAKE_CUDA_DEVICES");
    int32_t want = nd ? atoi(nd) : 1, n = 0;
    CHECK_OK(gpumem_device_count(&n));
    CHECKF(n == want, "%d devices, the fake has %d", (int)n, (int)want);
    const int managed = !env_on("FAKE_CUDA_NO_MANAGED"), pools = !env_on("FAKE_CUDA_NO_POOLS"),
              vmm = !env_on("FAKE_CUDA_NO_VMM"), ipc = !env_on("FAKE_CUDA_NO_IPC");
    for (int32_t d = 0; d < n; ++d) {
        gpumem_device_info_t info = tst_info(d);
        CHECKF(strcmp(info.name, "gpumem fake CUDA device") == 0, "name \"%s\"", info.name);
        CHECKF(info.compute_capability == 90, "compute capability %d", (int)info.compute_capability);
        CHECKF(strcmp(info.arch_name, "sm_90") == 0, "arch \"%s\"", info.arch_name);
        const char *mem = getenv("FAKE_CUDA_MEMORY");
        if (mem && strcmp(mem, "1G") == 0)
            CHECKF(info.total_memory == ((uint64_t)1 << 30), "total memory %" PRIu64, info.total_memory);
        CHECK(info.free_memory <= info.total_memory);
        CHECKF((info.managed_memory == GPUMEM_SUPPORT_NATIVE) == managed, "managed_memory level %d",
               (int)info.managed_memory);
        CHECKF(info.managed_migrates == managed, "managed_migrates %d", (int)info.managed_migrates);
        CHECKF(info.pageable_memory_access == 0, "pageable_memory_access %d", (int)info.pageable_memory_access);
        CHECKF((info.memory_pools == GPUMEM_SUPPORT_NATIVE) == pools, "memory_pools level %d", (int)info.memory_pools);
        CHECKF((info.virtual_memory == GPUMEM_SUPPORT_NATIVE) == vmm, "virtual_memory level %d",
               (int)info.virtual_memory);
        /* Shareable handles: all there, or none without the driver's; in between the backend decides. */
        if (ipc && pools && vmm)
            CHECKF(info.ipc_handle_types == GPUMEM_HANDLE_POSIX_FD, "ipc_handle_types 0x%x", (unsigned)info.ipc_handle_types);
        else if (!ipc)
            CHECKF(info.ipc_handle_types == 0, "ipc_handle_types 0x%x", (unsigned)info.ipc_handle_types);
        else if (d == 0)
            printf("  note: pools %d, vmm %d: ipc_handle_types 0x%x\n", pools, vmm, (unsigned)info.ipc_handle_types);
        CHECKF(info.host_register == GPUMEM_SUPPORT_NATIVE, "host_register level %d", (int)info.host_register);
        if (vmm)
            CHECKF(info.vmm_granularity == ((uint64_t)2 << 20) && info.vmm_recommended_granularity == ((uint64_t)2 << 20),
                   "granularity %" PRIu64 " / %" PRIu64, info.vmm_granularity, info.vmm_recommended_granularity);
    }
    /* Device memory is accounted: free memory goes down by at least what was asked. */
    size_t free0 = 0, free1 = 0, total = 0;
    CHECK_OK(gpumem_mem_get_info(&free0, &total));
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 64 << 20));
    CHECK_OK(gpumem_mem_get_info(&free1, &total));
    CHECKF(free1 + (64 << 20) <= free0, "free %zu -> %zu after 64 MiB", free0, free1);
    CHECK_OK(gpumem_free(p));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, total + 1));
    CHECK_OK(gpumem_finalize());
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s explicit|forced NEEDLES | auto-host | auto-cuda | caps\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    const char *needles = argc > 2 ? argv[2] : "";
    if (strcmp(mode, "explicit") == 0)
        explicit_init(needles);
    else if (strcmp(mode, "forced") == 0)
        forced(needles);
    else if (strcmp(mode, "auto-host") == 0)
        auto_pick(GPUMEM_BACKEND_HOST);
    else if (strcmp(mode, "auto-cuda") == 0)
        auto_pick(GPUMEM_BACKEND_CUDA);
    else if (strcmp(mode, "caps") == 0)
        caps();
    else
        return 2;
    int failures = atomic_load(&tst_failures_);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
