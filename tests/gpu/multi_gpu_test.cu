/*
 * multi_gpu_test: kernels on device 1 reading and writing memory of device 0.
 *
 *   pool   a pool created on device 0, gpumem_pool_set_access for device 1
 *   vmm    a VMM range mapped on device 0, gpumem_mem_set_access for both devices
 *   peer   plain gpumem_malloc memory of device 0, after gpumem_device_enable_peer_access(0)
 *          from device 1 (skipped where gpumem_device_can_access_peer says 0)
 *   copy   gpumem_memcpy / _async between the devices, both directions, checked
 *   ipc    (--ipc) a process on GPU 0 exports a pool and a pointer; a process on GPU 1 (this
 *          program again, exec'ed) imports both, runs a kernel on device 1 over the memory,
 *          and the exporter checks what it wrote
 *
 * Each kernel pass runs `touch` (p[i] = p[i]*3 + i + salt) on device 1 and the result is
 * checked through gpumem_memcpy with device 0 current.  Never calls cuMulticastCreate.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (fewer than two CUDA devices, or gpumem's backend
 * cannot give CUDA kernels its memory).  Registered as tests 'multi_gpu' and 'multi_gpu_ipc', suite 'gpu'.
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
#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

constexpr size_t kElems = size_t(1) << 20; // 4 MiB of uint32_t
constexpr size_t kBytes = kElems * sizeof(uint32_t);

int g_failures, g_passed, g_skipped;

__global__ void touch(uint32_t *p, size_t n, uint32_t salt)
{
    size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = p[i] * 3u + uint32_t(i) + salt;
}

uint32_t initial(size_t i, uint32_t seed) { return uint32_t(i) * 2654435761u ^ seed; }
uint32_t expected(size_t i, uint32_t seed, uint32_t salt) { return initial(i, seed) * 3u + uint32_t(i) + salt; }

void fail(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fail(const char *what, const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s: %s\n", what, buf);
    g_failures++;
}

bool gm_ok(const char *what, gpumem_status_t st, const char *call)
{
    if (st == GPUMEM_SUCCESS)
        return true;
    fail(what, "%s: %s: %s", call, gpumem_status_string(st), gpumem_last_error_message());
    return false;
}
#define GM(what, call) gm_ok(what, (call), #call)

bool cuda_ok(const char *what, cudaError_t e, const char *call)
{
    if (e == cudaSuccess)
        return true;
    fail(what, "%s: %s: %s", call, cudaGetErrorName(e), cudaGetErrorString(e));
    return false;
}
#define CUDA(what, call) cuda_ok(what, (call), #call)

// Fill `p` (any device's memory) with the seed's pattern, through gpumem_memcpy.
bool upload(const char *what, void *p, uint32_t seed)
{
    std::vector<uint32_t> h(kElems);
    for (size_t i = 0; i < kElems; i++)
        h[i] = initial(i, seed);
    return GM(what, gpumem_memcpy(p, h.data(), kBytes));
}

// Check that `p` holds what `touch` makes of the seed's pattern, reading it with device 0 current.
void verify(const char *what, const void *p, uint32_t seed, uint32_t salt)
{
    std::vector<uint32_t> h(kElems);
    if (!GM(what, gpumem_set_device(0)) || !GM(what, gpumem_memcpy(h.data(), p, kBytes)))
        return;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < kElems; i++)
        if (h[i] != expected(i, seed, salt) && bad++ == 0)
            first = i;
    if (bad)
        fail(what, "%zu of %zu elements wrong; first at [%zu]: got 0x%08" PRIx32 ", want 0x%08" PRIx32, bad, kElems,
             first, h[first], expected(first, seed, salt));
}

// Run `touch` over `p` on device 1 (the CUDA runtime's current device too) and wait.
bool touch_on_device1(const char *what, void *p, uint32_t salt)
{
    if (!GM(what, gpumem_set_device(1)) || !CUDA(what, cudaSetDevice(1)))
        return false;
    gpumem_stream_t s = nullptr;
    if (!GM(what, gpumem_stream_create(&s)))
        return false;
    touch<<<256, 256, 0, static_cast<cudaStream_t>(gpumem_stream_native(s))>>>(static_cast<uint32_t *>(p), kElems,
                                                                               salt);
    bool ok = CUDA(what, cudaGetLastError()) && GM(what, gpumem_stream_synchronize(s));
    GM(what, gpumem_stream_destroy(s));
    return ok;
}

void report(const char *what, int failures_before)
{
    if (g_failures == failures_before) {
        printf("PASS %s\n", what);
        g_passed++;
    }
}

void skip(const char *what, const char *why)
{
    printf("SKIP %s: %s\n", what, why);
    g_skipped++;
}

void case_pool()
{
    const char *what = "pool of device 0, kernel on device 1";
    int before = g_failures;
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 0;
    gpumem_pool_t pool = nullptr;
    void *p = nullptr;
    gpumem_access_desc_t desc = {1, GPUMEM_ACCESS_READWRITE};
    int32_t flags = -1;
    if (!GM(what, gpumem_set_device(0)) || !GM(what, gpumem_pool_create(&pool, &props)))
        return;
    if (GM(what, gpumem_pool_set_access(pool, &desc, 1)) && GM(what, gpumem_pool_get_access(&flags, pool, 1))) {
        if (flags != GPUMEM_ACCESS_READWRITE)
            fail(what, "gpumem_pool_get_access(device 1) = %d after set_access", flags);
        if (GM(what, gpumem_malloc_from_pool_async(&p, kBytes, pool, nullptr)) && upload(what, p, 1) &&
            touch_on_device1(what, p, 7))
            verify(what, p, 1, 7);
    }
    gpumem_set_device(0);
    if (p)
        GM(what, gpumem_free(p));
    GM(what, gpumem_pool_destroy(pool));
    report(what, before);
}

void case_vmm()
{
    const char *what = "VMM range of device 0, kernel on device 1";
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    if (!GM(what, gpumem_device_get_info(0, &info)))
        return;
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        return skip(what, "VMM is not native on device 0");
    int before = g_failures;
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = 0;
    size_t g = 0;
    if (!GM(what, gpumem_set_device(0)) ||
        !GM(what, gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_RECOMMENDED)) || g == 0)
        return;
    const size_t size = (kBytes + g - 1) / g * g;
    gpumem_mem_handle_t h = 0;
    void *va = nullptr;
    bool mapped = false;
    gpumem_access_desc_t both[2] = {{0, GPUMEM_ACCESS_READWRITE}, {1, GPUMEM_ACCESS_READWRITE}};
    if (GM(what, gpumem_mem_create(&h, size, &props)) && GM(what, gpumem_mem_address_reserve(&va, size, 0, nullptr)) &&
        (mapped = GM(what, gpumem_mem_map(va, size, 0, h))) && GM(what, gpumem_mem_set_access(va, size, both, 2)) &&
        upload(what, va, 2) && touch_on_device1(what, va, 9))
        verify(what, va, 2, 9);
    gpumem_set_device(0);
    if (mapped)
        GM(what, gpumem_mem_unmap(va, size));
    if (va)
        GM(what, gpumem_mem_address_free(va, size));
    if (h)
        GM(what, gpumem_mem_release(h));
    report(what, before);
}

void case_peer()
{
    const char *what = "gpumem_malloc of device 0 with peer access, kernel on device 1";
    int32_t can = 0;
    if (!GM(what, gpumem_device_can_access_peer(&can, 1, 0)))
        return;
    if (!can)
        return skip(what, "gpumem_device_can_access_peer(1, 0) is 0");
    int before = g_failures;
    void *p = nullptr;
    if (GM(what, gpumem_set_device(0)) && GM(what, gpumem_malloc(&p, kBytes)) && upload(what, p, 3) &&
        GM(what, gpumem_set_device(1)) && GM(what, gpumem_device_enable_peer_access(0)) &&
        GM(what, gpumem_device_enable_peer_access(0)) /* idempotent */ && touch_on_device1(what, p, 11)) {
        verify(what, p, 3, 11);
        GM(what, gpumem_set_device(1));
        GM(what, gpumem_device_disable_peer_access(0));
    }
    gpumem_set_device(0);
    if (p)
        GM(what, gpumem_free(p));
    report(what, before);
}

void case_copy()
{
    const char *what = "gpumem_memcpy between devices";
    int before = g_failures;
    void *a = nullptr, *b = nullptr;
    std::vector<uint32_t> h(kElems);
    if (GM(what, gpumem_set_device(0)) && GM(what, gpumem_malloc(&a, kBytes)) && GM(what, gpumem_set_device(1)) &&
        GM(what, gpumem_malloc(&b, kBytes))) {
        for (int32_t cur = 0; cur < 2; cur++) {
            GM(what, gpumem_set_device(cur));
            upload(what, a, 20u + uint32_t(cur));
            GM(what, gpumem_memset(b, 0, kBytes));
            GM(what, gpumem_memcpy(b, a, kBytes)); // 0 -> 1
            if (touch_on_device1(what, b, 0))      // salt 0: the copy's bytes, transformed on device 1
                verify(what, b, 20u + uint32_t(cur), 0);
            GM(what, gpumem_set_device(cur));
            gpumem_stream_t s = nullptr;
            GM(what, gpumem_stream_create(&s));
            GM(what, gpumem_memset_async(a, 0, kBytes, s));
            GM(what, gpumem_memcpy_async(a, b, kBytes, s)); // 1 -> 0
            GM(what, gpumem_stream_synchronize(s));
            GM(what, gpumem_stream_destroy(s));
            verify(what, a, 20u + uint32_t(cur), 0);
        }
    }
    gpumem_set_device(0);
    if (a)
        GM(what, gpumem_free(a));
    if (b)
        GM(what, gpumem_free(b));
    report(what, before);
}

// --- Two processes -------------------------------------------------------------------------

bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = static_cast<const char *>(buf);
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k <= 0)
            return false;
        p += k;
        n -= size_t(k);
    }
    return true;
}

bool read_all(int fd, void *buf, size_t n)
{
    char *p = static_cast<char *>(buf);
    while (n) {
        ssize_t k = read(fd, p, n);
        if (k <= 0)
            return false;
        p += k;
        n -= size_t(k);
    }
    return true;
}

// The importer, on GPU 1: pool fd and pointer data from `sock`; one byte back when done
// (1 ok, 0 failed).
int ipc_child(int sock)
{
    const char *what = "ipc importer on GPU 1";
    int fd = -1;
    gpumem_pool_ptr_export_data_t data;
    gpumem_pool_t pool = nullptr;
    void *p = nullptr;
    gpumem_access_desc_t desc = {1, GPUMEM_ACCESS_READWRITE};
    if (GM(what, gpumem_set_device(1)) && GM(what, gpumem_ipc_recv_fd(sock, &fd)) &&
        (read_all(sock, &data, sizeof data) || (fail(what, "reading the pointer's export data"), false)) &&
        GM(what, gpumem_pool_import_from_shareable_handle(&pool, fd, GPUMEM_HANDLE_POSIX_FD)) &&
        GM(what, gpumem_pool_set_access(pool, &desc, 1)) && GM(what, gpumem_pool_import_pointer(&p, pool, &data)) &&
        touch_on_device1(what, p, 13))
        printf("ipc importer: kernel on device 1 touched the exporter's pool memory at %p\n", p);
    if (fd >= 0)
        close(fd);
    if (p) {
        gpumem_set_device(1);
        GM(what, gpumem_free(p)); // the import's reference; the exporter's block stays
    }
    if (pool)
        GM(what, gpumem_pool_destroy(pool));
    char done = g_failures == 0 ? 1 : 0;
    write_all(sock, &done, 1);
    return g_failures == 0 ? 0 : 1;
}

void case_ipc(const char *self)
{
    const char *what = "ipc: a process on GPU 1 imports a pool and a pointer of a process on GPU 0";
    int before = g_failures;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    if (!GM(what, gpumem_device_get_info(0, &info)))
        return;
    if (!(info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD))
        return skip(what, "device 0's pools cannot be shared (pool_ipc_handle_types)");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return fail(what, "socketpair failed");
    // The importer is this program again, started fresh (a CUDA process's state does not
    // survive fork): fork, then exec at once.
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        std::string arg = std::to_string(sv[1]);
        execl(self, self, "--ipc-child", arg.c_str(), static_cast<char *>(nullptr));
        _exit(127);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return fail(what, "fork failed");
    }
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 0;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = nullptr;
    void *p = nullptr;
    int fd = -1;
    gpumem_pool_ptr_export_data_t data;
    char done = 0;
    if (GM(what, gpumem_set_device(0)) && GM(what, gpumem_pool_create(&pool, &props)) &&
        GM(what, gpumem_malloc_from_pool_async(&p, kBytes, pool, nullptr)) && upload(what, p, 4) &&
        GM(what, gpumem_stream_synchronize(nullptr)) &&
        GM(what, gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD)) &&
        GM(what, gpumem_pool_export_pointer(&data, p)) && GM(what, gpumem_ipc_send_fd(sv[0], fd)) &&
        (write_all(sv[0], &data, sizeof data) || (fail(what, "writing the export data"), false))) {
        if (!read_all(sv[0], &done, 1) || !done)
            fail(what, "the importer on GPU 1 failed (its output above)");
        else
            verify(what, p, 4, 13); // what the kernel on device 1 wrote, read on device 0
    }
    close(sv[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail(what, "the importer exited with status 0x%x", status);
    if (fd >= 0)
        close(fd);
    gpumem_set_device(0);
    if (p)
        GM(what, gpumem_free(p));
    if (pool)
        GM(what, gpumem_pool_destroy(pool));
    report(what, before);
}

} // namespace

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    bool ipc = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ipc-child") == 0 && i + 1 < argc)
            // The parent's backend: the child inherits its GPUMEM_BACKEND.
            return gpumem_init(GPUMEM_BACKEND_AUTO) == GPUMEM_SUCCESS ? ipc_child(atoi(argv[i + 1])) : 1;
        if (strcmp(argv[i], "--ipc") == 0)
            ipc = true;
    }
    int cuda_devices = 0;
    if (cudaGetDeviceCount(&cuda_devices) != cudaSuccess || cuda_devices < 2) {
        printf("SKIP: %d CUDA device(s): this test needs two\n", cuda_devices);
        return 77;
    }
    int32_t backend = -1, count = 0;
    if (gpumem_init(GPUMEM_BACKEND_AUTO) != GPUMEM_SUCCESS || gpumem_get_backend(&backend) != GPUMEM_SUCCESS ||
        !gpu_backend_reaches_cuda(backend) || gpumem_device_count(&count) != GPUMEM_SUCCESS || count < 2) {
        printf("SKIP: gpumem is not on a backend whose memory CUDA kernels reach, with two devices (%s)\n",
               gpumem_last_error_message());
        return 77;
    }
    for (int32_t d = 0; d < 2; d++) {
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        if (gpumem_device_get_info(d, &info) == GPUMEM_SUCCESS)
            printf("device %d: %s, %.1f GiB\n", d, info.name, double(info.total_memory) / double(1u << 30));
    }
    int32_t c01 = 0, c10 = 0;
    gpumem_device_can_access_peer(&c01, 0, 1);
    gpumem_device_can_access_peer(&c10, 1, 0);
    printf("peer access possible: 0->1 %d, 1->0 %d\n", c01, c10);
    if (ipc) {
        case_ipc(argv[0]);
    } else {
        case_pool();
        case_vmm();
        case_peer();
        case_copy();
    }
    gpumem_finalize();
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failures, g_skipped);
    if (g_failures)
        return 1;
    return g_passed ? 0 : 77;
}
