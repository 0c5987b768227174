#include "core/ipc_fd.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gpumem::detail {

namespace {

constexpr const char *k_socket_hint = "is the socket a connected AF_UNIX socket?";
// Room for a few descriptors: a peer that sends more than one must not make
// us lose the first (the kernel drops what does not fit).
constexpr int k_max_fds = 8;

union Control {
    struct cmsghdr align; // cmsghdr alignment for the buffer
    char buf[CMSG_SPACE(sizeof(int) * k_max_fds)];
};

} // namespace

int send_fd_quietly(int socket, int fd)
{
    char byte = 'g';
    struct iovec iov;
    iov.iov_base = &byte;
    iov.iov_len = 1;
    Control control;
    std::memset(&control, 0, sizeof control);
    struct msghdr msg;
    std::memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int));
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);

    ssize_t n;
    do {
        // MSG_NOSIGNAL: a closed peer is an error to report, not a SIGPIPE
        // that kills the caller.
        n = sendmsg(socket, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno;
    return n == 1 ? 0 : fd_nothing_sent;
}

int recv_fd_quietly(int socket, int *fd)
{
    char byte = 0;
    struct iovec iov;
    iov.iov_base = &byte;
    iov.iov_len = 1;
    Control control;
    std::memset(&control, 0, sizeof control);
    struct msghdr msg;
    std::memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;

    ssize_t n;
    do {
        n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno;

    int received = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int d;
            std::memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
            if (received < 0)
                received = d;
            else
                close(d); // more than one was sent: keep the first, leak none
        }
    }
    if (received >= 0) {
        *fd = received;
        return 0;
    }
    if (n == 0)
        return fd_peer_closed;
    return (msg.msg_flags & MSG_CTRUNC) ? fd_dropped : fd_not_in_message;
}

status_t send_fd(int socket, int fd)
{
    if (socket < 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot send a descriptor on socket %d: not a descriptor", socket);
    if (fd < 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot send descriptor %d: not a descriptor; pass one from an export call", fd);
    // Checked apart from the socket so that the message says which one is bad.
    if (fcntl(fd, F_GETFD) < 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot send descriptor %d: fcntl(F_GETFD) failed: %s; pass an open descriptor from an export "
                    "call",
                    fd, std::strerror(err));
    }
    const int err = send_fd_quietly(socket, fd);
    if (err == fd_nothing_sent)
        return fail(GPUMEM_ERROR_IPC, "cannot send descriptor %d on socket %d: sendmsg sent nothing; %s", fd, socket,
                    k_socket_hint);
    if (err) {
        const char *remedy = k_socket_hint;
        if (err == EPIPE || err == ECONNRESET)
            remedy = "the receiving process closed its end; keep it open until the descriptor is received";
        else if (err == EAGAIN || err == EWOULDBLOCK)
            remedy = "the socket is non-blocking and its buffer is full; retry when it is writable";
        return fail(GPUMEM_ERROR_IPC, "cannot send descriptor %d on socket %d: sendmsg failed: %s; %s", fd, socket,
                    std::strerror(err), remedy);
    }
    return GPUMEM_SUCCESS;
}

status_t recv_fd(int socket, int *fd)
{
    if (socket < 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot receive a descriptor on socket %d: not a descriptor",
                    socket);
    const int err = recv_fd_quietly(socket, fd);
    switch (err) {
    case 0: return GPUMEM_SUCCESS;
    case fd_peer_closed:
        return fail(GPUMEM_ERROR_IPC,
                    "cannot receive a descriptor on socket %d: the peer closed the socket before sending one; %s",
                    socket, k_socket_hint);
    case fd_dropped:
        return fail(GPUMEM_ERROR_IPC,
                    "cannot receive a descriptor on socket %d: the kernel dropped it; this process may be at its "
                    "open-files limit (raise ulimit -n)",
                    socket);
    case fd_not_in_message:
        return fail(GPUMEM_ERROR_IPC,
                    "cannot receive a descriptor on socket %d: a message arrived without one; the peer must send with "
                    "gpumem_ipc_send_fd, and nothing else may write to this socket",
                    socket);
    default: {
        const char *remedy = k_socket_hint;
        if (err == EAGAIN || err == EWOULDBLOCK)
            remedy = "the socket is non-blocking and nothing has arrived; retry when it is readable";
        return fail(GPUMEM_ERROR_IPC, "cannot receive a descriptor on socket %d: recvmsg failed: %s; %s", socket,
                    std::strerror(err), remedy);
    }
    }
}

} // namespace gpumem::detail
