// The start every single-GPU kernel test shares (tests/gpu): device 0 found,
// the CUDA runtime started on its primary context, and gpumem initialised on
// its cuda backend, which shares that context.
#pragma once

#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include <cstdio>

// 0: ready (gpumem initialised; the caller finalizes it).  77: skipped (no
// device, the runtime cannot start, or gpumem is not on its cuda backend).
// 1: failed (gpumem cannot start where a GPU is).  The reason is printed.
static int gpu_test_start()
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        std::printf("SKIP: no CUDA device (cudaGetDeviceCount: %s)\n",
                    e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
        return 77;
    }
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess) {
        std::printf("SKIP: the CUDA runtime cannot start on device 0: %s\n", cudaGetErrorName(e));
        return 77;
    }
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
    if (st != GPUMEM_SUCCESS) {
        // A GPU is here, so a backend that cannot start is a failure.
        std::fprintf(stderr, "FAIL: gpumem_init: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        return 1;
    }
    int32_t backend = 0;
    gpumem_get_backend(&backend);
    if (backend != GPUMEM_BACKEND_CUDA) {
        std::printf("SKIP: gpumem's backend is %s, not cuda (run with GPUMEM_BACKEND=cuda)\n",
                    gpumem_backend_name(backend));
        gpumem_finalize();
        return 77;
    }
    return 0;
}
