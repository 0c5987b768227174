// Passing descriptors between processes (SCM_RIGHTS over AF_UNIX), and
// dma-buf descriptors of device memory for other drivers (core/dmabuf).
#include <cstdint>

#include <unistd.h>

#include "api/entry.hpp"
#include "core/dmabuf.hpp"
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

GPUMEM_EXPORT gpumem_status_t gpumem_mem_export_dmabuf(int32_t *fd, const void *ptr, size_t size, uint32_t flags)
{
    return entry("gpumem_mem_export_dmabuf", [&](Runtime &rt) {
        static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
        const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
        GPUMEM_REQUIRE(fd, "fd is NULL: pass the address of an int32_t");
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass device memory gpumem made");
        GPUMEM_REQUIRE(size > 0, "size is 0: a dma-buf covers at least one page (%zu bytes)", static_cast<size_t>(page));
        GPUMEM_REQUIRE(flags == 0, "flags 0x%x has unknown bits: pass 0", flags);
        GPUMEM_REQUIRE(p % page == 0, "ptr %p is not aligned to the host page size (%zu bytes): round it down to %p", ptr,
                       static_cast<size_t>(page), reinterpret_cast<void *>(p - p % page));
        GPUMEM_REQUIRE(size % page == 0, "size %zu is not a multiple of the host page size (%zu bytes): round it to %zu",
                       size, static_cast<size_t>(page), size - size % page + page);
        GPUMEM_REQUIRE(size <= UINTPTR_MAX - p, "ptr %p + size %zu wraps around the address space", ptr, size);
        int out = -1;
        if (status_t st = rt.dmabuf.export_range(ptr, size, &out))
            return st;
        *fd = out;
        return GPUMEM_SUCCESS;
    });
}
