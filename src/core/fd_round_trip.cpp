// A descriptor through a child process and back (core/fd_round_trip.hpp).
#include "core/fd_round_trip.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/ipc_fd.hpp"

namespace gpumem::detail {

namespace {

// Long enough for a loaded machine to schedule a child that makes two system
// calls; short enough that a stuck child does not stall an init.
constexpr int k_child_timeout_ms = 2000;

// The child's exit status says where it stopped and why: the step's base
// plus the errno where that fits in the status byte.
constexpr int k_child_recv_failed = 64;
constexpr int k_child_send_failed = 128;
constexpr int k_errno_fits = 64;

int child_status(int base, int err) { return base + (err > 0 && err < k_errno_fits ? err : 0); }

[[noreturn]] void child_main(int socket)
{
    for (;;) {
        int fd = -1;
        int err = recv_fd_quietly(socket, &fd);
        if (err == fd_peer_closed)
            _exit(0);
        if (err)
            _exit(child_status(k_child_recv_failed, err));
        err = send_fd_quietly(socket, fd);
        close(fd);
        if (err)
            _exit(child_status(k_child_send_failed, err));
    }
}

std::string errno_text(int err)
{
    switch (err) {
    case fd_nothing_sent: return "nothing was sent";
    case fd_peer_closed: return "the other process closed the socket first";
    case fd_dropped: return "the kernel dropped the descriptor (the open-files limit?)";
    case fd_not_in_message: return "a message came without the descriptor";
    default: return std::strerror(err);
    }
}

// Waits for the child, killing it if it has not finished in time; answers
// its exit status, or -1 if it did not exit normally.
int reap(pid_t child, bool kill_first)
{
    if (kill_first)
        kill(child, SIGKILL);
    int status = 0;
    pid_t r;
    do {
        r = waitpid(child, &status, 0);
    } while (r < 0 && errno == EINTR);
    // ECHILD: the program reaps its children itself (SIGCHLD ignored or a
    // handler that waits for all); the child's answer came over the socket.
    if (r < 0)
        return errno == ECHILD ? 0 : -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool same_open_file(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace

int DescriptorEcho::stop(bool kill_first)
{
    if (socket_ >= 0)
        close(socket_);
    socket_ = -1;
    if (child_ < 0)
        return 0;
    const int status = reap(child_, kill_first);
    child_ = -1;
    return status;
}

FdRoundTrip DescriptorEcho::round_trip(int fd)
{
    FdRoundTrip out;
    if (child_ < 0) {
        int sockets[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
            out.why = std::string("no socket pair for the child: ") + std::strerror(errno);
            return out;
        }
        const pid_t child = fork();
        if (child < 0) {
            out.why = std::string("no child process could be started (fork: ") + std::strerror(errno) +
                      "); sharing between processes was not tried";
            close(sockets[0]);
            close(sockets[1]);
            return out;
        }
        if (child == 0) {
            close(sockets[0]);
            child_main(sockets[1]);
        }
        close(sockets[1]);
        child_ = child;
        socket_ = sockets[0];
    }
    out.checked = true;
    int err = send_fd_quietly(socket_, fd);
    if (err) {
        out.why = "sending a descriptor to a child process: sendmsg: " + errno_text(err);
        // The child still waits for a descriptor: closing our end releases it.
        stop(false);
        return out;
    }
    struct pollfd p = {socket_, POLLIN, 0};
    int ready;
    do {
        ready = poll(&p, 1, k_child_timeout_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) {
        out.why = "a child process did not send the descriptor back within " + std::to_string(k_child_timeout_ms) +
                  " ms";
        stop(true);
        return out;
    }
    if ((err = recv_fd_quietly(socket_, &out.returned))) {
        out.why = "taking the descriptor back from a child process: " + errno_text(err);
        const int status = stop(false);
        if (status >= k_child_recv_failed) {
            const bool receiving = status < k_child_send_failed;
            const int child_err = status - (receiving ? k_child_recv_failed : k_child_send_failed);
            out.why += std::string("; the child process could not ") +
                       (receiving ? "receive the descriptor" : "send it back") +
                       (child_err ? std::string(": ") + std::strerror(child_err) : std::string());
        }
        return out;
    }
    if (!same_open_file(fd, out.returned)) {
        out.why = "the descriptor that came back from a child process names another file";
        close(out.returned);
        out.returned = -1;
    }
    return out;
}

} // namespace gpumem::detail
