// Checks for the GPU tests that count failures and go on (the test's exit status reports them):
// EXPECT(cond, printf-style detail), OK(a gpumem call), CUDA_OK(a CUDA runtime call).
#pragma once

#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include <cstdio>

static int g_failures;

#define EXPECT(cond, ...)                                                                                            \
    do {                                                                                                             \
        if (!(cond)) {                                                                                               \
            std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                              \
            std::printf(__VA_ARGS__);                                                                                \
            std::printf("\n");                                                                                       \
            ++g_failures;                                                                                            \
        }                                                                                                            \
    } while (0)

#define OK(expr)                                                                                                     \
    do {                                                                                                             \
        gpumem_status_t st_ = (expr);                                                                                \
        EXPECT(st_ == GPUMEM_SUCCESS, "%s: %s", gpumem_status_string(st_), gpumem_last_error_message());             \
    } while (0)

#define CUDA_OK(expr)                                                                                                \
    do {                                                                                                             \
        cudaError_t e_ = (expr);                                                                                     \
        EXPECT(e_ == cudaSuccess, "%s", cudaGetErrorName(e_));                                                       \
    } while (0)
