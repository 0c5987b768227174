"""close() while views of the memory are alive: the object closes at once, the memory is freed
when the last NumPy array, DLPack tensor or memoryview made from it goes (gpumem/_exports.py).
Before, close() freed it under them: a read crashed the interpreter with GPUMEM_PINNED_CACHE=0,
and with the cache a write through the stale view landed in the next host_alloc."""
import gc
import os
import subprocess
import sys
import unittest

import gpumem
from gpumem import _dlpack

from support import DISABLED, HAVE_NUMPY, GpumemTestCase

PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(gpumem.__file__)))


def live_bytes(kind):
    return gpumem.stats().current_bytes[kind]


class ViewsTestCase(GpumemTestCase):
    def assertFreedWhenDropped(self, kind, make_view, size=64, make=None):
        """make_view(obj) -> a view; obj is closed while the view lives, then the view dropped."""
        make = make or {"host_pinned": gpumem.host_alloc, "device": gpumem.malloc,
                        "managed": gpumem.managed_alloc}[kind]
        before = live_bytes(kind)
        with make(size) as obj:
            view = make_view(obj)
        self.assertTrue(obj.closed)
        self.assertEqual(live_bytes(kind), before + size, "freed while a view is alive")
        self.assertStatus(gpumem.ERROR_INVALID_POINTER, obj.to_bytes)  # the object is closed
        del view
        gc.collect()
        self.assertEqual(live_bytes(kind), before, "not freed once the last view went")


class TestCloseWaitsForViews(ViewsTestCase):
    def test_memoryview(self):
        def view(h):
            mv = h.as_memoryview()
            mv[:4] = b"live"
            return mv
        self.assertFreedWhenDropped("host_pinned", view)

    def test_released_memoryview(self):
        before = live_bytes("host_pinned")
        h = gpumem.host_alloc(64)
        mv = h.as_memoryview()
        part = mv[8:16]
        h.close()
        mv.release()
        self.assertEqual(live_bytes("host_pinned"), before + 64)  # part still views it
        self.assertEqual(bytes(part), bytes(8))
        part.release()
        self.assertEqual(live_bytes("host_pinned"), before)

    def test_unconsumed_capsule(self):
        before = _dlpack.live_exports()
        self.assertFreedWhenDropped("host_pinned", lambda h: h.__dlpack__())
        self.assertEqual(_dlpack.live_exports(), before)

    def test_several_views(self):
        before = live_bytes("host_pinned")
        h = gpumem.host_alloc(64)
        views = [h.as_memoryview(), h.as_array("int32").__dlpack__(), h.as_memoryview()]
        h.close()
        h.close()  # a second close changes nothing
        while views:
            self.assertEqual(live_bytes("host_pinned"), before + 64)
            views.pop()
            gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before)

    def test_no_views_frees_at_once(self):
        before = live_bytes("host_pinned")
        h = gpumem.host_alloc(64)
        mv = h.as_memoryview()
        del mv
        h.close()
        self.assertEqual(live_bytes("host_pinned"), before)

    def test_gc_of_the_object_alone(self):
        before = live_bytes("host_pinned")
        h = gpumem.host_alloc(64)
        mv = h.as_memoryview()
        del h
        gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before + 64)  # the view holds the object
        mv.release()
        del mv
        gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before)

    def test_closed_object_makes_no_new_views(self):
        h = gpumem.host_alloc(64)
        view = h.as_array("uint8")
        mv = h.as_memoryview()
        h.close()
        for make in (h.as_memoryview, view.__dlpack__, lambda: view.__array_interface__):
            with self.assertRaises(gpumem.GpumemError):
                make()
        del mv

    def test_buffer_resize_waits_for_no_views(self):
        with gpumem.Buffer(4096, max_size=1 << 20) as b:
            mv = b.as_memoryview()
            with self.assertRaisesRegex(BufferError, r"cannot resize .*1 NumPy array\(s\), DLPack tensor\(s\)"):
                b.resize(1 << 16)
            self.assertEqual(b.size, 4096)
            mv.release()
            b.resize(1 << 16)
            self.assertEqual(b.size, 1 << 16)

    @unittest.skipIf("vmm" in DISABLED, "VMM disabled")
    def test_unmap_waits_for_no_views(self):
        g = gpumem.mem_granularity()
        with gpumem.AddressRange(g) as r, gpumem.PhysicalMemory(g) as m:
            r.map(m)
            mv = r.as_memoryview()
            with self.assertRaises(BufferError):
                r.unmap(0)
            mv.release()
            r.unmap(0)

    def test_failed_deferred_free_is_raised_by_the_next_call(self):
        # An Allocation over an address gpumem never gave out: its free fails.  The failure
        # happens when the last view goes, where Python cannot raise it.
        fake = gpumem.Allocation(0x1000, 64, gpumem.KIND_DEVICE)
        cap = fake.as_array("uint8").__dlpack__()
        fake.close()
        del cap
        gc.collect()
        with self.assertRaises(gpumem.GpumemError) as cm:
            gpumem.get_device()
        self.assertEqual(cm.exception.status, gpumem.ERROR_INVALID_POINTER)
        if sys.version_info >= (3, 11):
            self.assertIn("waited for its last export", " ".join(cm.exception.__notes__))
        gpumem.get_device()  # raised once


@unittest.skipUnless(HAVE_NUMPY, "NumPy not installed (python3-numpy)")
class TestNumPyArraysOutliveWith(ViewsTestCase):
    def test_asarray(self):
        def view(h):
            a = __import__("numpy").asarray(h)
            a[:] = 7
            return a
        self.assertFreedWhenDropped("host_pinned", view)
        self.assertFreedWhenDropped("device", view)  # host memory on the host backend
        self.assertFreedWhenDropped("managed", view)

    def test_from_dlpack_in_a_with_block(self):
        # The README's example: x made inside the block is used after it.
        import numpy
        before = live_bytes("host_pinned")
        with gpumem.host_alloc(1 << 20) as h:
            h.memset(0)
            x = numpy.from_dlpack(h.as_array("float32", (512, 512)))
        self.assertEqual(float(x.sum()), 0.0)
        self.assertEqual(live_bytes("host_pinned"), before + (1 << 20))
        del x
        gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before)

    def test_as_numpy_and_views_of_views(self):
        import numpy
        before = live_bytes("host_pinned")
        with gpumem.host_alloc(64) as h:
            a = h.as_numpy("int32", (4, 4))
            b = numpy.asarray(h.as_array("int16"))[2:6]
        c = a[1:3].T  # views of the arrays keep the memory too
        del a
        gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before + 64)
        del b
        gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before + 64)
        c[:] = 1
        del c
        gc.collect()
        self.assertEqual(live_bytes("host_pinned"), before)

    def test_array_interface_is_writable_and_zero_copy(self):
        import numpy
        with gpumem.host_alloc(64) as h:
            a = numpy.asarray(h.as_array("float32", (4, 4)))
            self.assertEqual(a.ctypes.data, h.ptr)
            self.assertTrue(a.flags.writeable)
            a[0, 0] = 1.5
            self.assertEqual(numpy.frombuffer(h.to_bytes(4), numpy.float32)[0], 1.5)
            del a

    def test_stale_view_does_not_write_into_the_next_allocation(self):
        # With the pinned cache, the block of a freed host_alloc goes to the next one of the
        # same size: it must not be handed out while an array still points at it.
        import numpy
        with gpumem.host_alloc(4096) as h:
            a = numpy.asarray(h)
        with gpumem.host_alloc(4096) as h2:
            self.assertNotEqual(h2.ptr, a.ctypes.data)
            h2.memset(0)
            a[:] = 0xAB
            self.assertEqual(h2.to_bytes(), bytes(4096))
        del a

    def test_no_crash_without_the_pinned_cache(self):
        code = ("import gpumem, numpy\n"
                "with gpumem.host_alloc(64) as h:\n"
                "    a = numpy.asarray(h)\n"
                "    a[:] = 5\n"
                "print(a[:4].tolist())\n")
        env = dict(os.environ, GPUMEM_PINNED_CACHE="0", PYTHONPATH=PKG_DIR)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "[5, 5, 5, 5]")


if __name__ == "__main__":
    unittest.main()
