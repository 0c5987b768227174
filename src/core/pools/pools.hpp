// The pools service: pool handles, each device's default and current pool,
// stream-ordered allocation, and the choice between the two implementations
// (choose_implementation in pools.cpp, the only place that decides).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "core/handles.hpp"
#include "core/pools/pool_resource.hpp"

namespace gpumem::detail {

class Backend;
class Capture;
class Devices;
class Pointers;
class StreamHandles;
struct DeviceState;
struct Options;

// What the pools service and its two implementations use, named once: the
// backend (chunks, the vendor's pools, peer access, synchronisation, the
// poison fill), the devices, what a stream captures, the directory (the
// message for a bad pointer, freed vendor blocks), the stream handles (a
// free that waits for the device), and the options and strict mode that
// shape gpumem's own pool.  References into the runtime, which owns all of
// them and outlives the pools.
struct PoolParts {
    Backend &backend;
    const Devices &devices;
    const Capture &capture;
    Pointers &pointers;
    StreamHandles &streams;
    const Options &options;
    const bool &host_strict; // GPUMEM_HOST_STRICT on the host backend, settled at init
};

// Which devices may use a pool, and how (GPUMEM_ACCESS_*).
class PoolAccess {
public:
    void reset(int32_t owner);
    // Pinned and managed pools: every device reaches them.
    void reset_all(int32_t device_count);
    void set(int32_t device, int32_t flags);
    int32_t get(int32_t device) const;

private:
    mutable std::mutex mutex_;
    std::map<int32_t, int32_t> flags_; // absent = GPUMEM_ACCESS_NONE
};

struct PoolObject {
    PoolResource *resource = nullptr; // the implementation serving it, statistics included
    void *impl = nullptr;             // what that implementation made
    bool imported = false;            // maps another process's pool: cannot allocate
    int32_t device = 0;
    // False for an imported pool until a pointer of it says whose memory it is
    // (NativePoolResource::import_pointer); until then `device` is the
    // importer's current device, which only chooses where its calls run.
    bool owner_known = true;
    uint32_t handle_types = 0;
    bool emulated = false; // gpumem's own pool standing in for an absent native one
    bool is_default = false; // a device's default pool, or a default of gpumem_get_default_pool_for
    int32_t memory = GPUMEM_POOL_MEMORY_DEVICE; // GPUMEM_POOL_MEMORY_*
    PoolAccess access;
    // The release threshold last set, for runtimes that ignore it
    // (workaround_trim_at_sync: gpumem applies it at synchronisation).
    std::atomic<uint64_t> release_threshold{0};
    // An imported pool's high-water marks of what it maps (RESERVED_MEM_HIGH,
    // USED_MEM_HIGH), kept by gpumem: the runtime answers for the exporter's
    // pool only (Pools::imported_attribute).
    std::atomic<uint64_t> imported_reserved_high{0};
    std::atomic<uint64_t> imported_used_high{0};
};

using PoolTable = HandleTable<PoolObject, HandleType::pool>;
// Outlives runtimes, so a handle from before gpumem_finalize is still decodable (and dead).
// Inline: every stream-ordered allocation from a named pool looks its handle up.
inline PoolTable &pool_table()
{
    static PoolTable table;
    return table;
}

class Pools {
public:
    explicit Pools(const PoolParts &parts);
    ~Pools();
    // Once the devices are known: the implementations the backend offers.
    void open();
    // Whether `dev`'s pools are the vendor's (they share through the vendor).
    bool vendor_pools(const DeviceState &dev) const;

    // Who asks.  A framework's allocator hook runs the vendor pool's calls in
    // the relaxed capture mode, as the frameworks' own allocators do: their
    // frees of memory made before a capture, on the legacy stream, must not
    // invalidate it.  gpumem's own pool relaxes the driver calls it makes
    // itself (CaptureSafeUpstream), so its hot path makes no call at all.
    enum class Caller { application, framework_hook };

    // Hot path (inline: pools_hot.hpp): from `device`'s current pool, or from `pool`.
    status_t allocate(int32_t device, size_t size, gpumem_stream_t stream, void **ptr,
                      Caller caller = Caller::application);
    status_t allocate_from(gpumem_pool_t pool, size_t size, gpumem_stream_t stream, void **ptr);
    status_t free_async(void *ptr, gpumem_stream_t stream, Caller caller = Caller::application);

    // The block holding `ptr` (see PoolResource::find); *emulated for pointer info.
    bool find(const void *ptr, PoolBlock *out, bool interior, bool *emulated) const;
    // The block starting at `ptr`, in any pool: a hash probe per implementation.
    bool find_base(const void *ptr, PoolBlock *out, bool *emulated) const;
    // Whether the block's pool is gpumem's own standing in for the vendor's.
    static bool is_emulated(const PoolBlock &block);
    // False when `ptr` lies in no vendor pool block (see PoolResource::may_hold).
    bool native_may_hold(const void *ptr) const { return native_ && native_->may_hold(ptr); }
    // True when [ptr, ptr+size) meets memory a pool holds (see PoolResource::holds).
    bool holds(const void *ptr, size_t size) const
    {
        return (builtin_ && builtin_->holds(ptr, size)) || (native_ && native_->holds(ptr, size));
    }
    // Every live stream-ordered block, of both implementations (snapshots, reports).
    void list_blocks(std::vector<LiveBlock> *out) const
    {
        if (builtin_)
            builtin_->list_blocks(out);
        if (native_)
            native_->list_blocks(out);
    }
    // Every live pool: handle, device, implementation, memory, reserved and used bytes.
    struct Summary {
        uint64_t handle = 0;
        int32_t device = 0;
        int32_t implementation = GPUMEM_POOL_BUILTIN;
        int32_t memory = GPUMEM_POOL_MEMORY_DEVICE; // GPUMEM_POOL_MEMORY_*
        uint64_t reserved = 0;
        uint64_t used = 0;
    };
    void describe(std::vector<Summary> *out) const;
    // gpumem_free of a stream-ordered block found by find().
    status_t free_now(void *ptr, const PoolBlock &block);

    status_t create(const gpumem_pool_props_t &props, bool is_default, uint64_t *handle);
    status_t destroy(gpumem_pool_t pool);
    status_t default_pool(int32_t device, gpumem_pool_t *pool);
    // The process's default pool of `memory` for a device (DEVICE, MANAGED) or
    // a NUMA node (PINNED, -1 = any), made on first use.
    status_t default_pool_for(int32_t memory, int32_t location, gpumem_pool_t *pool);
    status_t current_pool(int32_t device, gpumem_pool_t *pool);
    status_t set_current(int32_t device, gpumem_pool_t pool);
    status_t set_attribute(gpumem_pool_t pool, int32_t attr, const void *value);
    status_t get_attribute(gpumem_pool_t pool, int32_t attr, void *value);
    status_t trim_to(gpumem_pool_t pool, size_t min_bytes_to_keep);
    // After a synchronisation on `device`: memory above each pool's release
    // threshold goes back (gpumem's own pools; and the native ones where the
    // runtime ignores the threshold, workaround_trim_at_sync).
    void apply_release_thresholds(int32_t device);
    // Under memory pressure (an allocation on `device` failed OUT_OF_MEMORY): every pool of
    // device memory there gives back what it holds unused, whatever its threshold.  The
    // bytes given back, as far as the pools can say (0: nothing to retry for).
    uint64_t release_unused(int32_t device);
    // Whether a synchronisation has pool work to do after it (own pools'
    // stream order and thresholds, or a native threshold gpumem applies for
    // the runtime): the thin paths skip it all when not.
    bool work_at_sync() const { return trim_at_sync_ || pool::ordering_in_use(); }
    status_t set_access(gpumem_pool_t pool, const gpumem_access_desc_t *descs, size_t count);
    status_t get_access(int32_t *flags, gpumem_pool_t pool, int32_t device);
    status_t export_fd(gpumem_pool_t pool, int32_t handle_type, int32_t *fd);
    status_t import_fd(int32_t fd, int32_t handle_type, gpumem_pool_t *pool);
    status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data);
    status_t import_pointer(gpumem_pool_t pool, const gpumem_pool_ptr_export_data_t *data, void **ptr);

    // gpumem_finalize: every pool and block; how many blocks and handles leaked.
    void release_all(size_t *leaked_blocks, size_t *leaked_handles);

private:
    static status_t resolve_pool(gpumem_pool_t pool, PoolObject **out);
    status_t no_pools(int32_t device) const;
    status_t allocate_in(PoolObject &p, uint64_t handle, size_t size, gpumem_stream_t stream, void **ptr,
                         Caller caller);
    // Count (and log once) an allocation gpumem's own pool served in place of a native one.
    void note_emulated(const PoolObject &p);
    PoolResource *choose_implementation(const DeviceState &dev, int32_t implementation, int32_t memory) const;
    status_t current(int32_t device, PoolObject **p, uint64_t *handle);
    status_t add(PoolResource *resource, void *impl, int32_t device, uint32_t handle_types, bool imported,
                 bool emulated, bool is_default, int32_t memory, uint64_t *handle);
    // An imported pool maps another process's pool (or this process's own, exported): the runtime
    // answers for the exporter's pool and refuses the importer most of what a pool is asked
    // (probe/h100-imported.txt).  What gpumem can say from its own books it says (what the pool
    // maps here, its high-water marks, a trim that has nothing to give back); the rest is
    // NOT_SUPPORTED, naming what the exporting process can do instead.
    // The bytes `handle`'s live imported pointers map in this process.
    uint64_t imported_bytes(const PoolObject &p, uint64_t handle) const;
    status_t imported_attribute(PoolObject &p, uint64_t handle, int32_t attr, void *value, bool set);
    // An attribute as the pool says it: from the books for an imported pool, else its implementation.
    status_t read_attribute(PoolObject &p, uint64_t handle, int32_t attr, void *value) const;

    const PoolParts parts_;
    std::unique_ptr<PoolResource> native_;  // absent where the backend has no vendor pools
    bool trim_at_sync_ = false;             // native pools trimmed to their threshold at synchronisation
    std::unique_ptr<PoolResource> builtin_; // gpumem's own
    // gpumem_get_default_pool_for's pinned and managed pools: (memory, location) -> handle.
    std::mutex defaults_mutex_;
    std::map<std::pair<int32_t, int32_t>, uint64_t> defaults_;
    std::atomic<uint32_t> memory_fallbacks_logged_{0}; // bit per GPUMEM_POOL_MEMORY_* already logged
    // Held by destroy() and by the walks over every pool (trim at synchronisation, describe), so a
    // walk never uses a pool's resource while another thread tears it down.
    mutable std::mutex walk_mutex_;
};

// The support level of pools of `memory` (GPUMEM_POOL_MEMORY_*) on a device.
int32_t pool_memory_level(const DeviceState &dev, int32_t memory);

// The implementations, each wrapped in the statistics adaptor.
std::unique_ptr<PoolResource> make_native_pools(const PoolParts &parts); // nullptr without vendor pools
std::unique_ptr<PoolResource> make_builtin_pools(const PoolParts &parts);

} // namespace gpumem::detail
