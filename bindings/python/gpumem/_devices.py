"""The library and its devices: version, init and finalize, the active backend, the calling
thread's device, peer access, the vendor-runtime workarounds in force and each device's
memory and capabilities (device_info).

SPDX-License-Identifier: MIT
"""
import ctypes
import dataclasses

from . import _lib
from ._errors import _check
from ._lib import init_struct, lib
from ._resources import _generation


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
    """Number of devices of the active backend (the host backend has one)."""
    n = ctypes.c_int32()
    _check(lib.gpumem_device_count(ctypes.byref(n)))
    return n.value


def set_device(device):
    """Make ``device`` the calling thread's current device (gpumem_set_device)."""
    _check(lib.gpumem_set_device(device))


def get_device():
    """The calling thread's current device."""
    d = ctypes.c_int32()
    _check(lib.gpumem_get_device(ctypes.byref(d)))
    return d.value


def can_access_peer(device, peer):
    """Whether ``device`` can be given access to ``peer``'s plain device memory
    (gpumem_device_can_access_peer).  False for a device and itself, on the host
    backend, and where the runtime has no peer access."""
    c = ctypes.c_int32()
    _check(lib.gpumem_device_can_access_peer(ctypes.byref(c), int(device), int(peer)))
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
    count = ctypes.c_size_t()
    _check(lib.gpumem_workarounds_get(None, None, 0, ctypes.byref(count)))
    n = count.value
    names = (ctypes.c_char_p * max(n, 1))()
    descriptions = (ctypes.c_char_p * max(n, 1))()
    _check(lib.gpumem_workarounds_get(names, descriptions, n, ctypes.byref(count)))
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
    f, t = ctypes.c_size_t(), ctypes.c_size_t()
    _check(lib.gpumem_mem_get_info(ctypes.byref(f), ctypes.byref(t)))
    return f.value, t.value


def device_synchronize():
    """Wait for all work on the current device (gpumem_device_synchronize)."""
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
    batch_memops: int = 0  # support level of the batched copies, prefetches and discards (0.2)
    pinned_pools: int = 0   # support level of pools of pinned host memory (0.2)
    managed_pools: int = 0  # support level of pools of managed memory (0.2)
    rdma_memory: int = 0    # support level of POOL_RDMA memory, for GPUDirect RDMA and NCCL (0.4)
    dmabuf: int = 0  # support level of export_dmabuf (0.4)
    fabric_handles: int = 0  # support level of HANDLE_FABRIC, as the driver claims it (0.4)
    pci_bus_id: str = ""  # "0000:1b:00.0"; "" on the host backend and where the runtime cannot say (0.5)
    uuid: bytes = bytes(16)  # the runtime's 16 bytes; the machine's id on the host backend (0.5)
    numa_node: int = -1  # the NUMA node nearest the device, -1 where unknown (0.5)


def device_info(device=None):
    """Capabilities of a device (support levels are SUPPORT_NONE/EMULATED/NATIVE/BROKEN)."""
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
        arch_name=s.arch_name.decode(errors="replace"), pool_ipc_handle_types=s.pool_ipc_handle_types,
        batch_memops=s.batch_memops,
        pinned_pools=s.pinned_pools, managed_pools=s.managed_pools, rdma_memory=s.rdma_memory,
        dmabuf=s.dmabuf, fabric_handles=s.fabric_handles,
        pci_bus_id=s.pci_bus_id.decode(errors="replace"),
        uuid=ctypes.string_at(ctypes.addressof(s) + _lib.DeviceInfo.uuid.offset, 16), numa_node=s.numa_node)
