"""Copies and fills: memcpy, memset and their stream-ordered forms.  An operand is an address, a
gpumem memory object or ArrayView, an object with ``__cuda_array_interface__`` (CuPy, PyTorch),
or a C-contiguous buffer-protocol object (bytes, bytearray, NumPy arrays), held while the call
uses it; the library infers the direction of a copy.

SPDX-License-Identifier: MIT
"""
import contextlib
import ctypes
import math

from . import _entry
from ._errors import _check
from ._lib import lib
from ._streams import _stream_handle
from ._views import ArrayView, _Memory, _typestr_itemsize


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_PyObject_GetBuffer = ctypes.pythonapi.PyObject_GetBuffer
_PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_PyObject_GetBuffer.restype = ctypes.c_int
_PyBuffer_Release = ctypes.pythonapi.PyBuffer_Release
_PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
_PyBuffer_Release.restype = None
_PyBUF_WRITABLE = 0x0001


@contextlib.contextmanager
def _host_buffer(obj, writable):
    """(address, nbytes) of a C-contiguous buffer-protocol object, held while in use."""
    view = _PyBuffer()
    try:
        _PyObject_GetBuffer(obj, ctypes.byref(view), _PyBUF_WRITABLE if writable else 0)
    except BufferError as e:
        raise TypeError("%s: needs a C-contiguous%s buffer (%s)"
                        % (type(obj).__name__, " writable" if writable else "", e)) from None
    try:
        yield view.buf or 0, view.len
    finally:
        _PyBuffer_Release(ctypes.byref(view))


def _operand(obj, writable, name="dst"):
    """A context giving (address, nbytes or None) for anything memcpy accepts."""
    if isinstance(obj, bool):
        raise TypeError("%s: a bool is not an address" % name)
    if isinstance(obj, int):
        return contextlib.nullcontext((_entry.check(name, "the address", obj, _entry.ADDRESS), None))
    if isinstance(obj, ctypes.c_void_p):
        return contextlib.nullcontext((obj.value or 0, None))
    if isinstance(obj, _Memory):
        return contextlib.nullcontext((obj._live_ptr(), obj.size))
    if isinstance(obj, ArrayView):
        return contextlib.nullcontext((obj.owner._live_ptr(), obj.nbytes))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        if cai.get("strides") is not None:
            raise TypeError("only C-contiguous __cuda_array_interface__ objects (strides None)")
        n = math.prod(cai["shape"]) * _typestr_itemsize(cai["typestr"])
        return contextlib.nullcontext((cai["data"][0], n))
    return _host_buffer(obj, writable)


def _count(n, dst_n, src_n, where="memcpy"):
    if n is None:
        n = src_n if src_n is not None else dst_n
        if n is None:
            raise ValueError("%s: n is required when both operands are plain addresses" % where)
    n = _entry.check(where, "n", n, _entry.SIZE)
    for what, avail in (("destination", dst_n), ("source", src_n)):
        if avail is not None and n > avail:
            raise ValueError("%d bytes do not fit the %s (%d bytes)" % (n, what, avail))
    return n


def memcpy(dst, src, n=None):
    """Copy n bytes (default: all of src) from src to dst; the direction is inferred.

    dst/src: an int address, an Allocation/Buffer/AddressRange, an object with the buffer
    protocol (bytes, bytearray, memoryview, array.array, NumPy array; C-contiguous, dst
    writable) or an object with ``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors).
    """
    with _operand(dst, True) as (d, dn), _operand(src, False, "src") as (s, sn):
        _check(lib.gpumem_memcpy(d, s, _count(n, dn, sn)))


def memcpy_async(dst, src, n=None, stream=None):
    """As memcpy, in stream order.  Host objects must stay alive and unchanged until the
    stream is synchronised (the bindings cannot hold them for you)."""
    with _operand(dst, True) as (d, dn), _operand(src, False, "src") as (s, sn):
        _check(lib.gpumem_memcpy_async(d, s, _count(n, dn, sn), _stream_handle(stream)))


def memset(dst, value, n=None):
    """Set n bytes (default: all of dst) of dst to ``value`` (gpumem_memset)."""
    with _operand(dst, True) as (d, dn):
        _check(lib.gpumem_memset(d, value, _count(n, dn, None, "memset")))


def memset_async(dst, value, n=None, stream=None):
    """As memset, in stream order (gpumem_memset_async)."""
    with _operand(dst, True) as (d, dn):
        _check(lib.gpumem_memset_async(d, value, _count(n, dn, None, "memset_async"), _stream_handle(stream)))
