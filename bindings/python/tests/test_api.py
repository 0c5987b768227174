"""The package's public surface: documented, and free of the modules it uses inside."""
import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import unittest

import gpumem
from gpumem import _entry, _resources, _views

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
    for base in (_views._Memory, _resources._Resource, _views._ArrayProtocols):
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

    def test_modules_define_what_gpumem_exports(self):
        # A public function or class of one of the package's modules is gpumem's: in __all__,
        # and a function is there with the argument guard in front (gpumem/_entry.py), which
        # covers only what __all__ lists.
        package = os.path.dirname(os.path.abspath(gpumem.__file__))
        low_level = {"_lib", "_entry", "_exports", "_dlpack", "_build_config", "__main__", "viz"}
        seen = set()
        for info in pkgutil.iter_modules([package]):
            if info.name in low_level:
                continue
            module = importlib.import_module("gpumem." + info.name)
            for name, obj in vars(module).items():
                if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                if obj.__module__ not in ("gpumem", module.__name__):
                    continue  # the standard library's
                with self.subTest(module=info.name, name=name):
                    self.assertIn(name, gpumem.__all__)
                    self.assertEqual(obj.__module__, "gpumem")
                    exported = getattr(gpumem, name)
                    if inspect.isfunction(obj) and name not in _entry.UNWRAPPED:
                        self.assertIs(exported.__wrapped__, obj)
                    else:
                        self.assertIs(exported, obj)
                    seen.add(name)
        self.assertEqual(set(gpumem.__all__) - seen - {"lib", "LIBRARY_PATH", "viz"}, set(),
                         "names of __all__ no module of the package defines")

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
