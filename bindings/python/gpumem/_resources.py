"""What owns a handle or memory of the library (streams, events, pools, allocations, buffers,
VMM objects, host registrations): released exactly once, by close(), a ``with`` block, the
garbage collector or gpumem.finalize(); and, for memory, not before the last zero-copy export
of it is gone (gpumem/_exports.py).

SPDX-License-Identifier: MIT
"""
import functools
import weakref

from . import _entry, _exports
from ._errors import GpumemError
from ._lib import ERROR_INVALID_HANDLE


# Handles and pointers die with gpumem_finalize(); finalisers of objects made
# before it must not free (their addresses may already belong to new memory).
_generation = [0]


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
        self._finalizer = weakref.finalize(self, _collected, views, release, *args)

    @property
    def closed(self):
        """True once released (by close(), a with block, the GC or gpumem.finalize())."""
        return self._finalizer is None or not self._finalizer.alive

    def _h(self):
        """The handle of a live object; GpumemError (INVALID_HANDLE) once closed."""
        if self.closed:
            raise GpumemError(ERROR_INVALID_HANDLE, "%r is closed: make a new one" % self)
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
        if views.defer(functools.partial(_release_later, repr(self), release, rargs)):
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
    if not views.defer(functools.partial(_quiet, release, *args)):
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
