# shellcheck shell=bash
# Sourced by gpu-suite.sh and gpu-multi.sh: how both take their directories,
# pick their steps, run a step's command and read its exit status, and name
# the GPUs in their summaries.  Not a program of its own.
# SPDX-License-Identifier: MIT

# steps_dirs NAME BUILD_DIR OUT_DIR: sets $build and $out to the two as absolute paths,
# making OUT_DIR; exits 2 with a message naming NAME when either cannot be had.
# shellcheck disable=SC2034 # $build and $out are for the sourcing script
steps_dirs() {
    build=$(cd "$2" 2>/dev/null && pwd) || {
        echo "$1: no build directory $2" >&2
        exit 2
    }
    if ! mkdir -p "$3" || ! out=$(cd "$3" && pwd); then
        echo "$1: cannot create $3" >&2
        exit 2
    fi
}

# in_list LIST ITEM: whether ITEM is one of the comma-separated LIST's.
in_list() { [[ ,$1, == *",$2,"* ]]; }

# steps_timed LIMIT FILE COMMAND...: COMMAND with no input, its output appended to FILE,
# for at most LIMIT seconds; returns its exit status (124 or 137: timed out).  timeout
# signals the command's whole process group: forked children too.
steps_timed() {
    local limit=$1 file=$2
    shift 2
    timeout -k 5 "$limit" "$@" </dev/null >>"$file" 2>&1
}

# steps_outcome STATUS: what a test's exit status says (0 passed, 77 skipped, else failed).
steps_outcome() {
    case $1 in
    0) echo passed ;;
    77) echo skipped ;;
    *) echo failed ;;
    esac
}

# steps_gpus FIELDS: one "gpu:" line per device, nvidia-smi's FIELDS of it (none without nvidia-smi).
steps_gpus() {
    command -v nvidia-smi >/dev/null 2>&1 &&
        nvidia-smi --query-gpu="$1" --format=csv,noheader 2>&1 | sed 's/^/gpu:       /'
}
