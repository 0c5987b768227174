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
#include "loading.h"

static const loading_backend_t k_cuda = {GPUMEM_BACKEND_CUDA, "cuda", "GPUMEM_BACKEND_CUDA"};

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
    check_memory_accounted();
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
    if (strcmp(mode, "caps") == 0)
        caps();
    else if (!loading_run(mode, argc > 2 ? argv[2] : "", &k_cuda))
        return 2;
    return loading_result();
}
