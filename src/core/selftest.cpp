// The self-test (core/selftest.hpp).
#include "core/selftest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "core/fd_round_trip.hpp"

namespace gpumem::detail {

namespace {

const char *const k_names[selftest_count] = {"vmm",   "vmm_ipc", "pool_ipc", "managed", "host_register",
                                              "batch", "dmabuf",  "peer"};

// The cache file's first line: its format, then the device's UUID ("-" where
// the runtime tells none) and name.  A file of another format is not read.
constexpr const char *k_cache_format = "gpumem-selftest 2";

// Bytes each test moves: enough to cross a page, small enough to cost nothing.
constexpr size_t k_test_bytes = 4096;

size_t host_page()
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : 4096;
}

// The calling thread's last error (the backend's message for the failed
// call), as the reason a test failed.
std::string reason_of(status_t, const char *step)
{
    std::string r = step;
    r += ": ";
    const char *msg = last_error_message();
    r += (msg && *msg) ? msg : "failed";
    return r;
}

// A pattern written to the device and read back: the copy really moved bytes.
struct Pattern {
    unsigned char out[k_test_bytes];
    unsigned char in[k_test_bytes];
    Pattern()
    {
        for (size_t i = 0; i < k_test_bytes; ++i)
            out[i] = static_cast<unsigned char>(i * 7 + 3);
        std::memset(in, 0, sizeof in);
    }
    bool same() const { return std::memcmp(out, in, sizeof in) == 0; }
};

// Each test answers an empty string when it passed, else why it failed.
std::string test_vmm(Backend &b, int32_t d, const DeviceCaps &caps)
{
    const size_t g = caps.vmm_granularity ? caps.vmm_granularity : host_page();
    void *phys = nullptr, *ptr = nullptr;
    std::string why;
    status_t st = b.vmm_create(d, g, 0, false, &phys);
    if (st)
        return reason_of(st, "creating physical memory");
    if ((st = b.vmm_reserve(d, g, g, nullptr, &ptr))) {
        why = reason_of(st, "reserving an address range");
    } else {
        if ((st = b.vmm_map(d, ptr, g, 0, phys))) {
            why = reason_of(st, "mapping");
        } else {
            if ((st = b.vmm_set_access(d, ptr, g, d, GPUMEM_ACCESS_READWRITE))) {
                why = reason_of(st, "setting access");
            } else {
                auto p = std::make_unique<Pattern>();
                if ((st = b.copy(d, ptr, p->out, k_test_bytes, nullptr, CopyMode::sync)))
                    why = reason_of(st, "copying into the mapping");
                else if ((st = b.copy(d, p->in, ptr, k_test_bytes, nullptr, CopyMode::sync_into_host)))
                    why = reason_of(st, "copying out of the mapping");
                else if (!p->same())
                    why = "the bytes copied through the mapping came back different";
            }
            if ((st = b.vmm_unmap(d, ptr, g)) && why.empty())
                why = reason_of(st, "unmapping");
        }
        if ((st = b.vmm_free(d, ptr, g)) && why.empty())
            why = reason_of(st, "freeing the address range");
    }
    if ((st = b.vmm_release(d, phys)) && why.empty())
        why = reason_of(st, "releasing physical memory");
    return why;
}

// The exported descriptor goes to a child process and back before it is
// imported (core/fd_round_trip.hpp says why the import itself stays here).
// Where no child can be started, the test is of this process alone and the
// log says so.
std::string through_a_child(DescriptorEcho &echo, int fd, int *returned)
{
    FdRoundTrip trip = echo.round_trip(fd);
    if (!trip.checked) {
        log(LogLevel::debug, "self-test: %s", trip.why.c_str());
        *returned = -1;
        return std::string();
    }
    *returned = trip.returned;
    return trip.why;
}

std::string test_vmm_ipc(Backend &b, DescriptorEcho &echo, int32_t d, const DeviceCaps &caps)
{
    const size_t g = caps.vmm_granularity ? caps.vmm_granularity : host_page();
    void *phys = nullptr;
    status_t st = b.vmm_create(d, g, GPUMEM_HANDLE_POSIX_FD, false, &phys);
    if (st)
        return reason_of(st, "creating shareable physical memory");
    std::string why;
    int fd = -1;
    if ((st = b.vmm_export(d, phys, GPUMEM_HANDLE_POSIX_FD, &fd))) {
        why = reason_of(st, "exporting a POSIX file descriptor");
    } else {
        int returned = -1;
        why = through_a_child(echo, fd, &returned);
        const int to_import = returned >= 0 ? returned : fd;
        void *imported = nullptr;
        int32_t owner = -1;
        size_t size = 0;
        if (!why.empty())
            ; // the descriptor did not make the trip: nothing to import
        else if ((st = b.vmm_import(d, to_import, GPUMEM_HANDLE_POSIX_FD, &owner, &size, &imported)))
            why = reason_of(st, "importing the exported descriptor");
        else if ((st = b.vmm_release(d, imported)))
            why = reason_of(st, "releasing the imported handle");
        else if (owner != d || size < g)
            why = "the imported handle does not describe the exported memory";
        if (returned >= 0)
            close(returned);
        close(fd);
    }
    if ((st = b.vmm_release(d, phys)) && why.empty())
        why = reason_of(st, "releasing physical memory");
    return why;
}

// The pool's descriptor makes the same trip; it is not imported here, as a
// process does not import its own pool.
std::string test_pool_ipc(NativePools &np, DescriptorEcho &echo, int32_t d)
{
    void *pool = nullptr;
    status_t st = np.create(d, GPUMEM_HANDLE_POSIX_FD, 0, GPUMEM_POOL_MEMORY_DEVICE, -1, &pool);
    if (st)
        return reason_of(st, "creating a shareable pool");
    std::string why;
    int fd = -1;
    if ((st = np.export_pool(d, pool, &fd))) {
        why = reason_of(st, "exporting the pool as a POSIX file descriptor");
    } else {
        int returned = -1;
        why = through_a_child(echo, fd, &returned);
        if (returned >= 0)
            close(returned);
        close(fd);
    }
    if ((st = np.destroy(d, pool)) && why.empty())
        why = reason_of(st, "destroying the pool");
    return why;
}

std::string test_managed(Backend &b, int32_t d)
{
    void *p = nullptr;
    status_t st = b.managed_alloc(d, k_test_bytes, GPUMEM_ATTACH_GLOBAL, &p);
    if (st)
        return reason_of(st, "allocating managed memory");
    std::string why;
    if ((st = b.prefetch(d, p, k_test_bytes, d, nullptr)))
        why = reason_of(st, "prefetching managed memory to the device");
    else if ((st = b.device_synchronize(d)))
        why = reason_of(st, "waiting for the prefetch");
    if ((st = b.managed_free(d, p, k_test_bytes)) && why.empty())
        why = reason_of(st, "freeing managed memory");
    return why;
}

std::string test_host_register(Backend &b, int32_t d)
{
    const size_t page = host_page();
    void *p = std::aligned_alloc(page, page);
    if (!p)
        return "no host memory for the test page";
    std::memset(p, 0, page);
    std::string why;
    status_t st = b.host_register(d, p, page, 0);
    if (st)
        why = reason_of(st, "registering a page");
    else if ((st = b.host_unregister(d, p, page)))
        why = reason_of(st, "unregistering the page");
    std::free(p);
    return why;
}

std::string test_batch(Backend &b, BatchMemops &batch, int32_t d)
{
    void *stream = nullptr;
    status_t st = b.stream_create(d, GPUMEM_STREAM_DEFAULT, 0, &stream);
    if (st)
        return reason_of(st, "creating a stream");
    std::string why;
    void *dev = nullptr;
    if (!batch.takes_batch_stream(stream)) {
        why = "the runtime's batch calls refuse a stream gpumem made";
    } else if ((st = b.device_alloc(d, 2 * k_test_bytes, &dev))) {
        why = reason_of(st, "allocating device memory");
    } else {
        auto p = std::make_unique<Pattern>();
        char *base = static_cast<char *>(dev);
        void *const dsts[2] = {base, base + k_test_bytes / 2};
        const void *const srcs[2] = {p->out, p->out + k_test_bytes / 2};
        const size_t sizes[2] = {k_test_bytes / 2, k_test_bytes / 2};
        size_t failed = 0;
        if ((st = batch.copy_batch(d, dsts, srcs, sizes, 2, stream, &failed)))
            why = reason_of(st, "a batched copy of two entries");
        else if ((st = b.stream_synchronize(d, stream)))
            why = reason_of(st, "waiting for the batched copy");
        else if ((st = b.copy(d, p->in, dev, k_test_bytes, nullptr, CopyMode::sync_into_host)))
            why = reason_of(st, "reading back what the batch copied");
        else if (!p->same())
            why = "the bytes of the batched copy came back different";
        if ((st = b.device_free(d, dev, 2 * k_test_bytes)) && why.empty())
            why = reason_of(st, "freeing device memory");
    }
    if ((st = b.stream_destroy(d, stream)) && why.empty())
        why = reason_of(st, "destroying the stream");
    return why;
}

std::string test_dmabuf(Backend &b, DmaBufExport &ex, int32_t d)
{
    // The range must be page-aligned: two pages allocated, the aligned one exported.
    const size_t page = host_page();
    void *dev = nullptr;
    status_t st = b.device_alloc(d, 2 * page, &dev);
    if (st)
        return reason_of(st, "allocating device memory");
    std::string why;
    const uintptr_t aligned = (reinterpret_cast<uintptr_t>(dev) + page - 1) / page * page;
    int fd = -1;
    if ((st = ex.export_dmabuf(d, reinterpret_cast<void *>(aligned), page, &fd)))
        why = reason_of(st, "exporting a dma-buf descriptor");
    else
        close(fd);
    if ((st = b.device_free(d, dev, 2 * page)) && why.empty())
        why = reason_of(st, "freeing device memory");
    return why;
}

// The other devices of the backend that the runtime says `d` reaches and
// that reach `d` (peer access is per direction; the test copies both ways).
status_t peers_both_ways(PeerAccess &access, int32_t d, int32_t count, std::vector<int32_t> *peers)
{
    for (int32_t p = 0; p < count; ++p) {
        if (p == d)
            continue;
        int32_t there = 0, back = 0;
        if (status_t st = access.can_access_peer(d, p, &there))
            return st;
        if (status_t st = access.can_access_peer(p, d, &back))
            return st;
        if (there && back)
            peers->push_back(p);
    }
    return GPUMEM_SUCCESS;
}

// Peer access between `d` and `p`, enabled both ways, and a pattern copied
// d -> p -> d through the runtime's peer copy: a platform whose peer path
// maps but does not copy fails here, not in the middle of a job.  Access the
// application had already enabled stays; what this test enabled is disabled.
std::string test_peer_pair(Backend &b, PeerAccess &access, int32_t d, int32_t p)
{
    bool enabled_there = false, enabled_back = false;
    std::string why;
    status_t st = access.enable_peer_access(d, p, &enabled_there);
    if (st)
        return reason_of(st, "enabling peer access to the other device");
    void *mine = nullptr, *theirs = nullptr;
    if ((st = access.enable_peer_access(p, d, &enabled_back))) {
        why = reason_of(st, "enabling peer access from the other device");
    } else if ((st = b.device_alloc(d, 2 * k_test_bytes, &mine))) {
        why = reason_of(st, "allocating device memory");
    } else if ((st = b.device_alloc(p, k_test_bytes, &theirs))) {
        why = reason_of(st, "allocating memory on the other device");
    } else {
        auto pattern = std::make_unique<Pattern>();
        char *back = static_cast<char *>(mine) + k_test_bytes;
        if ((st = b.copy(d, mine, pattern->out, k_test_bytes, nullptr, CopyMode::sync)))
            why = reason_of(st, "writing the pattern");
        else if ((st = b.copy_peer(p, theirs, d, mine, k_test_bytes, nullptr, false)))
            why = reason_of(st, "a peer copy to the other device");
        else if ((st = b.copy_peer(d, back, p, theirs, k_test_bytes, nullptr, false)))
            why = reason_of(st, "a peer copy from the other device");
        else if ((st = b.copy(d, pattern->in, back, k_test_bytes, nullptr, CopyMode::sync_into_host)))
            why = reason_of(st, "reading back what the peer copies moved");
        else if (!pattern->same())
            why = "the bytes copied to the other device and back came back different";
    }
    if (theirs && (st = b.device_free(p, theirs, k_test_bytes)) && why.empty())
        why = reason_of(st, "freeing memory on the other device");
    if (mine && (st = b.device_free(d, mine, 2 * k_test_bytes)) && why.empty())
        why = reason_of(st, "freeing device memory");
    if (enabled_back && (st = access.disable_peer_access(p, d)) && why.empty())
        why = reason_of(st, "disabling peer access from the other device");
    if (enabled_there && (st = access.disable_peer_access(d, p)) && why.empty())
        why = reason_of(st, "disabling peer access to the other device");
    return why;
}

std::string test_peer(Backend &b, PeerAccess &access, int32_t d, const std::vector<int32_t> &peers)
{
    for (int32_t p : peers) {
        std::string why = test_peer_pair(b, access, d, p);
        if (!why.empty())
            return "with device " + std::to_string(p) + ": " + why;
    }
    return std::string();
}

} // namespace

void Selftest::run_all(int32_t d, const DeviceCaps &caps, SelftestResults *out)
{
    NativePools *np = backend_.native_pools();
    BatchMemops *batch = backend_.batch_memops();
    DmaBufExport *dmabuf = backend_.dmabuf_export();
    const bool posix_fd = (caps.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
    out->r[selftest_vmm].claimed = caps.vmm;
    out->r[selftest_vmm_ipc].claimed = caps.vmm && posix_fd;
    out->r[selftest_pool_ipc].claimed = np && caps.pools && posix_fd;
    out->r[selftest_managed].claimed = caps.managed;
    out->r[selftest_host_register].claimed = caps.host_register;
    out->r[selftest_batch].claimed = batch && caps.batch_copy;
    out->r[selftest_dmabuf].claimed = dmabuf && caps.dmabuf;
    // Peer access is claimed towards each other device the runtime says
    // reaches this one both ways; a device alone has nothing to test.
    PeerAccess *peer_access = backend_.peer_access();
    std::vector<int32_t> peers;
    std::string peer_skip = "the runtime does not claim it on this device";
    if (backend_.device_count() < 2) {
        peer_skip = "no other device";
    } else if (peer_access && caps.peer_access) {
        if (status_t st = peers_both_ways(*peer_access, d, backend_.device_count(), &peers)) {
            out->r[selftest_peer].claimed = true;
            out->r[selftest_peer].outcome = SelftestOutcome::failed;
            out->r[selftest_peer].reason = reason_of(st, "asking which devices it reaches");
        } else if (peers.empty()) {
            peer_skip = "no other device that the runtime says this one reaches both ways";
        }
    }
    if (!peers.empty())
        out->r[selftest_peer].claimed = true;
    // The device's context starts before the clock does: it would start at
    // the device's first use anyway, and on an H200 it alone takes about
    // 100 ms, which would be counted against the first feature tested.
    // An event made and destroyed starts it (a synchronisation would not:
    // a device without a context has no work to wait for).
    // So do the contexts of the peers the peer test reaches.
    std::vector<int32_t> contexts{d};
    contexts.insert(contexts.end(), peers.begin(), peers.end());
    for (int32_t c : contexts) {
        void *starter = nullptr;
        status_t started = backend_.event_create(c, GPUMEM_EVENT_DISABLE_TIMING, &starter);
        if (started == GPUMEM_SUCCESS)
            started = backend_.event_destroy(c, starter);
        if (started != GPUMEM_SUCCESS)
            log(LogLevel::debug,
                "self-test of device %d: the context of device %d did not start (%s); each test says what fails", d,
                c, last_error_message());
    }
    const uint64_t start = precise_now_ns();
    {
        // One child for the sharing tests of this device; its end (the child
        // reaped) is on the clock too.
        DescriptorEcho echo;
        for (int f = 0; f < selftest_count; ++f) {
            SelftestResult &r = out->r[f];
            if (r.outcome == SelftestOutcome::failed)
                continue; // failed before it could run (the peer test's questions)
            if (!r.claimed) {
                r.reason = f == selftest_pool_ipc && caps.builtin_pool_ipc
                               ? "gpumem's own pool shares its memory itself (no vendor pool to test)"
                           : f == selftest_peer ? peer_skip
                                                : "the runtime does not claim it on this device";
                continue;
            }
            const uint64_t t0 = precise_now_ns();
            std::string why;
            switch (f) {
            case selftest_vmm: why = test_vmm(backend_, d, caps); break;
            case selftest_vmm_ipc: why = test_vmm_ipc(backend_, echo, d, caps); break;
            case selftest_pool_ipc: why = test_pool_ipc(*np, echo, d); break;
            case selftest_managed: why = test_managed(backend_, d); break;
            case selftest_host_register: why = test_host_register(backend_, d); break;
            case selftest_batch: why = test_batch(backend_, *batch, d); break;
            case selftest_dmabuf: why = test_dmabuf(backend_, *dmabuf, d); break;
            case selftest_peer: why = test_peer(backend_, *peer_access, d, peers); break;
            }
            r.ns = precise_now_ns() - t0;
            r.outcome = why.empty() ? SelftestOutcome::passed : SelftestOutcome::failed;
            r.reason = why;
        }
    }
    out->total_ns = precise_now_ns() - start;
}

SelftestResults Selftest::run(int32_t device, const DeviceCaps &caps)
{
    SelftestResults results;
    results.ran = true;
    const std::string path = cache_dir_ ? cache_path(device, caps) : std::string();
    if (!path.empty() && read_cache(path, caps, &results)) {
        results.cached = true;
        log(LogLevel::info, "self-test of device %d: results read from %s (not run again)", device, path.c_str());
    } else {
        // A cache file that failed half-way may have filled some results.
        results = SelftestResults();
        results.ran = true;
        run_all(device, caps, &results);
        log(LogLevel::info, "self-test of device %d ran in %" PRIu64 " us", device, results.total_ns / 1000);
        if (!path.empty())
            write_cache(path, device, caps, results);
    }
    for (int f = 0; f < selftest_count; ++f)
        if (results.r[f].outcome == SelftestOutcome::failed)
            log(LogLevel::warn, "self-test of device %d: %s is claimed but broken (%s); it falls back as if absent",
                device, k_names[f], results.r[f].reason.c_str());
    return results;
}

void Selftest::take_away_broken(const SelftestResults &results, DeviceCaps *caps)
{
    if (results.broken(selftest_vmm)) {
        caps->vmm = false;
        caps->rdma_vmm = false;
        caps->rdma_missing = "virtual memory management failed its self-test";
    }
    if (results.broken(selftest_vmm_ipc)) {
        caps->ipc_handle_types &= ~uint32_t{GPUMEM_HANDLE_POSIX_FD};
        caps->rdma_vmm = false;
        caps->rdma_missing = "exporting VMM memory as a POSIX file descriptor failed its self-test";
    }
    if (results.broken(selftest_managed)) {
        caps->managed = false;
        caps->managed_migrates = false;
        caps->coarse_grain_advice = false;
        caps->managed_pools = false;
        caps->batch_prefetch = false;
    }
    if (results.broken(selftest_host_register))
        caps->host_register = false;
    if (results.broken(selftest_batch))
        caps->batch_copy = caps->batch_prefetch = caps->batch_discard = false;
    if (results.broken(selftest_dmabuf))
        caps->dmabuf = false;
    // Without it the core answers that the device reaches no peer and that
    // no peer reaches it (core/peers.cpp), and refuses to enable access.
    if (results.broken(selftest_peer))
        caps->peer_access = false;
    // A broken pool export leaves the pools; only their sharing goes
    // (DeviceState::pool_ipc_types, settled by the runtime).
}

// One file per backend, device ordinal, name, UUID and driver version: a new
// driver, or another device in the slot (even one of the same model), is
// tested afresh.  Where the runtime tells no UUID (caps.uuid empty: a runtime
// without cuDeviceGetUuid / hipDeviceGetUuid) the name alone tells devices
// apart, so a swapped device of the same model reuses the results.
std::string Selftest::cache_path(int32_t device, const DeviceCaps &caps) const
{
    std::string name;
    for (char c : caps.name)
        name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
    std::string uuid;
    for (char c : caps.uuid)
        uuid += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    char file[512];
    std::snprintf(file, sizeof file, "/gpumem-selftest-%s-%d-%s%s%s-driver%d.txt", backend_name(backend_id_), device,
                  name.c_str(), uuid.empty() ? "" : "-", uuid.c_str(), caps.driver_version);
    return std::string(cache_dir_) + file;
}

// The file: a header line "gpumem-selftest 2 <uuid or -> <name>", then one
// line a feature:
//   <name> <claimed 0|1> <skipped|passed|failed> <ns> <reason...>
// A file whose UUID is not the device's (a file copied from another machine,
// or one a name collision reached) is not read, and the test runs again.
bool Selftest::read_cache(const std::string &path, const DeviceCaps &caps, SelftestResults *out) const
{
    FILE *f = std::fopen(path.c_str(), "re");
    if (!f)
        return false;
    char line[2048];
    const std::string header = std::string(k_cache_format) + " " + (caps.uuid.empty() ? "-" : caps.uuid) + " ";
    bool ok = std::fgets(line, sizeof line, f) && std::strncmp(line, header.c_str(), header.size()) == 0;
    if (!ok)
        log(LogLevel::debug, "self-test: %s is not of this format or not of this device (UUID %s); testing again",
            path.c_str(), caps.uuid.empty() ? "unknown" : caps.uuid.c_str());
    int seen = 0;
    while (ok && std::fgets(line, sizeof line, f)) {
        char name[64], outcome[16];
        int claimed = 0, used = 0;
        unsigned long long ns = 0;
        if (std::strncmp(line, "device ", 7) == 0 || std::strncmp(line, "total_ns ", 9) == 0)
            continue;
        if (std::sscanf(line, "%63s %d %15s %llu %n", name, &claimed, outcome, &ns, &used) < 4) {
            ok = false;
            break;
        }
        int feature = -1;
        for (int i = 0; i < selftest_count; ++i)
            if (std::strcmp(name, k_names[i]) == 0)
                feature = i;
        if (feature < 0)
            continue;
        SelftestResult &r = out->r[feature];
        r.claimed = claimed != 0;
        r.outcome = std::strcmp(outcome, "passed") == 0   ? SelftestOutcome::passed
                    : std::strcmp(outcome, "failed") == 0 ? SelftestOutcome::failed
                                                          : SelftestOutcome::skipped;
        r.ns = ns;
        r.reason = line + used;
        while (!r.reason.empty() && (r.reason.back() == '\n' || r.reason.back() == '\r'))
            r.reason.pop_back();
        out->total_ns += ns;
        ++seen;
    }
    std::fclose(f);
    return ok && seen == selftest_count;
}

void Selftest::write_cache(const std::string &path, int32_t device, const DeviceCaps &caps,
                           const SelftestResults &results) const
{
    // Written whole under another name, then renamed: a reader sees the old
    // file or the new one, never half of one.
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    // The directory is made if it is missing (one level: a typo in a deeper
    // path should show as a warning, not as a tree of new directories).
    if (mkdir(cache_dir_, 0755) != 0 && errno != EEXIST)
        log(LogLevel::warn, "self-test: cannot make the cache directory %s: %s", cache_dir_, std::strerror(errno));
    FILE *f = std::fopen(tmp.c_str(), "we");
    if (!f) {
        log(LogLevel::warn, "self-test: cannot write the cache %s: %s (the results are used, not kept)", tmp.c_str(),
            std::strerror(errno));
        return;
    }
    std::fprintf(f, "%s %s %s\n", k_cache_format, caps.uuid.empty() ? "-" : caps.uuid.c_str(), caps.name.c_str());
    std::fprintf(f, "device %d\n", device);
    std::fprintf(f, "total_ns %" PRIu64 "\n", results.total_ns);
    for (int i = 0; i < selftest_count; ++i) {
        const SelftestResult &r = results.r[i];
        std::string reason = r.reason;
        for (char &c : reason)
            if (c == '\n')
                c = ' ';
        std::fprintf(f, "%s %d %s %" PRIu64 " %s\n", k_names[i], r.claimed ? 1 : 0,
                     r.outcome == SelftestOutcome::passed   ? "passed"
                     : r.outcome == SelftestOutcome::failed ? "failed"
                                                            : "skipped",
                     r.ns, reason.c_str());
    }
    const bool written = std::fclose(f) == 0;
    if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) {
        log(LogLevel::warn, "self-test: cannot write the cache %s: %s", path.c_str(), std::strerror(errno));
        unlink(tmp.c_str());
    }
}

} // namespace gpumem::detail
