"""gpumem: one API over every way a GPU program holds memory (Python bindings).

A pure-Python package over ctypes; it needs libgpumem.so (found through
GPUMEM_LIBRARY, GPUMEM_BUILD_DIR, the copy bundled in a wheel or installed with the
package, the source tree's plain build/ (never a sanitizer build),
``pkg-config --variable=libdir gpumem``, then the system loader).

    import gpumem
    with gpumem.malloc(1 << 20) as d, gpumem.host_alloc(1 << 20) as h:
        h.as_memoryview()[:5] = b"hello"        # pinned memory: a zero-copy view
        gpumem.memcpy(d, h)                      # host -> device (direction inferred)
        out = bytearray(5)
        gpumem.memcpy(out, d, 5)                 # device -> any buffer-protocol object
    print(gpumem.stats().alloc_count["device"])

Errors raise :class:`GpumemError` (``.status``, ``.status_name``, ``.message``); an
OUT_OF_MEMORY raises its subclass :class:`OutOfMemoryError`, which carries what would have fit.
Objects (Allocation, Stream, Event, Pool, Buffer, PhysicalMemory, AddressRange,
HostRegistration) free themselves on close(), at the end of a ``with`` block, or
when garbage-collected -- exactly once.  Views (memoryviews, NumPy arrays, DLPack
tensors, ``__cuda_array_interface__`` objects) keep their memory alive: close() closes
the object at once, and the memory is freed when the last view goes (gpumem/_exports.py).

CuPy::

    import cupy, gpumem
    cupy.cuda.set_allocator(gpumem.cupy_allocator)      # every CuPy array now comes from gpumem
    x = cupy.asarray(gpumem.malloc(4096).as_cuda_array("float32"))   # or adopt one allocation

PyTorch (before the first CUDA allocation of the process)::

    import torch, gpumem
    alloc = torch.cuda.memory.CUDAPluggableAllocator(
        gpumem.torch_allocator_path(), "gpumem_pluggable_malloc_or_throw", "gpumem_pluggable_free")
    torch.cuda.memory.change_current_allocator(alloc)   # or simply: gpumem.use_torch_allocator()

Both are served stream-ordered from the current gpumem pool of the device, so
``gpumem.stats()`` in the same process shows the traffic (kind "stream_ordered").

The complete C API is underneath: ``gpumem.lib.gpumem_*`` with prototypes set,
constants without their prefix (``gpumem.ADVISE_SET_READ_MOSTLY``) and the
structs as _ctypes.Structure in ``gpumem._lib``.

SPDX-License-Identifier: MIT
"""
import collections as _collections
import contextlib as _contextlib
import ctypes as _ctypes
import dataclasses as _dataclasses
import functools as _functools
import math as _math
import weakref as _weakref

from . import _dlpack, _entry, _exports, _lib
from ._lib import *  # noqa: F401,F403  constants
from ._lib import lib, LIBRARY_PATH, RUNTIME_VERSION, KIND_NAMES, init_struct

__version__ = "0.4.0"

__all__ = [
    "GpumemError", "OutOfMemoryError", "OomRemedy", "last_oom_report", "lib", "LIBRARY_PATH", "version", "init", "finalize", "backend",
    "device_count", "set_device", "get_device", "can_access_peer",
    "enable_peer_access", "disable_peer_access", "workarounds", "device_info", "mem_get_info", "device_synchronize",
    "Allocation", "malloc", "host_alloc", "managed_alloc", "malloc_async", "Stream", "Event",
    "elapsed_ms", "Pool", "Buffer", "PhysicalMemory", "AddressRange", "mem_granularity",
    "HostRegistration", "memcpy", "memcpy_async", "memset", "memset_async", "pointer_info",
    "stats", "reset_peak_stats", "set_trace_callback", "kind_name", "snapshot", "prefetch", "advise", "range_attribute",
    "range_attributes", "stream_attach", "host_get_device_pointer", "CudaArrayView",
    "DeviceInfo", "PointerInfo", "Stats", "TraceRecord", "cupy_allocator", "cupy_c_allocator",
    "torch_allocator_path", "use_torch_allocator", "torch_mem_pool", "ipc_send_fd", "ipc_recv_fd", "ArrayView",
    "memcpy_batch_async", "prefetch_batch_async", "discard_batch_async",
    "viz",
    "get_default_pool_for",
    "export_dmabuf",
    "memory_summary", "empty_cache",
]



def __getattr__(name):
    """``gpumem.viz(path, out=None)``: a trace's or snapshot's HTML page (gpumem/viz.py; the
    module is callable).  Imported on first use, so that ``python -m gpumem.viz`` runs it
    fresh, and importing gpumem costs nothing for it."""
    if name == "viz":
        import importlib
        return importlib.import_module(__name__ + ".viz")   # also binds gpumem.viz
    raise AttributeError("module 'gpumem' has no attribute %r" % name)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class GpumemError(Exception):
    """A gpumem call failed.  ``status`` is the GPUMEM_* code, ``status_name`` its
    name, ``message`` the library's gpumem_last_error_message().  An OUT_OF_MEMORY
    from the library is an :class:`OutOfMemoryError`."""

    def __new__(cls, status=0, message=None, *args, **kwargs):
        # Every raise site says GpumemError(status): the library's OUT_OF_MEMORY
        # becomes the subclass here, once, with the report read on this thread.
        if cls is GpumemError and int(status) == ERROR_OUT_OF_MEMORY and message is None:  # noqa: F405
            cls = OutOfMemoryError
        return super().__new__(cls)

    def __init__(self, status, message=None):
        self.status = int(status)
        self.status_name = lib.gpumem_status_string(self.status).decode()
        if message is None:
            message = lib.gpumem_last_error_message().decode(errors="replace")
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message) if message else self.status_name)


OomRemedy = _collections.namedtuple("OomRemedy", "bytes fits")
OomRemedy.__doc__ = """One remedy of an out-of-memory report: the bytes it frees (for the limit: by
how much it must rise) and whether the request would then have fit (bool)."""

_OOM_SCALARS = ("device", "kind", "bytes", "rounded_bytes", "device_free", "device_total", "gpumem_reserved",
                "gpumem_used", "limit", "limit_held", "trim_pool_bytes", "largest_free_block")
_OOM_HANDLES = ("pool", "stream", "trim_pool", "pending_stream")
_OOM_REMEDIES = ("trim", "pending", "fragmentation", "limit_raise", "outside")


def last_oom_report():
    """The calling thread's last OUT_OF_MEMORY as a dict of gpumem_oom_report_t's fields
    (handles as integers or None, remedies as :class:`OomRemedy`), or None when there was none."""
    r = init_struct(_lib.OomReport)
    _check(lib.gpumem_last_oom_report(_ctypes.byref(r)))
    if not r.has_report:
        return None
    out = {name: int(getattr(r, name)) for name in _OOM_SCALARS}
    out.update({name: getattr(r, name) or None for name in _OOM_HANDLES})
    out.update({name: OomRemedy(int(getattr(r, name).bytes), bool(getattr(r, name).fits)) for name in _OOM_REMEDIES})
    out["verdict"] = r.verdict.decode(errors="replace")
    return out


class OutOfMemoryError(GpumemError):
    """OUT_OF_MEMORY, with what would have fit (gpumem_last_oom_report): ``report`` is the
    dict of :func:`last_oom_report`, and each of its fields is an attribute too
    (``bytes``, ``device``, ``kind``, ``pool``, ``stream``, ``device_free``, ``device_total``,
    ``gpumem_reserved``, ``gpumem_used``, ``limit``, ``limit_held``, the remedies ``trim``,
    ``pending``, ``fragmentation``, ``limit_raise``, ``outside`` as :class:`OomRemedy`,
    ``trim_pool``, ``pending_stream``, ``largest_free_block``, and ``verdict``).  Without a
    report (a call that is not one allocation) ``report`` is None and ``verdict`` empty."""

    def __init__(self, status=ERROR_OUT_OF_MEMORY, message=None):  # noqa: F405
        super().__init__(status, message)
        try:
            report = last_oom_report()
        except GpumemError:
            report = None
        self.report = report
        self.verdict = ""
        if report:
            for name, value in report.items():
                setattr(self, name, value)


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
    b = _ctypes.c_int32()
    _check(lib.gpumem_get_backend(_ctypes.byref(b)))
    return lib.gpumem_backend_name(b.value).decode()


def device_count():
    """Number of devices of the active backend (the host backend has one)."""
    n = _ctypes.c_int32()
    _check(lib.gpumem_device_count(_ctypes.byref(n)))
    return n.value


def set_device(device):
    """Make ``device`` the calling thread's current device (gpumem_set_device)."""
    _check(lib.gpumem_set_device(device))


def get_device():
    """The calling thread's current device."""
    d = _ctypes.c_int32()
    _check(lib.gpumem_get_device(_ctypes.byref(d)))
    return d.value


def can_access_peer(device, peer):
    """Whether ``device`` can be given access to ``peer``'s plain device memory
    (gpumem_device_can_access_peer).  False for a device and itself, on the host
    backend, and where the runtime has no peer access."""
    c = _ctypes.c_int32()
    _check(lib.gpumem_device_can_access_peer(_ctypes.byref(c), int(device), int(peer)))
    return bool(c.value)


def enable_peer_access(peer):
    """Let the current device access ``peer``'s plain device memory
    (gpumem_device_enable_peer_access).  Idempotent.  Pools and VMM ranges take
    their own access (``Pool.set_access``, ``AddressRange.set_access``); managed and pinned
    memory and copies need none."""
    _check(lib.gpumem_device_enable_peer_access(int(peer)))


def workarounds():
    """The known vendor-runtime bugs gpumem works around in this process
    (gpumem_workarounds_get), as a list of ``(name, description)`` pairs; empty
    on the host backend."""
    count = _ctypes.c_size_t()
    _check(lib.gpumem_workarounds_get(None, None, 0, _ctypes.byref(count)))
    n = count.value
    names = (_ctypes.c_char_p * max(n, 1))()
    descriptions = (_ctypes.c_char_p * max(n, 1))()
    _check(lib.gpumem_workarounds_get(names, descriptions, n, _ctypes.byref(count)))
    n = min(n, count.value)
    return [(names[i].decode("utf-8"), descriptions[i].decode("utf-8")) for i in range(n)]


def disable_peer_access(peer):
    """Withdraw the current device's access to ``peer``'s plain device memory
    (gpumem_device_disable_peer_access).  Idempotent."""
    _check(lib.gpumem_device_disable_peer_access(int(peer)))


def _dev(device):
    return get_device() if device is None else int(device)


def mem_get_info():
    """(free, total) bytes of the current device."""
    f, t = _ctypes.c_size_t(), _ctypes.c_size_t()
    _check(lib.gpumem_mem_get_info(_ctypes.byref(f), _ctypes.byref(t)))
    return f.value, t.value


def device_synchronize():
    """Wait for all work on the current device (gpumem_device_synchronize)."""
    _check(lib.gpumem_device_synchronize())


@_dataclasses.dataclass(frozen=True)
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
    batch_memops: int = 0  # support level of the batched copies, prefetches and discards (0.2)
    pinned_pools: int = 0   # support level of pools of pinned host memory (0.2)
    managed_pools: int = 0  # support level of pools of managed memory (0.2)
    rdma_memory: int = 0    # support level of POOL_RDMA memory, for GPUDirect RDMA and NCCL (0.4)
    dmabuf: int = 0  # support level of export_dmabuf (0.4)
    fabric_handles: int = 0  # support level of HANDLE_FABRIC, as the driver claims it (0.4)


def device_info(device=None):
    """Capabilities of a device (support levels are SUPPORT_NONE/EMULATED/NATIVE/BROKEN)."""
    s = init_struct(_lib.DeviceInfo)
    _check(lib.gpumem_device_get_info(_dev(device), _ctypes.byref(s)))
    return DeviceInfo(
        name=s.name.decode(errors="replace"), backend=lib.gpumem_backend_name(s.backend).decode(),
        device=s.device, total_memory=s.total_memory, free_memory=s.free_memory,
        managed_memory=s.managed_memory, managed_migrates=bool(s.managed_migrates),
        pageable_memory_access=bool(s.pageable_memory_access), memory_pools=s.memory_pools,
        virtual_memory=s.virtual_memory, ipc_handle_types=s.ipc_handle_types,
        vmm_granularity=s.vmm_granularity, vmm_recommended_granularity=s.vmm_recommended_granularity,
        host_register=s.host_register, compute_capability=s.compute_capability,
        arch_name=s.arch_name.decode(errors="replace"), pool_ipc_handle_types=s.pool_ipc_handle_types,
        batch_memops=s.batch_memops,
        pinned_pools=s.pinned_pools, managed_pools=s.managed_pools, rdma_memory=s.rdma_memory,
        dmabuf=s.dmabuf, fabric_handles=s.fabric_handles)


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
    _views = None  # the _exports.Exports of an owned object

    def _own(self, release, *args):
        """Register release(*args) -> status, called once: by close() or by the GC."""
        self._views = views = _exports.Exports()
        self._finalizer = _weakref.finalize(self, _collected, views, release, *args)

    @property
    def closed(self):
        """True once released (by close(), a with block, the GC or gpumem.finalize())."""
        return self._finalizer is None or not self._finalizer.alive

    def _h(self):
        """The handle of a live object; GpumemError (INVALID_HANDLE) once closed."""
        if self.closed:
            raise GpumemError(ERROR_INVALID_HANDLE, "%r is closed: make a new one" % self)  # noqa: F405
        return self.handle

    def close(self):
        """Release now, or, while NumPy arrays, DLPack tensors or memoryviews made from this
        object are alive, when the last of them goes (the object is closed at once either way).
        A second close() does nothing.  Raises GpumemError if the C call fails; a release that
        waited raises its error from the next gpumem call."""
        f = self._finalizer
        if f is None:
            return
        got = f.detach()  # atomic: whoever detaches (close or GC) releases, never both
        if got is None:
            return
        _obj, _collected_fn, args, _kw = got
        views, release, rargs = args[0], args[1], args[2:]
        if views.defer(_functools.partial(_release_later, repr(self), release, rargs)):
            return
        st = release(*rargs)
        if st:
            raise GpumemError(st)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _collected(views, release, *args):
    """The release of an object the GC collects.  Its exports hold it, so only at interpreter
    exit (weakref.finalize runs what is left) can exports outlive it: the memory is then left
    to them (and to the library's own teardown), never freed under them."""
    if not views.defer(_functools.partial(_quiet, release, *args)):
        _quiet(release, *args)


def _release_later(what, release, args):
    """The release close() left to the last export (_exports.Exports.release runs it)."""
    st = release(*args)
    if st:
        _entry.keep(GpumemError(st), "the free of %s, which waited for its last export" % what)


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
        return stream._h()
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _entry.check("stream", "a raw gpumem_stream_t", stream, _entry.ADDRESS)
    raise TypeError("stream must be a gpumem.Stream, None (default stream) or a raw handle, not %s"
                    % type(stream).__name__)


def _instance(where, name, obj, cls):
    """obj, if it is a ``cls``; else TypeError naming the argument and what it must be."""
    if not isinstance(obj, cls):
        raise TypeError("%s: %s must be a gpumem.%s, not %s" % (where, name, cls.__name__, type(obj).__name__))
    return obj


@_generation_guard
def _stream_destroy(h):
    return lib.gpumem_stream_destroy(h)


class Stream(_Resource):
    """A gpumem stream; ``Stream()`` creates one on the current device."""

    def __init__(self, _handle=None):
        if _handle is None:
            h = _lib.stream_t()
            _check(lib.gpumem_stream_create(_ctypes.byref(h)))
            _handle = h.value
        self.handle = _handle
        self._own(_stream_destroy, _generation[0], _handle)

    @classmethod
    def wrap(cls, native):
        """Wrap a native stream (cudaStream_t / hipStream_t as an int) without owning it."""
        h = _lib.stream_t()
        _check(lib.gpumem_stream_wrap(native, _ctypes.byref(h)))
        return cls(_handle=h.value)

    @property
    def native(self):
        """The native stream (int; 0 for a dead handle)."""
        return lib.gpumem_stream_native(self._h()) or 0

    def synchronize(self):
        """Wait until all work on this stream is done."""
        _check(lib.gpumem_stream_synchronize(self._h()))

    def query(self):
        """True when idle, False when work is pending."""
        st = lib.gpumem_stream_query(self._h())
        if st == ERROR_BUSY:  # noqa: F405
            return False
        _check(st)
        return True

    def wait_event(self, event):
        """Make later work on this stream wait for ``event`` (gpumem_stream_wait_event)."""
        _check(lib.gpumem_stream_wait_event(self._h(), _instance("Stream.wait_event()", "event", event, Event)._h()))

    def record(self, event=None):
        """Record an event (a new one when None) on this stream; returns it."""
        event = Event() if event is None else _instance("Stream.record()", "event", event, Event)
        event.record(self)
        return event

    def __repr__(self):
        return "<gpumem.Stream 0x%x%s>" % (self.handle or 0, " closed" if self.closed else "")


@_generation_guard
def _event_destroy(h):
    return lib.gpumem_event_destroy(h)


class Event(_Resource):
    """A gpumem event; ``Event()`` creates one (gpumem_event_create)."""
    def __init__(self):
        h = _lib.event_t()
        _check(lib.gpumem_event_create(_ctypes.byref(h)))
        self.handle = h.value
        self._own(_event_destroy, _generation[0], self.handle)

    def record(self, stream=None):
        """Record this event on ``stream`` (None: the default stream)."""
        _check(lib.gpumem_event_record(self._h(), _stream_handle(stream)))

    def synchronize(self):
        """Wait until the work before the recorded event is done."""
        _check(lib.gpumem_event_synchronize(self._h()))

    def query(self):
        """True when completed (or never recorded), False when pending."""
        st = lib.gpumem_event_query(self._h())
        if st == ERROR_BUSY:  # noqa: F405
            return False
        _check(st)
        return True

    def elapsed_ms(self, end):
        """Milliseconds from this event to ``end`` (both recorded and completed)."""
        return elapsed_ms(self, end)


def elapsed_ms(start, end):
    """Milliseconds between two recorded, completed events (gpumem_event_elapsed_ms)."""
    ms = _ctypes.c_float()
    _check(lib.gpumem_event_elapsed_ms(_ctypes.byref(ms), _instance("elapsed_ms()", "start", start, Event)._h(),
                                       _instance("elapsed_ms()", "end", end, Event)._h()))
    return ms.value


# ---------------------------------------------------------------------------
# Host buffers (buffer protocol) and operands of copies
# ---------------------------------------------------------------------------


class _PyBuffer(_ctypes.Structure):
    _fields_ = [("buf", _ctypes.c_void_p), ("obj", _ctypes.c_void_p), ("len", _ctypes.c_ssize_t),
                ("itemsize", _ctypes.c_ssize_t), ("readonly", _ctypes.c_int), ("ndim", _ctypes.c_int),
                ("format", _ctypes.c_char_p), ("shape", _ctypes.c_void_p), ("strides", _ctypes.c_void_p),
                ("suboffsets", _ctypes.c_void_p), ("internal", _ctypes.c_void_p)]


_PyObject_GetBuffer = _ctypes.pythonapi.PyObject_GetBuffer
_PyObject_GetBuffer.argtypes = [_ctypes.py_object, _ctypes.POINTER(_PyBuffer), _ctypes.c_int]
_PyObject_GetBuffer.restype = _ctypes.c_int
_PyBuffer_Release = _ctypes.pythonapi.PyBuffer_Release
_PyBuffer_Release.argtypes = [_ctypes.POINTER(_PyBuffer)]
_PyBuffer_Release.restype = None
_PyBUF_WRITABLE = 0x0001


@_contextlib.contextmanager
def _host_buffer(obj, writable):
    """(address, nbytes) of a C-contiguous buffer-protocol object, held while in use."""
    view = _PyBuffer()
    try:
        _PyObject_GetBuffer(obj, _ctypes.byref(view), _PyBUF_WRITABLE if writable else 0)
    except BufferError as e:
        raise TypeError("%s: needs a C-contiguous%s buffer (%s)"
                        % (type(obj).__name__, " writable" if writable else "", e)) from None
    try:
        yield view.buf or 0, view.len
    finally:
        _PyBuffer_Release(_ctypes.byref(view))


def _typestr_itemsize(typestr):
    return int(typestr[2:])


def _operand(obj, writable, name="dst"):
    """A context giving (address, nbytes or None) for anything memcpy accepts."""
    if isinstance(obj, bool):
        raise TypeError("%s: a bool is not an address" % name)
    if isinstance(obj, int):
        return _contextlib.nullcontext((_entry.check(name, "the address", obj, _entry.ADDRESS), None))
    if isinstance(obj, _ctypes.c_void_p):
        return _contextlib.nullcontext((obj.value or 0, None))
    if isinstance(obj, (Allocation, Buffer, AddressRange)):
        return _contextlib.nullcontext((obj._live_ptr(), obj.size))
    if isinstance(obj, ArrayView):
        return _contextlib.nullcontext((obj.owner._live_ptr(), obj.nbytes))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        if cai.get("strides") is not None:
            raise TypeError("only C-contiguous __cuda_array_interface__ objects (strides None)")
        n = _math.prod(cai["shape"]) * _typestr_itemsize(cai["typestr"])
        return _contextlib.nullcontext((cai["data"][0], n))
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


def memcpy_batch_async(copies, stream=None):
    """Enqueue many copies with one call (gpumem_memcpy_batch_async).

    copies: a sequence of ``(dst, src)`` or ``(dst, src, n)``, each operand as memcpy takes it
    (n defaults to all of src).  Every entry is checked before anything is enqueued; a bad one
    raises GpumemError naming "entry i".  The copies run in no particular order among
    themselves, so their destinations must not overlap each other or another entry's source.
    Host objects must stay alive and unchanged until the stream is synchronised.
    """
    copies = list(copies)
    k = len(copies)
    with _contextlib.ExitStack() as stack:
        dsts = (_ctypes.c_void_p * max(k, 1))()
        srcs = (_ctypes.c_void_p * max(k, 1))()
        sizes = (_ctypes.c_size_t * max(k, 1))()
        for i, entry in enumerate(copies):
            if len(entry) not in (2, 3):
                raise ValueError("entry %d: give (dst, src) or (dst, src, n)" % i)
            d, dn = stack.enter_context(_operand(entry[0], True, "copies[%d] dst" % i))
            s, sn = stack.enter_context(_operand(entry[1], False, "copies[%d] src" % i))
            sizes[i] = _count(entry[2] if len(entry) == 3 else None, dn, sn, "memcpy_batch_async: copies[%d]" % i)
            dsts[i], srcs[i] = d, s
        _check(lib.gpumem_memcpy_batch_async(dsts, srcs, sizes, k, _stream_handle(stream)))


def _batch_ranges(ranges, with_device):
    """(ptrs, sizes, devices or None, count) as ctypes arrays from (obj[, device][, count]) tuples."""
    ranges = list(ranges)
    k = len(ranges)
    ptrs, sizes = (_ctypes.c_void_p * max(k, 1))(), (_ctypes.c_size_t * max(k, 1))()
    devices = (_ctypes.c_int32 * max(k, 1))() if with_device else None
    first_count = 2 if with_device else 1
    for i, entry in enumerate(ranges):
        if not isinstance(entry, (tuple, list)):
            entry = (entry,)
        if len(entry) not in (first_count, first_count + 1):
            raise ValueError("entry %d: give %s" % (i, "(obj, device) or (obj, device, count)" if with_device
                                                    else "obj, (obj,) or (obj, count)"))
        where = "ranges[%d]" % i
        ptr, count = _range(entry[0], entry[first_count] if len(entry) > first_count else None, where)
        ptrs[i], sizes[i] = ptr, count
        if with_device:
            devices[i] = _entry.check(where, "device", entry[1], _entry.I32)
    return ptrs, sizes, devices, k


def prefetch_batch_async(ranges, stream=None):
    """Prefetch many ranges of managed memory (gpumem_prefetch_batch_async): ``ranges`` is a
    sequence of ``(obj, device)`` or ``(obj, device, count)`` (count default: all of obj;
    device DEVICE_HOST for the host).  Every entry is checked before anything is enqueued."""
    ptrs, sizes, devices, k = _batch_ranges(ranges, True)
    _check(lib.gpumem_prefetch_batch_async(ptrs, sizes, k, devices, _stream_handle(stream)))


def discard_batch_async(ranges, stream=None):
    """Discard many ranges of managed memory (gpumem_discard_batch_async): their contents become
    undefined until written again; the memory stays valid.  ``ranges`` is a sequence of ``obj``
    or ``(obj, count)`` (count default: all of obj)."""
    ptrs, sizes, _, k = _batch_ranges(ranges, False)
    _check(lib.gpumem_discard_batch_async(ptrs, sizes, k, _stream_handle(stream)))


def memset(dst, value, n=None):
    """Set n bytes (default: all of dst) of dst to ``value`` (gpumem_memset)."""
    with _operand(dst, True) as (d, dn):
        _check(lib.gpumem_memset(d, value, _count(n, dn, None, "memset")))


def memset_async(dst, value, n=None, stream=None):
    """As memset, in stream order (gpumem_memset_async)."""
    with _operand(dst, True) as (d, dn):
        _check(lib.gpumem_memset_async(d, value, _count(n, dn, None, "memset_async"), _stream_handle(stream)))


# ---------------------------------------------------------------------------
# Zero-copy views
# ---------------------------------------------------------------------------


def _host_view(mem, size):
    """A writable memoryview of the first size bytes of host-accessible ``mem`` that keeps
    ``mem`` alive and counts as its export until released (close() waits for it)."""
    ptr, views = mem._export()
    try:
        if size == 0 or not ptr:
            return memoryview(bytearray(0))

        class _View(_ctypes.c_ubyte * size):
            pass
        v = _View.from_address(ptr)
        v._gpumem_owner = mem
        view = memoryview(v).cast("B")
        if views is not None:
            # Every memoryview and NumPy array over `view` holds v: it dies with the last.  At
            # interpreter exit the view may still be in use: the export is not released then.
            _weakref.finalize(v, views.release).atexit = False
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
    host = kind in (KIND_HOST_PINNED, KIND_HOST_REGISTERED)  # noqa: F405
    dev = get_device() if device is None or device < 0 else int(device)
    if b == "hip":
        return (_dlpack.kDLROCMHost, 0) if host else (_dlpack.kDLROCM, dev)
    if host:
        return (_dlpack.kDLCUDAHost, 0)
    if kind == KIND_MANAGED:  # noqa: F405
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
        self.nbytes = _math.prod(self.shape) * _typestr_itemsize(typestr)

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
        info = pointer_info(self._live_ptr())
        return info.kind_code, info.device

    def as_array(self, dtype="uint8", shape=None):
        """An ArrayView of ``dtype`` (a name such as "float32", or a typestr) and ``shape``
        (default: as many items as fit) over this memory, for DLPack and NumPy consumers."""
        self._live_ptr()
        ts = _typestr(dtype)
        return ArrayView(self, ts, _entry.shape("as_array", shape, self.size, _typestr_itemsize(ts)))

    def _live_ptr(self):
        if self.closed:
            raise GpumemError(ERROR_INVALID_POINTER, "%r is closed" % self)  # noqa: F405
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
        return np.frombuffer(mv, dtype=dt, count=_math.prod(shape)).reshape(shape)

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
            _weakref.finalize(view, views.release).atexit = False  # CuPy and Numba keep the view as the owner
        return view

    def to_bytes(self, n=None):
        """A copy of the first n bytes (default all) as bytes."""
        out = bytearray(self.size if n is None else n)
        memcpy(out, self._live_ptr(), len(out))
        return bytes(out)

    def memset(self, value, n=None):
        """Set n bytes (default: all) to ``value``."""
        _check(lib.gpumem_memset(self._live_ptr(), value, self.size if n is None else n))

    def copy_from(self, src, n=None):
        """Copy from ``src`` into this memory (see gpumem.memcpy)."""
        memcpy(self, src, n)

    def copy_to(self, dst, n=None):
        """Copy this memory into ``dst`` (see gpumem.memcpy)."""
        memcpy(dst, self, n)

    def info(self):
        """pointer_info() of this memory."""
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
        if self.kind_code in (KIND_HOST_PINNED, KIND_MANAGED) or backend() == "host":  # noqa: F405
            return True
        # Stream-ordered blocks of pinned and managed pools are host memory too.
        return (self.kind_code == KIND_STREAM_ORDERED and  # noqa: F405
                pointer_info(self.ptr).memory in (POOL_MEMORY_PINNED, POOL_MEMORY_MANAGED))  # noqa: F405

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
        """Prefetch this managed memory to ``device`` (see gpumem.prefetch)."""
        prefetch(self, device, count=count, stream=stream)

    def advise(self, advice, device=DEVICE_HOST, count=None):  # noqa: F405
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
    p = _ctypes.c_void_p()
    _check(lib.gpumem_malloc(_ctypes.byref(p), size))
    return Allocation(p.value, size, KIND_DEVICE, device=get_device())  # noqa: F405


def host_alloc(size, flags=0):
    """Page-locked host memory (gpumem_host_alloc; flags HOST_*)."""
    p = _ctypes.c_void_p()
    _check(lib.gpumem_host_alloc(_ctypes.byref(p), size, flags))
    return Allocation(p.value, size, KIND_HOST_PINNED, device=DEVICE_HOST)  # noqa: F405


def managed_alloc(size, flags=0):
    """Managed memory (gpumem_managed_alloc; flags 0, ATTACH_GLOBAL or ATTACH_HOST)."""
    p = _ctypes.c_void_p()
    _check(lib.gpumem_managed_alloc(_ctypes.byref(p), size, flags))
    return Allocation(p.value, size, KIND_MANAGED, device=get_device())  # noqa: F405


def malloc_async(size, stream=None, pool=None):
    """Stream-ordered memory from ``pool`` (default: the current device's current pool)."""
    p = _ctypes.c_void_p()
    if pool is None:
        _check(lib.gpumem_malloc_async(_ctypes.byref(p), size, _stream_handle(stream)))
    else:
        h = _instance("malloc_async()", "pool", pool, Pool)._h()
        _check(lib.gpumem_malloc_from_pool_async(_ctypes.byref(p), size, h, _stream_handle(stream)))
    return Allocation(p.value, size, KIND_STREAM_ORDERED, stream=stream, device=get_device())  # noqa: F405


# ---------------------------------------------------------------------------
# Pointer info, stats, tracing
# ---------------------------------------------------------------------------


@_dataclasses.dataclass(frozen=True)
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
    memory: int = -1  # POOL_MEMORY_*: where the bytes live (POOL_MEMORY_UNKNOWN: not gpumem's) (0.2)


def _addr(obj, where="ptr"):
    if isinstance(obj, _Memory):
        return obj._live_ptr()
    if isinstance(obj, int) and not isinstance(obj, bool):
        return _entry.check(where, "the address", obj, _entry.ADDRESS)
    raise TypeError("%s: expected an address (int) or a gpumem memory object, not %s" % (where, type(obj).__name__))


def export_dmabuf(ptr, size):
    """A new dma-buf file descriptor for [ptr, ptr + size) of device memory gpumem made
    (gpumem_mem_export_dmabuf): ptr and size are multiples of the host page size and the range
    lies in one allocation.  The caller closes the descriptor (os.close)."""
    fd = _ctypes.c_int32(-1)
    _check(lib.gpumem_mem_export_dmabuf(_ctypes.byref(fd), _addr(ptr), size, 0))
    return fd.value


def pointer_info(ptr):
    """What gpumem knows of an address (interior pointers too; kind "unknown" otherwise)."""
    s = init_struct(_lib.PointerInfo)
    _check(lib.gpumem_pointer_get_info(_addr(ptr), _ctypes.byref(s)))
    return PointerInfo(kind=KIND_NAMES[s.kind] if 0 <= s.kind < len(KIND_NAMES) else str(s.kind),
                       kind_code=s.kind, device=s.device, base=s.base or 0, alloc_size=s.alloc_size,
                       emulated=bool(s.emulated), flags=s.flags, pool=s.pool or 0,
                       device_pointer=s.device_pointer or 0, memory=s.memory)


@_dataclasses.dataclass(frozen=True)
class Stats:
    """Process-wide counters; each dict is keyed by kind name ("device", "stream_ordered", ...)."""
    current_bytes: dict
    peak_bytes: dict
    alloc_count: dict
    free_count: dict
    fallback_count: int

    @property
    def total_alloc_count(self):
        """Allocations of every kind."""
        return sum(self.alloc_count.values())

    @property
    def total_free_count(self):
        """Frees of every kind."""
        return sum(self.free_count.values())


def stats():
    """Process-wide allocation counters as a Stats (gpumem_get_stats)."""
    s = init_struct(_lib.Stats)
    _check(lib.gpumem_get_stats(_ctypes.byref(s)))

    def d(arr):
        return {KIND_NAMES[i]: int(arr[i]) for i in range(KIND_COUNT)}  # noqa: F405
    return Stats(d(s.current_bytes), d(s.peak_bytes), d(s.alloc_count), d(s.free_count),
                 int(s.fallback_count))


def reset_peak_stats():
    """Reset every peak counter to its current value (gpumem_reset_peak_stats)."""
    _check(lib.gpumem_reset_peak_stats())


@_dataclasses.dataclass(frozen=True)
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
    allocating thread and must not call gpumem.  An exception fn raises cannot cross the C
    library: it is kept, and raised by the gpumem call during which it happened once that call
    is done (or, for one raised outside a call of this package, by the next gpumem call)."""
    if fn is not None and not callable(fn):
        raise TypeError("set_trace_callback(): fn must be callable (it gets a gpumem.TraceRecord) or None, "
                        "not %s" % type(fn).__name__)
    if fn is None:
        _check(lib.gpumem_set_trace_callback(_ctypes.cast(None, _lib.TRACE_FN), None))
        _trace_keep[0] = None
        return

    def cb(ev, _user):
        try:
            e = ev.contents
            fn(TraceRecord("alloc" if e.op == TRACE_ALLOC else "free",  # noqa: F405
                           KIND_NAMES[e.kind] if 0 <= e.kind < len(KIND_NAMES) else str(e.kind),
                           e.ptr or 0, e.bytes, e.device, bool(e.emulated), e.stream or 0, e.pool or 0))
        except BaseException as exc:  # noqa: BLE001  (ctypes would print and drop it)
            _entry.keep(exc, "the trace callback %r" % (fn,))
    c = _lib.TRACE_FN(cb)
    _check(lib.gpumem_set_trace_callback(c, None))
    _trace_keep[0] = c


def kind_name(kind):
    """The name of a GPUMEM_KIND_* value as traces and snapshots write it (gpumem_kind_name)."""
    return lib.gpumem_kind_name(int(kind)).decode()


def snapshot():
    """Every live allocation and every segment of gpumem's own pools, now, as the dict of
    gpumem_snapshot_write_json's JSON (docs/semantics.md, "Snapshots"): keys "devices",
    "pools", "allocations" (sorted by address; "ptr" as "0x..." strings) and "segments"
    (each with its "free_blocks")."""
    import json
    import os
    import tempfile
    snap = _ctypes.c_void_p()
    _check(lib.gpumem_snapshot_take(_ctypes.byref(snap)))
    try:
        fd, path = tempfile.mkstemp(prefix="gpumem-snapshot-", suffix=".json")
        os.close(fd)
        try:
            _check(lib.gpumem_snapshot_write_json(snap, os.fsencode(path)))
            with open(path, "rb") as f:
                return json.loads(f.read().decode("utf-8"))
        finally:
            os.unlink(path)
    finally:
        _check(lib.gpumem_snapshot_release(snap))


# ---------------------------------------------------------------------------
# Page-locked and managed memory
# ---------------------------------------------------------------------------


def host_get_device_pointer(ptr):
    """The device address of pinned or registered host memory."""
    d = _ctypes.c_void_p()
    _check(lib.gpumem_host_get_device_pointer(_ctypes.byref(d), _addr(ptr)))
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
        self.ptr = _ctypes.addressof(_ctypes.c_char.from_buffer(mv))
        self.size = len(mv)
        _check(lib.gpumem_host_register(self.ptr, self.size, flags))
        self._own(_unregister, _generation[0], self.ptr, mv)

    def device_pointer(self):
        """The device address of the registered buffer."""
        return host_get_device_pointer(self.ptr)


def _range(obj, count, where="obj"):
    ptr = _addr(obj, where)
    if count is None:
        if not isinstance(obj, _Memory):
            raise ValueError("%s: count is required with a plain address" % where)
        count = obj.size
    return ptr, _entry.check(where, "count", count, _entry.SIZE)


def prefetch(obj, device, count=None, stream=None):
    """Prefetch managed memory (count bytes, default all) to ``device`` (DEVICE_HOST: the host)."""
    ptr, count = _range(obj, count)
    _check(lib.gpumem_prefetch_async(ptr, count, device, _stream_handle(stream)))


def advise(obj, advice, device=DEVICE_HOST, count=None):  # noqa: F405
    """Give advice (ADVISE_*) about managed memory for ``device`` (gpumem_advise)."""
    ptr, count = _range(obj, count)
    _check(lib.gpumem_advise(ptr, count, advice, device))


def _attr_buffer(attribute, slots):
    if attribute == RANGE_ACCESSED_BY:  # noqa: F405
        if slots is None:
            slots = device_count() + 1
        return (_ctypes.c_int32 * slots)()
    return _ctypes.c_int32()


def _attr_value(attribute, buf):
    if attribute == RANGE_ACCESSED_BY:  # noqa: F405
        return [v for v in buf if v != LOCATION_INVALID]  # noqa: F405
    return buf.value


def range_attribute(obj, attribute, count=None, slots=None):
    """One RANGE_* attribute: an int (READ_MOSTLY, PREFERRED_LOCATION, LAST_PREFETCH_LOCATION)
    or, for RANGE_ACCESSED_BY, the list of devices (``slots`` entries asked, default devices+1)."""
    ptr, count = _range(obj, count)
    buf = _attr_buffer(attribute, slots)
    _check(lib.gpumem_range_get_attribute(_ctypes.byref(buf), _ctypes.sizeof(buf), attribute, ptr, count))
    return _attr_value(attribute, buf)


def range_attributes(obj, attributes, count=None, slots=None):
    """Several attributes at once (gpumem_range_get_attributes): {attribute: value}."""
    ptr, count = _range(obj, count)
    attributes = [_entry.check("range_attributes()", "attributes[%d]" % i, a, _entry.I32)
                  for i, a in enumerate(attributes)]
    n = len(attributes)
    bufs = [_attr_buffer(a, slots) for a in attributes]
    data = (_ctypes.c_void_p * n)(*[_ctypes.addressof(b) for b in bufs])
    sizes = (_ctypes.c_size_t * n)(*[_ctypes.sizeof(b) for b in bufs])
    attrs = (_ctypes.c_int32 * n)(*attributes)
    _check(lib.gpumem_range_get_attributes(data, sizes, attrs, n, ptr, count))
    return {a: _attr_value(a, b) for a, b in zip(attributes, bufs)}


def stream_attach(stream, obj, length=0, flags=ATTACH_SINGLE):  # noqa: F405
    """Attach managed memory to a stream (gpumem_stream_attach; flags ATTACH_*)."""
    _check(lib.gpumem_stream_attach(_stream_handle(stream), _addr(obj), length, flags))


# ---------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------


@_generation_guard
def _pool_destroy(h):
    return lib.gpumem_pool_destroy(h)


def _access_descs(where, descs):
    """An AccessDesc array from (device, ACCESS_*) pairs, each checked as two int32_t."""
    descs = list(descs)
    arr = (_lib.AccessDesc * len(descs))()
    for i, entry in enumerate(descs):
        try:
            d, f = entry
        except (TypeError, ValueError):
            raise TypeError("%s: descs[%d] must be a (device, ACCESS_*) pair, not %r" % (where, i, entry)) from None
        arr[i] = _lib.AccessDesc(_entry.check(where, "descs[%d] device" % i, d, _entry.I32),
                                 _entry.check(where, "descs[%d] flags" % i, f, _entry.I32))
    return arr, len(descs)


def _pool_attr(attr, ctype, doc, name):
    def get(self):
        v = ctype()
        _check(lib.gpumem_pool_get_attribute(self._h(), attr, _ctypes.byref(v)))
        return bool(v.value) if ctype is _ctypes.c_int32 else v.value

    def set_(self, value):
        if ctype is _ctypes.c_int32:  # a yes/no attribute
            if value not in (True, False):  # 0 and 1 are equal to them
                raise ValueError("Pool: %s must be True or False, not %r" % (name, value))
            value = int(value)
        else:
            value = _entry.check("Pool", name, value, _entry.U64)
        v = ctype(value)
        _check(lib.gpumem_pool_set_attribute(self._h(), attr, _ctypes.byref(v)))
    return get, set_, None, doc


class Pool(_Resource):
    """A memory pool.  ``Pool()`` creates one (owned: destroyed on close);
    ``Pool.default(dev)`` and ``Pool.current(dev)`` wrap existing pools without owning them."""

    def __init__(self, device=None, max_size=0, handle_types=HANDLE_NONE,  # noqa: F405
                 implementation=POOL_AUTO, memory=POOL_MEMORY_DEVICE, numa_node=-1,  # noqa: F405
                 flags=0, _handle=None):
        """``memory``: POOL_MEMORY_DEVICE, _PINNED (page-locked host memory every device
        reaches) or _MANAGED; ``numa_node``: the host NUMA node of a pinned pool (-1 = any);
        ``flags``: POOL_RDMA for memory that GPUDirect RDMA and NCCL's buffer registration
        accept (NOT_SUPPORTED where the device cannot; ``device_info().rdma_memory``)."""
        if _handle is not None:
            self.handle, self.owned = _handle, False
            return
        props = init_struct(_lib.PoolProps, device=_dev(device), handle_types=handle_types,
                            max_size=max_size, implementation=implementation, memory=memory,
                            numa_node=numa_node, flags=flags)
        h = _lib.pool_t()
        _check(lib.gpumem_pool_create(_ctypes.byref(h), _ctypes.byref(props)))
        self.handle, self.owned = h.value, True
        self._own(_pool_destroy, _generation[0], self.handle)

    @property
    def closed(self):
        """True once an owned pool is destroyed (pools not owned never close)."""
        return self.owned and super().closed

    @classmethod
    def default(cls, device=None):
        """The device's default pool (not owned: close() leaves it alone)."""
        h = _lib.pool_t()
        _check(lib.gpumem_device_get_default_pool(_ctypes.byref(h), _dev(device)))
        return cls(_handle=h.value)

    @classmethod
    def default_for(cls, memory, location=None):
        """The process's default pool of ``memory`` (not owned): for a device (DEVICE,
        MANAGED; None = the current device) or a host NUMA node (PINNED; None = -1, any)."""
        if location is None:
            location = -1 if memory == POOL_MEMORY_PINNED else _dev(None)  # noqa: F405
        h = _lib.pool_t()
        _check(lib.gpumem_get_default_pool_for(_ctypes.byref(h), int(memory), int(location)))
        return cls(_handle=h.value)

    @classmethod
    def current(cls, device=None):
        """The device's current pool, used by malloc_async (not owned)."""
        h = _lib.pool_t()
        _check(lib.gpumem_device_get_pool(_ctypes.byref(h), _dev(device)))
        return cls(_handle=h.value)

    def make_current(self, device=None):
        """gpumem_device_set_pool: malloc_async (and the framework hooks) then use this pool."""
        _check(lib.gpumem_device_set_pool(_dev(device), self._h()))

    def malloc(self, size, stream=None):
        """Stream-ordered memory from this pool (see gpumem.malloc_async)."""
        return malloc_async(size, stream=stream, pool=self)

    def trim(self, min_bytes_to_keep=0):
        """Release unused memory the pool holds, keeping at least ``min_bytes_to_keep``."""
        _check(lib.gpumem_pool_trim_to(self._h(), min_bytes_to_keep))

    def trim_to(self, min_bytes_to_keep=0):
        """Same as trim (the C name)."""
        self.trim(min_bytes_to_keep)

    def set_access(self, descs):
        """descs: iterable of (device, ACCESS_*)."""
        arr, n = _access_descs("Pool.set_access()", descs)
        _check(lib.gpumem_pool_set_access(self._h(), arr, n))

    def get_access(self, device=None):
        """The ACCESS_* flags ``device`` has to this pool's memory."""
        f = _ctypes.c_int32()
        _check(lib.gpumem_pool_get_access(_ctypes.byref(f), self._h(), _dev(device)))
        return f.value

    def export_handle(self, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        """A new file descriptor for the pool (caller closes it; send it with ipc_send_fd)."""
        fd = _ctypes.c_int32()
        _check(lib.gpumem_pool_export_to_shareable_handle(_ctypes.byref(fd), self._h(), handle_type))
        return fd.value

    @classmethod
    def import_handle(cls, fd, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        """A pool from a file descriptor another process exported (owned: destroyed on close)."""
        h = _lib.pool_t()
        _check(lib.gpumem_pool_import_from_shareable_handle(_ctypes.byref(h), fd, handle_type))
        p = cls(_handle=h.value)
        p.owned = True
        p._own(_pool_destroy, _generation[0], p.handle)
        return p

    @staticmethod
    def export_pointer(alloc):
        """64 bytes describing a pointer of a shareable pool for another process."""
        d = _lib.PoolPtrExportData()
        _check(lib.gpumem_pool_export_pointer(_ctypes.byref(d), _addr(alloc)))
        return bytes(d.reserved)

    def import_pointer(self, data, size):
        """An Allocation for the 64 bytes another process got from export_pointer."""
        data = b"" if isinstance(data, int) else bytes(data)  # bytes(64) would be 64 zeros
        if len(data) != _ctypes.sizeof(_lib.PoolPtrExportData):
            raise ValueError("Pool.import_pointer(): data must be the %d bytes Pool.export_pointer gave"
                             % _ctypes.sizeof(_lib.PoolPtrExportData))
        d = _lib.PoolPtrExportData()
        _ctypes.memmove(d.reserved, data, len(data))
        p = _ctypes.c_void_p()
        _check(lib.gpumem_pool_import_pointer(_ctypes.byref(p), self._h(), _ctypes.byref(d)))
        return Allocation(p.value, size, KIND_STREAM_ORDERED)  # noqa: F405

    reuse_follow_event_dependencies = property(*_pool_attr(POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, _ctypes.c_int32, 'Reuse memory freed on another stream once an event says it is done (bool).', "reuse_follow_event_dependencies"))  # noqa: F405,E501
    reuse_allow_opportunistic = property(*_pool_attr(POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, _ctypes.c_int32, 'Reuse memory whose free has completed on any stream (bool).', "reuse_allow_opportunistic"))  # noqa: F405,E501
    reuse_allow_internal_dependencies = property(*_pool_attr(POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, _ctypes.c_int32, 'Reuse memory by inserting waits between streams (bool).', "reuse_allow_internal_dependencies"))  # noqa: F405,E501
    release_threshold = property(*_pool_attr(POOL_ATTR_RELEASE_THRESHOLD, _ctypes.c_uint64, 'Bytes the pool keeps at a synchronize instead of releasing (default 0: releases all).', "release_threshold"))  # noqa: F405,E501
    reserved_mem_current = property(_pool_attr(POOL_ATTR_RESERVED_MEM_CURRENT, _ctypes.c_uint64, 'Bytes the pool holds from the driver now.', "reserved_mem_current")[0], doc='Bytes the pool holds from the driver now.')  # noqa: F405,E501
    #: set to 0 to reset it to the current value
    reserved_mem_high = property(*_pool_attr(POOL_ATTR_RESERVED_MEM_HIGH, _ctypes.c_uint64, 'Peak of reserved_mem_current; set 0 to reset it.', "reserved_mem_high"))  # noqa: F405,E501
    used_mem_current = property(_pool_attr(POOL_ATTR_USED_MEM_CURRENT, _ctypes.c_uint64, 'Bytes handed out to callers now.', "used_mem_current")[0], doc='Bytes handed out to callers now.')  # noqa: F405,E501
    #: set to 0 to reset it to the current value
    used_mem_high = property(*_pool_attr(POOL_ATTR_USED_MEM_HIGH, _ctypes.c_uint64, 'Peak of used_mem_current; set 0 to reset it.', "used_mem_high"))  # noqa: F405,E501

    def __eq__(self, other):
        return isinstance(other, Pool) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return "<gpumem.Pool 0x%x%s>" % (self.handle or 0, "" if self.owned else " (not owned)")


def get_default_pool_for(memory, location=None):
    """gpumem_get_default_pool_for: see Pool.default_for."""
    return Pool.default_for(memory, location)


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
        _check(lib.gpumem_buffer_create(_ctypes.byref(h), size, max_size, _dev(device)))
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
        p = _ctypes.c_void_p()
        _check(lib.gpumem_buffer_data(self._h(), _ctypes.byref(p)))
        return p.value or 0

    @property
    def ptr(self):
        """Same as data."""
        return self.data

    @property
    def size(self):
        """The buffer's current size in bytes."""
        n = _ctypes.c_size_t()
        _check(lib.gpumem_buffer_size(self._h(), _ctypes.byref(n)))
        return n.value

    def _live_ptr(self):
        return self.data  # a closed buffer's handle is dead: INVALID_HANDLE

    def __repr__(self):
        return "<gpumem.Buffer 0x%x%s>" % (self.handle or 0, " closed" if self.closed else "")


# ---------------------------------------------------------------------------
# Virtual memory management
# ---------------------------------------------------------------------------


def mem_granularity(device=None, recommended=False, handle_types=HANDLE_NONE):  # noqa: F405
    """VMM allocation granularity in bytes (minimum, or recommended=True) for ``device``."""
    props = init_struct(_lib.AllocProps, device=_dev(device), handle_types=handle_types)
    g = _ctypes.c_size_t()
    _check(lib.gpumem_mem_get_granularity(_ctypes.byref(g), _ctypes.byref(props),
                                          GRANULARITY_RECOMMENDED if recommended else GRANULARITY_MINIMUM))  # noqa: F405,E501
    return g.value


@_generation_guard
def _mem_release(h):
    return lib.gpumem_mem_release(h)


class PhysicalMemory(_Resource):
    """Physical memory (gpumem_mem_create); released on close (mapped memory lives until unmapped)."""

    def __init__(self, size, device=None, handle_types=HANDLE_NONE, flags=0, _handle=None):  # noqa: F405
        """``flags``: POOL_RDMA for memory that GPUDirect RDMA and NCCL register."""
        if _handle is None:
            props = init_struct(_lib.AllocProps, device=_dev(device), handle_types=handle_types, flags=flags)
            h = _lib.mem_handle_t()
            _check(lib.gpumem_mem_create(_ctypes.byref(h), size, _ctypes.byref(props)))
            _handle = h.value
        self.handle, self.size = _handle, size
        self._own(_mem_release, _generation[0], self.handle)

    def export_handle(self, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        """A new file descriptor for this memory (the caller closes it)."""
        fd = _ctypes.c_int32()
        _check(lib.gpumem_mem_export_to_shareable_handle(_ctypes.byref(fd), self._h(), handle_type))
        return fd.value

    @classmethod
    def import_handle(cls, fd, size, handle_type=HANDLE_POSIX_FD):  # noqa: F405
        """Physical memory from a file descriptor another process exported."""
        h = _lib.mem_handle_t()
        _check(lib.gpumem_mem_import_from_shareable_handle(_ctypes.byref(h), fd, handle_type))
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
        p = _ctypes.c_void_p()
        _check(lib.gpumem_mem_address_reserve(_ctypes.byref(p), size, alignment, hint))
        self.ptr, self.size = p.value or 0, size
        self._mappings = {}
        self._own(_address_free, _generation[0], self.ptr, size, self._mappings)

    def map(self, mem, offset=0, access=ACCESS_READWRITE, device=None):  # noqa: F405
        """Map all of ``mem`` at ptr+offset and (unless access is None) grant ``device`` access."""
        _check(lib.gpumem_mem_map(self._live_ptr() + offset, mem.size, 0, mem._h()))
        self._mappings[offset] = mem.size
        if access is not None:
            self.set_access(offset, mem.size, [(_dev(device), access)])

    def unmap(self, offset=0, size=None):
        """Unmap what was mapped at ``offset`` (``size`` bytes; default: that mapping)."""
        size = self._mappings.get(offset) if size is None else size
        if size is None:
            raise GpumemError(ERROR_INVALID_VALUE, "nothing mapped at offset %d" % offset)  # noqa: F405
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
        f = _ctypes.c_uint64()
        _check(lib.gpumem_mem_get_access(_ctypes.byref(f), _dev(device), self._live_ptr() + offset))
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
    """Receive a file descriptor sent with ipc_send_fd over a connected AF_UNIX socket."""
    fd = _ctypes.c_int32()
    _check(lib.gpumem_ipc_recv_fd(sock if isinstance(sock, int) else sock.fileno(), _ctypes.byref(fd)))
    return fd.value


# ---------------------------------------------------------------------------
# Frameworks
# ---------------------------------------------------------------------------


def torch_allocator_path():
    """Path of the loaded libgpumem.so, for torch.cuda.memory.CUDAPluggableAllocator(path,
    "gpumem_pluggable_malloc_or_throw", "gpumem_pluggable_free")."""
    return LIBRARY_PATH


def use_torch_allocator():
    """Make gpumem PyTorch's CUDA allocator (call before the first CUDA allocation).

    The hook is ``gpumem_pluggable_malloc_or_throw``: PyTorch's CUDAPluggableAllocator does not
    check the pointer it gets, so a failure must throw, not return NULL.  PyTorch raises it as a
    ``RuntimeError`` whose text begins "CUDA out of memory." and ends with gpumem's message and
    its verdict; :func:`last_oom_report` in the ``except`` block gives the whole report."""
    import torch
    alloc = torch.cuda.memory.CUDAPluggableAllocator(torch_allocator_path(), "gpumem_pluggable_malloc_or_throw",
                                                     "gpumem_pluggable_free")
    torch.cuda.memory.change_current_allocator(alloc)
    return alloc


def _torch_device_index(device):
    """A CUDA device ordinal from an int, "cuda", "cuda:N" or a torch.device; None stays None
    (torch's current device, read once torch is imported)."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise TypeError("device must be a CUDA device ordinal, \"cuda:N\" or a torch.device, not a bool")
    if isinstance(device, int):
        index = device
    else:
        if isinstance(device, str):
            kind, _, rest = device.partition(":")
            try:
                index = int(rest) if rest else None
            except ValueError:
                raise ValueError("device %r is not \"cuda\" or \"cuda:N\"" % (device,)) from None
        elif hasattr(device, "type") and hasattr(device, "index"):  # torch.device
            kind, index = device.type, device.index
        else:
            raise TypeError("device must be a CUDA device ordinal, \"cuda:N\" or a torch.device, not %s"
                            % type(device).__name__)
        if kind != "cuda":
            raise ValueError("device %r is not a CUDA device: a MemPool serves CUDA memory" % (device,))
        if index is None:
            return None
    if index < 0:
        raise ValueError("device %d is not a device ordinal (0 or more)" % index)
    return index


def torch_mem_pool(pool=None, device=None):
    """A ``torch.cuda.MemPool`` whose segments come from a gpumem pool.

    PyTorch's caching allocator then sub-allocates those segments, so its speed, statistics
    (``torch.cuda.memory_stats``), snapshots and the rest stay; gpumem only supplies the
    segments (through ``gpumem_pluggable_malloc`` and ``gpumem_pluggable_free``).  Use it with
    ``with torch.cuda.use_mem_pool(mp): ...``.  With an RDMA-capable pool
    (``Pool(flags=POOL_RDMA)``) the segments are memory NCCL's buffer registration accepts:
    ``ProcessGroupNCCL.register_mem_pool(mp)`` (the backend object of the process group).

    ``pool``: a :class:`Pool`, or None for ``device``'s current gpumem pool.  The pluggable
    allocator serves a device's current pool, so a ``pool`` that is not current becomes the
    device's current pool (``pool.make_current(device)``): ``malloc_async`` and the process-wide
    hook (``use_torch_allocator``) then use it too, and a later ``make_current`` of another pool
    changes where the MemPool's next segments come from.
    ``device``: a CUDA ordinal, ``"cuda:N"`` or a ``torch.device``; None is torch's current
    device.  The returned MemPool keeps ``pool`` alive."""
    if pool is not None:
        if not isinstance(pool, Pool):
            raise TypeError("pool must be a gpumem.Pool or None, not %s" % type(pool).__name__)
        pool._h()  # a destroyed pool or one from before finalize() raises here
    index = _torch_device_index(device)
    try:
        import torch
    except ImportError as e:
        raise ImportError("gpumem.torch_mem_pool needs PyTorch 2.x (import torch failed: %s)" % e) from e
    memory = getattr(torch.cuda, "memory", None)
    if memory is None or not hasattr(memory, "MemPool") or not hasattr(memory, "CUDAPluggableAllocator"):
        raise RuntimeError("this PyTorch has no torch.cuda.memory.MemPool with custom allocators (PyTorch 2.5 or "
                           "later has it); use gpumem.use_torch_allocator() instead")
    if index is None:
        index = torch.cuda.current_device()
    if pool is not None and Pool.current(index).handle != pool.handle:
        pool.make_current(index)
    allocator = memory.CUDAPluggableAllocator(torch_allocator_path(), "gpumem_pluggable_malloc",
                                              "gpumem_pluggable_free")
    with torch.cuda.device(index):
        mp = memory.MemPool(allocator.allocator())
    try:
        # The MemPool holds the C allocator; the Python objects go with it.
        mp._gpumem_pool, mp._gpumem_allocator = pool, allocator
    except AttributeError:  # a MemPool without a __dict__: the module keeps them instead
        _torch_mem_pool_refs.append((pool, allocator))
    return mp


_torch_mem_pool_refs = []  # (pool, allocator) of MemPools that cannot hold attributes


_cupy_cuda = []  # [cupy.cuda], imported on the first allocation


def _cupy_module():
    if not _cupy_cuda:
        import cupy
        _cupy_cuda.append(cupy.cuda)
    return _cupy_cuda[0]


def _cupy_c_malloc(cuda, native):
    """CuPy's CFunctionAllocator over gpumem_hook_malloc/free with ``native`` as the stream."""
    addr = _ctypes.cast
    return cuda.memory.CFunctionAllocator(
        int(native), addr(lib.gpumem_hook_malloc, _ctypes.c_void_p).value,
        addr(lib.gpumem_hook_free, _ctypes.c_void_p).value, lib).malloc


def _cupy_checked(mp, size):
    # CuPy's CFunctionAllocator does not look at what malloc returned: a NULL
    # would become an array at address 0.
    if mp.ptr == 0 and size:
        raise GpumemError(ERROR_OUT_OF_MEMORY)  # noqa: F405  (message: the library's last error)
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
    raise GpumemError(ERROR_OUT_OF_MEMORY)  # noqa: F405  (message: the library's last error)


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


from ._summary import memory_summary, empty_cache  # noqa: E402  (they use the names above)

# Every public function and method checks its integer arguments before any C call, and raises
# what a trace callback raised (gpumem/_entry.py).
_entry.wrap(globals(), __all__)
from .rows import *  # noqa: E402,F401,F403  0.5's streams, events, rows and boxes (gpumem/rows.py adds them to __all__)
