// The pools service: handles, default and current pools, stream-ordered
// allocation, and the one place that picks an implementation.
#include "core/pools/pools.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/log.hpp"
#include "core/capture.hpp"
#include "backends/backend.hpp"
#include "base/options.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools_hot.hpp"
#include "core/streams.hpp"
#include "core/stats.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {
void PoolAccess::reset(int32_t owner)
{
    std::lock_guard<std::mutex> lock(mutex_);
    flags_.clear();
    flags_[owner] = GPUMEM_ACCESS_READWRITE;
}

void PoolAccess::reset_all(int32_t device_count)
{
    std::lock_guard<std::mutex> lock(mutex_);
    flags_.clear();
    for (int32_t d = 0; d < device_count; ++d)
        flags_[d] = GPUMEM_ACCESS_READWRITE;
}

void PoolAccess::set(int32_t device, int32_t flags)
{
    std::lock_guard<std::mutex> lock(mutex_);
    flags_[device] = flags;
}

int32_t PoolAccess::get(int32_t device) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = flags_.find(device);
    return it == flags_.end() ? GPUMEM_ACCESS_NONE : it->second;
}


status_t Pools::resolve_pool(gpumem_pool_t pool, PoolObject **out)
{
    PoolObject *p = pool ? pool_table().get(handle_bits(pool)) : nullptr;
    if (!p)
        return fail(GPUMEM_ERROR_INVALID_HANDLE,
                    "pool %p is not a live gpumem pool (destroyed, never created, or from before gpumem_finalize)",
                    static_cast<void *>(pool));
    *out = p;
    return GPUMEM_SUCCESS;
}

status_t Pools::no_pools(int32_t device) const
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "memory pools are %s on device %d and GPUMEM_FALLBACK=deny refuses gpumem's own pool",
                parts_.devices.disabled(feature_pools) ? "disabled by GPUMEM_DISABLE" : "not supported", device);
}


Pools::Pools(const PoolParts &parts) : parts_(parts) {}
Pools::~Pools() = default;

void Pools::open()
{
    native_ = make_native_pools(parts_);
    trim_at_sync_ = native_ && (parts_.backend.workarounds() & workaround_trim_at_sync);
    builtin_ = make_builtin_pools(parts_);
}

bool Pools::vendor_pools(const DeviceState &dev) const
{
    return native_ && dev.pools_level == GPUMEM_SUPPORT_NATIVE;
}

int32_t pool_memory_level(const DeviceState &dev, int32_t memory)
{
    switch (memory) {
    case GPUMEM_POOL_MEMORY_PINNED: return dev.pinned_pools_level;
    case GPUMEM_POOL_MEMORY_MANAGED: return dev.managed_pools_level;
    default: return dev.pools_level;
    }
}

// The vendor's pool where the backend has one for this memory and it is
// wanted; else gpumem's own over the backend's chunks (on the host backend
// that *is* the native implementation; elsewhere it stands in for absent pools).
PoolResource *Pools::choose_implementation(const DeviceState &dev, int32_t implementation, int32_t memory) const
{
    if (!vendor_pools(dev) || implementation == GPUMEM_POOL_BUILTIN ||
        pool_memory_level(dev, memory) != GPUMEM_SUPPORT_NATIVE)
        return builtin_.get();
    // A runtime whose own pools leak or corrupt themselves (vendor_bugs.def):
    // AUTO takes gpumem's own; NATIVE still gets what it asks for.
    if (implementation == GPUMEM_POOL_AUTO && (parts_.backend.workarounds() & workaround_builtin_auto_pools))
        return builtin_.get();
    return native_.get();
}

namespace {
const char *memory_words(int32_t memory)
{
    return memory == GPUMEM_POOL_MEMORY_PINNED    ? "pinned host memory"
           : memory == GPUMEM_POOL_MEMORY_MANAGED ? "managed memory"
                                                  : "device memory";
}

} // namespace

void Pools::note_emulated(const PoolObject &p)
{
    // Device pools absent or disabled: the pools feature itself is emulated.
    if (p.memory == GPUMEM_POOL_MEMORY_DEVICE || parts_.devices[p.device].pools_level != GPUMEM_SUPPORT_NATIVE) {
        parts_.devices.note_fallback(feature_pools, p.device, "stream-ordered allocations come from gpumem's own pool");
        return;
    }
    // Native device pools, but none of this memory.
    stats().on_fallback();
    const uint32_t bit = 1u << p.memory;
    if (memory_fallbacks_logged_.fetch_or(bit) & bit)
        return;
    log(LogLevel::warn, "device %d has no native pools of %s; gpumem's own pool serves them (GPUMEM_FALLBACK=deny "
        "refuses instead)", p.device, memory_words(p.memory));
}

status_t Pools::add(PoolResource *resource, void *impl, int32_t device, uint32_t handle_types, bool imported,
                    bool emulated, bool is_default, int32_t memory, uint64_t *handle)
{
    // Filled before it is published: other threads walk the live pools.
    PoolTable::Reservation p(pool_table());
    p->resource = resource;
    p->impl = impl;
    p->imported = imported;
    p->device = device;
    // An imported pool's owner is known once a pointer arrives; with one device it can only be that.
    p->owner_known = !imported || parts_.devices.count() == 1;
    p->handle_types = handle_types;
    p->emulated = emulated;
    p->is_default = is_default;
    p->memory = memory;
    if (memory == GPUMEM_POOL_MEMORY_DEVICE)
        p->access.reset(device);
    else
        p->access.reset_all(parts_.devices.count());
    p->release_threshold.store(0, std::memory_order_relaxed);
    p->imported_reserved_high.store(0, std::memory_order_relaxed);
    p->imported_used_high.store(0, std::memory_order_relaxed);
    resource->adopt(impl, p.handle());
    *handle = p.publish();
    return GPUMEM_SUCCESS;
}

status_t Pools::create(const gpumem_pool_props_t &props, bool is_default, uint64_t *handle)
{
    DeviceState &dev = parts_.devices[props.device];
    const char *why = parts_.devices.disabled(feature_pools) ? "disabled by GPUMEM_DISABLE" : "not supported by the device";
    const bool shareable = (props.handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
    const bool fabric = (props.handle_types & GPUMEM_HANDLE_FABRIC) != 0;
    const int32_t memory = props.memory;
    const int32_t level = pool_memory_level(dev, memory);
    if (status_t st = parts_.devices.require_fabric(props.device, props.handle_types))
        return st;
    if (memory != GPUMEM_POOL_MEMORY_DEVICE) {
        // Host pools are not shareable on CUDA (handleTypes must be 0), nor
        // managed ones; gpumem's own pool shares only memfd device arenas.
        if (shareable || fabric)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "a pool of %s cannot be shared between processes; create it with handle_types = "
                        "GPUMEM_HANDLE_NONE (share a pool of device memory instead)",
                        memory_words(memory));
        if (level == GPUMEM_SUPPORT_NONE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "pools of %s are not available on device %d: %s, and GPUMEM_FALLBACK=deny refuses gpumem's own "
                        "pool; allow it (GPUMEM_FALLBACK=allow)",
                        memory_words(memory), props.device,
                        dev.pools_level == GPUMEM_SUPPORT_NONE ? (parts_.devices.disabled(feature_pools)
                                                                      ? "memory pools are disabled by GPUMEM_DISABLE"
                                                                      : "the device has no memory pools")
                        : memory == GPUMEM_POOL_MEMORY_MANAGED && dev.managed_level != GPUMEM_SUPPORT_NATIVE
                            ? "the device has no native managed memory"
                            : "the device has no native ones");
        if (props.implementation == GPUMEM_POOL_NATIVE && level != GPUMEM_SUPPORT_NATIVE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "native pools of %s are not available on device %d (see gpumem_device_info_t.%s_pools); ask "
                        "for GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN",
                        memory_words(memory), props.device,
                        memory == GPUMEM_POOL_MEMORY_PINNED ? "pinned" : "managed");
    }
    if (dev.pools_level == GPUMEM_SUPPORT_NONE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "memory pools are %s on device %d and GPUMEM_FALLBACK=deny refuses gpumem's own pool", why,
                    props.device);
    if (props.implementation == GPUMEM_POOL_NATIVE && dev.pools_level != GPUMEM_SUPPORT_NATIVE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "native memory pools are %s on device %d; ask for GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN", why,
                    props.device);
    if (shareable && !(dev.pool_ipc_types & GPUMEM_HANDLE_POSIX_FD))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "POSIX file-descriptor sharing is %s on device %d; create the pool "
                    "with handle_types = GPUMEM_HANDLE_NONE",
                    parts_.devices.why_absent(feature_ipc, props.device), props.device);

    // Memory for GPUDirect RDMA and NCCL: on a GPU, gpumem's own pool over
    // RDMA-capable VMM pages.  The vendor's pools cannot make it: their
    // properties (CUmemPoolProps, hipMemPoolProps) carry no RDMA flag.
    const bool rdma = (props.flags & GPUMEM_POOL_RDMA) != 0;
    if (rdma) {
        if (memory != GPUMEM_POOL_MEMORY_DEVICE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "GPUMEM_POOL_RDMA makes device memory that RDMA NICs and NCCL register; a pool of %s cannot "
                        "have it (a NIC registers page-locked host memory as it is): create the pool without the flag",
                        memory_words(memory));
        if (dev.rdma_level == GPUMEM_SUPPORT_NONE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "memory for GPUDirect RDMA and NCCL (GPUMEM_POOL_RDMA) is not available on device %d: %s",
                        props.device, dev.rdma_missing.c_str());
        if (dev.rdma_level == GPUMEM_SUPPORT_NATIVE && props.implementation == GPUMEM_POOL_NATIVE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "the vendor's pools cannot make memory for GPUDirect RDMA and NCCL (their properties have no "
                        "RDMA flag); create the pool with GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN, which take gpumem's "
                        "own pool over RDMA-capable VMM memory");
        if (fabric && dev.rdma_level == GPUMEM_SUPPORT_NATIVE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "a GPUMEM_POOL_RDMA pool is gpumem's own pool over RDMA-capable VMM memory, and fabric handles "
                        "(GPUMEM_HANDLE_FABRIC) need the vendor's pools; create the pool without one of the two");
    }
    PoolResource *resource = rdma && dev.rdma_level == GPUMEM_SUPPORT_NATIVE
                                 ? builtin_.get()
                                 : choose_implementation(dev, props.implementation, memory);
    // Fabric memory is the vendor's to make: gpumem's own pool has no such chunks.
    if (fabric && resource == builtin_.get())
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "fabric handles (GPUMEM_HANDLE_FABRIC) need the vendor's pools, and device %d's pools are "
                    "gpumem's own; create the pool with GPUMEM_POOL_NATIVE on a device with native pools",
                    props.device);
    void *impl = nullptr;
    status_t st = resource->create(props, is_default, &impl);
    // A property the vendor's pool lacks (max_size on old drivers): AUTO
    // takes gpumem's own pool, which has it (but no fabric memory: the
    // vendor's refusal stands).
    if (st == GPUMEM_ERROR_NOT_SUPPORTED && resource != builtin_.get() && props.implementation == GPUMEM_POOL_AUTO &&
        !fabric) {
        log(LogLevel::info, "native pool refused (%s); using gpumem's own pool", last_error_message());
        resource = builtin_.get();
        st = resource->create(props, is_default, &impl);
    }
    if (st)
        return st;
    // Emulated: gpumem's own pool standing in where native pools of this
    // memory are absent (the host backend's own pools are its native ones).
    const bool emulated = resource == builtin_.get() && level == GPUMEM_SUPPORT_EMULATED;
    return add(resource, impl, props.device, props.handle_types, false, emulated, is_default, memory, handle);
}

bool Pools::find(const void *ptr, PoolBlock *out, bool interior, bool *emulated) const
{
    const bool found = (builtin_ && builtin_->find(ptr, out, interior)) || (native_ && native_->find(ptr, out, interior));
    if (found && emulated)
        *emulated = is_emulated(*out);
    return found;
}

bool Pools::find_base(const void *ptr, PoolBlock *out, bool *emulated) const
{
    // Pointer info's fast path.  gpumem's own pools are asked only once
    // there are any, and a vendor pool's block never stands in for another
    // pool: a program on the driver's pools pays one hash probe.
    if (builtin_ && pool::ordering_in_use() && builtin_->find_base(ptr, out)) {
        if (emulated)
            *emulated = is_emulated(*out);
        return true;
    }
    if (native_ && native_->find_base(ptr, out)) {
        if (emulated)
            *emulated = false;
        return true;
    }
    return false;
}

bool Pools::is_emulated(const PoolBlock &block)
{
    PoolObject *p = block.pool ? pool_table().get(block.pool) : nullptr;
    return p && p->emulated;
}

status_t Pools::free_now(void *ptr, const PoolBlock &block)
{
    // The implementation's own record of the block: the caller's (from pointer
    // info) lacks what only the implementation keeps, such as whether the
    // block was imported (counted as 0 bytes) and its pool's memory.
    PoolBlock own;
    if (builtin_->find(ptr, &own, false))
        return builtin_->free_now(ptr, own);
    if (native_ && native_->find(ptr, &own, false))
        return native_->free_now(ptr, own);
    return (native_ ? native_.get() : builtin_.get())->free_now(ptr, block);
}

status_t Pools::destroy(gpumem_pool_t pool)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (p->is_default)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the default pool of device %d cannot be destroyed", p->device);
    uint64_t handle = handle_bits(pool);
    if (p->device >= 0 && p->device < parts_.devices.count()) {
        DeviceState &dev = parts_.devices[p->device];
        uint64_t expected = handle;
        dev.current_pool.compare_exchange_strong(expected, dev.default_pool, std::memory_order_acq_rel);
    }
    std::lock_guard<std::mutex> walks(walk_mutex_);
    if (!pool_table().retire(handle))
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "pool %p was destroyed by another thread", static_cast<void *>(pool));
    PoolObject gone;
    gone.resource = p->resource;
    gone.impl = p->impl;
    gone.device = p->device;
    p->resource = nullptr;
    p->impl = nullptr;
    pool_table().recycle(handle);
    return gone.resource->destroy(gone, handle);
}

status_t Pools::default_pool(int32_t device, gpumem_pool_t *pool)
{
    if (status_t st = parts_.devices.check(device))
        return st;
    uint64_t h = parts_.devices[device].default_pool;
    if (!h)
        return no_pools(device);
    *pool = handle_from_bits<gpumem_pool_t>(h);
    return GPUMEM_SUCCESS;
}

status_t Pools::default_pool_for(int32_t memory, int32_t location, gpumem_pool_t *pool)
{
    if (memory == GPUMEM_POOL_MEMORY_DEVICE)
        return default_pool(location, pool);
    // A pinned pool serves every device: device 0 holds it (its context makes
    // the vendor's pool); a managed pool's device is its preferred location.
    const int32_t device = memory == GPUMEM_POOL_MEMORY_PINNED ? 0 : location;
    if (status_t st = parts_.devices.check(device))
        return st;
    // Held while the pool is made: two first uses must make one pool.
    std::lock_guard<std::mutex> lock(defaults_mutex_);
    auto key = std::make_pair(memory, location);
    auto it = defaults_.find(key);
    if (it != defaults_.end() && pool_table().get(it->second)) {
        *pool = handle_from_bits<gpumem_pool_t>(it->second);
        return GPUMEM_SUCCESS;
    }
    gpumem_pool_props_t props{};
    props.size = sizeof props;
    props.device = device;
    props.memory = memory;
    props.numa_node = memory == GPUMEM_POOL_MEMORY_PINNED ? location : -1;
    uint64_t handle = 0;
    if (status_t st = create(props, true, &handle))
        return st;
    defaults_[key] = handle;
    *pool = handle_from_bits<gpumem_pool_t>(handle);
    return GPUMEM_SUCCESS;
}

status_t Pools::current_pool(int32_t device, gpumem_pool_t *pool)
{
    PoolObject *p = nullptr;
    uint64_t handle = 0;
    if (status_t st = current(device, &p, &handle))
        return st;
    *pool = handle_from_bits<gpumem_pool_t>(handle);
    return GPUMEM_SUCCESS;
}

status_t Pools::set_current(int32_t device, gpumem_pool_t pool)
{
    if (status_t st = parts_.devices.check(device))
        return st;
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (p->device != device)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the pool belongs to device %d, not device %d", p->device, device);
    if (p->imported)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "an imported pool cannot allocate, so it cannot be current");
    if (p->memory != GPUMEM_POOL_MEMORY_DEVICE)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the pool holds %s, and a device's current pool (gpumem_malloc_async) holds device memory; "
                    "allocate from it with gpumem_malloc_from_pool_async",
                    memory_words(p->memory));
    parts_.devices[device].current_pool.store(handle_bits(pool), std::memory_order_release);
    return GPUMEM_SUCCESS;
}

status_t Pools::set_attribute(gpumem_pool_t pool, int32_t attr, const void *value)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (!value)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "value is NULL: pass the address of the attribute's new value");
    // The reuse flags are 0 or 1 for every pool (the vendors take any non-zero as 1).
    if (attr >= GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
        attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) {
        int32_t flag = 0;
        std::memcpy(&flag, value, sizeof flag);
        if (flag != 0 && flag != 1)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "pool attribute %d takes 0 or 1, not %d", attr, flag);
    }
    if (p->imported)
        return imported_attribute(*p, handle_bits(pool), attr, const_cast<void *>(value), true);
    capture::Relaxed relaxed(parts_.capture); // another thread's capture stays intact
    status_t st = p->resource->set_attribute(*p, attr, value);
    if (st == GPUMEM_SUCCESS && attr == GPUMEM_POOL_ATTR_RELEASE_THRESHOLD) {
        uint64_t threshold = 0;
        std::memcpy(&threshold, value, sizeof threshold);
        p->release_threshold.store(threshold, std::memory_order_relaxed);
    }
    return st;
}

namespace {
// What a trim found and did.
struct Trimmed {
    bool known = false;   // the pool said what it held
    uint64_t before = 0;  // reserved bytes before, when known
    bool asked = false;   // the vendor (or gpumem's own pool) was asked to trim
};

// Trim `p` to `floor` bytes, asking only where the pool holds more: a pool
// at or under the floor has nothing to give back, and CUDA's driver gives
// everything back for a floor of UINT64_MAX (tools/device/pool-trim-probe.py),
// where the caller meant "keep it all".  A pool that cannot say what it holds
// is asked.
status_t trim_over_floor(PoolObject &p, uint64_t floor, Trimmed *t)
{
    t->known = p.resource->get_attribute(p, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &t->before) == GPUMEM_SUCCESS;
    t->asked = !(t->known && t->before <= floor);
    return t->asked ? p.resource->trim_to(p, floor) : GPUMEM_SUCCESS;
}
} // namespace

void Pools::apply_release_thresholds(int32_t device)
{
    pool::apply_release_thresholds(device);
    if (!native_ || !(parts_.backend.workarounds() & workaround_trim_at_sync))
        return;
    capture::Relaxed relaxed(parts_.capture);
    std::lock_guard<std::mutex> walk(walk_mutex_);
    for (uint64_t h : pool_table().live_handles()) {
        PoolObject *p = pool_table().get(h);
        if (!p || p->device != device || p->imported || p->resource != native_.get())
            continue;
        Trimmed t;
        if (trim_over_floor(*p, p->release_threshold.load(std::memory_order_relaxed), &t) != GPUMEM_SUCCESS)
            log(LogLevel::debug, "trimming native pool 0x%llx at synchronisation failed: %s",
                static_cast<unsigned long long>(h), last_error_message());
    }
}

uint64_t Pools::release_unused(int32_t device)
{
    capture::Relaxed relaxed(parts_.capture);
    std::lock_guard<std::mutex> walk(walk_mutex_);
    uint64_t released = 0;
    for (uint64_t h : pool_table().live_handles()) {
        PoolObject *p = pool_table().get(h);
        if (!p || p->device != device || p->imported || p->memory != GPUMEM_POOL_MEMORY_DEVICE)
            continue;
        Trimmed t;
        if (trim_over_floor(*p, 0, &t) != GPUMEM_SUCCESS || !t.asked)
            continue;
        uint64_t after = 0;
        if (!t.known || p->resource->get_attribute(*p, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &after) != GPUMEM_SUCCESS)
            released += 1; // gave back an unknown amount: worth a retry
        else if (t.before > after)
            released += t.before - after;
    }
    return released;
}

status_t Pools::get_attribute(gpumem_pool_t pool, int32_t attr, void *value)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (!value)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "value is NULL: pass the address to receive the attribute's value");
    if (p->imported)
        return imported_attribute(*p, handle_bits(pool), attr, value, false);
    capture::Relaxed relaxed(parts_.capture);
    return p->resource->get_attribute(*p, attr, value);
}

uint64_t Pools::imported_bytes(const PoolObject &p, uint64_t handle) const
{
    std::vector<LiveBlock> blocks;
    p.resource->list_blocks(&blocks);
    uint64_t bytes = 0;
    for (const LiveBlock &b : blocks)
        if (b.block.pool == handle)
            bytes += b.block.size;
    return bytes;
}

// In this process an imported pool holds exactly what its imported pointers
// map: that is its reserved and its used memory alike (CUDA documents the
// same of an import pool's usage statistics, and driver 580 refuses to say
// it).  The reuse flags govern allocation, which an imported pool never
// does, and the release threshold the exporter's memory: the exporter's to
// set and read.
status_t Pools::imported_attribute(PoolObject &p, uint64_t handle, int32_t attr, void *value, bool set)
{
    const char *name = pool::attribute_name(attr);
    if (!name)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
    void *const pool = reinterpret_cast<void *>(handle);
    const char *verb = set ? "set" : "read";
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "pool %p is imported (gpumem_pool_import_from_shareable_handle) and cannot allocate, so %s, "
                    "which says how a pool's allocations reuse freed memory, has no value here; %s it on the "
                    "exporting process's pool, which makes the allocations",
                    pool, name, verb);
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD:
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "pool %p is imported (gpumem_pool_import_from_shareable_handle): the memory it maps belongs to "
                    "the exporting process's pool, which gives it back by its own threshold; %s "
                    "GPUMEM_POOL_ATTR_RELEASE_THRESHOLD on that pool in the exporting process",
                    pool, verb);
    default: break;
    }
    const uint64_t now = imported_bytes(p, handle);
    const bool reserved = attr == GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT || attr == GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH;
    std::atomic<uint64_t> &high = reserved ? p.imported_reserved_high : p.imported_used_high;
    if (set) {
        if (attr == GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT || attr == GPUMEM_POOL_ATTR_USED_MEM_CURRENT)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s is read-only", name);
        uint64_t v = 0;
        std::memcpy(&v, value, sizeof v);
        if (v != 0)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s can only be set to 0 (reset to the current value), not %llu",
                        name, static_cast<unsigned long long>(v));
        high.store(now, std::memory_order_relaxed);
        return GPUMEM_SUCCESS;
    }
    uint64_t v = now;
    if (attr == GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH || attr == GPUMEM_POOL_ATTR_USED_MEM_HIGH)
        v = std::max(now, high.load(std::memory_order_relaxed));
    std::memcpy(value, &v, sizeof v);
    return GPUMEM_SUCCESS;
}

status_t Pools::read_attribute(PoolObject &p, uint64_t handle, int32_t attr, void *value) const
{
    if (p.imported)
        return const_cast<Pools *>(this)->imported_attribute(p, handle, attr, value, false);
    return p.resource->get_attribute(p, attr, value);
}

void Pools::describe(std::vector<Summary> *out) const
{
    std::lock_guard<std::mutex> walk(walk_mutex_);
    for (uint64_t handle : pool_table().live_handles()) {
        PoolObject *p = pool_table().get(handle);
        if (!p || !p->resource)
            continue;
        Summary s;
        s.handle = handle;
        s.device = p->device;
        s.implementation = p->resource == builtin_.get() ? GPUMEM_POOL_BUILTIN : GPUMEM_POOL_NATIVE;
        s.memory = p->memory;
        if (read_attribute(*p, handle, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &s.reserved) != GPUMEM_SUCCESS ||
            read_attribute(*p, handle, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &s.used) != GPUMEM_SUCCESS)
            continue;
        out->push_back(s);
    }
}

status_t Pools::trim_to(gpumem_pool_t pool, size_t min_bytes_to_keep)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    // An imported pool holds nothing of its own to give back: what it maps
    // is the exporter's, freed there (CUDA documents trimming an import pool
    // as having no effect; driver 580 refuses it).
    if (p->imported)
        return GPUMEM_SUCCESS;
    capture::Relaxed relaxed(parts_.capture);
    Trimmed t;
    if (status_t st = trim_over_floor(*p, min_bytes_to_keep, &t))
        return st;
    // Traced: what the trim gave back, from the pool's reserved bytes around
    // it.  A pool that cannot say is trimmed untraced.
    if (!trace::recording() || !t.known)
        return GPUMEM_SUCCESS;
    uint64_t after = t.before, used = 0;
    if ((!t.asked || p->resource->get_attribute(*p, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &after) == GPUMEM_SUCCESS) &&
        p->resource->get_attribute(*p, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used) == GPUMEM_SUCCESS)
        trace::on_trim(handle_bits(pool), p->device, p->memory, t.before > after ? t.before - after : 0, after, used);
    return GPUMEM_SUCCESS;
}

status_t Pools::set_access(gpumem_pool_t pool, const gpumem_access_desc_t *descs, size_t count)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (!descs || count == 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "descs is NULL or count is 0: give at least one gpumem_access_desc_t");
    for (size_t i = 0; i < count; ++i) {
        if (status_t st = parts_.devices.check(descs[i].device))
            return st;
        int32_t f = descs[i].flags;
        if (f != GPUMEM_ACCESS_NONE && f != GPUMEM_ACCESS_READ && f != GPUMEM_ACCESS_READWRITE)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "descs[%zu].flags %d is not GPUMEM_ACCESS_NONE, _READ or _READWRITE",
                        i, f);
        if (p->memory != GPUMEM_POOL_MEMORY_DEVICE && f != GPUMEM_ACCESS_READWRITE)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "every device reaches a pool of %s (GPUMEM_ACCESS_READWRITE); its access cannot be reduced "
                        "(descs[%zu] asks %d for device %d)",
                        memory_words(p->memory), i, f, descs[i].device);
        if (p->owner_known && descs[i].device == p->device && f != GPUMEM_ACCESS_READWRITE)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "device %d owns the pool and always has GPUMEM_ACCESS_READWRITE",
                        p->device);
        // Refused here rather than at the first kernel: a device with no
        // path to the owner's memory can never use the grant.
        int32_t can = 1;
        PeerAccess *peers = parts_.backend.peer_access();
        if (p->owner_known && descs[i].device != p->device && f != GPUMEM_ACCESS_NONE && peers &&
            peers->can_access_peer(descs[i].device, p->device, &can) == GPUMEM_SUCCESS && !can)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "device %d cannot reach device %d's memory (no NVLink/PCIe peer path): the pool's memory "
                        "cannot be granted to it (descs[%zu]); copy with gpumem_memcpy instead",
                        descs[i].device, p->device, i);
    }
    if (p->memory != GPUMEM_POOL_MEMORY_DEVICE)
        return GPUMEM_SUCCESS; // already READWRITE everywhere
    // An imported pool whose owner is not known yet passes every grant to the
    // runtime, which refuses what the owner cannot be given.
    for (size_t i = 0; i < count; ++i)
        if (!p->owner_known || descs[i].device != p->device)
            if (status_t st = p->resource->set_access(*p, descs[i].device, descs[i].flags))
                return st;
    for (size_t i = 0; i < count; ++i)
        p->access.set(descs[i].device, descs[i].flags);
    return GPUMEM_SUCCESS;
}

status_t Pools::get_access(int32_t *flags, gpumem_pool_t pool, int32_t device)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (status_t st = parts_.devices.check(device))
        return st;
    *flags = p->access.get(device);
    return GPUMEM_SUCCESS;
}

status_t Pools::export_fd(gpumem_pool_t pool, int32_t handle_type, int32_t *fd)
{
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (p->imported)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "pool %p is imported (gpumem_pool_import_from_shareable_handle), and only the process that "
                    "created a pool can export it; pass on the descriptor it was imported from (gpumem_ipc_send_fd), "
                    "or have the exporting process export its pool again",
                    static_cast<void *>(pool));
    if (p->memory != GPUMEM_POOL_MEMORY_DEVICE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "a pool of %s cannot be shared between processes; share a pool of "
                    "device memory (created with handle_types = GPUMEM_HANDLE_POSIX_FD)", memory_words(p->memory));
    if (status_t st = parts_.devices.require_ipc(p->device, handle_type, true))
        return st;
    if (!(p->handle_types & GPUMEM_HANDLE_POSIX_FD))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the pool was created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it cannot be shared "
                    "through a descriptor%s",
                    (p->handle_types & GPUMEM_HANDLE_FABRIC)
                        ? " (its GPUMEM_HANDLE_FABRIC handle is 64 bytes, which this call cannot return); create it "
                          "with GPUMEM_HANDLE_POSIX_FD too"
                        : "");
    int out = -1;
    if (status_t st = p->resource->export_fd(*p, &out))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

status_t Pools::import_fd(int32_t fd, int32_t handle_type, gpumem_pool_t *pool)
{
    if (status_t st = parts_.devices.require_ipc(current_device(), handle_type, true))
        return st;
    int32_t device = current_device();
    if (status_t st = parts_.devices.check(device))
        return st;
    PoolResource *resource = choose_implementation(parts_.devices[device], GPUMEM_POOL_AUTO, GPUMEM_POOL_MEMORY_DEVICE);
    void *impl = nullptr;
    if (status_t st = resource->import(fd, device, &impl))
        return st;
    uint64_t handle = 0;
    add(resource, impl, device, GPUMEM_HANDLE_POSIX_FD, true, false, false, GPUMEM_POOL_MEMORY_DEVICE, &handle);
    *pool = handle_from_bits<gpumem_pool_t>(handle);
    return GPUMEM_SUCCESS;
}

status_t Pools::export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data)
{
    if (status_t st = parts_.devices.require_ipc(current_device(), GPUMEM_HANDLE_POSIX_FD, true))
        return st;
    PoolBlock block;
    PoolResource *owner = nullptr;
    if (native_ && native_->find(ptr, &block, false))
        owner = native_.get();
    else if (builtin_->find(ptr, &block, false) && block.base == ptr)
        owner = builtin_.get();
    if (!owner)
        return parts_.pointers.explain_bad(ptr, "stream-ordered memory from a pool created with GPUMEM_HANDLE_POSIX_FD");
    if (block.imported)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "%p is imported (gpumem_pool_import_pointer), and only the process that allocated it can export "
                    "it; pass on the export data it was imported with, which serves every process that imports its "
                    "pool",
                    ptr);
    PoolObject *p = pool_table().get(block.pool);
    if (block.memory != GPUMEM_POOL_MEMORY_DEVICE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "%p comes from a pool of %s, which cannot be shared between processes",
                    ptr, memory_words(block.memory));
    // Its pool cannot leave the process through gpumem (export_fd), so neither can the block.
    if (p && !(p->handle_types & GPUMEM_HANDLE_POSIX_FD) && (p->handle_types & GPUMEM_HANDLE_FABRIC))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "%p comes from a pool of fabric memory without GPUMEM_HANDLE_POSIX_FD: gpumem cannot export that "
                    "pool (a fabric handle is 64 bytes, not a descriptor), so its blocks cannot be imported "
                    "elsewhere; create the pool with GPUMEM_HANDLE_POSIX_FD to share it within a node", ptr);
    if (p && !(p->handle_types & GPUMEM_HANDLE_POSIX_FD))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "%p comes from a pool created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it cannot be "
                    "shared", ptr);
    return owner->export_pointer(ptr, data);
}

status_t Pools::import_pointer(gpumem_pool_t pool, const gpumem_pool_ptr_export_data_t *data, void **ptr)
{
    if (status_t st = parts_.devices.require_ipc(current_device(), GPUMEM_HANDLE_POSIX_FD, true))
        return st;
    PoolObject *p = nullptr;
    if (status_t st = resolve_pool(pool, &p))
        return st;
    if (!p->imported)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the pool was not imported (gpumem_pool_import_from_shareable_handle); pointers are imported "
                    "into the pool that imports their exporter's pool");
    size_t size = 0;
    if (status_t st = p->resource->import_pointer(*p, handle_bits(pool), data, ptr, &size))
        return st;
    // Only an import raises what the pool maps: the high-water marks follow it here.
    const uint64_t now = imported_bytes(*p, handle_bits(pool));
    for (std::atomic<uint64_t> *high : {&p->imported_reserved_high, &p->imported_used_high}) {
        uint64_t was = high->load(std::memory_order_relaxed);
        while (now > was && !high->compare_exchange_weak(was, now, std::memory_order_relaxed)) {
        }
    }
    return GPUMEM_SUCCESS;
}

void Pools::release_all(size_t *leaked_blocks, size_t *leaked_handles)
{
    if (!builtin_)
        return; // the backend never opened

    if (native_)
        *leaked_blocks += native_->release_blocks();
    *leaked_blocks += builtin_->release_blocks();
    for (int32_t d = 0; d < parts_.devices.count(); ++d)
        parts_.backend.device_synchronize(d);
    for (uint64_t h : pool_table().live_handles()) {
        PoolObject *p = pool_table().get(h);
        if (!p)
            continue;
        *leaked_blocks += p->resource->release_pool(*p);
        if (!p->is_default)
            ++*leaked_handles;
        p->resource = nullptr;
        p->impl = nullptr;
        pool_table().destroy(h);
    }
    {
        std::lock_guard<std::mutex> lock(defaults_mutex_);
        defaults_.clear();
    }
    if (native_)
        native_->release_all();
    builtin_->release_all();
}

} // namespace gpumem::detail
