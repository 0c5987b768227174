// Peer access between devices: policy and checks; the vendor work is the
// backend's optional PeerAccess facet (absent: no device reaches another's
// plain device memory, and can_access answers 0).
#include "core/runtime.hpp"

#include "base/options.hpp"

namespace gpumem::detail::devices {

namespace {

// The calling thread's current device and `peer`: both valid, and distinct.
status_t check_pair(const Runtime &rt, int32_t peer, const char *verb, int32_t *device)
{
    *device = current_device();
    if (status_t st = check_device(rt, *device))
        return st;
    if (status_t st = check_device(rt, peer))
        return st;
    if (peer == *device)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot %s peer access to device %d from itself: a device always reaches its own memory; "
                    "call gpumem_set_device with another device first, or pass another peer",
                    verb, peer);
    return GPUMEM_SUCCESS;
}

} // namespace

status_t can_access_peer(Runtime &rt, int32_t device, int32_t peer, int32_t *can_access)
{
    if (status_t st = check_device(rt, device))
        return st;
    if (status_t st = check_device(rt, peer))
        return st;
    PeerAccess *pa = rt.backend->peer_access();
    if (device == peer || pa == nullptr) {
        *can_access = 0;
        return GPUMEM_SUCCESS;
    }
    return pa->can_access_peer(device, peer, can_access);
}

status_t enable_peer_access(Runtime &rt, int32_t peer)
{
    int32_t device = 0;
    if (status_t st = check_pair(rt, peer, "enable", &device))
        return st;
    PeerAccess *pa = rt.backend->peer_access();
    if (pa == nullptr)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot enable peer access from device %d to device %d: the %s backend has no peer access; "
                    "copy through gpumem_memcpy, which needs none",
                    device, peer, backend_name(rt.backend_id));
    return pa->enable_peer_access(device, peer);
}

status_t disable_peer_access(Runtime &rt, int32_t peer)
{
    int32_t device = 0;
    if (status_t st = check_pair(rt, peer, "disable", &device))
        return st;
    PeerAccess *pa = rt.backend->peer_access();
    if (pa == nullptr)
        return GPUMEM_SUCCESS; // never enabled
    return pa->disable_peer_access(device, peer);
}

} // namespace gpumem::detail::devices
