"""PyTorch: gpumem as PyTorch's CUDA allocator (use_torch_allocator), or as where a
torch.cuda.MemPool gets its segments (torch_mem_pool), through CUDAPluggableAllocator and the
library's gpumem_pluggable_* hooks.  torch is imported only by the calls that need it.

SPDX-License-Identifier: MIT
"""
from ._lib import LIBRARY_PATH
from ._pools import Pool


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
