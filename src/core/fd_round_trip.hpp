// A descriptor sent to another process and back, as the self-test's proof
// that this process may share memory handles with another one.
//
// Why a child: exporting a handle and importing it again in one process
// never crosses the boundary that containers guard.  The step that a seccomp
// profile or a security module refuses is the kernel's passing of an open
// file to another process (SCM_RIGHTS over an AF_UNIX socket, which is how
// gpumem_ipc_send_fd and every MPI launcher hand handles over).
//
// How: fork a child that only receives descriptors and sends each back
// (async-signal-safe system calls, nothing else: the parent may have other
// threads and a GPU context the child must not touch), then check that what
// came back is the same open file.  One child serves every descriptor of a
// device's self-test: a fork of a process holding a GPU context costs
// milliseconds.  The driver's import of the returned descriptor happens in
// this process: a forked child of a process with a GPU context may not make
// a context of its own, and the import of a received descriptor is the same
// driver call in either process.
//
// Limits: where fork itself is refused (a process limit, a sandbox without
// clone) the check is not made and says so: it cannot tell a sharing
// problem from a process limit.  A child that does not answer within
// k_child_timeout_ms is killed.
#pragma once

#include <sys/types.h>

#include <string>

namespace gpumem::detail {

struct FdRoundTrip {
    bool checked = false; // false: no child could be started (why says so)
    std::string why;      // empty when the descriptor came back intact
    int returned = -1;    // the descriptor that came back (the caller closes it)
};

class DescriptorEcho {
public:
    DescriptorEcho() = default;
    DescriptorEcho(const DescriptorEcho &) = delete;
    DescriptorEcho &operator=(const DescriptorEcho &) = delete;
    ~DescriptorEcho() { stop(false); }

    // Sends `fd` (which stays the caller's) to the child, started at the
    // first call, and takes it back.
    FdRoundTrip round_trip(int fd);

private:
    // Closes our end (the child then exits) and waits for it; answers the
    // child's exit status, or -1.
    int stop(bool kill_first);

    pid_t child_ = -1;
    int socket_ = -1;
};

} // namespace gpumem::detail
