"""``python -m gpumem`` prints gpumem-info's report, byte for byte (text and --json), also where
no gpumem-info is installed (a wheel bundles the library, not the tool)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import gpumem

from support import GpumemTestCase


def _tool():
    """gpumem-info of the build that made the library under test (tools/ beside src/), or PATH's."""
    lib = os.environ.get("GPUMEM_LIBRARY") or gpumem.LIBRARY_PATH
    exe = os.path.join(os.path.dirname(os.path.abspath(lib)), os.pardir, "tools", "gpumem-info")
    if os.path.isfile(exe) and os.access(exe, os.X_OK):
        return os.path.normpath(exe)
    return shutil.which("gpumem-info")


# Free memory changes between two runs: compared as a placeholder.
_FREE_TEXT = re.compile(rb"^(  free memory +)\d+ bytes \([0-9.]+ \w+\)$", re.M)
_FREE_JSON = re.compile(rb'"free_memory": \d+')


def _normalised(out):
    return _FREE_JSON.sub(b'"free_memory": N', _FREE_TEXT.sub(rb"\1N", out))


class TestModuleMain(GpumemTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpumem-main-")
        # The library alone, as a wheel lays it out: no gpumem-info beside it, none on PATH.
        self.lib = os.path.join(self.tmp, "gpumem.libs", "libgpumem.so.%d" % gpumem._lib.EXPECTED_MAJOR)
        os.makedirs(os.path.dirname(self.lib))
        shutil.copy(gpumem.LIBRARY_PATH, self.lib)
        os.makedirs(os.path.join(self.tmp, "bin"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_") or k == "GPUMEM_SOURCE_ROOT"}
        e.update(GPUMEM_BACKEND="host", GPUMEM_LOG="error", PATH=os.path.join(self.tmp, "bin"))
        e.update(extra)
        return e

    def module(self, *args, env=None):
        e = dict(env or self.env(), GPUMEM_LIBRARY=self.lib)
        return subprocess.run([sys.executable, "-m", "gpumem"] + list(args), capture_output=True, env=e,
                              timeout=60)

    def test_text_report(self):
        r = self.module()
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.decode().splitlines()
        self.assertEqual(lines[0], "library: %s" % os.path.realpath(self.lib))
        text = "\n".join(lines)
        v = gpumem.version()
        self.assertIn("gpumem %d.%d.%d (compiled against %d.%d.%d)" % (v + v), text)
        for want in ("environment:", "GPUMEM_LIMIT", "backend: host", "workarounds of known vendor bugs: none",
                     "devices: 1", "pools of pinned memory", "batched copies (0.2)", "VMM granularity (min)"):
            self.assertIn(want, text)

    def test_json_report(self):
        r = self.module("--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["gpumem_version"], "%d.%d.%d" % gpumem.version())
        self.assertEqual(doc["backend"], "host")
        self.assertEqual(len(doc["devices"]), 1)
        self.assertIn("workarounds", doc)
        self.assertIn("GPUMEM_TRACE_MAX", doc["environment"])

    def test_bad_option_named(self):
        r = self.module("--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"'--bogus'", r.stderr)
        self.assertIn(b"usage:", r.stderr)
        self.assertEqual(r.stdout, b"")

    def test_reader_that_stops_early(self):
        # `python -m gpumem | head -3`: the pipe closes under the report; no traceback, as gpumem-info.
        for args in ([], ["--json"]):
            rd, wr = os.pipe()
            os.close(rd)
            try:
                r = subprocess.run([sys.executable, "-m", "gpumem"] + args, stdout=wr, stderr=subprocess.PIPE,
                                   env=dict(self.env(), GPUMEM_LIBRARY=self.lib), timeout=60)
            finally:
                os.close(wr)
            self.assertEqual(r.stderr, b"", args)
            self.assertEqual(r.returncode, 141, args)

    def test_same_as_gpumem_info(self):
        exe = _tool()
        if not exe:
            self.skipTest("gpumem-info not built here")
        # Values a JSON writer must escape, bytes that are not UTF-8, and a variable set empty.
        odd = self.env(GPUMEM_DISABLE='pools,"quoted"\\x', GPUMEM_TRACE_MAX="12\t3",
                       GPUMEM_CUDA_LIBRARY=os.fsdecode(b"/opt/\xff\xfecuda/\xe2\x82\xac.so"),
                       GPUMEM_LIMIT="")
        # GPUMEM_LIMIT's cap as the library parsed it (a line of its own, and "limit" in --json).
        limits = [self.env(GPUMEM_LIMIT=v) for v in ("256M", "50%", "bogus")]
        for env in [self.env(), odd] + limits:
            for args in ([], ["--json"]):
                mod = self.module(*args, env=env)
                tool = subprocess.run([exe] + args, capture_output=True, env=env, timeout=60)
                self.assertEqual(mod.returncode, tool.returncode, mod.stderr)
                got = mod.stdout if args else mod.stdout.split(b"\n", 1)[1]  # less "library: ..."
                self.assertEqual(_normalised(got).decode("utf-8", "replace"),
                                 _normalised(tool.stdout).decode("utf-8", "replace"), args)
                if args:
                    json.loads(mod.stdout)


if __name__ == "__main__":
    unittest.main()
