#!/usr/bin/env python3
"""The Lmod module file's PYTHONPATH is where `meson install` puts the Python package.

usage: check_lmod.py BUILD_DIR LUA_FILE
Asks meson where this build installs gpumem/__init__.py (relative to its prefix) and checks that
the module file's PYTHONPATH, with the running python's X.Y for its version, names that folder.
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
    m = re.search(r'prepend_path\("PYTHONPATH", pathJoin\(root, "([^"]*)" \.\. pyver \.\. "([^"]*)"\)\)', text)
    if not m:
        sys.exit("FAIL: %s sets no PYTHONPATH of the form lib/python\" .. pyver .. \"/site-packages" % lua)
    # meson's python may differ from this one: compare the shape, then the version meson used.
    shape = re.fullmatch(re.escape(m.group(1)) + r"(\d+\.\d+)" + re.escape(m.group(2)), where)
    if not shape:
        sys.exit("FAIL: meson installs the package in %s, the module file names %sX.Y%s" % (where, m.group(1), m.group(2)))
    print("ok: %s (python %s)" % (where, shape.group(1)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    sys.exit(main(sys.argv[1], sys.argv[2]))
