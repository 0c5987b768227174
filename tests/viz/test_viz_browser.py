#!/usr/bin/env python3
"""gpumem-viz pages in a real browser (suite 'viz').

    test_viz_browser.py SOURCE_ROOT OUT_DIR [TRACE_WORKLOAD]

Makes pages with ``python3 -m gpumem.viz`` and loads each in headless Chromium: the
page must set its status element to "rendered" with no script error, and the
screenshot of the first page must be a non-trivial PNG (kept in OUT_DIR as
viz-screenshot.png).  The pages: a trace recorded from TRACE_WORKLOAD
(tests/data/trace_workload.c: VMM mappings, a growable buffer, pools of device, pinned
and managed memory, every other kind) run on the host backend with GPUMEM_TRACE and
GPUMEM_BACKTRACE=1 (or the file GPUMEM_VIZ_TRACE names, for a trace recorded elsewhere,
on a GPU), the fixtures of tests/data (recorded from the same program: a whole trace, a
cut trace, a snapshot), and a generated trace of more than 100000 events.

The recorded trace is checked against the program's own count of what it held: every
allocation and free has its address and backtrace, and the page (its data and the summary
and legend Chromium rendered) shows the program's peak, what it left live, and each kind.

Exit 77 (skipped) where no Chromium is installed, unless GPUMEM_VIZ_REQUIRE_BROWSER=1
(.ci/run sets it: CI installs Debian's chromium and must run this test).
SPDX-License-Identifier: MIT
"""
import decimal
import os
import re
import shutil
import json
import struct
import subprocess
import sys
import tempfile
import zlib

WINDOW = (1280, 1700)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def find_browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(exe, profile, *args):
    # --no-sandbox: CI runs as root in a container; a profile of our own: parallel tests.
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           "--user-data-dir=" + profile, "--virtual-time-budget=10000"] + list(args)
    # The sanitizer build preloads libasan for the Python that loads libgpumem: not for the browser.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish in 120 s: %s" % " ".join(cmd))
    return r


def record_trace(workload, tmp):
    """(path, the program's own count) of a trace recorded from trace_workload on the host backend."""
    if not workload or not os.path.isfile(workload):
        fail("no trace_workload program at %r" % workload)
    path = os.path.join(tmp, "recorded-trace.json")
    env = dict(os.environ, GPUMEM_BACKEND="host", GPUMEM_TRACE=path, GPUMEM_BACKTRACE="1")
    env.pop("GPUMEM_TRACE_MAX", None)
    r = subprocess.run([workload], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        fail("%s failed (exit %d): %s" % (workload, r.returncode, r.stderr.decode(errors="replace")))
    m = re.search(r"peak (\d+) bytes live; (\d+) allocations of (\d+) bytes live at exit", out)
    if not m or not os.path.isfile(path):
        fail("%s wrote no trace or no count: %s" % (workload, out))
    return path, {"peak": int(m.group(1)), "live_count": int(m.group(2)), "live_bytes": int(m.group(3)),
                  "vmm": "VMM mapped" in out}


def check_addresses(path):
    """Every allocation and free has a real address and a backtrace; the kinds in the trace."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    kinds, bad = set(), []
    for e in events:
        if e["name"] in ("alloc", "free"):
            a = e["args"]
            kinds.add(a["kind"])
            if not isinstance(a.get("ptr"), str) or int(a["ptr"], 16) == 0 or not a.get("backtrace"):
                bad.append(e)
    if bad:
        fail("%s: %d allocations or frees without their address or backtrace, the first: %s" %
             (path, len(bad), json.dumps(bad[0])))
    return kinds


def without_addresses(src, out):
    """src with its VMM events' addresses and backtraces taken away; the count of them."""
    n = 0
    with open(src) as f, open(out, "w") as g:
        for line in f:
            if '"kind":"virtual"' in line:
                body = line.rstrip().rstrip(",")
                e = json.loads(body)
                e["args"]["ptr"] = "0x0"
                e["args"].pop("backtrace", None)
                line = line.replace(body, json.dumps(e, separators=(",", ":")))
                n += 1
            g.write(line)
    return n


def fmt_bytes(n):
    """The page's fmtBytes (JavaScript's toFixed rounds the exact value half up)."""
    units, v, i = ["B", "KiB", "MiB", "GiB", "TiB"], decimal.Decimal(n), 0
    while v >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    places = 0 if not i else 2 if v < 10 else 1 if v < 100 else 0
    return "%s %s" % (v.quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP), units[i])


def check_recorded_page(page, dom, counted, kinds):
    """The page of the recorded trace shows what the program counted: its data, and the
    summary and legend as Chromium rendered them."""
    with open(page, encoding="utf-8") as f:
        m = re.search(r'<script id="gpumem-data" type="application/json">(.*?)</script>', f.read(), re.S)
    meta = json.loads(m.group(1).replace("<\\/", "</"))["meta"]
    got = (meta["peak_total"], meta["live_at_end"], meta["live_bytes_at_end"], meta["unmatched_frees"],
           meta.get("no_address", 0))
    want = (counted["peak"], counted["live_count"], counted["live_bytes"], 0, 0)
    if got != want:
        fail("recorded page: peak, live at the end (count, bytes), unmatched frees, events without an address "
             "%r; the program counted %r" % (got, want))
    summary = re.search(r'<div id="summary"[^>]*>(.*?)</div>', dom, re.S)
    text = summary.group(1) if summary else ""
    for part in ("peak " + fmt_bytes(counted["peak"]),
                 "%d live allocations (%s) at the end" % (counted["live_count"], fmt_bytes(counted["live_bytes"]))):
        if part not in text:
            fail("recorded page: the summary does not say %r: %r" % (part, text))
    legend = re.search(r'id="kinds-legend"[^>]*>(.*?)</div>', dom, re.S)
    shown = set(re.findall(r"</i>([a-z_]+)</span>", legend.group(1) if legend else ""))
    wanted = {"virtual", "buffer", "stream_ordered"} if counted["vmm"] else {"buffer", "stream_ordered"}
    if not wanted <= kinds or not wanted <= shown:
        fail("recorded page: kinds in the trace %s, in the legend %s; expected %s" %
             (sorted(kinds), sorted(shown), sorted(wanted)))
    print("recorded: peak %s, %d live allocations (%s) at the end, kinds %s: as the program counted" %
          (fmt_bytes(counted["peak"]), counted["live_count"], fmt_bytes(counted["live_bytes"]),
           ", ".join(sorted(shown))))


def make_page(src, out):
    r = subprocess.run([sys.executable, "-m", "gpumem.viz", src, "-o", out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0 or not os.path.isfile(out):
        fail("python3 -m gpumem.viz %s failed (exit %d): %s" % (src, r.returncode, r.stderr.decode(errors="replace")))
    with open(out, encoding="utf-8") as f:
        page = f.read()
    # Self-contained: nothing the browser would fetch.
    external = re.findall(r'(?:src|href)\s*=\s*["\'](?!data:|#)[^"\']+', page)
    if external:
        fail("%s refers to external resources: %s" % (out, external[:3]))


def check_dom(exe, profile, page):
    r = browser(exe, profile, "--dump-dom", "file://" + page)
    dom = r.stdout.decode(errors="replace")
    status = re.search(r'id="gpumem-viz-status"[^>]*data-status="([a-z]+)"', dom)
    errors = re.search(r'<pre id="gpumem-viz-errors"[^>]*>(.*?)</pre>', dom, re.S)
    if not status or errors is None:
        fail("%s: no status element in the DOM chromium dumped (exit %d): %s" %
             (page, r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    if errors.group(1).strip():
        fail("%s: script errors: %s" % (page, errors.group(1).strip()))
    if status.group(1) != "rendered":
        fail("%s: status is %r, not 'rendered'" % (page, status.group(1)))
    return dom


def png_pixels(path):
    """(width, height, distinct byte values of the decoded rows) of a PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, width, height = 8, b"", 0, 0
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif ctype == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    return width, height, len(set(raw[::97]))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    src_root, out_dir = sys.argv[1], sys.argv[2]
    workload = sys.argv[3] if len(sys.argv) > 3 else ""
    exe = find_browser()
    if not exe:
        if os.environ.get("GPUMEM_VIZ_REQUIRE_BROWSER") == "1":
            fail("no chromium, and GPUMEM_VIZ_REQUIRE_BROWSER=1 (CI) says this test must run")
        print("SKIP: no chromium here (apt-get install chromium); CI installs it")
        return 77
    os.makedirs(out_dir, exist_ok=True)
    data = os.path.join(src_root, "tests", "data")
    with tempfile.TemporaryDirectory(prefix="gpumem-viz-") as tmp:
        profile = os.path.join(tmp, "profile")
        given = os.environ.get("GPUMEM_VIZ_TRACE")
        recorded, counted = record_trace(workload, tmp) if not given else (None, None)
        kinds = check_addresses(recorded) if recorded else set()
        main_trace = given or recorded
        print("trace: %s" % ("GPUMEM_VIZ_TRACE=" + given if given else "recorded from " + os.path.basename(workload)))
        big = os.path.join(tmp, "large-trace.json")
        subprocess.run([sys.executable, os.path.join(data, "make_trace_fixtures.py"), "--trace", big,
                        "--steps", "700"], check=True, timeout=300)
        with open(big) as f:
            nevents = sum(1 for _ in f) - 2
        if nevents < 100000:
            fail("the large trace has only %d events" % nevents)
        # Events without an address cannot be paired: the page counts them and draws none.
        no_address = os.path.join(tmp, "no-address.json")
        unpaired = without_addresses(os.path.join(data, "trace-training.json"), no_address)
        inputs = [("main", main_trace), ("fixture", os.path.join(data, "trace-training.json")),
                  ("no-addr", no_address),
                  ("cut", os.path.join(data, "trace-cut.json")), ("snapshot", os.path.join(data, "snapshot.json")),
                  ("large", big)]
        for name, src in inputs:
            page = os.path.join(tmp, name + ".html")
            make_page(src, page)
            dom = check_dom(exe, profile, page)
            print("%-8s %s: rendered, no script error (%d bytes of DOM)" % (name, os.path.basename(src), len(dom)))
            if name == "main" and recorded:
                check_recorded_page(page, dom, counted, kinds)
            if name == "no-addr" and ("%d allocation and free events have no address" % unpaired) not in dom:
                fail("%s: no warning about the %d events without an address" % (page, unpaired))
            if name == "main":
                shot = os.path.join(out_dir, "viz-screenshot.png")
                if os.path.exists(shot):
                    os.remove(shot)
                browser(exe, profile, "--screenshot=" + shot, "--window-size=%d,%d" % WINDOW, "file://" + page)
                if not os.path.isfile(shot):
                    fail("chromium wrote no screenshot")
                w, h, distinct = png_pixels(shot)
                size = os.path.getsize(shot)
                if (w, h) != WINDOW or size < 20000 or distinct < 32:
                    fail("screenshot %s looks empty: %dx%d, %d bytes, %d distinct values" % (shot, w, h, size, distinct))
                print("screenshot: %s (%dx%d, %d bytes)" % (shot, w, h, size))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
