"""The guard every public entry of the package goes through, as src/api/entry.hpp is for the C
exports: integer arguments are checked against the C type they become, before any C call, and
array shapes and dtypes before any consumer sees them; an exception Python could not raise where
it happened (in a trace callback, in a free that waited for the last NumPy array or DLPack
tensor) is raised by the next gpumem call to return.

Why integers are checked here: ctypes converts a Python int to size_t, int32_t or uint32_t by
masking it, so 2**64 + 10 becomes 10 and -1 becomes 2**64 - 1, without a word.  Each parameter
name of the package means one thing (``size`` is a size_t, ``device`` an int32_t, ...):
:data:`PARAMS` says which C type each name becomes, :data:`OVERRIDES` where one function differs,
and :func:`wrap` puts the check in front of every public function and method at import, so a new
one is checked without a decorator to remember.  bindings/python/tests/test_arguments.py walks
every public callable and fails for a parameter this module does not classify.

SPDX-License-Identifier: MIT
"""
import ctypes
import dataclasses
import functools
import inspect
import operator
import threading


class Int:
    """An integer argument that becomes the C type ``ctype``: an int (or an object with
    ``__index__``, such as a NumPy integer) from ``lo`` to ``hi``.  With ``strict`` False the
    argument may also be an object the function takes instead (a gpumem object for an address,
    a socket for a descriptor): only ints are checked here.  None passes where the parameter's
    default is None, or where ``none`` says so."""

    __slots__ = ("ctype", "lo", "hi", "strict", "none")

    def __init__(self, ctype, lo, hi, strict=True, none=False):
        self.ctype, self.lo, self.hi, self.strict, self.none = ctype, lo, hi, strict, none

    def lenient(self, none=False):
        """The same range, for a parameter that also takes objects (only ints are checked)."""
        return Int(self.ctype, self.lo, self.hi, strict=False, none=none)

    def __repr__(self):
        return "Int(%s, %d..%d%s)" % (self.ctype, self.lo, self.hi, "" if self.strict else ", or an object")


_BITS_SIZE = 8 * ctypes.sizeof(ctypes.c_size_t)
_BITS_PTR = 8 * ctypes.sizeof(ctypes.c_void_p)

SIZE = Int("size_t", 0, (1 << _BITS_SIZE) - 1)
I32 = Int("int32_t", -(1 << 31), (1 << 31) - 1)
U32 = Int("uint32_t", 0, (1 << 32) - 1)
U64 = Int("uint64_t", 0, (1 << 64) - 1)
ADDRESS = Int("address", 0, (1 << _BITS_PTR) - 1)
#: Slots of a RANGE_ACCESSED_BY answer: one per device and the host.
SLOTS = Int("slot count", 1, 1 << 16)

#: The C type each parameter name becomes, wherever it appears.
PARAMS = {
    "size": SIZE, "n": SIZE, "count": SIZE, "length": SIZE, "new_size": SIZE, "offset": SIZE,
    "alignment": SIZE, "min_bytes_to_keep": SIZE,
    # rows and boxes, stream priorities (gpumem/_rows.py)
    "pitch": SIZE, "dpitch": SIZE, "spitch": SIZE, "width": SIZE, "height": SIZE, "depth": SIZE,
    "dst_pitch": SIZE, "dst_height": SIZE, "src_pitch": SIZE, "src_height": SIZE,
    "priority": I32,
    "max_size": U64,
    "flags": U32, "handle_types": U32,
    "device": I32, "peer": I32, "location": I32, "numa_node": I32, "kind": I32, "memory": I32,
    "implementation": I32, "advice": I32, "attribute": I32, "handle_type": I32, "value": I32,
    "fd": I32,
    "access": Int("int32_t", I32.lo, I32.hi, none=True),  # None: map without granting access
    "slots": SLOTS,
    # Ints, or objects that stand for one (checked as ints only):
    "ptr": ADDRESS.lenient(), "obj": ADDRESS.lenient(), "dst": ADDRESS.lenient(), "src": ADDRESS.lenient(),
    "alloc": ADDRESS.lenient(), "hint": ADDRESS.lenient(), "native": ADDRESS.lenient(none=True),
    "stream": ADDRESS.lenient(),  # a gpumem.Stream, None or a raw gpumem_stream_t
    "sock": I32.lenient(),        # a socket object or its fileno()
    "backend": I32.lenient(),     # a name ("host") or a BACKEND_* value
}

#: Where a function gives a name another meaning: {qualname: {name: Int, or None for unchecked}}.
OVERRIDES = {
    "Buffer.__init__": {"max_size": SIZE},
    "Allocation.__init__": {"ptr": Int("address", ADDRESS.lo, ADDRESS.hi, none=True)},
    "CudaArrayView.__init__": {"ptr": ADDRESS},
    # "cuda", "cuda:N" or a torch.device as well as an ordinal.
    "torch_mem_pool": {"device": I32.lenient()},
    "HostRegistration.__init__": {"obj": None},  # a writable buffer, never an address
    # The element's value of a 16- or 32-bit fill is unsigned (gpumem_memset_d16 takes at most 0xFFFF).
    "memset_d16": {"value": U32}, "memset_d16_async": {"value": U32},
    "memset_d32": {"value": U32}, "memset_d32_async": {"value": U32},
}

#: Public callables not wrapped, with the reason.
UNWRAPPED = {
    # CuPy calls it for every temporary; CuPy's own size_t conversion refuses a negative or
    # oversized size (OverflowError) before any C call.
    "cupy_allocator": "a hot path whose argument comes from CuPy's size_t",
}


def check(where, name, value, kind, none_ok=False):
    """``value`` as a plain int in ``kind``'s range; TypeError, ValueError (a negative value for
    an unsigned type) or OverflowError (out of range) naming ``where`` and ``name`` otherwise.
    Objects pass unchanged where ``kind`` is not strict; None where ``none_ok`` or ``kind.none``."""
    if value is None and (none_ok or kind.none):
        return None
    if isinstance(value, bool):
        raise TypeError("%s: %s must be an integer, not bool" % (where, name))
    if type(value) is int:
        v = value
    else:
        try:
            v = operator.index(value)
        except TypeError:
            if not kind.strict:
                return value
            raise TypeError("%s: %s must be an integer (%s), not %s"
                            % (where, name, kind.ctype, type(value).__name__)) from None
    if kind.lo <= v <= kind.hi:
        return v
    if v < 0 and kind.lo == 0:
        raise ValueError("%s: %s must be 0 or more (%s), not %d" % (where, name, kind.ctype, v))
    raise OverflowError("%s: %s=%d is out of range for %s (%d to %d)" % (where, name, v, kind.ctype, kind.lo, kind.hi))


def instance(where, name, obj, cls):
    """``obj``, if it is a ``cls``; else TypeError naming the argument and what it must be."""
    if not isinstance(obj, cls):
        raise TypeError("%s: %s must be a gpumem.%s, not %s" % (where, name, cls.__name__, type(obj).__name__))
    return obj


def kinds_of(qualname, fn):
    """[(position, name, Int, none_ok)] for ``fn``'s integer parameters, as wrap() checks them."""
    out = []
    overrides = OVERRIDES.get(qualname, {})
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name.startswith("_"):
            continue
        kind = overrides[p.name] if p.name in overrides else PARAMS.get(p.name)
        if kind is not None:
            out.append((i if p.kind != p.KEYWORD_ONLY else None, p.name, kind, p.default is None))
    return out


# ---------------------------------------------------------------------------
# Exceptions kept for later: Python cannot raise from a ctypes callback or a finaliser.
# ---------------------------------------------------------------------------

_pending = []        # [(exception, what raised it)], the first kept; later ones counted
_dropped = [0]
_pending_lock = threading.Lock()
_depth = threading.local()


def keep(exc, what):
    """Keep ``exc`` (raised by ``what``, where Python could not raise it) for the next gpumem
    call to raise when it returns.  The first is kept; later ones are counted in its note."""
    with _pending_lock:
        if _pending:
            _dropped[0] += 1
        else:
            _pending.append((exc, what))


def _take():
    """(exception, what raised it, later ones dropped) that keep() holds, given up; or None."""
    with _pending_lock:
        if not _pending:
            return None
        exc, what = _pending.pop()
        dropped, _dropped[0] = _dropped[0], 0
    return exc, what, dropped


def _noted(got, later):
    """The kept exception, with a note saying where it came from (Python 3.11 and later)."""
    exc, what, dropped = got
    if later is not None:
        dropped += 1 + later[2]
    note = "gpumem: raised by %s, where Python could not raise it; the gpumem call went on" % what
    if dropped:
        note += " (%d later exception%s dropped)" % (dropped, "" if dropped == 1 else "s")
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    return exc


def _guard(qualname, fn):
    checks = kinds_of(qualname, fn)

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        if checks:
            fixed = None
            for pos, name, kind, none_ok in checks:
                if pos is not None and pos < len(args):
                    v = args[pos]
                    c = check(qualname + "()", name, v, kind, none_ok)
                    if c is not v:
                        if fixed is None:
                            fixed = list(args)
                        fixed[pos] = c
                elif name in kwargs:
                    kwargs[name] = check(qualname + "()", name, kwargs[name], kind, none_ok)
            if fixed is not None:
                args = tuple(fixed)
        # A kept exception is raised when the outermost gpumem call returns, in place of its
        # result: an inner call raising would abandon what the outer one holds (a pointer not
        # yet owned by an object), and raising before a call would keep set_trace_callback(None)
        # from removing a callback that raises.
        depth = getattr(_depth, "n", 0)
        _depth.n = depth + 1
        try:
            result = fn(*args, **kwargs)
        finally:
            _depth.n = depth
        if depth == 0 and _pending:
            got = _take()
            if got is not None:
                del result  # what the call made is released by its finaliser, which may raise again
                raise _noted(got, _take())
        return result
    return entry


def _is_record(cls):
    """Results the package makes from C structs, never passed to C: dataclasses, named tuples
    and exceptions are not wrapped."""
    return dataclasses.is_dataclass(cls) or issubclass(cls, (BaseException, tuple))


def wrap(namespace, names):
    """Put the guard in front of every public function in ``names`` and every public method
    and ``__init__`` of every class in ``names`` and of its bases, where the package's modules
    define them (``namespace`` is the package's).  A function is guarded where callers reach
    it, in ``namespace``; the modules call one another's functions unguarded, inside a public
    call that has checked its own arguments and raises what was kept when it returns."""
    done = set()
    package = namespace["__name__"]
    for name in names:
        obj = namespace.get(name)
        if name in UNWRAPPED:
            continue
        if inspect.isfunction(obj):
            namespace[name] = _guard(name, obj)
        elif inspect.isclass(obj) and not _is_record(obj):
            for cls in obj.__mro__:
                if cls in done or not (cls.__module__ == package or cls.__module__.startswith(package + ".")):
                    continue
                done.add(cls)
                for attr, member in list(vars(cls).items()):
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    qualname = "%s.%s" % (cls.__name__, attr)  # as OVERRIDES and messages name it
                    if isinstance(member, (classmethod, staticmethod)):
                        setattr(cls, attr, type(member)(_guard(qualname, member.__func__)))
                    elif inspect.isfunction(member):
                        setattr(cls, attr, _guard(qualname, member))


# ---------------------------------------------------------------------------
# Array descriptions (as_array, ArrayView, CudaArrayView)
# ---------------------------------------------------------------------------

#: Item sizes each array-interface kind may have: what DLPack and NumPy both describe.
_ITEMSIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16)}
_INT64_MAX = (1 << 63) - 1


def typestr(ts):
    """An array-interface typestr ("<f4") checked: bool, int, uint, float or complex of a size
    DLPack describes; ValueError otherwise."""
    if not isinstance(ts, str):
        raise TypeError("typestr must be a str such as '<f4', not %s" % type(ts).__name__)
    if (len(ts) < 3 or ts[0] not in "<>|=" or ts[1] not in _ITEMSIZES or not ts[2:].isdigit()
            or int(ts[2:]) not in _ITEMSIZES[ts[1]]):
        raise ValueError("dtype %r cannot be exported: use bool, (u)int8/16/32/64, float16/32/64, "
                         "complex64/128 (or their typestrs, such as '<f4')" % ts)
    return ts


def shape(where, value, nbytes, itemsize):
    """A shape as a tuple of ints, each 0 or more, that fits ``nbytes`` in items of ``itemsize``
    (None: as many items as fit; an int: 1-D); ValueError or TypeError saying what is wrong."""
    if value is None:
        return (nbytes // itemsize,)
    try:
        dims = (operator.index(value),)
    except TypeError:
        try:
            dims = tuple(value)
        except TypeError:
            raise TypeError("%s: shape must be an int or a sequence of ints, not %s"
                            % (where, type(value).__name__)) from None
    out = []
    for i, d in enumerate(dims):
        if isinstance(d, bool):
            raise TypeError("%s: shape[%d] must be an int, not bool" % (where, i))
        try:
            d = operator.index(d)
        except TypeError:
            raise TypeError("%s: shape[%d] must be an int, not %s" % (where, i, type(d).__name__)) from None
        if d < 0:
            raise ValueError("%s: shape %r has a negative dimension (shape[%d] = %d)" % (where, tuple(dims), i, d))
        if d > _INT64_MAX:
            raise OverflowError("%s: shape[%d] = %d does not fit DLPack's int64" % (where, i, d))
        out.append(d)
    need = itemsize
    for d in out:
        need *= d
    if nbytes is not None and need > nbytes:
        raise ValueError("%s: shape %s of %d-byte items needs %d bytes, the memory has %d"
                         % (where, tuple(out), itemsize, need, nbytes))
    return tuple(out)
