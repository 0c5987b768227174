// gpumem_pluggable_malloc_or_throw, the hook gpumem.use_torch_allocator() gives PyTorch: a
// failure throws (a std::bad_alloc whose text is gpumem's message), never returns NULL.
// Called through a std::function, as PyTorch's CUDAPluggableAllocator calls it.
//
//   1. an allocation under GPUMEM_LIMIT succeeds, and is freed with gpumem_pluggable_free;
//   2. one over the limit throws; the text begins "<vendor> out of memory." and ends with the
//      verdict (naming GPUMEM_LIMIT), and gpumem_last_oom_report has the same verdict;
//   3. the verdict's remedy followed (the limit raised as far as it says) makes it succeed;
//   4. a bad device throws too, with gpumem's status, and is not called out of memory;
//   5. size 0 returns NULL without throwing;
//   6. where no pool serves the hook (pools disabled, fallbacks denied) it throws NOT_SUPPORTED.
// Exit status: 0 passed, 1 failed, 77 skipped.
// SPDX-License-Identifier: MIT
#include <gpumem/gpumem.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const char *what, const std::string &detail = std::string())
{
    std::printf("%s: %s%s%s\n", ok ? "ok" : "FAIL", what, detail.empty() ? "" : ": ", detail.c_str());
    if (!ok)
        ++failures;
}

bool contains(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

const std::function<void *(ssize_t, int, void *)> hook = gpumem_pluggable_malloc_or_throw;

// Allocates through the hook; answers the exception's text, or "" when it returned.
std::string try_allocate(ssize_t size, int device, void **ptr)
{
    *ptr = nullptr;
    try {
        *ptr = hook(size, device, nullptr);
    } catch (const std::bad_alloc &e) {
        return std::string(e.what()).empty() ? std::string("(empty text)") : std::string(e.what());
    }
    return std::string();
}

bool init_with_limit(size_t bytes)
{
    gpumem_finalize();
    setenv("GPUMEM_LIMIT", std::to_string(bytes).c_str(), 1);
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
    if (st != GPUMEM_SUCCESS)
        std::printf("FAIL: gpumem_init with GPUMEM_LIMIT=%zu: %s\n", bytes, gpumem_last_error_message());
    return st == GPUMEM_SUCCESS;
}

} // namespace

int main()
{
    const size_t limit = size_t(64) << 20;
    if (!init_with_limit(limit))
        return 1;
    int32_t backend = GPUMEM_BACKEND_HOST;
    gpumem_get_backend(&backend);
    const char *vendor = backend == GPUMEM_BACKEND_HIP ? "HIP out of memory." : backend == GPUMEM_BACKEND_CUDA
                                                                                    ? "CUDA out of memory."
                                                                                    : "GPU out of memory.";
    int device = 0;

    void *small = nullptr;
    std::string text;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    if (gpumem_device_get_info(device, &info) == GPUMEM_SUCCESS && info.memory_pools == GPUMEM_SUPPORT_NONE) {
        // No pool serves the hook (GPUMEM_DISABLE=pools under GPUMEM_FALLBACK=deny): it throws
        // that reason, never NULL.
        text = try_allocate(ssize_t(1) << 20, device, &small);
        check(!small && contains(text, "GPUMEM_ERROR_NOT_SUPPORTED") && !contains(text, "out of memory."),
              "without pools the hook throws NOT_SUPPORTED with the reason", text);
        gpumem_finalize();
        unsetenv("GPUMEM_LIMIT");
        std::printf("%d failed\n", failures);
        return failures ? 1 : 0;
    }
    text = try_allocate(ssize_t(1) << 20, device, &small);
    check(text.empty() && small, "1 MiB under a 64 MiB limit is allocated", text);

    void *big = nullptr;
    const ssize_t big_size = ssize_t(256) << 20;
    text = try_allocate(big_size, device, &big);
    check(!text.empty() && !big, "256 MiB over the limit throws");
    check(text.rfind(vendor, 0) == 0, "the text begins as PyTorch's out-of-memory message", text);
    gpumem_oom_report_t report = GPUMEM_OOM_REPORT_INIT;
    const bool have_report = gpumem_last_oom_report(&report) == GPUMEM_SUCCESS && report.has_report;
    check(have_report, "the thread has an out-of-memory report");
    if (have_report) {
        check(report.verdict[0] && contains(text, report.verdict), "the text carries the report's verdict",
              report.verdict);
        check(contains(report.verdict, "GPUMEM_LIMIT"), "the verdict names GPUMEM_LIMIT", report.verdict);
        check(report.limit_raise.fits != 0, "raising the limit is a remedy that fits");
    }
    if (small)
        gpumem_pluggable_free(small, ssize_t(1) << 20, device, nullptr);

    // The remedy followed: the limit raised by as much as the report says.
    if (have_report && report.limit_raise.fits) {
        if (!init_with_limit(limit + report.limit_raise.bytes))
            return 1;
        text = try_allocate(big_size, device, &big);
        check(text.empty() && big, "with the limit raised as the verdict says, 256 MiB is allocated", text);
        if (big)
            gpumem_pluggable_free(big, big_size, device, nullptr);
    }

    void *none = nullptr;
    text = try_allocate(ssize_t(1) << 20, 4096, &none);
    check(!text.empty() && !none, "device 4096 throws");
    check(!contains(text, "out of memory.") && contains(text, "GPUMEM_ERROR_INVALID"),
          "the text gives gpumem's status, not out of memory", text);

    text = try_allocate(0, device, &none);
    check(text.empty() && !none, "size 0 returns NULL without throwing", text);

    gpumem_finalize();
    unsetenv("GPUMEM_LIMIT");
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
