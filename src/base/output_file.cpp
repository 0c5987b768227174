#include "base/output_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "base/log.hpp"

namespace gpumem::detail {
namespace {

// The variables launchers set to a process's rank in the job, the most specific first.
const char *const k_rank_variables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK",     "PMIX_RANK",
                                        "MV2_COMM_WORLD_RANK",  "SLURM_PROCID", "PALS_RANKID"};

struct Claim {
    std::string path;    // as asked
    std::string written; // the file this process writes (path, or path with its pid)
    int fd = -1;         // open and flock()ed for the process's life
    dev_t dev = 0;
    ino_t ino = 0;
};

// Claims are few (the trace, and each snapshot path); the oldest are let go beyond this
// many, so that a program writing one snapshot file per step never runs out of descriptors.
constexpr size_t k_max_claims = 64;

std::mutex g_mutex;
std::deque<Claim> g_claims;
pid_t g_owner = 0;

std::string with_pid(const std::string &path)
{
    const size_t slash = path.rfind('/');
    const size_t name = slash == std::string::npos ? 0 : slash + 1;
    size_t dot = path.rfind('.');
    if (dot == std::string::npos || dot <= name)
        dot = path.size();
    return path.substr(0, dot) + "." + std::to_string(long(getpid())) + path.substr(dot);
}

// The claim's file is still the one at its path (a program may have removed or replaced it).
bool still_there(const Claim &c)
{
    struct stat st;
    return stat(c.written.c_str(), &st) == 0 && st.st_dev == c.dev && st.st_ino == c.ino;
}

void drop(std::deque<Claim>::iterator it)
{
    close(it->fd);
    g_claims.erase(it);
}

// Opens and locks `file`: 1 locked, 0 held by another process, -1 not opened (errno).
int try_lock(const std::string &file, Claim *out)
{
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    // A file system without locks (EINVAL, ENOLCK, EOPNOTSUPP) cannot say who else writes: the file is taken.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        // This process's own claim under another spelling of the path is not another process.
        for (const Claim &c : g_claims)
            if (c.dev == st.st_dev && c.ino == st.st_ino) {
                close(fd);
                *out = c;
                return 1;
            }
        close(fd);
        return 0;
    }
    out->written = file;
    out->fd = fd;
    out->dev = st.st_dev;
    out->ino = st.st_ino;
    return 1;
}

// The claim for `path`, made if needed; nullptr with errno set when no file can be opened.
const Claim *claim_locked(const std::string &path, const char *what)
{
    if (g_owner != getpid()) {
        // Inherited through fork: the parent's claims are the parent's (closing our copies leaves its locks).
        for (const Claim &c : g_claims)
            close(c.fd);
        g_claims.clear();
        g_owner = getpid();
    }
    // Only a regular file is claimed: /dev/null, /dev/stderr or a FIFO is shared by nature (and a
    // FIFO would block the open until a reader comes); it is opened when written.
    struct stat st;
    static Claim special;
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        special = Claim{path, path, -1, 0, 0};
        return &special;
    }
    for (auto it = g_claims.begin(); it != g_claims.end(); ++it)
        if (it->path == path) {
            if (still_there(*it))
                return &*it;
            drop(it);
            break;
        }
    Claim c;
    c.path = path;
    int got = try_lock(path, &c);
    if (got < 0)
        return nullptr;
    if (got == 0) {
        const std::string mine = with_pid(path);
        got = try_lock(mine, &c);
        if (got < 0)
            return nullptr;
        log(LogLevel::warn,
            "%s: another process is writing %s, so this one (pid %ld) writes %s; put %%p (process id) or %%r "
            "(MPI rank) in the path to give each process its own file",
            what, path.c_str(), long(getpid()), mine.c_str());
        if (got == 0) // the pid's own file held by another process: a reused pid; write it all the same
            c.written = mine;
    }
    if (c.path != path) { // an alias of an existing claim: share its descriptor
        c.path = path;
        c.fd = fcntl(c.fd, F_DUPFD_CLOEXEC, 0);
        if (c.fd < 0)
            return nullptr;
    }
    if (g_claims.size() >= k_max_claims)
        drop(g_claims.begin());
    g_claims.push_back(c);
    return &g_claims.back();
}

} // namespace

std::string expand_output_path(const char *pattern)
{
    std::string out;
    for (const char *s = pattern; *s; ++s) {
        if (*s != '%' || !s[1]) {
            out += *s;
            continue;
        }
        switch (s[1]) {
        case 'p': out += std::to_string(long(getpid())); break;
        case 'r': {
            const char *rank = nullptr;
            for (const char *name : k_rank_variables)
                if ((rank = secure_getenv(name)) && *rank)
                    break;
            out += rank && *rank ? rank : "0";
            break;
        }
        case '%': out += '%'; break;
        default: out += s[0]; out += s[1]; break;
        }
        ++s;
    }
    // Relative to the directory current now (the trace: at init), not to wherever the program
    // has moved when the file is written at exit.
    if (!out.empty() && out[0] != '/') {
        char cwd[4096];
        if (getcwd(cwd, sizeof cwd))
            out = std::string(cwd) + (cwd[1] ? "/" : "") + out;
    }
    return out;
}

std::string claim_output(const std::string &path, const char *what)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    const Claim *c = claim_locked(path, what);
    return c ? c->written : path;
}

int open_claimed_output(const std::string &path, const char *what, std::string *written)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    *written = path;
    const Claim *c = claim_locked(path, what);
    if (!c)
        return -1;
    *written = c->written;
    if (c->fd < 0) {
        // Not a regular file.  A FIFO without a reader would block the open forever (at
        // gpumem_finalize or exit): opened without blocking, it fails with ENXIO instead, and
        // once open the writes block as usual.
        const int fd = open(c->written.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666);
        if (fd < 0)
            return -1;
        const int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
            const int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        return fd;
    }
    const int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        const int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

} // namespace gpumem::detail
