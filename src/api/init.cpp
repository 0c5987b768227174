// Version, init, backends, devices, pointer info, statistics and tracing.
#include <cstdio>
#include <cstring>

#include "api/entry.hpp"
#include "core/stats.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT const char *gpumem_status_string(gpumem_status_t status) { return status_name(status); }

GPUMEM_EXPORT const char *gpumem_last_error_message(void) { return last_error_message(); }

GPUMEM_EXPORT int32_t gpumem_version(void) { return GPUMEM_VERSION; }

GPUMEM_EXPORT gpumem_status_t gpumem_init(int32_t backend)
{
    try {
        return runtime_init(backend);
    } catch (...) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "gpumem_init: out of host memory");
    }
}

GPUMEM_EXPORT gpumem_status_t gpumem_finalize(void)
{
    try {
        return runtime_finalize();
    } catch (...) {
        return fail(GPUMEM_ERROR_BACKEND, "gpumem_finalize: internal error (please report it)");
    }
}

GPUMEM_EXPORT gpumem_status_t gpumem_get_backend(int32_t *backend)
{
    return entry("gpumem_get_backend", [&](Runtime &rt) {
        GPUMEM_REQUIRE(backend, "backend is NULL: pass the address of an int32_t");
        *backend = rt.backend_id;
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT const char *gpumem_backend_name(int32_t backend)
{
    switch (backend) {
    case GPUMEM_BACKEND_AUTO: return "auto";
    case GPUMEM_BACKEND_HOST: return "host";
    case GPUMEM_BACKEND_CUDA: return "cuda";
    case GPUMEM_BACKEND_HIP: return "hip";
    default: return "unknown";
    }
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_count(int32_t *count)
{
    return entry("gpumem_device_count", [&](Runtime &rt) {
        GPUMEM_REQUIRE(count, "count is NULL: pass the address of an int32_t");
        *count = rt.device_count();
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_set_device(int32_t device)
{
    return entry("gpumem_set_device", [&](Runtime &rt) {
        if (status_t st = check_device(rt, device))
            return st;
        if (status_t st = rt.backend->activate(device))
            return st;
        set_current_device(device);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_get_device(int32_t *device)
{
    return entry("gpumem_get_device", [&](Runtime &) {
        GPUMEM_REQUIRE(device, "device is NULL: pass the address of an int32_t");
        *device = current_device();
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_info(int32_t device, gpumem_device_info_t *info)
{
    return entry("gpumem_device_get_info", [&](Runtime &rt) {
        GPUMEM_REQUIRE_STRUCT(info, gpumem_device_info_t);
        if (status_t st = check_device(rt, device))
            return st;
        const DeviceState &dev = *rt.devices[device];
        gpumem_device_info_t full{};
        full.size = sizeof full;
        std::snprintf(full.name, sizeof full.name, "%s", dev.caps.name.c_str());
        std::snprintf(full.arch_name, sizeof full.arch_name, "%s", dev.caps.arch.c_str());
        full.backend = rt.backend_id;
        full.device = device;
        size_t free_bytes = 0, total_bytes = 0;
        if (rt.backend->mem_info(device, &free_bytes, &total_bytes) == GPUMEM_SUCCESS) {
            full.total_memory = total_bytes;
            full.free_memory = free_bytes;
        } else {
            full.total_memory = dev.caps.total_memory;
            full.free_memory = dev.caps.free_memory;
        }
        full.managed_memory = dev.managed_level;
        // Emulated managed memory is pinned host memory: it never migrates.
        full.managed_migrates = dev.managed_level == GPUMEM_SUPPORT_NATIVE && dev.caps.managed_migrates;
        full.pageable_memory_access = dev.caps.pageable_access;
        full.memory_pools = dev.pools_level;
        full.virtual_memory = dev.vmm_level;
        full.ipc_handle_types = dev.ipc_types;
        full.pool_ipc_handle_types = dev.pool_ipc_types;
        full.vmm_granularity = dev.caps.vmm_granularity;
        full.vmm_recommended_granularity = dev.caps.vmm_recommended_granularity;
        full.host_register = dev.host_register_level;
        full.compute_capability = dev.caps.compute_capability;
        write_struct(info, full);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
    return entry("gpumem_mem_get_info", [&](Runtime &rt) {
        GPUMEM_REQUIRE(free_bytes && total_bytes, "free_bytes and total_bytes must both be non-NULL");
        int32_t device = current_device();
        if (status_t st = check_device(rt, device))
            return st;
        return rt.backend->mem_info(device, free_bytes, total_bytes);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_get_stats(gpumem_stats_t *out)
{
    return entry("gpumem_get_stats", [&](Runtime &) {
        GPUMEM_REQUIRE_STRUCT(out, gpumem_stats_t);
        stats().read(out);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_reset_peak_stats(void)
{
    return entry("gpumem_reset_peak_stats", [&](Runtime &) {
        stats().reset_peaks();
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_set_trace_callback(gpumem_trace_fn fn, void *user)
{
    return entry("gpumem_set_trace_callback", [&](Runtime &) {
        set_trace(fn, user);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pointer_get_info(const void *ptr, gpumem_pointer_info_t *info)
{
    return entry("gpumem_pointer_get_info", [&](Runtime &rt) {
        GPUMEM_REQUIRE_STRUCT(info, gpumem_pointer_info_t);
        gpumem_pointer_info_t full{};
        full.size = sizeof full;
        full.kind = GPUMEM_KIND_UNKNOWN;
        full.device = GPUMEM_DEVICE_HOST;
        Allocation a;
        pool::Allocation block;
        NativeBlock native;
        if (!ptr) {
            // NULL is nobody's memory.
        } else if (rt.registry.find_containing(ptr, &a)) {
            full.kind = a.kind;
            full.device = a.device;
            full.base = reinterpret_cast<void *>(a.base);
            full.alloc_size = a.size;
            full.emulated = a.emulated;
            full.flags = a.flags;
            full.device_pointer = a.device_pointer ? static_cast<char *>(a.device_pointer) : full.base;
        } else if (pool::lookup(ptr, &block)) {
            full.kind = GPUMEM_KIND_STREAM_ORDERED;
            full.device = block.device;
            full.base = block.base;
            full.alloc_size = block.size;
            full.pool = handle_from_bits<gpumem_pool_t>(pool_handle_of(rt, block.pool));
            if (PoolObject *p = full.pool ? pool_table().get(handle_bits(full.pool)) : nullptr)
                full.emulated = p->emulated;
            full.device_pointer = block.base;
        } else if (void *native_base = nullptr; rt.native_pools && rt.native_blocks.find_containing(ptr, &native_base, &native)) {
            full.kind = GPUMEM_KIND_STREAM_ORDERED;
            full.device = native.device;
            full.base = native_base;
            full.alloc_size = native.size;
            full.pool = handle_from_bits<gpumem_pool_t>(native.pool);
            full.device_pointer = native_base;
        } else {
            // VMM: a mapped range, or an unmapped part of a reservation.
            std::lock_guard<std::mutex> lock(rt.vmm_mutex);
            uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
            auto it = rt.reservations.upper_bound(p);
            if (it != rt.reservations.begin() && p < std::prev(it)->first + std::prev(it)->second.size) {
                --it;
                full.kind = GPUMEM_KIND_VIRTUAL;
                full.base = reinterpret_cast<void *>(it->first);
                full.alloc_size = it->second.size;
                auto m = it->second.mappings.upper_bound(p);
                if (m != it->second.mappings.begin() && p < std::prev(m)->first + std::prev(m)->second.size) {
                    --m;
                    full.base = reinterpret_cast<void *>(m->first);
                    full.alloc_size = m->second.size;
                    full.device = m->second.device;
                }
                full.device_pointer = full.base;
            }
        }
        write_struct(info, full);
        return GPUMEM_SUCCESS;
    });
}
