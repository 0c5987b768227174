#include "pool/upstream.hpp"

namespace gpumem::detail {

// Defaults for upstreams that cannot be shared between processes.
status_t PoolUpstream::export_fd(int *)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "this pool's memory cannot be shared; create the pool with handle_types = GPUMEM_HANDLE_POSIX_FD");
}

status_t PoolUpstream::offset_of(const void *, uint64_t *, uint64_t *) const
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "this pool's memory cannot be shared; create the pool with handle_types = GPUMEM_HANDLE_POSIX_FD");
}

status_t PoolUpstream::address_of(uint64_t, uint64_t, uint64_t, void **)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this pool was not imported from another process");
}

} // namespace gpumem::detail
