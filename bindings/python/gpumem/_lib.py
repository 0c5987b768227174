"""Low level: find and load libgpumem, ctypes prototypes, constants and structs.

Everything here mirrors include/gpumem/gpumem.h one to one (names without the
``gpumem_`` / ``GPUMEM_`` prefix for constants; functions keep their C names
as attributes of :data:`lib`).  The Pythonic layer is the package's other modules
(``gpumem/__init__.py`` lists them).

SPDX-License-Identifier: MIT
"""
import ctypes
import ctypes.util
import glob
import json
import os
import shutil
import subprocess

#: Major version of the C ABI this package was written for.
EXPECTED_MAJOR = 0
#: Version of the header this package mirrors (major*10000+minor*100+patch).
HEADER_VERSION = 400

# --------------------------------------------------------------------------
# Constants (values fixed by the ABI; tests/abi/layout.c lists them too)
# --------------------------------------------------------------------------
SUCCESS = 0
ERROR_INVALID_VALUE = 1
ERROR_OUT_OF_MEMORY = 2
ERROR_NOT_SUPPORTED = 3
ERROR_NO_DEVICE = 4
ERROR_INVALID_DEVICE = 5
ERROR_INVALID_POINTER = 6
ERROR_INVALID_HANDLE = 7
ERROR_BACKEND_UNAVAILABLE = 8
ERROR_BACKEND = 9
ERROR_IPC = 10
ERROR_BUSY = 11

BACKEND_AUTO = 0
BACKEND_HOST = 1
BACKEND_CUDA = 2
BACKEND_HIP = 3

DEVICE_HOST = -1
LOCATION_INVALID = -2

SUPPORT_NONE = 0
SUPPORT_EMULATED = 1
SUPPORT_NATIVE = 2
SUPPORT_BROKEN = 3  # claimed, but its self-test failed (GPUMEM_SELFTEST, 0.4)

HANDLE_NONE = 0
HANDLE_POSIX_FD = 0x1
HANDLE_FABRIC = 0x2

HOST_PORTABLE = 0x1
HOST_MAPPED = 0x2
HOST_WRITE_COMBINED = 0x4
HOST_COHERENT = 0x8
HOST_NONCOHERENT = 0x10

HOST_REGISTER_PORTABLE = 0x1
HOST_REGISTER_MAPPED = 0x2
HOST_REGISTER_READ_ONLY = 0x8

ATTACH_GLOBAL = 0x1
ATTACH_HOST = 0x2
ATTACH_SINGLE = 0x4

ADVISE_SET_READ_MOSTLY = 1
ADVISE_UNSET_READ_MOSTLY = 2
ADVISE_SET_PREFERRED_LOCATION = 3
ADVISE_UNSET_PREFERRED_LOCATION = 4
ADVISE_SET_ACCESSED_BY = 5
ADVISE_UNSET_ACCESSED_BY = 6
ADVISE_SET_COARSE_GRAIN = 100
ADVISE_UNSET_COARSE_GRAIN = 101

RANGE_READ_MOSTLY = 1
RANGE_PREFERRED_LOCATION = 2
RANGE_ACCESSED_BY = 3
RANGE_LAST_PREFETCH_LOCATION = 4

KIND_UNKNOWN = 0
KIND_DEVICE = 1
KIND_HOST_PINNED = 2
KIND_HOST_REGISTERED = 3
KIND_MANAGED = 4
KIND_STREAM_ORDERED = 5
KIND_VIRTUAL = 6
KIND_BUFFER = 7
KIND_COUNT = 8

POOL_MEMORY_UNKNOWN = -1
POOL_MEMORY_DEVICE = 0
POOL_MEMORY_PINNED = 1
POOL_MEMORY_MANAGED = 2

TRACE_ALLOC = 1
TRACE_FREE = 2

POOL_AUTO = 0
POOL_NATIVE = 1
POOL_BUILTIN = 2

POOL_RDMA = 0x1  # gpumem_pool_props_t.flags, gpumem_alloc_props_t.flags (0.4)

POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1
POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2
POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3
POOL_ATTR_RELEASE_THRESHOLD = 4
POOL_ATTR_RESERVED_MEM_CURRENT = 5
POOL_ATTR_RESERVED_MEM_HIGH = 6
POOL_ATTR_USED_MEM_CURRENT = 7
POOL_ATTR_USED_MEM_HIGH = 8

ACCESS_NONE = 0
ACCESS_READ = 1
ACCESS_READWRITE = 3

GRANULARITY_MINIMUM = 0
GRANULARITY_RECOMMENDED = 1

# Streams and events as programs create them (0.5)
STREAM_DEFAULT = 0x0
STREAM_NON_BLOCKING = 0x1
EVENT_DEFAULT = 0x0
EVENT_BLOCKING_SYNC = 0x1
EVENT_DISABLE_TIMING = 0x2
EVENT_INTERPROCESS = 0x4

STATUS_NAMES = {
    0: "GPUMEM_SUCCESS", 1: "GPUMEM_ERROR_INVALID_VALUE", 2: "GPUMEM_ERROR_OUT_OF_MEMORY",
    3: "GPUMEM_ERROR_NOT_SUPPORTED", 4: "GPUMEM_ERROR_NO_DEVICE", 5: "GPUMEM_ERROR_INVALID_DEVICE",
    6: "GPUMEM_ERROR_INVALID_POINTER", 7: "GPUMEM_ERROR_INVALID_HANDLE",
    8: "GPUMEM_ERROR_BACKEND_UNAVAILABLE", 9: "GPUMEM_ERROR_BACKEND", 10: "GPUMEM_ERROR_IPC",
    11: "GPUMEM_ERROR_BUSY",
}
KIND_NAMES = ("unknown", "device", "host_pinned", "host_registered", "managed",
              "stream_ordered", "virtual", "buffer")
BACKEND_NAMES = {0: "auto", 1: "host", 2: "cuda", 3: "hip"}

# --------------------------------------------------------------------------
# Types and structs (layouts: tests/abi/layout.c)
# --------------------------------------------------------------------------
status_t = ctypes.c_int32
stream_t = ctypes.c_void_p
event_t = ctypes.c_void_p
pool_t = ctypes.c_void_p
buffer_t = ctypes.c_void_p
mem_handle_t = ctypes.c_uint64


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("name", ctypes.c_char * 256),
        ("backend", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("total_memory", ctypes.c_uint64),
        ("free_memory", ctypes.c_uint64),
        ("managed_memory", ctypes.c_int32),
        ("managed_migrates", ctypes.c_int32),
        ("pageable_memory_access", ctypes.c_int32),
        ("memory_pools", ctypes.c_int32),
        ("virtual_memory", ctypes.c_int32),
        ("ipc_handle_types", ctypes.c_uint32),
        ("vmm_granularity", ctypes.c_uint64),
        ("vmm_recommended_granularity", ctypes.c_uint64),
        ("host_register", ctypes.c_int32),
        ("compute_capability", ctypes.c_int32),
        ("arch_name", ctypes.c_char * 64),
        ("pool_ipc_handle_types", ctypes.c_uint32),
        ("batch_memops", ctypes.c_int32),
        ("pinned_pools", ctypes.c_int32),
        ("managed_pools", ctypes.c_int32),
        ("rdma_memory", ctypes.c_int32),
        ("dmabuf", ctypes.c_int32),
        ("fabric_handles", ctypes.c_int32),
        ("rows", ctypes.c_int32),               # 0.5
        ("stream_priorities", ctypes.c_int32),  # 0.5
        ("host_funcs", ctypes.c_int32),         # 0.5
        ("ipc_events", ctypes.c_int32),         # 0.5
        ("pci_bus_id", ctypes.c_char * 16),     # 0.5
        ("uuid", ctypes.c_char * 16),           # 0.5: raw bytes (read with bytes(s.uuid)... see _devices)
        ("numa_node", ctypes.c_int32),          # 0.5
    ]


class PointerInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("kind", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("base", ctypes.c_void_p),
        ("alloc_size", ctypes.c_size_t),
        ("emulated", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("pool", pool_t),
        ("device_pointer", ctypes.c_void_p),
        ("memory", ctypes.c_int32),
        ("vendor_known", ctypes.c_int32),  # 0.5
    ]


class Stats(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("current_bytes", ctypes.c_uint64 * KIND_COUNT),
        ("peak_bytes", ctypes.c_uint64 * KIND_COUNT),
        ("alloc_count", ctypes.c_uint64 * KIND_COUNT),
        ("free_count", ctypes.c_uint64 * KIND_COUNT),
        ("fallback_count", ctypes.c_uint64),
    ]


class TraceEvent(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("op", ctypes.c_int32),
        ("kind", ctypes.c_int32),
        ("ptr", ctypes.c_void_p),
        ("bytes", ctypes.c_size_t),
        ("device", ctypes.c_int32),
        ("emulated", ctypes.c_int32),
        ("stream", stream_t),
        ("pool", pool_t),
    ]


# Snapshots (0.2).  gpumem.snapshot() reads them through their JSON; these
# mirror the C layout for callers that walk the structs themselves.
class SnapshotFreeBlock(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_size_t), ("bytes", ctypes.c_size_t)]


class SnapshotDevice(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("device", ctypes.c_int32), ("reserved0", ctypes.c_int32),
                ("name", ctypes.c_char * 256), ("total", ctypes.c_uint64), ("free", ctypes.c_uint64)]


class SnapshotPool(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("pool", pool_t), ("device", ctypes.c_int32),
                ("implementation", ctypes.c_int32), ("memory", ctypes.c_int32), ("reserved0", ctypes.c_int32),
                ("reserved_bytes", ctypes.c_uint64), ("used_bytes", ctypes.c_uint64)]


class SnapshotAllocation(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("ptr", ctypes.c_void_p), ("bytes", ctypes.c_size_t),
                ("kind", ctypes.c_int32), ("memory", ctypes.c_int32), ("device", ctypes.c_int32),
                ("thread", ctypes.c_uint32), ("pool", pool_t), ("stream", stream_t), ("time_us", ctypes.c_uint64),
                ("backtrace", ctypes.POINTER(ctypes.c_void_p)), ("backtrace_depth", ctypes.c_size_t),
                ("graph", ctypes.c_uint64)]


class SnapshotSegment(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("pool", pool_t), ("device", ctypes.c_int32), ("reserved0", ctypes.c_int32),
                ("base", ctypes.c_void_p), ("bytes", ctypes.c_size_t),
                ("free_blocks", ctypes.POINTER(SnapshotFreeBlock)), ("free_block_count", ctypes.c_size_t),
                ("backed_bytes", ctypes.c_size_t)]


class Snapshot(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("backend", ctypes.c_int32), ("reserved0", ctypes.c_int32),
                ("time_us", ctypes.c_uint64),
                ("devices", ctypes.POINTER(SnapshotDevice)), ("device_count", ctypes.c_size_t),
                ("pools", ctypes.POINTER(SnapshotPool)), ("pool_count", ctypes.c_size_t),
                ("allocations", ctypes.POINTER(SnapshotAllocation)), ("allocation_count", ctypes.c_size_t),
                ("segments", ctypes.POINTER(SnapshotSegment)), ("segment_count", ctypes.c_size_t)]


# The calling thread's last OUT_OF_MEMORY (0.4): gpumem.OutOfMemoryError carries it.
class OomRemedy(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint64), ("fits", ctypes.c_int32), ("reserved0", ctypes.c_int32)]


class OomReport(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("has_report", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("kind", ctypes.c_int32),
        ("reserved0", ctypes.c_int32),
        ("bytes", ctypes.c_uint64),
        ("rounded_bytes", ctypes.c_uint64),
        ("pool", pool_t),
        ("stream", stream_t),
        ("device_free", ctypes.c_uint64),
        ("device_total", ctypes.c_uint64),
        ("gpumem_reserved", ctypes.c_uint64),
        ("gpumem_used", ctypes.c_uint64),
        ("limit", ctypes.c_uint64),
        ("limit_held", ctypes.c_uint64),
        ("trim", OomRemedy),
        ("trim_pool", pool_t),
        ("trim_pool_bytes", ctypes.c_uint64),
        ("pending", OomRemedy),
        ("pending_stream", stream_t),
        ("fragmentation", OomRemedy),
        ("largest_free_block", ctypes.c_uint64),
        ("limit_raise", OomRemedy),
        ("outside", OomRemedy),
        ("verdict", ctypes.c_char * 256),
    ]


class PoolProps(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("device", ctypes.c_int32),
        ("handle_types", ctypes.c_uint32),
        ("max_size", ctypes.c_uint64),
        ("implementation", ctypes.c_int32),
        ("memory", ctypes.c_int32),
        ("numa_node", ctypes.c_int32),
        ("reserved1", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
    ]


class AccessDesc(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int32), ("flags", ctypes.c_int32)]


class PoolPtrExportData(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


class IpcEventHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class Memcpy3D(ctypes.Structure):
    """gpumem_memcpy3d_t (0.5): a box of ``depth`` slices of ``height`` rows of ``width`` bytes."""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("src", ctypes.c_void_p), ("src_pitch", ctypes.c_size_t), ("src_height", ctypes.c_size_t),
        ("src_x", ctypes.c_size_t), ("src_y", ctypes.c_size_t), ("src_z", ctypes.c_size_t),
        ("dst", ctypes.c_void_p), ("dst_pitch", ctypes.c_size_t), ("dst_height", ctypes.c_size_t),
        ("dst_x", ctypes.c_size_t), ("dst_y", ctypes.c_size_t), ("dst_z", ctypes.c_size_t),
        ("width", ctypes.c_size_t), ("height", ctypes.c_size_t), ("depth", ctypes.c_size_t),
    ]


class AllocProps(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("device", ctypes.c_int32),
        ("handle_types", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
    ]


def init_struct(cls, **fields):
    """An extensible struct with ``size`` set, like GPUMEM_<NAME>_INIT."""
    s = cls()
    s.size = ctypes.sizeof(cls)
    for k, v in fields.items():
        setattr(s, k, v)
    return s


#: typedef void (*gpumem_trace_fn)(const gpumem_trace_event_t *event, void *user);
TRACE_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(TraceEvent), ctypes.c_void_p)
#: typedef void (*gpumem_host_fn_t)(void *user);  (0.5)
HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# --------------------------------------------------------------------------
# Prototypes: every GPUMEM_API function of the header, in header order.
# tests/api/check_drift.py compares them, the structs and the constants with the header;
# `tools/api/api_table.py --python` prints this list as the header has it.
# --------------------------------------------------------------------------
_P = ctypes.POINTER
_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_i32 = ctypes.c_int32
_u32 = ctypes.c_uint32
_u64 = ctypes.c_uint64
_S = status_t

# Functions of the header that throw C++ exceptions (for C++ hosts such as PyTorch, which load
# them by name): ctypes cannot unwind one, so they get no prototype and are never called here.
CXX_ONLY_FUNCTIONS = ("gpumem_pluggable_malloc_or_throw",)

PROTOTYPES = [
    # name, restype, argtypes
    ("gpumem_status_string", ctypes.c_char_p, [_S]),
    ("gpumem_last_error_message", ctypes.c_char_p, []),
    ("gpumem_version", _i32, []),
    ("gpumem_init", _S, [_i32]),
    ("gpumem_finalize", _S, []),
    ("gpumem_get_backend", _S, [_P(_i32)]),
    ("gpumem_backend_name", ctypes.c_char_p, [_i32]),
    # devices
    ("gpumem_device_count", _S, [_P(_i32)]),
    ("gpumem_set_device", _S, [_i32]),
    ("gpumem_get_device", _S, [_P(_i32)]),
    ("gpumem_device_get_info", _S, [_i32, _P(DeviceInfo)]),
    ("gpumem_mem_get_info", _S, [_P(_sz), _P(_sz)]),
    ("gpumem_device_can_access_peer", _S, [_P(_i32), _i32, _i32]),
    ("gpumem_device_enable_peer_access", _S, [_i32]),
    ("gpumem_device_disable_peer_access", _S, [_i32]),
    ("gpumem_workarounds_get", _S, [_P(ctypes.c_char_p), _P(ctypes.c_char_p), _sz, _P(_sz)]),
    # streams and events
    ("gpumem_stream_create", _S, [_P(stream_t)]),
    ("gpumem_stream_destroy", _S, [stream_t]),
    ("gpumem_stream_synchronize", _S, [stream_t]),
    ("gpumem_stream_query", _S, [stream_t]),
    ("gpumem_stream_wrap", _S, [_vp, _P(stream_t)]),
    ("gpumem_stream_native", _vp, [stream_t]),
    ("gpumem_event_create", _S, [_P(event_t)]),
    ("gpumem_event_destroy", _S, [event_t]),
    ("gpumem_event_record", _S, [event_t, stream_t]),
    ("gpumem_event_synchronize", _S, [event_t]),
    ("gpumem_event_query", _S, [event_t]),
    ("gpumem_stream_wait_event", _S, [stream_t, event_t]),
    ("gpumem_event_elapsed_ms", _S, [_P(ctypes.c_float), event_t, event_t]),
    ("gpumem_device_synchronize", _S, []),
    # streams and events as programs create them (0.5)
    ("gpumem_stream_create_with_flags", _S, [_P(stream_t), _u32, _i32]),
    ("gpumem_device_get_stream_priority_range", _S, [_P(_i32), _P(_i32), _i32]),
    ("gpumem_stream_get_flags", _S, [_P(_u32), stream_t]),
    ("gpumem_stream_get_priority", _S, [_P(_i32), stream_t]),
    ("gpumem_stream_get_device", _S, [_P(_i32), stream_t]),
    ("gpumem_event_create_with_flags", _S, [_P(event_t), _u32]),
    ("gpumem_ipc_get_event_handle", _S, [_P(IpcEventHandle), event_t]),
    ("gpumem_ipc_open_event_handle", _S, [_P(event_t), _P(IpcEventHandle)]),
    ("gpumem_launch_host_func", _S, [stream_t, HOST_FN, _vp]),
    # device memory and copies
    ("gpumem_malloc", _S, [_P(_vp), _sz]),
    ("gpumem_free", _S, [_vp]),
    ("gpumem_memcpy", _S, [_vp, _vp, _sz]),
    ("gpumem_memcpy_async", _S, [_vp, _vp, _sz, stream_t]),
    ("gpumem_memset", _S, [_vp, _i32, _sz]),
    ("gpumem_memset_async", _S, [_vp, _i32, _sz, stream_t]),
    # rows and boxes (0.5)
    ("gpumem_malloc_pitch", _S, [_P(_vp), _P(_sz), _sz, _sz]),
    ("gpumem_memcpy_2d", _S, [_vp, _sz, _vp, _sz, _sz, _sz]),
    ("gpumem_memcpy_2d_async", _S, [_vp, _sz, _vp, _sz, _sz, _sz, stream_t]),
    ("gpumem_memset_2d", _S, [_vp, _sz, _i32, _sz, _sz]),
    ("gpumem_memset_2d_async", _S, [_vp, _sz, _i32, _sz, _sz, stream_t]),
    ("gpumem_memset_d16", _S, [_vp, _u32, _sz]),
    ("gpumem_memset_d16_async", _S, [_vp, _u32, _sz, stream_t]),
    ("gpumem_memset_d32", _S, [_vp, _u32, _sz]),
    ("gpumem_memset_d32_async", _S, [_vp, _u32, _sz, stream_t]),
    ("gpumem_memcpy_3d", _S, [_P(Memcpy3D)]),
    ("gpumem_memcpy_3d_async", _S, [_P(Memcpy3D), stream_t]),
    # batched copies, prefetches and discards (0.2)
    ("gpumem_memcpy_batch_async", _S, [_P(_vp), _P(_vp), _P(_sz), _sz, stream_t]),
    ("gpumem_prefetch_batch_async", _S, [_P(_vp), _P(_sz), _sz, _P(_i32), stream_t]),
    ("gpumem_discard_batch_async", _S, [_P(_vp), _P(_sz), _sz, stream_t]),
    # page-locked host memory
    ("gpumem_host_alloc", _S, [_P(_vp), _sz, _u32]),
    ("gpumem_host_free", _S, [_vp]),
    ("gpumem_host_register", _S, [_vp, _sz, _u32]),
    ("gpumem_host_unregister", _S, [_vp]),
    ("gpumem_host_get_device_pointer", _S, [_P(_vp), _vp]),
    # managed memory
    ("gpumem_managed_alloc", _S, [_P(_vp), _sz, _u32]),
    ("gpumem_prefetch_async", _S, [_vp, _sz, _i32, stream_t]),
    ("gpumem_advise", _S, [_vp, _sz, _i32, _i32]),
    ("gpumem_range_get_attribute", _S, [_vp, _sz, _i32, _vp, _sz]),
    ("gpumem_range_get_attributes", _S, [_P(_vp), _P(_sz), _P(_i32), _sz, _vp, _sz]),
    ("gpumem_stream_attach", _S, [stream_t, _vp, _sz, _u32]),
    # introspection, statistics, tracing
    ("gpumem_pointer_get_info", _S, [_vp, _P(PointerInfo)]),
    ("gpumem_get_stats", _S, [_P(Stats)]),
    ("gpumem_reset_peak_stats", _S, []),
    ("gpumem_set_trace_callback", _S, [TRACE_FN, _vp]),
    # seeing and debugging memory (0.2); a snapshot is read through its JSON (gpumem.snapshot)
    ("gpumem_kind_name", ctypes.c_char_p, [_i32]),
    ("gpumem_snapshot_take", _S, [_P(_vp)]),
    ("gpumem_snapshot_release", _S, [_vp]),
    ("gpumem_snapshot_write_json", _S, [_vp, ctypes.c_char_p]),
    ("gpumem_last_oom_report", _S, [_P(OomReport)]),
    # stream-ordered allocation and pools
    ("gpumem_malloc_async", _S, [_P(_vp), _sz, stream_t]),
    ("gpumem_free_async", _S, [_vp, stream_t]),
    ("gpumem_pool_create", _S, [_P(pool_t), _P(PoolProps)]),
    ("gpumem_pool_destroy", _S, [pool_t]),
    ("gpumem_device_get_default_pool", _S, [_P(pool_t), _i32]),
    ("gpumem_get_default_pool_for", _S, [_P(pool_t), _i32, _i32]),
    ("gpumem_device_set_pool", _S, [_i32, pool_t]),
    ("gpumem_device_get_pool", _S, [_P(pool_t), _i32]),
    ("gpumem_malloc_from_pool_async", _S, [_P(_vp), _sz, pool_t, stream_t]),
    ("gpumem_pool_set_attribute", _S, [pool_t, _i32, _vp]),
    ("gpumem_pool_get_attribute", _S, [pool_t, _i32, _vp]),
    ("gpumem_pool_trim_to", _S, [pool_t, _sz]),
    ("gpumem_pool_set_access", _S, [pool_t, _P(AccessDesc), _sz]),
    ("gpumem_pool_get_access", _S, [_P(_i32), pool_t, _i32]),
    ("gpumem_pool_export_to_shareable_handle", _S, [_P(_i32), pool_t, _i32]),
    ("gpumem_pool_import_from_shareable_handle", _S, [_P(pool_t), _i32, _i32]),
    ("gpumem_pool_export_pointer", _S, [_P(PoolPtrExportData), _vp]),
    ("gpumem_pool_import_pointer", _S, [_P(_vp), pool_t, _P(PoolPtrExportData)]),
    # virtual memory management
    ("gpumem_mem_get_granularity", _S, [_P(_sz), _P(AllocProps), _i32]),
    ("gpumem_mem_create", _S, [_P(mem_handle_t), _sz, _P(AllocProps)]),
    ("gpumem_mem_release", _S, [mem_handle_t]),
    ("gpumem_mem_retain_allocation_handle", _S, [_P(mem_handle_t), _vp]),
    ("gpumem_mem_get_allocation_properties", _S, [_P(AllocProps), mem_handle_t]),
    ("gpumem_mem_address_reserve", _S, [_P(_vp), _sz, _sz, _vp]),
    ("gpumem_mem_address_free", _S, [_vp, _sz]),
    ("gpumem_mem_map", _S, [_vp, _sz, _sz, mem_handle_t]),
    ("gpumem_mem_unmap", _S, [_vp, _sz]),
    ("gpumem_mem_set_access", _S, [_vp, _sz, _P(AccessDesc), _sz]),
    ("gpumem_mem_get_access", _S, [_P(_u64), _i32, _vp]),
    ("gpumem_mem_export_to_shareable_handle", _S, [_P(_i32), mem_handle_t, _i32]),
    ("gpumem_mem_import_from_shareable_handle", _S, [_P(mem_handle_t), _i32, _i32]),
    # dma-buf export (0.4)
    ("gpumem_mem_export_dmabuf", _S, [_P(_i32), _vp, _sz, _u32]),
    # growable buffers
    ("gpumem_buffer_create", _S, [_P(buffer_t), _sz, _sz, _i32]),
    ("gpumem_buffer_resize", _S, [buffer_t, _sz]),
    ("gpumem_buffer_data", _S, [buffer_t, _P(_vp)]),
    ("gpumem_buffer_size", _S, [buffer_t, _P(_sz)]),
    ("gpumem_buffer_destroy", _S, [buffer_t]),
    # IPC helpers
    ("gpumem_ipc_send_fd", _S, [_i32, _i32]),
    ("gpumem_ipc_recv_fd", _S, [_i32, _P(_i32)]),
    # allocator hooks for frameworks
    ("gpumem_pluggable_malloc", _vp, [ctypes.c_ssize_t, ctypes.c_int, _vp]),
    ("gpumem_pluggable_free", None, [_vp, ctypes.c_ssize_t, ctypes.c_int, _vp]),
    ("gpumem_hook_malloc", _vp, [_vp, ctypes.c_size_t, ctypes.c_int]),
    ("gpumem_hook_free", None, [_vp, _vp, ctypes.c_int]),
]

# --------------------------------------------------------------------------
# Finding the library
# --------------------------------------------------------------------------
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
#: bindings/python when the package runs from the source tree.
_BINDINGS_DIR = os.path.dirname(_PKG_DIR)


def _newest_first(paths):
    paths = [p for p in paths if os.path.isfile(p)]
    return sorted(set(paths), key=lambda p: os.path.getmtime(p), reverse=True)


def _in_build_dir(build):
    return _newest_first(glob.glob(os.path.join(build, "src", "libgpumem.so*")) +
                         glob.glob(os.path.join(build, "libgpumem.so*")))


def _bundled():
    """A libgpumem shipped with the package: a wheel's (meson-python puts it in
    site-packages/.gpumem.mesonpy.libs) or one copied into the package folder."""
    site = os.path.dirname(_PKG_DIR)
    return _newest_first(glob.glob(os.path.join(_PKG_DIR, "libgpumem.so*")) +
                         glob.glob(os.path.join(site, ".gpumem.mesonpy.libs", "libgpumem.so*")) +
                         glob.glob(os.path.join(site, ".gpumem.mesonpy.libs", "*", "libgpumem.so*")))


def _installed():
    """The library the same `meson install` put in place (its libdir is recorded at build time)."""
    try:
        from . import _build_config
    except ImportError:
        return []
    return [p for p in (os.path.join(_build_config.LIBDIR, _build_config.SONAME),) if os.path.isfile(p)]


#: Libraries candidates() passed over, with the reason (for the ImportError).
_SKIPPED = []
#: (place, why it gave nothing) for each place candidates() found no library in (for the ImportError).
_LOOKED = []


def _sanitized(build):
    """Whether the meson build folder was configured with a sanitizer."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json"), encoding="utf-8") as f:
            options = json.load(f)
    except (OSError, ValueError):
        return False
    return any(o.get("name") == "b_sanitize" and o.get("value") not in ("none", "", [])
               for o in options if isinstance(o, dict))


def _env(name):
    value = os.environ.get(name)
    return "%s=%s" % (name, value) if value else "%s unset" % name


def _pkg_config():
    """(paths, why none) from `pkg-config --variable=libdir gpumem`."""
    if not shutil.which("pkg-config"):
        return [], "pkg-config is not installed (no pkg-config on PATH)"
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir", "gpumem"], capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return [], "`pkg-config --variable=libdir gpumem` failed: %s" % e
    libdir = r.stdout.strip()
    if r.returncode != 0 or not libdir:
        return [], "`pkg-config --variable=libdir gpumem` found no gpumem.pc (%s)" % _env("PKG_CONFIG_PATH")
    names = ("libgpumem.so.%d" % EXPECTED_MAJOR, "libgpumem.so")
    paths = [os.path.join(libdir, n) for n in names if os.path.isfile(os.path.join(libdir, n))]
    return paths, "gpumem.pc's libdir %s holds no %s" % (libdir, " or ".join(names))


def candidates():
    """(origin, path) pairs in the order the loader tries them (GPUMEM_LIBRARY aside).  For each
    place that gave none, _LOOKED says why."""
    del _SKIPPED[:]
    del _LOOKED[:]
    out = []

    def add(origin, paths, why_none):
        out.extend((origin, p) for p in paths)
        if not paths:
            _LOOKED.append((origin, why_none))
    build = os.environ.get("GPUMEM_BUILD_DIR")
    if build:
        add("GPUMEM_BUILD_DIR", _in_build_dir(build), "no libgpumem.so* in %s or %s"
            % (os.path.join(build, "src"), build))
    else:
        _LOOKED.append(("GPUMEM_BUILD_DIR", "unset"))
    site = os.path.dirname(_PKG_DIR)
    add("bundled", _bundled(), "no libgpumem.so* in %s or %s" % (_PKG_DIR, os.path.join(site, ".gpumem.mesonpy.libs")))
    add("installed with the package", _installed(),
        "none (the package was not installed by `meson install`, or its library was removed since)")
    # Source tree: bindings/python/gpumem -> ../../build/src/libgpumem.so*, the plain build only.
    # Other build folders are never guessed at: a sanitizer build (build-asan) cannot be loaded
    # into an uninstrumented interpreter, and the newest of several is a guess, not a choice.
    root = os.path.dirname(os.path.dirname(_BINDINGS_DIR))
    if os.path.isfile(os.path.join(root, "include", "gpumem", "gpumem.h")):
        build = os.path.join(root, "build")
        if _sanitized(build):
            _SKIPPED.append("%s: configured with -Db_sanitize (load it with GPUMEM_LIBRARY and the "
                            "sanitizer runtime in LD_PRELOAD)" % build)
        else:
            add("source tree", _in_build_dir(build), "no libgpumem.so* in %s or %s"
                % (os.path.join(build, "src"), build))
    else:
        _LOOKED.append(("source tree", "the package at %s is not in a gpumem source tree" % _PKG_DIR))
    add("pkg-config", *_pkg_config())
    found = ctypes.util.find_library("gpumem")
    if found:
        out.append(("system loader", found))
    out.append(("system loader", "libgpumem.so.%d" % EXPECTED_MAJOR))
    return out


def _check_version(dll, path):
    dll.gpumem_version.restype = ctypes.c_int32
    dll.gpumem_version.argtypes = []
    v = dll.gpumem_version()
    major = v // 10000
    if major != EXPECTED_MAJOR:
        raise ImportError(
            "gpumem: %s is version %d.%d.%d but this Python package needs major version %d "
            "(header %d.%d.%d); point GPUMEM_LIBRARY at a matching libgpumem.so"
            % (path, major, v // 100 % 100, v % 100, EXPECTED_MAJOR, HEADER_VERSION // 10000,
               HEADER_VERSION // 100 % 100, HEADER_VERSION % 100))
    return v


def _load():
    explicit = os.environ.get("GPUMEM_LIBRARY")
    if explicit:
        try:
            dll = ctypes.CDLL(explicit)
        except OSError as e:
            raise ImportError("gpumem: GPUMEM_LIBRARY=%s cannot be loaded: %s" % (explicit, e)) from None
        _check_version(dll, explicit)
        return dll, explicit
    tried = ["GPUMEM_LIBRARY: unset"]
    found = candidates()
    tried += ["%s: %s" % looked for looked in _LOOKED]
    for origin, path in found:
        try:
            dll = ctypes.CDLL(path)
        except OSError as e:
            if origin == "system loader":  # dlopen's own search
                tried.append("system loader: %s (%s)" % (e, _env("LD_LIBRARY_PATH")))
            else:
                tried.append("%s: %s: %s" % (origin, path, e))
            continue
        if not hasattr(dll, "gpumem_version"):
            tried.append("%s (%s): not libgpumem" % (path, origin))
            continue
        _check_version(dll, path)  # a wrong version found first is an error, not skipped
        return dll, path
    raise ImportError(
        "gpumem: libgpumem.so not found.  Looked in, in this order:\n  " + "\n  ".join(tried + _SKIPPED) +
        "\nSet GPUMEM_LIBRARY=/path/to/libgpumem.so.%d, or GPUMEM_BUILD_DIR=<meson build dir>; or put the "
        "folder holding gpumem.pc in PKG_CONFIG_PATH, or the library's folder in LD_LIBRARY_PATH "
        "(docs/python.md, \"Installing\")." % EXPECTED_MAJOR)


def _resolved_path(dll, path):
    """The file the dynamic loader actually mapped (for torch_allocator_path)."""
    try:
        class _DlInfo(ctypes.Structure):
            _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                        ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
        libc = ctypes.CDLL(None)
        dladdr = libc.dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        dladdr.restype = ctypes.c_int
        info = _DlInfo()
        addr = ctypes.cast(dll.gpumem_version, ctypes.c_void_p).value
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(os.fsdecode(info.dli_fname))
    except (AttributeError, OSError):
        pass
    return os.path.realpath(path) if os.path.sep in path else path


lib, _loaded_as = _load()
LIBRARY_PATH = _resolved_path(lib, _loaded_as)
RUNTIME_VERSION = lib.gpumem_version()

for _name, _res, _args in PROTOTYPES:
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        raise ImportError("gpumem: %s lacks %s (built from an older gpumem?)" % (LIBRARY_PATH, _name)) from None
    _f.restype = _res
    _f.argtypes = _args
del _name, _res, _args, _f

#: What ``from gpumem._lib import *`` gives: the constants (GPUMEM_ prefix dropped).
__all__ = [_n for _n in list(globals()) if _n.isupper() and not _n.startswith("_")]
