// Stream-ordered allocation, memory pools, pool sharing and framework hooks.
#include <unordered_map>

#include "api/entry.hpp"
#include "core/stats.hpp"

using namespace gpumem::detail;

namespace {

status_t no_pools(Runtime &rt, int32_t device)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "memory pools are %s on device %d and GPUMEM_FALLBACK=deny refuses gpumem's own pool",
                rt.disabled(feature_pools) ? "disabled by GPUMEM_DISABLE" : "not supported", device);
}

// The hot path: a block from `p` in `stream`'s order.
inline status_t allocate_from(Runtime &rt, PoolObject &p, uint64_t pool_handle, size_t size, gpumem_stream_t stream,
                              void **ptr)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    if (p.native) {
        if (p.imported) [[unlikely]]
            return fail(GPUMEM_ERROR_INVALID_VALUE, "imported pools cannot allocate; allocate in the exporting "
                        "process and import the pointer with gpumem_pool_import_pointer");
        if (status_t st = rt.backend->native_pools()->alloc(p.native, size, s->state.native, ptr))
            return st;
        NativeBlock block;
        block.size = size;
        block.pool = pool_handle;
        block.device = p.device;
        try {
            rt.native_blocks.insert(*ptr, block);
        } catch (...) {
            rt.backend->native_pools()->free(*ptr, s->state.native);
            *ptr = nullptr;
            throw;
        }
    } else if (status_t st = pool::allocate(p.impl, size, s->state, ptr)) {
        return st;
    }
    if (p.emulated) [[unlikely]]
        note_fallback(rt, feature_pools, p.device, "stream-ordered allocations come from gpumem's own pool");
    account_alloc(GPUMEM_KIND_STREAM_ORDERED, *ptr, size, p.device, p.emulated, stream,
                  handle_from_bits<gpumem_pool_t>(pool_handle));
    return GPUMEM_SUCCESS;
}

inline status_t current_pool(Runtime &rt, int32_t device, PoolObject **p, uint64_t *handle)
{
    if (status_t st = check_device(rt, device))
        return st;
    DeviceState &dev = *rt.devices[device];
    uint64_t h = dev.current_pool.load(std::memory_order_acquire);
    if (!h)
        return no_pools(rt, device);
    PoolObject *obj = pool_table().get(h);
    if (!obj) {
        // The current pool was destroyed under us: the default takes over.
        h = dev.default_pool;
        obj = pool_table().get(h);
        if (!obj)
            return no_pools(rt, device);
    }
    *p = obj;
    *handle = h;
    return GPUMEM_SUCCESS;
}

inline status_t free_in_order(Runtime &rt, void *ptr, gpumem_stream_t stream)
{
    if (!ptr)
        return GPUMEM_SUCCESS;
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(rt, stream, &s))
        return st;
    NativeBlock block;
    if (rt.native_pools && rt.native_blocks.take(ptr, &block)) {
        if (status_t st = rt.backend->native_pools()->free(ptr, s->state.native)) {
            rt.native_blocks.insert(ptr, block);
            return st;
        }
        account_free(GPUMEM_KIND_STREAM_ORDERED, ptr, block.size, block.device, false, stream,
                     handle_from_bits<gpumem_pool_t>(block.pool));
        return GPUMEM_SUCCESS;
    }
    pool::Allocation freed;
    if (pool::deallocate(ptr, s->state, &freed) != GPUMEM_SUCCESS)
        return explain_bad_pointer(rt, ptr, "stream-ordered memory from gpumem_malloc_async");
    gpumem_pool_t pool_handle = nullptr;
    if (g_trace_enabled.load(std::memory_order_relaxed))
        pool_handle = handle_from_bits<gpumem_pool_t>(pool_handle_of(rt, freed.pool));
    account_free(GPUMEM_KIND_STREAM_ORDERED, ptr, freed.size, freed.device, false, stream, pool_handle);
    return GPUMEM_SUCCESS;
}

} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_malloc_async(void **ptr, size_t size, gpumem_stream_t stream)
{
    return entry("gpumem_malloc_async", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        if (size == 0)
            return GPUMEM_SUCCESS;
        PoolObject *p = nullptr;
        uint64_t handle = 0;
        if (status_t st = current_pool(rt, current_device(), &p, &handle))
            return st;
        return allocate_from(rt, *p, handle, size, stream, ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_free_async(void *ptr, gpumem_stream_t stream)
{
    return entry("gpumem_free_async", [&](Runtime &rt) { return free_in_order(rt, ptr, stream); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_malloc_from_pool_async(void **ptr, size_t size, gpumem_pool_t pool,
                                                            gpumem_stream_t stream)
{
    return entry("gpumem_malloc_from_pool_async", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        if (size == 0)
            return GPUMEM_SUCCESS;
        return allocate_from(rt, *p, handle_bits(pool), size, stream, ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_create(gpumem_pool_t *pool, const gpumem_pool_props_t *props)
{
    return entry("gpumem_pool_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        gpumem_pool_props_t p{};
        p.size = sizeof p;
        p.device = current_device();
        if (props) {
            GPUMEM_REQUIRE_STRUCT(props, gpumem_pool_props_t);
            p = read_struct(props);
        }
        if (status_t st = check_device(rt, p.device))
            return st;
        GPUMEM_REQUIRE(!(p.handle_types & ~static_cast<uint32_t>(GPUMEM_HANDLE_POSIX_FD)),
                       "handle_types 0x%x has unknown bits; use GPUMEM_HANDLE_NONE or GPUMEM_HANDLE_POSIX_FD",
                       p.handle_types);
        GPUMEM_REQUIRE(p.implementation >= GPUMEM_POOL_AUTO && p.implementation <= GPUMEM_POOL_BUILTIN,
                       "implementation %d is not GPUMEM_POOL_AUTO, _NATIVE or _BUILTIN", p.implementation);
        uint64_t handle = 0;
        if (status_t st = make_pool(rt, p, false, &handle))
            return st;
        *pool = handle_from_bits<gpumem_pool_t>(handle);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_destroy(gpumem_pool_t pool)
{
    return entry("gpumem_pool_destroy", [&](Runtime &rt) {
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        GPUMEM_REQUIRE(!p->is_default, "the default pool of device %d cannot be destroyed", p->device);
        uint64_t handle = handle_bits(pool);
        if (p->device >= 0 && p->device < rt.device_count()) {
            DeviceState &dev = *rt.devices[p->device];
            uint64_t expected = handle;
            dev.current_pool.compare_exchange_strong(expected, dev.default_pool, std::memory_order_acq_rel);
        }
        if (!pool_table().retire(handle))
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "pool %p was destroyed by another thread", static_cast<void *>(pool));
        pool::Pool *impl = p->impl;
        void *native = p->native;
        p->impl = nullptr;
        p->native = nullptr;
        pool_table().recycle(handle);
        if (native)
            return rt.backend->native_pools()->destroy(native); // the vendor keeps outstanding blocks valid
        {
            std::lock_guard<std::mutex> lock(rt.pools_mutex);
            rt.pool_handles.erase(impl);
        }
        pool::destroy(impl);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_default_pool(gpumem_pool_t *pool, int32_t device)
{
    return entry("gpumem_device_get_default_pool", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        if (status_t st = check_device(rt, device))
            return st;
        uint64_t h = rt.devices[device]->default_pool;
        if (!h)
            return no_pools(rt, device);
        *pool = handle_from_bits<gpumem_pool_t>(h);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_set_pool(int32_t device, gpumem_pool_t pool)
{
    return entry("gpumem_device_set_pool", [&](Runtime &rt) {
        if (status_t st = check_device(rt, device))
            return st;
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        GPUMEM_REQUIRE(p->device == device, "the pool belongs to device %d, not device %d", p->device, device);
        GPUMEM_REQUIRE(!p->imported, "an imported pool cannot allocate, so it cannot be current");
        rt.devices[device]->current_pool.store(handle_bits(pool), std::memory_order_release);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_pool(gpumem_pool_t *pool, int32_t device)
{
    return entry("gpumem_device_get_pool", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        PoolObject *p = nullptr;
        uint64_t handle = 0;
        if (status_t st = current_pool(rt, device, &p, &handle))
            return st;
        *pool = handle_from_bits<gpumem_pool_t>(handle);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_set_attribute(gpumem_pool_t pool, int32_t attr, const void *value)
{
    return entry("gpumem_pool_set_attribute", [&](Runtime &rt) {
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        GPUMEM_REQUIRE(value, "value is NULL: pass the address of the attribute's new value");
        // The reuse flags are 0 or 1 for every pool (the vendors take any non-zero as 1).
        if (attr >= GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
            attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) {
            int32_t flag = 0;
            std::memcpy(&flag, value, sizeof flag);
            GPUMEM_REQUIRE(flag == 0 || flag == 1, "pool attribute %d takes 0 or 1, not %d", attr, flag);
        }
        return p->native ? rt.backend->native_pools()->set_attribute(p->native, attr, value)
                         : pool::set_attribute(p->impl, attr, value);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_get_attribute(gpumem_pool_t pool, int32_t attr, void *value)
{
    return entry("gpumem_pool_get_attribute", [&](Runtime &rt) {
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        GPUMEM_REQUIRE(value, "value is NULL: pass the address to receive the attribute's value");
        return p->native ? rt.backend->native_pools()->get_attribute(p->native, attr, value)
                         : pool::get_attribute(p->impl, attr, value);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_trim_to(gpumem_pool_t pool, size_t min_bytes_to_keep)
{
    return entry("gpumem_pool_trim_to", [&](Runtime &rt) {
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        return p->native ? rt.backend->native_pools()->trim(p->native, min_bytes_to_keep) : pool::trim_to(p->impl, min_bytes_to_keep);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_set_access(gpumem_pool_t pool, const gpumem_access_desc_t *descs,
                                                     size_t count)
{
    return entry("gpumem_pool_set_access", [&](Runtime &rt) {
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        GPUMEM_REQUIRE(descs && count > 0, "descs is NULL or count is 0: give at least one gpumem_access_desc_t");
        for (size_t i = 0; i < count; ++i) {
            if (status_t st = check_device(rt, descs[i].device))
                return st;
            int32_t f = descs[i].flags;
            GPUMEM_REQUIRE(f == GPUMEM_ACCESS_NONE || f == GPUMEM_ACCESS_READ || f == GPUMEM_ACCESS_READWRITE,
                           "descs[%zu].flags %d is not GPUMEM_ACCESS_NONE, _READ or _READWRITE", i, f);
            GPUMEM_REQUIRE(descs[i].device != p->device || f == GPUMEM_ACCESS_READWRITE,
                           "device %d owns the pool and always has GPUMEM_ACCESS_READWRITE", p->device);
        }
        if (p->native)
            for (size_t i = 0; i < count; ++i)
                if (descs[i].device != p->device)
                    if (status_t st = rt.backend->native_pools()->set_access(p->native, descs[i].device, descs[i].flags))
                        return st;
        std::lock_guard<std::mutex> lock(p->mutex);
        for (size_t i = 0; i < count; ++i)
            p->access[descs[i].device] = descs[i].flags;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_get_access(int32_t *flags, gpumem_pool_t pool, int32_t device)
{
    return entry("gpumem_pool_get_access", [&](Runtime &rt) {
        GPUMEM_REQUIRE(flags, "flags is NULL: pass the address of an int32_t");
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        if (status_t st = check_device(rt, device))
            return st;
        std::lock_guard<std::mutex> lock(p->mutex);
        auto it = p->access.find(device);
        *flags = it == p->access.end() ? GPUMEM_ACCESS_NONE : it->second;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_export_to_shareable_handle(int32_t *fd, gpumem_pool_t pool,
                                                                     int32_t handle_type)
{
    return entry("gpumem_pool_export_to_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(fd, "fd is NULL: pass the address of an int32_t");
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        if (status_t st = require_ipc(rt, p->device, handle_type, true))
            return st;
        GPUMEM_REQUIRE(p->handle_types & GPUMEM_HANDLE_POSIX_FD,
                       "the pool was created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it cannot be shared");
        int out = -1;
        if (status_t st = p->native ? rt.backend->native_pools()->export_pool(p->native, &out) : pool::export_fd(p->impl, &out))
            return st;
        *fd = out;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_import_from_shareable_handle(gpumem_pool_t *pool, int32_t fd,
                                                                       int32_t handle_type)
{
    return entry("gpumem_pool_import_from_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        GPUMEM_REQUIRE(fd >= 0, "fd %d is not a file descriptor", fd);
        if (status_t st = require_ipc(rt, current_device(), handle_type, true))
            return st;
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        void *native = nullptr;
        pool::Pool *impl = nullptr;
        if (rt.backend->native_pools() && rt.devices[device]->pools_level == GPUMEM_SUPPORT_NATIVE) {
            if (status_t st = rt.backend->native_pools()->import_pool(fd, &native))
                return st;
        } else {
            std::unique_ptr<PoolUpstream> upstream;
            if (status_t st = rt.backend->pool_upstream_import(fd, &upstream))
                return st;
            pool::Config config;
            config.device = device;
            if (status_t st = pool::create(std::move(upstream), config, &impl))
                return st;
        }
        uint64_t handle = 0;
        PoolObject *p = pool_table().create(&handle);
        p->impl = impl;
        p->native = native;
        p->imported = true;
        p->device = device;
        p->handle_types = GPUMEM_HANDLE_POSIX_FD;
        p->emulated = false;
        p->is_default = false;
        {
            std::lock_guard<std::mutex> lock(p->mutex);
            p->access.clear();
            p->access[device] = GPUMEM_ACCESS_READWRITE;
        }
        if (impl) {
            std::lock_guard<std::mutex> lock(rt.pools_mutex);
            rt.pool_handles[impl] = handle;
        }
        *pool = handle_from_bits<gpumem_pool_t>(handle);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_export_pointer(gpumem_pool_ptr_export_data_t *data, void *ptr)
{
    return entry("gpumem_pool_export_pointer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(data, "data is NULL: pass the address of a gpumem_pool_ptr_export_data_t");
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        if (status_t st = require_ipc(rt, current_device(), GPUMEM_HANDLE_POSIX_FD, true))
            return st;
        void *base = nullptr;
        NativeBlock native;
        if (rt.native_blocks.find_containing(ptr, &base, &native) && base == ptr) {
            PoolObject *p = pool_table().get(native.pool);
            GPUMEM_REQUIRE(!p || (p->handle_types & GPUMEM_HANDLE_POSIX_FD),
                           "%p comes from a pool created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it "
                           "cannot be shared", ptr);
            return rt.backend->native_pools()->export_pointer(ptr, data);
        }
        pool::Allocation block;
        if (!pool::lookup(ptr, &block) || block.base != ptr)
            return explain_bad_pointer(rt, ptr, "stream-ordered memory from a pool created with GPUMEM_HANDLE_POSIX_FD");
        PoolObject *p = pool_table().get(pool_handle_of(rt, block.pool));
        GPUMEM_REQUIRE(!p || (p->handle_types & GPUMEM_HANDLE_POSIX_FD),
                       "%p comes from a pool created without GPUMEM_HANDLE_POSIX_FD in handle_types, so it cannot be "
                       "shared", ptr);
        return pool::export_pointer(ptr, data);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_import_pointer(void **ptr, gpumem_pool_t pool,
                                                         const gpumem_pool_ptr_export_data_t *data)
{
    return entry("gpumem_pool_import_pointer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer");
        GPUMEM_REQUIRE(data, "data is NULL: pass the export data from gpumem_pool_export_pointer");
        if (status_t st = require_ipc(rt, current_device(), GPUMEM_HANDLE_POSIX_FD, true))
            return st;
        PoolObject *p = nullptr;
        if (status_t st = resolve_pool(pool, &p))
            return st;
        GPUMEM_REQUIRE(p->imported,
                       "the pool was not imported (gpumem_pool_import_from_shareable_handle); pointers are imported "
                       "into the pool that imports their exporter's pool");
        size_t size = 0;
        if (p->native) {
            if (status_t st = rt.backend->native_pools()->import_pointer(p->native, data, ptr))
                return st;
            // The driver does not say how large an imported block is.
            NativeBlock block;
            block.pool = handle_bits(pool);
            block.device = p->device;
            block.imported = true;
            rt.native_blocks.insert(*ptr, block);
        } else {
            if (status_t st = pool::import_pointer(p->impl, data, ptr))
                return st;
            pool::Allocation block;
            size = pool::lookup(*ptr, &block) ? block.size : 0;
        }
        account_alloc(GPUMEM_KIND_STREAM_ORDERED, *ptr, size, p->device, false, nullptr, pool);
        return GPUMEM_SUCCESS;
    });
}

// Framework hooks: PyTorch passes its native stream; each one is wrapped once.
namespace {

std::mutex g_wrap_mutex;
std::unordered_map<void *, gpumem_stream_t> g_wrapped; // native stream -> wrapper

status_t stream_for_native(void *native, gpumem_stream_t *out)
{
    if (!native) {
        *out = nullptr;
        return GPUMEM_SUCCESS;
    }
    std::lock_guard<std::mutex> lock(g_wrap_mutex);
    auto it = g_wrapped.find(native);
    if (it != g_wrapped.end() && stream_table().get(handle_bits(it->second))) {
        *out = it->second;
        return GPUMEM_SUCCESS;
    }
    gpumem_stream_t wrapped = nullptr;
    if (status_t st = gpumem_stream_wrap(native, &wrapped))
        return st;
    g_wrapped[native] = wrapped;
    *out = wrapped;
    return GPUMEM_SUCCESS;
}

} // namespace

GPUMEM_EXPORT void *gpumem_pluggable_malloc(ssize_t size, int device, void *stream)
{
    void *ptr = nullptr;
    status_t st = entry("gpumem_pluggable_malloc", [&](Runtime &rt) {
        GPUMEM_REQUIRE(size >= 0, "size %zd is negative", size);
        if (size == 0)
            return GPUMEM_SUCCESS;
        PoolObject *p = nullptr;
        uint64_t handle = 0;
        if (status_t st = current_pool(rt, device, &p, &handle))
            return st;
        gpumem_stream_t s = nullptr;
        if (status_t st = stream_for_native(stream, &s))
            return st;
        return allocate_from(rt, *p, handle, static_cast<size_t>(size), s, &ptr);
    });
    return st == GPUMEM_SUCCESS ? ptr : nullptr;
}

GPUMEM_EXPORT void gpumem_pluggable_free(void *ptr, ssize_t, int, void *stream)
{
    entry("gpumem_pluggable_free", [&](Runtime &rt) {
        gpumem_stream_t s = nullptr;
        if (status_t st = stream_for_native(stream, &s))
            return st;
        return free_in_order(rt, ptr, s);
    });
}
