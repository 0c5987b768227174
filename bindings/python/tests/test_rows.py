"""Streams and events as programs create them, and rows and boxes (gpumem/_rows.py, 0.5)."""
import ctypes
import struct
import threading
import unittest

import gpumem

from support import GpumemTestCase


class TestStreamsAndEvents(GpumemTestCase):
    def test_stream_flags_and_priority(self):
        least, greatest = gpumem.stream_priority_range()
        self.assertGreaterEqual(least, greatest)
        with gpumem.create_stream(gpumem.STREAM_NON_BLOCKING, greatest - 3) as s:
            self.assertEqual(gpumem.stream_flags(s), gpumem.STREAM_NON_BLOCKING)
            self.assertEqual(gpumem.stream_priority(s), greatest)  # clamped
            self.assertEqual(gpumem.stream_device(s), gpumem.get_device())
        self.assertEqual(gpumem.stream_flags(None), gpumem.STREAM_DEFAULT)
        self.assertEqual(gpumem.stream_priority(), 0)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.create_stream, 0x2)
        with self.assertRaises(OverflowError):
            gpumem.create_stream(0, 1 << 31)

    def test_event_flags(self):
        with gpumem.create_event(gpumem.EVENT_DISABLE_TIMING) as e, gpumem.Event() as t:
            e.record()
            t.record()
            e.synchronize()
            self.assertTrue(e.query())
            err = self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.elapsed_ms, t, e)
            self.assertIn("DISABLE_TIMING", str(err))
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.create_event, gpumem.EVENT_INTERPROCESS)

    def test_ipc_event_handle(self):
        if gpumem.device_support()["ipc_events"] == gpumem.SUPPORT_NONE:
            self.skipTest("no IPC events here")
        with gpumem.create_event(gpumem.EVENT_INTERPROCESS | gpumem.EVENT_DISABLE_TIMING) as e:
            h = gpumem.ipc_event_handle(e)
            self.assertEqual(len(h), 64)
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.open_ipc_event, h)  # made in this process
        with gpumem.Event() as plain:
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.ipc_event_handle, plain)
        with self.assertRaises(ValueError):
            gpumem.open_ipc_event(b"short")

    def test_launch_host_func(self):
        seen = []
        done = threading.Event()
        with gpumem.create_stream(gpumem.STREAM_NON_BLOCKING) as s, gpumem.malloc(4096) as d:
            host = bytearray(4096)
            gpumem.memset_async(d, 7, stream=s)
            gpumem.memcpy_async(host, d, stream=s)

            def fn(user):
                seen.append((user, host[0], host[4095]))
                done.set()
            gpumem.launch_host_func(fn, s, "hello")
            s.synchronize()
        self.assertTrue(done.is_set())
        self.assertEqual(seen, [("hello", 7, 7)])
        with self.assertRaises(TypeError):
            gpumem.launch_host_func(42)

    def test_host_func_exception_is_raised_later(self):
        def boom(_user):
            raise RuntimeError("from the host function")
        with self.assertRaisesRegex(RuntimeError, "from the host function"):
            gpumem.launch_host_func(boom)
            gpumem.device_synchronize()

    def test_device_support(self):
        support = gpumem.device_support()
        self.assertEqual(set(support), {"rows", "stream_priorities", "host_funcs", "ipc_events"})
        if gpumem.backend() == "host":
            self.assertEqual(support["rows"], gpumem.SUPPORT_EMULATED)


class TestRows(GpumemTestCase):
    def test_pitch_and_2d_copies(self):
        width, height = 100, 9
        d, pitch = gpumem.malloc_pitch(width, height)
        with d:
            self.assertGreaterEqual(pitch, width)
            self.assertEqual(d.kind, "device")
            src = bytes(range(256)) * 4
            src = src[:width * height]
            gpumem.memcpy_2d(d, pitch, src, width, width, height)
            back = bytearray(width * height)
            with gpumem.Stream() as s:
                gpumem.memcpy_2d_async(back, width, d, pitch, width, height, s)
                s.synchronize()
            self.assertEqual(bytes(back), src)
            gpumem.memset_2d(d, pitch, 0x11, width, height)
            gpumem.memcpy_2d(back, width, d, pitch, width, height)
            self.assertEqual(bytes(back), b"\x11" * (width * height))
            err = self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.memcpy_2d, d, width - 1, src, width, width, 2)
            self.assertIn("dpitch", str(err))
            with self.assertRaises(ValueError):  # rows past the destination's end
                gpumem.memcpy_2d(back, width, d, pitch, width, height + 1)

    def test_d16_d32(self):
        with gpumem.malloc(64) as d:
            gpumem.memset_d32(d, 0xDEADBEEF)
            out = bytearray(64)
            gpumem.memcpy(out, d)
            self.assertEqual(struct.unpack("<16I", out), (0xDEADBEEF,) * 16)
            gpumem.memset_d16_async(d, 0xBEEF, 4)
            gpumem.device_synchronize()
            gpumem.memcpy(out, d)
            self.assertEqual(struct.unpack("<4H", out[:8]), (0xBEEF,) * 4)
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.memset_d16, d.ptr + 1, 1, 2)
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.memset_d16, d, 0x10000, 2)
            with self.assertRaises(ValueError):
                gpumem.memset_d32(d, 1, 17)

    def test_memcpy_3d(self):
        src = bytes(i % 251 for i in range(8 * 6 * 4))  # 4 slices of 6 rows of 8 bytes
        dst = bytearray(16 * 5 * 3)                       # 3 slices of 5 rows of 16 bytes
        gpumem.memcpy_3d(dst, src, width=4, height=2, depth=2, dst_pitch=16, dst_height=5, src_pitch=8,
                         src_height=6, dst_pos=(3, 1, 1), src_pos=(2, 3, 1))
        for z in range(2):
            for y in range(2):
                for x in range(4):
                    self.assertEqual(dst[((1 + z) * 5 + 1 + y) * 16 + 3 + x], src[((1 + z) * 6 + 3 + y) * 8 + 2 + x])
        self.assertEqual(sum(dst), sum(dst[((1 + z) * 5 + 1 + y) * 16 + 3 + x]
                                       for z in range(2) for y in range(2) for x in range(4)))
        with self.assertRaises(ValueError):
            gpumem.memcpy_3d(dst, src, 4, 2, 3, 16, 5, 8, 6, dst_pos=(0, 0, 1))  # slice 3 of 3 is past the end
        with self.assertRaises(TypeError):
            gpumem.memcpy_3d(dst, src, 4, 2, 1, 16, 5, 8, 6, dst_pos=5)
        self.assertEqual(ctypes.sizeof(gpumem._lib.Memcpy3D), 128)


if __name__ == "__main__":
    unittest.main()
