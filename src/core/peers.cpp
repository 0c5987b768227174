#include "core/peers.hpp"

#include <initializer_list>

#include "backends/backend.hpp"
#include "base/options.hpp"
#include "core/devices.hpp"

namespace gpumem::detail {

status_t Peers::check_pair(int32_t peer, const char *verb, int32_t *device) const
{
    *device = current_device();
    if (status_t st = devices_.check(*device))
        return st;
    if (status_t st = devices_.check(peer))
        return st;
    if (peer == *device)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot %s peer access to device %d from itself: a device always reaches its own memory; "
                    "call gpumem_set_device with another device first, or pass another peer",
                    verb, peer);
    return GPUMEM_SUCCESS;
}

const char *Peers::broken(int32_t device, int32_t peer, int32_t *which) const
{
    for (int32_t d : {device, peer})
        if (const char *why = devices_.broken_reason(selftest_peer, d)) {
            *which = d;
            return why;
        }
    return nullptr;
}

status_t Peers::can_access(int32_t device, int32_t peer, int32_t *can_access) const
{
    if (status_t st = devices_.check(device))
        return st;
    if (status_t st = devices_.check(peer))
        return st;
    if (device == peer || access_ == nullptr || !devices_[device].caps.peer_access ||
        !devices_[peer].caps.peer_access) {
        *can_access = 0;
        return GPUMEM_SUCCESS;
    }
    return access_->can_access_peer(device, peer, can_access);
}

status_t Peers::enable(int32_t peer)
{
    int32_t device = 0;
    if (status_t st = check_pair(peer, "enable", &device))
        return st;
    if (access_ == nullptr)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot enable peer access from device %d to device %d: the %s backend has no peer access; "
                    "copy through gpumem_memcpy, which needs none",
                    device, peer, backend_name(devices_.backend_id()));
    // Access the self-test found broken is not offered (can_access answers
    // 0): enabling it would succeed and the first copy would fail.  There is
    // nothing to fall back to, so GPUMEM_FALLBACK does not change this.
    int32_t which = 0;
    if (const char *why = broken(device, peer, &which))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot enable peer access from device %d to device %d: peer access on device %d is %s; "
                    "copy through gpumem_memcpy, which needs no peer access",
                    device, peer, which, why);
    return access_->enable_peer_access(device, peer, nullptr);
}

status_t Peers::disable(int32_t peer)
{
    int32_t device = 0;
    if (status_t st = check_pair(peer, "disable", &device))
        return st;
    if (access_ == nullptr)
        return GPUMEM_SUCCESS; // never enabled
    return access_->disable_peer_access(device, peer);
}

} // namespace gpumem::detail
