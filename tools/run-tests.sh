#!/usr/bin/env bash
# Build gpumem and run every test suite; the last line is "N passed, N failed"
# (", N skipped" added when tests were skipped), and the exit status is
# non-zero when any test failed.
# Installs the build tools first where they are missing (apt; sudo if not root).
#
# usage: tools/run-tests.sh [--sanitize] [-- MESON-TEST-ARGS...]
#   --sanitize  build in build-asan with AddressSanitizer and UBSan, and stop
#               each test at the first error or leak
#   after --    passed to meson test (e.g. --suite examples)
# SPDX-License-Identifier: MIT
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/common.sh
. "$here/common.sh"
cd "$here/.."

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
    --)
        shift
        break
        ;;
    -h | --help)
        sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: $0 [--sanitize] [-- MESON-TEST-ARGS...]" >&2
        exit 2
        ;;
    esac
    shift
done

ensure_build_tools
configure_build "$dir" ${setup_opts[@]+"${setup_opts[@]}"}
meson compile -C "$dir"

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
    echo "error: meson test printed no summary (exit status $rc)" >&2
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
