// The runtime, the orchestrator: the active backend, its devices with their
// effective support levels, and the services that own everything else.
// Created by gpumem_init (or the first call of any function) and torn down
// by gpumem_finalize, which releases what the services still hold.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "base/error.hpp"
#include "base/options.hpp"
#include "core/buffers.hpp"
#include "core/handles.hpp"
#include "core/lifecycle.hpp"
#include "core/managed.hpp"
#include "core/memory.hpp"
#include "core/pinned.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools.hpp"
#include "core/streams.hpp"
#include "core/vmm.hpp"

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
    StreamObject default_stream;
    uint64_t default_pool = 0;
    std::atomic<uint64_t> current_pool{0};
};

struct Runtime {
    Runtime() : vmm(*this, pointers), pointers(pools, vmm, pinned), buffers(*this, vmm, pointers) {}
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;

    std::unique_ptr<Backend> backend;
    int32_t backend_id = GPUMEM_BACKEND_HOST;
    Options options;
    // GPUMEM_HOST_STRICT=1 on the host backend: freed stream-ordered blocks
    // are poisoned and held back (docs/strict-mode.md).
    bool host_strict = false;
    std::vector<std::unique_ptr<DeviceState>> devices;

    // The services (each owns its state; see docs/architecture.md).
    Pools pools;       // core/pools/: stream-ordered pools, native or built-in
    Vmm vmm;           // core/vmm: reservations, mappings, physical handles
    Pointers pointers; // core/pointers: the directory (and the registry)
    Pinned pinned;     // core/pinned: pinned and registered host memory, the cache
    Buffers buffers;   // core/buffers: growable buffers, on the VMM service

    mutable std::atomic<uint32_t> fallbacks_logged{0}; // Feature bits already logged (note_fallback)
    uint64_t epoch_ns = 0; // when gpumem_init ran (precise_now_ns): traces and snapshots count from it

    int32_t device_count() const { return static_cast<int32_t>(devices.size()); }
    bool disabled(Feature f) const { return (options.disabled & f) != 0; }
};

// The published runtime: read by every call (api/entry.hpp), swapped only
// under the init mutex.  See core/lifecycle.hpp for how a call and
// gpumem_finalize agree on when the runtime may go.
extern std::atomic<Runtime *> g_runtime;

// The slow path of a call that found no runtime: initialise with AUTO and
// enter the call (count 1 on `calls`).  nullptr (and the thread's last error
// set) when initialisation fails or is impossible here (a fork child that has
// not called gpumem_finalize, a call made while this thread finalizes).
Runtime *runtime_enter_slow(CallCounter *calls, status_t *status);
// The runtime if initialised, else nullptr (no init).  Only for calls that
// touch nothing the runtime owns.
Runtime *runtime_if_ready();

status_t runtime_init(int32_t backend);
status_t runtime_finalize();

// The calling thread's current device: on a GPU backend the runtime's own
// (cudaSetDevice / hipSetDevice change it as gpumem_set_device does).  It
// picks where new allocations go and whose default stream NULL means;
// everything else runs where its memory, stream or pool lives (core/placement.hpp).
int32_t current_device();

// Validation helpers: each sets the last error on failure.
status_t check_device(const Runtime &rt, int32_t device);

// A shareable-handle type `device` can use: POSIX_FD, with ipc neither
// disabled nor missing on the device.
// `pools`: the sharing is of a pool or its pointers (pool_ipc_types).
status_t require_ipc(const Runtime &rt, int32_t device, int32_t handle_type, bool pools);

// Record that a fallback served an allocation; logs once per feature.
void note_fallback(const Runtime &rt, Feature feature, int32_t device, const char *what);

// Devices.
namespace devices {
// Make `device` the calling thread's current device (the runtime's too).
status_t set_current(Runtime &rt, int32_t device);
status_t info(Runtime &rt, int32_t device, gpumem_device_info_t *full);
status_t mem_info(Runtime &rt, size_t *free_bytes, size_t *total_bytes);
status_t synchronize(Runtime &rt);
// The vendor bugs the backend works around (gpumem_workarounds_get).
status_t workarounds(Runtime &rt, const char **names, const char **descriptions, size_t capacity, size_t *count);

// Peer access (core/peers.cpp): `device` reaching `peer`'s plain device
// memory.  Enable and disable act from the calling thread's current device
// and are idempotent.
status_t can_access_peer(Runtime &rt, int32_t device, int32_t peer, int32_t *can_access);
status_t enable_peer_access(Runtime &rt, int32_t peer);
status_t disable_peer_access(Runtime &rt, int32_t peer);
} // namespace devices

} // namespace gpumem::detail

#include "core/pools/pools_hot.hpp"
