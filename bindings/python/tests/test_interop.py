"""DLPack, __array_interface__ and the buffer protocol: NumPy on any backend; PyTorch and CuPy
where they are installed and the backend is a GPU one (they skip otherwise)."""
import gc
import sys
import unittest

import gpumem
from gpumem import _dlpack

from support import HAVE_NUMPY, GpumemTestCase

ON_GPU = gpumem.backend() in ("cuda", "hip")


def _capsule_name(cap):
    import ctypes
    get = ctypes.pythonapi["PyCapsule_GetName"]  # a fresh function object: _dlpack's stays as it is
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get(cap).decode()


def _capsule_pointer(cap, name):
    import ctypes
    get = ctypes.pythonapi["PyCapsule_GetPointer"]
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(cap, name)


def _numpy_version():
    import numpy
    return tuple(int(x) for x in numpy.__version__.split(".")[:3] if x.isdigit())


def _optional(name):
    try:
        return __import__(name)
    except ImportError:
        return None


class TestDLPackStructs(GpumemTestCase):
    def test_layout_matches_dlpack_h(self):
        # dlpack.h v0.8 on LP64: DLTensor is 48 bytes, DLManagedTensor 64.
        import ctypes
        self.assertEqual(ctypes.sizeof(_dlpack.DLDevice), 8)
        self.assertEqual(ctypes.sizeof(_dlpack.DLDataType), 4)
        self.assertEqual(ctypes.sizeof(_dlpack.DLTensor), 48)
        self.assertEqual(ctypes.sizeof(_dlpack.DLManagedTensor), 64)
        self.assertEqual(_dlpack.DLTensor.ndim.offset, 16)
        self.assertEqual(_dlpack.DLTensor.shape.offset, 24)

    def test_devices(self):
        with gpumem.host_alloc(64) as h, gpumem.malloc(64) as d, gpumem.managed_alloc(64) as m:
            b = gpumem.backend()
            dev = gpumem.get_device()
            want = {
                "host": [(1, 0), (1, 0), (1, 0)],
                "cuda": [(3, 0), (2, dev), (13, dev)],
                "hip": [(11, 0), (10, dev), (10, dev)],
            }[b]
            self.assertEqual([x.__dlpack_device__() for x in (h, d, m)], want)

    def test_unconsumed_capsule_releases(self):
        gc.collect()
        before = _dlpack.live_exports()
        with gpumem.host_alloc(64) as h:
            cap = h.__dlpack__()
            self.assertEqual(type(cap).__name__, "PyCapsule")
            self.assertEqual(_dlpack.live_exports(), before + 1)
            del cap
            self.assertEqual(_dlpack.live_exports(), before)

    def test_versioned_layout_matches_dlpack_h(self):
        # dlpack.h v1.0 on LP64: DLManagedTensorVersioned is 80 bytes, its tensor at 32.
        import ctypes
        V = _dlpack.DLManagedTensorVersioned
        self.assertEqual(ctypes.sizeof(_dlpack.DLPackVersion), 8)
        self.assertEqual(ctypes.sizeof(V), 80)
        self.assertEqual((V.manager_ctx.offset, V.deleter.offset, V.flags.offset, V.dl_tensor.offset),
                         (8, 16, 24, 32))

    def test_capsule_by_max_version(self):
        # The versioned capsule (writable) for DLPack 1.x consumers; the old one for the others.
        with gpumem.host_alloc(64) as h:
            for max_version, name in ((None, "dltensor"), ((0, 8), "dltensor"), ((1, 0), "dltensor_versioned"),
                                      ((1, 3), "dltensor_versioned"), ((2, 0), "dltensor_versioned")):
                cap = h.as_array("float32", (4, 4)).__dlpack__(max_version=max_version)
                self.assertEqual(_capsule_name(cap), name, max_version)
                del cap
            with self.assertRaises(BufferError):
                h.__dlpack__(max_version=1)  # not a (major, minor) pair

    def test_versioned_capsule(self):
        import ctypes
        gc.collect()
        before = _dlpack.live_exports()
        with gpumem.host_alloc(64) as h:
            cap = h.as_array("int32", (2, 8)).__dlpack__(max_version=(1, 2))
            p = _capsule_pointer(cap, b"dltensor_versioned")
            m = ctypes.cast(p, ctypes.POINTER(_dlpack.DLManagedTensorVersioned)).contents
            self.assertEqual((m.version.major, m.version.minor), (1, 0))  # at most what was asked
            self.assertEqual(m.flags & _dlpack.FLAG_READ_ONLY, 0, "gpumem memory is writable")
            self.assertEqual(m.flags & _dlpack.FLAG_IS_COPIED, 0, "gpumem never copies")
            t = m.dl_tensor
            self.assertEqual((t.data, t.device.device_type, t.ndim, t.shape[0], t.shape[1]),
                             (h.ptr, h.__dlpack_device__()[0], 2, 2, 8))
            self.assertEqual((t.dtype.code, t.dtype.bits, t.dtype.lanes), (0, 32, 1))
            self.assertEqual(_dlpack.live_exports(), before + 1)
            # A consumer renames the capsule and calls the deleter once.
            set_name = ctypes.pythonapi["PyCapsule_SetName"]
            set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
            set_name(cap, _dlpack._USED_NAME_VERSIONED)
            m.deleter(ctypes.cast(p, ctypes.POINTER(_dlpack.DLManagedTensorVersioned)))
            self.assertEqual(_dlpack.live_exports(), before)
            del cap  # consumed: its destructor calls nothing more
            self.assertEqual(_dlpack.live_exports(), before)
            # Unconsumed, it releases from its own destructor.
            cap = h.__dlpack__(max_version=(1, 0))
            self.assertEqual(_dlpack.live_exports(), before + 1)
            del cap
            self.assertEqual(_dlpack.live_exports(), before)

    def test_refusals(self):
        with gpumem.host_alloc(64) as h:
            with self.assertRaises(BufferError):
                h.__dlpack__(copy=True)
            with self.assertRaises(BufferError):
                h.__dlpack__(dl_device=(99, 0))
            with self.assertRaises(TypeError):
                h.as_array(">f4").__dlpack__()


@unittest.skipUnless(HAVE_NUMPY, "NumPy not installed (python3-numpy)")
class TestNumPy(GpumemTestCase):
    def test_from_dlpack_no_copy(self):
        import numpy
        with gpumem.host_alloc(64) as a:
            a.memset(7)
            x = numpy.from_dlpack(a)
            self.assertEqual((x.shape, x.dtype), ((64,), numpy.uint8))
            self.assertEqual(x.ctypes.data, a.ptr)  # the same memory
            self.assertTrue((x == 7).all())
            y = numpy.from_dlpack(a.as_array("float32", (4, 4)))
            self.assertEqual((y.shape, y.dtype, y.ctypes.data), ((4, 4), numpy.float32, a.ptr))
            del x, y
            gc.collect()

    def test_from_dlpack_writable(self):
        # NumPy asks for DLPack 1.0 from 2.1 on and honours its read-only flag from 2.2.5 on;
        # before, every array it makes from a capsule is read-only (numpy.asarray is writable).
        import numpy
        with gpumem.host_alloc(64) as a:
            x = numpy.from_dlpack(a.as_array("float32", (4, 4)))
            self.assertEqual(x.ctypes.data, a.ptr)
            if _numpy_version() < (2, 2, 5):
                self.assertFalse(x.flags.writeable)
                self.skipTest("NumPy %s makes read-only arrays of any DLPack capsule" % numpy.__version__)
            self.assertTrue(x.flags.writeable)
            x[:] = 2.0
            self.assertEqual(a.to_bytes(4), bytes(bytearray([0, 0, 0, 64])))
            del x

    def test_array_interface_and_views(self):
        import numpy
        with gpumem.managed_alloc(32) as m:
            x = numpy.asarray(m)
            self.assertEqual((x.dtype, x.shape, x.ctypes.data), (numpy.uint8, (32,), m.ptr))
            x[:] = 3  # writable
            self.assertEqual(m.to_bytes(2), b"\x03\x03")
            z = numpy.asarray(m.as_array("int32"))
            self.assertEqual((z.shape, int(z[0])), ((8,), 0x03030303))
            self.assertEqual(bytes(m), b"\x03" * 32)
            del x, z

    @unittest.skipUnless(gpumem.backend() == "host", "device memory is host memory only on the host backend")
    def test_device_kinds_on_host_backend(self):
        import numpy
        for make in (gpumem.malloc, gpumem.malloc_async, lambda n: gpumem.Buffer(n)):
            with make(64) as d:
                self.assertEqual(numpy.from_dlpack(d).ctypes.data, d.ptr)
                self.assertEqual(numpy.asarray(d).ctypes.data, d.ptr)

    @unittest.skipUnless(ON_GPU, "only device memory on a GPU backend is not host-accessible")
    def test_device_memory_refused(self):
        import numpy
        with gpumem.malloc(64) as d:
            with self.assertRaises(ValueError):
                numpy.asarray(d)


@unittest.skipUnless(sys.version_info >= (3, 12), "the buffer protocol in Python needs 3.12 (__buffer__)")
class TestBufferProtocol(GpumemTestCase):
    def test_memoryview(self):
        with gpumem.host_alloc(16) as h:
            mv = memoryview(h)
            mv[:2] = b"hi"
            self.assertEqual(h.to_bytes(2), b"hi")
            mv.release()


@unittest.skipUnless(ON_GPU and _optional("torch") is not None, "PyTorch and a GPU backend needed")
class TestTorch(GpumemTestCase):
    def test_from_dlpack(self):
        import torch
        with gpumem.malloc(64) as d:
            t = torch.from_dlpack(d.as_array("float32"))
            self.assertEqual((t.device.type, t.data_ptr(), t.numel()), ("cuda", d.ptr, 16))
            t.fill_(2.0)
            torch.cuda.synchronize()
            self.assertEqual(d.to_bytes(4), bytes(bytearray([0, 0, 0, 64])))
            del t


@unittest.skipUnless(gpumem.backend() == "cuda" and _optional("cupy") is not None, "CuPy and the CUDA backend needed")
class TestCuPy(GpumemTestCase):
    def test_from_dlpack(self):
        import cupy
        with gpumem.malloc(64) as d:
            x = cupy.from_dlpack(d.as_array("float32"))
            self.assertEqual((x.data.ptr, x.size), (d.ptr, 16))
            x.fill(2.0)
            cupy.cuda.runtime.deviceSynchronize()
            self.assertEqual(d.to_bytes(4), bytes(bytearray([0, 0, 0, 64])))
            del x


if __name__ == "__main__":
    unittest.main()
