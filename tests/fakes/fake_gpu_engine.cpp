// The shared engine of the fake CUDA driver and the fake HIP runtime: configuration common
// to both, streams (ordering, deferred execution, synchronisation), the device address
// range, explicit device memory and host memory bookkeeping, and shared memfds.
//
// Device memory.  At initialisation the fake reserves one large range of address space, the
// "device address range", mapped from a sparse memfd (the arena) with PROT_NONE: the CPU
// cannot touch device memory, as on a real GPU (a SIGSEGV handler says so when a test or
// gpumem tries).  The fake itself reads and writes device memory through a second,
// read-write mapping of the same memfd (the shadow).  Pools and VMM mappings replace parts
// of the range with mappings of their own memfds (so other processes can map them), each
// with its own shadow.  <prefix>HOST_ACCESS=1 maps everything readable and writable.
//
// SPDX-License-Identifier: MIT
#include "fake_gpu_engine.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fakegpu {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------
static std::string env_name(const EngineConfig &c, const char *name) { return std::string(c.env_prefix) + name; }

bool env_flag(const EngineConfig &c, const char *name)
{
    const char *v = getenv(env_name(c, name).c_str());
    return v != nullptr && *v != '\0' && strcmp(v, "0") != 0;
}

bool parse_size(const char *v, uint64_t *out)
{
    char *end = nullptr;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 0);
    if (errno != 0 || end == v)
        return false;
    uint64_t mul = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mul = kKiB; ++end; break;
    case 'm': case 'M': mul = kMiB; ++end; break;
    case 'g': case 'G': mul = kGiB; ++end; break;
    case 't': case 'T': mul = kGiB * 1024; ++end; break;
    default: return false;
    }
    if (*end == 'i' || *end == 'B')
        ++end;
    if (*end == 'B')
        ++end;
    if (*end != '\0' || n == 0 || n > UINT64_MAX / mul)
        return false;
    *out = n * mul;
    return true;
}

void read_engine_config(EngineConfig &c, const std::function<void()> &version)
{
    if (const char *v = getenv(env_name(c, "DEVICES").c_str())) {
        int n = atoi(v);
        if (n >= 0 && n <= 64)
            c.devices = n;
        else
            fprintf(stderr, "%s: %sDEVICES=%s ignored (0..64)\n", c.name, c.env_prefix, v);
    }
    if (const char *v = getenv(env_name(c, "MEMORY").c_str())) {
        uint64_t m = 0;
        // At least a few granules; at most 1 TiB so that the pools' arenas fit the address range.
        if (parse_size(v, &m) && m >= 64 * kMiB && m <= 1024 * kGiB)
            c.memory = m;
        else
            fprintf(stderr, "%s: %sMEMORY=%s ignored (64M..1T)\n", c.name, c.env_prefix, v);
    }
    c.memory = c.memory / kGranularity * kGranularity;
    version();
    if (const char *v = getenv(env_name(c, "POOL_GRANULE").c_str())) {
        uint64_t g = 0;
        if (parse_size(v, &g) && g >= kPage && g <= kGiB && (g & (g - 1)) == 0)
            c.pool_granule = g;
        else
            fprintf(stderr, "%s: %sPOOL_GRANULE=%s ignored (a power of two, 4K..1G)\n", c.name, c.env_prefix, v);
    }
    c.managed = !env_flag(c, "NO_MANAGED");
    c.pools = !env_flag(c, "NO_POOLS");
    c.vmm = !env_flag(c, "NO_VMM");
    c.ipc = !env_flag(c, "NO_IPC");
    c.rdma = !env_flag(c, "NO_RDMA");
    c.host_register = !env_flag(c, "NO_HOST_REGISTER");
    c.host_access = env_flag(c, "HOST_ACCESS");
    c.defer = env_flag(c, "DEFER");
    if (const char *v = getenv(env_name(c, "UUID_SEED").c_str())) {
        char *end = nullptr;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 0);
        if (errno == 0 && end != v && *end == '\0')
            c.uuid_seed = n;
        else
            fprintf(stderr, "%s: %sUUID_SEED=%s ignored (a number)\n", c.name, c.env_prefix, v);
    }
    c.no_device = env_flag(c, "NO_DEVICE") || c.devices == 0;
    c.init_fail = env_flag(c, "INIT_FAIL");
    c.trace = env_flag(c, "TRACE");
    c.bug_ignore_release_threshold = env_flag(c, "BUG_IGNORE_RELEASE_THRESHOLD");
    c.bug_double_free_on_failed_alloc = env_flag(c, "BUG_DOUBLE_FREE_ON_FAILED_ALLOC");
    c.bug_register_device_address = env_flag(c, "BUG_REGISTER_DEVICE_ADDRESS");
    c.bug_leak_free_async = env_flag(c, "BUG_LEAK_FREE_ASYNC");
    c.bug_pool_destroy_deferred = env_flag(c, "BUG_POOL_DESTROY_DEFERRED");
    if (const char *v = getenv(env_name(c, "BREAK").c_str())) {
        std::string list = v;
        size_t at = 0;
        while (at <= list.size()) {
            size_t comma = list.find(',', at);
            std::string item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
            if (item == "vmm_export")
                c.break_vmm_export = true;
            else if (item == "managed_prefetch")
                c.break_managed_prefetch = true;
            else if (item == "dmabuf")
                c.break_dmabuf = true;
            else if (item == "peer_copy")
                c.break_peer_copy = true;
            else if (!item.empty())
                fprintf(stderr, "%s: %sBREAK: %s ignored (vmm_export, managed_prefetch, dmabuf, peer_copy)\n", c.name,
                        c.env_prefix, item.c_str());
            if (comma == std::string::npos)
                break;
            at = comma + 1;
        }
    }
}

BugCounters &bug_counters()
{
    static BugCounters counters;
    return counters;
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------
double now_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool valid_device(int dev) { return dev >= 0 && dev < (int)state().devices.size(); }

// ---------------------------------------------------------------------------------------------
// The current device, and which device reaches which memory
// ---------------------------------------------------------------------------------------------
// Initial-exec, as every thread_local of the fakes (see error_name() in fake_api_streams.cpp).
// INT_MIN: this thread never set one (it has the vendor's initial device).
__attribute__((tls_model("initial-exec"))) static thread_local int tl_device = INT_MIN;

int thread_device() { return tl_device == INT_MIN ? engine_config().initial_device : tl_device; }
void set_thread_device(int dev) { tl_device = dev < 0 ? -1 : dev; }

void device_uuid(int dev, unsigned char out[16])
{
    // splitmix64 of the seed and the ordinal: well mixed, and no state.
    auto mix = [](uint64_t z) {
        z += 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    };
    const uint64_t seed = engine_config().uuid_seed;
    const uint64_t hi = mix(seed ^ ((uint64_t)(unsigned)dev << 1)), lo = mix(hi ^ seed ^ 0x5555555555555555ull);
    for (int i = 0; i < 8; ++i) {
        out[i] = (unsigned char)(hi >> (56 - 8 * i));
        out[8 + i] = (unsigned char)(lo >> (56 - 8 * i));
    }
    out[6] = (unsigned char)((out[6] & 0x0f) | 0x40); // version 4
    out[8] = (unsigned char)((out[8] & 0x3f) | 0x80); // variant 1
}

// Design note: placement.  Every call that touches device memory runs for one device, the
// acting device, and the memory must be reachable from it, as the real driver checks (driver
// 580 on four H100s: cuda_probe's placement and multi groups, tests/fakes/probe/):
//   - copies (cuMemcpy*, the batched copy, hipMemcpy*) act for the current context's device
//     (HIP: the current device), even on another device's stream; with no context current,
//     for the stream's device.  A peer copy names a device for each side;
//   - fills act for their stream's device: an explicit stream's, else the current context's;
//   - a range lookup (cuMemGetAddressRange) for the current context's device.
// The owner always reaches its memory (a VMM mapping excepted: its access is per mapping, even
// for a range lookup).  Plain allocations are copied from any device, but filled and found only
// by the owner or a device with peer access to it.  Pool blocks follow their pool's access
// (read for reads, read-write for writes); a host pool's blocks are copied by any device, but
// filled and found only with access (which starts with none).  VMM mappings follow their own
// access.  Host memory the driver knows (page-locked, registered, managed) every device reaches.
// (Driver 580's answers: probe groups placement, multi and reach.)
bool device_reaches_locked(const Segment &seg, int dev, Reach how, bool write, std::string *why)
{
    char buf[200];
    auto refuse = [&](const char *fmt, const char *remedy) {
        snprintf(buf, sizeof buf, fmt, dev, seg.device);
        *why = std::string(buf) + remedy;
        return false;
    };
    const char *what = how == Reach::Copy ? "copy" : how == Reach::Fill ? "fill" : "range lookup";
    if (!valid_device(dev)) {
        snprintf(buf, sizeof buf, "no device acts for this %s (no current context)", what);
        *why = buf;
        return false;
    }
    auto flags_allow = [&](int acc) { return how == Reach::Range ? acc != kAccessNone
                                             : write            ? acc == kAccessReadWrite
                                                                : acc != kAccessNone; };
    switch (seg.kind) {
    case SegKind::Device:
    case SegKind::GraphAlloc: // device memory of the graph's device, as cuMemAlloc's
        if (dev == seg.device || how == Reach::Copy || state().peers.count({dev, seg.device}))
            return true;
        return refuse(how == Reach::Fill ? "device %d fills device %d's memory without peer access"
                                         : "device %d looks up device %d's memory without peer access",
                      " (enable peer access, or work on a stream or in the context of the owner)");
    case SegKind::PoolBlock:
    case SegKind::PoolImport: {
        const Pool &p = *seg.pool;
        if (p.memory == PoolMemory::Device && dev == p.device)
            return true;
        if (p.memory != PoolMemory::Device && how == Reach::Copy)
            return true; // host memory: copied by any device
        const int acc = (size_t)dev < p.access.size() ? p.access[(size_t)dev] : kAccessNone;
        if (flags_allow(acc))
            return true;
        snprintf(buf, sizeof buf, "device %d has %s access to the %spool of device %d (its access flags: %d)", dev,
                 acc == kAccessNone ? "no" : "read-only", p.memory == PoolMemory::Device ? "" : "host ", p.device, acc);
        *why = std::string(buf) + " (set the pool's access for the device, or work in the owner's context)";
        return false;
    }
    case SegKind::VmmMap: {
        const int acc = (size_t)dev < seg.access.size() ? seg.access[(size_t)dev] : kAccessNone;
        if (flags_allow(acc))
            return true; // (its owner too needs access, even to find it)
        snprintf(buf, sizeof buf, "the mapping is not %s for device %d (cuMemSetAccess)",
                 how == Reach::Range ? "accessible" : write ? "writable" : "readable", dev);
        *why = buf;
        return false;
    }
    }
    return false;
}

void enqueue_locked(Stream &st, std::function<void()> run, std::vector<Dep> deps)
{
    State &s = state();
    if (st.legacy) {
        for (auto &kv : s.streams) {
            Stream &o = *kv.second;
            if (&o != &st && o.device == st.device && !(o.flags & kStreamNonBlocking) && o.seq > st.waited[o.id]) {
                st.waited[o.id] = o.seq;
                deps.emplace_back(o.id, o.seq);
            }
        }
    } else if (!(st.flags & kStreamNonBlocking)) {
        const uint64_t legacy = s.devices[(size_t)st.device].legacy_stream;
        const uint64_t lseq = s.streams.at(legacy)->seq;
        if (lseq > st.waited[legacy]) {
            st.waited[legacy] = lseq;
            deps.emplace_back(legacy, lseq);
        }
    }
    ++st.seq;
    if (!engine_config().defer) {
        if (run) {
            StreamWorkScope work;
            run();
            run = nullptr; // (what it held goes as the work completes)
        }
        st.done = st.seq;
        return;
    }
    st.pending.push_back(Stream::Op{st.seq, std::move(run), std::move(deps)});
}

void run_stream_locked(Stream &st, uint64_t upto)
{
    State &s = state();
    StreamWorkScope work;
    while (!st.pending.empty() && st.pending.front().seq <= upto) {
        Stream::Op op = std::move(st.pending.front());
        st.pending.pop_front();
        for (const Dep &d : op.deps) {
            auto it = s.streams.find(d.first);
            if (it != s.streams.end())
                run_stream_locked(*it->second, d.second);
        }
        if (op.run)
            op.run();
        st.done = op.seq;
    }
    if (st.pending.empty())
        st.done = st.seq;
}

void run_all_locked(int device)
{
    std::vector<Stream *> all;
    for (auto &kv : state().streams)
        if (device < 0 || kv.second->device == device)
            all.push_back(kv.second.get());
    for (Stream *st : all)
        run_stream_locked(*st, st->seq);
}

uint64_t stream_done_locked(uint64_t id)
{
    auto it = state().streams.find(id);
    return it == state().streams.end() ? UINT64_MAX : it->second->done;
}

// The host has seen `st`'s work up to `upto` complete.
void stream_synced_locked(Stream &st, uint64_t upto)
{
    State &s = state();
    run_stream_locked(st, upto);
    st.synced = std::max(st.synced, upto);
    if (st.legacy) {
        // What the NULL stream waited for is complete too.
        for (auto &kv : st.waited) {
            auto it = s.streams.find(kv.first);
            if (it != s.streams.end())
                it->second->synced = std::max(it->second->synced, std::min(kv.second, it->second->seq));
        }
    }
    pools_after_sync_locked();
}

void device_synced_locked(int dev)
{
    run_all_locked(dev);
    for (auto &kv : state().streams)
        if (kv.second->device == dev)
            kv.second->synced = kv.second->seq;
    pools_after_sync_locked();
}


// ---------------------------------------------------------------------------------------------
// RangeSet
// ---------------------------------------------------------------------------------------------
void RangeSet::add(uint64_t start, uint64_t len)
{
    if (len == 0)
        return;
    auto next = free_.lower_bound(start);
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            len += prev->second;
            free_.erase(prev);
        }
    }
    if (next != free_.end() && start + len == next->first) {
        len += next->second;
        free_.erase(next);
    }
    free_[start] = len;
}

bool RangeSet::take_at(uint64_t start, uint64_t len)
{
    auto it = free_.upper_bound(start);
    if (it == free_.begin())
        return false;
    --it;
    uint64_t fs = it->first, fl = it->second;
    if (start < fs || start - fs > fl || fl - (start - fs) < len)
        return false;
    free_.erase(it);
    if (start > fs)
        free_[fs] = start - fs;
    if (start + len < fs + fl)
        free_[start + len] = fs + fl - (start + len);
    return true;
}

bool RangeSet::take(uint64_t len, uint64_t align, uint64_t hint, uint64_t *out)
{
    if (len == 0)
        return false;
    if (hint != 0 && aligned(hint, align) && take_at(hint, len)) {
        *out = hint;
        return true;
    }
    // Next fit: first from the rover on, then from the start.
    for (int pass = 0; pass < 2; ++pass) {
        auto it = pass == 0 ? free_.upper_bound(rover_) : free_.begin();
        if (pass == 0 && it != free_.begin() && std::prev(it)->first + std::prev(it)->second > rover_)
            --it;
        for (; it != free_.end(); ++it) {
            uint64_t start = std::max(it->first, pass == 0 ? rover_ : 0);
            uint64_t a = 0;
            if (!round_up(start, align, &a))
                break;
            uint64_t end = it->first + it->second;
            if (a < end && end - a >= len) {
                bool ok = take_at(a, len);
                (void)ok;
                *out = a;
                rover_ = a + len;
                return true;
            }
        }
    }
    return false;
}

bool RangeSet::take_lowest(uint64_t len, uint64_t align, uint64_t *out)
{
    if (len == 0)
        return false;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        uint64_t a = 0;
        if (!round_up(it->first, align, &a))
            break;
        uint64_t end = it->first + it->second;
        if (a < end && end - a >= len) {
            take_at(a, len);
            *out = a;
            return true;
        }
    }
    return false;
}

bool RangeSet::contains(uint64_t start, uint64_t len) const
{
    auto it = free_.upper_bound(start);
    if (it == free_.begin())
        return false;
    --it;
    return start >= it->first && start - it->first <= it->second && it->second - (start - it->first) >= len;
}

// ---------------------------------------------------------------------------------------------
// The device address range
// ---------------------------------------------------------------------------------------------
namespace {
struct Region {
    uint64_t base = 0, size = 0;
    int fd = -1;            // the arena memfd behind plain device allocations
    char *shadow = nullptr; // read-write view of the arena
    int prot = PROT_NONE;   // how the CPU sees device memory
    RangeSet free;
};
Region g_region; // set up once at initialisation, then guarded by state().mu
struct sigaction g_old_segv;

// Say what happened when the CPU touches device memory, then let the fault take its course.
void segv_hint(int sig, siginfo_t *info, void *ctx)
{
    uint64_t a = reinterpret_cast<uint64_t>(info->si_addr);
    if (a >= g_region.base && a - g_region.base < g_region.size) {
        // Async-signal-safe: only strlen and memcpy of strings fixed before the fault.
        const EngineConfig &c = engine_config();
        char msg[256];
        size_t n = 0;
        auto put = [&](const char *str) {
            size_t len = strlen(str);
            if (len > sizeof msg - n)
                len = sizeof msg - n;
            memcpy(msg + n, str, len);
            n += len;
        };
        put(c.name);
        put(": the CPU touched device memory at 0x");
        for (int shift = 60; shift >= 0 && n < sizeof msg; shift -= 4)
            msg[n++] = "0123456789abcdef"[(a >> shift) & 0xf];
        put(": device memory is not host-accessible on a real GPU (");
        put(c.env_prefix);
        put("HOST_ACCESS=1 allows it)\n");
        ssize_t w = write(2, msg, n);
        (void)w;
    }
    // Put the previous handler back; returning re-runs the access, which now reaches it.
    sigaction(SIGSEGV, &g_old_segv, nullptr);
    (void)sig;
    (void)ctx;
}
} // namespace

bool region_init_locked()
{
    if (g_region.size != 0)
        return true;
    const EngineConfig &c = engine_config();
    int prot = c.host_access ? PROT_READ | PROT_WRITE : PROT_NONE;
    // As large as the address space allows: pools reserve arenas of the device's size.
    for (uint64_t size = 16 * 1024 * kGiB; size >= 64 * kGiB; size /= 4) {
        char name[64];
        snprintf(name, sizeof name, "%s-device-memory", c.name);
        int fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0)
            return false;
        if (ftruncate(fd, (off_t)size) != 0) {
            close(fd);
            continue;
        }
        void *base = mmap(nullptr, size, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
        void *shadow = base == MAP_FAILED ? MAP_FAILED
                                          : mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        if (shadow == MAP_FAILED) {
            if (base != MAP_FAILED)
                munmap(base, size);
            close(fd);
            continue;
        }
        g_region.base = reinterpret_cast<uint64_t>(base);
        g_region.size = size;
        g_region.fd = fd;
        g_region.shadow = static_cast<char *>(shadow);
        g_region.prot = prot;
        // Leave the first granule unused: no device pointer equals the range's start.
        g_region.free.add(g_region.base + kGranularity, size - kGranularity);
        if (!c.host_access) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = segv_hint;
            sa.sa_flags = SA_SIGINFO | SA_NODEFER;
            sigemptyset(&sa.sa_mask);
            struct sigaction old;
            if (sigaction(SIGSEGV, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
                sigaction(SIGSEGV, &sa, &g_old_segv);
        }
        return true;
    }
    errno = ENOMEM;
    return false;
}

char *region_shadow(uint64_t va) { return g_region.shadow + (va - g_region.base); }

bool in_region(uint64_t addr) { return addr >= g_region.base && addr - g_region.base < g_region.size; }

bool region_alloc_locked(uint64_t size, uint64_t align, uint64_t hint, uint64_t *va)
{
    if (size == 0 || size > g_region.size)
        return false;
    return g_region.free.take(size, align, hint, va);
}

bool region_take_at_locked(uint64_t va, uint64_t size) { return size != 0 && g_region.free.take_at(va, size); }

static void arena_punch(uint64_t va, uint64_t size)
{
    fallocate(g_region.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(va - g_region.base), (off_t)size);
}

void region_release_locked(uint64_t va, uint64_t size)
{
    mmap(reinterpret_cast<void *>(va), size, g_region.prot, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, g_region.fd,
         (off_t)(va - g_region.base));
    arena_punch(va, size);
    g_region.free.add(va, size);
}

bool region_map_fd_locked(uint64_t va, uint64_t size, int fd, uint64_t offset)
{
    void *p = mmap(reinterpret_cast<void *>(va), size, g_region.prot, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd,
                   (off_t)offset);
    return p != MAP_FAILED;
}

void region_map_none_locked(uint64_t va, uint64_t size)
{
    mmap(reinterpret_cast<void *>(va), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

void region_set_prot_locked(uint64_t va, uint64_t size, int access_flags)
{
    if (!engine_config().host_access)
        return;
    int prot = access_flags == kAccessReadWrite ? PROT_READ | PROT_WRITE
               : access_flags == kAccessRead    ? PROT_READ
                                                                   : PROT_NONE;
    mprotect(reinterpret_cast<void *>(va), size, prot);
}

Segment *find_segment_locked(uint64_t addr, uint64_t *start)
{
    auto &segs = state().segments;
    auto it = segs.upper_bound(addr);
    if (it == segs.begin())
        return nullptr;
    --it;
    if (addr - it->first >= it->second.size)
        return nullptr;
    if (start)
        *start = it->first;
    return &it->second;
}

HostRange *find_host_locked(uint64_t addr, uint64_t *start)
{
    auto &host = state().host;
    auto it = host.upper_bound(addr);
    if (it == host.begin())
        return nullptr;
    --it;
    if (addr - it->first >= it->second.size)
        return nullptr;
    if (start)
        *start = it->first;
    return &it->second;
}

// True when [addr, addr+len) overlaps a host range the driver knows; *which is the first.
HostRange *overlapping_host_locked(uint64_t addr, uint64_t len, uint64_t *which)
{
    auto &host = state().host;
    auto it = host.upper_bound(addr);
    if (it != host.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second.size > addr) {
            *which = prev->first;
            return &prev->second;
        }
    }
    if (it != host.end() && it->first < addr + len) {
        *which = it->first;
        return &it->second;
    }
    return nullptr;
}

void free_device_segment_locked(uint64_t va, Segment &seg)
{
    arena_punch(va, seg.charged);
    g_region.free.add(va, seg.charged);
    Device &d = state().devices[(size_t)seg.device];
    d.used -= std::min(d.used, seg.charged);
}

void free_device_allocation_locked(uint64_t va)
{
    auto it = state().segments.find(va);
    if (it == state().segments.end() || it->second.kind != SegKind::Device)
        return;
    free_device_segment_locked(va, it->second);
    state().segments.erase(it);
}

void destroy_context_memory_locked(int dev)
{
    State &s = state();
    size_t device_allocs = 0, host_allocs = 0;
    std::vector<std::shared_ptr<GraphMem>> graph_allocs;
    for (auto it = s.segments.begin(); it != s.segments.end();) {
        if (it->second.kind == SegKind::Device && it->second.device == dev) {
            free_device_segment_locked(it->first, it->second);
            it = s.segments.erase(it);
            ++device_allocs;
        } else {
            if (it->second.kind == SegKind::GraphAlloc && it->second.device == dev)
                graph_allocs.push_back(it->second.gmem);
            ++it;
        }
    }
    for (const std::shared_ptr<GraphMem> &m : graph_allocs) {
        graph_mem_set_live_locked(m, false);
        ++device_allocs;
    }
    for (auto it = s.host.begin(); it != s.host.end();) {
        if (it->second.device == dev) {
            if (it->second.kind != HostKind::Registered) {
                munmap(reinterpret_cast<void *>(it->first), it->second.map_size);
                s.host_used -= std::min(s.host_used, it->second.map_size);
            }
            it = s.host.erase(it);
            ++host_allocs;
        } else {
            ++it;
        }
    }
    if (engine_config().trace && (device_allocs || host_allocs))
        fprintf(stderr,
                "%s: device %d's primary context released with %zu device and %zu host allocations "
                "still live: freed with it\n",
                engine_config().name, dev, device_allocs, host_allocs);
}

// ---------------------------------------------------------------------------------------------
// Memfds shared between processes (pools, VMM)
// ---------------------------------------------------------------------------------------------
static const char k_fd_magic[8] = {'F', 'A', 'K', 'E', 'C', 'U', 'D', 'A'};

int make_shared_memfd(const char *what, uint32_t kind, uint64_t uid, int device, uint64_t size, unsigned handle_types)
{
    char name[64];
    snprintf(name, sizeof name, "%s-%s", engine_config().name, what);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    FdHeader h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, k_fd_magic, sizeof h.magic);
    h.version = 1;
    h.kind = kind;
    h.uid = uid;
    h.size = size;
    h.device = device;
    h.handle_types = handle_types;
    h.creator_pid = (uint64_t)getpid();
    if (ftruncate(fd, (off_t)(kFdHeader + size)) != 0 || pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

bool read_shared_header(int fd, uint32_t kind, FdHeader *hdr)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    if (pread(fd, hdr, sizeof *hdr, 0) != (ssize_t)sizeof *hdr)
        return false;
    if (memcmp(hdr->magic, k_fd_magic, sizeof hdr->magic) != 0 || hdr->version != 1 || hdr->kind != kind)
        return false;
    if (hdr->size == 0 || hdr->size > UINT64_MAX - kFdHeader || (uint64_t)st.st_size < kFdHeader + hdr->size)
        return false;
    return true;
}

uint64_t random_uid()
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v || v == 0)
        v = ((uint64_t)getpid() << 32) ^ (uint64_t)(now_ms() * 1000.0) ^ (state().next_id << 8);
    return v;
}

Phys::~Phys()
{
    if (shadow)
        munmap(shadow, size);
    if (fd >= 0)
        close(fd);
    if (!imported) {
        Device &d = state().devices[(size_t)device];
        d.used -= std::min(d.used, size);
    }
}

} // namespace fakegpu
