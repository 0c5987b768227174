"""Allocation kinds, copies between every kind of operand, zero-copy views, finalisers."""
import array
import ctypes
import gc
import unittest

import gpumem

from support import HAVE_NUMPY, GpumemTestCase, DISABLED

ALLOCATORS = {
    "device": lambda n: gpumem.malloc(n),
    "host_pinned": lambda n: gpumem.host_alloc(n),
    "host_pinned_mapped": lambda n: gpumem.host_alloc(n, gpumem.HOST_MAPPED | gpumem.HOST_PORTABLE),
    "managed": lambda n: gpumem.managed_alloc(n),
    "stream_ordered": lambda n: gpumem.malloc_async(n),
}


class TestAllocations(GpumemTestCase):
    def test_backend_is_host(self):
        self.assertEqual(gpumem.backend(), "host")
        self.assertGreaterEqual(gpumem.device_count(), 1)
        self.assertEqual(gpumem.get_device(), 0)
        free, total = gpumem.mem_get_info()
        self.assertGreater(total, 0)
        self.assertLessEqual(free, total)

    def test_each_kind_alloc_copy_free(self):
        payload = bytes(range(256)) * 16
        for name, make in ALLOCATORS.items():
            with self.subTest(kind=name):
                before = gpumem.stats()
                a = make(len(payload))
                kind = a.kind
                self.assertEqual(a.size, len(payload))
                self.assertNotEqual(a.ptr, 0)
                info = gpumem.pointer_info(a)
                self.assertEqual(info.kind, kind)
                self.assertEqual(info.base, a.ptr)
                self.assertEqual(info.alloc_size, len(payload))
                self.assertEqual(gpumem.pointer_info(a.ptr + 10).base, a.ptr)  # interior pointer
                gpumem.memcpy(a, payload)
                self.assertEqual(a.to_bytes(), payload)
                a.memset(7, 16)
                self.assertEqual(a.to_bytes(17), b"\x07" * 16 + payload[16:17])
                mid = gpumem.stats()
                self.assertEqual(mid.alloc_count[kind] - before.alloc_count[kind], 1)
                a.close()
                self.assertTrue(a.closed)
                a.close()  # a second close does nothing
                after = gpumem.stats()
                self.assertEqual(after.free_count[kind] - before.free_count[kind], 1)
                self.assertEqual(after.current_bytes[kind], before.current_bytes[kind])

    def test_device_to_device_and_context_managers(self):
        with gpumem.malloc(64) as a, gpumem.malloc(64) as b:
            gpumem.memset(a, 0x5A)
            gpumem.memcpy(b, a)
            self.assertEqual(b.to_bytes(), b"\x5a" * 64)
            gpumem.memcpy(b.ptr + 8, a.ptr, 8)  # plain addresses
        self.assertTrue(a.closed and b.closed)

    def test_size_zero(self):
        a = gpumem.malloc(0)
        self.assertEqual(a.ptr, 0)
        a.close()

    def test_buffer_protocol_operands(self):
        with gpumem.malloc(32) as d:
            for src in (b"a" * 32, bytearray(b"b" * 32), memoryview(b"c" * 32), array.array("i", [0x64646464] * 8)):
                with self.subTest(src=type(src).__name__):
                    gpumem.memcpy(d, src)
                    out = bytearray(32)
                    gpumem.memcpy(out, d)
                    self.assertEqual(bytes(out), bytes(memoryview(src).cast("B")))
            dst = array.array("d", [0.0] * 4)
            gpumem.memcpy(dst, d)
            self.assertEqual(dst.tobytes(), b"d" * 32)
            mv = memoryview(bytearray(64))[8:40]
            gpumem.memcpy(mv, d)
            self.assertEqual(bytes(mv), b"d" * 32)

    def test_bad_operands(self):
        with gpumem.malloc(16) as d:
            with self.assertRaises(TypeError):
                gpumem.memcpy(b"read-only destination", d, 4)
            with self.assertRaises(TypeError):
                gpumem.memcpy(d, memoryview(bytearray(32))[::2])  # not contiguous
            with self.assertRaises(ValueError):
                gpumem.memcpy(d, b"x" * 17)  # does not fit
            with self.assertRaises(ValueError):
                gpumem.memcpy(d.ptr, d.ptr)  # no size known
            with self.assertRaises(TypeError):
                gpumem.memcpy(d, 1.5)

    def test_memoryview_is_zero_copy(self):
        for name in ("host_pinned", "managed", "device"):  # device memory is host memory on the host backend
            with self.subTest(kind=name), ALLOCATORS[name](4096) as a:
                mv = a.as_memoryview()
                self.assertEqual(len(mv), 4096)
                self.assertFalse(mv.readonly)
                mv[0:4] = b"abcd"
                self.assertEqual(a.to_bytes(4), b"abcd")  # written through the view, read by gpumem
                gpumem.memcpy(a.ptr + 100, b"xyz", 3)
                self.assertEqual(bytes(mv[100:103]), b"xyz")  # written by gpumem, seen in the view
                buf_addr = ctypes.addressof(ctypes.c_char.from_buffer(mv))
                self.assertEqual(buf_addr, a.ptr)
                del mv

    def test_view_keeps_allocation_alive(self):
        a = gpumem.host_alloc(128)
        ptr = a.ptr
        mv = a.as_memoryview()
        del a
        gc.collect()
        self.assertEqual(gpumem.pointer_info(ptr).kind, "host_pinned")  # not freed: the view holds it
        mv[0] = 1
        del mv
        gc.collect()
        self.assertEqual(gpumem.pointer_info(ptr).kind, "unknown")

    def test_closed_allocation_refuses_use(self):
        a = gpumem.malloc(16)
        a.close()
        self.assertStatus(gpumem.ERROR_INVALID_POINTER, a.as_memoryview)
        self.assertStatus(gpumem.ERROR_INVALID_POINTER, a.to_bytes)

    @unittest.skipUnless(HAVE_NUMPY, "NumPy not installed")
    def test_numpy(self):
        import numpy as np
        x = np.arange(256, dtype=np.float32)
        with gpumem.malloc(x.nbytes) as d, gpumem.host_alloc(x.nbytes) as h:
            gpumem.memcpy(d, x)
            gpumem.memcpy(h, d)
            v = h.as_numpy(np.float32, (16, 16))
            np.testing.assert_array_equal(v.ravel(), x)
            v[0, 0] = 42
            self.assertEqual(np.frombuffer(h.to_bytes(4), np.float32)[0], 42)
            y = np.empty_like(x)
            gpumem.memcpy(y, h)
            self.assertEqual(y[0], 42)
            ro = np.arange(4, dtype=np.int64)
            ro.flags.writeable = False
            gpumem.memcpy(d, ro)  # read-only source is fine

    @unittest.skipIf(HAVE_NUMPY, "NumPy installed")
    def test_as_numpy_without_numpy(self):
        with gpumem.host_alloc(16) as h, self.assertRaises(ImportError):
            h.as_numpy("float32")


class TestFinalisers(GpumemTestCase):
    def test_close_then_gc_frees_once(self):
        for name, make in ALLOCATORS.items():
            with self.subTest(kind=name):
                before = gpumem.stats()
                a = make(4096)
                kind = a.kind
                a.close()
                b = make(4096)  # may well reuse a's address
                del a
                gc.collect()
                self.assertEqual(gpumem.pointer_info(b).kind, kind, "b was freed by a's finaliser")
                after = gpumem.stats()
                self.assertEqual(after.free_count[kind] - before.free_count[kind], 1)
                b.close()

    def test_gc_frees(self):
        before = gpumem.stats()
        a = gpumem.malloc(1000)
        ptr = a.ptr
        del a
        gc.collect()
        self.assertEqual(gpumem.pointer_info(ptr).kind, "unknown")
        self.assertEqual(gpumem.stats().free_count["device"] - before.free_count["device"], 1)

    def test_other_objects_close_then_gc(self):
        makers = [gpumem.Stream, gpumem.Event, gpumem.Pool, lambda: gpumem.Buffer(4096)]
        for make in makers:
            o = make()
            o.close()
            o.close()
            self.assertTrue(o.closed)
            del o
            gc.collect()

    def test_freed_outside_the_bindings_is_reported_not_crashing(self):
        a = gpumem.malloc(64)
        gpumem.lib.gpumem_free(a.ptr)
        self.assertStatus(gpumem.ERROR_INVALID_POINTER, a.close)
        self.assertTrue(a.closed)

    @unittest.skipIf("pools" in DISABLED, "finalize resets the pools; one run is enough")
    def test_finalize_kills_old_objects_without_double_free(self):
        a = gpumem.malloc(256)
        s = gpumem.Stream()
        gpumem.finalize()
        b = gpumem.malloc(256)  # a fresh library: may reuse a's address
        a.close()               # must not free b
        s.close()
        del a, s
        gc.collect()
        self.assertEqual(gpumem.pointer_info(b).kind, "device")
        b.close()


if __name__ == "__main__":
    unittest.main()


class TestBatch(GpumemTestCase):
    """gpumem_memcpy_batch_async, gpumem_prefetch_batch_async, gpumem_discard_batch_async."""

    def test_memcpy_batch_round_trip(self):
        payloads = [bytes([i]) * (64 + 100 * i) for i in range(8)]
        with gpumem.malloc(8 * 4096) as dev, gpumem.Stream() as s:
            slots = [dev.ptr + 4096 * i for i in range(8)]
            gpumem.memcpy_batch_async([(slots[i], payloads[i], len(payloads[i])) for i in range(8)], s)
            back = [bytearray(len(p)) for p in payloads]
            gpumem.memcpy_batch_async([(back[i], slots[i], len(payloads[i])) for i in range(8)], s)
            s.synchronize()
            self.assertEqual([bytes(b) for b in back], payloads)
        gpumem.memcpy_batch_async([])  # nothing to do
        # the host backend makes one call per entry
        self.assertEqual(gpumem.device_info(0).batch_memops, gpumem.SUPPORT_EMULATED)

    def test_memcpy_batch_names_the_bad_entry(self):
        with gpumem.malloc(256) as dev:
            out = bytearray(b"\x11" * 64)
            with self.assertRaises(gpumem.GpumemError) as cm:
                gpumem.memcpy_batch_async([(out, dev.ptr, 64), (dev.ptr + 250, b"x" * 64, 64)])
            self.assertEqual(cm.exception.status, gpumem.ERROR_INVALID_VALUE)
            self.assertIn("entry 1", str(cm.exception))
            gpumem.device_synchronize()
            self.assertEqual(out, bytearray(b"\x11" * 64))  # nothing was enqueued
            with self.assertRaises(ValueError):
                gpumem.memcpy_batch_async([(out,)])

    def test_prefetch_and_discard_batch(self):
        if gpumem.device_info(0).managed_memory == gpumem.SUPPORT_NONE:
            self.skipTest("no managed memory")
        with gpumem.managed_alloc(8192) as m:
            gpumem.memcpy(m, b"\x42" * 8192)
            gpumem.prefetch_batch_async([(m, 0, 4096), (m.ptr + 4096, gpumem.DEVICE_HOST, 4096)])
            gpumem.device_synchronize()
            self.assertEqual(gpumem.range_attribute(m.ptr + 4096, gpumem.RANGE_LAST_PREFETCH_LOCATION, 4096),
                             gpumem.DEVICE_HOST)
            gpumem.discard_batch_async([m, (m.ptr, 4096)])
            gpumem.device_synchronize()
            gpumem.memcpy(m, b"\x07" * 8192)  # still valid memory
            self.assertEqual(m.to_bytes(), b"\x07" * 8192)
            with gpumem.malloc(64) as dev:
                with self.assertRaises(gpumem.GpumemError) as cm:
                    gpumem.discard_batch_async([m, (dev, 64)])
                self.assertIn("entry 1", str(cm.exception))
                with self.assertRaises(gpumem.GpumemError) as cm:
                    gpumem.prefetch_batch_async([(m, 0), (m, gpumem.device_count())])
                self.assertEqual(cm.exception.status, gpumem.ERROR_INVALID_DEVICE)


class TestDmaBuf(GpumemTestCase):
    """export_dmabuf and the 0.4 device-info fields (the host backend has no dma-buf)."""

    def test_device_info_fields(self):
        info = gpumem.device_info(0)
        self.assertEqual(info.dmabuf, gpumem.SUPPORT_NONE)
        self.assertEqual(info.fabric_handles, gpumem.SUPPORT_NONE)
        self.assertEqual(gpumem.HANDLE_FABRIC, 0x2)

    def test_export_refused_on_the_host_backend(self):
        with gpumem.malloc(1 << 20) as a:
            aligned = (a.ptr + 4095) // 4096 * 4096
            with self.assertRaises(gpumem.GpumemError) as caught:
                gpumem.export_dmabuf(aligned, 4096)
            self.assertEqual(caught.exception.status, gpumem.ERROR_NOT_SUPPORTED)
            self.assertIn("dma-buf", caught.exception.message)
            with self.assertRaises(gpumem.GpumemError) as caught:
                gpumem.export_dmabuf(aligned + 256, 4096)
            self.assertEqual(caught.exception.status, gpumem.ERROR_INVALID_VALUE)
            self.assertIn("not aligned to the host page size", caught.exception.message)
            with self.assertRaises(gpumem.GpumemError) as caught:
                gpumem.export_dmabuf(aligned, 0)
            self.assertEqual(caught.exception.status, gpumem.ERROR_INVALID_VALUE)
            self.assertIn("size is 0", caught.exception.message)
