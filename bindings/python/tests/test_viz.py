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

from support import SOURCE_ROOT, GpumemTestCase, source_file

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
        self.assertTrue(meta["cut_short"])
        # Cut between two lines: nothing skipped, but the page still says the trace is cut.
        with open(cut, "w") as f:
            f.write("\n".join(lines[:101]) + "\n")
        meta = gpumem.viz.build_model(gpumem.viz.load(cut))["meta"]
        self.assertEqual((meta["events"], meta["skipped_lines"], meta["cut_short"]), (100, 0, True))
        self.assertFalse(gpumem.viz.build_model(gpumem.viz.load(fixture("trace-training.json")))["meta"]["cut_short"])
        # A line that does not parse anywhere else is malformed, not skipped.
        with open(cut, "w") as f:
            f.write("\n".join(lines[:50] + [lines[50][:30]] + lines[51:]))
        with self.assertRaisesRegex(gpumem.viz.VizError, r"cut\.json:51:\d+: malformed event: "):
            gpumem.viz.load(cut)

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

    # The trace rules of gpumem-replay(1), "TRACE RULES", with its messages: the page never
    # draws what the replay refuses (tests/replay checks both programs give the same answer).

    def training_with(self, edit):
        """trace-training.json with its first stream-ordered allocation's line (N, returned with
        the path and that line's text) replaced by edit(event as a dict) or, a str, by it."""
        with open(fixture("trace-training.json")) as f:
            lines = f.read().split("\n")
        n = next(i for i, l in enumerate(lines) if '"name":"alloc"' in l and '"stream_ordered"' in l)
        event = json.loads(lines[n].rstrip(","))
        text = edit if isinstance(edit, str) else json.dumps(edit(event), separators=(",", ":")) + ","
        path = self.out("bad.json")
        with open(path, "w") as f:
            f.write("\n".join(lines[:n] + [text] + lines[n + 1:]))
        return path, n + 1, text

    def assert_refused(self, path, message):
        with self.assertRaises(gpumem.viz.VizError) as cm:
            gpumem.viz.build_model(gpumem.viz.load(path), path)
        self.assertRegex(str(cm.exception), "^" + re.escape(path) + ":" + message)
        return str(cm.exception)

    def test_deeply_nested_line_is_refused(self):
        path, line, text = self.training_with("[" * 10000 + "]" * 10000 + ",")
        self.assert_refused(path, r"%d:33: malformed event: nested too deeply: more than 32 arrays and objects "
                                  r"one inside another$" % line)
        r = subprocess.run([sys.executable, "-m", "gpumem.viz", path, "-o", self.out("deep.html")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "gpumem-viz: %s:%d:33: malformed event: nested too deeply: more than 32 arrays "
                                   "and objects one inside another\n" % (path, line))
        self.assertFalse(os.path.exists(self.out("deep.html")))

        def nested(depth):
            def edit(e):
                e["args"]["x"] = "@"
                return e
            path, line, text = self.training_with(edit)
            deep = text.replace('"@"', "[" * depth + "]" * depth)
            return self.training_with(deep)
        path, line, text = nested(30)     # the event and its args are 2: 32 in all
        gpumem.viz.build_model(gpumem.viz.load(path), path)
        path, line, text = nested(31)
        self.assert_refused(path, r"%d:%d: malformed event: nested too deeply" % (line, text.index('"x":') + 5 + 30))

    def test_byte_counts_are_whole_numbers_in_range(self):
        for bad in ("-1", "-4096", "1e23", "1E3", "1.5", "1.0", "9007199254740992", "true", '"8"', "null", "[]"):
            path, line, text = self.training_with(lambda e: dict(e, args=dict(e["args"], bytes="@")))
            path, line, text = self.training_with(text.replace('"@"', bad))
            self.assert_refused(path, r"%d:%d: malformed event: args\.bytes is not a byte count: a whole number "
                                      r"from 0 to 2\^53 - 1" % (line, text.index('"bytes":') + 9))
        for good in (0, 2 ** 53 - 1):
            path, line, text = self.training_with(lambda e: dict(e, args=dict(e["args"], bytes=good)))
            gpumem.viz.build_model(gpumem.viz.load(path))

    def test_addresses_and_handles_as_gpumem_writes_them(self):
        path, line, text = self.training_with(lambda e: e)
        ptr = json.loads(text.rstrip(","))["args"]["ptr"]
        for bad in ("0X" + ptr[2:], "0x0" + ptr[2:], "0x" + ptr[2:].upper(), ptr[2:], "0x", "0x1" + "0" * 16, "0x-1",
                    int(ptr, 16), None, ""):
            path, line, text = self.training_with(lambda e: dict(e, args=dict(e["args"], ptr=bad)))
            self.assert_refused(path, r"%d:%d: malformed event: args\.ptr is not an address as gpumem writes it" %
                                (line, text.index('"ptr":') + 7))
        for key, bad in (("stream", "0x0"), ("stream", "0X1"), ("stream", 7), ("pool", "0x01"), ("pool", [1])):
            path, line, text = self.training_with(lambda e: dict(e, args=dict(e["args"], **{key: bad})))
            self.assert_refused(path, r"%d:%d: malformed event: args\.%s is neither null" %
                                (line, text.index('"%s":' % key) + len(key) + 4, key))
        # No stream at all: the column of the args that lack it.
        path, line, text = self.training_with(lambda e: dict(e, args={k: v for k, v in e["args"].items()
                                                                      if k != "stream"}))
        self.assert_refused(path, r"%d:%d: malformed event: args\.stream" % (line, text.index('"args":') + 8))
        # ptr 0x0 is no address: counted, not drawn, as before.
        path, line, text = self.training_with(lambda e: dict(e, args=dict(e["args"], ptr="0x0")))
        meta = gpumem.viz.build_model(gpumem.viz.load(path))["meta"]
        self.assertEqual(meta["no_address"], 1)

    def test_alloc_of_a_live_address_is_refused(self):
        with open(fixture("trace-training.json")) as f:
            lines = f.read().split("\n")
        n = next(i for i, l in enumerate(lines) if '"name":"alloc"' in l)
        path = self.out("twice.json")
        with open(path, "w") as f:
            f.write("\n".join(lines[:n + 1] + [lines[n]] + lines[n + 1:]))
        self.assert_refused(path, r"%d:%d: malformed trace: alloc of 0x[0-9a-f]+, which is live already \(allocated "
                                  r"on line %d and not freed since\)$" % (n + 2, lines[n].index('"ptr":') + 7, n + 1))

    def test_fields_only_the_page_reads(self):
        # ts, pool events, counters, out-of-memory events and backtraces: an error, never a traceback.
        path, line, text = self.training_with(lambda e: dict(e, ts="soon"))
        self.assert_refused(path, r"%d:%d: malformed event: ts is not a number" % (line, text.index('"ts":') + 6))
        path, line, text = self.training_with(lambda e: dict(e, ts="@"))
        path, line, text = self.training_with(text.replace('"@"', "NaN"))
        self.assert_refused(path, r"%d:%d: malformed event: expected a value \(NaN is not JSON\)" %
                            (line, text.index("NaN") + 1))
        path, line, text = self.training_with(lambda e: dict(e, args=dict(e["args"], backtrace=7)))
        self.assert_refused(path, r"%d:\d+: malformed event: args\.backtrace is not an array of strings" % line)
        for event, message in (
                ({"name": "pool_grow", "args": {"pool": "0x1", "reserved": -1}}, r"args\.reserved is not a byte count"),
                ({"name": "trim", "args": {"pool": {"a": 1}}}, r"args\.pool is neither null"),
                ({"name": "oom", "args": {"bytes": 1e30}}, r"args\.bytes is not a byte count"),
                ({"name": "pool 0xA reserved", "ph": "C", "args": {"reserved": 1}}, r"a pool counter is named"),
                ({"name": "pool 0xa reserved", "ph": "C", "args": {"used": "x"}}, r"args\.used is not a byte count"),
                ({"name": "sync", "args": []}, r'no "args" object'),
                ({"name": 7}, r'no "name" string'),
                ([1], r"an event is a JSON object")):
            path, line, text = self.training_with(json.dumps(event) + ",")
            self.assert_refused(path, r"%d:\d+: malformed event: %s" % (line, message))

    def test_header_and_whole_documents(self):
        bad = self.out("bad.json")
        with open(bad, "w") as f:
            f.write('{"otherData":{"gpumem_trace":2},"traceEvents":[\n]}\n')
        with self.assertRaisesRegex(gpumem.viz.VizError, r"bad\.json:1:30: not a GPUMEM_TRACE file: no "
                                                         r"otherData\.gpumem_trace = 1$"):
            gpumem.viz.load(bad)
        with open(bad, "w") as f:   # a Chrome trace of another program
            json.dump({"traceEvents": [{"name": "x", "ts": 1}]}, f, indent=1)
        with self.assertRaisesRegex(gpumem.viz.VizError, "not a gpumem trace: no otherData.gpumem_trace = 1"):
            gpumem.viz.load(bad)
        # A trace re-indented (json.tool): its events are named by their place in traceEvents.
        events = events_of(fixture("trace-training.json"))
        k = next(i for i, e in enumerate(events) if e["name"] == "alloc")
        events[k]["args"]["bytes"] = -1
        with open(bad, "w") as f:
            json.dump({"otherData": {"gpumem_trace": 1}, "traceEvents": events}, f, indent=1)
        with self.assertRaisesRegex(gpumem.viz.VizError, r"bad\.json: traceEvents\[%d\]: malformed event: "
                                                         r"args\.bytes is not a byte count" % k):
            gpumem.viz.build_model(gpumem.viz.load(bad), bad)
        with open(bad, "w") as f:
            f.write("[" * 100000 + "]" * 100000)
        with self.assertRaisesRegex(gpumem.viz.VizError, "nests arrays and objects too deeply"):
            gpumem.viz.load(bad)

    def test_malformed_snapshot(self):
        with open(fixture("snapshot.json")) as f:
            snap = json.load(f)
        for edit, message in ((lambda d: d["allocations"][1].update(bytes=-1), r"allocations\[1\]\.bytes is not a byte"),
                              (lambda d: d["allocations"][0].update(ptr="0X1"), r"allocations\[0\]\.ptr is not an addr"),
                              (lambda d: d["segments"][0]["free_blocks"].append({"offset": 1.5, "bytes": 1}),
                               r"segments\[0\]\.free_blocks\[\d+\]\.offset is not a byte count"),
                              (lambda d: d["pools"][0].update(pool=[1]), r"pools\[0\]\.pool is not a handle"),
                              (lambda d: d.update(allocations={"a": 1}), r"allocations is not an array of objects")):
            doc = json.loads(json.dumps(snap))
            edit(doc)
            with self.assertRaisesRegex(gpumem.viz.VizError, r"^snap\.json: malformed snapshot: " + message):
                gpumem.viz.build_model(doc, "snap.json")

    def test_version(self):
        r = subprocess.run([sys.executable, "-m", "gpumem.viz", "--version"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "gpumem-viz (gpumem) %s\n" % gpumem.__version__, ""))
        self.assertEqual(gpumem.viz.__version__, gpumem.__version__)

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


class TestPageFiles(GpumemTestCase):
    """The page's HTML and script are the package files viz.html and viz.js, found by the
    module and by the standalone command in each form it is installed in (gpumem/viz.py,
    _page_dirs): beside viz.py, in <prefix>/share/gpumem beside a meson install's bin folder
    (also through a link to the command), and in the gpumem package Python would import."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpumem-viz-files-")
        self.addCleanup(self.tmp.cleanup)
        self.package = os.path.dirname(os.path.abspath(gpumem.viz.__file__))
        snapshot = fixture("snapshot.json")
        self.expected = gpumem.viz.render_html(gpumem.viz.build_model(gpumem.viz.load(snapshot), snapshot))

    def command(self, prefix, with_share=True):
        """A meson install's layout: the command as a copy of viz.py in PREFIX/bin and, unless
        with_share is False, the page files in PREFIX/share/gpumem.  Returns the command's path."""
        os.makedirs(os.path.join(prefix, "bin"))
        script = os.path.join(prefix, "bin", "gpumem-viz")
        with open(gpumem.viz.__file__, "rb") as f, open(script, "wb") as g:
            g.write(f.read())
        os.chmod(script, 0o755)
        if with_share:
            share = os.path.join(prefix, "share", "gpumem")
            os.makedirs(share)
            for name in gpumem.viz._PAGE_FILES:
                with open(os.path.join(self.package, name), "rb") as f, open(os.path.join(share, name), "wb") as g:
                    g.write(f.read())
        return script

    def run_command(self, script, python_path=None):
        """The command on the snapshot fixture, without the package on Python's path unless
        python_path is given (-S: nor site-packages): (exit status, stderr, page or None)."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if python_path:
            env["PYTHONPATH"] = python_path
        out = os.path.join(self.tmp.name, "page.html")
        if os.path.exists(out):
            os.unlink(out)
        r = subprocess.run([sys.executable, "-S", script, fixture("snapshot.json"), "-o", out],
                           capture_output=True, text=True, env=env, timeout=120)
        page = None
        if os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                page = f.read()
        return r.returncode, r.stderr, page

    def test_page_files_are_package_files(self):
        for name in gpumem.viz._PAGE_FILES:
            self.assertTrue(os.path.isfile(os.path.join(self.package, name)), name)
        with open(os.path.join(self.package, "viz.js"), encoding="utf-8") as f:
            self.assertNotIn("</script", f.read().lower())  # it is inlined into a <script> element
        page = gpumem.viz.render_html({"type": "snapshot", "source": "{{data}} {{script}} </script>"})
        self.assertIn("<title>gpumem-viz: {{data}} {{script}} &lt;/script&gt;</title>", page)
        self.assertEqual(page.count('<script id="gpumem-data"'), 1)

    def test_installed_with_every_install(self):
        # meson installs them in the package and, for the gpumem-viz command, in
        # <datadir>/gpumem; `pip install ./bindings/python` puts them in its wheel.
        build = source_file("bindings", "python", "meson.build")
        pyproject = source_file("bindings", "python", "pyproject.toml")
        for name in gpumem.viz._PAGE_FILES:
            self.assertEqual(len(re.findall(r"'gpumem/%s'" % re.escape(name), build)), 2, name)
            self.assertRegex(pyproject, r'(?m)^gpumem = \[.*"%s"' % re.escape(name))
        self.assertIn("install_dir : get_option('datadir') / 'gpumem'", build)

    def test_command_of_a_meson_install(self):
        script = self.command(os.path.join(self.tmp.name, "prefix"))
        self.assertEqual(self.run_command(script), (0, "", self.expected))

    def test_command_through_a_link(self):
        script = self.command(os.path.join(self.tmp.name, "prefix"))
        os.makedirs(os.path.join(self.tmp.name, "links"))
        link = os.path.join(self.tmp.name, "links", "gpumem-viz")
        os.symlink(script, link)
        self.assertEqual(self.run_command(link), (0, "", self.expected))

    def test_command_finds_the_package(self):
        # An install whose data folder is not <prefix>/share: the package on Python's path.
        script = self.command(os.path.join(self.tmp.name, "prefix"), with_share=False)
        self.assertEqual(self.run_command(script, python_path=os.path.dirname(self.package)), (0, "", self.expected))

    def test_command_without_its_files(self):
        prefix = os.path.join(self.tmp.name, "prefix")
        script = self.command(prefix, with_share=False)
        rc, err, page = self.run_command(script)
        self.assertEqual((rc, page), (1, None))
        self.assertRegex(err, r"^gpumem-viz: the page's files viz.html and viz.js are missing .*; searched ")
        self.assertIn(os.path.join(prefix, "share", "gpumem"), err)


if __name__ == "__main__":
    unittest.main()
