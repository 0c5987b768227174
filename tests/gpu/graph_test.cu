/*
 * graph_test: gpumem's memory in CUDA graphs on a real GPU, for the driver's pool and for
 * gpumem's own.
 *
 *   1. On a non-blocking stream captured with cudaStreamBeginCapture (global mode): a block
 *      from the pool, a fill, a kernel that adds the input, a second block, a batch of two
 *      copies into it, a kernel that doubles it, a copy out to pinned memory, both frees.
 *   2. The graph replays 50 times, each on a new input: the output is 2 * input every time.
 *   3. Between replays, on another stream, allocations from the same pool are filled with
 *      other values: none of them lies in a block the graph uses (the own pool must not hand a
 *      graph's block to anyone else), and the graph's results stay right.
 *   4. After the graph and its executable are destroyed, gpumem's own pool gets the graph's
 *      blocks back (its used bytes return to what they were before the capture).
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (no CUDA device, or gpumem's backend is not cuda).
 * Registered as test 'graph', suite 'gpu', with GPUMEM_BACKEND=cuda.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include "gpu_expect.h"
#include "gpu_test_start.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr int kN = 1 << 16; // floats per block
constexpr size_t kBytes = kN * sizeof(float);
constexpr int kReplays = 50;



__global__ void add(float *dst, const float *src, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] += src[i];
}

__global__ void twice(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] *= 2.0f;
}

bool overlaps(const void *a, size_t an, const void *b, size_t bn)
{
    auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return x < y + bn && y < x + an;
}

uint64_t used_bytes(gpumem_pool_t pool)
{
    uint64_t used = 0;
    OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    return used;
}

void run(const char *name, gpumem_pool_t pool, bool own)
{
    std::printf("-- %s pool\n", name);
    cudaStream_t cs = nullptr, other_cs = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&other_cs, cudaStreamNonBlocking));
    gpumem_stream_t s = nullptr, other = nullptr;
    OK(gpumem_stream_wrap(cs, &s));
    OK(gpumem_stream_wrap(other_cs, &other));
    float *input = nullptr, *out = nullptr;
    OK(gpumem_malloc(reinterpret_cast<void **>(&input), kBytes));
    OK(gpumem_host_alloc(reinterpret_cast<void **>(&out), kBytes, 0));
    std::vector<float> host_in(kN);
    const uint64_t used_before = own ? used_bytes(pool) : 0;

    CUDA_OK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
    void *p = nullptr, *q = nullptr;
    OK(gpumem_malloc_from_pool_async(&p, kBytes, pool, s));
    OK(gpumem_memset_async(p, 0, kBytes, s));
    add<<<(kN + 255) / 256, 256, 0, cs>>>(static_cast<float *>(p), input, kN);
    OK(gpumem_malloc_from_pool_async(&q, kBytes, pool, s));
    void *dsts[2] = {q, static_cast<char *>(q) + kBytes / 2};
    const void *srcs[2] = {p, static_cast<char *>(p) + kBytes / 2};
    size_t sizes[2] = {kBytes / 2, kBytes / 2};
    OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, 2, s));
    twice<<<(kN + 255) / 256, 256, 0, cs>>>(static_cast<float *>(q), kN);
    OK(gpumem_memcpy_async(out, q, kBytes, s));
    OK(gpumem_free_async(q, s));
    OK(gpumem_free_async(p, s));
    cudaGraph_t graph = nullptr;
    CUDA_OK(cudaStreamEndCapture(cs, &graph));
    cudaGraphExec_t exec = nullptr;
    if (graph)
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    if (!exec) {
        EXPECT(false, "no graph to replay");
        return;
    }

    int wrong = 0, reused = 0;
    for (int r = 0; r < kReplays; ++r) {
        for (int i = 0; i < kN; ++i)
            host_in[i] = float((i * 7 + r * 13) % 1000);
        OK(gpumem_memcpy(input, host_in.data(), kBytes));
        CUDA_OK(cudaGraphLaunch(exec, cs));
        // Work outside the graph, on the same pool, while the graph runs.
        void *x = nullptr;
        OK(gpumem_malloc_from_pool_async(&x, kBytes, pool, other));
        if (overlaps(x, kBytes, p, kBytes) || overlaps(x, kBytes, q, kBytes))
            ++reused;
        OK(gpumem_memset_async(x, 0x7f, kBytes, other));
        OK(gpumem_free_async(x, other));
        CUDA_OK(cudaStreamSynchronize(cs));
        CUDA_OK(cudaStreamSynchronize(other_cs));
        for (int i = 0; i < kN; ++i)
            if (out[i] != 2.0f * host_in[i]) {
                ++wrong;
                break;
            }
    }
    EXPECT(wrong == 0, "%d of %d replays gave wrong results", wrong, kReplays);
    EXPECT(reused == 0, "%d allocations outside the graph got a block the graph uses", reused);
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    if (own) {
        // The runtime runs the graph's user-object destructor on its own thread.
        uint64_t used = used_bytes(pool);
        for (int i = 0; i < 200 && used != used_before; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            used = used_bytes(pool);
        }
        EXPECT(used == used_before, "the graph's blocks did not come back: %llu bytes used, %llu before",
               (unsigned long long)used, (unsigned long long)used_before);
    }
    std::printf("   %d replays, %d wrong, %d allocations outside on a graph block\n", kReplays, wrong, reused);
    OK(gpumem_stream_destroy(s));
    OK(gpumem_stream_destroy(other));
    CUDA_OK(cudaStreamDestroy(cs));
    CUDA_OK(cudaStreamDestroy(other_cs));
    OK(gpumem_free(input));
    OK(gpumem_host_free(out));
}

} // namespace

int main()
{
    if (int rc = gpu_test_start())
        return rc;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    OK(gpumem_device_get_info(0, &info));
    if (info.memory_pools == GPUMEM_SUPPORT_NATIVE) {
        gpumem_pool_t def = nullptr;
        OK(gpumem_device_get_default_pool(&def, 0));
        run("driver's", def, false);
    }
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 0;
    props.implementation = GPUMEM_POOL_BUILTIN;
    gpumem_pool_t own = nullptr;
    gpumem_status_t st = gpumem_pool_create(&own, &props);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED)
        std::printf("-- gpumem's own pool: skipped (%s)\n", gpumem_last_error_message());
    else
        OK(st);
    if (own) {
        run("gpumem's own", own, true);
        OK(gpumem_pool_destroy(own));
    }
    gpumem_finalize();
    std::printf("%s\n", g_failures ? "FAIL" : "PASS");
    return g_failures ? 1 : 0;
}
