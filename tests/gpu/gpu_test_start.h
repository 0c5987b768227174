// The start every single-GPU kernel test shares (tests/gpu): device 0 found,
// the CUDA runtime started on its primary context, and gpumem initialised on
// a backend whose memory CUDA kernels reach: its cuda backend, which shares
// that context, or its hip backend over a HIP runtime that runs on CUDA
// (tests/hip-over-cuda's libhipovercuda, as HIP's NVIDIA platform does).
#pragma once

#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include <cstdio>

// 0: ready (gpumem initialised; the caller finalizes it).  77: skipped (no
// device, the runtime cannot start, or gpumem's memory is not CUDA memory).
// 1: failed (gpumem cannot start where a GPU is).  The reason is printed.

// Whether CUDA kernels can use what gpumem's backend allocates: always on the
// cuda backend; on the hip backend when its runtime is HIP over CUDA, which the
// CUDA runtime recognises as its own device memory.
static inline bool gpu_backend_reaches_cuda(int32_t backend)
{
    if (backend == GPUMEM_BACKEND_CUDA)
        return true;
    if (backend != GPUMEM_BACKEND_HIP)
        return false;
    void *p = nullptr;
    if (gpumem_malloc(&p, 256) != GPUMEM_SUCCESS)
        return false;
    cudaPointerAttributes a{};
    const bool cuda_memory = cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
    cudaGetLastError(); // a refused pointer leaves its error for the next kernel launch's check
    gpumem_free(p);
    return cuda_memory;
}
static inline int gpu_test_start()
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
    if (!gpu_backend_reaches_cuda(backend)) {
        std::printf("SKIP: gpumem's backend is %s, whose memory is not CUDA memory (run with GPUMEM_BACKEND=cuda)\n",
                    gpumem_backend_name(backend));
        gpumem_finalize();
        return 77;
    }
    return 0;
}
