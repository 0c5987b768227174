"""Growable device buffers (gpumem_buffer_*): a Buffer resizes in place with virtual memory
management, and moves (allocate, copy, free) where the device has none.

SPDX-License-Identifier: MIT
"""
import ctypes

from . import _lib
from ._devices import _dev
from ._errors import _check
from ._lib import lib
from ._resources import _generation, _generation_guard
from ._views import _Memory


@_generation_guard
def _buffer_destroy(h):
    return lib.gpumem_buffer_destroy(h)


class Buffer(_Memory):
    """A growable device buffer: ``resize(n)``; ``.data`` (= ``.ptr``) may move without native VMM."""

    def __init__(self, size=0, max_size=0, device=None):
        h = _lib.buffer_t()
        _check(lib.gpumem_buffer_create(ctypes.byref(h), size, max_size, _dev(device)))
        self.handle = h.value
        self._own(_buffer_destroy, _generation[0], self.handle)

    def resize(self, new_size):
        """Grow or shrink to ``new_size`` bytes, keeping the contents that still fit.  BufferError
        while NumPy arrays, DLPack tensors or memoryviews of the buffer are alive (its memory may
        move), as a bytearray refuses."""
        h = self._h()
        self._refuse_while_exported("resize")
        _check(lib.gpumem_buffer_resize(h, new_size))

    @property
    def data(self):
        """The buffer's current address (may change on resize without native VMM)."""
        p = ctypes.c_void_p()
        _check(lib.gpumem_buffer_data(self._h(), ctypes.byref(p)))
        return p.value or 0

    @property
    def ptr(self):
        """Same as data."""
        return self.data

    @property
    def size(self):
        """The buffer's current size in bytes."""
        n = ctypes.c_size_t()
        _check(lib.gpumem_buffer_size(self._h(), ctypes.byref(n)))
        return n.value

    def _live_ptr(self):
        return self.data  # a closed buffer's handle is dead: INVALID_HANDLE

    def __repr__(self):
        return "<gpumem.Buffer 0x%x%s>" % (self.handle or 0, " closed" if self.closed else "")
