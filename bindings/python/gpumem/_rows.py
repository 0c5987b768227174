"""Streams and events as programs create them, and rows and boxes (gpumem 0.5).

- ``create_stream(flags, priority)``, ``stream_flags``, ``stream_priority``, ``stream_device``,
  ``stream_priority_range``: streams with ``STREAM_NON_BLOCKING`` and priorities, as
  cudaStreamCreateWithPriority makes them (lower numbers are more urgent).
- ``create_event(flags)`` with ``EVENT_BLOCKING_SYNC``, ``EVENT_DISABLE_TIMING``,
  ``EVENT_INTERPROCESS``; ``ipc_event_handle(event)`` (64 bytes) and ``open_ipc_event(handle)``
  share an event with another process.
- ``launch_host_func(fn, stream, user)``: ``fn(user)`` runs once the stream's earlier work is
  done, and later work waits for it.  ``fn`` must not call gpumem.
- ``malloc_pitch(width, height)``, ``memcpy_2d``, ``memset_2d``, ``memset_d16``, ``memset_d32``
  (each with ``_async``), ``memcpy_3d``/``memcpy_3d_async``.
- ``device_support(device)``: the support levels of all of these on a device.

Operands are what ``gpumem.memcpy`` takes (an address, a gpumem object, a buffer-protocol
object, an object with ``__cuda_array_interface__``); where the size of an operand is known,
the rows must fit it.

SPDX-License-Identifier: MIT
"""
import ctypes as _ctypes
import threading as _threading

from . import _entry, _lib
from ._copies import _operand
from ._devices import _dev, get_device
from ._errors import _check
from ._lib import lib
from ._memory import Allocation
from ._resources import _generation
from ._streams import Event, Stream, _event_destroy, _stream_handle





# ---------------------------------------------------------------------------
# Streams and events
# ---------------------------------------------------------------------------


def create_stream(flags=_lib.STREAM_DEFAULT, priority=0):
    """A new gpumem.Stream on the current device with ``flags`` (STREAM_DEFAULT or
    STREAM_NON_BLOCKING) and ``priority`` (clamped to stream_priority_range())."""
    h = _lib.stream_t()
    _check(lib.gpumem_stream_create_with_flags(_ctypes.byref(h), flags, priority))
    return Stream(_handle=h.value)


def stream_flags(stream=None):
    """The STREAM_* flags of ``stream`` (None: the default stream)."""
    f = _ctypes.c_uint32()
    _check(lib.gpumem_stream_get_flags(_ctypes.byref(f), _stream_handle(stream)))
    return f.value


def stream_priority(stream=None):
    """The priority ``stream`` got (None: the default stream, 0)."""
    p = _ctypes.c_int32()
    _check(lib.gpumem_stream_get_priority(_ctypes.byref(p), _stream_handle(stream)))
    return p.value


def stream_device(stream=None):
    """The device of ``stream`` (None: the default stream, the current device)."""
    d = _ctypes.c_int32()
    _check(lib.gpumem_stream_get_device(_ctypes.byref(d), _stream_handle(stream)))
    return d.value


def stream_priority_range(device=None):
    """(least, greatest): the least urgent priority (0) and the most urgent one (negative;
    0 where the device has no priorities)."""
    least, greatest = _ctypes.c_int32(), _ctypes.c_int32()
    _check(lib.gpumem_device_get_stream_priority_range(_ctypes.byref(least), _ctypes.byref(greatest),
                                                       _dev(device)))
    return least.value, greatest.value


def _event_from(h):
    """A gpumem.Event owning the handle ``h``."""
    ev = Event.__new__(Event)
    ev.handle = h
    ev._own(_event_destroy, _generation[0], h)
    return ev


def create_event(flags=_lib.EVENT_DEFAULT):
    """A new gpumem.Event with EVENT_* ``flags`` (EVENT_INTERPROCESS needs EVENT_DISABLE_TIMING)."""
    h = _lib.event_t()
    _check(lib.gpumem_event_create_with_flags(_ctypes.byref(h), flags))
    return _event_from(h.value)


def ipc_event_handle(event):
    """The 64 bytes another process opens ``event`` with (open_ipc_event); the event must be
    made with EVENT_INTERPROCESS | EVENT_DISABLE_TIMING and stay alive while others use it."""
    h = _lib.IpcEventHandle()
    _check(lib.gpumem_ipc_get_event_handle(_ctypes.byref(h), _entry.instance("ipc_event_handle()", "event", event,
                                                                          Event)._h()))
    return bytes(_ctypes.string_at(_ctypes.byref(h), 64))


def open_ipc_event(data):
    """The gpumem.Event another process shared (the 64 bytes of ipc_event_handle)."""
    data = bytes(data)
    if len(data) != 64:
        raise ValueError("open_ipc_event(): an event handle is 64 bytes, not %d" % len(data))
    h = _lib.IpcEventHandle.from_buffer_copy(data)
    e = _lib.event_t()
    _check(lib.gpumem_ipc_open_event_handle(_ctypes.byref(e), _ctypes.byref(h)))
    return _event_from(e.value)


# Host functions: each C callback is kept until it ran once (or, with keep=True, for as long as
# the process lives: a captured graph runs it at every launch).
_host_calls = {}
_host_lock = _threading.Lock()
_host_next = [0]


def launch_host_func(fn, stream=None, user=None, keep=False):
    """Run ``fn(user)`` in ``stream``'s order (gpumem_launch_host_func): once the work enqueued
    before it is done, and before any work enqueued after it starts.  ``fn`` runs on a thread of
    the runtime and must not call gpumem; what it raises is raised by the next gpumem call.
    ``keep``: the stream is capturing a graph, which runs ``fn`` at each launch (the function
    is then kept for the life of the process)."""
    if not callable(fn):
        raise TypeError("launch_host_func(): fn must be callable, not %s" % type(fn).__name__)
    with _host_lock:
        _host_next[0] += 1
        key = _host_next[0]

    def trampoline(_arg):
        try:
            fn(user)
        except BaseException as e:  # noqa: BLE001  (raised by the next gpumem call)
            _entry.keep(e, "the host function %r" % (fn,))
        finally:
            if not keep:
                with _host_lock:
                    _host_calls.pop(key, None)

    c_fn = _lib.HOST_FN(trampoline)
    with _host_lock:
        _host_calls[key] = c_fn
    st = lib.gpumem_launch_host_func(_stream_handle(stream), c_fn, None)
    if st != _lib.SUCCESS:
        with _host_lock:
            _host_calls.pop(key, None)
        _check(st)


# ---------------------------------------------------------------------------
# Rows and boxes
# ---------------------------------------------------------------------------


def malloc_pitch(width, height):
    """(Allocation, pitch): device memory for ``height`` rows of ``width`` bytes, each row
    starting ``pitch`` bytes after the one before (gpumem_malloc_pitch)."""
    p = _ctypes.c_void_p()
    pitch = _ctypes.c_size_t()
    _check(lib.gpumem_malloc_pitch(_ctypes.byref(p), _ctypes.byref(pitch), width, height))
    return Allocation(p.value, pitch.value * height, _lib.KIND_DEVICE, device=get_device()), pitch.value


def _rows_fit(where, name, avail, pitch, width, height):
    """ValueError where `height` rows of `width` bytes, `pitch` apart, do not fit `avail` bytes."""
    if avail is not None and height and width and (height - 1) * pitch + width > avail:
        raise ValueError("%s: %d rows of %d bytes, %d apart, do not fit the %s (%d bytes)"
                         % (where, height, width, pitch, name, avail))


def _copy_2d(where, dst, dpitch, src, spitch, width, height, stream, is_async):
    with _operand(dst, True) as (d, dn), _operand(src, False, "src") as (s, sn):
        _rows_fit(where, "destination", dn, dpitch, width, height)
        _rows_fit(where, "source", sn, spitch, width, height)
        if is_async:
            _check(lib.gpumem_memcpy_2d_async(d, dpitch, s, spitch, width, height, _stream_handle(stream)))
        else:
            _check(lib.gpumem_memcpy_2d(d, dpitch, s, spitch, width, height))


def memcpy_2d(dst, dpitch, src, spitch, width, height):
    """Copy ``height`` rows of ``width`` bytes; rows of ``dst`` are ``dpitch`` bytes apart, those
    of ``src`` ``spitch`` (gpumem_memcpy_2d; any kinds of memory)."""
    _copy_2d("memcpy_2d()", dst, dpitch, src, spitch, width, height, None, False)


def memcpy_2d_async(dst, dpitch, src, spitch, width, height, stream=None):
    """As memcpy_2d, in stream order.  Host objects must stay alive until the stream is synchronised."""
    _copy_2d("memcpy_2d_async()", dst, dpitch, src, spitch, width, height, stream, True)


def _fill_2d(where, dst, pitch, value, width, height, stream, is_async):
    with _operand(dst, True) as (d, dn):
        _rows_fit(where, "destination", dn, pitch, width, height)
        if is_async:
            _check(lib.gpumem_memset_2d_async(d, pitch, value, width, height, _stream_handle(stream)))
        else:
            _check(lib.gpumem_memset_2d(d, pitch, value, width, height))


def memset_2d(dst, pitch, value, width, height):
    """Set ``height`` rows of ``width`` bytes, ``pitch`` apart, to the byte ``value`` (gpumem_memset_2d)."""
    _fill_2d("memset_2d()", dst, pitch, value, width, height, None, False)


def memset_2d_async(dst, pitch, value, width, height, stream=None):
    """As memset_2d, in stream order."""
    _fill_2d("memset_2d_async()", dst, pitch, value, width, height, stream, True)


def _fill_elements(where, size, dst, value, count, stream, is_async):
    with _operand(dst, True) as (d, dn):
        if count is None:
            if dn is None:
                raise ValueError("%s: count is required when dst is a plain address" % where)
            count = dn // size
        count = _entry.check(where, "count", count, _entry.SIZE)
        if dn is not None and count * size > dn:
            raise ValueError("%s: %d %d-byte elements do not fit the destination (%d bytes)" % (where, count, size, dn))
        name = "gpumem_memset_d%d%s" % (8 * size, "_async" if is_async else "")
        args = (d, value, count) + ((_stream_handle(stream),) if is_async else ())
        _check(getattr(lib, name)(*args))


def memset_d16(dst, value, count=None):
    """Set ``count`` 16-bit elements (default: all that fit) to ``value`` (at most 0xFFFF;
    dst aligned to 2 bytes)."""
    _fill_elements("memset_d16()", 2, dst, value, count, None, False)


def memset_d16_async(dst, value, count=None, stream=None):
    """As memset_d16, in stream order."""
    _fill_elements("memset_d16_async()", 2, dst, value, count, stream, True)


def memset_d32(dst, value, count=None):
    """Set ``count`` 32-bit elements (default: all that fit) to ``value`` (dst aligned to 4 bytes)."""
    _fill_elements("memset_d32()", 4, dst, value, count, None, False)


def memset_d32_async(dst, value, count=None, stream=None):
    """As memset_d32, in stream order."""
    _fill_elements("memset_d32_async()", 4, dst, value, count, stream, True)


def _pos(where, name, pos):
    try:
        x, y, z = pos
    except (TypeError, ValueError):
        raise TypeError("%s: %s must be (x, y, z): x in bytes, y in rows, z in slices" % (where, name)) from None
    return tuple(_entry.check(where, "%s[%d]" % (name, i), v, _entry.SIZE) for i, v in enumerate((x, y, z)))


def _copy_3d(where, dst, src, width, height, depth, dst_pitch, dst_height, src_pitch, src_height, dst_pos, src_pos,
             stream, is_async):
    dx, dy, dz = _pos(where, "dst_pos", dst_pos)
    sx, sy, sz = _pos(where, "src_pos", src_pos)
    with _operand(dst, True) as (d, dn), _operand(src, False, "src") as (s, sn):
        c = _lib.init_struct(_lib.Memcpy3D, src=s, src_pitch=src_pitch, src_height=src_height, src_x=sx, src_y=sy,
                             src_z=sz, dst=d, dst_pitch=dst_pitch, dst_height=dst_height, dst_x=dx, dst_y=dy,
                             dst_z=dz, width=width, height=height, depth=depth)
        for name, avail, pitch, rows, (x, y, z) in (("destination", dn, dst_pitch, dst_height, (dx, dy, dz)),
                                                     ("source", sn, src_pitch, src_height, (sx, sy, sz))):
            if avail is not None and width and height and depth:
                end = ((z + depth - 1) * rows + y + height - 1) * pitch + x + width
                if end > avail:
                    raise ValueError("%s: the box needs %d bytes of the %s, which has %d" % (where, end, name, avail))
        if is_async:
            _check(lib.gpumem_memcpy_3d_async(_ctypes.byref(c), _stream_handle(stream)))
        else:
            _check(lib.gpumem_memcpy_3d(_ctypes.byref(c)))


def memcpy_3d(dst, src, width, height, depth, dst_pitch, dst_height, src_pitch, src_height,
              dst_pos=(0, 0, 0), src_pos=(0, 0, 0)):
    """Copy a box of ``depth`` slices of ``height`` rows of ``width`` bytes (gpumem_memcpy_3d).
    Each side has rows ``*_pitch`` bytes apart and slices of ``*_height`` rows; the box starts
    at ``*_pos`` = (x in bytes, y in rows, z in slices)."""
    _copy_3d("memcpy_3d()", dst, src, width, height, depth, dst_pitch, dst_height, src_pitch, src_height, dst_pos,
             src_pos, None, False)


def memcpy_3d_async(dst, src, width, height, depth, dst_pitch, dst_height, src_pitch, src_height,
                    dst_pos=(0, 0, 0), src_pos=(0, 0, 0), stream=None):
    """As memcpy_3d, in stream order."""
    _copy_3d("memcpy_3d_async()", dst, src, width, height, depth, dst_pitch, dst_height, src_pitch, src_height,
             dst_pos, src_pos, stream, True)


def device_support(device=None):
    """The support levels (SUPPORT_*) of this module's calls on ``device``: a dict with
    ``rows`` (copies and fills of rows and boxes, pitched allocations), ``stream_priorities``,
    ``host_funcs`` and ``ipc_events``."""
    s = _lib.init_struct(_lib.DeviceInfo)
    _check(lib.gpumem_device_get_info(_dev(device), _ctypes.byref(s)))
    return {"rows": s.rows, "stream_priorities": s.stream_priorities, "host_funcs": s.host_funcs,
            "ipc_events": s.ipc_events}
