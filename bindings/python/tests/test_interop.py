"""DLPack, __array_interface__ and the buffer protocol: NumPy on any backend; PyTorch and CuPy
where they are installed and the backend is a GPU one (they skip otherwise)."""
import gc
import sys
import unittest

import gpumem
from gpumem import _dlpack

from support import HAVE_NUMPY, GpumemTestCase

ON_GPU = gpumem.backend() in ("cuda", "hip")


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
