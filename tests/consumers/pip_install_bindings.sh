#!/usr/bin/env bash
# `pip install ./bindings/python` into a fresh venv: the pure-Python package
# alone (setuptools, no network: --no-build-isolation), which must build a
# py3-none-any wheel with no compiled code in it and gpumem-viz's page files,
# import, and use the library named by GPUMEM_LIBRARY (a separately installed
# libgpumem in real use).
# Exit 77 (skipped) without python3-venv or setuptools.
# usage: pip_install_bindings.sh SOURCE_ROOT LIBGPUMEM [PYTHON]
# SPDX-License-Identifier: MIT
set -uo pipefail
src=${1:?usage: pip_install_bindings.sh SOURCE_ROOT LIBGPUMEM [PYTHON]}
lib=${2:?usage: pip_install_bindings.sh SOURCE_ROOT LIBGPUMEM [PYTHON]}
py=${3:-python3}
"$py" -c 'import venv, setuptools' 2>/dev/null || { echo "skip: $py lacks venv or setuptools"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-pipb.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$py" -m venv --system-site-packages "$work/venv" || exit 1
# A copy: setuptools writes build/ and *.egg-info next to pyproject.toml.
cp -r "$src/bindings/python" "$work/python" && rm -rf "$work/python/tests"
"$work/venv/bin/pip" wheel --no-index --no-build-isolation --no-deps -w "$work/wheels" "$work/python" \
    >"$work/pip.log" 2>&1 || { tail -n 40 "$work/pip.log"; echo "FAIL: pip wheel ./bindings/python"; exit 1; }
wheel=$(ls "$work"/wheels/*.whl)
case $wheel in
*-py3-none-any.whl) ;;
*) echo "FAIL: $wheel: a pure-Python wheel should be py3-none-any"; exit 1 ;;
esac
# No compiled code, and gpumem-viz's page files (package data beside viz.py).
"$py" -c 'import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist()
bad = [n for n in names if ".so" in n]
missing = [n for n in ("gpumem/viz.html", "gpumem/viz.js") if n not in names]
sys.exit("FAIL: compiled code in a py3-none-any wheel: %s" % bad if bad else
         "FAIL: the wheel lacks %s" % missing if missing else 0)' "$wheel" || exit 1
"$work/venv/bin/pip" install --no-index --no-deps "$wheel" >>"$work/pip.log" 2>&1 ||
    { tail -n 40 "$work/pip.log"; echo "FAIL: pip install"; exit 1; }
cd "$work" || exit 1
env -u GPUMEM_BUILD_DIR -u PYTHONPATH GPUMEM_LIBRARY="$lib" GPUMEM_BACKEND=host "$work/venv/bin/python" -c '
import gpumem, sys
assert gpumem.__file__.startswith(sys.prefix), gpumem.__file__
with gpumem.host_alloc(64) as a:
    a.as_memoryview()[:2] = b"ok"
print("OK", gpumem.__version__, gpumem.backend(), gpumem.LIBRARY_PATH)' || { echo "FAIL: the installed package"; exit 1; }
env -u GPUMEM_BUILD_DIR -u PYTHONPATH GPUMEM_LIBRARY="$lib" "$work/venv/bin/gpumem-viz" "$src/tests/data/snapshot.json" \
    -o "$work/snapshot.html" >/dev/null && grep -q 'data-status="loading"' "$work/snapshot.html" ||
    { echo "FAIL: the gpumem-viz script of the wheel"; exit 1; }
echo "OK: pip install ./bindings/python: $(basename "$wheel"), imports, uses GPUMEM_LIBRARY, gpumem-viz"
