"""Descriptors for other processes and drivers: file descriptors passed over an AF_UNIX socket
(ipc_send_fd, ipc_recv_fd: SCM_RIGHTS), and dma-buf descriptors of device memory
(export_dmabuf).  Pools and physical memory export their own descriptors
(Pool.export_handle, PhysicalMemory.export_handle).

SPDX-License-Identifier: MIT
"""
import ctypes

from ._errors import _check
from ._lib import lib
from ._views import _addr


def export_dmabuf(ptr, size):
    """A new dma-buf file descriptor for [ptr, ptr + size) of device memory gpumem made
    (gpumem_mem_export_dmabuf): ptr and size are multiples of the host page size and the range
    lies in one allocation.  The caller closes the descriptor (os.close)."""
    fd = ctypes.c_int32(-1)
    _check(lib.gpumem_mem_export_dmabuf(ctypes.byref(fd), _addr(ptr), size, 0))
    return fd.value


def ipc_send_fd(sock, fd):
    """Send fd over a connected AF_UNIX socket (a socket object or its fileno())."""
    _check(lib.gpumem_ipc_send_fd(sock if isinstance(sock, int) else sock.fileno(), fd))


def ipc_recv_fd(sock):
    """Receive a file descriptor sent with ipc_send_fd over a connected AF_UNIX socket."""
    fd = ctypes.c_int32()
    _check(lib.gpumem_ipc_recv_fd(sock if isinstance(sock, int) else sock.fileno(), ctypes.byref(fd)))
    return fd.value
