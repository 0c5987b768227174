#!/usr/bin/env python3
"""The Lmod module file's PYTHONPATH is where `meson install` puts the Python package.

usage: check_lmod.py BUILD_DIR LUA_FILE
Asks meson where this build installs gpumem/__init__.py (relative to its prefix) and checks that
one of the module file's PYTHONPATH entries names that folder: Debian's python3 installs in
lib/python3/dist-packages, others in lib/pythonX.Y/site-packages (X.Y: the version meson used).
Exit 77 when this build installs no Python package.
SPDX-License-Identifier: MIT
"""
import json
import os
import re
import subprocess
import sys


def main(build, lua):
    meson = os.environ.get("MESON", "meson")
    installed = json.loads(subprocess.run([meson, "introspect", build, "--installed"], check=True,
                                          capture_output=True, text=True).stdout)
    options = json.loads(subprocess.run([meson, "introspect", build, "--buildoptions"], check=True,
                                        capture_output=True, text=True).stdout)
    prefix = next(o["value"] for o in options if o["name"] == "prefix")
    init = [p for p in installed.values() if p.endswith(os.path.join("gpumem", "__init__.py"))]
    if not init:
        print("skip: this build installs no Python package")
        return 77
    where = os.path.relpath(os.path.dirname(os.path.dirname(init[0])), prefix)
    with open(lua, encoding="utf-8") as f:
        text = f.read()
    # Each PYTHONPATH the module names: a fixed folder, or one with the python version in it.
    fixed = re.findall(r'prepend_path\("PYTHONPATH", pathJoin\(root, "([^"]*)"\)\)', text)
    versioned = re.findall(r'prepend_path\("PYTHONPATH", pathJoin\(root, "([^"]*)" \.\. pyver \.\. "([^"]*)"\)\)', text)
    if not fixed and not versioned:
        sys.exit("FAIL: %s sets no PYTHONPATH under its root" % lua)
    if where in fixed:
        print("ok: %s" % where)
        return 0
    # meson's python may differ from this one: compare the shape, then the version meson used.
    for head, tail in versioned:
        shape = re.fullmatch(re.escape(head) + r"(\d+\.\d+)" + re.escape(tail), where)
        if shape:
            print("ok: %s (python %s)" % (where, shape.group(1)))
            return 0
    named = fixed + ["%sX.Y%s" % v for v in versioned]
    sys.exit("FAIL: meson installs the package in %s, the module file names %s" % (where, ", ".join(named)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    sys.exit(main(sys.argv[1], sys.argv[2]))
