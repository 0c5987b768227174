"""CuPy: gpumem as CuPy's allocator (cupy_allocator, cupy_c_allocator), a CuPy
CFunctionAllocator over the library's gpumem_hook_malloc and gpumem_hook_free, so that each
allocation runs in C.  cupy is imported on the first allocation.

SPDX-License-Identifier: MIT
"""
import ctypes

from ._errors import GpumemError
from ._lib import ERROR_OUT_OF_MEMORY, lib


_cupy_cuda = []  # [cupy.cuda], imported on the first allocation


def _cupy_module():
    if not _cupy_cuda:
        import cupy
        _cupy_cuda.append(cupy.cuda)
    return _cupy_cuda[0]


def _cupy_c_malloc(cuda, native):
    """CuPy's CFunctionAllocator over gpumem_hook_malloc/free with ``native`` as the stream."""
    addr = ctypes.cast
    return cuda.memory.CFunctionAllocator(
        int(native), addr(lib.gpumem_hook_malloc, ctypes.c_void_p).value,
        addr(lib.gpumem_hook_free, ctypes.c_void_p).value, lib).malloc


def _cupy_checked(mp, size):
    # CuPy's CFunctionAllocator does not look at what malloc returned: a NULL
    # would become an array at address 0.
    if mp.ptr == 0 and size:
        raise GpumemError(ERROR_OUT_OF_MEMORY)  # its message: the library's last error
    return mp


def cupy_allocator(size):
    """For ``cupy.cuda.set_allocator(gpumem.cupy_allocator)``: stream-ordered memory from the
    current device's current gpumem pool, ordered on CuPy's current stream, whatever its kind
    (legacy, per-thread, blocking, non-blocking, capturing).

    The allocation itself runs in C: each CuPy stream object gets, on first use, a CuPy
    ``CFunctionAllocator`` over gpumem_hook_malloc/free with that stream's handle, kept on the
    stream object (its handle is fixed for its lifetime).  CuPy frees through the same C
    function, on the same stream.  A failed allocation raises GpumemError, never a NULL array."""
    # CuPy calls this for every temporary: the common case is a few lookups
    # and one call into CuPy's Cython, which calls gpumem's C function.
    cuda = _cupy_cuda[0] if _cupy_cuda else _cupy_module()
    stream = cuda.get_current_stream()
    try:
        malloc = stream._gpumem_malloc
    except AttributeError:
        malloc = _cupy_c_malloc(cuda, stream.ptr or 0)
        try:
            stream._gpumem_malloc = malloc
        except AttributeError:  # a stream type without attributes: built again next time
            pass
    mp = malloc(size)
    if mp.ptr or not size:  # _cupy_checked, written inline: one Python call less per allocation
        return mp
    raise GpumemError(ERROR_OUT_OF_MEMORY)  # its message: the library's last error


class _CupyFixedStreamAllocator:
    __slots__ = ("malloc_c", "param")

    def __init__(self, cuda, native):
        self.param = int(native)
        self.malloc_c = _cupy_c_malloc(cuda, native)

    def malloc(self, size):
        return _cupy_checked(self.malloc_c(size), size)


def cupy_c_allocator(stream=None):
    """For ``cupy.cuda.set_allocator(gpumem.cupy_c_allocator(stream).malloc)``: every CuPy
    allocation ordered on one fixed ``stream`` (a native stream handle or an object with
    ``.ptr``; default: the legacy default stream), whatever CuPy's current stream is.

    The legacy default stream waits for, and is waited for by, every blocking stream, so the
    default is right for code on blocking streams only.  cupy_allocator follows CuPy's current
    stream at the same speed and is right everywhere; prefer it."""
    return _CupyFixedStreamAllocator(_cupy_module(), getattr(stream, "ptr", stream) or 0)
