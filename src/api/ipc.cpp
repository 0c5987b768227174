// Passing descriptors between processes (SCM_RIGHTS over AF_UNIX).
#include "api/entry.hpp"
#include "core/ipc_fd.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT gpumem_status_t gpumem_ipc_send_fd(int32_t socket, int32_t fd)
{
    return entry_no_runtime("gpumem_ipc_send_fd", [&]() {
        GPUMEM_REQUIRE(socket >= 0 && fd >= 0, "socket %d and fd %d must both be open descriptors", socket, fd);
        return send_fd(socket, fd);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_ipc_recv_fd(int32_t socket, int32_t *fd)
{
    return entry_no_runtime("gpumem_ipc_recv_fd", [&]() {
        GPUMEM_REQUIRE(fd, "fd is NULL: pass the address of an int32_t");
        GPUMEM_REQUIRE(socket >= 0, "socket %d is not a descriptor", socket);
        int out = -1;
        if (status_t st = recv_fd(socket, &out))
            return st;
        *fd = out;
        return GPUMEM_SUCCESS;
    });
}
