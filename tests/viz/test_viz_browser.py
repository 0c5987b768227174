#!/usr/bin/env python3
"""gpumem-viz pages in a real browser (suite 'viz').

    test_viz_browser.py SOURCE_ROOT OUT_DIR [EXAMPLE]

Makes pages with ``python3 -m gpumem.viz`` and loads each in headless Chromium: the
page must set its status element to "rendered" with no script error, and the
screenshot of the first page must be a non-trivial PNG (kept in OUT_DIR as
viz-screenshot.png).  The pages: a trace recorded from EXAMPLE run on the host backend
with GPUMEM_TRACE (or, where that wrote nothing, tests/data/trace-training.json; or the
file GPUMEM_VIZ_TRACE names, for a trace recorded elsewhere, on a GPU), a cut
trace, a snapshot, and a generated trace of more than 100000 events.

Exit 77 (skipped) where no Chromium is installed, unless GPUMEM_VIZ_REQUIRE_BROWSER=1
(.ci/run sets it: CI installs Debian's chromium and must run this test).
SPDX-License-Identifier: MIT
"""
import os
import re
import shutil
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


def record_trace(example, tmp):
    """A real run's trace, where the library writes GPUMEM_TRACE already."""
    if not example or not os.path.isfile(example):
        return None
    path = os.path.join(tmp, "recorded-trace.json")
    env = dict(os.environ, GPUMEM_BACKEND="host", GPUMEM_TRACE=path, GPUMEM_BACKTRACE="1")
    r = subprocess.run([example], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        fail("%s failed (exit %d): %s" % (example, r.returncode, r.stderr.decode(errors="replace")))
    return path if os.path.isfile(path) and os.path.getsize(path) > 0 else None


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
    example = sys.argv[3] if len(sys.argv) > 3 else ""
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
        recorded = None if given else record_trace(example, tmp)
        main_trace = given or recorded or os.path.join(data, "trace-training.json")
        print("trace: %s" % ("GPUMEM_VIZ_TRACE=" + given if given else
                             "recorded from " + os.path.basename(example) if recorded else
                             "the fixture (the library wrote no GPUMEM_TRACE file)"))
        big = os.path.join(tmp, "large-trace.json")
        subprocess.run([sys.executable, os.path.join(data, "make_trace_fixtures.py"), "--trace", big,
                        "--steps", "700"], check=True, timeout=300)
        with open(big) as f:
            nevents = sum(1 for _ in f) - 2
        if nevents < 100000:
            fail("the large trace has only %d events" % nevents)
        inputs = [("main", main_trace), ("cut", os.path.join(data, "trace-cut.json")),
                  ("snapshot", os.path.join(data, "snapshot.json")), ("large", big)]
        for name, src in inputs:
            page = os.path.join(tmp, name + ".html")
            make_page(src, page)
            dom = check_dom(exe, profile, page)
            print("%-8s %s: rendered, no script error (%d bytes of DOM)" % (name, os.path.basename(src), len(dom)))
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
