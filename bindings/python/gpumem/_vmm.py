"""Virtual memory management: physical memory (PhysicalMemory, shareable with other processes as a
file descriptor), the address ranges it is mapped into (AddressRange), who may access them, and
the granularity their sizes follow.

SPDX-License-Identifier: MIT
"""
import ctypes

from . import _lib
from ._devices import _dev
from ._errors import GpumemError, _check
from ._lib import (ACCESS_READWRITE, ERROR_INVALID_VALUE, GRANULARITY_MINIMUM, GRANULARITY_RECOMMENDED,
                   HANDLE_NONE, HANDLE_POSIX_FD, init_struct, lib)
from ._pools import _access_descs
from ._resources import _Resource, _generation, _generation_guard
from ._views import _Memory


def mem_granularity(device=None, recommended=False, handle_types=HANDLE_NONE):
    """VMM allocation granularity in bytes (minimum, or recommended=True) for ``device``."""
    props = init_struct(_lib.AllocProps, device=_dev(device), handle_types=handle_types)
    g = ctypes.c_size_t()
    _check(lib.gpumem_mem_get_granularity(ctypes.byref(g), ctypes.byref(props),
                                          GRANULARITY_RECOMMENDED if recommended else GRANULARITY_MINIMUM))
    return g.value


@_generation_guard
def _mem_release(h):
    return lib.gpumem_mem_release(h)


class PhysicalMemory(_Resource):
    """Physical memory (gpumem_mem_create); released on close (mapped memory lives until unmapped)."""

    def __init__(self, size, device=None, handle_types=HANDLE_NONE, flags=0, _handle=None):
        """``flags``: POOL_RDMA for memory that GPUDirect RDMA and NCCL register."""
        if _handle is None:
            props = init_struct(_lib.AllocProps, device=_dev(device), handle_types=handle_types, flags=flags)
            h = _lib.mem_handle_t()
            _check(lib.gpumem_mem_create(ctypes.byref(h), size, ctypes.byref(props)))
            _handle = h.value
        self.handle, self.size = _handle, size
        self._own(_mem_release, _generation[0], self.handle)

    def export_handle(self, handle_type=HANDLE_POSIX_FD):
        """A new file descriptor for this memory (the caller closes it)."""
        fd = ctypes.c_int32()
        _check(lib.gpumem_mem_export_to_shareable_handle(ctypes.byref(fd), self._h(), handle_type))
        return fd.value

    @classmethod
    def retain(cls, ptr):
        """A new handle to the physical memory mapped at ``ptr`` (any address of a VMM mapping,
        gpumem's or one made with the runtime's own calls: gpumem_mem_retain_allocation_handle);
        closing it releases that handle only."""
        from ._debug import pointer_info
        from ._views import _addr
        h = _lib.mem_handle_t()
        _check(lib.gpumem_mem_retain_allocation_handle(ctypes.byref(h), _addr(ptr)))
        return cls(pointer_info(ptr).alloc_size, _handle=h.value)

    def properties(self):
        """What the runtime says of this memory (gpumem_mem_get_allocation_properties): a dict
        with ``device``, ``handle_types`` and ``flags`` (POOL_RDMA or 0)."""
        props = init_struct(_lib.AllocProps)
        _check(lib.gpumem_mem_get_allocation_properties(ctypes.byref(props), self._h()))
        return {"device": props.device, "handle_types": props.handle_types, "flags": props.flags}

    @classmethod
    def import_handle(cls, fd, size, handle_type=HANDLE_POSIX_FD):
        """Physical memory from a file descriptor another process exported."""
        h = _lib.mem_handle_t()
        _check(lib.gpumem_mem_import_from_shareable_handle(ctypes.byref(h), fd, handle_type))
        return cls(size, _handle=h.value)


@_generation_guard
def _address_free(ptr, size, mappings):
    first = 0
    for off, n in list(mappings.items()):
        st = lib.gpumem_mem_unmap(ptr + off, n)
        first = first or st
        mappings.pop(off, None)
    return lib.gpumem_mem_address_free(ptr, size) or first


class AddressRange(_Memory):
    """A reserved address range (gpumem_mem_address_reserve).  map() whole PhysicalMemory objects
    into it, set_access(), use .ptr; close() unmaps what is still mapped and frees the range."""

    def __init__(self, size, alignment=0, hint=None):
        p = ctypes.c_void_p()
        _check(lib.gpumem_mem_address_reserve(ctypes.byref(p), size, alignment, hint))
        self.ptr, self.size = p.value or 0, size
        self._mappings = {}
        self._own(_address_free, _generation[0], self.ptr, size, self._mappings)

    def map(self, mem, offset=0, access=ACCESS_READWRITE, device=None):
        """Map all of ``mem`` at ptr+offset and (unless access is None) grant ``device`` access."""
        _check(lib.gpumem_mem_map(self._live_ptr() + offset, mem.size, 0, mem._h()))
        self._mappings[offset] = mem.size
        if access is not None:
            self.set_access(offset, mem.size, [(_dev(device), access)])

    def unmap(self, offset=0, size=None):
        """Unmap what was mapped at ``offset`` (``size`` bytes; default: that mapping)."""
        size = self._mappings.get(offset) if size is None else size
        if size is None:
            raise GpumemError(ERROR_INVALID_VALUE, "nothing mapped at offset %d" % offset)
        ptr = self._live_ptr()
        self._refuse_while_exported("unmap memory of")
        _check(lib.gpumem_mem_unmap(ptr + offset, size))
        self._mappings.pop(offset, None)

    def set_access(self, offset, size, descs):
        """Grant access to [offset, offset+size): descs is an iterable of (device, ACCESS_*)."""
        arr, n = _access_descs("AddressRange.set_access()", descs)
        _check(lib.gpumem_mem_set_access(self._live_ptr() + offset, size, arr, n))

    def get_access(self, device=None, offset=0):
        """The ACCESS_* flags ``device`` has at ptr+offset."""
        f = ctypes.c_uint64()
        _check(lib.gpumem_mem_get_access(ctypes.byref(f), _dev(device), self._live_ptr() + offset))
        return f.value

    def __repr__(self):
        return "<gpumem.AddressRange 0x%x size=%d%s>" % (self.ptr, self.size, " closed" if self.closed else "")
