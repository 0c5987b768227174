// Out of memory under another process: a second process (this program with --hog) takes the
// device's memory but 2 GiB.  gpumem's allocations that cannot fit fail with OUT_OF_MEMORY and
// a message (nothing lost); one that fits once gpumem's pools give back what they hold unused
// succeeds; and once the other process frees, gpumem allocates again.
//
//   pressure_test            the test (device 0)
//   pressure_test --hog MIB  the other process: takes all but MIB, says "ready", frees at a line
//                            on stdin, says "freed", exits at end of input
#include "gpu_expect.h"
#include "gpu_test_start.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

static const size_t GiB = size_t(1) << 30;

static int hog(size_t leave_mib)
{
    if (cudaSetDevice(0) != cudaSuccess)
        return 1;
    std::vector<void *> taken;
    size_t free_bytes = 0, total = 0;
    for (size_t chunk = GiB; chunk >= (size_t(64) << 20);) {
        cudaMemGetInfo(&free_bytes, &total);
        if (free_bytes < (leave_mib << 20) + chunk) {
            chunk /= 2;
            continue;
        }
        void *p = nullptr;
        if (cudaMalloc(&p, chunk) != cudaSuccess) {
            cudaGetLastError();
            chunk /= 2;
            continue;
        }
        taken.push_back(p);
    }
    cudaMemGetInfo(&free_bytes, &total);
    std::printf("ready %zu\n", free_bytes);
    std::fflush(stdout);
    char line[64];
    if (!std::fgets(line, sizeof line, stdin))
        return 0;
    for (void *p : taken)
        cudaFree(p);
    std::printf("freed\n");
    std::fflush(stdout);
    while (std::fgets(line, sizeof line, stdin)) {
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && std::strcmp(argv[1], "--hog") == 0)
        return hog(std::strtoull(argv[2], nullptr, 10));
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (int rc = gpu_test_start())
        return rc;
    int32_t backend = 0;
    gpumem_get_backend(&backend);

    // gpumem's default pool keeps 8 GiB unused.
    gpumem_stream_t s = nullptr;
    OK(gpumem_stream_create(&s));
    gpumem_pool_t pool = nullptr;
    bool pool_holds = false;
    if (gpumem_device_get_default_pool(&pool, 0) == GPUMEM_SUCCESS) {
        uint64_t keep_all = UINT64_MAX;
        OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep_all));
        void *b = nullptr;
        if (gpumem_malloc_async(&b, 8 * GiB, s) == GPUMEM_SUCCESS) {
            OK(gpumem_free_async(b, s));
            OK(gpumem_stream_synchronize(s));
            pool_holds = true;
        }
    }

    // The other process.
    int to_hog[2], from_hog[2];
    if (pipe(to_hog) != 0 || pipe(from_hog) != 0)
        return 1;
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(to_hog[0], 0);
        dup2(from_hog[1], 1);
        close(to_hog[1]);
        close(from_hog[0]);
        execl("/proc/self/exe", argv[0], "--hog", "2048", static_cast<char *>(nullptr));
        _exit(127);
    }
    close(to_hog[0]);
    close(from_hog[1]);
    FILE *hog_out = fdopen(from_hog[0], "r");
    char line[128] = "";
    EXPECT(hog_out && std::fgets(line, sizeof line, hog_out) && std::strncmp(line, "ready", 5) == 0,
           "the other process did not take the memory: '%s'", line);
    size_t free_bytes = 0, total = 0;
    OK(gpumem_mem_get_info(&free_bytes, &total));
    std::printf("the other process holds the device: %zu MiB of %zu MiB free\n", free_bytes >> 20, total >> 20);

    // What fits once gpumem's pool gives back what it holds unused.
    void *p = nullptr;
    if (pool_holds) {
        gpumem_status_t st = gpumem_malloc(&p, 6 * GiB);
        EXPECT(st == GPUMEM_SUCCESS, "6 GiB with 8 GiB unused in gpumem's pool: %s: %s", gpumem_status_string(st),
               gpumem_last_error_message());
        uint64_t reserved = 0;
        OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
        std::printf("pool reserved after the retry: %llu MiB\n", (unsigned long long)(reserved >> 20));
    }
    // What cannot fit: OUT_OF_MEMORY with the state of memory, nothing lost.
    void *q = nullptr;
    gpumem_status_t st = gpumem_malloc(&q, 20 * GiB);
    EXPECT(st == GPUMEM_ERROR_OUT_OF_MEMORY && q == nullptr, "20 GiB: %s", gpumem_status_string(st));
    EXPECT(std::strstr(gpumem_last_error_message(), "free") != nullptr, "the message: %s",
           gpumem_last_error_message());
    std::printf("OUT_OF_MEMORY says: %s\n", gpumem_last_error_message());
    st = gpumem_malloc_async(&q, 20 * GiB, s);
    EXPECT(st == GPUMEM_ERROR_OUT_OF_MEMORY || st == GPUMEM_ERROR_NOT_SUPPORTED, "20 GiB stream-ordered: %s",
           gpumem_status_string(st));
    if (p) {
        OK(gpumem_memset(p, 1, 1 << 20));
        OK(gpumem_free(p));
    }

    // The other process frees: gpumem allocates again.
    EXPECT(write(to_hog[1], "free\n", 5) == 5, "write");
    EXPECT(hog_out && std::fgets(line, sizeof line, hog_out) && std::strncmp(line, "freed", 5) == 0,
           "the other process did not free: '%s'", line);
    OK(gpumem_malloc(&q, 20 * GiB));
    if (q) {
        OK(gpumem_memset(q, 2, 1 << 20));
        OK(gpumem_free(q));
    }
    close(to_hog[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process ended with status 0x%x", status);
    if (hog_out)
        std::fclose(hog_out);
    uint64_t zero = 0;
    if (pool)
        OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero));
    OK(gpumem_stream_destroy(s));
    gpumem_finalize();
    std::printf("%s (%s backend)\n", g_failures ? "FAIL" : "PASS", gpumem_backend_name(backend));
    return g_failures ? 1 : 0;
}
