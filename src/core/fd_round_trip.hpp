// A descriptor sent to another process and back, as the self-test's proof
// that this process may share memory handles with another one.
//
// Why a child: exporting a handle and importing it again in one process
// never crosses the boundary that containers guard.  The step that a seccomp
// profile or a security module refuses is the kernel's passing of an open
// file to another process (SCM_RIGHTS over an AF_UNIX socket, which is how
// gpumem_ipc_send_fd and every MPI launcher hand handles over).
//
// How: fork a child that only receives the descriptor and sends it back
// (async-signal-safe system calls, nothing else: the parent may have other
// threads and a GPU context the child must not touch), then check that what
// came back is the same open file.  The driver's import of the returned
// descriptor then happens in this process: a forked child of a process with
// a GPU context may not make a context of its own, and the import of a
// received descriptor is the same driver call in either process.
//
// Limits: where fork itself is refused (a process limit, a sandbox without
// clone) the check is not made and says so: it cannot tell a sharing
// problem from a process limit.  The child is waited for at most
// k_child_timeout_ms, then killed.
#pragma once

#include <string>

namespace gpumem::detail {

struct FdRoundTrip {
    bool checked = false; // false: no child could be started (why says so)
    std::string why;      // empty when the descriptor came back intact
    int returned = -1;    // the descriptor that came back (the caller closes it)
};

// Sends `fd` (which stays the caller's) to a forked child and takes it back.
FdRoundTrip round_trip_through_child(int fd);

} // namespace gpumem::detail
