"""Memory objects and their zero-copy views.  _Memory is the base of every object that holds
memory (Allocation, Buffer, AddressRange): it exports its bytes through DLPack, NumPy's array
interface and the buffer protocol, gives typed views of them (ArrayView) and
``__cuda_array_interface__`` ones (CudaArrayView), and copies to and from them.  _addr and
_range turn such an object, or a plain address, into the address and byte count C calls take.

SPDX-License-Identifier: MIT
"""
import ctypes
import math
import weakref

from . import _dlpack, _entry
from ._devices import backend, get_device
from ._errors import GpumemError, _check
from ._lib import ERROR_INVALID_POINTER, KIND_HOST_PINNED, KIND_HOST_REGISTERED, KIND_MANAGED, lib
from ._resources import _Resource
from ._streams import Stream


def _host_view(mem, size):
    """A writable memoryview of the first size bytes of host-accessible ``mem`` that keeps
    ``mem`` alive and counts as its export until released (close() waits for it)."""
    ptr, views = mem._export()
    try:
        if size == 0 or not ptr:
            return memoryview(bytearray(0))

        class _View(ctypes.c_ubyte * size):
            pass
        v = _View.from_address(ptr)
        v._gpumem_owner = mem
        view = memoryview(v).cast("B")
        if views is not None:
            # Every memoryview and NumPy array over `view` holds v: it dies with the last.  At
            # interpreter exit the view may still be in use: the export is not released then.
            weakref.finalize(v, views.release).atexit = False
            views = None
        return view
    finally:
        if views is not None:
            views.release()


def _numpy():
    try:
        import numpy
    except ImportError:
        raise ImportError("as_numpy needs NumPy (python3-numpy)") from None
    return numpy


_TYPESTRS = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
             "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float16": "<f2",
             "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16"}


def _typestr_itemsize(typestr):
    return int(typestr[2:])


def _typestr(dtype):
    if isinstance(dtype, str) and dtype in _TYPESTRS:
        return _TYPESTRS[dtype]
    if isinstance(dtype, str) and len(dtype) >= 3 and dtype[0] in "<>|=" and dtype[2:].isdigit():
        return _entry.typestr(dtype)
    try:
        import numpy
    except ImportError:
        raise TypeError("dtype %r: without NumPy use a name (%s) or a typestr"
                        % (dtype, ", ".join(_TYPESTRS))) from None
    try:
        ts = numpy.dtype(dtype).str
    except TypeError as e:
        raise TypeError("dtype %r is not a NumPy dtype (%s)" % (dtype, e)) from None
    return _entry.typestr(ts)


class CudaArrayView:
    """Device memory described by ``__cuda_array_interface__`` (version 3); keeps its owner alive.
    CuPy: ``cupy.asarray(view)``; Numba: ``numba.cuda.as_cuda_array(view)``;
    PyTorch: ``torch.as_tensor(view, device="cuda")``."""

    def __init__(self, owner, ptr, shape, typestr, stream=None, readonly=False):
        typestr = _entry.typestr(typestr)
        shape = _entry.shape("CudaArrayView", shape, getattr(owner, "size", None), _typestr_itemsize(typestr))
        self.owner = owner
        self.ptr = ptr
        iface = {"shape": shape, "typestr": typestr, "data": (ptr, bool(readonly)),
                 "version": 3, "strides": None}
        if stream:  # an int native stream the consumer must order after (0 is not allowed)
            iface["stream"] = int(stream)
        self.__cuda_array_interface__ = iface

    def __repr__(self):
        i = self.__cuda_array_interface__
        return "<gpumem.CudaArrayView 0x%x shape=%s typestr=%s>" % (self.ptr, i["shape"], i["typestr"])


def _dl_device(kind, device):
    """(DLDeviceType, device_id) for memory of this kind on the active backend (see _dlpack)."""
    b = backend()
    if b == "host":
        return (_dlpack.kDLCPU, 0)  # all "device" memory is host memory there
    host = kind in (KIND_HOST_PINNED, KIND_HOST_REGISTERED)
    dev = get_device() if device is None or device < 0 else int(device)
    if b == "hip":
        return (_dlpack.kDLROCMHost, 0) if host else (_dlpack.kDLROCM, dev)
    if host:
        return (_dlpack.kDLCUDAHost, 0)
    if kind == KIND_MANAGED:
        return (_dlpack.kDLCUDAManaged, dev)
    return (_dlpack.kDLCUDA, dev)


class _ArrayProtocols:
    """DLPack, NumPy's array interface and the buffer protocol over ``self._array()``:
    (memory object, typestr, shape)."""

    def __dlpack_device__(self):
        """(device_type, device_id) as DLPack names them: kDLCPU (1) on the host backend;
        kDLCUDA (2) / kDLROCM (10) for device memory, kDLCUDAHost (3) / kDLROCMHost (11)
        for pinned memory, kDLCUDAManaged (13) for managed memory on CUDA."""
        mem, _ts, _shape = self._array()
        return _dl_device(*mem._kind_device())

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this memory, no copy.  A consumer that passes ``max_version``
        of major 1 or more (NumPy >= 2.1) gets DLPack 1.0's "dltensor_versioned"
        (DLManagedTensorVersioned, flagged writable, so NumPy >= 2.2.5 makes a writable array);
        other callers get the unversioned "dltensor" (DLManagedTensor).  Work pending on the
        allocation's own stream is waited for first.  ``copy=True`` and a ``dl_device`` other
        than ``__dlpack_device__()`` raise BufferError."""
        mem, ts, shape = self._array()
        mem._live_ptr()
        dev = _dl_device(*mem._kind_device())
        versioned = _dlpack.wants_versioned(max_version)
        if copy:
            raise BufferError("gpumem exports memory without copying (copy=True asked)")
        if dl_device is not None and tuple(dl_device) != dev:
            raise BufferError("gpumem memory is on DLPack device %s, not %s" % (dev, tuple(dl_device)))
        own = getattr(mem, "stream", None)
        if isinstance(own, Stream) and not own.closed and stream != -1:
            own.synchronize()
        ptr, views = mem._export()  # released by the consumer's call of the tensor's deleter
        try:
            return _dlpack.export(self, ptr, shape, ts, dev, versioned=versioned,
                                  on_release=views.release if views is not None else None)
        except BaseException:
            if views is not None:
                views.release()
            raise

    @property
    def __array_interface__(self):
        """NumPy's array interface (version 3) for host-accessible memory: pinned and managed
        memory, and every kind on the host backend.  Other memory raises ValueError.  Its
        ``data`` is a writable memoryview of the memory, not an address: NumPy keeps it as the
        array's base, so the array counts as an export of the memory (close() waits for it)."""
        mem, ts, shape = self._array()
        mem._live_ptr()
        if not mem._host_accessible():
            raise ValueError("%r is not host-accessible on the %s backend: use __dlpack__, "
                             "as_cuda_array or gpumem.memcpy" % (mem, backend()))
        return {"shape": tuple(shape), "typestr": ts, "data": _host_view(mem, self._nbytes()), "strides": None,
                "version": 3}

    def __buffer__(self, flags):
        """The buffer protocol (Python >= 3.12; use as_memoryview() before): a writable
        byte view of host-accessible memory."""
        mem, _ts, _shape = self._array()
        return mem.as_memoryview()

    def __bytes__(self):
        """A copy of the memory as bytes (any kind: copied with gpumem_memcpy)."""
        mem, _ts, shape = self._array()
        return mem.to_bytes(self._nbytes())


class ArrayView(_ArrayProtocols):
    """A typed, shaped view of gpumem memory (``alloc.as_array("float32", (4, 4))``) for
    ``numpy.from_dlpack``, ``torch.from_dlpack``, ``cupy.from_dlpack`` or ``numpy.asarray``.
    Keeps its memory object alive; once that object is closed, the view refuses to export
    (arrays made before stay valid: the memory is freed when the last of them goes)."""

    def __init__(self, owner, typestr, shape):
        typestr = _entry.typestr(typestr)
        shape = _entry.shape("ArrayView", shape, getattr(owner, "size", None), _typestr_itemsize(typestr))
        self.owner, self.typestr, self.shape = owner, typestr, shape
        self.nbytes = math.prod(self.shape) * _typestr_itemsize(typestr)

    def _array(self):
        return self.owner, self.typestr, self.shape

    def _nbytes(self):
        return self.nbytes

    def __repr__(self):
        return "<gpumem.ArrayView of %r shape=%s typestr=%s>" % (self.owner, self.shape, self.typestr)


class _Memory(_ArrayProtocols, _Resource):
    """Common to memory objects with .ptr and .size.  The object itself exports its bytes
    (DLPack, ``__array_interface__``, buffer protocol) as a 1-D uint8 array; ``as_array``
    gives a typed, shaped view."""

    def _array(self):
        return self, "|u1", (self.size,)

    def _nbytes(self):
        return self.size

    def _kind_device(self):
        info = _debug.pointer_info(self._live_ptr())
        return info.kind_code, info.device

    def as_array(self, dtype="uint8", shape=None):
        """An ArrayView of ``dtype`` (a name such as "float32", or a typestr) and ``shape``
        (default: as many items as fit) over this memory, for DLPack and NumPy consumers."""
        self._live_ptr()
        ts = _typestr(dtype)
        return ArrayView(self, ts, _entry.shape("as_array", shape, self.size, _typestr_itemsize(ts)))

    def _live_ptr(self):
        if self.closed:
            raise GpumemError(ERROR_INVALID_POINTER, "%r is closed" % self)
        return self.ptr

    def _export(self):
        """(address, exports) for one more export of this memory: counted first, then checked,
        so a close() on another thread either waits for it or makes it raise GpumemError.  The
        caller calls exports.release() when the export goes (exports is None: not counted)."""
        views = self._views
        if views is None:
            return self._live_ptr(), None
        views.acquire()
        try:
            return self._live_ptr(), views
        except BaseException:
            views.release()
            raise

    def _refuse_while_exported(self, what):
        n = self._views.count if self._views is not None else 0
        if n:
            raise BufferError("cannot %s %r: %d NumPy array(s), DLPack tensor(s) or memoryview(s) made from it "
                              "are alive and would point at memory that moves or goes; drop them first (del, "
                              "memoryview.release())" % (what, self, n))

    def _host_accessible(self):
        return backend() == "host"

    def as_memoryview(self):
        """A writable zero-copy memoryview of host-accessible memory (pinned, managed, or any
        memory on the host backend).  It stays valid after close(): the memory is freed when
        the last view goes."""
        self._live_ptr()
        if not self._host_accessible():
            raise ValueError("%r is not host-accessible on the %s backend; copy it with "
                             "gpumem.memcpy or view it with as_cuda_array" % (self, backend()))
        return _host_view(self, self.size)

    def as_numpy(self, dtype="uint8", shape=None):
        """A zero-copy NumPy array over host-accessible memory (needs NumPy)."""
        self._live_ptr()
        np = _numpy()
        dt = np.dtype(dtype)
        shape = _entry.shape("as_numpy", shape, self.size, dt.itemsize)
        mv = self.as_memoryview()
        return np.frombuffer(mv, dtype=dt, count=math.prod(shape)).reshape(shape)

    def _device_ptr(self):
        return self._live_ptr()

    def _cai_stream(self):
        return None

    def as_cuda_array(self, dtype="uint8", shape=None, readonly=False):
        """A CudaArrayView (``__cuda_array_interface__`` v3) over device-accessible memory on
        the CUDA backend."""
        self._live_ptr()
        if backend() != "cuda":
            raise ValueError("__cuda_array_interface__ needs the CUDA backend (active: %s)" % backend())
        ts = _typestr(dtype)
        shape = _entry.shape("as_cuda_array", shape, self.size, _typestr_itemsize(ts))
        _ptr, views = self._export()
        try:
            view = CudaArrayView(self, self._device_ptr(), shape, ts, self._cai_stream(), readonly)
        except BaseException:
            if views is not None:
                views.release()
            raise
        if views is not None:
            weakref.finalize(view, views.release).atexit = False  # CuPy and Numba keep the view as the owner
        return view

    def to_bytes(self, n=None):
        """A copy of the first n bytes (default all) as bytes."""
        out = bytearray(self.size if n is None else n)
        _copies.memcpy(out, self._live_ptr(), len(out))
        return bytes(out)

    def memset(self, value, n=None):
        """Set n bytes (default: all) to ``value``."""
        _check(lib.gpumem_memset(self._live_ptr(), value, self.size if n is None else n))

    def copy_from(self, src, n=None):
        """Copy from ``src`` into this memory (see gpumem.memcpy)."""
        _copies.memcpy(self, src, n)

    def copy_to(self, dst, n=None):
        """Copy this memory into ``dst`` (see gpumem.memcpy)."""
        _copies.memcpy(dst, self, n)

    def info(self):
        """pointer_info() of this memory."""
        return _debug.pointer_info(self._live_ptr())

    def __len__(self):
        return self.size


def _addr(obj, where="ptr"):
    if isinstance(obj, _Memory):
        return obj._live_ptr()
    if isinstance(obj, int) and not isinstance(obj, bool):
        return _entry.check(where, "the address", obj, _entry.ADDRESS)
    raise TypeError("%s: expected an address (int) or a gpumem memory object, not %s" % (where, type(obj).__name__))


def _range(obj, count, where="obj"):
    ptr = _addr(obj, where)
    if count is None:
        if not isinstance(obj, _Memory):
            raise ValueError("%s: count is required with a plain address" % where)
        count = obj.size
    return ptr, _entry.check(where, "count", count, _entry.SIZE)


# Copies and pointer info take memory objects, so their modules import this one; _Memory's
# methods call them through their modules, imported last, once _Memory exists, whichever of
# these modules is imported first.
from . import _copies, _debug  # noqa: E402
