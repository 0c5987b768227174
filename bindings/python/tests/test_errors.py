"""Errors raise GpumemError with the right status and never crash; the loader's rules."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import gpumem
from gpumem import _lib

from support import GpumemTestCase

PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(gpumem.__file__)))


def run_python(code, **env):
    e = dict(os.environ)
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    e["PYTHONPATH"] = PKG_DIR
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=60)


class TestErrors(GpumemTestCase):
    def test_statuses(self):
        e = self.assertStatus(gpumem.ERROR_OUT_OF_MEMORY, gpumem.malloc, (1 << 64) - 1)
        self.assertTrue(e.message)
        self.assertIn(e.message, str(e))
        self.assertStatus(gpumem.ERROR_OUT_OF_MEMORY, gpumem.host_alloc, 1 << 62)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.host_alloc, 16,
                          gpumem.HOST_COHERENT | gpumem.HOST_NONCOHERENT)
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.host_alloc, 16, 0x1000)
        self.assertStatus(gpumem.ERROR_INVALID_DEVICE, gpumem.set_device, 99)
        self.assertStatus(gpumem.ERROR_INVALID_DEVICE, gpumem.device_info, 99)
        self.assertStatus(gpumem.ERROR_INVALID_DEVICE, gpumem.Pool, 99)
        self.assertStatus(gpumem.ERROR_BUSY, gpumem.init, "cuda")
        gpumem.init("host")
        gpumem.init()
        with self.assertRaises(ValueError):
            gpumem.init("opencl")
        self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.init, 42)

    def test_bad_pointers_and_handles(self):
        self.assertEqual(gpumem.lib.gpumem_free(0x12345), gpumem.ERROR_INVALID_POINTER)
        self.assertEqual(gpumem.pointer_info(0x12345).kind, "unknown")
        with gpumem.malloc(64) as d:
            self.assertEqual(gpumem.lib.gpumem_free(d.ptr + 8), gpumem.ERROR_INVALID_POINTER)  # interior
            self.assertEqual(gpumem.lib.gpumem_host_free(d.ptr), gpumem.ERROR_INVALID_POINTER)  # wrong call
            # a range past the allocation's end: nothing copied
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.memcpy, d.ptr, bytes(128), 128)
            self.assertStatus(gpumem.ERROR_INVALID_VALUE, gpumem.memcpy, 0, d, 8)
        self.assertEqual(gpumem.lib.gpumem_stream_destroy(None), gpumem.ERROR_INVALID_HANDLE)
        self.assertEqual(gpumem.lib.gpumem_stream_synchronize(0xdead0), gpumem.ERROR_INVALID_HANDLE)
        self.assertEqual(gpumem.lib.gpumem_event_record(None, None), gpumem.ERROR_INVALID_HANDLE)
        self.assertEqual(gpumem.lib.gpumem_buffer_resize(0xbad, 1), gpumem.ERROR_INVALID_HANDLE)
        self.assertEqual(gpumem.lib.gpumem_mem_release(0), gpumem.ERROR_INVALID_HANDLE)
        self.assertEqual(gpumem.lib.gpumem_get_stats(None), gpumem.ERROR_INVALID_VALUE)
        with self.assertRaises(TypeError):
            gpumem.malloc_async(16, stream="default")

    def test_out_of_memory_carries_the_report(self):
        # A too-low GPUMEM_LIMIT: the exception says by how much to raise it, and raising
        # it by that much makes the allocation fit.
        code = """
import gpumem
gpumem.init("host")
a = gpumem.malloc(1 << 20)
try:
    gpumem.malloc(512 << 10)
    raise SystemExit("no OUT_OF_MEMORY")
except gpumem.OutOfMemoryError as e:
    assert isinstance(e, gpumem.GpumemError)
    assert e.status == gpumem.ERROR_OUT_OF_MEMORY
    assert e.bytes == 512 << 10 and e.device == 0 and e.kind == 1, e.report
    assert e.limit == 1 << 20 and e.limit_held == 1 << 20
    assert e.limit_raise == gpumem.OomRemedy(512 << 10, True), e.limit_raise
    assert not e.trim.fits and not e.pending.fits and not e.fragmentation.fits
    assert "GPUMEM_LIMIT" in e.verdict and e.message.endswith(e.verdict), e.message
    assert e.report == gpumem.last_oom_report()
    print(e.limit + e.limit_raise.bytes)
"""
        r = run_python(code, GPUMEM_LIMIT=str(1 << 20), GPUMEM_BACKEND=None)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        raised = r.stdout.strip()
        r = run_python("import gpumem\ngpumem.init('host')\na = gpumem.malloc(1 << 20)\nb = gpumem.malloc(512 << 10)\n"
                       "assert gpumem.last_oom_report() is None\n", GPUMEM_LIMIT=raised, GPUMEM_BACKEND=None)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Other errors stay plain GpumemError.
        with self.assertRaises(gpumem.GpumemError) as cm:
            gpumem.set_device(99)
        self.assertNotIsInstance(cm.exception, gpumem.OutOfMemoryError)

    def test_message_is_thread_local(self):
        got = {}

        def fail():
            try:
                gpumem.set_device(77)
            except gpumem.GpumemError as e:
                got["thread"] = e.message
        self.assertStatus(gpumem.ERROR_OUT_OF_MEMORY, gpumem.malloc, (1 << 64) - 1)
        mine = gpumem.lib.gpumem_last_error_message().decode()
        t = threading.Thread(target=fail)
        t.start()
        t.join()
        self.assertIn("77", got["thread"])
        self.assertEqual(gpumem.lib.gpumem_last_error_message().decode(), mine)
        self.assertEqual(gpumem.lib.gpumem_status_string(999), b"GPUMEM_ERROR_UNKNOWN")


class TestLoader(unittest.TestCase):
    def test_explicit_library_that_does_not_load(self):
        r = run_python("import gpumem", GPUMEM_LIBRARY="/nonexistent/libgpumem.so")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("GPUMEM_LIBRARY=/nonexistent/libgpumem.so", r.stderr)

    def test_build_dir(self):
        lib = os.path.realpath(gpumem.LIBRARY_PATH)
        build = os.path.dirname(os.path.dirname(lib))
        if os.path.basename(os.path.dirname(lib)) != "src":
            self.skipTest("library not in a build tree")
        r = run_python("import gpumem; print(gpumem.LIBRARY_PATH)", GPUMEM_LIBRARY=None, GPUMEM_BUILD_DIR=build)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.path.realpath(r.stdout.strip()), lib)

    def _fake_tree(self, top):
        """A source tree in `top` holding a copy of this package and no library yet."""
        os.makedirs(os.path.join(top, "include", "gpumem"))
        open(os.path.join(top, "include", "gpumem", "gpumem.h"), "w").close()
        shutil.copytree(os.path.dirname(os.path.abspath(gpumem.__file__)),
                        os.path.join(top, "bindings", "python", "gpumem"),
                        ignore=shutil.ignore_patterns("__pycache__", "_build_config.py"))

    def _put_library(self, build, age):
        os.makedirs(os.path.join(build, "src"))
        lib = os.path.join(build, "src", os.path.basename(os.path.realpath(gpumem.LIBRARY_PATH)))
        shutil.copy(os.path.realpath(gpumem.LIBRARY_PATH), lib)
        os.utime(lib, (time.time() - age, time.time() - age))
        return lib

    def _loaded_in(self, top, code, **env):
        e = {k: v for k, v in os.environ.items() if k not in ("GPUMEM_LIBRARY", "GPUMEM_BUILD_DIR")}
        e.update(env)
        e["PYTHONPATH"] = os.path.join(top, "bindings", "python")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=60)

    def test_source_tree_takes_the_plain_build_only(self):
        # A newer build-asan/ (README: run-tests.sh --sanitize) must never be picked over build/.
        with tempfile.TemporaryDirectory() as top:
            self._fake_tree(top)
            plain = self._put_library(os.path.join(top, "build"), 3600)
            self._put_library(os.path.join(top, "build-asan"), 0)
            self._put_library(os.path.join(top, "build-other"), 0)
            r = self._loaded_in(top, "import gpumem; print(gpumem._lib._loaded_as)")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), plain)

    def test_source_tree_never_takes_a_sanitizer_build(self):
        # Not even one in build/ itself: it says why it passed over it.
        with tempfile.TemporaryDirectory() as top:
            self._fake_tree(top)
            build = os.path.join(top, "build")
            self._put_library(build, 0)
            os.makedirs(os.path.join(build, "meson-info"))
            with open(os.path.join(build, "meson-info", "intro-buildoptions.json"), "w") as f:
                json.dump([{"name": "b_sanitize", "value": "address"}], f)
            code = ("import gpumem; from gpumem import _lib; "
                    "print([p for o, p in _lib.candidates() if o == 'source tree']); print(_lib._SKIPPED)")
            r = self._loaded_in(top, code, GPUMEM_LIBRARY=os.path.realpath(gpumem.LIBRARY_PATH))
            self.assertEqual(r.returncode, 0, r.stderr)
            found, skipped = r.stdout.strip().split("\n")[-2:]
            self.assertEqual(found, "[]")
            self.assertIn("b_sanitize", skipped)

    def _outside_tree(self, top, pc_dir, **env):
        """Import a copy of the package that is in no source tree, with pkg-config looking in
        pc_dir only and no library path set: (returncode, stderr, stdout)."""
        pkg = os.path.join(top, "site")
        shutil.copytree(os.path.dirname(os.path.abspath(gpumem.__file__)), os.path.join(pkg, "gpumem"),
                        ignore=shutil.ignore_patterns("__pycache__", "_build_config.py"))
        e = {k: v for k, v in os.environ.items()
             if k not in ("GPUMEM_LIBRARY", "GPUMEM_BUILD_DIR", "LD_LIBRARY_PATH")}
        e.update(PYTHONPATH=pkg, PKG_CONFIG_PATH=pc_dir, PKG_CONFIG_LIBDIR=pc_dir, **env)
        return subprocess.run([sys.executable, "-c", "import gpumem; print(gpumem._lib._loaded_as)"],
                              capture_output=True, text=True, env=e, timeout=60)

    def _skip_if_system_has_it(self):
        import ctypes.util
        if ctypes.util.find_library("gpumem"):
            self.skipTest("a libgpumem is installed system-wide: the loader finds it")

    def test_not_found_lists_every_place_and_what_to_do(self):
        self._skip_if_system_has_it()
        with tempfile.TemporaryDirectory() as top:
            r = self._outside_tree(top, os.path.join(top, "no-pc"))
        self.assertNotEqual(r.returncode, 0)
        err = r.stderr
        self.assertIn("ImportError: gpumem: libgpumem.so not found", err)
        for place in ("GPUMEM_LIBRARY: unset", "GPUMEM_BUILD_DIR: unset", "bundled: no libgpumem.so*",
                      "installed with the package:", "source tree: the package at", "pkg-config: ",
                      "system loader: libgpumem.so.%d" % _lib.EXPECTED_MAJOR, "LD_LIBRARY_PATH unset"):
            self.assertIn(place, err)
        if shutil.which("pkg-config"):
            self.assertIn("`pkg-config --variable=libdir gpumem` found no gpumem.pc", err)
        else:
            self.assertIn("pkg-config is not installed", err)
        self.assertIn("Set GPUMEM_LIBRARY=", err)
        self.assertIn("PKG_CONFIG_PATH", err)

    @unittest.skipUnless(shutil.which("pkg-config"), "pkg-config not installed")
    def test_found_through_pkg_config(self):
        self._skip_if_system_has_it()
        with tempfile.TemporaryDirectory() as top:
            pc_dir, libdir = os.path.join(top, "pc"), os.path.join(top, "lib")
            os.makedirs(pc_dir)
            os.makedirs(libdir)
            with open(os.path.join(pc_dir, "gpumem.pc"), "w") as f:
                f.write("libdir=%s\nName: gpumem\nDescription: test\nVersion: 0.0.0\nLibs: -L${libdir} -lgpumem\n"
                        % libdir)
            r = self._outside_tree(top, pc_dir)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("pkg-config: gpumem.pc's libdir %s holds no libgpumem.so.%d" % (libdir, _lib.EXPECTED_MAJOR),
                          r.stderr)
            lib = os.path.join(libdir, "libgpumem.so.%d" % _lib.EXPECTED_MAJOR)
            shutil.copy(os.path.realpath(gpumem.LIBRARY_PATH), lib)
            shutil.rmtree(os.path.join(top, "site"))
            r = self._outside_tree(top, pc_dir)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), lib)

    def test_version_mismatch_is_a_clear_import_error(self):
        class FakeFn:
            def __call__(self):
                return (_lib.EXPECTED_MAJOR + 1) * 10000 + 203

        class FakeDll:
            gpumem_version = FakeFn()
        with self.assertRaises(ImportError) as cm:
            _lib._check_version(FakeDll(), "/x/libgpumem.so")
        msg = str(cm.exception)
        self.assertIn("/x/libgpumem.so is version %d.2.3" % (_lib.EXPECTED_MAJOR + 1), msg)
        self.assertIn("needs major version %d" % _lib.EXPECTED_MAJOR, msg)


if __name__ == "__main__":
    unittest.main()
