#!/usr/bin/env bash
# Build gpumem and run every test suite; the last line is "N passed, N failed"
# (", N skipped" added when tests were skipped), and the exit status is
# non-zero when any test failed.
# Installs the build tools first where they are missing (apt; sudo if not root).
#
# usage: tools/ci/run-tests.sh [--sanitize | --tsan] [-- MESON-TEST-ARGS...]
#   --sanitize  build in build-asan with AddressSanitizer and UBSan, and stop
#               each test at the first error or leak
#   --tsan      build in build-tsan with ThreadSanitizer (only what the chosen
#               tests need) and fail a test at its first report; without
#               MESON-TEST-ARGS it runs the suite 'threads'
#   after --    passed to meson test (e.g. --suite examples)
# SPDX-License-Identifier: MIT
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/ci/common.sh
. "$here/common.sh"
cd "$here/../.."

dir=build
setup_opts=()
test_opts=()
while [ $# -gt 0 ]; do
    case $1 in
    --sanitize)
        dir=build-asan
        # b_lundef=false: the sanitizer runtimes resolve symbols at load time.
        setup_opts=('-Db_sanitize=address,undefined' -Db_lundef=false)
        test_opts=(--timeout-multiplier 3)
        ;;
    --tsan)
        dir=build-tsan
        setup_opts=('-Db_sanitize=thread' -Db_lundef=false)
        # TSan slows threaded code 5-15 times.
        test_opts=(--timeout-multiplier 5)
        ;;
    --)
        shift
        break
        ;;
    -h | --help)
        sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: $0 [--sanitize | --tsan] [-- MESON-TEST-ARGS...]" >&2
        exit 2
        ;;
    esac
    shift
done

ensure_build_tools
configure_build "$dir" ${setup_opts[@]+"${setup_opts[@]}"}

if [ "$dir" = build-tsan ]; then
    [ $# -gt 0 ] || set -- --suite threads
    # Build only the executables and libraries the chosen tests name (the whole
    # tree under TSan would double CI's compile time), then run them as built.
    targets=$(meson introspect "$dir" --tests --targets | python3 -c '
import json, os, sys
data = json.load(sys.stdin)
args, suites, names = sys.argv[2:], set(), set()
i = 0
while i < len(args):
    if args[i] == "--suite" and i + 1 < len(args):
        suites.add(args[i + 1]); i += 2
    elif args[i].startswith("--suite="):
        suites.add(args[i][8:]); i += 1
    elif args[i].startswith("-"):
        i += 1
    else:
        names.add(args[i]); i += 1
files = {t["id"]: t["filename"] for t in data["targets"]}
out = set()
for t in data["tests"]:
    mine = {s.split(":")[-1] for s in t["suite"]} | set(t["suite"])
    if (suites and not suites & mine) or (names and t["name"] not in names):
        continue
    for dep in t["depends"]:
        out.update(os.path.relpath(f, sys.argv[1]) for f in files.get(dep, []))
print(" ".join(sorted(out)))
' "$dir" "$@")
    if [ -z "$targets" ]; then
        echo "error: no test matches: $*" >&2
        exit 1
    fi
    # shellcheck disable=SC2086 # a list of file names without spaces
    ninja -C "$dir" $targets
    test_opts+=(--no-rebuild)
    # Any report fails its test: the first one ends the process with a non-zero status.
    # second_deadlock_stack: both stacks of a lock-order inversion.
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
else
    meson compile -C "$dir"
fi

if [ "$dir" = build-asan ]; then
    # Any report fails its test: halt at the first error, leaks included.
    export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
meson test -C "$dir" --print-errorlogs ${test_opts[@]+"${test_opts[@]}"} "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

# meson's summary: "Ok:  12", "Expected Fail:  0", ... (the last of each wins).
count() {
    sed 's/\x1b\[[0-9;]*m//g' "$log" | awk -v key="$1:" 'index($0, key) == 1 { n = $NF } END { print n + 0 }'
}
if ! sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -q '^Ok:'; then
    # meson itself stopped (a signal, a build error inside meson test, the
    # machine out of memory or disk): say what finished, what never did and
    # what the machine looked like, so that one CI log is enough to find it.
    echo "error: meson test printed no summary (exit status $rc$([ "$rc" -gt 128 ] && echo ", signal $((rc - 128))"))" >&2
    tools/ci/unfinished-tests.py "$dir" ${test_opts[@]+"${test_opts[@]}"} "$@" >&2 || true
    { echo "--- the machine:"; free -m; df -h . /tmp; dmesg 2>/dev/null | tail -n 15; } >&2 || true
    exit $((rc ? rc : 1))
fi
passed=$(($(count Ok) + $(count 'Expected Fail')))
failed=$(($(count Fail) + $(count 'Unexpected Pass') + $(count Timeout)))
skipped=$(count Skipped)

echo
line="$passed passed, $failed failed"
if [ "$skipped" -gt 0 ]; then
    line="$line, $skipped skipped"
fi
echo "$line"
if [ "$failed" -gt 0 ]; then
    exit 1
fi
# A failure the summary does not count (a build error inside meson test, say).
exit "$rc"
