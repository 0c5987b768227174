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
#include "core/batch.hpp"
#include "core/buffers.hpp"
#include "core/capture.hpp"
#include "core/devices.hpp"
#include "core/dmabuf.hpp"
#include "core/handles.hpp"
#include "core/inspect.hpp"
#include "core/lifecycle.hpp"
#include "core/managed.hpp"
#include "core/memory.hpp"
#include "core/oom_report.hpp"
#include "core/peers.hpp"
#include "core/pinned.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools.hpp"
#include "core/rows.hpp"
#include "core/streams.hpp"
#include "core/vmm.hpp"

namespace gpumem::detail {

struct Runtime {
    // The composition root: the opened backend and the options, and each
    // service built from the parts it uses.
    Runtime(std::unique_ptr<Backend> opened, int32_t id, const Options &opts)
        : backend(std::move(opened)), backend_id(id), options(opts), devices(*backend, opts.disabled, id),
          capture(backend->stream_capture()), streams(*backend, pools, devices, capture),
          pools(PoolParts{*backend, devices, capture, pointers, streams, options, host_strict}),
          vmm(devices, pointers), pointers(pools, vmm, pinned),
          pinned(*backend, pointers, devices, opts.pinned_cache_bytes,
                 (backend->workarounds() & workaround_ask_device_pointer) != 0),
          managed(*backend, pointers, pinned, devices, capture),
          memory(*backend, *backend, pointers, pinned, managed, pools, vmm, devices, backend->workarounds()),
          batch(backend->batch_memops(), memory, managed, pointers, devices, capture, backend->workarounds()),
          rows(backend->row_memops(), memory, *backend, pointers, devices),
          buffers(devices, vmm, pointers), peers(backend->peer_access(), devices),
          inspect(*backend, pointers, pools, devices, epoch_ns),
          dmabuf(backend->dmabuf_export(), pointers, pools, devices), oom(*backend, pointers, pools, devices)
    {
    }
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;

    std::unique_ptr<Backend> backend;
    int32_t backend_id = GPUMEM_BACKEND_HOST;
    Options options;
    // GPUMEM_HOST_STRICT=1 on the host backend: freed stream-ordered blocks
    // are poisoned and held back (docs/strict-mode.md).
    bool host_strict = false;
    Devices devices; // core/devices: each device's state and support levels
    Capture capture; // core/capture: the backend's capture interface, as the core asks it

    // The services (each owns its state; see docs/architecture.md).
    StreamHandles streams; // core/streams: stream and event handles over the backend's
    Pools pools;       // core/pools/: stream-ordered pools, native or built-in
    Vmm vmm;           // core/vmm: reservations, mappings, physical handles
    Pointers pointers; // core/pointers: the directory (and the registry)
    Pinned pinned;     // core/pinned: pinned and registered host memory, the cache
    Managed managed;   // core/managed: managed memory, native or emulated, and its attributes
    Memory memory;     // core/memory: device memory, gpumem_free of any kind, copies and fills
    Batch batch;       // core/batch: batched copies, prefetches and discards
    Rows rows;         // core/rows: copies and fills of rows and boxes
    Buffers buffers;   // core/buffers: growable buffers, on the VMM service
    Peers peers;       // core/peers: peer access between devices
    Inspect inspect;   // core/inspect: snapshots and the out-of-memory report
    DmaBuf dmabuf;     // core/dmabuf: which memory gpumem_mem_export_dmabuf exports, and where
    OomReports oom;    // core/oom_report: what would have fit, when an allocation fails

    uint64_t epoch_ns = 0; // when gpumem_init ran (precise_now_ns): traces and snapshots count from it

    int32_t device_count() const { return devices.count(); }
    bool disabled(Feature f) const { return devices.disabled(f); }
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


// Validation helpers: each sets the last error on failure.
inline status_t check_device(const Runtime &rt, int32_t device) { return rt.devices.check(device); }



// Devices.
namespace devices {
// Make `device` the calling thread's current device (the runtime's too).
status_t set_current(Runtime &rt, int32_t device);
status_t info(Runtime &rt, int32_t device, gpumem_device_info_t *full);
status_t mem_info(Runtime &rt, size_t *free_bytes, size_t *total_bytes);
status_t synchronize(Runtime &rt);
// The vendor bugs the backend works around (gpumem_workarounds_get).
status_t workarounds(Runtime &rt, const char **names, const char **descriptions, size_t capacity, size_t *count);

} // namespace devices

} // namespace gpumem::detail

#include "core/pools/pools_hot.hpp"
