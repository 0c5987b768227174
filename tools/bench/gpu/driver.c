/*
 * The CUDA driver for gpumem-bench-gpu, loaded as gpumem's cuda backend loads
 * it (src/backends/cuda/cuda_driver.cpp): dlopen of GPUMEM_CUDA_LIBRARY, else
 * libcuda.so.1, never linked; cuInit, cuDriverGetVersion and cuGetProcAddress
 * from dlsym; every entry of cuda_symbols.def through cuGetProcAddress at the
 * CUDA 12.0 ABI, its required ones checked here.  A driver the backend
 * accepts therefore gives this program everything it needs; the entries only
 * this program calls (BENCH_DRIVER_EXTRA and the versioned ones) are optional,
 * and the parts that need them say so and are skipped.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_gpu.h"

/* The ABI version of every entry of cuda_symbols.def (k_cuda_abi_version). */
#define ABI_VERSION 12000

struct bench_driver drv;
const char *g_lib_name;
int g_driver_version;

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);
static get_proc_v2_fn g_get_proc_v2;
static get_proc_v1_fn g_get_proc_v1;

/* One entry point at `version` with legacy default-stream semantics; NULL when absent. */
static void *driver_symbol(const char *name, int version)
{
    void *fn = NULL;
    CUresult r;
    if (g_get_proc_v2) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        r = g_get_proc_v2(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
        if (found != CU_GET_PROC_ADDRESS_SUCCESS)
            fn = NULL;
    } else {
        r = g_get_proc_v1(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    }
    return r == CUDA_SUCCESS ? fn : NULL;
}

const char *cu_name(CUresult r)
{
    const char *s = NULL;
    if (drv.cuGetErrorName && drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA error (unnamed)";
}

int driver_load(void)
{
    const char *env = getenv("GPUMEM_CUDA_LIBRARY");
    g_lib_name = env && *env ? env : "libcuda.so.1";
    void *lib = dlopen(g_lib_name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("error: cannot load the CUDA driver %s: %s\n", g_lib_name, dlerror());
        return 0;
    }
    CUresult (*init)(unsigned int) = (CUresult(*)(unsigned int))dlsym(lib, "cuInit");
    CUresult (*version)(int *) = (CUresult(*)(int *))dlsym(lib, "cuDriverGetVersion");
    g_get_proc_v2 = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!g_get_proc_v2)
        g_get_proc_v1 = (get_proc_v1_fn)dlsym(lib, "cuGetProcAddress");
    if (!init || !version || (!g_get_proc_v2 && !g_get_proc_v1)) {
        printf("error: %s lacks cuInit, cuDriverGetVersion or cuGetProcAddress\n", g_lib_name);
        return 0;
    }
    CUresult r = init(0);
    if (r != CUDA_SUCCESS) {
        printf("error: cuInit failed: error %d (no usable GPU or driver)\n", (int)r);
        return 0;
    }
    version(&g_driver_version);

    const char *missing = NULL;
#define GPUMEM_CUDA_REQUIRED(name)                                                                                     \
    drv.name = (__typeof__(drv.name))driver_symbol(#name, ABI_VERSION);                                                \
    if (!drv.name && !missing)                                                                                         \
        missing = #name;
#define GPUMEM_CUDA_OPTIONAL(name, feature) drv.name = (__typeof__(drv.name))driver_symbol(#name, ABI_VERSION);
#include "backends/cuda/cuda_symbols.def"
#undef GPUMEM_CUDA_REQUIRED
#undef GPUMEM_CUDA_OPTIONAL
#define X(name) drv.name = (__typeof__(drv.name))driver_symbol(#name, ABI_VERSION);
    BENCH_DRIVER_EXTRA(X)
#undef X
    if (missing) {
        printf("error: the driver lacks %s\n", missing);
        return 0;
    }

    drv.cuMemPrefetchAsync_v2 = (PFN_cuMemPrefetchAsync_v12020)driver_symbol("cuMemPrefetchAsync", 12020);
    if (!drv.cuMemPrefetchAsync_v2)
        drv.cuMemPrefetchAsync_v1 = (PFN_cuMemPrefetchAsync_v8000)driver_symbol("cuMemPrefetchAsync", 12000);
    if (g_driver_version >= 13000)
        drv.cuMemcpyBatchAsync_v2 = (PFN_cuMemcpyBatchAsync_v13000)driver_symbol("cuMemcpyBatchAsync", 13000);
    drv.cuStreamGetCaptureInfo =
        (PFN_cuStreamGetCaptureInfo_v11030)driver_symbol("cuStreamGetCaptureInfo", 11030);
    return 1;
}
