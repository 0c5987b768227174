#include "core/peers.hpp"

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

status_t Peers::can_access(int32_t device, int32_t peer, int32_t *can_access) const
{
    if (status_t st = devices_.check(device))
        return st;
    if (status_t st = devices_.check(peer))
        return st;
    if (device == peer || access_ == nullptr) {
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
    return access_->enable_peer_access(device, peer);
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
