"""Arguments are checked before any C call: every integer parameter of every public function and
method refuses a value its C type cannot hold (ctypes would mask it: 2**64 + 10 becomes 10, -1
becomes 2**64 - 1), and wrong types raise errors that name the argument.  The walk enumerates
the package, so a function added later is covered, and a parameter gpumem/_entry.py does not
classify fails here."""
import inspect
import socket
import unittest

import gpumem
from gpumem import _entry

from support import DISABLED, HAVE_NUMPY, GpumemTestCase

# Parameters that carry no integer of their own (objects, callables, sequences checked entry by
# entry in the function, flags of the Python side).  A parameter in neither this set nor
# gpumem/_entry.py's PARAMS fails test_every_parameter_is_classified.
NOT_INTEGERS = {"fn", "pool", "event", "start", "end", "mem", "copies", "ranges", "attributes", "descs", "dtype",
                "shape", "typestr", "owner", "owned", "readonly", "recommended", "data",
                "user", "keep", "dst_pos", "src_pos"}

BIG = (1 << 64) + 10


def is_record(cls):
    return _entry._is_record(cls)


def public_callables():
    """(qualname, function, call) for every public function, and every public method and
    __init__ of every public class; call(args, kwargs) calls it (methods with a stand-in self:
    the arguments must be refused before the body runs)."""
    out = []
    seen = set()
    for name in gpumem.__all__:
        if name == "viz":  # a module (gpumem/viz.py), not a C wrapper
            continue
        obj = getattr(gpumem, name)
        if inspect.isfunction(obj):
            out.append((name, obj, lambda args, kw, f=obj: f(*args, **kw)))
        elif inspect.isclass(obj) and not is_record(obj):
            for attr in sorted(set(dir(obj))):
                if attr.startswith("_") and attr != "__init__":
                    continue
                static = inspect.getattr_static(obj, attr)
                if isinstance(static, (classmethod, staticmethod)):
                    fn = static.__func__
                    call = (lambda args, kw, f=getattr(obj, attr): f(*args, **kw))
                elif inspect.isfunction(static):
                    fn = static
                    call = (lambda args, kw, f=static: f(object(), *args, **kw))
                else:
                    continue
                if fn in seen:
                    continue
                seen.add(fn)
                out.append((fn.__qualname__, fn, call))
    return out


def parameters(fn):
    """fn's parameters a caller passes (self, cls and private ones left out)."""
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    return [p for p in params if not p.name.startswith("_") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def kind_of(qualname, name):
    overrides = _entry.OVERRIDES.get(qualname, {})
    return overrides[name] if name in overrides else _entry.PARAMS.get(name)


def placeholder(qualname, p):
    """A value the check accepts for a parameter not under test."""
    kind = kind_of(qualname, p.name)
    if kind is None:
        return None
    return max(kind.lo, min(0, kind.hi))


class TestEveryEntry(GpumemTestCase):
    def test_the_walk_finds_the_package(self):
        names = {q for q, _f, _c in public_callables()}
        for expected in ("malloc", "set_device", "Buffer.resize", "Pool.__init__", "Pool.trim_to", "_Memory.as_array",
                         "memory_summary", "empty_cache", "AddressRange.map", "Stream.wrap"):
            self.assertIn(expected, names)
        self.assertGreater(len(names), 80)

    def test_every_parameter_is_classified(self):
        unknown = []
        for qualname, fn, _call in public_callables():
            for p in parameters(fn):
                overrides = _entry.OVERRIDES.get(qualname, {})
                if p.name not in _entry.PARAMS and p.name not in overrides and p.name not in NOT_INTEGERS:
                    unknown.append("%s(%s)" % (qualname, p.name))
        self.assertEqual(unknown, [], "parameters gpumem/_entry.py does not classify: add each to its PARAMS "
                                      "(an integer) or to NOT_INTEGERS here")

    def call_with(self, qualname, fn, call, bad_name, bad_value):
        """By keyword: the bad value, and placeholders for the required parameters."""
        kw = {}
        for p in parameters(fn):
            if p.name == bad_name:
                kw[p.name] = bad_value
            elif p.default is p.empty:
                kw[p.name] = placeholder(qualname, p)
        call((), kw)

    def call_positionally(self, qualname, fn, call, bad_name, bad_value):
        """By position: every parameter up to the bad one."""
        args = []
        for p in parameters(fn):
            if p.kind == p.KEYWORD_ONLY:
                return call((), {bad_name: bad_value})
            if p.name == bad_name:
                args.append(bad_value)
                break
            args.append(placeholder(qualname, p) if p.default is p.empty else p.default)
        call(tuple(args), {})

    def test_out_of_range_integers_are_refused_before_the_c_call(self):
        checked = 0
        for qualname, fn, call in public_callables():
            if qualname in _entry.UNWRAPPED:
                continue
            for p in parameters(fn):
                kind = kind_of(qualname, p.name)
                if kind is None:
                    continue
                bad = [(kind.hi + 1, OverflowError), (BIG, OverflowError),
                       (kind.lo - 1, ValueError if kind.lo == 0 else OverflowError)]
                if kind.lo == 0:
                    bad.append((-1, ValueError))
                if kind.strict:
                    bad.append(("abc", TypeError))
                for value, error in bad:
                    with self.subTest(call=qualname, parameter=p.name, value=value):
                        with self.assertRaises(error) as cm:
                            self.call_with(qualname, fn, call, p.name, value)
                        self.assertIn(p.name, str(cm.exception))
                        self.assertIn(qualname.split(".")[-1] + "()", str(cm.exception))
                        with self.assertRaises(error):
                            self.call_positionally(qualname, fn, call, p.name, value)
                checked += 1
        self.assertGreater(checked, 100)

    def test_property_setters(self):
        setters = []
        for name in gpumem.__all__:
            obj = getattr(gpumem, name, None)
            if inspect.isclass(obj) and not is_record(obj):
                for attr in dir(obj):
                    static = inspect.getattr_static(obj, attr)
                    if isinstance(static, property) and static.fset is not None:
                        setters.append(("%s.%s" % (name, attr), attr, static.fset))
        self.assertGreaterEqual(len(setters), 6)
        for label, attr, fset in setters:
            for value in (-1, BIG, "abc"):
                with self.subTest(setter=label, value=value):
                    with self.assertRaises((ValueError, OverflowError, TypeError)) as cm:
                        fset(object(), value)
                    self.assertIn(attr, str(cm.exception))
        with gpumem.Pool() as p:
            p.release_threshold = (1 << 64) - 1  # the largest uint64_t is fine
            self.assertEqual(p.release_threshold, (1 << 64) - 1)
            p.reuse_allow_opportunistic = False
            self.assertFalse(p.reuse_allow_opportunistic)
            with self.assertRaises(ValueError):
                p.reuse_allow_opportunistic = 1 << 32  # was taken as 0: False


class TestIssueCases(GpumemTestCase):
    """The cases the issue reported, each with the exact error."""

    def test_sizes(self):
        with self.assertRaisesRegex(OverflowError, r"malloc\(\): size=18446744073709551616 is out of range"):
            gpumem.malloc(1 << 64)
        with self.assertRaisesRegex(ValueError, r"malloc\(\): size must be 0 or more"):
            gpumem.malloc(-1)
        with gpumem.Buffer(100) as b:
            with self.assertRaisesRegex(OverflowError, r"Buffer.resize\(\): new_size="):
                b.resize(BIG)
            self.assertEqual(b.size, 100)  # not shrunk to 10 bytes
        self.assertStatus(gpumem.ERROR_OUT_OF_MEMORY, gpumem.malloc, (1 << 64) - 1)  # in range: the library says

    def test_devices(self):
        before = gpumem.get_device()
        with self.assertRaisesRegex(OverflowError, r"set_device\(\): device=4294967296"):
            gpumem.set_device(1 << 32)
        self.assertEqual(gpumem.get_device(), before)
        with self.assertRaisesRegex(OverflowError, "peer"):
            gpumem.can_access_peer(0, 1 << 31)

    def test_pools(self):
        with self.assertRaisesRegex(ValueError, "max_size"):
            gpumem.Pool(max_size=-1)
        with gpumem.Pool() as p:
            with self.assertRaisesRegex(ValueError, "release_threshold"):
                p.release_threshold = -1
            with self.assertRaisesRegex(ValueError, "min_bytes_to_keep"):
                p.trim_to(-1)
            with self.assertRaisesRegex(ValueError, "min_bytes_to_keep"):
                p.trim(-1)
            with self.assertRaisesRegex(OverflowError, r"descs\[1\] device"):
                p.set_access([(0, gpumem.ACCESS_READWRITE), (1 << 32, gpumem.ACCESS_READWRITE)])
            with self.assertRaisesRegex(TypeError, r"descs\[0\]"):
                p.set_access([5])
            with self.assertRaisesRegex(ValueError, "64 bytes"):
                p.import_pointer(bytes(8), 16)
            with self.assertRaisesRegex(ValueError, "64 bytes"):
                p.import_pointer(64, 16)  # bytes(64) would be 64 zero bytes

    def test_numpy_integers_are_integers(self):
        if not HAVE_NUMPY:
            self.skipTest("NumPy not installed")
        import numpy
        with gpumem.malloc(numpy.int64(64)) as a:
            self.assertEqual(a.size, 64)
            self.assertIs(type(a.size), int)
        with self.assertRaises(ValueError):
            gpumem.malloc(numpy.int64(-1))

    def test_wrong_types_name_the_argument(self):
        with self.assertRaisesRegex(TypeError, r"malloc\(\): size must be an integer \(size_t\), not str"):
            gpumem.malloc("abc")
        with self.assertRaisesRegex(TypeError, "size must be an integer"):
            gpumem.malloc(1.5)
        with self.assertRaisesRegex(TypeError, "not bool"):
            gpumem.malloc(True)
        with self.assertRaisesRegex(TypeError, r"malloc_async\(\): pool must be a gpumem.Pool, not object"):
            gpumem.malloc_async(16, pool=object())
        with gpumem.Stream() as s:
            with self.assertRaisesRegex(TypeError, "event must be a gpumem.Event, not int"):
                s.wait_event(5)
        with self.assertRaisesRegex(TypeError, "end must be a gpumem.Event"):
            gpumem.elapsed_ms(gpumem.Event(), "later")
        with self.assertRaisesRegex(TypeError, "stream must be a gpumem.Stream"):
            gpumem.malloc_async(16, stream="default")

    def test_entries_of_sequences(self):
        with gpumem.malloc(64) as d:
            with self.assertRaisesRegex(OverflowError, r"copies\[1\]"):
                gpumem.memcpy_batch_async([(d, bytes(8)), (d, bytes(8), BIG)])
            with self.assertRaisesRegex(ValueError, r"copies\[0\] dst"):
                gpumem.memcpy_batch_async([(-1, bytes(8), 8)])
            with self.assertRaisesRegex(OverflowError, r"ranges\[0\]"):
                gpumem.prefetch_batch_async([(d, 1 << 31)])
            with self.assertRaisesRegex(ValueError, r"ranges\[0\]"):
                gpumem.discard_batch_async([(d, -1)])
            with self.assertRaisesRegex(OverflowError, r"attributes\[1\]"):
                gpumem.range_attributes(d, [gpumem.RANGE_READ_MOSTLY, 1 << 40])
            with self.assertRaisesRegex(ValueError, "src"):
                gpumem.memcpy(d, -5, 8)

    @unittest.skipIf("vmm" in DISABLED, "VMM disabled")
    def test_address_ranges(self):
        g = gpumem.mem_granularity()
        with gpumem.AddressRange(g) as r:
            with self.assertRaisesRegex(ValueError, "offset"):
                r.unmap(-1, g)
            with self.assertRaisesRegex(OverflowError, r"descs\[0\] flags"):
                r.set_access(0, g, [(0, 1 << 40)])

    def test_sockets_and_descriptors(self):
        a, b = socket.socketpair()
        try:
            with self.assertRaisesRegex(OverflowError, "fd"):
                gpumem.ipc_send_fd(a, 1 << 40)
            with self.assertRaisesRegex(OverflowError, "sock"):
                gpumem.ipc_send_fd(1 << 40, 0)
        finally:
            a.close()
            b.close()


class TestArrayShapes(GpumemTestCase):
    """as_array, ArrayView and CudaArrayView refuse shapes and dtypes no consumer can take
    (a negative shape made numpy.from_dlpack fail with a SystemError)."""

    def test_shapes(self):
        with gpumem.host_alloc(64) as h:
            for shape, error, text in (((-1, 4), ValueError, r"negative dimension \(shape\[0\] = -1\)"),
                                       ((4, -4), ValueError, "negative"),
                                       (-16, ValueError, "negative"),
                                       ((1 << 63,), OverflowError, "int64"),
                                       ((2.5,), TypeError, r"shape\[0\] must be an int, not float"),
                                       ("ab", TypeError, "must be an int"),
                                       (object(), TypeError, "shape must be an int or a sequence"),
                                       ((4, 5), ValueError, "needs 80 bytes, the memory has 64")):
                with self.subTest(shape=shape):
                    with self.assertRaisesRegex(error, text):
                        h.as_array("float32", shape)
            self.assertEqual(h.as_array("float32", ()).shape, ())
            self.assertEqual(h.as_array("float32", (0, 3)).shape, (0, 3))
            self.assertEqual(h.as_array("int8", 7).shape, (7,))
            with self.assertRaisesRegex(ValueError, "negative"):
                gpumem.ArrayView(h, "<f4", (-1,))
            with self.assertRaisesRegex(ValueError, "negative"):
                gpumem.CudaArrayView(h, h.ptr, (-2, 2), "<f4")

    def test_dtypes(self):
        with gpumem.host_alloc(64) as h:
            for dtype in ("|V8", "<M8", "|O8", "<f3", "<i16", "xyz", "|S4"):
                with self.subTest(dtype=dtype):
                    with self.assertRaises((ValueError, TypeError)):
                        h.as_array(dtype)
            self.assertEqual(h.as_array(">f4").typestr, ">f4")  # NumPy's array interface takes it
            with self.assertRaises(TypeError):
                h.as_array(">f4").__dlpack__()  # DLPack has no big-endian

    @unittest.skipUnless(HAVE_NUMPY, "NumPy not installed")
    def test_numpy_dtypes_and_from_dlpack(self):
        import numpy
        with gpumem.host_alloc(64) as h:
            with self.assertRaises(ValueError):
                h.as_array(numpy.dtype([("a", "<i4")]))  # a structured dtype DLPack cannot say
            with self.assertRaises(ValueError):
                numpy.from_dlpack(h.as_array("float32", (-1, 4)))
            x = numpy.from_dlpack(h.as_array(numpy.float32, numpy.array([4, 4])))
            self.assertEqual(x.shape, (4, 4))
            del x


if __name__ == "__main__":
    unittest.main()
