"""The package's public surface: documented, and free of the modules it uses inside."""
import inspect
import os
import re
import subprocess
import sys
import unittest

import gpumem

from support import GpumemTestCase, source_file


def public_names():
    for name in gpumem.__all__:
        obj = getattr(gpumem, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield name, obj
        if inspect.isclass(obj) and obj.__module__ == "gpumem":
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__dlpack__", "__dlpack_device__",
                                                         "__array_interface__", "__buffer__"):
                    continue
                if isinstance(member, (property, classmethod, staticmethod)) or inspect.isfunction(member):
                    yield "%s.%s" % (name, attr), member
    for base in (gpumem._Memory, gpumem._Resource, gpumem._ArrayProtocols):
        for attr, member in vars(base).items():
            if (not attr.startswith("_") or attr.startswith("__d") or attr in ("__array_interface__",)) \
                    and (inspect.isfunction(member) or isinstance(member, property)):
                yield "%s.%s" % (base.__name__, attr), member


class TestPublicSurface(GpumemTestCase):
    def test_every_public_name_has_a_docstring(self):
        missing = []
        for name, obj in public_names():
            target = obj if isinstance(obj, property) else getattr(obj, "__func__", obj)
            if not (inspect.getdoc(target) or "").strip():
                missing.append(name)
        self.assertEqual(missing, [], "public names without a docstring")

    def test_helpers_not_exported(self):
        for mod in ("ctypes", "math", "weakref", "contextlib", "dataclasses"):
            self.assertFalse(hasattr(gpumem, mod), "gpumem.%s is visible" % mod)
        ns = {}
        exec("from gpumem import *", ns)
        self.assertFalse({"ctypes", "math", "weakref"} & set(ns))

    def test_every_module_is_installed(self):
        # meson install (and the wheel of `pip install .`) installs the files meson.build lists:
        # the modules, and the page files of gpumem.viz.  _build_config.py is made from its .in.
        build = source_file("bindings", "python", "meson.build")
        listed = set(re.findall(r"'gpumem/([\w.]+)'", build))
        package = os.path.dirname(os.path.abspath(gpumem.__file__))
        files = {n for n in os.listdir(package) if os.path.isfile(os.path.join(package, n))
                 and not n.startswith(".") and not n.endswith("~")} - {"_build_config.py", "_build_config.py.in"}
        self.assertIn("viz.js", files)
        self.assertEqual(files - listed, set(), "files of the package bindings/python/meson.build does not install")

    def test_module_main_prints_info(self):
        out = subprocess.run([sys.executable, "-m", "gpumem"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("backend", out.stdout)
        self.assertIn(gpumem.LIBRARY_PATH, out.stdout)


if __name__ == "__main__":
    unittest.main()
