/*
 * pool_memory_test: a CUDA kernel reads and writes stream-ordered memory from
 * pools of pinned host memory and of managed memory.
 *
 * For each memory (PINNED, MANAGED) and implementation (AUTO: native where the
 * driver has such pools, else gpumem's own; BUILTIN: gpumem's own over pinned
 * or managed chunks), and for the process's default pool of that memory
 * (gpumem_get_default_pool_for): allocate on a gpumem stream, fill on the
 * host, run `touch` on the stream (every element read and written), free in
 * stream order after the kernel, synchronise, and check every element on the
 * host directly (the memory is host memory).  A second allocation then reuses
 * the freed block on the same stream while the kernel order is respected.
 * Where pools of a memory are NONE (GPUMEM_FALLBACK=deny) creation must answer
 * NOT_SUPPORTED; the case is then skipped with a note.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (no CUDA device, or gpumem's
 * backend is not cuda).  Registered as test 'pool_memory', suite 'gpu', with
 * GPUMEM_BACKEND=cuda.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include "gpu_test_start.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace {

constexpr size_t kElems = size_t(1) << 20; // 4 MiB of uint32_t
constexpr size_t kBytes = kElems * sizeof(uint32_t);

int g_failures;
int g_passed;
int g_skipped;

__global__ void touch(uint32_t *p, size_t n, uint32_t salt)
{
    size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = p[i] * 3u + uint32_t(i) + salt;
}

uint32_t initial(size_t i, uint32_t seed) { return uint32_t(i) * 2654435761u ^ seed; }
uint32_t expected(size_t i, uint32_t seed, uint32_t salt) { return initial(i, seed) * 3u + uint32_t(i) + salt; }

const char *memory_name(int32_t memory) { return memory == GPUMEM_POOL_MEMORY_PINNED ? "pinned" : "managed"; }
const char *level_name(int32_t level)
{
    return level == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : level == GPUMEM_SUPPORT_EMULATED ? "EMULATED" : "NONE";
}

bool ok(gpumem_status_t st, const char *what, const char *name)
{
    if (st == GPUMEM_SUCCESS)
        return true;
    fprintf(stderr, "FAIL [%s]: %s: %s: %s\n", name, what, gpumem_status_string(st), gpumem_last_error_message());
    ++g_failures;
    return false;
}

// Allocate from `pool` on `stream`, let a kernel read and write it, check it on the host.
void run_case(const char *name, int32_t memory, gpumem_pool_t pool, gpumem_stream_t stream, uint32_t seed)
{
    cudaStream_t native = static_cast<cudaStream_t>(gpumem_stream_native(stream));
    uint32_t *p = nullptr;
    if (!ok(gpumem_malloc_from_pool_async(reinterpret_cast<void **>(&p), kBytes, pool, stream), "allocate", name))
        return;
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    if (ok(gpumem_pointer_get_info(p, &info), "pointer info", name) &&
        (info.memory != memory || info.kind != GPUMEM_KIND_STREAM_ORDERED)) {
        fprintf(stderr, "FAIL [%s]: pointer info says kind %d memory %d\n", name, info.kind, info.memory);
        ++g_failures;
    }
    // The allocation is ordered on the stream: wait before the host writes.
    if (!ok(gpumem_stream_synchronize(stream), "synchronize before filling", name))
        return;
    for (size_t i = 0; i < kElems; i++)
        p[i] = initial(i, seed);
    const uint32_t salt = 7u + seed;
    touch<<<256, 256, 0, native>>>(p, kElems, salt);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "FAIL [%s]: kernel launch: %s\n", name, cudaGetErrorString(e));
        ++g_failures;
        gpumem_free(p);
        return;
    }
    if (!ok(gpumem_stream_synchronize(stream), "synchronize after the kernel", name)) {
        gpumem_free(p);
        return;
    }
    size_t bad = 0;
    for (size_t i = 0; i < kElems; i++)
        if (p[i] != expected(i, seed, salt) && bad++ < 3)
            fprintf(stderr, "FAIL [%s]: element %zu is %u, expected %u\n", name, i, p[i], expected(i, seed, salt));
    // A second kernel, then the free in stream order: the block goes back only after it.
    touch<<<256, 256, 0, native>>>(p, kElems, salt);
    if (!ok(gpumem_free_async(p, stream), "free in stream order", name))
        return;
    uint32_t *q = nullptr;
    if (ok(gpumem_malloc_from_pool_async(reinterpret_cast<void **>(&q), kBytes, pool, stream), "allocate again",
           name)) {
        touch<<<256, 256, 0, native>>>(q, kElems, salt); // ordered after the kernel on the freed block
        ok(gpumem_free_async(q, stream), "free the second block", name);
    }
    if (!ok(gpumem_stream_synchronize(stream), "synchronize at the end", name))
        return;
    if (bad) {
        ++g_failures;
        return;
    }
    printf("ok   %s\n", name);
    ++g_passed;
}

void run_memory(int32_t memory, int32_t level, gpumem_stream_t stream)
{
    char name[128];
    for (int32_t impl : {GPUMEM_POOL_AUTO, GPUMEM_POOL_BUILTIN}) {
        snprintf(name, sizeof name, "%s pool (%s)", memory_name(memory), impl == GPUMEM_POOL_AUTO ? "auto" : "builtin");
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.memory = memory;
        props.implementation = impl;
        gpumem_pool_t pool = nullptr;
        gpumem_status_t st = gpumem_pool_create(&pool, &props);
        if (level == GPUMEM_SUPPORT_NONE) {
            if (st != GPUMEM_ERROR_NOT_SUPPORTED) {
                fprintf(stderr, "FAIL [%s]: support NONE but creation gave %s\n", name, gpumem_status_string(st));
                ++g_failures;
            } else {
                printf("skip %s: NOT_SUPPORTED as its level says\n", name);
                ++g_skipped;
            }
            if (st == GPUMEM_SUCCESS)
                gpumem_pool_destroy(pool);
            continue;
        }
        if (!ok(st, "create", name))
            continue;
        run_case(name, memory, pool, stream, 11u + uint32_t(memory) * 5u + uint32_t(impl));
        ok(gpumem_pool_destroy(pool), "destroy", name);
    }
    if (level == GPUMEM_SUPPORT_NONE)
        return;
    snprintf(name, sizeof name, "default %s pool", memory_name(memory));
    gpumem_pool_t pool = nullptr;
    if (ok(gpumem_get_default_pool_for(&pool, memory, memory == GPUMEM_POOL_MEMORY_PINNED ? -1 : 0), "default pool",
           name))
        run_case(name, memory, pool, stream, 97u + uint32_t(memory));
}

} // namespace

int main()
{
    if (int rc = gpu_test_start())
        return rc;
    gpumem_status_t st;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    if ((st = gpumem_set_device(0)) != GPUMEM_SUCCESS || (st = gpumem_device_get_info(0, &info)) != GPUMEM_SUCCESS) {
        fprintf(stderr, "FAIL: device 0: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        gpumem_finalize();
        return 1;
    }
    printf("device 0: %s (%s); pools %s, pinned pools %s, managed pools %s\n", info.name, info.arch_name,
           level_name(info.memory_pools), level_name(info.pinned_pools), level_name(info.managed_pools));
    gpumem_stream_t stream = nullptr;
    if (!ok(gpumem_stream_create(&stream), "create a stream", "setup")) {
        gpumem_finalize();
        return 1;
    }
    run_memory(GPUMEM_POOL_MEMORY_PINNED, info.pinned_pools, stream);
    run_memory(GPUMEM_POOL_MEMORY_MANAGED, info.managed_pools, stream);
    ok(gpumem_stream_destroy(stream), "destroy the stream", "teardown");
    ok(gpumem_finalize(), "finalize", "teardown");
    printf("pool_memory_test: %d passed, %d failed, %d skipped\n", g_passed, g_failures, g_skipped);
    return g_failures ? 1 : 0;
}
