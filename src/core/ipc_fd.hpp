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

} // namespace gpumem::detail
