"""DLPack export (``__dlpack__`` / ``__dlpack_device__``) over ctypes, no compiled parts.

Two capsules, as the Python side of DLPack specifies:

- a consumer that passes ``max_version`` with major 1 or more (NumPy >= 2.1, PyTorch >= 2.3)
  gets DLPack 1.0's ``DLManagedTensorVersioned`` in a capsule named "dltensor_versioned",
  whose ``flags`` say the memory is writable (no ``DLPACK_FLAG_BITMASK_READ_ONLY``): NumPy
  >= 2.2.5 then makes a writable array;
- any other caller gets the unversioned ``DLManagedTensor`` (dlpack.h v0.8, the one every
  consumer takes: NumPy >= 1.22, PyTorch, CuPy) in a capsule named "dltensor", which has no
  flags: NumPy makes its array read-only.

A consumer renames the capsule ("used_dltensor", "used_dltensor_versioned") and calls the
tensor's deleter when it is done; a capsule never consumed calls the deleter from its own
destructor.  Either way the deleter drops the reference that kept the gpumem object (and the
shape array) alive, and tells the memory object the export is gone (gpumem/_exports.py).

Device types gpumem reports (see ``docs/python.md``):

=================  =================================  ==============================
backend            device, stream-ordered, virtual,   host_pinned / host_registered;
                   buffer; managed                    (managed)
=================  =================================  ==============================
host               kDLCPU (0)                         kDLCPU (0)
cuda               kDLCUDA (device)                   kDLCUDAHost (0); kDLCUDAManaged (device)
hip                kDLROCM (device)                   kDLROCMHost (0); kDLROCM (device)
=================  =================================  ==============================

SPDX-License-Identifier: MIT
"""
import ctypes
import threading

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLROCM = 10
kDLROCMHost = 11
kDLCUDAManaged = 13

# DLDataTypeCode
_kDLInt, _kDLUInt, _kDLFloat, _kDLComplex, _kDLBool = 0, 1, 2, 5, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]


# DLPack 1.0 (dlpack.h v1.0): the versioned tensor, with flags.
class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER_VERSIONED = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", _DELETER_VERSIONED), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

#: The DLPack version of the versioned capsule: 1.0 (every 1.x consumer reads it).
VERSION = (1, 0)
FLAG_READ_ONLY = 1 << 0  # DLPACK_FLAG_BITMASK_READ_ONLY
FLAG_IS_COPIED = 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED

# Capsule names must outlive every capsule: module-level buffers.
_NAME = ctypes.create_string_buffer(b"dltensor")
_USED_NAME = b"used_dltensor"
_NAME_VERSIONED = ctypes.create_string_buffer(b"dltensor_versioned")
_USED_NAME_VERSIONED = b"used_dltensor_versioned"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# manager_ctx -> (DLManagedTensor, shape array, owner, on_release): what a live export keeps alive.
_live = {}
_live_lock = threading.Lock()
_next_ctx = [1]


def _release(ctx):
    with _live_lock:
        entry = _live.pop(ctx, None)
    if entry is not None and entry[3] is not None:
        entry[3]()  # may free the memory: outside the lock, after the entry is gone


@_DELETER
def _deleter(managed):
    # Called by the consumer (or by the capsule's destructor) once per export.
    try:
        _release(managed.contents.manager_ctx)
    except Exception:  # noqa: BLE001  (a C callback must not raise)
        pass


@_DELETER_VERSIONED
def _deleter_versioned(managed):
    try:
        _release(managed.contents.manager_ctx)
    except Exception:  # noqa: BLE001
        pass


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # Still named "dltensor" or "dltensor_versioned": nobody consumed it, so the deleter is
    # ours to call.
    try:
        if _api.PyCapsule_IsValid(capsule, b"dltensor"):
            p = _api.PyCapsule_GetPointer(capsule, b"dltensor")
            _deleter(ctypes.cast(p, ctypes.POINTER(DLManagedTensor)))
        elif _api.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
            p = _api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
            _deleter_versioned(ctypes.cast(p, ctypes.POINTER(DLManagedTensorVersioned)))
    except Exception:  # noqa: BLE001
        pass


def dtype_of(typestr):
    """DLDataType of an array-interface typestr ("<f4", "|u1", "|b1", ...)."""
    kind, bits = typestr[1], int(typestr[2:]) * 8
    code = {"i": _kDLInt, "u": _kDLUInt, "f": _kDLFloat, "c": _kDLComplex, "b": _kDLBool}.get(kind)
    if code is None or typestr[0] == ">":
        raise TypeError("DLPack cannot describe typestr %r (little-endian int, uint, float, "
                        "complex or bool only)" % typestr)
    return DLDataType(code, bits, 1)


def wants_versioned(max_version):
    """Whether a consumer's ``max_version`` (None, or a (major, minor) pair) takes the
    versioned capsule: DLPack 1.0 is offered to a consumer of major 1 or more."""
    if max_version is None:
        return False
    try:
        return int(max_version[0]) >= VERSION[0]
    except (TypeError, ValueError, IndexError):
        raise BufferError("max_version must be None or a (major, minor) pair, not %r" % (max_version,)) from None


def export(owner, ptr, shape, typestr, device, versioned=False, readonly=False, on_release=None):
    """A PyCapsule for C-contiguous memory at ptr that keeps owner alive until the consumer
    calls the deleter (or the capsule is dropped unconsumed): "dltensor" (DLManagedTensor), or
    with ``versioned`` "dltensor_versioned" (DLManagedTensorVersioned 1.0, ``flags`` saying
    whether the memory is read-only).  ``on_release()`` runs once, when the deleter does."""
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    if versioned:
        m = DLManagedTensorVersioned()
        m.version = DLPackVersion(*VERSION)
        m.flags = FLAG_READ_ONLY if readonly else 0
        m.deleter = _deleter_versioned
        name = _NAME_VERSIONED
    else:
        m = DLManagedTensor()
        m.deleter = _deleter
        name = _NAME
    m.dl_tensor.data = ptr
    m.dl_tensor.device = DLDevice(*device)
    m.dl_tensor.ndim = ndim
    m.dl_tensor.dtype = dtype_of(typestr)
    m.dl_tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.strides = None  # compact row-major
    m.dl_tensor.byte_offset = 0
    with _live_lock:
        ctx = _next_ctx[0]
        _next_ctx[0] += 1
        _live[ctx] = (m, shape_arr, owner, on_release)
    m.manager_ctx = ctx
    return _api.PyCapsule_New(ctypes.addressof(m), ctypes.addressof(name),
                              ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def live_exports():
    """How many exports no consumer has released yet (for tests)."""
    with _live_lock:
        return len(_live)
