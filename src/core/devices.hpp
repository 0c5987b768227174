// The devices service: each device's state (what the backend reported, the
// support levels gpumem settled on, its default stream and pools), the
// features GPUMEM_DISABLE turned off, and the device check every entry
// makes.  Filled once at init (core/runtime.cpp) and read-only after, except
// each device's current pool (an atomic).  Services that only need to know
// what a device supports take this, not the runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "base/error.hpp"
#include "base/options.hpp"
#include "core/selftest.hpp"
#include "core/streams.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

struct DeviceState {
    DeviceCaps caps;
    int32_t managed_level = GPUMEM_SUPPORT_NONE;
    int32_t pools_level = GPUMEM_SUPPORT_NONE;
    int32_t pinned_pools_level = GPUMEM_SUPPORT_NONE;  // pools of pinned host memory
    int32_t managed_pools_level = GPUMEM_SUPPORT_NONE; // pools of managed memory
    int32_t vmm_level = GPUMEM_SUPPORT_NONE;
    int32_t host_register_level = GPUMEM_SUPPORT_NONE;
    uint32_t ipc_types = 0;
    uint32_t pool_ipc_types = 0; // for the pools this device's AUTO pools get
    // Memory that GPUDirect RDMA and NCCL register (GPUMEM_POOL_RDMA): NATIVE
    // on a GPU that makes it, EMULATED on the host backend (ordinary host
    // memory), else NONE with rdma_missing saying why.
    int32_t rdma_level = GPUMEM_SUPPORT_NONE;
    std::string rdma_missing;
    // GPUMEM_SELFTEST's results (ran is false without it).  A feature whose
    // test failed was taken away from `caps` before the levels above were
    // settled; device info shows it as GPUMEM_SUPPORT_BROKEN.
    SelftestResults selftest;
    // For each failed test: "broken (its self-test failed: <reason>)", for messages.
    std::string broken_text[selftest_count];
    // Features the runtime claimed before the self-test took any away.
    bool claimed_rdma_vmm = false;
    StreamObject default_stream;
    uint64_t default_pool = 0;
    std::atomic<uint64_t> current_pool{0};
};

// The calling thread's current device: on a GPU backend the runtime's own
// (cudaSetDevice / hipSetDevice change it as gpumem_set_device does).  It
// picks where new allocations go and whose default stream NULL means;
// everything else runs where its memory, stream or pool lives (core/placement.hpp).
int32_t current_device();

class Devices {
public:
    // `runtime`: the backend, asked for the current device and what a device
    // holds now; `disabled`: GPUMEM_DISABLE's Feature bits; `backend_id`: the
    // backend the devices are of (named in the messages).
    Devices(Backend &runtime, uint32_t disabled, int32_t backend_id)
        : runtime_(runtime), disabled_(disabled), backend_id_(backend_id)
    {
    }
    Devices(const Devices &) = delete;
    Devices &operator=(const Devices &) = delete;

    int32_t count() const { return static_cast<int32_t>(states_.size()); }
    // Device `d`'s state (check(d) first where d comes from the caller).
    DeviceState &operator[](int32_t d) const { return *states_[static_cast<size_t>(d)]; }
    bool disabled(Feature f) const { return (disabled_ & f) != 0; }
    int32_t backend_id() const { return backend_id_; } // GPUMEM_BACKEND_*, for messages
    // INVALID_DEVICE, saying which devices exist, unless 0 <= device < count()
    // (inline: the stream-ordered allocation checks its device on every call).
    status_t check(int32_t device) const
    {
        if (device >= 0 && device < count()) [[likely]]
            return GPUMEM_SUCCESS;
        return no_such_device(device);
    }
    // The calling thread's current device, as the runtime says (cudaSetDevice
    // changes it as gpumem_set_device does).
    int32_t current() const { return runtime_.current_device(); }
    // Make `device` current on the calling thread, after check().
    status_t set_current(int32_t device) const;
    // `device`'s free and total bytes, as the runtime says now.
    status_t memory(int32_t device, size_t *free_bytes, size_t *total_bytes) const
    {
        return runtime_.mem_info(device, free_bytes, total_bytes);
    }
    // The vendor bugs the backend works around (gpumem_workarounds_get).
    const std::vector<VendorBugInfo> &vendor_bugs() const { return runtime_.vendor_bugs(); }
    // A shareable-handle type `device` can use: POSIX_FD, with ipc neither
    // disabled nor missing on the device.  `pools`: the sharing is of a pool
    // or its pointers (pool_ipc_types).
    status_t require_ipc(int32_t device, int32_t handle_type, bool pools) const;
    // SUCCESS unless `handle_types` asks for GPUMEM_HANDLE_FABRIC and `device`
    // does not claim fabric handles (or ipc is disabled): NOT_SUPPORTED.  A
    // device that claims them may still refuse to make one (the backend says).
    status_t require_fabric(int32_t device, uint32_t handle_types) const;
    // Why `feature` is absent on `device`, for the messages of a fallback or
    // a refusal: "disabled by GPUMEM_DISABLE", "broken (its self-test
    // failed: ...)" or "not supported".  Valid while the runtime lives.
    const char *why_absent(Feature feature, int32_t device) const;
    // The reason `feature`'s self-test failed on `device`, or nullptr.
    const char *broken_reason(SelftestFeature feature, int32_t device) const;
    // A fallback served an allocation: counted, and logged once per feature.
    void note_fallback(Feature feature, int32_t device, const char *what) const;
    // Init only: the next device's state.
    void add(std::unique_ptr<DeviceState> state) { states_.push_back(std::move(state)); }
    template <class Fn> void for_each(Fn fn) const
    {
        for (const auto &s : states_)
            fn(*s);
    }

private:
    [[gnu::cold]] status_t no_such_device(int32_t device) const;

    Backend &runtime_;
    std::vector<std::unique_ptr<DeviceState>> states_;
    uint32_t disabled_;
    int32_t backend_id_;
    mutable std::atomic<uint32_t> fallbacks_logged_{0}; // Feature bits already logged (note_fallback)
};

} // namespace gpumem::detail
