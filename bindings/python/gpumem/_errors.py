"""Errors of the package: GpumemError for a failed call of the library, its subclass
OutOfMemoryError with the library's report of what would have fit (gpumem_last_oom_report),
and _check, through which every status the C API returns goes.

SPDX-License-Identifier: MIT
"""
import collections
import ctypes

from . import _lib
from ._lib import ERROR_OUT_OF_MEMORY, init_struct, lib


class GpumemError(Exception):
    """A gpumem call failed.  ``status`` is the GPUMEM_* code, ``status_name`` its
    name, ``message`` the library's gpumem_last_error_message().  An OUT_OF_MEMORY
    from the library is an :class:`OutOfMemoryError`."""

    def __new__(cls, status=0, message=None, *args, **kwargs):
        # Every raise site says GpumemError(status): the library's OUT_OF_MEMORY
        # becomes the subclass here, once, with the report read on this thread.
        if cls is GpumemError and int(status) == ERROR_OUT_OF_MEMORY and message is None:
            cls = OutOfMemoryError
        return super().__new__(cls)

    def __init__(self, status, message=None):
        self.status = int(status)
        self.status_name = lib.gpumem_status_string(self.status).decode()
        if message is None:
            message = lib.gpumem_last_error_message().decode(errors="replace")
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message) if message else self.status_name)


OomRemedy = collections.namedtuple("OomRemedy", "bytes fits")
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
    _check(lib.gpumem_last_oom_report(ctypes.byref(r)))
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

    def __init__(self, status=ERROR_OUT_OF_MEMORY, message=None):
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
