"""Memory from the library's allocators: Allocation, made by malloc (device memory), host_alloc
(pinned) and managed_alloc (and by malloc_async, gpumem/_pools.py); host buffers page-locked
in place (HostRegistration); and what managed memory is told or asked (prefetch, advise, range
attributes, stream_attach).

SPDX-License-Identifier: MIT
"""
import ctypes

from . import _entry
from ._debug import pointer_info
from ._devices import backend, device_count, get_device
from ._errors import GpumemError, _check
from ._lib import (ATTACH_SINGLE, DEVICE_HOST, ERROR_INVALID_VALUE, KIND_DEVICE, KIND_HOST_PINNED,
                   KIND_MANAGED, KIND_NAMES, KIND_STREAM_ORDERED, LOCATION_INVALID, POOL_MEMORY_MANAGED,
                   POOL_MEMORY_PINNED, RANGE_ACCESSED_BY, lib)
from ._resources import _Resource, _generation, _generation_guard
from ._streams import Stream, _stream_handle
from ._views import _Memory, _addr, _range


@_generation_guard
def _free_memory(kind, ptr, stream):
    if kind == KIND_HOST_PINNED:
        return lib.gpumem_host_free(ptr)
    if kind == KIND_STREAM_ORDERED:
        if isinstance(stream, Stream):
            if stream.closed:  # its work is done: free on the default stream
                return lib.gpumem_free_async(ptr, None)
            return lib.gpumem_free_async(ptr, stream.handle)
        return lib.gpumem_free_async(ptr, stream)
    return lib.gpumem_free(ptr)


class Allocation(_Memory):
    """Memory from gpumem_malloc, host_alloc, managed_alloc or (stream-ordered) malloc_async.

    ``.ptr`` (int), ``.size``, ``.kind`` ("device", "host_pinned", "managed", "stream_ordered").
    Freed by close() (stream-ordered ones with gpumem_free_async on their stream), ``with``, or GC.
    """

    def __init__(self, ptr, size, kind, stream=None, device=None, owned=True):
        self.ptr = ptr or 0
        self.size = size
        self.kind_code = kind
        self.stream = stream
        self.device = device
        if owned and self.ptr:
            self._own(_free_memory, _generation[0], kind, self.ptr, stream)

    @property
    def closed(self):
        """True once freed."""
        return self.ptr != 0 and super().closed

    @property
    def kind(self):
        """The kind's name: "device", "host_pinned", "managed" or "stream_ordered"."""
        return KIND_NAMES[self.kind_code]

    def free(self):
        """Same as close()."""
        self.close()

    def _kind_device(self):
        self._live_ptr()
        return self.kind_code, self.device

    def _host_accessible(self):
        if self.kind_code in (KIND_HOST_PINNED, KIND_MANAGED) or backend() == "host":
            return True
        # Stream-ordered blocks of pinned and managed pools are host memory too.
        return (self.kind_code == KIND_STREAM_ORDERED and
                pointer_info(self.ptr).memory in (POOL_MEMORY_PINNED, POOL_MEMORY_MANAGED))

    def _device_ptr(self):
        ptr = self._live_ptr()
        if self.kind_code == KIND_HOST_PINNED:
            return host_get_device_pointer(ptr)
        return ptr

    def _cai_stream(self):
        if isinstance(self.stream, Stream) and not self.stream.closed:
            return self.stream.native or None
        return None

    # managed memory
    def prefetch(self, device, stream=None, count=None):
        """Prefetch this managed memory to ``device`` (see gpumem.prefetch)."""
        prefetch(self, device, count=count, stream=stream)

    def advise(self, advice, device=DEVICE_HOST, count=None):
        """Advice about this managed memory (see gpumem.advise)."""
        advise(self, advice, device, count=count)

    def range_attribute(self, attribute, count=None):
        """A RANGE_* attribute of this managed memory (see gpumem.range_attribute)."""
        return range_attribute(self, attribute, count=count)

    def __repr__(self):
        return "<gpumem.Allocation %s 0x%x size=%d%s>" % (self.kind, self.ptr, self.size,
                                                          " closed" if self.closed else "")


def malloc(size):
    """Device memory on the current device (gpumem_malloc)."""
    p = ctypes.c_void_p()
    _check(lib.gpumem_malloc(ctypes.byref(p), size))
    return Allocation(p.value, size, KIND_DEVICE, device=get_device())


def host_alloc(size, flags=0):
    """Page-locked host memory (gpumem_host_alloc; flags HOST_*)."""
    p = ctypes.c_void_p()
    _check(lib.gpumem_host_alloc(ctypes.byref(p), size, flags))
    return Allocation(p.value, size, KIND_HOST_PINNED, device=DEVICE_HOST)


def managed_alloc(size, flags=0):
    """Managed memory (gpumem_managed_alloc; flags 0, ATTACH_GLOBAL or ATTACH_HOST)."""
    p = ctypes.c_void_p()
    _check(lib.gpumem_managed_alloc(ctypes.byref(p), size, flags))
    return Allocation(p.value, size, KIND_MANAGED, device=get_device())


# ---------------------------------------------------------------------------
# Page-locked host memory and managed memory
# ---------------------------------------------------------------------------


def host_get_device_pointer(ptr):
    """The device address of pinned or registered host memory."""
    d = ctypes.c_void_p()
    _check(lib.gpumem_host_get_device_pointer(ctypes.byref(d), _addr(ptr)))
    return d.value or 0


@_generation_guard
def _unregister(ptr, _keep):
    return lib.gpumem_host_unregister(ptr)


class HostRegistration(_Resource):
    """Page-lock a writable host buffer (bytearray, array.array, NumPy array...) until close()."""

    def __init__(self, obj, flags=0):
        mv = memoryview(obj)  # holds the export: a bytearray cannot be resized meanwhile
        if mv.readonly or not mv.c_contiguous:
            raise TypeError("HostRegistration needs a writable C-contiguous buffer")
        mv = mv.cast("B")
        if len(mv) == 0:
            raise GpumemError(ERROR_INVALID_VALUE, "cannot register an empty buffer")
        self.ptr = ctypes.addressof(ctypes.c_char.from_buffer(mv))
        self.size = len(mv)
        _check(lib.gpumem_host_register(self.ptr, self.size, flags))
        self._own(_unregister, _generation[0], self.ptr, mv)

    def device_pointer(self):
        """The device address of the registered buffer."""
        return host_get_device_pointer(self.ptr)


def prefetch(obj, device, count=None, stream=None):
    """Prefetch managed memory (count bytes, default all) to ``device`` (DEVICE_HOST: the host)."""
    ptr, count = _range(obj, count)
    _check(lib.gpumem_prefetch_async(ptr, count, device, _stream_handle(stream)))


def advise(obj, advice, device=DEVICE_HOST, count=None):
    """Give advice (ADVISE_*) about managed memory for ``device`` (gpumem_advise)."""
    ptr, count = _range(obj, count)
    _check(lib.gpumem_advise(ptr, count, advice, device))


def _attr_buffer(attribute, slots):
    if attribute == RANGE_ACCESSED_BY:
        if slots is None:
            slots = device_count() + 1
        return (ctypes.c_int32 * slots)()
    return ctypes.c_int32()


def _attr_value(attribute, buf):
    if attribute == RANGE_ACCESSED_BY:
        return [v for v in buf if v != LOCATION_INVALID]
    return buf.value


def range_attribute(obj, attribute, count=None, slots=None):
    """One RANGE_* attribute: an int (READ_MOSTLY, PREFERRED_LOCATION, LAST_PREFETCH_LOCATION)
    or, for RANGE_ACCESSED_BY, the list of devices (``slots`` entries asked, default devices+1)."""
    ptr, count = _range(obj, count)
    buf = _attr_buffer(attribute, slots)
    _check(lib.gpumem_range_get_attribute(ctypes.byref(buf), ctypes.sizeof(buf), attribute, ptr, count))
    return _attr_value(attribute, buf)


def range_attributes(obj, attributes, count=None, slots=None):
    """Several attributes at once (gpumem_range_get_attributes): {attribute: value}."""
    ptr, count = _range(obj, count)
    attributes = [_entry.check("range_attributes()", "attributes[%d]" % i, a, _entry.I32)
                  for i, a in enumerate(attributes)]
    n = len(attributes)
    bufs = [_attr_buffer(a, slots) for a in attributes]
    data = (ctypes.c_void_p * n)(*[ctypes.addressof(b) for b in bufs])
    sizes = (ctypes.c_size_t * n)(*[ctypes.sizeof(b) for b in bufs])
    attrs = (ctypes.c_int32 * n)(*attributes)
    _check(lib.gpumem_range_get_attributes(data, sizes, attrs, n, ptr, count))
    return {a: _attr_value(a, b) for a, b in zip(attributes, bufs)}


def stream_attach(stream, obj, length=0, flags=ATTACH_SINGLE):
    """Attach managed memory to a stream (gpumem_stream_attach; flags ATTACH_*)."""
    _check(lib.gpumem_stream_attach(_stream_handle(stream), _addr(obj), length, flags))
