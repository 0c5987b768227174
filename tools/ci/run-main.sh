#!/usr/bin/env bash
# Build gpumem and show it working: gpumem-info, then the pool_loop example.
# Installs the build tools first where they are missing (apt; sudo if not root).
# usage: tools/ci/run-main.sh
# SPDX-License-Identifier: MIT
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/ci/common.sh
. "$here/common.sh"
cd "$here/../.."

ensure_build_tools
configure_build build
# Only what runs here (the library, gpumem-info, the example): the tests,
# fakes and fuzzers are tools/ci/run-tests.sh's to build.
meson compile -C build gpumem-info pool_loop

echo
echo "== build/tools/gpumem-info"
build/tools/gpumem-info
echo
echo "== build/examples/pool_loop"
build/examples/pool_loop
