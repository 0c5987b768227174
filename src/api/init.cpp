// Version, init, backends, devices, pointer info, statistics and tracing.
#include <cstdio>
#include <cstring>

#include "api/entry.hpp"
#include "backends/backend.hpp"
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

GPUMEM_EXPORT const char *gpumem_backend_name(int32_t backend) { return backend_name(backend); }

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
        return devices::set_current(rt, device);
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

GPUMEM_EXPORT gpumem_status_t gpumem_device_can_access_peer(int32_t *can_access, int32_t device, int32_t peer)
{
    return entry("gpumem_device_can_access_peer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(can_access, "can_access is NULL: pass the address of an int32_t");
        return rt.peers.can_access(device, peer, can_access);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_enable_peer_access(int32_t peer)
{
    return entry("gpumem_device_enable_peer_access", [&](Runtime &rt) {
        return rt.peers.enable(peer);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_disable_peer_access(int32_t peer)
{
    return entry("gpumem_device_disable_peer_access", [&](Runtime &rt) {
        return rt.peers.disable(peer);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_info(int32_t device, gpumem_device_info_t *info)
{
    return entry("gpumem_device_get_info", [&](Runtime &rt) {
        GPUMEM_REQUIRE_STRUCT(info, gpumem_device_info_t);
        gpumem_device_info_t full{};
        full.size = sizeof full;
        if (status_t st = devices::info(rt, device, &full))
            return st;
        write_struct(info, full);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_workarounds_get(const char **names, const char **descriptions, size_t capacity,
                                                     size_t *count)
{
    return entry("gpumem_workarounds_get", [&](Runtime &rt) {
        GPUMEM_REQUIRE(count, "count is NULL: pass the address of a size_t to receive the number of workarounds");
        GPUMEM_REQUIRE(names || capacity == 0, "names is NULL but capacity is %zu: pass an array of capacity entries, "
                       "or capacity 0 to ask only for the count", capacity);
        return devices::workarounds(rt, names, descriptions, capacity, count);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
    return entry("gpumem_mem_get_info", [&](Runtime &rt) {
        GPUMEM_REQUIRE(free_bytes && total_bytes, "free_bytes and total_bytes must both be non-NULL");
        return devices::mem_info(rt, free_bytes, total_bytes);
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
        PointerInfo found;
        // Memory gpumem did not make stays kind UNKNOWN; what the runtime knows of it fills the rest.
        if (!rt.pointers.find(ptr, &found)) {
            VendorPointer vendor;
            if (status_t st = rt.pointers.ask_runtime(ptr, &vendor))
                return st;
            if (vendor.known) {
                found.device = vendor.device;
                found.base = reinterpret_cast<uintptr_t>(vendor.base);
                found.size = vendor.size;
                found.memory = vendor.memory;
                full.vendor_known = 1;
            }
        }
        full.kind = found.kind;
        full.device = found.device;
        full.base = reinterpret_cast<void *>(found.base);
        full.alloc_size = found.size;
        full.emulated = found.emulated;
        full.flags = found.flags;
        full.device_pointer = found.device_pointer;
        full.pool = handle_from_bits<gpumem_pool_t>(found.pool);
        full.memory = found.memory;
        write_struct(info, full);
        return GPUMEM_SUCCESS;
    });
}
