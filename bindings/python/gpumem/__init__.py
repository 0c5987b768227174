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
structs as ctypes.Structure in ``gpumem._lib``.

SPDX-License-Identifier: MIT
"""
# This file is the package's public namespace.  What it holds is defined in the package's
# modules, one per subject, as src/api is split:
#   _errors      GpumemError, OutOfMemoryError and the out-of-memory report
#   _resources   objects that own a handle or memory, released exactly once
#   _devices     version, init and finalize, the backend, devices and peer access
#   _streams     streams and events
#   _views       memory objects and their zero-copy views (DLPack, NumPy, buffer protocol, CUDA)
#   _copies      memcpy and memset
#   _batch       many copies, prefetches or discards in one call
#   _debug       pointer info, statistics, the trace callback, snapshots
#   _memory      allocations (device, pinned, managed), host registration, managed memory
#   _pools       stream-ordered memory and pools
#   _buffers     growable buffers
#   _vmm         virtual memory management
#   _ipc         descriptors for other processes and drivers
#   _torch       PyTorch's allocator and MemPools
#   _cupy        CuPy's allocator
#   _summary     memory_summary and empty_cache
#   _rows        streams and events with flags, priorities and IPC handles; host functions; rows and boxes
# Under them: _lib (libgpumem loaded; its prototypes, constants and structs), _entry (the
# argument guard), _exports and _dlpack (zero-copy exports).  viz is gpumem-viz, which runs on
# its own too.
import types as _types

from . import _entry
from ._lib import *  # noqa: F401,F403  constants
from ._lib import lib, LIBRARY_PATH, RUNTIME_VERSION, KIND_NAMES, init_struct  # noqa: F401  (gpumem.lib, ...)
from ._errors import GpumemError, OutOfMemoryError, OomRemedy, last_oom_report
from ._devices import (version, init, finalize, backend, device_count, set_device, get_device, can_access_peer,
                       enable_peer_access, disable_peer_access, workarounds, device_info, DeviceInfo, mem_get_info,
                       device_synchronize)
from ._streams import Stream, Event, elapsed_ms
from ._views import ArrayView, CudaArrayView
from ._copies import memcpy, memcpy_async, memset, memset_async
from ._batch import memcpy_batch_async, prefetch_batch_async, discard_batch_async
from ._debug import (pointer_info, PointerInfo, stats, Stats, reset_peak_stats, set_trace_callback, TraceRecord,
                     kind_name, snapshot)
from ._memory import (Allocation, malloc, host_alloc, managed_alloc, HostRegistration, host_get_device_pointer,
                      prefetch, advise, range_attribute, range_attributes, stream_attach)
from ._pools import malloc_async, Pool, get_default_pool_for
from ._buffers import Buffer
from ._vmm import PhysicalMemory, AddressRange, mem_granularity
from ._ipc import ipc_send_fd, ipc_recv_fd, export_dmabuf
from ._torch import torch_allocator_path, use_torch_allocator, torch_mem_pool
from ._cupy import cupy_allocator, cupy_c_allocator
from ._summary import memory_summary, empty_cache
from ._rows import (create_stream, stream_flags, stream_priority, stream_device,
                    stream_priority_range, create_event, ipc_event_handle, open_ipc_event,
                    launch_host_func, malloc_pitch, memcpy_2d, memcpy_2d_async, memset_2d,
                    memset_2d_async, memset_d16, memset_d16_async, memset_d32, memset_d32_async,
                    memcpy_3d, memcpy_3d_async, device_support)

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
    "create_stream", "stream_flags", "stream_priority", "stream_device", "stream_priority_range",
    "create_event", "ipc_event_handle", "open_ipc_event", "launch_host_func", "malloc_pitch", "memcpy_2d",
    "memcpy_2d_async", "memset_2d", "memset_2d_async", "memset_d16", "memset_d16_async", "memset_d32",
    "memset_d32_async", "memcpy_3d", "memcpy_3d_async", "device_support",
]


def __getattr__(name):
    """``gpumem.viz(path, out=None)``: a trace's or snapshot's HTML page (gpumem/viz.py; the
    module is callable).  Imported on first use, so that ``python -m gpumem.viz`` runs it
    fresh, and importing gpumem costs nothing for it."""
    if name == "viz":
        import importlib
        return importlib.import_module(__name__ + ".viz")   # also binds gpumem.viz
    raise AttributeError("module 'gpumem' has no attribute %r" % name)


# The public classes and functions are gpumem's, whichever module defines them: tracebacks,
# reprs, help() and pickles name them as users reach them (gpumem.OutOfMemoryError, gpumem.malloc).
for _name in __all__:
    if isinstance(globals().get(_name), (type, _types.FunctionType)):
        globals()[_name].__module__ = __name__
del _name

# Every public function and method checks its integer arguments before any C call, and raises
# what a trace callback raised (gpumem/_entry.py).
_entry.wrap(globals(), __all__)
