// Files gpumem writes on the program's behalf (GPUMEM_TRACE, snapshots): the path's
// %p and %r are expanded, and each file is claimed by one process for as long as that
// process lives, so that the ranks of an MPI job started with one GPUMEM_TRACE never
// overwrite each other's files.
//
// A claim is the file opened (created if missing, not truncated) and flock()ed
// exclusively.  Another live process holding the same path makes this one write
// "<stem>.<pid><ext>" instead, with a warning.  The lock goes with the process (an exit
// or a crash), so the next run of the same program writes the plain path again.
// flock reaches across the nodes of a job on NFS (Linux maps it to NFS locks).  Only regular
// files are claimed: /dev/null, /dev/stderr or a FIFO is written as it is.
#pragma once

#include <string>

namespace gpumem::detail {

// The path with %p = this process's id, %r = its MPI rank (from OMPI_COMM_WORLD_RANK,
// PMI_RANK, PMIX_RANK, MV2_COMM_WORLD_RANK, SLURM_PROCID or PALS_RANKID, the first
// that is set; 0 when none is), %% = %.  Any other % is kept as it is.  A relative path is
// made absolute from the current directory, so the file lands where it was named.
std::string expand_output_path(const char *pattern);

// Claims the expanded path for this process (see above) and returns a descriptor
// positioned at 0 of the now empty file, and in *written the path really used.
// Returns -1 with errno set when the file cannot be opened (ENXIO: a FIFO that no
// process reads, which is never waited for).  `what` names the
// writer in the warning ("GPUMEM_TRACE", "the snapshot").  The caller closes the
// returned descriptor (the claim keeps its own).
int open_claimed_output(const std::string &path, const char *what, std::string *written);

// Claims the path now, without writing (GPUMEM_TRACE at init: the second process
// learns at its start, not at its exit, that it writes elsewhere).  Returns the
// path this process will write, or `path` itself when the file cannot be opened
// (the writer reports that when it writes).
std::string claim_output(const std::string &path, const char *what);

} // namespace gpumem::detail
