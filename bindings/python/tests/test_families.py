"""Streams and events, pools, managed memory, VMM, growable buffers, host registration, tracing."""
import gc
import sys
import unittest

import gpumem

from support import DISABLED, GpumemTestCase


class TestStreamsEvents(GpumemTestCase):
    def test_stream_work_and_events(self):
        with gpumem.Stream() as s, gpumem.Event() as e0, gpumem.Event() as e1:
            self.assertNotEqual(s.handle, 0)
            self.assertNotEqual(s.native, 0)
            e0.record(s)
            with gpumem.malloc(1 << 16) as d:
                src = bytes(range(256)) * 256
                gpumem.memcpy_async(d, src, stream=s)
                gpumem.memset_async(d, 1, 16, stream=s)
                e1.record(s)
                s.synchronize()
                self.assertTrue(s.query())
                e1.synchronize()
                self.assertTrue(e1.query())
                self.assertEqual(d.to_bytes(20), b"\x01" * 16 + src[16:20])
            self.assertGreaterEqual(gpumem.elapsed_ms(e0, e1), 0.0)
            self.assertGreaterEqual(e0.elapsed_ms(e1), 0.0)
            with gpumem.Stream() as t:
                t.wait_event(e1)
                ev = t.record()
                ev.synchronize()
                ev.close()
        gpumem.device_synchronize()

    def test_wrap(self):
        with gpumem.Stream.wrap(0x1234) as w:
            self.assertEqual(w.native, 0x1234)
            w.synchronize()

    def test_closed_stream_and_event_are_invalid_handles(self):
        s = gpumem.Stream()
        s.close()
        self.assertStatus(gpumem.ERROR_INVALID_HANDLE, s.synchronize)
        e = gpumem.Event()
        e.close()
        self.assertStatus(gpumem.ERROR_INVALID_HANDLE, e.record)

    def test_stream_ordered_on_a_stream_outliving_its_stream(self):
        s = gpumem.Stream()
        a = gpumem.malloc_async(1024, stream=s)
        self.assertEqual(a.kind, "stream_ordered")
        gpumem.memset_async(a, 3, stream=s)
        s.close()      # the allocation is then freed on the default stream
        a.close()


class TestPeerAccess(GpumemTestCase):
    """The single-device answers (the host backend has one device)."""

    def test_single_device_answers(self):
        n = gpumem.device_count()
        cur = gpumem.get_device()
        self.assertFalse(gpumem.can_access_peer(cur, cur))
        self.assertStatus(gpumem.ERROR_INVALID_DEVICE, gpumem.can_access_peer, n, 0)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.enable_peer_access, cur)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.disable_peer_access, cur)
        self.assertStatus(gpumem.ERROR_INVALID_DEVICE, gpumem.enable_peer_access, n)
        self.assertStatus(gpumem.ERROR_INVALID_DEVICE, gpumem.disable_peer_access, -1)
        if gpumem.backend() == "host":
            self.assertEqual(n, 1)
        elif n > 1:
            other = 1 if cur == 0 else 0
            if gpumem.can_access_peer(cur, other):
                gpumem.enable_peer_access(other)
                gpumem.enable_peer_access(other)  # idempotent
                gpumem.disable_peer_access(other)
                gpumem.disable_peer_access(other)


class TestWorkarounds(GpumemTestCase):
    """gpumem_workarounds_get: none on the host backend; pairs of non-empty strings elsewhere."""

    def test_list(self):
        items = gpumem.workarounds()
        self.assertIsInstance(items, list)
        if gpumem.backend() == "host":
            self.assertEqual(items, [])
        for name, description in items:
            self.assertTrue(name)
            self.assertIn("workaround: ", description)


class TestPools(GpumemTestCase):
    def test_default_and_current_pool(self):
        d = gpumem.Pool.default()
        self.assertEqual(d, gpumem.Pool.current())
        self.assertFalse(d.owned)
        d.close()  # not owned: nothing happens
        self.assertEqual(gpumem.Pool.default(), d)

    def test_pool_attributes_and_stats(self):
        before = gpumem.stats()
        with gpumem.Pool(max_size=0) as p, gpumem.Stream() as s:
            self.assertTrue(p.owned)
            for attr in ("reuse_follow_event_dependencies", "reuse_allow_opportunistic",
                         "reuse_allow_internal_dependencies"):
                self.assertTrue(getattr(p, attr), attr)
                setattr(p, attr, False)
                self.assertFalse(getattr(p, attr), attr)
                setattr(p, attr, True)
            self.assertEqual(p.release_threshold, 0)
            p.release_threshold = 64 << 20
            self.assertEqual(p.release_threshold, 64 << 20)
            allocs = [p.malloc(1 << 20, stream=s) for _ in range(4)]
            self.assertGreaterEqual(p.used_mem_current, 4 << 20)
            self.assertGreaterEqual(p.reserved_mem_current, p.used_mem_current)
            self.assertGreaterEqual(p.used_mem_high, 4 << 20)
            info = gpumem.pointer_info(allocs[0])
            self.assertEqual(info.kind, "stream_ordered")
            self.assertEqual(info.pool, p.handle)
            for a in allocs:
                a.close()
            s.synchronize()
            self.assertEqual(p.used_mem_current, 0)
            self.assertGreater(p.reserved_mem_current, 0)  # kept: threshold 64 MiB
            p.used_mem_high = 0
            self.assertEqual(p.used_mem_high, 0)
            p.trim(0)
            self.assertEqual(p.reserved_mem_current, 0)
            p.reserved_mem_high = 0
            self.assertEqual(p.reserved_mem_high, 0)
            self.assertEqual(p.get_access(), gpumem.ACCESS_READWRITE)
            p.set_access([(0, gpumem.ACCESS_READWRITE)])
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, p.set_access, [(0, gpumem.ACCESS_READ)])
        after = gpumem.stats()
        self.assertEqual(after.alloc_count["stream_ordered"] - before.alloc_count["stream_ordered"], 4)
        self.assertEqual(after.free_count["stream_ordered"] - before.free_count["stream_ordered"], 4)
        self.assertEqual(after.fallback_count - before.fallback_count, 4 if "pools" in DISABLED else 0)

    def test_make_current(self):
        default = gpumem.Pool.default()
        with gpumem.Pool() as p:
            p.make_current()
            self.assertEqual(gpumem.Pool.current(), p)
            with gpumem.malloc_async(100) as a:
                self.assertEqual(gpumem.pointer_info(a).pool, p.handle)
            default.make_current()
        self.assertEqual(gpumem.Pool.current(), default)

    def test_pools_of_pinned_and_managed_memory(self):
        info = gpumem.device_info()
        for memory, level in ((gpumem.POOL_MEMORY_PINNED, info.pinned_pools),
                              (gpumem.POOL_MEMORY_MANAGED, info.managed_pools)):
            if level == gpumem.SUPPORT_NONE:
                self.assertStatus(gpumem.ERROR_NOT_SUPPORTED, gpumem.Pool, memory=memory)
                continue
            with gpumem.Pool(memory=memory) as p, gpumem.Stream() as s:
                a = p.malloc(4096, stream=s)
                s.synchronize()
                self.assertEqual(gpumem.pointer_info(a).memory, memory)
                self.assertEqual(gpumem.pointer_info(a).pool, p.handle)
                view = a.as_memoryview()  # host memory: a zero-copy view
                view[:4] = b"pool"
                self.assertEqual(a.to_bytes(4), b"pool")
                self.assertEqual(p.get_access(), gpumem.ACCESS_READWRITE)
                self.assertStatus(gpumem.ERROR_NOT_SUPPORTED, p.set_access, [(0, gpumem.ACCESS_NONE)])
                del view
                a.close()
            d = gpumem.get_default_pool_for(memory)
            self.assertFalse(d.owned)
            self.assertEqual(d, gpumem.Pool.default_for(memory))
            self.assertNotEqual(d, gpumem.Pool.default())
        self.assertEqual(gpumem.get_default_pool_for(gpumem.POOL_MEMORY_DEVICE), gpumem.Pool.default())
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.Pool, memory=7)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.Pool, numa_node=0)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.get_default_pool_for, 7)
        with gpumem.malloc(16) as a:
            self.assertEqual(gpumem.pointer_info(a).memory, gpumem.POOL_MEMORY_DEVICE)
        self.assertEqual(gpumem.pointer_info(0x1000).memory, gpumem.POOL_MEMORY_UNKNOWN)

    def test_default_pool_cannot_be_destroyed(self):
        st = gpumem.lib.gpumem_pool_destroy(gpumem.Pool.default().handle)
        self.assertEqual(st, gpumem.ERROR_INVALID_VALUE)

    def test_stats_peak_reset(self):
        with gpumem.malloc(1 << 20):
            pass
        gpumem.reset_peak_stats()
        st = gpumem.stats()
        self.assertEqual(st.peak_bytes["device"], st.current_bytes["device"])
        self.assertGreaterEqual(st.total_alloc_count, st.total_free_count)


class TestManaged(GpumemTestCase):
    def test_advice_prefetch_and_range_attributes(self):
        with gpumem.managed_alloc(1 << 16) as m, gpumem.Stream() as s:
            info = m.info()
            self.assertEqual(info.kind, "managed")
            self.assertEqual(info.emulated, "managed" in DISABLED)
            self.assertEqual(m.range_attribute(gpumem.RANGE_READ_MOSTLY), 0)
            m.advise(gpumem.ADVISE_SET_READ_MOSTLY, 0)
            self.assertEqual(m.range_attribute(gpumem.RANGE_READ_MOSTLY), 1)
            m.advise(gpumem.ADVISE_SET_PREFERRED_LOCATION, gpumem.DEVICE_HOST)
            self.assertEqual(m.range_attribute(gpumem.RANGE_PREFERRED_LOCATION), gpumem.DEVICE_HOST)
            m.advise(gpumem.ADVISE_SET_ACCESSED_BY, 0)
            self.assertEqual(m.range_attribute(gpumem.RANGE_ACCESSED_BY), [0])
            self.assertEqual(m.range_attribute(gpumem.RANGE_LAST_PREFETCH_LOCATION), gpumem.LOCATION_INVALID)
            m.prefetch(0, stream=s)
            s.synchronize()
            self.assertEqual(m.range_attribute(gpumem.RANGE_LAST_PREFETCH_LOCATION), 0)
            got = gpumem.range_attributes(m, [gpumem.RANGE_READ_MOSTLY, gpumem.RANGE_ACCESSED_BY,
                                              gpumem.RANGE_LAST_PREFETCH_LOCATION])
            self.assertEqual(got, {gpumem.RANGE_READ_MOSTLY: 1, gpumem.RANGE_ACCESSED_BY: [0],
                                   gpumem.RANGE_LAST_PREFETCH_LOCATION: 0})
            # half the range differs: the whole-range answer is "no location"
            gpumem.advise(m.ptr, gpumem.ADVISE_SET_PREFERRED_LOCATION, 0, count=4096)
            self.assertEqual(m.range_attribute(gpumem.RANGE_PREFERRED_LOCATION), gpumem.LOCATION_INVALID)
            m.advise(gpumem.ADVISE_SET_COARSE_GRAIN, 0)  # AMD only; SUCCESS elsewhere
            gpumem.stream_attach(s, m, 0, gpumem.ATTACH_SINGLE)
            s.synchronize()
            m.as_memoryview()[:3] = b"abc"
            self.assertEqual(m.to_bytes(3), b"abc")

    def test_managed_errors(self):
        with gpumem.malloc(4096) as d:
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.advise, d, gpumem.ADVISE_SET_READ_MOSTLY, 0)
        with gpumem.managed_alloc(4096) as m:
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, m.advise, 12345, 0)
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, m.range_attribute, 99)
            self.assertStatus(gpumem.ERROR_INVALID_DEVICE, m.advise, gpumem.ADVISE_SET_ACCESSED_BY, 99)
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.stream_attach, None, m, 0, 0)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.managed_alloc, 16, gpumem.ATTACH_SINGLE)


class TestVmm(GpumemTestCase):
    def test_reserve_map_access(self):
        native = gpumem.device_info().virtual_memory == gpumem.SUPPORT_NATIVE
        self.assertEqual(native, "vmm" not in DISABLED)
        if not native:
            self.assertStatus(gpumem.ERROR_NOT_SUPPORTED, gpumem.PhysicalMemory, 1 << 21)
            return
        g = gpumem.mem_granularity()
        self.assertGreater(g, 0)
        self.assertGreaterEqual(gpumem.mem_granularity(recommended=True), g)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.PhysicalMemory, g + 1)
        with gpumem.AddressRange(4 * g) as r, gpumem.PhysicalMemory(g) as m1, gpumem.PhysicalMemory(g) as m2:
            self.assertEqual(r.ptr % g, 0)
            r.map(m1, 0)
            r.map(m2, g)
            self.assertEqual(r.get_access(), gpumem.ACCESS_READWRITE)
            gpumem.memcpy(r.ptr, b"first", 5)
            gpumem.memcpy(r.ptr + g, b"second", 6)
            self.assertEqual(gpumem.pointer_info(r.ptr + g).kind, "virtual")
            mv = r.as_memoryview()
            self.assertEqual(bytes(mv[:5]), b"first")
            del mv
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, r.map, m1, g)  # already mapped there
            r.unmap(g)
            self.assertEqual(gpumem.lib.gpumem_free(r.ptr), gpumem.ERROR_INVALID_POINTER)
            m1.close()  # still mapped: lives until unmapped
            self.assertEqual(gpumem.memcpy(bytearray(5), r.ptr, 5), None)
        # close() unmapped m1 and freed the range


class TestBuffers(GpumemTestCase):
    def test_grow_shrink_keeps_bytes(self):
        with gpumem.Buffer(4096, max_size=1 << 26) as b:
            self.assertEqual(b.size, 4096)
            self.assertEqual(b.data, b.ptr)
            gpumem.memcpy(b, b"\xab" * 4096)
            b.resize(1 << 22)
            self.assertEqual(b.size, 1 << 22)
            self.assertEqual(b.to_bytes(4096), b"\xab" * 4096)
            info = gpumem.pointer_info(b.data)
            self.assertEqual(info.kind, "buffer")
            self.assertEqual(info.emulated, "vmm" in DISABLED)
            b.resize(100)
            self.assertEqual(b.to_bytes(), b"\xab" * 100)
            self.assertEqual(bytes(b.as_memoryview()[:2]), b"\xab\xab")
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, b.resize, (1 << 26) + 1)
            self.assertEqual(gpumem.lib.gpumem_free(b.data), gpumem.ERROR_INVALID_POINTER)
        self.assertStatus(gpumem.ERROR_INVALID_HANDLE, b.resize, 10)


class TestHostRegisterAndTrace(GpumemTestCase):
    def test_register(self):
        if "host_register" in DISABLED:
            self.skipTest("host_register disabled")
        buf = bytearray(1 << 16)
        with gpumem.HostRegistration(buf) as r:
            self.assertEqual(gpumem.pointer_info(r.ptr).kind, "host_registered")
            with self.assertRaises(BufferError):
                buf.extend(b"x")  # the registration holds the export
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.HostRegistration, buf)  # overlaps
        buf.extend(b"x")
        self.assertEqual(gpumem.lib.gpumem_host_unregister(r.ptr), gpumem.ERROR_INVALID_POINTER)
        with self.assertRaises(TypeError):
            gpumem.HostRegistration(b"read-only")

    def test_trace_callback(self):
        seen = []
        gpumem.set_trace_callback(seen.append)
        try:
            a = gpumem.malloc(333)
            ptr = a.ptr
            a.close()
        finally:
            gpumem.set_trace_callback(None)
        with gpumem.malloc(10):
            pass
        self.assertEqual([(r.op, r.kind, r.ptr, r.bytes) for r in seen],
                         [("alloc", "device", ptr, 333), ("free", "device", ptr, 333)])
        gc.collect()

    def test_trace_callback_must_be_callable(self):
        with self.assertRaisesRegex(TypeError, r"set_trace_callback\(\): fn must be callable .* not int"):
            gpumem.set_trace_callback(5)
        with gpumem.malloc(10):  # nothing was set
            pass

    def test_exception_in_trace_callback_is_raised_by_the_call(self):
        # ctypes cannot pass an exception through the C library: it used to print "Exception
        # ignored" and go on.  It is kept and raised when the gpumem call returns.
        calls = []

        def callback(record):
            calls.append(record.op)
            if record.op == "alloc" and len(calls) == 1:
                raise ZeroDivisionError("in the callback")
        before = gpumem.stats()
        gpumem.set_trace_callback(callback)
        try:
            with self.assertRaisesRegex(ZeroDivisionError, "in the callback") as cm:
                gpumem.malloc(48)
            if sys.version_info >= (3, 11):
                self.assertIn("trace callback", " ".join(cm.exception.__notes__))
            # The allocation the call made is freed, not leaked, and nothing is left to raise.
            del cm
            gc.collect()
            self.assertEqual(calls, ["alloc", "free"])
            after = gpumem.stats()
            self.assertEqual(after.current_bytes["device"], before.current_bytes["device"])
            with gpumem.malloc(16):
                pass
        finally:
            gpumem.set_trace_callback(None)

    def test_callback_that_always_raises_can_be_removed(self):
        def callback(record):
            raise ValueError(record.op)
        gpumem.set_trace_callback(callback)
        try:
            with self.assertRaisesRegex(ValueError, "alloc") as cm:
                gpumem.malloc(16)
            if sys.version_info >= (3, 11):  # the free of the dropped allocation raised too
                self.assertIn("1 later exception dropped", " ".join(cm.exception.__notes__))
        finally:
            gpumem.set_trace_callback(None)
        with gpumem.malloc(16):
            pass

    def test_exception_outside_a_call_is_raised_by_the_next(self):
        a = gpumem.malloc(16)

        def callback(record):
            raise KeyError(record.op)
        gpumem.set_trace_callback(callback)
        try:
            del a  # freed by its finaliser, not in a gpumem call
            gc.collect()
            with self.assertRaisesRegex(KeyError, "free"):
                gpumem.get_device()
        finally:
            gpumem.set_trace_callback(None)
        gpumem.get_device()


if __name__ == "__main__":
    unittest.main()
