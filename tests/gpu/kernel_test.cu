/*
 * kernel_test: a CUDA kernel reads and writes memory of every kind gpumem
 * makes, on every kind of stream gpumem hands out or wraps.
 *
 * Kinds: device (gpumem_malloc), mapped pinned host memory (host_alloc MAPPED
 * + host_get_device_pointer), managed memory (prefetched to the device;
 * emulated by mapped pinned memory under GPUMEM_DISABLE=managed), stream-ordered
 * memory from the current pool, from a created pool and from a pool of
 * gpumem's own allocator (GPUMEM_POOL_BUILTIN), a VMM range (mem_create +
 * address_reserve + map + set_access), and a growable buffer after growing.
 *
 * Streams: the default stream (NULL), a gpumem stream (its native handle from
 * gpumem_stream_native) and a runtime stream from cudaStreamCreate wrapped
 * with gpumem_stream_wrap.
 *
 * Each case fills the memory with a pattern, runs `touch` (p[i] = p[i]*3 + i +
 * salt, so every element is read and written), synchronises through gpumem and
 * checks every element on the host: through gpumem_memcpy for device kinds,
 * directly for host-visible ones.  A kind whose support level is NONE (under
 * GPUMEM_FALLBACK=deny) must answer NOT_SUPPORTED; it is then skipped with a
 * note.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (no CUDA device, or gpumem's
 * backend is not cuda).  Registered as test 'kernel', suite 'gpu', with
 * GPUMEM_BACKEND=cuda.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda_runtime.h>

#include <gpumem/gpumem.h>

#include "gpu_test_start.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kElems = size_t(1) << 20; // 4 MiB of uint32_t
constexpr size_t kBytes = kElems * sizeof(uint32_t);

int g_failures;
int g_passed;
int g_skipped;
int32_t g_device;
gpumem_device_info_t g_info = GPUMEM_DEVICE_INFO_INIT;

__global__ void touch(uint32_t *p, size_t n, uint32_t salt)
{
    size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = p[i] * 3u + uint32_t(i) + salt;
}

uint32_t initial(size_t i, uint32_t seed)
{
    return uint32_t(i) * 2654435761u ^ seed;
}

uint32_t expected(size_t i, uint32_t seed, uint32_t salt)
{
    return initial(i, seed) * 3u + uint32_t(i) + salt;
}

void fill(uint32_t *h, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        h[i] = initial(i, seed);
}

const char *level_name(int32_t level)
{
    return level == GPUMEM_SUPPORT_NATIVE ? "NATIVE" : level == GPUMEM_SUPPORT_EMULATED ? "EMULATED" : "NONE";
}

// One test case: the kind and stream it runs on.  Failures are counted and
// printed; the case continues where that is safe.
struct Case {
    const char *kind;
    const char *stream;
    int failures = 0;

    void fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        char buf[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        fprintf(stderr, "FAIL %s / %s: %s\n", kind, stream, buf);
        failures++;
    }
    // A gpumem call that must succeed.
    bool ok(gpumem_status_t st, const char *what)
    {
        if (st == GPUMEM_SUCCESS)
            return true;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
        fail("%s: %s: %s", what, gpumem_status_string(st), msg);
        return false;
    }
    bool cuda_ok(cudaError_t e, const char *what)
    {
        if (e == cudaSuccess)
            return true;
        fail("%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
        return false;
    }
    // Every element as the kernel must have left it.
    void check(const uint32_t *h, size_t n, uint32_t seed, uint32_t salt)
    {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            if (h[i] != expected(i, seed, salt)) {
                if (bad++ == 0)
                    first = i;
            }
        }
        if (bad)
            fail("%zu of %zu elements wrong; first at [%zu]: got 0x%08" PRIx32 ", want 0x%08" PRIx32, bad, n, first,
                 h[first], expected(first, seed, salt));
    }
    void check_kind(const void *p, int32_t kind, int32_t emulated)
    {
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        if (!ok(gpumem_pointer_get_info(p, &pi), "gpumem_pointer_get_info"))
            return;
        if (pi.kind != kind)
            fail("pointer info kind %d, want %d", pi.kind, kind);
        if (emulated >= 0 && pi.emulated != emulated)
            fail("pointer info emulated %d, want %d", pi.emulated, emulated);
    }
    // Feature level NONE: the call must be NOT_SUPPORTED; returns true when it was.
    bool expect_not_supported(gpumem_status_t st, const char *what)
    {
        if (st == GPUMEM_ERROR_NOT_SUPPORTED)
            return true;
        fail("%s: %s, want GPUMEM_ERROR_NOT_SUPPORTED (support level NONE)", what, gpumem_status_string(st));
        return false;
    }
};

struct Stream {
    const char *name;
    gpumem_stream_t gs;  // what gpumem calls take
    cudaStream_t cs;     // what the kernel launches on
};

bool launch(Case &c, const Stream &s, void *p, size_t n, uint32_t salt)
{
    touch<<<256, 256, 0, s.cs>>>(static_cast<uint32_t *>(p), n, salt);
    return c.cuda_ok(cudaGetLastError(), "kernel launch");
}

// The stream's work is done: through gpumem, then the runtime must agree
// (and report any fault of the kernel).
bool sync(Case &c, const Stream &s)
{
    bool a = c.ok(gpumem_stream_synchronize(s.gs), "gpumem_stream_synchronize");
    bool b = c.cuda_ok(cudaStreamSynchronize(s.cs), "cudaStreamSynchronize");
    return a && b;
}

void finish(Case &c, const char *note = nullptr)
{
    if (c.failures) {
        g_failures++;
        printf("FAIL  %-28s %s\n", c.kind, c.stream);
    } else if (note) {
        g_skipped++;
        printf("skip  %-28s %s: %s\n", c.kind, c.stream, note);
    } else {
        g_passed++;
        printf("ok    %-28s %s\n", c.kind, c.stream);
    }
    fflush(stdout);
}

// ------------------------------------------------------------------------
// The kinds
// ------------------------------------------------------------------------

void case_device(const Stream &s, uint32_t salt)
{
    Case c{"device", s.name};
    std::vector<uint32_t> h(kElems);
    fill(h.data(), kElems, salt);
    void *d = nullptr;
    if (c.ok(gpumem_malloc(&d, kBytes), "gpumem_malloc")) {
        c.check_kind(d, GPUMEM_KIND_DEVICE, 0);
        if (c.ok(gpumem_memcpy(d, h.data(), kBytes), "gpumem_memcpy H2D") && launch(c, s, d, kElems, salt) &&
            sync(c, s)) {
            std::vector<uint32_t> back(kElems);
            if (c.ok(gpumem_memcpy(back.data(), d, kBytes), "gpumem_memcpy D2H"))
                c.check(back.data(), kElems, salt, salt);
        }
        c.ok(gpumem_free(d), "gpumem_free");
    }
    finish(c);
}

void case_pinned_mapped(const Stream &s, uint32_t salt)
{
    Case c{"pinned mapped host", s.name};
    void *h = nullptr, *d = nullptr;
    if (c.ok(gpumem_host_alloc(&h, kBytes, GPUMEM_HOST_MAPPED), "gpumem_host_alloc(MAPPED)")) {
        c.check_kind(h, GPUMEM_KIND_HOST_PINNED, 0);
        fill(static_cast<uint32_t *>(h), kElems, salt);
        if (c.ok(gpumem_host_get_device_pointer(&d, h), "gpumem_host_get_device_pointer") &&
            launch(c, s, d, kElems, salt) && sync(c, s))
            c.check(static_cast<const uint32_t *>(h), kElems, salt, salt);
        c.ok(gpumem_host_free(h), "gpumem_host_free");
    }
    finish(c);
}

void case_managed(const Stream &s, uint32_t salt)
{
    int32_t level = g_info.managed_memory;
    Case c{level == GPUMEM_SUPPORT_EMULATED ? "managed (emulated)" : "managed", s.name};
    void *p = nullptr;
    gpumem_status_t st = gpumem_managed_alloc(&p, kBytes, GPUMEM_ATTACH_GLOBAL);
    if (level == GPUMEM_SUPPORT_NONE) {
        c.expect_not_supported(st, "gpumem_managed_alloc");
        if (st == GPUMEM_SUCCESS)
            gpumem_free(p);
        finish(c, "managed memory NONE: NOT_SUPPORTED as expected");
        return;
    }
    if (c.ok(st, "gpumem_managed_alloc")) {
        c.check_kind(p, GPUMEM_KIND_MANAGED, level == GPUMEM_SUPPORT_EMULATED ? 1 : 0);
        fill(static_cast<uint32_t *>(p), kElems, salt); // written on the host
        if (c.ok(gpumem_prefetch_async(p, kBytes, g_device, s.gs), "gpumem_prefetch_async(device)") &&
            launch(c, s, p, kElems, salt) &&
            c.ok(gpumem_prefetch_async(p, kBytes, GPUMEM_DEVICE_HOST, s.gs), "gpumem_prefetch_async(host)") &&
            sync(c, s))
            c.check(static_cast<const uint32_t *>(p), kElems, salt, salt); // read on the host
        c.ok(gpumem_free(p), "gpumem_free(managed)");
    }
    finish(c);
}

// Stream-ordered memory: fill, kernel, read back and free all in stream order,
// then one synchronisation.  pool NULL: the device's current pool.
void stream_ordered(Case &c, const Stream &s, gpumem_pool_t pool, uint32_t salt, gpumem_status_t *alloc_status)
{
    std::vector<uint32_t> h(kElems), back(kElems);
    fill(h.data(), kElems, salt);
    void *d = nullptr;
    gpumem_status_t st = pool ? gpumem_malloc_from_pool_async(&d, kBytes, pool, s.gs)
                              : gpumem_malloc_async(&d, kBytes, s.gs);
    *alloc_status = st;
    if (st == GPUMEM_ERROR_NOT_SUPPORTED && g_info.memory_pools == GPUMEM_SUPPORT_NONE)
        return;
    if (!c.ok(st, pool ? "gpumem_malloc_from_pool_async" : "gpumem_malloc_async"))
        return;
    c.check_kind(d, GPUMEM_KIND_STREAM_ORDERED, -1);
    bool ran = c.ok(gpumem_memcpy_async(d, h.data(), kBytes, s.gs), "gpumem_memcpy_async H2D") &&
               launch(c, s, d, kElems, salt) &&
               c.ok(gpumem_memcpy_async(back.data(), d, kBytes, s.gs), "gpumem_memcpy_async D2H");
    c.ok(gpumem_free_async(d, s.gs), "gpumem_free_async");
    if (sync(c, s) && ran)
        c.check(back.data(), kElems, salt, salt);
}

void case_async_current_pool(const Stream &s, uint32_t salt)
{
    Case c{"stream-ordered (current pool)", s.name};
    gpumem_status_t st;
    stream_ordered(c, s, nullptr, salt, &st);
    if (g_info.memory_pools == GPUMEM_SUPPORT_NONE) {
        c.expect_not_supported(st, "gpumem_malloc_async");
        finish(c, "memory pools NONE: NOT_SUPPORTED as expected");
        return;
    }
    finish(c);
}

void case_async_created_pool(const Stream &s, uint32_t salt, int32_t implementation)
{
    Case c{implementation == GPUMEM_POOL_BUILTIN ? "stream-ordered (BUILTIN pool)" : "stream-ordered (created pool)",
           s.name};
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = g_device;
    props.implementation = implementation;
    gpumem_pool_t pool = nullptr;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED && g_info.memory_pools == GPUMEM_SUPPORT_NONE) {
        finish(c, "memory pools NONE: pool_create NOT_SUPPORTED as expected");
        return;
    }
    if (!c.ok(st, "gpumem_pool_create")) {
        finish(c);
        return;
    }
    gpumem_status_t alloc_st;
    stream_ordered(c, s, pool, salt, &alloc_st);
    c.ok(gpumem_pool_destroy(pool), "gpumem_pool_destroy");
    if (g_info.memory_pools == GPUMEM_SUPPORT_NONE && alloc_st == GPUMEM_ERROR_NOT_SUPPORTED) {
        finish(c, "memory pools NONE: allocation NOT_SUPPORTED as expected");
        return;
    }
    finish(c);
}

void case_vmm(const Stream &s, uint32_t salt)
{
    Case c{"VMM range", s.name};
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = g_device;
    size_t gran = 0;
    gpumem_status_t st = gpumem_mem_get_granularity(&gran, &props, GPUMEM_GRANULARITY_MINIMUM);
    if (g_info.virtual_memory != GPUMEM_SUPPORT_NATIVE) {
        // The raw VMM calls have nothing to emulate them with: NOT_SUPPORTED
        // whenever the level is not NATIVE (docs/semantics.md).
        gpumem_mem_handle_t h = 0;
        if (st == GPUMEM_SUCCESS)
            c.fail("gpumem_mem_get_granularity: SUCCESS with virtual memory %s", level_name(g_info.virtual_memory));
        c.expect_not_supported(gpumem_mem_create(&h, size_t(2) << 20, &props), "gpumem_mem_create");
        char note[96];
        snprintf(note, sizeof note, "virtual memory %s: raw VMM NOT_SUPPORTED as expected",
                 level_name(g_info.virtual_memory));
        finish(c, note);
        return;
    }
    if (!c.ok(st, "gpumem_mem_get_granularity") || gran == 0) {
        finish(c);
        return;
    }
    size_t size = (kBytes + gran - 1) / gran * gran;
    gpumem_mem_handle_t handle = 0;
    void *va = nullptr;
    bool mapped = false;
    if (c.ok(gpumem_mem_create(&handle, size, &props), "gpumem_mem_create") &&
        c.ok(gpumem_mem_address_reserve(&va, size, 0, nullptr), "gpumem_mem_address_reserve") &&
        (mapped = c.ok(gpumem_mem_map(va, size, 0, handle), "gpumem_mem_map"))) {
        gpumem_access_desc_t access = {g_device, GPUMEM_ACCESS_READWRITE};
        if (c.ok(gpumem_mem_set_access(va, size, &access, 1), "gpumem_mem_set_access")) {
            c.check_kind(va, GPUMEM_KIND_VIRTUAL, 0);
            std::vector<uint32_t> h(kElems);
            fill(h.data(), kElems, salt);
            if (c.ok(gpumem_memcpy(va, h.data(), kBytes), "gpumem_memcpy H2D") && launch(c, s, va, kElems, salt) &&
                sync(c, s) && c.ok(gpumem_memcpy(h.data(), va, kBytes), "gpumem_memcpy D2H"))
                c.check(h.data(), kElems, salt, salt);
        }
    }
    if (mapped)
        c.ok(gpumem_mem_unmap(va, size), "gpumem_mem_unmap");
    if (handle)
        c.ok(gpumem_mem_release(handle), "gpumem_mem_release");
    if (va)
        c.ok(gpumem_mem_address_free(va, size), "gpumem_mem_address_free");
    finish(c);
}

void case_buffer(const Stream &s, uint32_t salt)
{
    int32_t level = g_info.virtual_memory;
    Case c{level == GPUMEM_SUPPORT_NATIVE ? "growable buffer" : "growable buffer (emulated)", s.name};
    gpumem_buffer_t b = nullptr;
    gpumem_status_t st = gpumem_buffer_create(&b, kBytes / 2, kBytes * 2, g_device);
    if (level == GPUMEM_SUPPORT_NONE) {
        c.expect_not_supported(st, "gpumem_buffer_create");
        if (st == GPUMEM_SUCCESS)
            gpumem_buffer_destroy(b);
        finish(c, "virtual memory NONE: buffers NOT_SUPPORTED as expected");
        return;
    }
    if (!c.ok(st, "gpumem_buffer_create")) {
        finish(c);
        return;
    }
    std::vector<uint32_t> h(kElems);
    fill(h.data(), kElems, salt);
    void *d = nullptr, *d2 = nullptr;
    size_t size = 0;
    // The first half goes in before growing and must survive it.
    if (c.ok(gpumem_buffer_data(b, &d), "gpumem_buffer_data") &&
        c.ok(gpumem_memcpy(d, h.data(), kBytes / 2), "gpumem_memcpy first half") &&
        c.ok(gpumem_buffer_resize(b, kBytes), "gpumem_buffer_resize") &&
        c.ok(gpumem_buffer_data(b, &d2), "gpumem_buffer_data after resize") &&
        c.ok(gpumem_buffer_size(b, &size), "gpumem_buffer_size")) {
        if (size != kBytes)
            c.fail("buffer size %zu after resize, want %zu", size, kBytes);
        if (level == GPUMEM_SUPPORT_NATIVE && d2 != d)
            c.fail("data moved from %p to %p with native VMM", d, d2);
        c.check_kind(d2, GPUMEM_KIND_BUFFER, level == GPUMEM_SUPPORT_NATIVE ? 0 : 1);
        char *second = static_cast<char *>(d2) + kBytes / 2;
        if (c.ok(gpumem_memcpy(second, h.data() + kElems / 2, kBytes / 2), "gpumem_memcpy second half") &&
            launch(c, s, d2, kElems, salt) && sync(c, s) &&
            c.ok(gpumem_memcpy(h.data(), d2, kBytes), "gpumem_memcpy D2H"))
            c.check(h.data(), kElems, salt, salt);
    }
    c.ok(gpumem_buffer_destroy(b), "gpumem_buffer_destroy");
    finish(c);
}

} // namespace

int main()
{
    if (int rc = gpu_test_start())
        return rc;
    gpumem_status_t st;
    cudaError_t e;
    if ((st = gpumem_set_device(0)) != GPUMEM_SUCCESS || (st = gpumem_get_device(&g_device)) != GPUMEM_SUCCESS ||
        (st = gpumem_device_get_info(g_device, &g_info)) != GPUMEM_SUCCESS) {
        fprintf(stderr, "FAIL: device 0: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        gpumem_finalize();
        return 1;
    }
    printf("device %d: %s (%s); managed %s, pools %s, virtual memory %s\n", g_device, g_info.name, g_info.arch_name,
           level_name(g_info.managed_memory), level_name(g_info.memory_pools), level_name(g_info.virtual_memory));
    const char *dis = getenv("GPUMEM_DISABLE"), *fb = getenv("GPUMEM_FALLBACK");
    printf("GPUMEM_DISABLE=%s GPUMEM_FALLBACK=%s\n", dis ? dis : "", fb ? fb : "");

    // The three kinds of stream.
    Stream streams[3] = {{"default stream", nullptr, nullptr},
                         {"gpumem stream", nullptr, nullptr},
                         {"wrapped cudaStream_t", nullptr, nullptr}};
    int nstreams = 1;
    if ((st = gpumem_stream_create(&streams[1].gs)) == GPUMEM_SUCCESS) {
        streams[1].cs = static_cast<cudaStream_t>(gpumem_stream_native(streams[1].gs));
        if (!streams[1].cs) {
            fprintf(stderr, "FAIL: gpumem_stream_native of a created stream is NULL\n");
            g_failures++;
            gpumem_stream_destroy(streams[1].gs);
        } else {
            nstreams = 2;
        }
    } else {
        fprintf(stderr, "FAIL: gpumem_stream_create: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        g_failures++;
    }
    cudaStream_t runtime_stream = nullptr;
    if ((e = cudaStreamCreate(&runtime_stream)) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaStreamCreate: %s\n", cudaGetErrorName(e));
        g_failures++;
    } else if ((st = gpumem_stream_wrap(runtime_stream, &streams[nstreams].gs)) != GPUMEM_SUCCESS) {
        fprintf(stderr, "FAIL: gpumem_stream_wrap: %s: %s\n", gpumem_status_string(st), gpumem_last_error_message());
        g_failures++;
    } else {
        streams[nstreams].name = "wrapped cudaStream_t";
        streams[nstreams].cs = runtime_stream;
        if (gpumem_stream_native(streams[nstreams].gs) != static_cast<void *>(runtime_stream)) {
            fprintf(stderr, "FAIL: gpumem_stream_native of a wrapped stream is not the stream wrapped\n");
            g_failures++;
        }
        nstreams++;
    }

    uint32_t salt = 0x1000;
    for (int i = 0; i < nstreams; i++) {
        const Stream &s = streams[i];
        case_device(s, ++salt);
        case_pinned_mapped(s, ++salt);
        case_managed(s, ++salt);
        case_async_current_pool(s, ++salt);
        case_async_created_pool(s, ++salt, GPUMEM_POOL_AUTO);
        case_async_created_pool(s, ++salt, GPUMEM_POOL_BUILTIN);
        case_vmm(s, ++salt);
        case_buffer(s, ++salt);
    }

    // Everything was freed: no live bytes of any kind remain.
    gpumem_stats_t stats = GPUMEM_STATS_INIT;
    if (gpumem_get_stats(&stats) == GPUMEM_SUCCESS) {
        for (int k = 0; k < GPUMEM_KIND_COUNT; k++) {
            if (stats.current_bytes[k] != 0) {
                fprintf(stderr, "FAIL: %" PRIu64 " bytes of kind %d still live after every case freed its memory\n",
                        stats.current_bytes[k], k);
                g_failures++;
            }
        }
    }

    for (int i = 1; i < nstreams; i++) {
        if ((st = gpumem_stream_destroy(streams[i].gs)) != GPUMEM_SUCCESS) {
            fprintf(stderr, "FAIL: gpumem_stream_destroy(%s): %s\n", streams[i].name, gpumem_status_string(st));
            g_failures++;
        }
    }
    // The wrapper is gone; the runtime stream is still the caller's.
    if (runtime_stream && (e = cudaStreamDestroy(runtime_stream)) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaStreamDestroy after unwrapping: %s\n", cudaGetErrorName(e));
        g_failures++;
    }
    gpumem_finalize();

    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failures, g_skipped);
    return g_failures ? 1 : 0;
}
