"""Seeing memory from Python: kind names and gpumem.snapshot() (docs/semantics.md, "Snapshots")."""
import threading
import unittest

import gpumem

from support import DISABLED, GpumemTestCase


class TestSnapshot(GpumemTestCase):
    def test_kind_names(self):
        self.assertEqual([gpumem.kind_name(k) for k in range(gpumem.KIND_COUNT)], list(gpumem.KIND_NAMES))
        self.assertEqual(gpumem.kind_name(-1), "unknown")
        self.assertEqual(gpumem.kind_name(gpumem.KIND_COUNT), "unknown")

    def test_snapshot_lists_live_allocations(self):
        with gpumem.malloc(4096) as dev, gpumem.host_alloc(8192) as pinned, gpumem.malloc_async(300000) as so:
            snap = gpumem.snapshot()
            self.assertEqual(snap["gpumem_snapshot"], 1)
            self.assertEqual(snap["backend"], "host")
            self.assertGreaterEqual(len(snap["devices"]), 1)
            by_ptr = {int(a["ptr"], 16): a for a in snap["allocations"]}
            ptrs = [int(a["ptr"], 16) for a in snap["allocations"]]
            self.assertEqual(ptrs, sorted(ptrs))
            for alloc, kind, memory in ((dev, "device", "device"), (pinned, "host_pinned", "pinned"),
                                        (so, "stream_ordered", "device")):
                a = by_ptr[alloc.ptr]
                self.assertEqual((a["bytes"], a["kind"], a["memory"]), (alloc.size, kind, memory))
                self.assertEqual(a["thread"], threading.get_native_id())
                self.assertNotIn("backtrace", a)  # GPUMEM_BACKTRACE is unset
            self.assertIsNotNone(by_ptr[so.ptr]["pool"])
            # The backed bytes of gpumem's own pools' segments are exactly what each pool reserved.
            pools = {p["pool"]: p for p in snap["pools"]}
            held = {}
            for seg in snap["segments"]:
                held[seg["pool"]] = held.get(seg["pool"], 0) + seg["backed"]
                self.assertLessEqual(seg["backed"], seg["bytes"])
                self.assertLessEqual(sum(b["bytes"] for b in seg["free_blocks"]), seg["bytes"])
            for pool, total in held.items():
                self.assertEqual(pools[pool]["reserved"], total)
            self.assertIn(by_ptr[so.ptr]["pool"], held)  # the host backend's pools are gpumem's own
        after = {int(a["ptr"], 16) for a in gpumem.snapshot()["allocations"]}
        self.assertFalse(after & {dev.ptr, pinned.ptr, so.ptr}, "freed allocations are still listed")



class TestSummaryAndEmptyCache(GpumemTestCase):
    def test_memory_summary(self):
        with gpumem.malloc(3000) as d, gpumem.malloc_async(5000):
            text = gpumem.memory_summary()
            self.assertIsInstance(text, str)
            self.assertIn("backend host", text)
            self.assertIn(gpumem.LIBRARY_PATH, text)
            self.assertIn("device 0 (", text)
            st = gpumem.stats()
            rows = {line.split()[0]: line.split() for line in text.splitlines() if line.split()}
            self.assertIn("device", rows)
            self.assertIn("stream_ordered", rows)
            self.assertEqual(int(rows["device"][-2]), st.alloc_count["device"])
            self.assertEqual(int(rows["device"][-1]), st.free_count["device"])
            for kind in gpumem.KIND_NAMES:  # kinds never used are left out
                self.assertEqual(kind in rows, bool(st.alloc_count[kind] or st.peak_bytes[kind]), kind)
            pool = "0x%x" % gpumem.Pool.current().handle
            self.assertIn(pool, text)
            live = len(gpumem.snapshot()["allocations"])
            self.assertIn("live allocations: %d," % live, text)
            self.assertGreaterEqual(live, 2)
            del d

    def test_empty_cache_trims_every_pool(self):
        # Pools keep what they free up to their release threshold; empty_cache gives it back,
        # from the current pool and from a pool made here alike.
        current = gpumem.Pool.current()
        threshold = current.release_threshold
        with gpumem.Pool() as mine, gpumem.Stream() as s:
            try:
                for pool in (mine, current):
                    pool.release_threshold = (1 << 64) - 1
                    blocks = [pool.malloc(1 << 20, stream=s) for _ in range(4)]
                    for b in blocks:
                        b.close()
                with current.malloc(1000, stream=s) as live:
                    s.synchronize()
                    held = {"mine": mine.reserved_mem_current, "current": current.reserved_mem_current}
                    self.assertTrue(all(held.values()), held)
                    given = gpumem.empty_cache()
                    # Other pools of the process may give back too.
                    self.assertGreaterEqual(given, held["mine"] + held["current"] - current.reserved_mem_current)
                    self.assertEqual(mine.reserved_mem_current, 0)
                    self.assertLess(current.reserved_mem_current, held["current"])
                    self.assertEqual(gpumem.pointer_info(live).kind, "stream_ordered")  # live memory stays
                    live.memset(1)
                    self.assertEqual(live.to_bytes(2), b"\x01\x01")
                self.assertGreaterEqual(gpumem.empty_cache(), 0)
            finally:
                current.release_threshold = threshold

if __name__ == "__main__":
    unittest.main()
