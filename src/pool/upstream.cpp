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

status_t PoolUpstream::back(void *ptr, size_t size)
{
    return fail(GPUMEM_ERROR_BACKEND, "the pool's upstream cannot back %zu bytes at %p: its chunks are not paged", size,
                ptr);
}

void PoolUpstream::unback(void *, size_t) {}

status_t PoolUpstream::back_units(void *ptr, size_t size, const size_t *unit_bytes, size_t count)
{
    char *p = static_cast<char *>(ptr);
    size_t done = 0;
    for (size_t i = 0; i < count; ++i) {
        if (status_t st = back(p + done, unit_bytes[i])) {
            if (done)
                unback(p, done); // all or nothing
            return st;
        }
        done += unit_bytes[i];
    }
    (void)size; // the units cover it
    return GPUMEM_SUCCESS;
}

status_t PoolUpstream::address_of(uint64_t, uint64_t, uint64_t, void **)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED, "this pool was not imported from another process");
}

} // namespace gpumem::detail
