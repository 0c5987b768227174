#!/usr/bin/env bash
# `pip install .` of the source tree into a fresh venv (meson-python, no network:
# --no-build-isolation with Debian's python3-mesonpy), then the check the README
# promises: the wheel's own libgpumem is found with no environment variable,
# NumPy takes an allocation through DLPack, `python -m gpumem` prints the report, and no
# file of the source tree changed.
# Exit 77 (skipped) without python3-venv, meson-python or NumPy.
# usage: pip_install.sh SOURCE_ROOT [PYTHON]
# SPDX-License-Identifier: MIT
set -uo pipefail
src=${1:?usage: pip_install.sh SOURCE_ROOT [PYTHON]}
py=${2:-python3}
"$py" -c 'import mesonpy, numpy, venv' 2>/dev/null || { echo "skip: $py lacks meson-python, NumPy or venv"; exit 77; }
command -v patchelf >/dev/null || { echo "skip: meson-python needs patchelf to bundle the library"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-pip.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$py" -m venv --system-site-packages "$work/venv" || exit 1
# A copy: meson-python builds inside the source folder it is given.
mkdir "$work/src" && (cd "$src" && git ls-files -z --cached --others --exclude-standard 2>/dev/null | xargs -0 cp --parents -t "$work/src" 2>/dev/null) ||
    cp -r "$src/." "$work/src"
# Every file of the tree, to show that the install changed none (a committed file it
# rewrites leaves a user's checkout dirty).
(cd "$work/src" && find . -type f -print0 | xargs -0 sha256sum) >"$work/before.sum" || exit 1
"$work/venv/bin/pip" install --no-index --no-build-isolation "$work/src" >"$work/pip.log" 2>&1 ||
    { tail -n 40 "$work/pip.log"; echo "FAIL: pip install"; exit 1; }
changed=$(cd "$work/src" && sha256sum -c --quiet "$work/before.sum" 2>/dev/null | sed 's/: FAILED.*//')
[ -z "$changed" ] || { echo "FAIL: pip install . changed files of the source tree: $changed"; exit 1; }
# The wheel bundles libgpumem: its tag must name this platform, not py3-none-any.
tag=$(sed -n 's/^Tag: //p' "$work"/venv/lib/python*/site-packages/gpumem-*.dist-info/WHEEL)
case $tag in
'' | *-any) echo "FAIL: the wheel bundles libgpumem but is tagged '$tag'"; exit 1 ;;
esac
echo "wheel tag: $tag"
cd "$work" || exit 1
env -u GPUMEM_LIBRARY -u GPUMEM_BUILD_DIR -u PYTHONPATH GPUMEM_BACKEND=host "$work/venv/bin/python" -c '
import gpumem, numpy
a = gpumem.host_alloc(64)
x = numpy.from_dlpack(a)
assert x.shape == (64,) and x.ctypes.data == a.ptr
assert gpumem.LIBRARY_PATH.startswith(__import__("sys").prefix), gpumem.LIBRARY_PATH
print("OK", gpumem.LIBRARY_PATH)' || { echo "FAIL: the installed package"; exit 1; }
env -u GPUMEM_LIBRARY -u PYTHONPATH GPUMEM_BACKEND=host "$work/venv/bin/python" -m gpumem >"$work/info.txt" 2>&1 &&
    grep -q '^backend: host' "$work/info.txt" || { cat "$work/info.txt"; echo "FAIL: python -m gpumem"; exit 1; }
env -u GPUMEM_LIBRARY -u PYTHONPATH "$work/venv/bin/gpumem-viz" "$work/src/tests/data/trace-cut.json" -o "$work/cut.html" >/dev/null &&
    grep -q 'data-status="loading"' "$work/cut.html" || { echo "FAIL: the gpumem-viz script of the wheel"; exit 1; }
echo "OK: pip install . into a venv, import, numpy.from_dlpack, python -m gpumem, gpumem-viz"
