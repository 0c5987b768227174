#include "base/cpu_reach.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define GPUMEM_UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#else
#define GPUMEM_UNDER_VALGRIND() false
#endif

// Design note: why pipes.
// - The kernel copies to and from a pipe with copy_from_user/copy_to_user,
//   which answer EFAULT where the CPU would fault, and cost one plain system
//   call (about 0.25 us over the call itself on the CI machine).
//   process_vm_readv answers the same but pins each page first: about 2 us a
//   call here and on the H200 machines, 30% of a 4 KiB pageable copy.
// - Read: one writev of the first byte of each page (up to 1024 pages a call)
//   into a process-wide, non-blocking "sink" pipe that nobody reads but to
//   empty it when it is full.  A short count is the pipe full or a fault: the
//   rest is tried again, and a fault then answers EFAULT at once.
// - Write: a second pipe, empty between checks and used by one check at a
//   time: a writev takes the first byte of each page (a fault: not readable),
//   a readv puts each back where it was (a fault: not writable), and what a
//   fault left in the pipe is drained.  (No thread-local pipe: gpumem's static
//   TLS has a budget, tests/abi/check_static_tls.py.)
// - Where no pipe can be made (no file descriptors left), process_vm_readv and
//   _writev answer instead.  So they do under valgrind, which checks that the
//   bytes a writev sends are initialised (the first byte of a fresh malloc'd
//   page is not) but not the other process's side of process_vm_readv.
// Limits: only the first byte of each page is tried, which is what the MMU
// decides per page; a concurrent munmap can still unmap the range between the
// check and its use (the caller's race, as with any pointer).

namespace gpumem::detail {
namespace {

constexpr size_t k_batch = 1024; // IOV_MAX

struct Pipe {
    int read_fd = -1, write_fd = -1;
    bool open()
    {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
            return false;
        read_fd = fds[0];
        write_fd = fds[1];
        return true;
    }
    void drain() const
    {
        char scratch[4096];
        while (read(read_fd, scratch, sizeof scratch) > 0) {
        }
    }
    ~Pipe()
    {
        if (read_fd >= 0) {
            close(read_fd);
            close(write_fd);
        }
    }
};

// The sink, made on first use and kept for the process's life.
const Pipe *sink()
{
    static Pipe *made = [] {
        auto *p = new Pipe;
        if (!p->open()) {
            delete p;
            return static_cast<Pipe *>(nullptr);
        }
        (void)fcntl(p->write_fd, F_SETPIPE_SZ, 1 << 20); // fewer drains; the default 64 KiB will do
        return p;
    }();
    return made;
}

// The write check's pipe, empty between checks, one check at a time (a write
// check is for pageable destinations only, which the runtime copies
// synchronously anyway).
std::mutex g_checked_mutex;
const Pipe *checked_pipe()
{
    static Pipe *made = [] {
        auto *p = new Pipe;
        if (!p->open()) {
            delete p;
            return static_cast<Pipe *>(nullptr);
        }
        return p;
    }();
    return made;
}

// writev and readv as system calls: a sanitizer's interceptors of the libc
// functions would check the very memory being asked about (and report a
// freed page as a use after free) before the kernel could answer.
ssize_t kernel_writev(int fd, const iovec *iov, size_t count)
{
    return syscall(SYS_writev, fd, iov, static_cast<int>(count));
}
ssize_t kernel_readv(int fd, const iovec *iov, size_t count)
{
    return syscall(SYS_readv, fd, iov, static_cast<int>(count));
}

// The pages of [first, end) from `at`, as 1-byte iovecs over `remote`; the count.
size_t pages_from(uintptr_t at, uintptr_t end, uintptr_t page, iovec *remote)
{
    size_t count = 0;
    for (uintptr_t q = at; q < end && count < k_batch; q = (q / page + 1) * page, ++count)
        remote[count] = iovec{reinterpret_cast<void *>(q), 1};
    return count;
}

// How many of remote[0, count) the sink took before a fault (count: all).
size_t readable_prefix(const Pipe &s, const iovec *remote, size_t count)
{
    size_t done = 0;
    while (done < count) {
        const ssize_t put = kernel_writev(s.write_fd, remote + done, count - done);
        if (put > 0) {
            done += static_cast<size_t>(put);
            continue;
        }
        if (put < 0 && errno == EAGAIN) {
            s.drain();
            continue;
        }
        break; // EFAULT at remote[done]
    }
    return done;
}

// How many of remote[0, count) can be read and written back, through the checked pipe.
size_t writable_prefix(const Pipe &checked, const iovec *remote, size_t count)
{
    const ssize_t took = kernel_writev(checked.write_fd, remote, count);
    if (took <= 0)
        return 0;
    const ssize_t put = kernel_readv(checked.read_fd, remote, static_cast<size_t>(took));
    const size_t good = put < 0 ? 0 : static_cast<size_t>(put);
    if (good < count)
        checked.drain();
    return good;
}

// The same answers through process_vm_readv/_writev (no pipe could be made).
size_t vm_prefix(const iovec *remote, size_t count, bool write)
{
    unsigned char bytes[k_batch];
    iovec local[k_batch];
    for (size_t i = 0; i < count; ++i)
        local[i] = iovec{&bytes[i], 1};
    const ssize_t got = process_vm_readv(getpid(), local, count, remote, count, 0);
    size_t good = got < 0 ? 0 : static_cast<size_t>(got);
    if (write && good > 0) {
        const ssize_t put = process_vm_writev(getpid(), local, good, remote, good, 0);
        good = put < 0 ? 0 : static_cast<size_t>(put);
    }
    return good;
}

} // namespace

bool cpu_reaches(void *p, size_t n, bool write, uintptr_t *bad)
{
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t first = reinterpret_cast<uintptr_t>(p), end = first + std::max<size_t>(n, 1);
    static const bool under_valgrind = GPUMEM_UNDER_VALGRIND();
    const Pipe *through = under_valgrind ? nullptr : write ? checked_pipe() : sink();
    std::unique_lock<std::mutex> one_at_a_time(g_checked_mutex, std::defer_lock);
    if (write)
        one_at_a_time.lock();
    iovec remote[k_batch];
    const int saved = errno;
    bool ok = true;
    for (uintptr_t at = first; at < end;) {
        const size_t count = pages_from(at, end, page, remote);
        const size_t good = !through ? vm_prefix(remote, count, write)
                            : write  ? writable_prefix(*through, remote, count)
                                     : readable_prefix(*through, remote, count);
        if (good < count) {
            *bad = reinterpret_cast<uintptr_t>(remote[good].iov_base);
            ok = false;
            break;
        }
        at = (reinterpret_cast<uintptr_t>(remote[count - 1].iov_base) / page + 1) * page;
    }
    errno = saved;
    return ok;
}

bool cpu_mapped(void *p, size_t n, bool write, uintptr_t *bad)
{
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) / page * page;
    const uintptr_t end = reinterpret_cast<uintptr_t>(p) + std::max<size_t>(n, 1);
    const int saved = errno;
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) {
        errno = saved;
        return cpu_reaches(p, n, false, bad);
    }
    // The lines come sorted by address: walk them with `at`, the first byte
    // not yet found in a mapping with the wanted permissions.
    uintptr_t at = first;
    char *line = nullptr;
    size_t capacity = 0;
    while (at < end && getline(&line, &capacity, maps) > 0) {
        unsigned long lo = 0, hi = 0;
        char perms[5] = {};
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
            continue;
        if (hi <= at)
            continue;
        if (lo > at || perms[0] != 'r' || (write && perms[1] != 'w'))
            break; // a hole before this mapping, or a mapping without the permission
        at = hi;
    }
    free(line);
    fclose(maps);
    errno = saved;
    if (at >= end)
        return true;
    *bad = std::max(at, reinterpret_cast<uintptr_t>(p));
    return false;
}

} // namespace gpumem::detail
