"""gpumem: one API over every way a GPU program holds memory (Python bindings).

A pure-Python package over ctypes; it needs libgpumem.so (found through
GPUMEM_LIBRARY, GPUMEM_BUILD_DIR, the source tree's build*/ folders,
``pkg-config --variable=libdir gpumem``, then the system loader).

    import gpumem
    with gpumem.malloc(1 << 20) as d, gpumem.host_alloc(1 << 20) as h:
        h.as_memoryview()[:5] = b"hello"        # pinned memory: a zero-copy view
        gpumem.memcpy(d, h)                      # host -> device (direction inferred)
        out = bytearray(5)
        gpumem.memcpy(out, d, 5)                 # device -> any buffer-protocol object
    print(gpumem.stats().alloc_count["device"])

Errors raise :class:`GpumemError` (``.status``, ``.status_name``, ``.message``).
Objects (Allocation, Stream, Event, Pool, Buffer, PhysicalMemory, AddressRange,
HostRegistration) free themselves on close(), at the end of a ``with`` block, or
when garbage-collected -- exactly once.  Views (memoryview, NumPy arrays,
``__cuda_array_interface__`` objects) keep their allocation alive, but close()
frees it regardless: do not use a view after closing its allocation.

CuPy::

    import cupy, gpumem
    cupy.cuda.set_allocator(gpumem.cupy_allocator)      # every CuPy array now comes from gpumem
    x = cupy.asarray(gpumem.malloc(4096).as_cuda_array("float32"))   # or adopt one allocation

PyTorch (before the first CUDA allocation of the process)::

    import torch, gpumem
    alloc = torch.cuda.memory.CUDAPluggableAllocator(
        gpumem.torch_allocator_path(), "gpumem_pluggable_malloc", "gpumem_pluggable_free")
    torch.cuda.memory.change_current_allocator(alloc)   # or simply: gpumem.use_torch_allocator()

Both are served stream-ordered from the current gpumem pool of the device, so
``gpumem.stats()`` in the same process shows the traffic (kind "stream_ordered").

The complete C API is underneath: ``gpumem.lib.gpumem_*`` with prototypes set,
constants without their prefix (``gpumem.ADVISE_SET_READ_MOSTLY``) and the
structs as ctypes.Structure in ``gpumem._lib``.

SPDX-License-Identifier: MIT
"""
import contextlib
import ctypes
import dataclasses
import math
import weakref

from . import _lib
from ._lib import *  # noqa: F401,F403  constants
from ._lib import lib, LIBRARY_PATH, RUNTIME_VERSION, KIND_NAMES, init_struct

__version__ = "0.1.0"

__all__ = [
    "GpumemError", "lib", "LIBRARY_PATH", "version", "init", "finalize", "backend",
    "device_count", "set_device", "get_device", "device_info", "mem_get_info", "device_synchronize",
    "Allocation", "malloc", "host_alloc", "managed_alloc", "malloc_async", "Stream", "Event",
    "elapsed_ms", "Pool", "Buffer", "PhysicalMemory", "AddressRange", "mem_granularity",
    "HostRegistration", "memcpy", "memcpy_async", "memset", "memset_async", "pointer_info",
    "stats", "reset_peak_stats", "set_trace_callback", "prefetch", "advise", "range_attribute",
    "range_attributes", "stream_attach", "host_get_device_pointer", "CudaArrayView",
    "DeviceInfo", "PointerInfo", "Stats", "TraceRecord", "cupy_allocator",
    "torch_allocator_path", "use_torch_allocator", "ipc_send_fd", "ipc_recv_fd",
]

# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class GpumemError(Exception):
    """A gpumem call failed.  ``status`` is the GPUMEM_* code, ``status_name`` its
    name, ``message`` the library's gpumem_last_error_message()."""

    def __init__(self, status, message=None):
        self.status = int(status)
        self.status_name = lib.gpumem_status_string(self.status).decode()
        if message is None:
            message = lib.gpumem_last_error_message().decode(errors="replace")
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message) if message else self.status_name)


def _check(status):
    if status != 0:
        raise GpumemError(status)


# Handles and pointers die with gpumem_finalize(); finalisers of objects made
# before it must not free (their addresses may already belong to new memory).
_generation = [0]


# ---------------------------------------------------------------------------
# Version, init, devices
# ---------------------------------------------------------------------------


def version():
    """The run-time library's version as (major, minor, patch)."""
    v = lib.gpumem_version()
    return (v // 10000, v // 100 % 100, v % 100)


def _backend_code(b):
    if isinstance(b, str):
        names = {v: k for k, v in _lib.BACKEND_NAMES.items()}
        if b.lower() not in names:
            raise ValueError("unknown backend %r (auto, host, cuda, hip)" % b)
        return names[b.lower()]
    return int(b)


def init(backend="auto"):
    """gpumem_init: optional, the first call does it with "auto"."""
    _check(lib.gpumem_init(_backend_code(backend)))


def finalize():
    """gpumem_finalize: every object made before is dead (closing it is then a no-op)."""
    _generation[0] += 1
    _check(lib.gpumem_finalize())


def backend():
    """Name of the active backend: "host", "cuda" or "hip"."""
    b = ctypes.c_int32()
    _check(lib.gpumem_get_backend(ctypes.byref(b)))
    return lib.gpumem_backend_name(b.value).decode()


def device_count():
    n = ctypes.c_int32()
    _check(lib.gpumem_device_count(ctypes.byref(n)))
    return n.value


def set_device(device):
    _check(lib.gpumem_set_device(device))


def get_device():
    d = ctypes.c_int32()
    _check(lib.gpumem_get_device(ctypes.byref(d)))
    return d.value


def _dev(device):
    return get_device() if device is None else int(device)


def mem_get_info():
    """(free, total) bytes of the current device."""
    f, t = ctypes.c_size_t(), ctypes.c_size_t()
    _check(lib.gpumem_mem_get_info(ctypes.byref(f), ctypes.byref(t)))
    return f.value, t.value


def device_synchronize():
    _check(lib.gpumem_device_synchronize())


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    name: str
    backend: str
    device: int
    total_memory: int
    free_memory: int
    managed_memory: int
    managed_migrates: bool
    pageable_memory_access: bool
    memory_pools: int
    virtual_memory: int
    ipc_handle_types: int
    vmm_granularity: int
    vmm_recommended_granularity: int
    host_register: int
    compute_capability: int
    arch_name: str
    pool_ipc_handle_types: int


def device_info(device=None):
    """Capabilities of a device (support levels are SUPPORT_NONE/EMULATED/NATIVE)."""
    s = init_struct(_lib.DeviceInfo)
    _check(lib.gpumem_device_get_info(_dev(device), ctypes.byref(s)))
    return DeviceInfo(
        name=s.name.decode(errors="replace"), backend=lib.gpumem_backend_name(s.backend).decode(),
        device=s.device, total_memory=s.total_memory, free_memory=s.free_memory,
        managed_memory=s.managed_memory, managed_migrates=bool(s.managed_migrates),
        pageable_memory_access=bool(s.pageable_memory_access), memory_pools=s.memory_pools,
        virtual_memory=s.virtual_memory, ipc_handle_types=s.ipc_handle_types,
        vmm_granularity=s.vmm_granularity, vmm_recommended_granularity=s.vmm_recommended_granularity,
        host_register=s.host_register, compute_capability=s.compute_capability,
        arch_name=s.arch_name.decode(errors="replace"), pool_ipc_handle_types=s.pool_ipc_handle_types)


# ---------------------------------------------------------------------------
# Owned resources: close(), context manager, finaliser -- release exactly once
# ---------------------------------------------------------------------------


def _quiet(fn, *args):
    """Run a release function from a finaliser: it never raises."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001  (a finaliser must not raise)
        return 0


class _Resource:
    _finalizer = None

    def _own(self, release, *args):
        """Register release(*args) -> status, called once: by close() or by the GC."""
        self._finalizer = weakref.finalize(self, _quiet, release, *args)

    @property
    def closed(self):
        return self._finalizer is None or not self._finalizer.alive

    def close(self):
        """Release now.  A second close() does nothing.  Raises GpumemError if the C call fails."""
        f = self._finalizer
        if f is None:
            return
        got = f.detach()  # atomic: whoever detaches (close or GC) releases, never both
        if got is None:
            return
        _obj, _quiet_fn, args, _kw = got
        release, rargs = args[0], args[1:]
        st = release(*rargs)
        if st:
            raise GpumemError(st)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _generation_guard(fn):
    def release(gen, *args):
        if gen != _generation[0]:
            return 0  # died with gpumem_finalize
        return fn(*args)
    return release


# ---------------------------------------------------------------------------
# Streams and events
# ---------------------------------------------------------------------------


def _stream_handle(stream):
    if stream is None:
        return None
    if isinstance(stream, Stream):
        return stream.handle
    if isinstance(stream, int):
        return stream  # a raw gpumem_stream_t
    raise TypeError("stream must be a gpumem.Stream, None (default stream) or a raw handle, not %r"
                    % type(stream).__name__)


@_generation_guard
def _stream_destroy(h):
    return lib.gpumem_stream_destroy(h)


class Stream(_Resource):
    """A gpumem stream; ``Stream()`` creates one on the current device."""

    def __init__(self, _handle=None):
        if _handle is None:
            h = _lib.stream_t()
            _check(lib.gpumem_stream_create(ctypes.byref(h)))
            _handle = h.value
        self.handle = _handle
        self._own(_stream_destroy, _generation[0], _handle)

    @classmethod
    def wrap(cls, native):
        """Wrap a native stream (cudaStream_t / hipStream_t as an int) without owning it."""
        h = _lib.stream_t()
        _check(lib.gpumem_stream_wrap(native, ctypes.byref(h)))
        return cls(_handle=h.value)

    @property
    def native(self):
        """The native stream (int; 0 for a dead handle)."""
        return lib.gpumem_stream_native(self.handle) or 0

    def synchronize(self):
        _check(lib.gpumem_stream_synchronize(self.handle))

    def query(self):
        """True when idle, False when work is pending."""
        st = lib.gpumem_stream_query(self.handle)
        if st == ERROR_BUSY:  # noqa: F405
            return False
        _check(st)
        return True

    def wait_event(self, event):
        _check(lib.gpumem_stream_wait_event(self.handle, event.handle))

    def record(self, event=None):
        """Record an event (a new one when None) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __repr__(self):
        return "<gpumem.Stream 0x%x%s>" % (self.handle or 0, " closed" if self.closed else "")


@_generation_guard
def _event_destroy(h):
    return lib.gpumem_event_destroy(h)


class Event(_Resource):
    def __init__(self):
        h = _lib.event_t()
        _check(lib.gpumem_event_create(ctypes.byref(h)))
        self.handle = h.value
        self._own(_event_destroy, _generation[0], self.handle)

    def record(self, stream=None):
        _check(lib.gpumem_event_record(self.handle, _stream_handle(stream)))

    def synchronize(self):
        _check(lib.gpumem_event_synchronize(self.handle))

    def query(self):
        """True when completed (or never recorded), False when pending."""
        st = lib.gpumem_event_query(self.handle)
        if st == ERROR_BUSY:  # noqa: F405
            return False
        _check(st)
        return True

    def elapsed_ms(self, end):
        return elapsed_ms(self, end)


def elapsed_ms(start, end):
    ms = ctypes.c_float()
    _check(lib.gpumem_event_elapsed_ms(ctypes.byref(ms), start.handle, end.handle))
    return ms.value


# ---------------------------------------------------------------------------
# Host buffers (buffer protocol) and operands of copies
# ---------------------------------------------------------------------------


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


def _typestr_itemsize(typestr):
    return int(typestr[2:])


def _operand(obj, writable):
    """A context giving (address, nbytes or None) for anything memcpy accepts."""
    if isinstance(obj, bool):
        raise TypeError("a bool is not an address")
    if isinstance(obj, int):
        return contextlib.nullcontext((obj, None))
    if isinstance(obj, ctypes.c_void_p):
        return contextlib.nullcontext((obj.value or 0, None))
    if isinstance(obj, (Allocation, Buffer, AddressRange)):
        return contextlib.nullcontext((obj.ptr, obj.size))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        if cai.get("strides") is not None:
            raise TypeError("only C-contiguous __cuda_array_interface__ objects (strides None)")
        n = math.prod(cai["shape"]) * _typestr_itemsize(cai["typestr"])
        return contextlib.nullcontext((cai["data"][0], n))
    return _host_buffer(obj, writable)


def _count(n, dst_n, src_n):
    if n is None:
        n = src_n if src_n is not None else dst_n
        if n is None:
            raise ValueError("n is required when both operands are plain addresses")
    n = int(n)
    if n < 0:
        raise ValueError("n must be >= 0")
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
    with _operand(dst, True) as (d, dn), _operand(src, False) as (s, sn):
        _check(lib.gpumem_memcpy(d, s, _count(n, dn, sn)))


def memcpy_async(dst, src, n=None, stream=None):
    """As memcpy, in stream order.  Host objects must stay alive and unchanged until the
    stream is synchronised (the bindings cannot hold them for you)."""
    with _operand(dst, True) as (d, dn), _operand(src, False) as (s, sn):
        _check(lib.gpumem_memcpy_async(d, s, _count(n, dn, sn), _stream_handle(stream)))


def memset(dst, value, n=None):
    with _operand(dst, True) as (d, dn):
        _check(lib.gpumem_memset(d, value, _count(n, dn, None)))


def memset_async(dst, value, n=None, stream=None):
    with _operand(dst, True) as (d, dn):
        _check(lib.gpumem_memset_async(d, value, _count(n, dn, None), _stream_handle(stream)))


# ---------------------------------------------------------------------------
# Zero-copy views
# ---------------------------------------------------------------------------


def _host_view(ptr, size, owner):
    """A writable memoryview of size bytes at ptr that keeps owner alive."""
    if size == 0 or not ptr:
        return memoryview(bytearray(0))

    class _View(ctypes.c_ubyte * size):
        pass
    v = _View.from_address(ptr)
    v._gpumem_owner = owner
    return memoryview(v).cast("B")


def _numpy():
    try:
        import numpy
    except ImportError:
        raise ImportError("as_numpy needs NumPy (python3-numpy)") from None
    return numpy


_TYPESTRS = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
             "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float16": "<f2",
             "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16"}


def _typestr(dtype):
    if isinstance(dtype, str) and dtype in _TYPESTRS:
        return _TYPESTRS[dtype]
    if isinstance(dtype, str) and len(dtype) >= 3 and dtype[0] in "<>|=" and dtype[2:].isdigit():
        return dtype
    try:
        import numpy
    except ImportError:
        raise TypeError("dtype %r: without NumPy use a name (%s) or a typestr"
                        % (dtype, ", ".join(_TYPESTRS))) from None
    return numpy.dtype(dtype).str


def _shape(shape, nbytes, itemsize):
    if shape is None:
        shape = (nbytes // itemsize,)
    elif isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(x) for x in shape)
    if math.prod(shape) * itemsize > nbytes:
        raise ValueError("shape %s of %d-byte items needs %d bytes, the memory has %d"
                         % (shape, itemsize, math.prod(shape) * itemsize, nbytes))
    return shape


class CudaArrayView:
    """Device memory described by ``__cuda_array_interface__`` (version 3); keeps its owner alive.
    CuPy: ``cupy.asarray(view)``; Numba: ``numba.cuda.as_cuda_array(view)``;
    PyTorch: ``torch.as_tensor(view, device="cuda")``."""

    def __init__(self, owner, ptr, shape, typestr, stream=None, readonly=False):
        self.owner = owner
        self.ptr = ptr
        iface = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, bool(readonly)),
                 "version": 3, "strides": None}
        if stream:  # an int native stream the consumer must order after (0 is not allowed)
            iface["stream"] = int(stream)
        self.__cuda_array_interface__ = iface

    def __repr__(self):
        i = self.__cuda_array_interface__
        return "<gpumem.CudaArrayView 0x%x shape=%s typestr=%s>" % (self.ptr, i["shape"], i["typestr"])


class _Memory(_Resource):
    """Common to memory objects with .ptr and .size."""

    def _live_ptr(self):
        if self.closed:
            raise GpumemError(ERROR_INVALID_POINTER, "%r is closed" % self)  # noqa: F405
        return self.ptr

    def _host_accessible(self):
        return backend() == "host"

    def as_memoryview(self):
        """A writable zero-copy memoryview of host-accessible memory (pinned, managed, or any
        memory on the host backend).  Valid until close()."""
        ptr = self._live_ptr()
        if not self._host_accessible():
            raise ValueError("%r is not host-accessible on the %s backend; copy it with "
                             "gpumem.memcpy or view it with as_cuda_array" % (self, backend()))
        return _host_view(ptr, self.size, self)

    def as_numpy(self, dtype="uint8", shape=None):
        """A zero-copy NumPy array over host-accessible memory (needs NumPy)."""
        np = _numpy()
        dt = np.dtype(dtype)
        shape = _shape(shape, self.size, dt.itemsize)
        mv = self.as_memoryview()
        return np.frombuffer(mv, dtype=dt, count=math.prod(shape)).reshape(shape)

    def _device_ptr(self):
        return self._live_ptr()

    def _cai_stream(self):
        return None

    def as_cuda_array(self, dtype="uint8", shape=None, readonly=False):
        """A CudaArrayView (``__cuda_array_interface__`` v3) over device-accessible memory on
        the CUDA backend."""
        if backend() != "cuda":
            raise ValueError("__cuda_array_interface__ needs the CUDA backend (active: %s)" % backend())
        ts = _typestr(dtype)
        shape = _shape(shape, self.size, _typestr_itemsize(ts))
        return CudaArrayView(self, self._device_ptr(), shape, ts, self._cai_stream(), readonly)

    def to_bytes(self, n=None):
        """A copy of the first n bytes (default all) as bytes."""
        out = bytearray(self.size if n is None else n)
        memcpy(out, self._live_ptr(), len(out))
        return bytes(out)

    def memset(self, value, n=None):
        _check(lib.gpumem_memset(self._live_ptr(), value, self.size if n is None else n))

    def copy_from(self, src, n=None):
        memcpy(self, src, n)

    def copy_to(self, dst, n=None):
        memcpy(dst, self, n)

    def info(self):
        return pointer_info(self._live_ptr())

    def __len__(self):
        return self.size


# ---------------------------------------------------------------------------
# Allocations
# ---------------------------------------------------------------------------


@_generation_guard
def _free_memory(kind, ptr, stream):
    if kind == KIND_HOST_PINNED:  # noqa: F405
        return lib.gpumem_host_free(ptr)
    if kind == KIND_STREAM_ORDERED:  # noqa: F405
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
        return self.ptr != 0 and super().closed

    @property
    def kind(self):
        return KIND_NAMES[self.kind_code]

    def free(self):
        self.close()

    def _host_accessible(self):
        return self.kind_code in (KIND_HOST_PINNED, KIND_MANAGED) or backend() == "host"  # noqa: F405

    def _device_ptr(self):
        ptr = self._live_ptr()
        if self.kind_code == KIND_HOST_PINNED:  # noqa: F405
            return host_get_device_pointer(ptr)
        return ptr

    def _cai_stream(self):
        if isinstance(self.stream, Stream) and not self.stream.closed:
            return self.stream.native or None
        return None

    # managed memory
    def prefetch(self, device, stream=None, count=None):
        prefetch(self, device, count=count, stream=stream)

    def advise(self, advice, device=DEVICE_HOST, count=None):  # noqa: F405
        advise(self, advice, device, count=count)

    def range_attribute(self, attribute, count=None):
        return range_attribute(self, attribute, count=count)

    def __repr__(self):
        return "<gpumem.Allocation %s 0x%x size=%d%s>" % (self.kind, self.ptr, self.size,
                                                          " closed" if self.closed else "")


def malloc(size):
    """Device memory on the current device (gpumem_malloc)."""
    p = ctypes.c_void_p()
    _check(lib.gpumem_malloc(ctypes.byref(p), size))
    return Allocation(p.value, size, KIND_DEVICE, device=get_device())  # noqa: F405


def host_alloc(size, flags=0):
    """Page-locked host memory (gpumem_host_alloc; flags HOST_*)."""
    p = ctypes.c_void_p()
    _check(lib.gpumem_host_alloc(ctypes.byref(p), size, flags))
    return Allocation(p.value, size, KIND_HOST_PINNED, device=DEVICE_HOST)  # noqa: F405


def managed_alloc(size, flags=0):
    """Managed memory (gpumem_managed_alloc; flags 0, ATTACH_GLOBAL or ATTACH_HOST)."""
    p = ctypes.c_void_p()
    _check(lib.gpumem_managed_alloc(ctypes.byref(p), size, flags))
    return Allocation(p.value, size, KIND_MANAGED, device=get_device())  # noqa: F405


def malloc_async(size, stream=None, pool=None):
    """Stream-ordered memory from ``pool`` (default: the current device's current pool)."""
    p = ctypes.c_void_p()
    if pool is None:
        _check(lib.gpumem_malloc_async(ctypes.byref(p), size, _stream_handle(stream)))
    else:
        _check(lib.gpumem_malloc_from_pool_async(ctypes.byref(p), size, pool.handle,
                                                 _stream_handle(stream)))
    return Allocation(p.value, size, KIND_STREAM_ORDERED, stream=stream, device=get_device())  # noqa: F405


# ---------------------------------------------------------------------------
# Pointer info, stats, tracing
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PointerInfo:
    kind: str
    kind_code: int
    device: int
    base: int
    alloc_size: int
    emulated: bool
    flags: int
    pool: int
    device_pointer: int


def _addr(obj):
    if isinstance(obj, _Memory):
        return obj._live_ptr()
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj
    raise TypeError("expected an address (int) or a gpumem memory object, not %r" % type(obj).__name__)


def pointer_info(ptr):
    """What gpumem knows of an address (interior pointers too; kind "unknown" otherwise)."""
    s = init_struct(_lib.PointerInfo)
    _check(lib.gpumem_pointer_get_info(_addr(ptr), ctypes.byref(s)))
    return PointerInfo(kind=KIND_NAMES[s.kind] if 0 <= s.kind < len(KIND_NAMES) else str(s.kind),
                       kind_code=s.kind, device=s.device, base=s.base or 0, alloc_size=s.alloc_size,
                       emulated=bool(s.emulated), flags=s.flags, pool=s.pool or 0,
                       device_pointer=s.device_pointer or 0)


@dataclasses.dataclass(frozen=True)
class Stats:
    """Process-wide counters; each dict is keyed by kind name ("device", "stream_ordered", ...)."""
    current_bytes: dict
    peak_bytes: dict
    alloc_count: dict
    free_count: dict
    fallback_count: int

    @property
    def total_alloc_count(self):
        return sum(self.alloc_count.values())

    @property
    def total_free_count(self):
        return sum(self.free_count.values())


def stats():
    s = init_struct(_lib.Stats)
    _check(lib.gpumem_get_stats(ctypes.byref(s)))

    def d(arr):
        return {KIND_NAMES[i]: int(arr[i]) for i in range(KIND_COUNT)}  # noqa: F405
    return Stats(d(s.current_bytes), d(s.peak_bytes), d(s.alloc_count), d(s.free_count),
                 int(s.fallback_count))


def reset_peak_stats():
    _check(lib.gpumem_reset_peak_stats())


@dataclasses.dataclass(frozen=True)
class TraceRecord:
    op: str  # "alloc" or "free"
    kind: str
    ptr: int
    bytes: int
    device: int
    emulated: bool
    stream: int
    pool: int


_trace_keep = [None]


def set_trace_callback(fn):
    """Call fn(TraceRecord) on every allocation and free (None removes it).  fn runs on the
    allocating thread and must not call gpumem."""
    if fn is None:
        _check(lib.gpumem_set_trace_callback(ctypes.cast(None, _lib.TRACE_FN), None))
        _trace_keep[0] = None
        return

    def cb(ev, _user):
        e = ev.contents
        fn(TraceRecord("alloc" if e.op == TRACE_ALLOC else "free",  # noqa: F405
                       KIND_NAMES[e.kind] if 0 <= e.kind < len(KIND_NAMES) else str(e.kind),
                       e.ptr or 0, e.bytes, e.device, bool(e.emulated), e.stream or 0, e.pool or 0))
    c = _lib.TRACE_FN(cb)
    _check(lib.gpumem_set_trace_callback(c, None))
    _trace_keep[0] = c


# ---------------------------------------------------------------------------
# Page-locked and managed memory
# ---------------------------------------------------------------------------


def host_get_device_pointer(ptr):
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
            raise GpumemError(ERROR_INVALID_VALUE, "cannot register an empty buffer")  # noqa: F405
        self.ptr = ctypes.addressof(ctypes.c_char.from_buffer(mv))
        self.size = len(mv)
        _check(lib.gpumem_host_register(self.ptr, self.size, flags))
        self._own(_unregister, _generation[0], self.ptr, mv)

    def device_pointer(self):
        return host_get_device_pointer(self.ptr)


def _range(obj, count):
    ptr = _addr(obj)
    if count is None:
        if not isinstance(obj, _Memory):
            raise ValueError("count is required with a plain address")
        count = obj.size
    return ptr, count


def prefetch(obj, device, count=None, stream=None):
    ptr, count = _range(obj, count)
    _check(lib.gpumem_prefetch_async(ptr, count, device, _stream_handle(stream)))


def advise(obj, advice, device=DEVICE_HOST, count=None):  # noqa: F405
    ptr, count = _range(obj, count)
    _check(lib.gpumem_advise(ptr, count, advice, device))


def _attr_buffer(attribute, slots):
    if attribute == RANGE_ACCESSED_BY:  # noqa: F405
        if slots is None:
            slots = device_count() + 1
        return (ctypes.c_int32 * slots)()
    return ctypes.c_int32()


def _attr_value(attribute, buf):
    if attribute == RANGE_ACCESSED_BY:  # noqa: F405
        return [v for v in buf if v != LOCATION_INVALID]  # noqa: F405
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
    attributes = [int(a) for a in attributes]
    n = len(attributes)
    bufs = [_attr_buffer(a, slots) for a in attributes]
    data = (ctypes.c_void_p * n)(*[ctypes.addressof(b) for b in bufs])
    sizes = (ctypes.c_size_t * n)(*[ctypes.sizeof(b) for b in bufs])
    attrs = (ctypes.c_int32 * n)(*attributes)
    _check(lib.gpumem_range_get_attributes(data, sizes, attrs, n, ptr, count))
    return {a: _attr_value(a, b) for a, b in zip(attributes, bufs)}


def stream_attach(stream, obj, length=0, flags=ATTACH_SINGLE):  # noqa: F405
    _check(lib.gpumem_stream_attach(_stream_handle(stream), _addr(obj), length, flags))


# ---------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------


@_generation_guard
def _pool_destroy(h):
    return lib.gpumem_pool_destroy(h)


def _pool_attr(attr, ctype):
    def get(self):
        v = ctype()
        _check(lib.gpumem_pool_get_attribute(self.handle, attr, ctypes.byref(v)))
        return bool(v.value) if ctype is ctypes.c_int32 else v.value

    def set_(self, value):
        v = ctype(int(value))
        _check(lib.gpumem_pool_set_attribute(self.handle, attr, ctypes.byref(v)))
    return get, set_


class Pool(_Resource):
    """A memory pool.  ``Pool()`` creates one (owned: destroyed on close);
    ``Pool.default(dev)`` and ``Pool.current(dev)`` wrap existing pools without owning them."""

    def __init__(self, device=None, max_size=0, handle_types=HANDLE_NONE,  # noqa: F405
                 implementation=POOL_AUTO, _handle=None):  # noqa: F405
        if _handle is not None:
            self.handle, self.owned = _handle, False
            return
        props = init_struct(_lib.PoolProps, device=_dev(device), handle_types=handle_types,
                            max_size=max_size, implementation=implementation)
        h = _lib.pool_t()
        _check(lib.gpumem_pool_create(ctypes.byref(h), ctypes.byref(props)))
        self.handle, self.owned = h.value, True
        self._own(_pool_destroy, _generation[0], self.handle)

    @property
    def closed(self):
        return self.owned and super().closed

    @classmethod
    def default(cls, device=None):
        h = _lib.pool_t()
        _check(lib.gpumem_device_get_default_pool(ctypes.byref(h), _dev(device)))
        return cls(_handle=h.value)

    @classmethod
    def current(cls, device=None):
        h = _lib.pool_t()
        _check(lib.gpumem_device_get_pool(ctypes.byref(h), _dev(device)))
        return cls(_handle=h.value)

    def make_current(self, device=None):
        """gpumem_device_set_pool: malloc_async (and the framework hooks) then use this pool."""
        _check(lib.gpumem_device_set_pool(_dev(device), self.handle))

    def malloc(self, size, stream=None):
        return malloc_async(size, stream=stream, pool=self)

    def trim(self, min_bytes_to_keep=0):
        _check(lib.gpumem_pool_trim_to(self.handle, min_bytes_to_keep))

    trim_to = trim

    def set_access(self, descs):
        """descs: iterable of (device, ACCESS_*)."""
        descs = list(descs)
        arr = (_lib.AccessDesc * len(descs))(*[_lib.AccessDesc(d, f) for d, f in descs])
        _check(lib.gpumem_pool_set_access(self.handle, arr, len(descs)))

    def get_access(self, device=None):
        f = ctypes.c_int32()
        _check(lib.gpumem_pool_get_access(ctypes.byref(f), self.handle, _dev(device)))
        return f.value

    def export_handle(self, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        """A new file descriptor for the pool (caller closes it; send it with ipc_send_fd)."""
        fd = ctypes.c_int32()
        _check(lib.gpumem_pool_export_to_shareable_handle(ctypes.byref(fd), self.handle, handle_type))
        return fd.value

    @classmethod
    def import_handle(cls, fd, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        h = _lib.pool_t()
        _check(lib.gpumem_pool_import_from_shareable_handle(ctypes.byref(h), fd, handle_type))
        p = cls(_handle=h.value)
        p.owned = True
        p._own(_pool_destroy, _generation[0], p.handle)
        return p

    @staticmethod
    def export_pointer(alloc):
        """64 bytes describing a pointer of a shareable pool for another process."""
        d = _lib.PoolPtrExportData()
        _check(lib.gpumem_pool_export_pointer(ctypes.byref(d), _addr(alloc)))
        return bytes(d.reserved)

    def import_pointer(self, data, size):
        d = _lib.PoolPtrExportData()
        ctypes.memmove(d.reserved, bytes(data), 64)
        p = ctypes.c_void_p()
        _check(lib.gpumem_pool_import_pointer(ctypes.byref(p), self.handle, ctypes.byref(d)))
        return Allocation(p.value, size, KIND_STREAM_ORDERED)  # noqa: F405

    reuse_follow_event_dependencies = property(*_pool_attr(POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, ctypes.c_int32))  # noqa: F405,E501
    reuse_allow_opportunistic = property(*_pool_attr(POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, ctypes.c_int32))  # noqa: F405,E501
    reuse_allow_internal_dependencies = property(*_pool_attr(POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, ctypes.c_int32))  # noqa: F405,E501
    release_threshold = property(*_pool_attr(POOL_ATTR_RELEASE_THRESHOLD, ctypes.c_uint64))  # noqa: F405
    reserved_mem_current = property(_pool_attr(POOL_ATTR_RESERVED_MEM_CURRENT, ctypes.c_uint64)[0])  # noqa: F405
    #: set to 0 to reset it to the current value
    reserved_mem_high = property(*_pool_attr(POOL_ATTR_RESERVED_MEM_HIGH, ctypes.c_uint64))  # noqa: F405
    used_mem_current = property(_pool_attr(POOL_ATTR_USED_MEM_CURRENT, ctypes.c_uint64)[0])  # noqa: F405
    #: set to 0 to reset it to the current value
    used_mem_high = property(*_pool_attr(POOL_ATTR_USED_MEM_HIGH, ctypes.c_uint64))  # noqa: F405

    def __eq__(self, other):
        return isinstance(other, Pool) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return "<gpumem.Pool 0x%x%s>" % (self.handle or 0, "" if self.owned else " (not owned)")


# ---------------------------------------------------------------------------
# Growable buffers
# ---------------------------------------------------------------------------


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
        _check(lib.gpumem_buffer_resize(self.handle, new_size))

    @property
    def data(self):
        p = ctypes.c_void_p()
        _check(lib.gpumem_buffer_data(self.handle, ctypes.byref(p)))
        return p.value or 0

    ptr = data

    @property
    def size(self):
        n = ctypes.c_size_t()
        _check(lib.gpumem_buffer_size(self.handle, ctypes.byref(n)))
        return n.value

    def _live_ptr(self):
        return self.data  # a closed buffer's handle is dead: INVALID_HANDLE

    def __repr__(self):
        return "<gpumem.Buffer 0x%x%s>" % (self.handle or 0, " closed" if self.closed else "")


# ---------------------------------------------------------------------------
# Virtual memory management
# ---------------------------------------------------------------------------


def mem_granularity(device=None, recommended=False, handle_types=HANDLE_NONE):  # noqa: F405
    props = init_struct(_lib.AllocProps, device=_dev(device), handle_types=handle_types)
    g = ctypes.c_size_t()
    _check(lib.gpumem_mem_get_granularity(ctypes.byref(g), ctypes.byref(props),
                                          GRANULARITY_RECOMMENDED if recommended else GRANULARITY_MINIMUM))  # noqa: F405,E501
    return g.value


@_generation_guard
def _mem_release(h):
    return lib.gpumem_mem_release(h)


class PhysicalMemory(_Resource):
    """Physical memory (gpumem_mem_create); released on close (mapped memory lives until unmapped)."""

    def __init__(self, size, device=None, handle_types=HANDLE_NONE, _handle=None):  # noqa: F405
        if _handle is None:
            props = init_struct(_lib.AllocProps, device=_dev(device), handle_types=handle_types)
            h = _lib.mem_handle_t()
            _check(lib.gpumem_mem_create(ctypes.byref(h), size, ctypes.byref(props)))
            _handle = h.value
        self.handle, self.size = _handle, size
        self._own(_mem_release, _generation[0], self.handle)

    def export_handle(self, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        fd = ctypes.c_int32()
        _check(lib.gpumem_mem_export_to_shareable_handle(ctypes.byref(fd), self.handle, handle_type))
        return fd.value

    @classmethod
    def import_handle(cls, fd, size, handle_type=HANDLE_POSIX_FD):  # noqa: F405
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

    def map(self, mem, offset=0, access=ACCESS_READWRITE, device=None):  # noqa: F405
        """Map all of ``mem`` at ptr+offset and (unless access is None) grant ``device`` access."""
        _check(lib.gpumem_mem_map(self._live_ptr() + offset, mem.size, 0, mem.handle))
        self._mappings[offset] = mem.size
        if access is not None:
            self.set_access(offset, mem.size, [(_dev(device), access)])

    def unmap(self, offset=0, size=None):
        size = self._mappings.get(offset) if size is None else size
        if size is None:
            raise GpumemError(ERROR_INVALID_VALUE, "nothing mapped at offset %d" % offset)  # noqa: F405
        _check(lib.gpumem_mem_unmap(self._live_ptr() + offset, size))
        self._mappings.pop(offset, None)

    def set_access(self, offset, size, descs):
        descs = list(descs)
        arr = (_lib.AccessDesc * len(descs))(*[_lib.AccessDesc(d, f) for d, f in descs])
        _check(lib.gpumem_mem_set_access(self._live_ptr() + offset, size, arr, len(descs)))

    def get_access(self, device=None, offset=0):
        f = ctypes.c_uint64()
        _check(lib.gpumem_mem_get_access(ctypes.byref(f), _dev(device), self._live_ptr() + offset))
        return f.value

    def __repr__(self):
        return "<gpumem.AddressRange 0x%x size=%d%s>" % (self.ptr, self.size, " closed" if self.closed else "")


# ---------------------------------------------------------------------------
# IPC helpers
# ---------------------------------------------------------------------------


def ipc_send_fd(sock, fd):
    """Send fd over a connected AF_UNIX socket (a socket object or its fileno())."""
    _check(lib.gpumem_ipc_send_fd(sock if isinstance(sock, int) else sock.fileno(), fd))


def ipc_recv_fd(sock):
    fd = ctypes.c_int32()
    _check(lib.gpumem_ipc_recv_fd(sock if isinstance(sock, int) else sock.fileno(), ctypes.byref(fd)))
    return fd.value


# ---------------------------------------------------------------------------
# Frameworks
# ---------------------------------------------------------------------------


def torch_allocator_path():
    """Path of the loaded libgpumem.so, for torch.cuda.memory.CUDAPluggableAllocator(path,
    "gpumem_pluggable_malloc", "gpumem_pluggable_free")."""
    return LIBRARY_PATH


def use_torch_allocator():
    """Make gpumem PyTorch's CUDA allocator (call before the first CUDA allocation)."""
    import torch
    alloc = torch.cuda.memory.CUDAPluggableAllocator(torch_allocator_path(), "gpumem_pluggable_malloc",
                                                     "gpumem_pluggable_free")
    torch.cuda.memory.change_current_allocator(alloc)
    return alloc


def _pluggable_free(ptr, size, device, native_stream):
    lib.gpumem_pluggable_free(ptr, size, device, native_stream)
    return 0


class _CupyBlock:
    """Owner of one CuPy allocation: frees it (gpumem_free_async on the stream it was made on,
    through gpumem_pluggable_free) when CuPy drops the memory."""

    def __init__(self, ptr, size, device, native_stream):
        self.ptr = ptr
        self._f = weakref.finalize(self, _quiet, _generation_guard(_pluggable_free), _generation[0],
                                   ptr, size, device, native_stream)


def cupy_allocator(size):
    """For ``cupy.cuda.set_allocator(gpumem.cupy_allocator)``: stream-ordered memory from the
    current device's current gpumem pool, on CuPy's current stream."""
    import cupy
    device = cupy.cuda.runtime.getDevice()
    if size == 0:
        return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(0, 0, None, device), 0)
    native = cupy.cuda.get_current_stream().ptr or None
    ptr = lib.gpumem_pluggable_malloc(size, device, native)
    if not ptr:
        raise GpumemError(ERROR_OUT_OF_MEMORY)  # noqa: F405  (message: last error)
    owner = _CupyBlock(ptr, size, device, native)
    return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(ptr, size, owner, device), 0)
