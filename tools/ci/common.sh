# shellcheck shell=bash
# Sourced by tools/ci/run-main.sh and tools/ci/run-tests.sh: what both need before
# building.  Not a program of its own.
# SPDX-License-Identifier: MIT

# Install meson, ninja, a C/C++ compiler and pkg-config where missing (apt:
# Debian, Ubuntu).  Nothing is installed when everything is there already.
ensure_build_tools() {
    local wanted="meson:meson ninja:ninja-build gcc:g++ g++:g++ pkg-config:pkg-config"
    local missing="" pair cmd pkg
    for pair in $wanted; do
        cmd=${pair%%:*}
        pkg=${pair#*:}
        if ! command -v "$cmd" >/dev/null 2>&1; then
            case " $missing " in *" $pkg "*) ;; *) missing="$missing $pkg" ;; esac
        fi
    done
    if [ -n "$missing" ]; then
        if ! command -v apt-get >/dev/null 2>&1; then
            echo "error: missing$missing, and no apt-get here: install them with your package manager" >&2
            exit 1
        fi
        local sudo=""
        if [ "$(id -u)" -ne 0 ]; then
            if ! command -v sudo >/dev/null 2>&1; then
                echo "error: missing$missing; not root and no sudo: install them as root" >&2
                exit 1
            fi
            sudo=sudo
        fi
        echo "installing:$missing"
        $sudo apt-get update
        # shellcheck disable=SC2086 # $missing is a list of package names
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    fi
    # meson.build asks for meson >= 1.0 (Debian 12 has 1.0.1; Ubuntu 22.04's 0.61 is too old).
    case "$(meson --version)" in
    0.*)
        echo "error: meson $(meson --version) is older than 1.0: install a newer one (pip3 install --user meson)" >&2
        exit 1
        ;;
    esac
}

# configure_build DIR [meson options...]: set DIR up once; later calls only
# apply the options given (ninja reconfigures by itself when meson files change).
configure_build() {
    local dir=$1
    shift
    if [ -f "$dir/meson-private/coredata.dat" ]; then
        if [ $# -gt 0 ]; then
            meson configure "$dir" "$@"
        fi
    else
        meson setup "$dir" "$@"
    fi
}
