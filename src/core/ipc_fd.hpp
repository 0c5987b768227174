// Passing file descriptors between processes over a connected AF_UNIX socket
// (SCM_RIGHTS).  A descriptor number written into a pipe means nothing in
// another process; the kernel has to duplicate the open file into the
// receiver, which is what SCM_RIGHTS does.
#pragma once

#include "base/error.hpp"

namespace gpumem::detail {

// Send a duplicate of `fd` (which stays the caller's) with one byte of payload.
// Failures: GPUMEM_ERROR_IPC with the system call's error and a remedy.
status_t send_fd(int socket, int fd);

// Receive one descriptor (close-on-exec) sent by send_fd; the caller owns it.
// A message without a descriptor, or a closed peer: GPUMEM_ERROR_IPC.
status_t recv_fd(int socket, int *fd);

// The same two transfers as bare system calls, with no message made and no
// memory allocated: async-signal-safe, so a child forked from a process with
// other threads may call them.  Each answers 0, the system call's errno, or
// one of these (negative, so never an errno):
enum FdTransferFailure : int {
    fd_nothing_sent = -1,   // sendmsg sent no byte
    fd_peer_closed = -2,    // the peer closed the socket before sending one
    fd_dropped = -3,        // the kernel dropped the descriptor (MSG_CTRUNC: the open-files limit)
    fd_not_in_message = -4, // a message arrived without a descriptor
};
int send_fd_quietly(int socket, int fd);
int recv_fd_quietly(int socket, int *fd);

} // namespace gpumem::detail
