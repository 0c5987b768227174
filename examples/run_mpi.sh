#!/bin/sh
# Run an MPI example on N local ranks (suite 'mpi'): exits 77 (skipped) when meson
# found no MPI.  usage: run_mpi.sh MPIRUN PROGRAM NRANKS
# SPDX-License-Identifier: MIT
mpirun=$1 program=$2 ranks=${3:-2}
if [ -z "$mpirun" ] || [ -z "$program" ]; then
    echo "no MPI found at configure time (dependency('mpi', language: 'c') and mpirun/mpiexec):" \
        "skipped; on Debian: apt install openmpi-bin libopenmpi-dev, then reconfigure"
    exit 77
fi
opts=""
case $("$mpirun" --version 2>&1) in
*"Open MPI"* | *OpenRTE*)
    # --oversubscribe: more ranks than cores is fine for a test.  Open MPI refuses
    # root unless told; CI runs as root in a container.  CMA (process_vm_readv)
    # is often forbidden in containers: shared-memory transfers use copy-in/out.
    opts="--oversubscribe --mca btl_vader_single_copy_mechanism none"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ;;
esac
# shellcheck disable=SC2086 # a list of options
exec "$mpirun" $opts -np "$ranks" "$program"
