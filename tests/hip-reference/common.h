/*
 * Shared by the HIP reference programs and their gpumem translations: the kernels (HIP
 * syntax: one source for HIP's AMD and NVIDIA platforms), the data every program starts from,
 * and how a program prints the values its guide defines.
 *
 * A line "key = value" is a value the guide defines: compare.py checks that the HIP program
 * and both runs of its translation print the same ones.  Anything else (sizes a driver chose,
 * timings, the pool's kind) is printed as "info: ..." and never compared.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_HIP_REFERENCE_COMMON_H
#define GPUMEM_HIP_REFERENCE_COMMON_H

#include <hip/hip_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#define REF_N (1 << 20)          /* floats per array: 4 MiB */
#define REF_MiB ((size_t)1 << 20)

/* y = a * x + y */
__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

/* y[i] = i % 1024 * 0.25 + base: exact in float, so every platform sums it the same */
__global__ void fill(int n, float base, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = (float)(i % 1024) * 0.25f + base;
}

static inline dim3 ref_grid(int n) { return dim3((unsigned)((n + 255) / 256)); }
static inline dim3 ref_block(void) { return dim3(256); }

static inline void ref_init_host(float *x, float *y, int n)
{
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 1024) * 0.25f;
        y[i] = 1.0f;
    }
}

/* Exact for the data above (every partial sum is a multiple of 0.25 below 2^53). */
static inline double ref_sum(const float *y, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += y[i];
    return s;
}

#define SHOW(key, fmt, ...) printf("%s = " fmt "\n", key, __VA_ARGS__)

/* The reference programs' own check of every HIP call (the translations use examples/check.h). */
#define HIP_CHECK(call)                                                                            \
    do {                                                                                           \
        hipError_t e_ = (call);                                                                    \
        if (e_ != hipSuccess) {                                                                    \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                   \
                    hipGetErrorString(e_));                                                        \
            exit(e_ == hipErrorNotSupported ? 77 : 1);                                             \
        }                                                                                          \
    } while (0)

#endif
