/*
 * batch_test: gpumem's batched copies, prefetches and discards on a real GPU.
 *
 *   1. With a CUDA 12.8+ driver the native path is used: batch_memops is
 *      GPUMEM_SUPPORT_NATIVE (CUDA 13 on an H100: cuMemcpyBatchAsync_v2).
 *   2. Stream order with kernels: a kernel writes device memory, one batch of
 *      1,000 small copies (64 B - 4 KiB) takes it to pinned memory, another to
 *      plain malloc memory, a third device to device, all on one gpumem stream;
 *      every byte is checked on the host.
 *   3. Host to device: a batch from pageable memory, then a kernel on the same
 *      stream checks what arrived (and counts mismatches on the device).
 *   4. Managed memory: a batched prefetch to the device, a kernel touching it,
 *      a batched prefetch back to the host, the values checked on the CPU; a
 *      batched discard, then the memory written again and read back.
 *   5. The default stream (which the driver's batch calls refuse): the same
 *      copies still work (gpumem makes one call per entry).
 *   6. A bad entry (past the end of an allocation) is refused with its index and
 *      nothing is copied.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (no CUDA device, or gpumem's backend
 * is not cuda).  Registered as test 'batch', suite 'gpu', with GPUMEM_BACKEND=cuda.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include "gpu_expect.h"
#include "gpu_test_start.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kEntries = 1000;
constexpr size_t kSlot = 4096; // each entry has its own 4 KiB slot


size_t entry_size(size_t i) { return size_t(64) << (i % 7); } // 64 B .. 4 KiB

unsigned char pattern(size_t slot, size_t i, unsigned salt) { return (unsigned char)(slot * 31u + i * 7u + salt); }

__global__ void write_pattern(unsigned char *p, size_t bytes, unsigned salt)
{
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += size_t(gridDim.x) * blockDim.x)
        p[i] = (unsigned char)((i / kSlot) * 31u + (i % kSlot) * 7u + salt);
}

// Counts the bytes of each entry's slot prefix that differ from the pattern.
__global__ void count_mismatches(const unsigned char *p, size_t entries, unsigned salt, unsigned long long *bad)
{
    for (size_t e = blockIdx.x; e < entries; e += gridDim.x) {
        const size_t n = size_t(64) << (e % 7);
        for (size_t i = threadIdx.x; i < n; i += blockDim.x)
            if (p[e * kSlot + i] != (unsigned char)(e * 31u + i * 7u + salt))
                atomicAdd(bad, 1ull);
    }
}

__global__ void add_one(unsigned char *p, size_t bytes)
{
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += size_t(gridDim.x) * blockDim.x)
        p[i] = (unsigned char)(p[i] + 1);
}

// The slot prefixes of `host` hold the pattern with `salt`; the rest of each slot `untouched`.
size_t verify_slots(const unsigned char *host, unsigned salt, unsigned char untouched)
{
    size_t bad = 0;
    for (size_t e = 0; e < kEntries; ++e)
        for (size_t i = 0; i < kSlot; ++i) {
            const unsigned char want = i < entry_size(e) ? pattern(e, i, salt) : untouched;
            bad += host[e * kSlot + i] != want;
        }
    return bad;
}

void batch_between(void *dst, const void *src, gpumem_stream_t stream)
{
    std::vector<void *> dsts(kEntries);
    std::vector<const void *> srcs(kEntries);
    std::vector<size_t> sizes(kEntries);
    for (size_t e = 0; e < kEntries; ++e) {
        dsts[e] = static_cast<char *>(dst) + e * kSlot;
        srcs[e] = static_cast<const char *>(src) + e * kSlot;
        sizes[e] = entry_size(e);
    }
    OK(gpumem_memcpy_batch_async(dsts.data(), srcs.data(), sizes.data(), kEntries, stream));
}

void copies_with_kernels(gpumem_stream_t stream, const char *name)
{
    std::printf("copies on %s\n", name);
    cudaStream_t native = static_cast<cudaStream_t>(gpumem_stream_native(stream));
    const size_t bytes = kEntries * kSlot;
    void *dev = nullptr, *dev2 = nullptr, *pinned = nullptr;
    OK(gpumem_malloc(&dev, bytes));
    OK(gpumem_malloc(&dev2, bytes));
    OK(gpumem_host_alloc(&pinned, bytes, 0));
    unsigned char *plain = static_cast<unsigned char *>(std::malloc(bytes));
    unsigned long long *bad = nullptr;
    OK(gpumem_malloc(reinterpret_cast<void **>(&bad), sizeof *bad));
    if (!dev || !dev2 || !pinned || !plain || !bad) {
        EXPECT(false, "allocation failed");
        return;
    }
    std::memset(pinned, 0xEE, bytes);
    std::memset(plain, 0xEE, bytes);
    OK(gpumem_memset_async(dev2, 0, bytes, stream));

    // Kernel -> batch (device to pinned, device to plain, device to device), in stream order.
    write_pattern<<<256, 256, 0, native>>>(static_cast<unsigned char *>(dev), bytes, 1);
    EXPECT(cudaGetLastError() == cudaSuccess, "launch");
    batch_between(pinned, dev, stream);
    batch_between(plain, dev, stream);
    batch_between(dev2, dev, stream);
    // The next kernel overwrites dev: the batches above must have read it first.
    write_pattern<<<256, 256, 0, native>>>(static_cast<unsigned char *>(dev), bytes, 2);
    OK(gpumem_memset_async(bad, 0, sizeof *bad, stream));
    count_mismatches<<<256, 256, 0, native>>>(static_cast<const unsigned char *>(dev2), kEntries, 1, bad);
    OK(gpumem_stream_synchronize(stream));
    EXPECT(verify_slots(static_cast<unsigned char *>(pinned), 1, 0xEE) == 0, "device to pinned (%s)", name);
    EXPECT(verify_slots(plain, 1, 0xEE) == 0, "device to malloc memory (%s)", name);
    unsigned long long mismatches = ~0ull;
    OK(gpumem_memcpy(&mismatches, bad, sizeof mismatches));
    EXPECT(mismatches == 0, "device to device: %llu bytes differ (%s)", mismatches, name);

    // Pageable host memory to the device, then a kernel on the same stream checks it.
    for (size_t e = 0; e < kEntries; ++e)
        for (size_t i = 0; i < kSlot; ++i)
            plain[e * kSlot + i] = pattern(e, i, 3);
    batch_between(dev2, plain, stream);
    OK(gpumem_memset_async(bad, 0, sizeof *bad, stream));
    count_mismatches<<<256, 256, 0, native>>>(static_cast<const unsigned char *>(dev2), kEntries, 3, bad);
    OK(gpumem_stream_synchronize(stream));
    OK(gpumem_memcpy(&mismatches, bad, sizeof mismatches));
    EXPECT(mismatches == 0, "malloc memory to device: %llu bytes differ (%s)", mismatches, name);

    // A bad entry (past the end of dev): refused with its index, nothing copied.
    std::memset(pinned, 0xEE, bytes);
    void *dsts[3] = {pinned, static_cast<char *>(pinned) + kSlot, static_cast<char *>(pinned) + 2 * kSlot};
    const void *srcs[3] = {dev, static_cast<char *>(dev) + kSlot, static_cast<char *>(dev) + bytes - 16};
    size_t sizes[3] = {64, 64, 64};
    gpumem_status_t st = gpumem_memcpy_batch_async(dsts, srcs, sizes, 3, stream);
    EXPECT(st == GPUMEM_ERROR_INVALID_VALUE && std::strstr(gpumem_last_error_message(), "entry 2"),
           "a bad entry: %s (%s)", gpumem_status_string(st), gpumem_last_error_message());
    OK(gpumem_stream_synchronize(stream));
    EXPECT(static_cast<unsigned char *>(pinned)[0] == 0xEE && static_cast<unsigned char *>(pinned)[kSlot] == 0xEE,
           "a refused batch copied (%s)", name);

    OK(gpumem_free(bad));
    OK(gpumem_free(dev));
    OK(gpumem_free(dev2));
    OK(gpumem_host_free(pinned));
    std::free(plain);
}

void managed_batches(gpumem_stream_t stream, const gpumem_device_info_t &info)
{
    if (info.managed_memory == GPUMEM_SUPPORT_NONE) {
        std::printf("managed memory: not supported here, skipped\n");
        return;
    }
    std::printf("managed memory (%s)\n", info.managed_memory == GPUMEM_SUPPORT_NATIVE ? "native" : "emulated");
    cudaStream_t native = static_cast<cudaStream_t>(gpumem_stream_native(stream));
    const size_t part = 1 << 20, parts = 8;
    unsigned char *m = nullptr;
    OK(gpumem_managed_alloc(reinterpret_cast<void **>(&m), part * parts, 0));
    if (!m)
        return;
    std::memset(m, 5, part * parts);
    const void *ptrs[parts];
    size_t sizes[parts];
    int32_t to_device[parts], to_host[parts];
    for (size_t k = 0; k < parts; ++k) {
        ptrs[k] = m + k * part;
        sizes[k] = part;
        to_device[k] = 0;
        to_host[k] = GPUMEM_DEVICE_HOST;
    }
    OK(gpumem_prefetch_batch_async(ptrs, sizes, parts, to_device, stream));
    add_one<<<256, 256, 0, native>>>(m, part * parts);
    OK(gpumem_prefetch_batch_async(ptrs, sizes, parts, to_host, stream));
    OK(gpumem_stream_synchronize(stream));
    size_t bad = 0;
    for (size_t i = 0; i < part * parts; ++i)
        bad += m[i] != 6;
    EXPECT(bad == 0, "managed memory after prefetch, kernel, prefetch: %zu bytes differ", bad);
    int32_t where = 12345;
    OK(gpumem_range_get_attribute(&where, sizeof where, GPUMEM_RANGE_LAST_PREFETCH_LOCATION, m, part * parts));
    EXPECT(where == GPUMEM_DEVICE_HOST, "last prefetch location %d", (int)where);

    // Discard half of it: the contents are undefined, the memory stays usable.
    void *discard[parts / 2];
    for (size_t k = 0; k < parts / 2; ++k)
        discard[k] = m + 2 * k * part;
    OK(gpumem_discard_batch_async(discard, sizes, parts / 2, stream));
    add_one<<<256, 256, 0, native>>>(m + part, part); // an untouched range stays exact
    OK(gpumem_stream_synchronize(stream));
    bad = 0;
    for (size_t i = 0; i < part; ++i)
        bad += m[part + i] != 7;
    EXPECT(bad == 0, "a range next to discarded ones changed: %zu bytes", bad);
    std::memset(m, 9, part * parts);
    add_one<<<256, 256, 0, native>>>(m, part * parts);
    OK(gpumem_stream_synchronize(stream));
    bad = 0;
    for (size_t i = 0; i < part * parts; ++i)
        bad += m[i] != 10;
    EXPECT(bad == 0, "discarded memory written again: %zu bytes differ", bad);
    OK(gpumem_free(m));
}

} // namespace

int main()
{
    if (int rc = gpu_test_start())
        return rc;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    OK(gpumem_device_get_info(0, &info));
    int driver = 0;
    cudaDriverGetVersion(&driver);
    std::printf("device 0: %s, driver %d, batch_memops %s\n", info.name, driver,
                info.batch_memops == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : "EMULATED");
    // cuMemcpyBatchAsync exists from CUDA 12.8: gpumem's cuda backend must use it there.  (The
    // hip backend answers for the HIP runtime it loaded, which may lack hipMemcpyBatchAsync.)
    int32_t backend = GPUMEM_BACKEND_CUDA;
    OK(gpumem_get_backend(&backend));
    if (backend == GPUMEM_BACKEND_CUDA && driver >= 12080)
        EXPECT(info.batch_memops == GPUMEM_SUPPORT_NATIVE, "driver %d has cuMemcpyBatchAsync but batch_memops is %d",
               driver, (int)info.batch_memops);

    gpumem_stream_t stream = nullptr;
    OK(gpumem_stream_create(&stream));
    copies_with_kernels(stream, "a gpumem stream (native batches)");
    copies_with_kernels(nullptr, "the default stream (one call per entry)");
    managed_batches(stream, info);
    OK(gpumem_stream_destroy(stream));
    OK(gpumem_finalize());
    std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
