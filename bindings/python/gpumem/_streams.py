"""Streams and events (gpumem_stream_*, gpumem_event_*), and the ``stream`` argument of every
stream-ordered call: a Stream, None for the default stream, or a raw gpumem_stream_t.

SPDX-License-Identifier: MIT
"""
import ctypes

from . import _entry, _lib
from ._errors import _check
from ._lib import ERROR_BUSY, lib
from ._resources import _Resource, _generation, _generation_guard


def _stream_handle(stream):
    if stream is None:
        return None
    if isinstance(stream, Stream):
        return stream._h()
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _entry.check("stream", "a raw gpumem_stream_t", stream, _entry.ADDRESS)
    raise TypeError("stream must be a gpumem.Stream, None (default stream) or a raw handle, not %s"
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
        return lib.gpumem_stream_native(self._h()) or 0

    def synchronize(self):
        """Wait until all work on this stream is done."""
        _check(lib.gpumem_stream_synchronize(self._h()))

    def query(self):
        """True when idle, False when work is pending."""
        st = lib.gpumem_stream_query(self._h())
        if st == ERROR_BUSY:
            return False
        _check(st)
        return True

    def wait_event(self, event):
        """Make later work on this stream wait for ``event`` (gpumem_stream_wait_event)."""
        h = self._h()
        event = _entry.instance("Stream.wait_event()", "event", event, Event)
        _check(lib.gpumem_stream_wait_event(h, event._h()))

    def record(self, event=None):
        """Record an event (a new one when None) on this stream; returns it."""
        event = Event() if event is None else _entry.instance("Stream.record()", "event", event, Event)
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
        _check(lib.gpumem_event_create(ctypes.byref(h)))
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
        if st == ERROR_BUSY:
            return False
        _check(st)
        return True

    def elapsed_ms(self, end):
        """Milliseconds from this event to ``end`` (both recorded and completed)."""
        return elapsed_ms(self, end)


def elapsed_ms(start, end):
    """Milliseconds between two recorded, completed events (gpumem_event_elapsed_ms)."""
    ms = ctypes.c_float()
    _check(lib.gpumem_event_elapsed_ms(ctypes.byref(ms), _entry.instance("elapsed_ms()", "start", start, Event)._h(),
                                       _entry.instance("elapsed_ms()", "end", end, Event)._h()))
    return ms.value
