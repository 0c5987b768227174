"""gpumem.viz: pages from the trace and snapshot fixtures (tests/data), checked against
figures computed here from the files themselves.  tests/viz loads the pages in a browser."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import gpumem

from support import SOURCE_ROOT, GpumemTestCase

DATA = os.path.join(SOURCE_ROOT, "tests", "data")


def fixture(name):
    path = os.path.join(DATA, name)
    if not os.path.isfile(path):
        raise unittest.SkipTest("%s not found (set GPUMEM_SOURCE_ROOT)" % path)
    return path


def events_of(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def embedded_model(page):
    m = re.search(r'<script id="gpumem-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


class TestViz(GpumemTestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpumem-viz-")
        self.addCleanup(self.tmp.cleanup)

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def test_page_is_self_contained(self):
        out = gpumem.viz(fixture("trace-training.json"), self.out("t.html"))
        self.assertEqual(out, self.out("t.html"))
        with open(out) as f:
            page = f.read()
        self.assertIn('id="gpumem-viz-status" data-status="loading"', page)
        self.assertEqual(re.findall(r'(?:src|href)\s*=\s*["\'](?!data:|#)[^"\']+', page), [])
        self.assertNotIn("http://", page.replace("http-equiv", ""))
        self.assertEqual(embedded_model(page)["type"], "trace")

    def test_default_output_name(self):
        src = self.out("run.json")
        with open(fixture("snapshot.json")) as f, open(src, "w") as g:
            g.write(f.read())
        self.assertEqual(gpumem.viz(src), self.out("run.html"))
        self.assertTrue(os.path.isfile(self.out("run.html")))

    def test_trace_figures_match_the_file(self):
        path = fixture("trace-training.json")
        live, total, peak, allocs, per_kind = {}, 0, 0, 0, {}
        for e in events_of(path):
            if e["name"] == "alloc":
                live[e["args"]["ptr"]] = e["args"]
                total += e["args"]["bytes"]
                allocs += 1
            elif e["name"] == "free":
                total -= live.pop(e["args"]["ptr"])["bytes"]
            peak = max(peak, total)
        for a in live.values():
            per_kind[a["kind"]] = per_kind.get(a["kind"], 0) + a["bytes"]
        model = gpumem.viz.build_model(gpumem.viz.load(path))
        meta = model["meta"]
        self.assertEqual(meta["peak_total"], peak)
        self.assertEqual(meta["counts"]["alloc"], allocs)
        self.assertEqual(meta["live_at_end"], len(live))
        self.assertEqual(meta["live_bytes_at_end"], sum(a["bytes"] for a in live.values()))
        self.assertEqual(meta["unmatched_frees"], 0)
        # The series end at what is live at the end, per kind; downsampling kept the peak.
        for k, name in enumerate(model["kinds"]):
            self.assertEqual(model["series"]["kind"][k][-1], per_kind.get(name, 0), name)
        self.assertEqual(max(model["series"]["total"]), peak)
        # The largest live allocation heads the table, with its backtrace.
        biggest = max(live.values(), key=lambda a: a["bytes"])
        self.assertEqual(model["top"][0]["bytes"], biggest["bytes"])
        self.assertEqual(model["backtraces"][model["top"][0]["bt"]], biggest["backtrace"])
        # Every allocation is drawn as a band, and the bands of one moment never overlap.
        self.assertEqual(len(model["blocks"]), allocs)

        def bottom(b, t):
            p, y = b["p"], b["p"][1]
            for i in range(2, len(p) - 1, 2):
                if p[i] > t:
                    break
                y = p[i + 1]
            return y
        for t in sorted({b["p"][0] for b in model["blocks"]}):
            bands = sorted((bottom(b, t), b["bytes"]) for b in model["blocks"] if b["p"][0] <= t < b["p"][-1])
            top = 0
            for y, n in bands:
                self.assertEqual(y, top, "bands at %s us: a gap or an overlap" % t)
                top = y + n

    def test_out_of_memory_is_marked_with_its_verdict(self):
        # A trace recorded here: an allocation refused by GPUMEM_LIMIT.
        trace = self.out("oom.json")
        code = ("import gpumem\ngpumem.init('host')\na = gpumem.malloc(1 << 20)\n"
                "try:\n    gpumem.malloc(3 << 20)\nexcept gpumem.OutOfMemoryError as e:\n    print(e.verdict)\n"
                "a.free()\ngpumem.finalize()\n")
        env = dict(os.environ, GPUMEM_TRACE=trace, GPUMEM_LIMIT=str(2 << 20), GPUMEM_BACKEND="host")
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(gpumem.__file__)))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        verdict = r.stdout.strip()
        self.assertIn("GPUMEM_LIMIT", verdict)
        ooms = [e for e in events_of(trace) if e.get("name") == "oom"]
        self.assertEqual(len(ooms), 1)
        self.assertEqual(ooms[0]["args"]["bytes"], 3 << 20)
        self.assertEqual(ooms[0]["args"]["kind"], "device")
        self.assertEqual(ooms[0]["args"]["verdict"], verdict)
        page = self.out("oom.html")
        gpumem.viz(trace, page)
        with open(page) as f:
            model = embedded_model(f.read())
        self.assertEqual(model["meta"]["counts"]["oom"], 1)
        self.assertEqual(model["ooms"][0]["verdict"], verdict)
        self.assertEqual(model["ooms"][0]["bytes"], 3 << 20)
        self.assertGreaterEqual(model["ooms"][0]["t"], model["meta"]["t_start"])

    def test_cut_trace(self):
        path = fixture("trace-cut.json")
        seen, unmatched = set(), 0
        for e in events_of(path):
            if e["name"] == "alloc":
                seen.add(e["args"]["ptr"])
            elif e["name"] == "free":
                if e["args"]["ptr"] in seen:
                    seen.discard(e["args"]["ptr"])
                else:
                    unmatched += 1
        self.assertGreater(unmatched, 0, "the fixture should free pointers allocated before its window")
        meta = gpumem.viz.build_model(gpumem.viz.load(path))["meta"]
        self.assertEqual(meta["unmatched_frees"], unmatched)
        self.assertGreater(meta["dropped"], 0)

    def test_snapshot(self):
        path = fixture("snapshot.json")
        with open(path) as f:
            snap = json.load(f)
        model = gpumem.viz.build_model(snap)
        self.assertEqual(model["type"], "snapshot")
        self.assertEqual(sum(model["kind_bytes"]), sum(a["bytes"] for a in snap["allocations"]))
        self.assertEqual(len(model["segments"]), len(snap["segments"]))
        self.assertEqual(model["segments"][0]["holes"],
                         [[b["offset"], b["bytes"]] for b in snap["segments"][0]["free_blocks"]])

    def test_trace_memory_matches_the_file(self):
        path = fixture("trace-training.json")
        pool_memory, allocated, live = {}, {}, {}
        for e in events_of(path):
            args = e["args"]
            if e["name"] in ("pool_grow", "pool_release", "trim"):
                pool_memory.setdefault(args["pool"], args["memory"])
            elif e["name"] == "alloc":
                allocated[args["ptr"]] = args["memory"]
                live[args["ptr"]] = args
            elif e["name"] == "free":
                live.pop(args["ptr"])
        self.assertEqual(set(pool_memory.values()), {"device", "pinned", "managed"},
                         "the fixture should have a pool of each memory")
        per_memory = {}
        for a in live.values():
            per_memory[a["memory"]] = per_memory.get(a["memory"], 0) + a["bytes"]
        model = gpumem.viz.build_model(gpumem.viz.load(path))
        memories = model["memories"]
        for i, pool in enumerate(model["pools"]):
            self.assertEqual(model["pool_memory"][i], pool_memory.get(pool), pool)
        for b in model["blocks"]:
            self.assertEqual(memories[b["memory"]], allocated[b["ptr"]], b["ptr"])
        for r in model["top"]:
            self.assertEqual(memories[r["memory"]], live[r["ptr"]]["memory"], r["ptr"])
        # The series per memory end at what is live at the end.
        for k, name in enumerate(memories):
            self.assertEqual(model["series"]["memory"][k][-1], per_memory.get(name, 0), name)
        self.assertEqual([memories[k] for k in model["memories_used"]],
                         [m for m in memories if m in set(allocated.values())])

    def test_snapshot_memory_matches_the_file(self):
        with open(fixture("snapshot.json")) as f:
            snap = json.load(f)
        listed = {p["pool"]: p["memory"] for p in snap["pools"]}
        self.assertEqual(set(listed.values()), {"device", "pinned", "managed"},
                         "the fixture should have a pool of each memory")
        model = gpumem.viz.build_model(snap)
        memories = model["memories"]
        for i, pool in enumerate(model["pools"]):
            self.assertEqual(model["pool_memory"][i], listed.get(pool), pool)
        per_memory = {}
        for a in snap["allocations"]:
            per_memory[a["memory"]] = per_memory.get(a["memory"], 0) + a["bytes"]
        for k, name in enumerate(memories):
            self.assertEqual(model["memory_bytes"][k], per_memory.get(name, 0), name)
        by_ptr = {a["ptr"]: a["memory"] for a in snap["allocations"]}
        self.assertGreater(len(model["top"]), 0)
        for r in model["top"]:
            self.assertEqual(memories[r["memory"]], by_ptr[r["ptr"]], r["ptr"])

    def test_pool_memory_from_its_blocks(self):
        # A pool with no pool event in the trace (a vendor pool grows out of sight) is named by
        # its blocks' memory; one nothing names stays unnamed; an event without memory is "unknown".
        def event(name, ts, args, ph="i"):
            return {"name": name, "ph": ph, "s": "t", "ts": ts, "pid": 1, "tid": 1, "cat": "gpumem", "args": args}
        doc = {"displayTimeUnit": "ns", "otherData": {"gpumem_trace": 1, "backend": "cuda", "pid": 1, "dropped": 0},
               "traceEvents": [
                   event("alloc", 1.0, {"ptr": "0x1000", "bytes": 4096, "kind": "stream_ordered",
                                        "memory": "managed", "device": 0, "pool": "0xa", "stream": None}),
                   event("alloc", 2.0, {"ptr": "0x2000", "bytes": 512, "kind": "stream_ordered", "device": 0,
                                        "pool": "0xb", "stream": None}),
                   event("pool 0xc reserved", 3.0, {"reserved": 0, "used": 0}, ph="C"),
               ]}
        model = gpumem.viz.build_model(doc)
        named = dict(zip(model["pools"], model["pool_memory"]))
        self.assertEqual(named, {"0xa": "managed", "0xb": None, "0xc": None})
        shown = {b["ptr"]: model["memories"][b["memory"]] for b in model["blocks"]}
        self.assertEqual(shown, {"0x1000": "managed", "0x2000": "unknown"})
        self.assertIn('"pool_memory"', gpumem.viz.render_html(model))

    def test_truncated_trace_read_line_by_line(self):
        with open(fixture("trace-training.json")) as f:
            lines = f.read().split("\n")
        cut = self.out("cut.json")
        with open(cut, "w") as f:   # the process died while writing: no "]}", half a line
            f.write("\n".join(lines[:101]) + "\n" + lines[101][:30])
        meta = gpumem.viz.build_model(gpumem.viz.load(cut))["meta"]
        self.assertEqual(meta["events"], 100)
        self.assertEqual(meta["skipped_lines"], 1)

    def test_large_trace_is_downsampled(self):
        big = self.out("big.json")
        subprocess.run([sys.executable, fixture("make_trace_fixtures.py"), "--trace", big, "--steps", "60"],
                       check=True, timeout=120)
        model = gpumem.viz.build_model(gpumem.viz.load(big))
        self.assertGreater(model["meta"]["events"], 9000)
        self.assertLessEqual(len(model["series"]["t"]), gpumem.viz.SERIES_POINTS + 2)
        self.assertLessEqual(len(model["blocks"]), gpumem.viz.DRAWN_BLOCKS)
        self.assertGreater(model["other"]["count"], 0)

    def test_bad_input(self):
        bad = self.out("bad.json")
        with open(bad, "w") as f:
            f.write("not json at all\n")
        with self.assertRaisesRegex(gpumem.viz.VizError, "not JSON"):
            gpumem.viz(bad, self.out("bad.html"))
        other = self.out("other.json")
        with open(other, "w") as f:
            json.dump({"hello": 1}, f)
        with self.assertRaisesRegex(gpumem.viz.VizError, "neither a gpumem trace"):
            gpumem.viz(other)
        with self.assertRaisesRegex(gpumem.viz.VizError, "cannot read"):
            gpumem.viz(self.out("missing.json"))

    def test_command_line(self):
        out = self.out("cli.html")
        r = subprocess.run([sys.executable, "-m", "gpumem.viz", fixture("trace-cut.json"), "-o", out],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), out)
        self.assertEqual(r.stderr, "")     # no runpy warning: importing gpumem does not import gpumem.viz
        r = subprocess.run([sys.executable, "-m", "gpumem.viz", self.out("missing.json")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertIn("gpumem-viz: cannot read", r.stderr)


if __name__ == "__main__":
    unittest.main()
