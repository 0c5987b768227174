"""Batched operations: many copies, prefetches or discards enqueued with one call
(gpumem_memcpy_batch_async, gpumem_prefetch_batch_async, gpumem_discard_batch_async), each
entry checked before any is enqueued.

SPDX-License-Identifier: MIT
"""
import contextlib
import ctypes

from . import _entry
from ._copies import _count, _operand
from ._errors import _check
from ._lib import lib
from ._streams import _stream_handle
from ._views import _range


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
    with contextlib.ExitStack() as stack:
        dsts = (ctypes.c_void_p * max(k, 1))()
        srcs = (ctypes.c_void_p * max(k, 1))()
        sizes = (ctypes.c_size_t * max(k, 1))()
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
    ptrs, sizes = (ctypes.c_void_p * max(k, 1))(), (ctypes.c_size_t * max(k, 1))()
    devices = (ctypes.c_int32 * max(k, 1))() if with_device else None
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
