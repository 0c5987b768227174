#include "core/inspect.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "base/json.hpp"
#include "base/options.hpp"
#include "base/output_file.hpp"
#include "core/limit.hpp"
#include "core/pools/own_pools.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"
#include "core/pools/pools.hpp"
#include "core/trace.hpp"
#include "gpumem/gpumem_version.h"

namespace gpumem::detail {
namespace {

// One live allocation, whatever book it came from.
struct Live {
    uintptr_t ptr = 0;
    size_t bytes = 0;
    int32_t kind = GPUMEM_KIND_UNKNOWN;
    int32_t memory = GPUMEM_POOL_MEMORY_UNKNOWN; // as pointer info says
    int32_t device = 0;
    uint64_t pool = 0;
    Birth birth;
    uint64_t graph = 0; // the capture whose graph owns the block (gpumem's own pool)
};

// Sorted by address.  VMM physical handles have no address and are not listed.
std::vector<Live> live_allocations(const Pointers &pointers, Pools &pools)
{
    std::vector<Live> out;
    for (const Allocation &a : pointers.registry_all())
        out.push_back(Live{a.base, a.size, a.kind, memory_of_kind(a.kind), a.device, 0, a.birth});
    std::vector<LiveBlock> blocks;
    pools.list_blocks(&blocks);
    for (const LiveBlock &b : blocks)
        out.push_back(Live{uintptr_t(b.block.base), b.block.size, GPUMEM_KIND_STREAM_ORDERED, b.block.memory,
                           b.block.device, b.block.pool, b.birth, b.block.graph});
    std::sort(out.begin(), out.end(), [](const Live &a, const Live &b) { return a.ptr < b.ptr; });
    return out;
}

uint64_t micros_since(uint64_t epoch_ns, uint64_t ns) { return ns > epoch_ns ? (ns - epoch_ns) / 1000 : 0; }

// What a snapshot owns; the public struct points into it.
struct SnapshotData {
    gpumem_snapshot_t pub{};
    std::vector<gpumem_snapshot_device_t> devices;
    std::vector<gpumem_snapshot_pool_t> pools;
    std::vector<gpumem_snapshot_allocation_t> allocations;
    std::vector<gpumem_snapshot_segment_t> segments;
    std::vector<gpumem_snapshot_free_block_t> free_blocks;
    std::vector<std::shared_ptr<const Frames>> frames; // backtraces the allocations point into
};

// Snapshots outlive runtimes; release checks membership, so a stale or
// forged pointer is reported instead of freed.
std::mutex g_snapshots_mutex;
std::unordered_map<const gpumem_snapshot_t *, std::unique_ptr<SnapshotData>> &snapshots()
{
    static auto *live = new std::unordered_map<const gpumem_snapshot_t *, std::unique_ptr<SnapshotData>>;
    return *live;
}

void write_hex_or_null(FILE *f, const void *p)
{
    if (p)
        std::fprintf(f, "\"%p\"", p);
    else
        std::fputs("null", f);
}

} // namespace

status_t Inspect::snapshot_take(gpumem_snapshot_t **out)
{
    auto data = std::make_unique<SnapshotData>();
    const uint64_t now = precise_now_ns();

    for (int32_t d = 0; d < devices_.count(); ++d) {
        gpumem_snapshot_device_t dev{};
        dev.size = sizeof dev;
        dev.device = d;
        const DeviceCaps &caps = devices_[d].caps;
        std::snprintf(dev.name, sizeof dev.name, "%s", caps.name.c_str());
        // A device this process has not started reports no free memory:
        // asking would start a context on it.
        size_t free_bytes = 0, total_bytes = caps.total_memory;
        if (runtime_.device_started(d))
            if (status_t st = runtime_.mem_info(d, &free_bytes, &total_bytes))
                return st;
        dev.total = total_bytes;
        dev.free = free_bytes;
        data->devices.push_back(dev);
    }

    std::vector<Pools::Summary> pools;
    pools_.describe(&pools);
    for (const Pools::Summary &s : pools) {
        gpumem_snapshot_pool_t p{};
        p.size = sizeof p;
        p.pool = handle_from_bits<gpumem_pool_t>(s.handle);
        p.device = s.device;
        p.implementation = s.implementation;
        p.memory = s.memory;
        p.reserved_bytes = s.reserved;
        p.used_bytes = s.used;
        data->pools.push_back(p);
    }

    for (const Live &l : live_allocations(pointers_, pools_)) {
        gpumem_snapshot_allocation_t a{};
        a.size = sizeof a;
        a.ptr = reinterpret_cast<void *>(l.ptr);
        a.bytes = l.bytes;
        a.kind = l.kind;
        a.memory = l.memory;
        a.device = l.device;
        a.thread = l.birth.thread;
        a.pool = handle_from_bits<gpumem_pool_t>(l.pool);
        a.stream = static_cast<gpumem_stream_t>(l.birth.stream);
        a.time_us = micros_since(epoch_ns_, l.birth.time_ns);
        a.graph = l.graph;
        if (auto frames = trace::backtrace_of(a.ptr)) {
            a.backtrace = frames->data();
            a.backtrace_depth = frames->size();
            data->frames.push_back(std::move(frames));
        }
        data->allocations.push_back(a);
    }

    std::vector<own_pools::SegmentView> segments;
    own_pools::segments(&segments);
    size_t free_total = 0;
    for (const own_pools::SegmentView &s : segments)
        free_total += s.free_blocks.size();
    data->free_blocks.reserve(free_total); // stable: segments point into it
    for (const own_pools::SegmentView &s : segments) {
        gpumem_snapshot_segment_t seg{};
        seg.size = sizeof seg;
        seg.pool = handle_from_bits<gpumem_pool_t>(s.owner);
        seg.device = s.device;
        seg.base = s.base;
        seg.bytes = s.bytes;
        seg.backed_bytes = s.backed;
        seg.free_block_count = s.free_blocks.size();
        seg.free_blocks = data->free_blocks.data() + data->free_blocks.size();
        for (const own_pools::FreeBlockView &b : s.free_blocks)
            data->free_blocks.push_back(gpumem_snapshot_free_block_t{b.offset, b.bytes});
        data->segments.push_back(seg);
    }
    std::stable_sort(data->segments.begin(), data->segments.end(),
                     [](const gpumem_snapshot_segment_t &a, const gpumem_snapshot_segment_t &b) {
                         return a.pool != b.pool ? uintptr_t(a.pool) < uintptr_t(b.pool)
                                                 : uintptr_t(a.base) < uintptr_t(b.base);
                     });

    gpumem_snapshot_t &pub = data->pub;
    pub.size = sizeof pub;
    pub.backend = devices_.backend_id();
    pub.time_us = micros_since(epoch_ns_, now);
    pub.devices = data->devices.data();
    pub.device_count = data->devices.size();
    pub.pools = data->pools.data();
    pub.pool_count = data->pools.size();
    pub.allocations = data->allocations.data();
    pub.allocation_count = data->allocations.size();
    pub.segments = data->segments.data();
    pub.segment_count = data->segments.size();

    std::lock_guard<std::mutex> lock(g_snapshots_mutex);
    gpumem_snapshot_t *handle = &data->pub;
    snapshots().emplace(handle, std::move(data));
    *out = handle;
    return GPUMEM_SUCCESS;
}

namespace inspect {

status_t snapshot_release(const gpumem_snapshot_t *snapshot)
{
    std::unique_ptr<SnapshotData> gone; // freed outside the lock
    std::lock_guard<std::mutex> lock(g_snapshots_mutex);
    auto it = snapshots().find(snapshot);
    if (it == snapshots().end())
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "%p is not a live snapshot (already released, or not from gpumem_snapshot_take)",
                    static_cast<const void *>(snapshot));
    gone = std::move(it->second);
    snapshots().erase(it);
    return GPUMEM_SUCCESS;
}

status_t snapshot_write_json(const gpumem_snapshot_t *snapshot, const char *path)
{
    // Held while writing, so that another thread cannot release it meanwhile.
    std::lock_guard<std::mutex> lock(g_snapshots_mutex);
    if (!snapshots().count(snapshot))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "%p is not a live snapshot (already released, or not from gpumem_snapshot_take)",
                    static_cast<const void *>(snapshot));
    const gpumem_snapshot_t &s = *snapshot;
    // %p and %r expanded, and the file claimed by this process (base/output_file.hpp).
    std::string written;
    const int fd = open_claimed_output(expand_output_path(path), "gpumem_snapshot_write_json", &written);
    // Closed on every way out (symbolising may run out of memory midway).
    std::unique_ptr<FILE, int (*)(FILE *)> file(fd >= 0 ? fdopen(fd, "w") : nullptr, std::fclose);
    FILE *f = file.get();
    if (!f) {
        const int e = errno;
        if (fd >= 0)
            close(fd);
        if (e == ENXIO)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot write the snapshot: no process reads the FIFO %s; start "
                        "its reader first", written.c_str());
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot write the snapshot: open(\"%s\") failed with %s; check the path",
                    written.c_str(), std::strerror(e));
    }
    std::fprintf(f, "{\"gpumem_snapshot\":1,\"version\":\"%d.%d.%d\",\"backend\":\"%s\",\"time_us\":%" PRIu64 ",\n",
                 GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH, backend_name(s.backend),
                 s.time_us);
    std::fputs("\"devices\":[", f);
    for (size_t i = 0; i < s.device_count; ++i) {
        const gpumem_snapshot_device_t &d = s.devices[i];
        std::fprintf(f, "%s\n{\"device\":%d,\"name\":", i ? "," : "", d.device);
        json::write_string(f, d.name);
        std::fprintf(f, ",\"total\":%" PRIu64 ",\"free\":%" PRIu64 "}", d.total, d.free);
    }
    std::fputs("],\n\"pools\":[", f);
    for (size_t i = 0; i < s.pool_count; ++i) {
        const gpumem_snapshot_pool_t &p = s.pools[i];
        std::fprintf(f,
                     "%s\n{\"pool\":\"%p\",\"device\":%d,\"implementation\":\"%s\",\"memory\":\"%s\",\"reserved\":%" PRIu64
                     ",\"used\":%" PRIu64 "}",
                     i ? "," : "", static_cast<void *>(p.pool), p.device,
                     p.implementation == GPUMEM_POOL_NATIVE ? "native" : "builtin", memory_name(p.memory),
                     p.reserved_bytes, p.used_bytes);
    }
    std::fputs("],\n\"allocations\":[", f);
    for (size_t i = 0; i < s.allocation_count; ++i) {
        const gpumem_snapshot_allocation_t &a = s.allocations[i];
        std::fprintf(f, "%s\n{\"ptr\":\"%p\",\"bytes\":%zu,\"kind\":\"%s\",\"memory\":\"%s\",\"device\":%d,\"pool\":",
                     i ? "," : "", a.ptr, a.bytes, public_kind_name(a.kind), memory_name(a.memory), a.device);
        write_hex_or_null(f, static_cast<void *>(a.pool));
        std::fputs(",\"stream\":", f);
        write_hex_or_null(f, static_cast<void *>(a.stream));
        std::fprintf(f, ",\"thread\":%u,\"time_us\":%" PRIu64, a.thread, a.time_us);
        if (a.size > offsetof(gpumem_snapshot_allocation_t, graph) && a.graph)
            std::fprintf(f, ",\"graph\":%" PRIu64, a.graph);
        if (a.backtrace) {
            std::fputs(",\"backtrace\":[", f);
            std::vector<std::string> names = trace::symbolize(Frames(a.backtrace, a.backtrace + a.backtrace_depth));
            for (size_t k = 0; k < names.size(); ++k) {
                if (k)
                    std::fputc(',', f);
                json::write_string(f, names[k].c_str());
            }
            std::fputc(']', f);
        }
        std::fputc('}', f);
    }
    std::fputs("],\n\"segments\":[", f);
    for (size_t i = 0; i < s.segment_count; ++i) {
        const gpumem_snapshot_segment_t &g = s.segments[i];
        std::fprintf(f, "%s\n{\"pool\":", i ? "," : "");
        write_hex_or_null(f, static_cast<void *>(g.pool));
        std::fprintf(f, ",\"device\":%d,\"base\":\"%p\",\"bytes\":%zu,\"backed\":%zu,\"free_blocks\":[", g.device,
                     g.base, g.bytes, g.backed_bytes);
        for (size_t k = 0; k < g.free_block_count; ++k)
            std::fprintf(f, "%s{\"offset\":%zu,\"bytes\":%zu}", k ? "," : "", g.free_blocks[k].offset,
                         g.free_blocks[k].bytes);
        std::fputs("]}", f);
    }
    std::fputs("]}\n", f);
    const bool write_error = std::ferror(f) != 0;
    if (std::fclose(file.release()) != 0 || write_error)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot write the snapshot to \"%s\": %s; check the disk and the path",
                    written.c_str(), std::strerror(errno));
    return GPUMEM_SUCCESS;
}

} // namespace inspect

void Inspect::append_oom_report() noexcept
{
    // The message as it stands: the report's own calls may overwrite it.
    char message[1024];
    std::snprintf(message, sizeof message, "%s", last_error_message());
    try {
        std::string report = " [memory now:";
        char line[256];
        const int32_t shown_devices = std::min<int32_t>(devices_.count(), 8);
        for (int32_t d = 0; d < shown_devices; ++d) {
            size_t free_bytes = 0, total_bytes = 0;
            if (!runtime_.device_started(d))
                std::snprintf(line, sizeof line, " device %d: not used by this process", d);
            else if (runtime_.mem_info(d, &free_bytes, &total_bytes) == GPUMEM_SUCCESS)
                std::snprintf(line, sizeof line, " device %d: %zu of %zu bytes free", d, free_bytes, total_bytes);
            else
                std::snprintf(line, sizeof line, " device %d: free/total unknown", d);
            report += line;
            if (uint64_t cap = limit::cap(d)) {
                std::snprintf(line, sizeof line, ", gpumem holds %" PRIu64 " of GPUMEM_LIMIT %" PRIu64, limit::held(d), cap);
                report += line;
            }
            report += ';';
        }
        std::vector<Pools::Summary> pools;
        pools_.describe(&pools);
        const size_t shown_pools = std::min<size_t>(pools.size(), 8);
        for (size_t i = 0; i < shown_pools; ++i) {
            const Pools::Summary &p = pools[i];
            std::snprintf(line, sizeof line,
                          " pool %p (device %d, %s, %s memory): %" PRIu64 " bytes reserved, %" PRIu64 " used;",
                          handle_from_bits<void *>(p.handle), p.device,
                          p.implementation == GPUMEM_POOL_NATIVE ? "native" : "builtin", memory_name(p.memory),
                          p.reserved, p.used);
            report += line;
        }
        if (pools.size() > shown_pools) {
            std::snprintf(line, sizeof line, " %zu more pools;", pools.size() - shown_pools);
            report += line;
        }
        std::vector<own_pools::SegmentView> segments;
        own_pools::segments(&segments);
        size_t largest_free = 0;
        for (const own_pools::SegmentView &s : segments)
            for (const own_pools::FreeBlockView &b : s.free_blocks)
                largest_free = std::max(largest_free, b.bytes);
        std::snprintf(line, sizeof line, " largest free block in gpumem's own pools: %zu bytes;", largest_free);
        report += line;
        std::vector<Live> live = live_allocations(pointers_, pools_);
        const size_t top = std::min<size_t>(live.size(), 5);
        std::partial_sort(live.begin(), live.begin() + ptrdiff_t(top), live.end(),
                          [](const Live &a, const Live &b) { return a.bytes > b.bytes; });
        report += top ? " largest live allocations:" : " no live allocations";
        for (size_t i = 0; i < top; ++i) {
            std::snprintf(line, sizeof line, "%s %zu bytes %s at %p (device %d)", i ? "," : "", live[i].bytes,
                          public_kind_name(live[i].kind), reinterpret_cast<void *>(live[i].ptr), live[i].device);
            report += line;
        }
        report += ']';
        fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s%s", message, report.c_str());
    } catch (...) {
        // Out of host memory while reporting: the message as it was.
        fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s", message);
    }
}

} // namespace gpumem::detail
