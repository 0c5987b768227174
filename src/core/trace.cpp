#include "core/trace.hpp"

#include <execinfo.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/clock.hpp"
#include "base/json.hpp"
#include "base/log.hpp"
#include "base/options.hpp"
#include "base/output_file.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/pools/own_pools.hpp"
#include "core/stats.hpp"
#include "gpumem/gpumem_version.h"

namespace gpumem::detail {

const char *public_kind_name(int32_t kind)
{
    static const char *const names[GPUMEM_KIND_COUNT] = {"unknown", "device",         "host_pinned", "host_registered",
                                                         "managed", "stream_ordered", "virtual",     "buffer"};
    return kind >= 0 && kind < GPUMEM_KIND_COUNT ? names[kind] : "unknown";
}

const char *memory_name(int32_t memory)
{
    switch (memory) {
    case GPUMEM_POOL_MEMORY_DEVICE: return "device";
    case GPUMEM_POOL_MEMORY_PINNED: return "pinned";
    case GPUMEM_POOL_MEMORY_MANAGED: return "managed";
    default: return "unknown";
    }
}

namespace trace {
namespace {

enum class Type : uint8_t { alloc, free, pool_grow, pool_release, trim, sync, graph_block, graph_release, oom };

struct Event {
    uint64_t ts_ns = 0;
    uint64_t address = 0;  // alloc/free: the pointer; pool events: the pool handle
    uint64_t bytes = 0;    // alloc/free/grow/release: bytes; trim: bytes released
    uint64_t stream = 0;   // alloc/free/sync
    uint64_t pool = 0;     // alloc/free
    uint64_t reserved = 0; // pool events: after the event
    uint64_t used = 0;     // pool events: after the event; graph_release: the blocks
    uint64_t capture = 0;  // graph events: the capture sequence
    std::shared_ptr<const Frames> backtrace; // alloc/free with GPUMEM_BACKTRACE=1
    std::shared_ptr<const std::string> verdict; // oom: the report's verdict
    uint32_t tid = 0;
    int32_t device = 0;
    Type type = Type::alloc;
    int8_t kind = 0;
    int8_t memory = GPUMEM_POOL_MEMORY_UNKNOWN; // alloc/free: the allocation's; pool events: the pool's
};

struct DeviceLine {
    std::string name;
    uint64_t total = 0;
};

// One recorder per process; its mutex is a leaf (taken under pool locks).
struct Recorder {
    std::mutex mutex;
    bool on = false;
    std::string path; // GPUMEM_TRACE with %p and %r expanded: this process's claim (base/output_file.hpp)
    size_t max = 0;
    std::vector<Event> ring; // grows to `max`, then the oldest is overwritten
    size_t oldest = 0;       // index of the oldest event once the ring is full
    uint64_t dropped = 0;
    // Live bytes per kind just before the oldest kept event: the counters
    // the file starts from once older events were dropped.
    int64_t base_live[GPUMEM_KIND_COUNT] = {};
    uint64_t start_ns = 0;
    std::string backend;
    std::vector<DeviceLine> devices;
    bool exit_hook = false;
    pid_t pid = 0; // a forked child's copy of the ring is not its to write

    // Backtraces of live allocations (GPUMEM_BACKTRACE=1).
    std::mutex bt_mutex;
    std::unordered_map<uintptr_t, std::shared_ptr<const Frames>> backtraces;

    // Never throws: recording runs inside allocations that already succeeded
    // (and under pool locks).  When the heap cannot grow the ring, the ring
    // stays the size it reached and keeps the newest events in it.
    void push(Event &&e) noexcept
    {
        if (ring.size() < max) {
            try {
                ring.push_back(std::move(e));
                return;
            } catch (...) {
                max = ring.size();
            }
        }
        if (ring.empty()) {
            forget(e);
            return;
        }
        forget(ring[oldest]);
        ring[oldest] = std::move(e);
        oldest = (oldest + 1) % max;
    }
    // An event leaves the file: its bytes move into the counters' starting point.
    void forget(const Event &gone)
    {
        if (gone.type == Type::alloc)
            base_live[gone.kind] += int64_t(gone.bytes);
        else if (gone.type == Type::free)
            base_live[gone.kind] -= int64_t(gone.bytes);
        ++dropped;
    }
    void write_locked();
};

// Leaked on purpose: the exit hook and late callers may still use it.
Recorder &recorder()
{
    static Recorder *r = new Recorder;
    return *r;
}

void write_hex_or_null(FILE *f, uint64_t v)
{
    if (v)
        std::fprintf(f, "\"0x%" PRIx64 "\"", v);
    else
        std::fputs("null", f);
}

void write_backtrace(FILE *f, const Frames &frames)
{
    std::fputs(",\"backtrace\":[", f);
    std::vector<std::string> names = symbolize(frames);
    for (size_t i = 0; i < names.size(); ++i) {
        if (i)
            std::fputc(',', f);
        json::write_string(f, names[i].c_str());
    }
    std::fputc(']', f);
}

void Recorder::write_locked()
{
    // Closed on every way out (symbolising may run out of memory midway).
    std::string written;
    const int fd = open_claimed_output(path, "GPUMEM_TRACE", &written);
    std::unique_ptr<FILE, int (*)(FILE *)> file(fd >= 0 ? fdopen(fd, "w") : nullptr, std::fclose);
    FILE *f = file.get();
    if (!f) {
        if (errno == ENXIO)
            log(LogLevel::warn, "cannot write the trace to %s (GPUMEM_TRACE): no process reads that FIFO; start its "
                "reader before the program ends", written.c_str());
        else
            log(LogLevel::warn, "cannot write the trace to %s (GPUMEM_TRACE): %s; check the path", written.c_str(),
                std::strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    const long pid = long(getpid());
    std::fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"gpumem_trace\":1,\"version\":\"%d.%d.%d\",\"backend\":",
                 GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH);
    json::write_string(f, backend.c_str());
    std::fprintf(f, ",\"pid\":%ld,\"dropped\":%" PRIu64 ",\"max_events\":%zu,\"devices\":[", pid, dropped, max);
    for (size_t d = 0; d < devices.size(); ++d) {
        std::fprintf(f, "%s{\"device\":%zu,\"name\":", d ? "," : "", d);
        json::write_string(f, devices[d].name.c_str());
        std::fprintf(f, ",\"total\":%" PRIu64 "}", devices[d].total);
    }
    std::fputs("]},\"traceEvents\":[\n", f);
    int64_t live[GPUMEM_KIND_COUNT];
    std::memcpy(live, base_live, sizeof live);
    bool first = true;
    auto begin_line = [&] {
        if (!first)
            std::fputs(",\n", f);
        first = false;
    };
    for (size_t n = 0; n < ring.size(); ++n) {
        const Event &e = ring[(oldest + n) % ring.size()];
        const double ts = double(e.ts_ns - start_ns) / 1000.0;
        begin_line();
        switch (e.type) {
        case Type::alloc:
        case Type::free: {
            live[e.kind] += e.type == Type::alloc ? int64_t(e.bytes) : -int64_t(e.bytes);
            std::fprintf(f,
                         "{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,\"cat\":\"gpumem\","
                         "\"args\":{\"ptr\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"memory\":\"%s\","
                         "\"device\":%d,\"pool\":",
                         e.type == Type::alloc ? "alloc" : "free", ts, pid, e.tid, e.address, e.bytes,
                         public_kind_name(e.kind), memory_name(e.memory), e.device);
            write_hex_or_null(f, e.pool);
            std::fputs(",\"stream\":", f);
            write_hex_or_null(f, e.stream);
            if (e.backtrace)
                write_backtrace(f, *e.backtrace);
            std::fputs("}}", f);
            // The counter after each alloc/free: one key per kind in use.
            begin_line();
            std::fprintf(f, "{\"name\":\"bytes in use\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%ld,\"args\":{", ts, pid);
            bool any = false;
            for (int k = 0; k < GPUMEM_KIND_COUNT; ++k)
                if (live[k] > 0) {
                    std::fprintf(f, "%s\"%s\":%" PRId64, any ? "," : "", public_kind_name(k), live[k]);
                    any = true;
                }
            std::fputs("}}", f);
            break;
        }
        case Type::pool_grow:
        case Type::pool_release:
        case Type::trim:
            if (e.type == Type::trim)
                std::fprintf(f,
                             "{\"name\":\"trim\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,\"cat\":\"gpumem\","
                             "\"args\":{\"pool\":\"0x%" PRIx64 "\",\"device\":%d,\"memory\":\"%s\",\"released\":%" PRIu64
                             ",\"reserved\":%" PRIu64 "}}",
                             ts, pid, e.tid, e.address, e.device, memory_name(e.memory), e.bytes, e.reserved);
            else
                std::fprintf(f,
                             "{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,\"cat\":\"gpumem\","
                             "\"args\":{\"pool\":\"0x%" PRIx64 "\",\"device\":%d,\"memory\":\"%s\",\"bytes\":%" PRIu64
                             ",\"reserved\":%" PRIu64 "}}",
                             e.type == Type::pool_grow ? "pool_grow" : "pool_release", ts, pid, e.tid, e.address,
                             e.device, memory_name(e.memory), e.bytes, e.reserved);
            begin_line();
            std::fprintf(f,
                         "{\"name\":\"pool 0x%" PRIx64 " reserved\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%ld,"
                         "\"args\":{\"reserved\":%" PRIu64 ",\"used\":%" PRIu64 "}}",
                         e.address, ts, pid, e.reserved, e.used);
            break;
        case Type::graph_block:
            std::fprintf(f,
                         "{\"name\":\"graph_block\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,"
                         "\"cat\":\"gpumem\",\"args\":{\"ptr\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64 ",\"device\":%d,"
                         "\"capture\":%" PRIu64 "}}",
                         ts, pid, e.tid, e.address, e.bytes, e.device, e.capture);
            break;
        case Type::graph_release:
            std::fprintf(f,
                         "{\"name\":\"graph_release\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,"
                         "\"cat\":\"gpumem\",\"args\":{\"capture\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64
                         ",\"device\":%d}}",
                         ts, pid, e.tid, e.capture, e.used, e.bytes, e.device);
            break;
        case Type::oom:
            std::fprintf(f,
                         "{\"name\":\"oom\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,\"cat\":\"gpumem\","
                         "\"args\":{\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"device\":%d,\"pool\":",
                         ts, pid, e.tid, e.bytes, public_kind_name(e.kind), e.device);
            write_hex_or_null(f, e.pool);
            std::fputs(",\"stream\":", f);
            write_hex_or_null(f, e.stream);
            std::fputs(",\"verdict\":", f);
            json::write_string(f, e.verdict ? e.verdict->c_str() : "");
            std::fputs("}}", f);
            break;
        case Type::sync:
            std::fprintf(f,
                         "{\"name\":\"sync\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%ld,\"tid\":%u,\"cat\":\"gpumem\","
                         "\"args\":{\"stream\":",
                         ts, pid, e.tid);
            write_hex_or_null(f, e.stream);
            std::fprintf(f, ",\"device\":%d}}", e.device);
            break;
        }
    }
    std::fputs("\n]}\n", f);
    if (std::fclose(file.release()) != 0)
        log(LogLevel::warn, "cannot finish the trace file %s (GPUMEM_TRACE): %s; check the disk", written.c_str(),
            std::strerror(errno));
    else
        log(LogLevel::info, "wrote %zu trace events to %s (%" PRIu64 " older ones dropped: GPUMEM_TRACE_MAX)",
            ring.size(), written.c_str(), dropped);
}

// An event of now and this thread, into the ring while recording.
void stamp_and_push(Event e)
{
    e.ts_ns = precise_now_ns();
    e.tid = current_thread_id();
    Recorder &r = recorder();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.on)
        r.push(std::move(e));
}

// Pool growth and release from gpumem's own pools (src/pool), under the pool's lock.
void on_pool_growth(uint64_t owner, int32_t device, int32_t memory, int64_t bytes, uint64_t reserved, uint64_t used)
{
    Event e;
    e.type = bytes >= 0 ? Type::pool_grow : Type::pool_release;
    e.address = owner; // the pool handle's bits, as gpumem_pool_t prints
    e.device = device;
    e.memory = int8_t(memory);
    e.bytes = uint64_t(bytes >= 0 ? bytes : -bytes);
    e.reserved = reserved;
    e.used = used;
    stamp_and_push(std::move(e));
}

void record(Type type, int32_t kind, void *ptr, size_t bytes, int32_t device, int32_t memory, gpumem_stream_t stream,
            gpumem_pool_t pool, std::shared_ptr<const Frames> frames)
{
    Event e;
    e.type = type;
    e.kind = int8_t(kind >= 0 && kind < GPUMEM_KIND_COUNT ? kind : 0);
    e.memory = int8_t(memory);
    e.address = uint64_t(uintptr_t(ptr));
    e.bytes = bytes;
    e.device = device;
    e.stream = uint64_t(uintptr_t(stream));
    e.pool = uint64_t(uintptr_t(pool));
    e.backtrace = std::move(frames);
    stamp_and_push(std::move(e));
}

void write_at_exit()
{
    finish();
}

} // namespace

void start(const Options &options, const Devices &devices, int32_t backend_id, uint64_t epoch_ns)
{
    Recorder &r = recorder();
    {
        std::lock_guard<std::mutex> lock(r.bt_mutex);
        r.backtraces.clear();
    }
    set_watcher(watch_backtrace, options.backtrace);
    if (!options.trace_path)
        return;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.on = true;
        r.path = expand_output_path(options.trace_path);
        r.max = size_t(options.trace_max);
        r.ring.clear();
        r.oldest = 0;
        r.dropped = 0;
        std::memset(r.base_live, 0, sizeof r.base_live);
        r.start_ns = epoch_ns;
        r.pid = getpid();
        r.backend = backend_name(backend_id);
        r.devices.clear();
        devices.for_each(
            [&](const DeviceState &dev) { r.devices.push_back(DeviceLine{dev.caps.name, dev.caps.total_memory}); });
        if (!r.exit_hook)
            r.exit_hook = std::atexit(write_at_exit) == 0;
    }
    own_pools::on_growth(on_pool_growth);
    set_watcher(watch_trace_file, true);
    // Claimed at the start, so that a second process with the same path learns now where it writes.
    const std::string written = claim_output(r.path, "GPUMEM_TRACE");
    log(LogLevel::info, "tracing memory events to %s (GPUMEM_TRACE), keeping the newest %" PRIu64, written.c_str(),
        options.trace_max);
}

void finish()
{
    set_watcher(watch_trace_file, false);
    set_watcher(watch_backtrace, false);
    own_pools::on_growth(nullptr);
    Recorder &r = recorder();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        if (r.on) {
            if (r.pid == getpid()) {
                try {
                    r.write_locked();
                } catch (...) {
                    // From finalize or exit: out of host memory loses the trace, nothing else.
                    log(LogLevel::warn, "cannot write the trace to %s (GPUMEM_TRACE): out of host memory",
                        r.path.c_str());
                }
            }
            r.on = false;
            std::vector<Event>().swap(r.ring);
        }
    }
    std::lock_guard<std::mutex> lock(r.bt_mutex);
    r.backtraces.clear();
}

bool recording() { return (g_watchers.load(std::memory_order_relaxed) & watch_trace_file) != 0; }

std::shared_ptr<const Frames> backtrace_of(const void *ptr)
{
    if (!ptr)
        return nullptr;
    Recorder &r = recorder();
    std::lock_guard<std::mutex> lock(r.bt_mutex);
    auto it = r.backtraces.find(uintptr_t(ptr));
    return it == r.backtraces.end() ? nullptr : it->second;
}

std::vector<std::string> symbolize(const Frames &frames)
{
    std::vector<std::string> out;
    if (frames.empty())
        return out;
    char **names = backtrace_symbols(frames.data(), int(frames.size()));
    for (size_t i = 0; i < frames.size(); ++i) {
        if (names && names[i]) {
            out.emplace_back(names[i]);
        } else {
            char hex[32];
            std::snprintf(hex, sizeof hex, "%p", frames[i]);
            out.emplace_back(hex);
        }
    }
    std::free(names);
    return out;
}

void on_alloc(int32_t kind, void *ptr, size_t bytes, int32_t device, int32_t memory, gpumem_stream_t stream,
              gpumem_pool_t pool)
{
    if (!ptr)
        return;
    uint32_t watchers = g_watchers.load(std::memory_order_relaxed);
    std::shared_ptr<const Frames> frames;
    if (watchers & watch_backtrace) {
        void *raw[64];
        int n = ::backtrace(raw, 64);
        try {
            // Frame 0 is this function: the caller's frames are what matter.
            auto f = std::make_shared<Frames>(raw + (n > 1 ? 1 : 0), raw + n);
            Recorder &r = recorder();
            std::lock_guard<std::mutex> lock(r.bt_mutex);
            r.backtraces[uintptr_t(ptr)] = f;
            frames = std::move(f);
        } catch (...) {
            // Out of host memory: this allocation goes without a backtrace.
        }
    }
    if (watchers & watch_trace_file)
        record(Type::alloc, kind, ptr, bytes, device, memory, stream, pool, std::move(frames));
}

void on_free(int32_t kind, void *ptr, size_t bytes, int32_t device, int32_t memory, gpumem_stream_t stream,
             gpumem_pool_t pool)
{
    if (!ptr)
        return;
    uint32_t watchers = g_watchers.load(std::memory_order_relaxed);
    std::shared_ptr<const Frames> frames;
    if (watchers & watch_backtrace) {
        Recorder &r = recorder();
        std::lock_guard<std::mutex> lock(r.bt_mutex);
        auto it = r.backtraces.find(uintptr_t(ptr));
        if (it != r.backtraces.end()) {
            frames = std::move(it->second);
            r.backtraces.erase(it);
        }
    }
    if (watchers & watch_trace_file)
        record(Type::free, kind, ptr, bytes, device, memory, stream, pool, std::move(frames));
}

void on_map(void *ptr, size_t bytes, int32_t device)
{
    if (g_watchers.load(std::memory_order_relaxed) & (watch_trace_file | watch_backtrace))
        on_alloc(GPUMEM_KIND_VIRTUAL, ptr, bytes, device, memory_of_kind(GPUMEM_KIND_VIRTUAL), nullptr, nullptr);
}

void on_unmap(void *ptr, size_t bytes, int32_t device)
{
    if (g_watchers.load(std::memory_order_relaxed) & (watch_trace_file | watch_backtrace))
        on_free(GPUMEM_KIND_VIRTUAL, ptr, bytes, device, memory_of_kind(GPUMEM_KIND_VIRTUAL), nullptr, nullptr);
}

void on_sync(gpumem_stream_t stream, int32_t device)
{
    if (!recording())
        return;
    Event e;
    e.type = Type::sync;
    e.stream = uint64_t(uintptr_t(stream));
    e.device = device;
    stamp_and_push(std::move(e));
}

void on_trim(uint64_t pool, int32_t device, int32_t memory, uint64_t released, uint64_t reserved, uint64_t used)
{
    if (!recording())
        return;
    Event e;
    e.type = Type::trim;
    e.address = pool;
    e.device = device;
    e.memory = int8_t(memory);
    e.bytes = released;
    e.reserved = reserved;
    e.used = used;
    stamp_and_push(std::move(e));
}

namespace {

void push_graph_event(Type type, uint64_t capture, uint64_t address, uint64_t bytes, uint64_t blocks, int32_t device)
{
    if (!recording())
        return;
    Event e;
    e.type = type;
    e.address = address;
    e.bytes = bytes;
    e.used = blocks;
    e.capture = capture;
    e.device = device;
    stamp_and_push(std::move(e));
}

} // namespace

void on_graph_block(uint64_t capture, const void *ptr, uint64_t bytes, int32_t device)
{
    push_graph_event(Type::graph_block, capture, reinterpret_cast<uintptr_t>(ptr), bytes, 0, device);
}

void on_graph_release(uint64_t capture, uint64_t blocks, uint64_t bytes, int32_t device)
{
    push_graph_event(Type::graph_release, capture, 0, bytes, blocks, device);
}

void on_oom(int32_t kind, uint64_t bytes, int32_t device, gpumem_pool_t pool, gpumem_stream_t stream,
            const char *verdict)
{
    if (!recording())
        return;
    Event e;
    e.type = Type::oom;
    e.kind = int8_t(kind >= 0 && kind < GPUMEM_KIND_COUNT ? kind : GPUMEM_KIND_UNKNOWN);
    e.bytes = bytes;
    e.device = device;
    e.pool = uint64_t(uintptr_t(pool));
    e.stream = uint64_t(uintptr_t(stream));
    e.verdict = std::make_shared<const std::string>(verdict);
    stamp_and_push(std::move(e));
}

} // namespace trace
} // namespace gpumem::detail
