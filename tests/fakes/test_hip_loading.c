/* Loading the HIP backend over the fake runtime (and over Debian's real libamdhip64 without a
 * GPU): what gpumem does when the runtime has no device, fails to start, is missing or is not
 * a HIP runtime at all, and that it reports the fake's devices and capabilities when it works.
 *
 *   test_hip_loading explicit NEEDLES   gpumem_init(GPUMEM_BACKEND_HIP) fails (BACKEND_UNAVAILABLE
 *                                       or NO_DEVICE) with a message containing one of NEEDLES
 *                                       ('|'-separated); AUTO then falls through to the host backend
 *   test_hip_loading forced NEEDLES     the same with GPUMEM_BACKEND=hip in the environment: every
 *                                       call fails the same way, AUTO included (a forced choice holds)
 *   test_hip_loading auto-host          without GPUMEM_BACKEND the first call picks the host backend
 *   test_hip_loading auto-hip           ...or the HIP backend, when the runtime works
 *   test_hip_loading caps               the HIP backend reports what the FAKE_HIP_* variables say
 *   test_hip_loading real-forced LIB    with the real runtime LIB installed (else skip, 77) and no GPU:
 *                                       GPUMEM_BACKEND=hip gives NO_DEVICE or BACKEND_UNAVAILABLE
 *                                       with a message that says why
 *   test_hip_loading real-auto LIB      ...and AUTO falls through to the host backend, printing
 *                                       exactly one "gpumem:" info line about HIP (GPUMEM_LOG=info,
 *                                       read from a child's stderr)
 *
 * SPDX-License-Identifier: MIT
 */
#include "loading.h"

#include <sys/wait.h>
#include <unistd.h>

static const loading_backend_t k_hip = {GPUMEM_BACKEND_HIP, "hip", "GPUMEM_BACKEND_HIP"};

/* What the HIP backend reports over the fake, against the FAKE_HIP_* variables. */
static void caps(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_HIP));
    CHECK(tst_backend() == GPUMEM_BACKEND_HIP);
    const char *nd = getenv("FAKE_HIP_DEVICES");
    int32_t want = nd ? atoi(nd) : 1, n = 0;
    CHECK_OK(gpumem_device_count(&n));
    CHECKF(n == want, "%d devices, the fake has %d", (int)n, (int)want);
    const char *ver = getenv("FAKE_HIP_VERSION");
    const int rocm6 = ver == NULL || atol(ver) >= 60000000;
    const int managed = !env_on("FAKE_HIP_NO_MANAGED"), xnack = managed && !env_on("FAKE_HIP_NO_XNACK"),
              pools = !env_on("FAKE_HIP_NO_POOLS"), vmm = rocm6 && !env_on("FAKE_HIP_NO_VMM");
    for (int32_t d = 0; d < n; ++d) {
        gpumem_device_info_t info = tst_info(d);
        CHECKF(info.backend == GPUMEM_BACKEND_HIP, "backend %d", (int)info.backend);
        CHECKF(strcmp(info.name, "gpumem fake HIP device") == 0, "name \"%s\"", info.name);
        const char *mem = getenv("FAKE_HIP_MEMORY");
        if (mem && strcmp(mem, "1G") == 0)
            CHECKF(info.total_memory == ((uint64_t)1 << 30), "total memory %" PRIu64, info.total_memory);
        CHECK(info.free_memory <= info.total_memory);
        CHECKF((info.managed_memory == GPUMEM_SUPPORT_NATIVE) == managed, "managed_memory level %d",
               (int)info.managed_memory);
        CHECKF(info.managed_migrates == xnack, "managed_migrates %d (XNACK %d)", (int)info.managed_migrates, xnack);
        CHECKF(info.pageable_memory_access == xnack, "pageable_memory_access %d (XNACK %d)",
               (int)info.pageable_memory_access, xnack);
        CHECKF((info.memory_pools == GPUMEM_SUPPORT_NATIVE) == pools, "memory_pools level %d", (int)info.memory_pools);
        CHECKF((info.virtual_memory == GPUMEM_SUPPORT_NATIVE) == vmm, "virtual_memory level %d", (int)info.virtual_memory);
        CHECKF(info.host_register == GPUMEM_SUPPORT_NATIVE, "host_register level %d", (int)info.host_register);
        if (vmm)
            CHECKF(info.vmm_granularity == ((uint64_t)2 << 20) && info.vmm_recommended_granularity == ((uint64_t)2 << 20),
                   "granularity %" PRIu64 " / %" PRIu64, info.vmm_granularity, info.vmm_recommended_granularity);
        if (d == 0)
            printf("  device 0: \"%s\" arch \"%s\" managed %d migrates %d pageable %d pools %d vmm %d ipc 0x%x\n",
                   info.name, info.arch_name, (int)info.managed_memory, (int)info.managed_migrates,
                   (int)info.pageable_memory_access, (int)info.memory_pools, (int)info.virtual_memory,
                   (unsigned)info.ipc_handle_types);
    }
    check_memory_accounted();
    /* Pinned memory through whichever spelling the runtime has. */
    void *h = NULL;
    CHECK_OK(gpumem_host_alloc(&h, 4096, GPUMEM_HOST_MAPPED));
    CHECK_OK(gpumem_host_free(h));
    CHECK_OK(gpumem_finalize());
}

/* ---- the real runtime (Debian's libamdhip64.so.5), no GPU ------------------------------- */

static int have_library(const char *lib) { return lib && *lib && access(lib, R_OK) == 0; }

static void real_forced(void)
{
    /* No library path given: gpumem finds the installed runtime itself. */
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_HIP);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
    printf("  gpumem_init(HIP) -> %s: %s\n", gpumem_status_string(st), msg);
    CHECKF(st == GPUMEM_ERROR_BACKEND_UNAVAILABLE || st == GPUMEM_ERROR_NO_DEVICE,
           "gpumem_init(HIP) on a machine without an AMD GPU gave %s", gpumem_status_string(st));
    CHECKF(strlen(msg) > 20 && (tst_contains(msg, "hip") || tst_contains(msg, "amdhip64")),
           "the message \"%s\" does not say what failed", msg);
    void *p = NULL;
    st = gpumem_malloc(&p, 64);
    CHECKF(st == GPUMEM_ERROR_BACKEND_UNAVAILABLE || st == GPUMEM_ERROR_NO_DEVICE,
           "gpumem_malloc with GPUMEM_BACKEND=hip gave %s", gpumem_status_string(st));
}

/* The child: AUTO, one call, exit. */
static int real_auto_child(void)
{
    int32_t n = 0;
    if (gpumem_device_count(&n) != GPUMEM_SUCCESS || tst_backend() != GPUMEM_BACKEND_HOST)
        return 3;
    gpumem_finalize();
    return 0;
}

static void real_auto(const char *self)
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        unsetenv("GPUMEM_BACKEND");
        unsetenv("GPUMEM_HIP_LIBRARY");
        setenv("GPUMEM_LOG", "info", 1);
        execl(self, self, "real-auto-child", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    static char out[65536];
    size_t len = 0;
    ssize_t r;
    while (len + 1 < sizeof out && (r = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the AUTO child did not end on the host backend (status 0x%x); its stderr:\n%s", status, out);
    int hip_lines = 0;
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        printf("  child stderr: %s\n", line);
        if (strncmp(line, "gpumem:", 7) == 0 && (tst_contains(line, "hip") || tst_contains(line, "amdhip64")))
            ++hip_lines;
    }
    CHECKF(hip_lines == 1, "%d gpumem: lines about HIP under GPUMEM_LOG=info, expected exactly one", hip_lines);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s explicit|forced NEEDLES | auto-host | auto-hip | caps | real-forced LIB | real-auto LIB\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    const char *arg = argc > 2 ? argv[2] : "";
    if (strcmp(mode, "caps") == 0)
        caps();
    else if (strcmp(mode, "real-auto-child") == 0)
        return real_auto_child();
    else if (strcmp(mode, "real-forced") == 0 || strcmp(mode, "real-auto") == 0) {
        if (!have_library(arg)) {
            printf("SKIP: the real HIP runtime %s is not installed\n", arg);
            return 77;
        }
        if (strcmp(mode, "real-forced") == 0)
            real_forced();
        else
            real_auto(argv[0]);
    } else if (!loading_run(mode, arg, &k_hip))
        return 2;
    return loading_result();
}
