"""Seeing memory from Python: kind names and gpumem.snapshot() (docs/semantics.md, "Snapshots")."""
import threading
import unittest

import gpumem

from support import GpumemTestCase


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


if __name__ == "__main__":
    unittest.main()
