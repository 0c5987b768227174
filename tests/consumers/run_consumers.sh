#!/usr/bin/env bash
# Build tests/consumers/consumer.c against the *installed* gpumem three ways
# (make + pkg-config, CMake find_package, meson dependency()) and run each.
#
# usage: run_consumers.sh BUILD_DIR [PREFIX LIBDIR [B_SANITIZE]]
#   BUILD_DIR  a configured and built gpumem build folder; it is installed
#              with `meson install --destdir` into a temporary folder, so the
#              staged prefix is DESTDIR + PREFIX (PREFIX, LIBDIR default to
#              the build's own, read with `meson introspect`)
# Exit: 0 all passed, 1 one failed, 77 none failed but make, cmake or
# pkg-config was missing (so not every consumer ran).
# Environment: MESON (the meson command, default `meson`), GPUMEM_CONSUMERS_KEEP=1
# keeps the temporary folder.  The build must be complete: meson install
# runs with --no-rebuild (a test must not rebuild the tree it runs from);
# when that fails the script runs ninja once and retries.
# SPDX-License-Identifier: MIT
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: run_consumers.sh BUILD_DIR [PREFIX LIBDIR [B_SANITIZE]]}
build=$(cd "$build" && pwd)
prefix=${2:-}
libdir=${3:-}
sanitize=${4:-none}
read -r -a meson_cmd <<<"${MESON:-meson}"

if [ -z "$prefix" ] || [ -z "$libdir" ]; then
    opts=$("${meson_cmd[@]}" introspect --buildoptions "$build") || exit 1
    read -r prefix libdir < <(python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["libdir"])' <<<"$opts") || exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-consumers.XXXXXX") || exit 1
if [ "${GPUMEM_CONSUMERS_KEEP:-0}" = 1 ]; then
    echo "keeping $work"
else
    trap 'rm -rf "$work"' EXIT
fi

# --- install ---------------------------------------------------------------
stage=$work/stage
case $libdir in
/*) stage_libdir=$stage$libdir ;;
*) stage_libdir=$stage$prefix/$libdir ;;
esac
stage_prefix=$stage$prefix
install_log=$work/install.log
# Only what a consumer uses: the library, headers, gpumem.pc, the CMake package, gpumem-info.
install=("${meson_cmd[@]}" install -C "$build" --no-rebuild --destdir "$stage" --tags runtime,devel)
if ! "${install[@]}" >"$install_log" 2>&1; then
    echo "meson install --no-rebuild failed (build incomplete?); running ninja and retrying"
    tail -n 5 "$install_log"
    ninja -C "$build" >"$work/ninja.log" 2>&1 || { tail -n 30 "$work/ninja.log"; exit 1; }
    rm -rf "$stage"
    "${install[@]}" >"$install_log" 2>&1 || { cat "$install_log"; exit 1; }
fi
for f in "$stage_prefix/include/gpumem/gpumem.h" "$stage_libdir/pkgconfig/gpumem.pc" \
    "$stage_libdir/cmake/gpumem/gpumemConfig.cmake" "$stage_libdir/cmake/gpumem/gpumemConfigVersion.cmake"; do
    [ -f "$f" ] || { echo "FAIL: the install lacks ${f#"$stage"}"; cat "$install_log"; exit 1; }
done
echo "installed into $stage (prefix $prefix, libdir $libdir)"

# --- the environment a user of the staged prefix would set -------------------
export PKG_CONFIG_PATH=$stage_libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# gpumem.pc says prefix=$prefix: the sysroot maps its -I/-L into the staging folder.
export PKG_CONFIG_SYSROOT_DIR=$stage
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
export CMAKE_PREFIX_PATH=$stage_prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
export LD_LIBRARY_PATH=$stage_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUMEM_BACKEND=host
if [ "$sanitize" != none ] && [ -n "$sanitize" ]; then
    # A sanitized libgpumem needs the sanitizer runtimes in the program too.
    export CFLAGS="-fsanitize=$sanitize" LDFLAGS="-fsanitize=$sanitize"
fi

passed=() failed=() skipped=()

# Runs $2 (the consumer built by $1): it must print OK and load the staged library.
run_app() {
    local name=$1 app=$2 out
    if ! out=$("$app" 2>&1); then
        printf '%s\n' "$out"
        echo "FAIL: $name: the consumer exited non-zero"
        return 1
    fi
    printf '%s\n' "$out"
    case $out in
    OK*) ;;
    *) echo "FAIL: $name: the consumer did not print OK"; return 1 ;;
    esac
    if command -v ldd >/dev/null; then
        local lib
        lib=$(ldd "$app" | awk '/libgpumem/ {print $3}')
        case $lib in
        "$stage"/*) ;;
        *) echo "FAIL: $name: libgpumem resolved to '$lib', not the staged install"; return 1 ;;
        esac
    fi
}

# Runs one consumer: $1 name, $2 log file, then the build command.
consumer() {
    local name=$1
    echo "--- $name"
    shift
    if ! "$@" >"$work/$name.log" 2>&1; then
        cat "$work/$name.log"
        echo "FAIL: $name: build failed"
        failed+=("$name")
        return
    fi
    if run_app "$name" "$work/$name/app"; then
        passed+=("$name")
    else
        failed+=("$name")
    fi
}

build_make() {
    mkdir -p "$work/make" && make -C "$work/make" -f "$here/make/Makefile"
}
build_cmake() {
    cmake -S "$here/cmake" -B "$work/cmake" -DCMAKE_BUILD_TYPE=Release -DGPUMEM_CHECK_VERSION_REJECT=ON &&
        cmake --build "$work/cmake" &&
        { grep -q "^gpumem_DIR:PATH=$stage" "$work/cmake/CMakeCache.txt" ||
            { echo "find_package found gpumem outside $stage:"; grep '^gpumem_DIR' "$work/cmake/CMakeCache.txt"; false; }; }
}
build_meson() {
    "${meson_cmd[@]}" setup "$work/meson" "$here/meson" -Dpkg_config_path="$stage_libdir/pkgconfig" &&
        ninja -C "$work/meson"
}

build_cmake_fortran() {
    cmake -S "$here/cmake-fortran" -B "$work/cmake-fortran" -DCMAKE_BUILD_TYPE=Release &&
        cmake --build "$work/cmake-fortran"
}

# The README's C example, built as the README says (cc + pkg-config) against
# the staged prefix (--define-variable=prefix stands for an install there) and
# run with no LD_LIBRARY_PATH: the rpath in gpumem.pc must find the library.
build_readme() {
    mkdir -p "$work/readme" &&
        python3 - "$here/../../README.md" "$work/readme/app.c" <<'PY' &&
import re, sys
blocks = re.findall(r"```c\n(.*?)```", open(sys.argv[1]).read(), re.S)
open(sys.argv[2], "w").write(blocks[0])
PY
        # shellcheck disable=SC2046,SC2086 # pkg-config's flags are words
        ${CC:-cc} ${CFLAGS:-} "$work/readme/app.c" \
            $(pkg-config --define-variable=prefix="$stage_prefix" --cflags --libs gpumem) \
            ${LDFLAGS:-} -o "$work/readme/app"
}

# Runs $2 with no LD_LIBRARY_PATH; it must print $3 (a pattern) and load the staged libgpumem.
run_bare() {
    local name=$1 app=$2 want=$3 out lib
    if ! out=$(env -u LD_LIBRARY_PATH "$app" 2>&1); then
        printf '%s\n' "$out"
        echo "FAIL: $name: exited non-zero without LD_LIBRARY_PATH"
        return 1
    fi
    printf '%s\n' "$out" | tail -n 3
    case $out in
    $want) ;;
    *) echo "FAIL: $name: output lacks '$want'"; return 1 ;;
    esac
    lib=$(env -u LD_LIBRARY_PATH ldd "$app" | awk '/libgpumem/ {print $3; exit}')
    case $lib in
    "$stage"/*) ;;
    *) echo "FAIL: $name: libgpumem resolved to '$lib', not the staged install"; return 1 ;;
    esac
}

have() { command -v "$1" >/dev/null 2>&1; }
if have make && have pkg-config; then consumer make build_make; else skipped+=("make (needs make, pkg-config)"); fi
if have cmake && have make; then consumer cmake build_cmake; else skipped+=("cmake (needs cmake, make)"); fi
if have pkg-config && have ninja; then consumer meson build_meson; else skipped+=("meson (needs pkg-config, ninja)"); fi

if have cmake && have gfortran && [ -f "$stage_prefix/include/gpumem/gpumem.mod" ]; then
    consumer cmake-fortran build_cmake_fortran
elif have gfortran && [ -d "$build/bindings/fortran" ]; then
    skipped+=("cmake-fortran (needs cmake)")
fi
if have pkg-config && have python3; then
    echo "--- readme (README's C example, cc + pkg-config, no LD_LIBRARY_PATH)"
    if build_readme >"$work/readme.log" 2>&1 && run_bare readme "$work/readme/app" '*ok*'; then
        passed+=(readme)
    else
        cat "$work/readme.log"
        failed+=(readme)
    fi
fi

# gpumem-info as installed (where the tools were built).
if [ -x "$stage_prefix/bin/gpumem-info" ]; then
    echo "--- installed gpumem-info --json"
    if "$stage_prefix/bin/gpumem-info" --json >"$work/info.json" &&
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["backend"]=="host", d' "$work/info.json"; then
        passed+=(gpumem-info)
    else
        cat "$work/info.json"
        failed+=(gpumem-info)
    fi
    echo "--- installed gpumem-info, no LD_LIBRARY_PATH (its install rpath)"
    if run_bare gpumem-info-rpath "$stage_prefix/bin/gpumem-info" '*backend*'; then
        passed+=(gpumem-info-rpath)
    else
        cat "$work/info.json"
        failed+=(gpumem-info)
    fi
fi

# gpumem-viz as installed: the module file itself, standard library only.
if [ -x "$stage_prefix/bin/gpumem-viz" ]; then
    echo "--- installed gpumem-viz on the snapshot fixture"
    if "$stage_prefix/bin/gpumem-viz" "$here/../data/snapshot.json" -o "$work/snapshot.html" &&
        grep -q 'data-status="loading"' "$work/snapshot.html"; then
        passed+=(gpumem-viz)
    else
        failed+=(gpumem-viz)
    fi
fi

echo
echo "passed: ${passed[*]:-none}"
[ ${#skipped[@]} -eq 0 ] || echo "skipped: ${skipped[*]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
[ ${#skipped[@]} -eq 0 ] || exit 77
exit 0
