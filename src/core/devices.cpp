#include "core/devices.hpp"

#include <cstring>

#include "base/log.hpp"
#include "core/stats.hpp"

namespace gpumem::detail {

status_t Devices::no_such_device(int32_t device) const
{
    return fail(GPUMEM_ERROR_INVALID_DEVICE, "device %d does not exist: the %s backend has %d device(s), 0 to %d", device,
                backend_name(backend_id_), count(), count() - 1);
}

status_t Devices::require_ipc(int32_t device, int32_t handle_type, bool pools) const
{
    // A fabric handle is 64 opaque bytes (CUDA's CUmemFabricHandle), which an int32_t descriptor
    // cannot carry: the export and import calls that take one are not the ones gpumem wraps.
    if (handle_type == GPUMEM_HANDLE_FABRIC)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "handle_type GPUMEM_HANDLE_FABRIC: a fabric handle is 64 opaque bytes, not a file descriptor, so "
                    "it cannot pass through this call's int32_t fd; sharing %s across nodes needs the driver's fabric "
                    "export and import (CUDA's %s with CU_MEM_HANDLE_TYPE_FABRIC) behind an entry point that takes "
                    "the 64 bytes, which gpumem does not have; within a node, share with GPUMEM_HANDLE_POSIX_FD",
                    pools ? "a pool" : "a memory handle",
                    pools ? "cuMemPoolExportToShareableHandle and cuMemPoolImportFromShareableHandle"
                          : "cuMemExportToShareableHandle and cuMemImportFromShareableHandle");
    if (handle_type != GPUMEM_HANDLE_POSIX_FD)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "handle_type %d: only GPUMEM_HANDLE_POSIX_FD is supported", handle_type);
    if (disabled(feature_ipc))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "sharing between processes (ipc) is disabled by GPUMEM_DISABLE");
    if (status_t st = check(device))
        return st;
    const DeviceState &dev = (*this)[device];
    if (!((pools ? dev.pool_ipc_types : dev.ipc_types) & GPUMEM_HANDLE_POSIX_FD)) {
        const char *broken = broken_reason(selftest_vmm_ipc, device);
        if (!broken && pools)
            broken = broken_reason(selftest_pool_ipc, device);
        if (broken)
            return fail(GPUMEM_ERROR_NOT_SUPPORTED, "device %d cannot share %s through POSIX file descriptors: "
                        "sharing is %s", device, pools ? "pools" : "memory handles", broken);
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "device %d cannot share %s through POSIX file descriptors%s", device,
                    pools ? "pools" : "memory handles",
                    pools ? " (gpumem's own pool shares only on the host backend: do not disable native pools)" : "");
    }
    return GPUMEM_SUCCESS;
}

status_t Devices::require_fabric(int32_t device, uint32_t handle_types) const
{
    if (!(handle_types & GPUMEM_HANDLE_FABRIC))
        return GPUMEM_SUCCESS;
    if (disabled(feature_ipc))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "fabric handles (GPUMEM_HANDLE_FABRIC) are a kind of sharing, and sharing (ipc) is disabled by "
                    "GPUMEM_DISABLE");
    if (!(*this)[device].caps.fabric_handles)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "fabric handles (GPUMEM_HANDLE_FABRIC) are not supported on device %d of the %s backend "
                    "(gpumem_device_info_t.fabric_handles is GPUMEM_SUPPORT_NONE); share within a node with "
                    "GPUMEM_HANDLE_POSIX_FD",
                    device, backend_name(backend_id_));
    return GPUMEM_SUCCESS;
}

const char *Devices::broken_reason(SelftestFeature feature, int32_t device) const
{
    if (device < 0 || device >= count())
        return nullptr;
    const DeviceState &dev = (*this)[device];
    return dev.selftest.broken(feature) ? dev.broken_text[feature].c_str() : nullptr;
}

const char *Devices::why_absent(Feature feature, int32_t device) const
{
    if (disabled(feature))
        return "disabled by GPUMEM_DISABLE";
    const char *broken = nullptr;
    switch (feature) {
    case feature_managed: broken = broken_reason(selftest_managed, device); break;
    case feature_vmm: broken = broken_reason(selftest_vmm, device); break;
    case feature_host_register: broken = broken_reason(selftest_host_register, device); break;
    case feature_ipc:
        broken = broken_reason(selftest_vmm_ipc, device);
        if (!broken)
            broken = broken_reason(selftest_pool_ipc, device);
        break;
    case feature_pools: break;
    }
    return broken ? broken : "not supported";
}

void Devices::note_fallback(Feature feature, int32_t device, const char *what) const
{
    stats().on_fallback();
    const uint32_t bit = static_cast<uint32_t>(feature);
    if (fallbacks_logged_.fetch_or(bit) & bit)
        return;
    const char *why = why_absent(feature, device);
    if (std::strcmp(why, "not supported") == 0)
        why = "not supported by the device";
    log(LogLevel::warn, "%s on device %d is %s; %s (GPUMEM_FALLBACK=deny refuses instead)", feature_name(feature),
        device, why, what);
}

status_t Devices::set_current(int32_t device) const
{
    if (status_t st = check(device))
        return st;
    return runtime_.set_current_device(device);
}

} // namespace gpumem::detail
