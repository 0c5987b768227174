"""Stream-ordered memory and the pools it comes from: malloc_async, Pool (pools made here, and a
device's default and current pools, wrapped without owning them), pools and their pointers
shared between processes, and the pool attributes as properties.

SPDX-License-Identifier: MIT
"""
import ctypes

from . import _entry, _lib
from ._devices import _dev, get_device
from ._errors import _check
from ._lib import (HANDLE_NONE, HANDLE_POSIX_FD, KIND_STREAM_ORDERED, POOL_ATTR_RELEASE_THRESHOLD,
                   POOL_ATTR_RESERVED_MEM_CURRENT, POOL_ATTR_RESERVED_MEM_HIGH,
                   POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                   POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, POOL_ATTR_USED_MEM_CURRENT,
                   POOL_ATTR_USED_MEM_HIGH, POOL_AUTO, POOL_MEMORY_DEVICE, POOL_MEMORY_PINNED,
                   init_struct, lib)
from ._memory import Allocation
from ._resources import _Resource, _generation, _generation_guard
from ._streams import _stream_handle
from ._views import _addr


def malloc_async(size, stream=None, pool=None):
    """Stream-ordered memory from ``pool`` (default: the current device's current pool)."""
    p = ctypes.c_void_p()
    if pool is None:
        _check(lib.gpumem_malloc_async(ctypes.byref(p), size, _stream_handle(stream)))
    else:
        h = _entry.instance("malloc_async()", "pool", pool, Pool)._h()
        _check(lib.gpumem_malloc_from_pool_async(ctypes.byref(p), size, h, _stream_handle(stream)))
    return Allocation(p.value, size, KIND_STREAM_ORDERED, stream=stream, device=get_device())


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
        _check(lib.gpumem_pool_get_attribute(self._h(), attr, ctypes.byref(v)))
        return bool(v.value) if ctype is ctypes.c_int32 else v.value

    def set_(self, value):
        if ctype is ctypes.c_int32:  # a yes/no attribute
            if value not in (True, False):  # 0 and 1 are equal to them
                raise ValueError("Pool: %s must be True or False, not %r" % (name, value))
            value = int(value)
        else:
            value = _entry.check("Pool", name, value, _entry.U64)
        v = ctype(value)
        _check(lib.gpumem_pool_set_attribute(self._h(), attr, ctypes.byref(v)))
    return get, set_, None, doc


class Pool(_Resource):
    """A memory pool.  ``Pool()`` creates one (owned: destroyed on close);
    ``Pool.default(dev)`` and ``Pool.current(dev)`` wrap existing pools without owning them."""

    def __init__(self, device=None, max_size=0, handle_types=HANDLE_NONE,
                 implementation=POOL_AUTO, memory=POOL_MEMORY_DEVICE, numa_node=-1,
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
        _check(lib.gpumem_pool_create(ctypes.byref(h), ctypes.byref(props)))
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
        _check(lib.gpumem_device_get_default_pool(ctypes.byref(h), _dev(device)))
        return cls(_handle=h.value)

    @classmethod
    def default_for(cls, memory, location=None):
        """The process's default pool of ``memory`` (not owned): for a device (DEVICE,
        MANAGED; None = the current device) or a host NUMA node (PINNED; None = -1, any)."""
        if location is None:
            location = -1 if memory == POOL_MEMORY_PINNED else _dev(None)
        h = _lib.pool_t()
        _check(lib.gpumem_get_default_pool_for(ctypes.byref(h), int(memory), int(location)))
        return cls(_handle=h.value)

    @classmethod
    def current(cls, device=None):
        """The device's current pool, used by malloc_async (not owned)."""
        h = _lib.pool_t()
        _check(lib.gpumem_device_get_pool(ctypes.byref(h), _dev(device)))
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
        f = ctypes.c_int32()
        _check(lib.gpumem_pool_get_access(ctypes.byref(f), self._h(), _dev(device)))
        return f.value

    def export_handle(self, handle_type=HANDLE_POSIX_FD):
        """A new file descriptor for the pool (caller closes it; send it with ipc_send_fd)."""
        fd = ctypes.c_int32()
        _check(lib.gpumem_pool_export_to_shareable_handle(ctypes.byref(fd), self._h(), handle_type))
        return fd.value

    @classmethod
    def import_handle(cls, fd, handle_type=HANDLE_POSIX_FD):
        """A pool from a file descriptor another process exported (owned: destroyed on close)."""
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
        """An Allocation for the 64 bytes another process got from export_pointer."""
        data = b"" if isinstance(data, int) else bytes(data)  # bytes(64) would be 64 zeros
        if len(data) != ctypes.sizeof(_lib.PoolPtrExportData):
            raise ValueError("Pool.import_pointer(): data must be the %d bytes Pool.export_pointer gave"
                             % ctypes.sizeof(_lib.PoolPtrExportData))
        d = _lib.PoolPtrExportData()
        ctypes.memmove(d.reserved, data, len(data))
        p = ctypes.c_void_p()
        _check(lib.gpumem_pool_import_pointer(ctypes.byref(p), self._h(), ctypes.byref(d)))
        return Allocation(p.value, size, KIND_STREAM_ORDERED)

    reuse_follow_event_dependencies = property(*_pool_attr(POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, ctypes.c_int32, 'Reuse memory freed on another stream once an event says it is done (bool).', "reuse_follow_event_dependencies"))  # noqa: E501
    reuse_allow_opportunistic = property(*_pool_attr(POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, ctypes.c_int32, 'Reuse memory whose free has completed on any stream (bool).', "reuse_allow_opportunistic"))  # noqa: E501
    reuse_allow_internal_dependencies = property(*_pool_attr(POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, ctypes.c_int32, 'Reuse memory by inserting waits between streams (bool).', "reuse_allow_internal_dependencies"))  # noqa: E501
    release_threshold = property(*_pool_attr(POOL_ATTR_RELEASE_THRESHOLD, ctypes.c_uint64, 'Bytes the pool keeps at a synchronize instead of releasing (default 0: releases all).', "release_threshold"))  # noqa: E501
    reserved_mem_current = property(_pool_attr(POOL_ATTR_RESERVED_MEM_CURRENT, ctypes.c_uint64, 'Bytes the pool holds from the driver now.', "reserved_mem_current")[0], doc='Bytes the pool holds from the driver now.')  # noqa: E501
    #: set to 0 to reset it to the current value
    reserved_mem_high = property(*_pool_attr(POOL_ATTR_RESERVED_MEM_HIGH, ctypes.c_uint64, 'Peak of reserved_mem_current; set 0 to reset it.', "reserved_mem_high"))  # noqa: E501
    used_mem_current = property(_pool_attr(POOL_ATTR_USED_MEM_CURRENT, ctypes.c_uint64, 'Bytes handed out to callers now.', "used_mem_current")[0], doc='Bytes handed out to callers now.')  # noqa: E501
    #: set to 0 to reset it to the current value
    used_mem_high = property(*_pool_attr(POOL_ATTR_USED_MEM_HIGH, ctypes.c_uint64, 'Peak of used_mem_current; set 0 to reset it.', "used_mem_high"))  # noqa: E501

    def __eq__(self, other):
        return isinstance(other, Pool) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return "<gpumem.Pool 0x%x%s>" % (self.handle or 0, "" if self.owned else " (not owned)")


def get_default_pool_for(memory, location=None):
    """gpumem_get_default_pool_for: see Pool.default_for."""
    return Pool.default_for(memory, location)
