// The runtime: the active backend, its devices with their effective support
// levels, the handle tables and the registry.  Created by gpumem_init (or the
// first call of any function) and torn down by gpumem_finalize.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backends/backend.hpp"
#include "base/error.hpp"
#include "core/handles.hpp"
#include "core/native_blocks.hpp"
#include "base/options.hpp"
#include "core/registry.hpp"
#include "pool/pool.hpp"

namespace gpumem::detail {

struct StreamObject {
    StreamState state;
    bool owned = false; // false for wrapped native streams
};

struct EventObject {
    void *native = nullptr;
    int32_t device = 0;
    bool recorded = false;
    EventMark mark;
};

struct PoolObject {
    pool::Pool *impl = nullptr; // gpumem's own pool, or
    void *native = nullptr;     // the vendor's pool
    bool imported = false;      // maps another process's pool: cannot allocate
    int32_t device = 0;
    uint32_t handle_types = 0;
    bool emulated = false; // gpumem's own pool standing in for an absent native one
    bool is_default = false;
    std::mutex mutex;                      // guards access
    std::map<int32_t, int32_t> access;     // device -> GPUMEM_ACCESS_* granted
};

struct MemHandleObject {
    void *phys = nullptr;
    size_t size = 0;
    int32_t device = 0;
    uint32_t handle_types = 0;
};

struct BufferChunk {
    void *phys;
    size_t offset; // from the buffer's base
    size_t size;
};

struct BufferObject {
    std::mutex mutex;
    int32_t device = 0;
    size_t size = 0;
    size_t max_size = 0;
    bool vmm = false;          // native VMM: the address never moves
    void *base = nullptr;      // data address
    size_t reserved = 0;       // VMM: bytes of address space
    size_t mapped = 0;         // VMM: bytes mapped from base
    size_t capacity = 0;       // fallback: bytes allocated
    size_t granularity = 0;
    std::vector<BufferChunk> chunks;
};

using StreamTable = HandleTable<StreamObject, HandleType::stream>;
using EventTable = HandleTable<EventObject, HandleType::event>;
using PoolTable = HandleTable<PoolObject, HandleType::pool>;
using BufferTable = HandleTable<BufferObject, HandleType::buffer>;
using MemHandleTable = HandleTable<MemHandleObject, HandleType::memory>;

// Tables outlive runtimes, so a handle from before gpumem_finalize is still
// decodable (and dead) afterwards.
StreamTable &stream_table();
EventTable &event_table();
PoolTable &pool_table();
BufferTable &buffer_table();
MemHandleTable &mem_handle_table();

struct DeviceState {
    DeviceCaps caps;
    int32_t managed_level = GPUMEM_SUPPORT_NONE;
    int32_t pools_level = GPUMEM_SUPPORT_NONE;
    int32_t vmm_level = GPUMEM_SUPPORT_NONE;
    int32_t host_register_level = GPUMEM_SUPPORT_NONE;
    uint32_t ipc_types = 0;
    uint32_t pool_ipc_types = 0; // for the pools this device's AUTO pools get
    StreamObject default_stream;
    uint64_t default_pool = 0;
    std::atomic<uint64_t> current_pool{0};
};

struct Mapping {
    size_t size = 0;
    int32_t device = 0;                // device holding the physical memory
    std::map<int32_t, int32_t> access; // device -> GPUMEM_ACCESS_* (absent = none)
};

struct Reservation {
    size_t size = 0;
    std::map<uintptr_t, Mapping> mappings; // by start address
};

// Freed pinned blocks kept for reuse: page-locking is slow (about a
// millisecond per call on CUDA), so a program that allocates pinned buffers
// of one size in a loop pays it once.
struct PinnedCache {
    struct Block {
        void *ptr;
        void *device_pointer;
    };
    std::mutex mutex;
    std::multimap<std::pair<uint32_t, size_t>, Block> blocks; // (flags, page-rounded size)
    uint64_t bytes = 0;
};

struct Runtime {
    std::unique_ptr<Backend> backend;
    int32_t backend_id = GPUMEM_BACKEND_HOST;
    Options options;
    std::vector<std::unique_ptr<DeviceState>> devices;
    Registry registry;
    NativeBlocks native_blocks; // live allocations of vendor pools
    PinnedCache pinned_cache;
    bool native_pools = false;  // backend->native_pools(), read on hot paths

    std::mutex vmm_mutex;
    std::map<uintptr_t, Reservation> reservations; // by start address

    std::mutex pools_mutex;
    std::unordered_map<pool::Pool *, uint64_t> pool_handles; // impl -> live handle

    std::atomic<uint32_t> fallbacks_logged{0}; // Feature bits already logged

    int32_t device_count() const { return static_cast<int32_t>(devices.size()); }
    bool disabled(Feature f) const { return (options.disabled & f) != 0; }
};

// The runtime, initialising with AUTO on first use.  nullptr (and the
// thread's last error set) when initialisation fails.
Runtime *runtime_or_init(status_t *status);
// The runtime if initialised, else nullptr (no init).
Runtime *runtime_if_ready();

status_t runtime_init(int32_t backend);
status_t runtime_finalize();

// The calling thread's current device.
int32_t current_device();
void set_current_device(int32_t device);

// Validation helpers: each sets the last error on failure.
status_t check_device(const Runtime &rt, int32_t device);
// A stream handle (NULL = the current device's default stream).
status_t resolve_stream(Runtime &rt, gpumem_stream_t stream, StreamObject **out);
status_t resolve_pool(gpumem_pool_t pool, PoolObject **out);

// A shareable-handle type `device` can use: POSIX_FD, with ipc neither
// disabled nor missing on the device.
// `pools`: the sharing is of a pool or its pointers (pool_ipc_types).
status_t require_ipc(const Runtime &rt, int32_t device, int32_t handle_type, bool pools);

// Record that a fallback served an allocation; logs once per feature.
void note_fallback(Runtime &rt, Feature feature, int32_t device, const char *what);

// After a synchronisation: frees up to `epoch` on the stream completed, and
// pools give back memory above their release thresholds.
void after_stream_sync(StreamObject &stream, uint64_t epoch);
// Device-wide: take the epochs before the backend synchronises, apply after.
using EpochSnapshot = std::vector<std::pair<StreamObject *, uint64_t>>;
EpochSnapshot snapshot_epochs(Runtime &rt, int32_t device);
void after_device_sync(const EpochSnapshot &snapshot, int32_t device);

// A fresh identity for a stream object (new or recycled).
void init_stream_state(StreamState &state, int32_t device, void *native, bool synchronous);

// INVALID_POINTER with the most useful reason why `ptr` is not `expected`
// (interior pointer, another kind, a VMM range, unknown).
status_t explain_bad_pointer(Runtime &rt, const void *ptr, const char *expected);

// The live pool handle of a pool implementation (0 if none).
uint64_t pool_handle_of(Runtime &rt, pool::Pool *impl);

} // namespace gpumem::detail

namespace gpumem::detail {
// Pool creation shared by init (default pools) and gpumem_pool_create.
status_t make_pool(Runtime &rt, const gpumem_pool_props_t &props, bool is_default, uint64_t *handle);
} // namespace gpumem::detail
