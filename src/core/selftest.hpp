// The self-test (GPUMEM_SELFTEST): before gpumem settles a device's support
// levels, each feature the runtime claims there is tried once, briefly,
// through the backend, and everything the try made is released.  A feature
// whose try fails is taken as absent when the levels are settled (so it
// falls back, or is refused under GPUMEM_FALLBACK=deny, as if the runtime had
// not claimed it) and is shown as GPUMEM_SUPPORT_BROKEN with the reason.
// Claims that a driver makes and a container or platform then refuses (VMM
// export without the permission, managed prefetch, dma-buf, peer access that
// maps but does not copy) surface at init, not in the middle of a job.
//
// With a cache directory the results are kept in one file per device (its
// UUID where the runtime tells it, else its name) and driver version, and a
// later init reads them instead of trying again; the file's text is also how
// gpumem-info --selftest reads the results.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "base/options.hpp"

namespace gpumem::detail {

enum SelftestFeature : int {
    selftest_vmm,           // VMM create, reserve, map, set access, a copy through the mapping
    selftest_vmm_ipc,       // a VMM handle exported as a POSIX fd, sent to a child process and back, imported
    selftest_pool_ipc,      // a vendor pool made shareable, exported as a POSIX fd, sent to a child and back
    selftest_managed,       // managed allocation with a prefetch to the device
    selftest_host_register, // host registration of a page
    selftest_batch,         // a batched copy of two entries
    selftest_dmabuf,        // dma-buf export of device memory
    selftest_peer,          // peer access to each other device, with a copy each way
    selftest_count
};

enum class SelftestOutcome : int { skipped = 0, passed = 1, failed = 2 };

struct SelftestResult {
    bool claimed = false; // the runtime claims the feature on the device
    SelftestOutcome outcome = SelftestOutcome::skipped;
    uint64_t ns = 0;
    std::string reason; // failed: the error; skipped: why
};

struct SelftestResults {
    bool ran = false;    // GPUMEM_SELFTEST was set
    bool cached = false; // read from the cache file, not run
    uint64_t total_ns = 0;
    SelftestResult r[selftest_count];
    bool broken(SelftestFeature f) const { return r[f].outcome == SelftestOutcome::failed; }
};

class Selftest {
public:
    // `backend`: the device's runtime, asked to make and release what each
    // test needs; `cache_dir`: GPUMEM_SELFTEST's path, or nullptr.
    Selftest(Backend &backend, int32_t backend_id, const char *cache_dir)
        : backend_(backend), backend_id_(backend_id), cache_dir_(cache_dir)
    {
    }

    // Device `device`'s results: from the cache where it has them, else run
    // (and cached where there is a cache).  `caps` is what the backend claims.
    SelftestResults run(int32_t device, const DeviceCaps &caps);
    // `caps` with each feature whose test failed taken away.
    static void take_away_broken(const SelftestResults &results, DeviceCaps *caps);

private:
    void run_all(int32_t device, const DeviceCaps &caps, SelftestResults *out);
    std::string cache_path(int32_t device, const DeviceCaps &caps) const;
    bool read_cache(const std::string &path, const DeviceCaps &caps, SelftestResults *out) const;
    void write_cache(const std::string &path, int32_t device, const DeviceCaps &caps,
                     const SelftestResults &results) const;

    Backend &backend_;
    int32_t backend_id_;
    const char *cache_dir_;
};

} // namespace gpumem::detail
