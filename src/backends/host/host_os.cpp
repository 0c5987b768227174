// What the host backend asks of the operating system: page size, memory
// totals, the CPU's name, aligned mappings, random identifiers.
#include "backends/host/host_backend.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace gpumem::detail::host {

size_t page_size()
{
    static const size_t size = [] {
        long v = sysconf(_SC_PAGESIZE);
        return v > 0 ? static_cast<size_t>(v) : size_t{4096};
    }();
    return size;
}

bool round_up(size_t value, size_t align, size_t *out)
{
    size_t sum;
    if (__builtin_add_overflow(value, align - 1, &sum))
        return false;
    *out = sum & ~(align - 1);
    return true;
}

uint64_t memory_ceiling()
{
    static const uint64_t ceiling = [] {
        struct sysinfo si;
        if (sysinfo(&si) != 0)
            return UINT64_MAX;
        uint64_t unit = si.mem_unit ? si.mem_unit : 1;
        return (static_cast<uint64_t>(si.totalram) + static_cast<uint64_t>(si.totalswap)) * unit;
    }();
    return ceiling;
}

namespace {

// First line of a small file, without the newline; false when unreadable.
bool read_line(const std::string &path, std::string *line)
{
    FILE *f = std::fopen(path.c_str(), "re");
    if (!f)
        return false;
    char buf[512];
    bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
    std::fclose(f);
    if (!ok)
        return false;
    buf[std::strcspn(buf, "\n")] = '\0';
    *line = buf;
    return true;
}

bool read_u64(const std::string &path, uint64_t *value)
{
    std::string line;
    if (!read_line(path, &line) || line.empty() || line[0] < '0' || line[0] > '9')
        return false; // "max" (cgroup v2: no limit) lands here too
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(line.c_str(), &end, 10);
    if (errno != 0)
        return false;
    *value = v;
    return true;
}

// A "key value" line of memory.stat.
bool read_stat(const std::string &path, const char *key, uint64_t *value)
{
    FILE *f = std::fopen(path.c_str(), "re");
    if (!f)
        return false;
    char name[128];
    unsigned long long v;
    bool found = false;
    while (std::fscanf(f, "%127s %llu", name, &v) == 2) {
        if (std::strcmp(name, key) == 0) {
            *value = v;
            found = true;
            break;
        }
    }
    std::fclose(f);
    return found;
}

// The tightest memory limit of the process's cgroup and its ancestors, and
// the memory that cgroup still has (limit - usage, page cache that can be
// dropped not counted as used).  False when no limit applies.
bool cgroup_memory(uint64_t *limit, uint64_t *available)
{
    FILE *f = std::fopen("/proc/self/cgroup", "re");
    if (!f)
        return false;
    std::string v1_path, v2_path;
    char buf[1024];
    while (std::fgets(buf, sizeof buf, f)) {
        buf[std::strcspn(buf, "\n")] = '\0';
        // "hierarchy-id:controllers:path"
        char *c1 = std::strchr(buf, ':');
        char *c2 = c1 ? std::strchr(c1 + 1, ':') : nullptr;
        if (!c2)
            continue;
        std::string controllers(c1 + 1, c2);
        if (std::strncmp(buf, "0:", 2) == 0 && controllers.empty())
            v2_path = c2 + 1;
        else if (("," + controllers + ",").find(",memory,") != std::string::npos)
            v1_path = c2 + 1;
    }
    std::fclose(f);

    // A v1 memory hierarchy wins (hybrid systems keep v2 without memory).
    std::string base, path, limit_file, usage_file, stat_file, inactive_key;
    if (!v1_path.empty()) {
        base = "/sys/fs/cgroup/memory";
        path = v1_path;
        limit_file = "/memory.limit_in_bytes";
        usage_file = "/memory.usage_in_bytes";
        stat_file = "/memory.stat";
        inactive_key = "total_inactive_file";
    } else if (!v2_path.empty()) {
        base = "/sys/fs/cgroup";
        path = v2_path;
        limit_file = "/memory.max";
        usage_file = "/memory.current";
        stat_file = "/memory.stat";
        inactive_key = "inactive_file";
    } else {
        return false;
    }

    bool found = false;
    uint64_t best_limit = UINT64_MAX, best_available = UINT64_MAX;
    for (;;) {
        std::string dir = base + (path == "/" ? std::string() : path);
        uint64_t lim;
        if (read_u64(dir + limit_file, &lim) && lim < best_limit) {
            uint64_t usage = 0, inactive = 0;
            read_u64(dir + usage_file, &usage);
            read_stat(dir + stat_file, inactive_key.c_str(), &inactive);
            usage = usage > inactive ? usage - inactive : 0;
            best_limit = lim;
            best_available = std::min(best_available, lim > usage ? lim - usage : 0);
            found = true;
        }
        if (path.empty() || path == "/")
            break;
        size_t slash = path.rfind('/');
        path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
    if (found) {
        *limit = best_limit;
        *available = best_available;
    }
    return found;
}

} // namespace

void memory_info(uint64_t *total, uint64_t *available)
{
    uint64_t t = 0, a = 0;
    bool have_total = false, have_available = false;
    if (FILE *f = std::fopen("/proc/meminfo", "re")) {
        char name[64];
        unsigned long long kib;
        char unit[16];
        while (std::fscanf(f, "%63s %llu %15[^\n]", name, &kib, unit) >= 2) {
            if (std::strcmp(name, "MemTotal:") == 0) {
                t = static_cast<uint64_t>(kib) * 1024;
                have_total = true;
            } else if (std::strcmp(name, "MemAvailable:") == 0) {
                a = static_cast<uint64_t>(kib) * 1024;
                have_available = true;
            }
            if (have_total && have_available)
                break;
        }
        std::fclose(f);
    }
    if (!have_total || !have_available) {
        struct sysinfo si;
        if (sysinfo(&si) == 0) {
            uint64_t unit = si.mem_unit ? si.mem_unit : 1;
            if (!have_total)
                t = static_cast<uint64_t>(si.totalram) * unit;
            if (!have_available) // kernels before 3.14: free + buffers
                a = (static_cast<uint64_t>(si.freeram) + static_cast<uint64_t>(si.bufferram)) * unit;
        }
    }
    uint64_t limit, cg_available;
    if (cgroup_memory(&limit, &cg_available)) {
        t = std::min(t, limit);
        a = std::min(a, cg_available);
    }
    *total = t;
    *available = std::min(a, t);
}

std::string machine_id()
{
    std::string id;
    if (!read_line("/etc/machine-id", &id) || id.size() != 32)
        return std::string();
    for (char c : id)
        if (!std::isxdigit(static_cast<unsigned char>(c)))
            return std::string();
    for (char &c : id)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return id;
}

std::string machine_name()
{
    struct utsname u;
    if (uname(&u) != 0)
        return "unknown";
    return u.machine;
}

std::string cpu_name()
{
    if (FILE *f = std::fopen("/proc/cpuinfo", "re")) {
        char line[512];
        std::string name;
        while (std::fgets(line, sizeof line, f)) {
            if (std::strncmp(line, "model name", 10) != 0)
                continue;
            const char *colon = std::strchr(line, ':');
            if (!colon)
                continue;
            name = colon + 1;
            break;
        }
        std::fclose(f);
        size_t first = name.find_first_not_of(" \t\n");
        size_t last = name.find_last_not_of(" \t\n");
        if (first != std::string::npos)
            return name.substr(first, last - first + 1);
    }
    return machine_name();
}

void *map_aligned(size_t size, size_t align, int prot, int flags)
{
    const size_t page = page_size();
    if (align <= page)
        return mmap(nullptr, size, prot, flags, -1, 0);
    size_t total;
    if (__builtin_add_overflow(size, align - page, &total)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    void *raw = mmap(nullptr, total, prot, flags, -1, 0);
    if (raw == MAP_FAILED)
        return MAP_FAILED;
    uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (start + align - 1) & ~(uintptr_t{align} - 1);
    if (aligned > start)
        munmap(raw, aligned - start);
    uintptr_t end = start + total;
    if (end > aligned + size)
        munmap(reinterpret_cast<void *>(aligned + size), end - (aligned + size));
    return reinterpret_cast<void *>(aligned);
}

status_t alloc_errno_status(int err)
{
    switch (err) {
    case ENOMEM:
    case ENOSPC:
    case EFBIG:
    case EOVERFLOW:
    case EMFILE:
    case ENFILE:
    case EAGAIN:
        return GPUMEM_ERROR_OUT_OF_MEMORY;
    default:
        return GPUMEM_ERROR_BACKEND;
    }
}

int make_memfd(const char *name)
{
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
    // Where vm.memfd_noexec = 2 (Linux 6.3+), a memfd not asked to be
    // non-executable is refused; kernels before 6.3 refuse the flag (EINVAL).
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    return fd;
}

uint64_t random_id()
{
    uint64_t v = 0;
    ssize_t n;
    do {
        n = getrandom(&v, sizeof v, GRND_NONBLOCK);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof v) && v != 0)
        return v;
    // No entropy yet (early boot) or no getrandom: mix time, pid and an
    // address through splitmix64; unique enough to tell pools apart.
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
    x ^= static_cast<uint64_t>(getpid()) << 32;
    x ^= reinterpret_cast<uintptr_t>(&v);
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x ? x : 1;
}

} // namespace gpumem::detail::host
