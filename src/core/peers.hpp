// Peer access between devices: policy and checks; the vendor work is the
// backend's optional PeerAccess facet (absent: no device reaches another's
// plain device memory, and can_access answers 0).
#pragma once

#include <cstdint>

#include "base/error.hpp"

namespace gpumem::detail {

class Devices;
class PeerAccess;

class Peers {
public:
    // `access`: the backend's facet, or nullptr where it has none.
    Peers(PeerAccess *access, const Devices &devices) : access_(access), devices_(devices) {}
    Peers(const Peers &) = delete;
    Peers &operator=(const Peers &) = delete;

    // Whether `device` can reach `peer`'s plain device memory once access is
    // enabled: never where either device lacks peer access (DeviceCaps::
    // peer_access: one device alone, or peer access that failed its self-test).
    status_t can_access(int32_t device, int32_t peer, int32_t *can_access) const;
    // From the calling thread's current device to `peer`; idempotent.
    status_t enable(int32_t peer);
    status_t disable(int32_t peer);

private:
    // The calling thread's current device and `peer`: both valid, and distinct.
    status_t check_pair(int32_t peer, const char *verb, int32_t *device) const;
    // The first of `device` and `peer` whose peer access failed its
    // self-test, with the reason; nullptr where neither's did.
    const char *broken(int32_t device, int32_t peer, int32_t *which) const;

    PeerAccess *access_;
    const Devices &devices_;
};

} // namespace gpumem::detail
