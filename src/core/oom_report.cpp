#include "core/oom_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/devices.hpp"
#include "core/handles.hpp"
#include "core/limit.hpp"
#include "core/pointers.hpp"
#include "core/pools/own_pools.hpp"
#include "core/pools/pools.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {
namespace {

// The request noted by the failing call (consumed when its report is built)
// and the thread's last report, on the heap: the library's static TLS stays
// small (base/error.cpp says why).
struct ThreadOom {
    bool noted = false;
    OomRequest request;
    gpumem_oom_report_t report{}; // has_report 0 until the first
};
thread_local std::unique_ptr<ThreadOom> t_oom;

// The thread's message holds this much (base/error.cpp); the verdict must
// survive the call's name put in front.
constexpr size_t k_message_capacity = 4096;
constexpr size_t k_prefix_room = 96;

// Blocks of gpumem's own pool are 256-byte multiples (pool_internal.hpp, kGranule).
constexpr uint64_t k_block_granule = 256;

uint64_t round_up(uint64_t v, uint64_t to) { return to ? (v + to - 1) / to * to : v; }

// "1.2 GiB", "512 KiB", "100 bytes".
std::string human(uint64_t bytes)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    char out[32];
    if (bytes < 1024) {
        std::snprintf(out, sizeof out, "%" PRIu64 " bytes", bytes);
        return out;
    }
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    std::snprintf(out, sizeof out, v < 10 && v != double(uint64_t(v)) ? "%.1f %s" : "%.0f %s", v, units[u]);
    return out;
}

// Whether a kind's memory lies on the device (and so is what the device's free memory limits).
bool device_memory_kind(int32_t kind)
{
    return kind == GPUMEM_KIND_DEVICE || kind == GPUMEM_KIND_STREAM_ORDERED || kind == GPUMEM_KIND_VIRTUAL ||
           kind == GPUMEM_KIND_BUFFER || kind == GPUMEM_KIND_MANAGED;
}

// One own pool's free memory as the request sees it.
struct FreeFigures {
    uint64_t usable_total = 0;   // free bytes the requesting stream may take now
    uint64_t usable_largest = 0; // the largest such block
    uint64_t pending_total = 0;  // free bytes waiting for another stream
    uint64_t largest_after_sync = 0; // the largest run once pending frees are safe (neighbours coalesce)
    uint64_t releasable = 0;     // memory of segments with no live and no pending block (what a trim gives back)
    uint64_t releasable_address = 0; // their address space (what a trim takes off max_size's count)
    std::map<void *, uint64_t> pending_by_stream;
};

FreeFigures free_figures(uint64_t owner, const std::vector<own_pools::SegmentView> &segments, void *stream)
{
    FreeFigures f;
    for (const own_pools::SegmentView &s : segments) {
        if (s.owner != owner)
            continue;
        uint64_t free_in_segment = 0, run = 0, run_end = ~uint64_t(0);
        bool any_pending = false;
        for (const own_pools::FreeBlockView &b : s.free_blocks) {
            free_in_segment += b.bytes;
            const bool other = b.pending && b.pending_stream != stream;
            if (other) {
                any_pending = true;
                f.pending_total += b.bytes;
                f.pending_by_stream[b.pending_stream] += b.bytes;
            } else {
                f.usable_total += b.bytes;
                f.usable_largest = std::max<uint64_t>(f.usable_largest, b.bytes);
            }
            run = b.offset == run_end ? run + b.bytes : b.bytes;
            run_end = b.offset + b.bytes;
            f.largest_after_sync = std::max(f.largest_after_sync, run);
        }
        if (free_in_segment == s.bytes && !any_pending) {
            f.releasable += s.backed;
            f.releasable_address += s.bytes;
        }
    }
    return f;
}

} // namespace

namespace oom {

status_t note_request(status_t status, const OomRequest &request) noexcept
{
    if (!t_oom)
        t_oom.reset(new (std::nothrow) ThreadOom); // out of host memory: the report says the request is unknown
    if (t_oom) {
        t_oom->request = request;
        t_oom->noted = true;
    }
    return status;
}

status_t note_current_request(status_t status, int32_t kind, uint64_t bytes, gpumem_pool_t pool,
                              gpumem_stream_t stream) noexcept
{
    return note_request(status, OomRequest{current_device(), kind, bytes, pool, stream});
}

void last(gpumem_oom_report_t *out)
{
    *out = t_oom ? t_oom->report : gpumem_oom_report_t{};
    out->size = sizeof *out;
}

} // namespace oom

void OomReports::build(const OomRequest *request, gpumem_oom_report_t *out)
{
    gpumem_oom_report_t r{};
    r.size = sizeof r;
    r.has_report = 1;
    r.kind = request ? request->kind : GPUMEM_KIND_UNKNOWN;
    r.device = request ? request->device : current_device();
    r.bytes = request ? request->bytes : 0;
    r.pool = request ? request->pool : nullptr;
    r.stream = request ? request->stream : nullptr;
    std::vector<Pools::Summary> pools;
    pools_.describe(&pools);
    // A named pool's allocation runs on the pool's device.
    if (r.pool)
        for (const Pools::Summary &s : pools)
            if (s.handle == handle_bits(r.pool))
                r.device = s.device;
    const int32_t d = r.device;
    const bool device_ok = d >= 0 && d < devices_.count();

    // The device's free and total memory.  A device this process has not
    // started is not asked (asking would start a context on it); it holds
    // nothing of gpumem's, so what it had free when gpumem opened it stands in.
    bool device_known = false;
    if (device_ok && runtime_.device_started(d)) {
        size_t free_bytes = 0, total_bytes = 0;
        if (runtime_.mem_info(d, &free_bytes, &total_bytes) == GPUMEM_SUCCESS) {
            r.device_free = free_bytes;
            r.device_total = total_bytes;
            device_known = true;
        }
    } else if (device_ok && devices_[d].caps.free_memory) {
        r.device_free = devices_[d].caps.free_memory;
        r.device_total = devices_[d].caps.total_memory;
        device_known = true;
    }

    // What gpumem holds there: live allocations of the directory, and each
    // pool's reserve (its live blocks included).
    if (device_ok) {
        for (const Allocation &a : pointers_.registry_all())
            if (a.device == d && device_memory_kind(a.kind) && a.kind != GPUMEM_KIND_MANAGED) {
                r.gpumem_reserved += a.size;
                r.gpumem_used += a.size;
            }
    }
    std::vector<own_pools::PoolView> own;
    std::vector<own_pools::SegmentView> segments;
    own_pools::views(&own, &segments);
    auto own_view = [&](uint64_t handle) -> const own_pools::PoolView * {
        for (const own_pools::PoolView &v : own)
            if (v.owner == handle && handle)
                return &v;
        return nullptr;
    };

    // The pool asked: the device's current pool when the call named none.
    uint64_t asked = 0;
    int32_t asked_memory = GPUMEM_POOL_MEMORY_DEVICE;
    if (r.kind == GPUMEM_KIND_STREAM_ORDERED) {
        if (!r.pool && device_ok)
            pools_.current_pool(d, &r.pool);
        asked = handle_bits(r.pool);
        for (const Pools::Summary &s : pools)
            if (s.handle == asked)
                asked_memory = s.memory;
    }
    const own_pools::PoolView *asked_own = own_view(asked);

    // The allocator's rounding: the own pool grows by its granularity, the
    // drivers by 2 MiB pages, the host backend by its pages.
    const uint64_t page = device_ok ? devices_[d].caps.backing_page : uint64_t(2u << 20);
    r.rounded_bytes = round_up(r.bytes, asked_own ? std::max<uint64_t>(asked_own->granularity, k_block_granule) : page);
    const uint64_t block_need = round_up(r.bytes, k_block_granule);

    // Trimming: an own pool gives back its segments with no live and no
    // pending block (what release_free_chunks takes); a native pool what it
    // reserves beyond what it uses.
    uint64_t asked_releasable_address = 0;
    for (const Pools::Summary &s : pools) {
        if (s.device != d || s.memory != GPUMEM_POOL_MEMORY_DEVICE)
            continue;
        r.gpumem_reserved += s.reserved;
        r.gpumem_used += s.used;
        uint64_t gives = 0;
        if (own_view(s.handle)) {
            FreeFigures f = free_figures(s.handle, segments, nullptr);
            gives = f.releasable;
            if (s.handle == asked)
                asked_releasable_address = f.releasable_address;
        } else {
            gives = s.reserved > s.used ? s.reserved - s.used : 0;
        }
        r.trim.bytes += gives;
        if (gives > r.trim_pool_bytes) {
            r.trim_pool_bytes = gives;
            r.trim_pool = handle_from_bits<gpumem_pool_t>(s.handle);
        }
    }

    // The limit: what counts against it, and whether it is what refused.
    const int32_t counted = limit::counted_kind(r.kind, asked_memory);
    r.limit = device_ok ? limit::cap(d) : 0;
    r.limit_held = device_ok ? limit::held(d) : 0;
    const bool limit_refused = r.limit && limit::counts(counted) && r.limit_held + r.bytes > r.limit;

    // The own pool's rules: max_size bounds its address space.
    const bool pool_bound = asked_own && asked_own->max_size &&
                            asked_own->address_bytes + r.rounded_bytes > asked_own->max_size;
    const bool on_device = device_memory_kind(r.kind) && asked_memory == GPUMEM_POOL_MEMORY_DEVICE;
    // Memory given back to the device helps only a request for device memory.
    auto device_fits_with = [&](uint64_t freed) {
        return on_device && device_known && r.device_free + freed >= r.rounded_bytes;
    };

    FreeFigures asked_free;
    if (asked_own)
        asked_free = free_figures(asked, segments, r.stream);
    const bool fits_in_pool_now = asked_own && asked_free.usable_largest >= block_need;

    // Trim: the other pools' memory returns to the device; the pool asked
    // gives its own address space back under max_size.
    if (pool_bound)
        r.trim.fits = !limit_refused && asked_releasable_address > 0 &&
                      asked_own->address_bytes - asked_releasable_address + r.rounded_bytes <= asked_own->max_size &&
                      device_fits_with(r.trim.bytes);
    else
        r.trim.fits = !limit_refused && r.trim.bytes > 0 && device_fits_with(r.trim.bytes);

    // Pending frees on other streams, once those streams are synchronised.
    if (asked_own) {
        r.pending.bytes = asked_free.pending_total;
        uint64_t most = 0;
        for (const auto &[stream, bytes] : asked_free.pending_by_stream)
            if (bytes > most) {
                most = bytes;
                r.pending_stream = static_cast<gpumem_stream_t>(stream);
            }
        r.pending.fits = !limit_refused && r.pending.bytes > 0 && asked_free.largest_after_sync >= block_need;
        // Fragmentation: its free memory as one block.
        r.fragmentation.bytes = asked_free.usable_total;
        r.largest_free_block = asked_free.usable_largest;
        r.fragmentation.fits = !limit_refused && asked_free.usable_total >= block_need && !fits_in_pool_now;
    }

    // The limit raised far enough.
    if (limit_refused) {
        r.limit_raise.bytes = r.limit_held + r.bytes - r.limit;
        // A device not started yet (the limit refused before it was needed)
        // has all but other processes' memory free: the limit is what refused.
        r.limit_raise.fits = fits_in_pool_now || (!pool_bound && (!device_known || device_fits_with(0)));
    }

    // Memory of the device that gpumem does not hold (on the host backend,
    // whose device is the machine's memory, the other programs').
    if (device_known && r.device_total > r.device_free + r.gpumem_reserved) {
        r.outside.bytes = r.device_total - r.device_free - r.gpumem_reserved;
        r.outside.fits = !limit_refused && !pool_bound && on_device && device_fits_with(r.outside.bytes);
    }

    // The verdict: the first remedy that would have been enough, in the order
    // a program can apply them most cheaply.
    char *v = r.verdict;
    const size_t n = sizeof r.verdict;
    if (!request) {
        std::snprintf(v, n, "what would have fit is not known: this call is not one allocation");
    } else if (limit_refused && r.limit_raise.fits) {
        std::snprintf(v, n, "would fit under a GPUMEM_LIMIT %s higher (the cap is %s, gpumem holds %s)",
                      human(r.limit_raise.bytes).c_str(), human(r.limit).c_str(), human(r.limit_held).c_str());
    } else if (limit_refused) {
        std::snprintf(v, n, "would not fit even under a GPUMEM_LIMIT %s higher: device %d has %s free",
                      human(r.limit_raise.bytes).c_str(), d, human(r.device_free).c_str());
    } else if (r.pending.fits) {
        std::snprintf(v, n, "would fit after synchronizing stream %p (frees pending there: %s)",
                      static_cast<void *>(r.pending_stream), human(r.pending.bytes).c_str());
    } else if (r.trim.fits && (pool_bound || device_fits_with(r.trim_pool_bytes))) {
        std::snprintf(v, n, "would fit after trimming pool %p (gives back %s)", static_cast<void *>(pool_bound ? r.pool : r.trim_pool),
                      human(pool_bound ? asked_releasable_address : r.trim_pool_bytes).c_str());
    } else if (r.trim.fits) {
        std::snprintf(v, n, "would fit after trimming gpumem's pools on device %d (they give back %s; pool %p most, %s)",
                      d, human(r.trim.bytes).c_str(), static_cast<void *>(r.trim_pool),
                      human(r.trim_pool_bytes).c_str());
    } else if (r.fragmentation.fits) {
        std::snprintf(v, n,
                      "would fit if pool %p's free memory were one block (%s free, largest block %s): free the blocks "
                      "between them, or give the pool a larger max_size",
                      static_cast<void *>(r.pool), human(r.fragmentation.bytes).c_str(),
                      human(r.largest_free_block).c_str());
    } else if (pool_bound) {
        std::snprintf(v, n, "would not fit: pool %p is at its max_size of %s (%s free in it, largest block %s)",
                      static_cast<void *>(r.pool), human(asked_own->max_size).c_str(),
                      human(asked_free.usable_total).c_str(), human(asked_free.usable_largest).c_str());
    } else if (r.outside.fits) {
        std::snprintf(v, n,
                      "would not fit from gpumem's memory: %s of device %d is held outside gpumem (other allocators "
                      "or other processes)",
                      human(r.outside.bytes).c_str(), d);
    } else {
        std::snprintf(v, n, "would not fit: device %d has %s free of %s, gpumem holds %s and trimming would give back %s",
                      d, human(r.device_free).c_str(), human(r.device_total).c_str(),
                      human(r.gpumem_reserved).c_str(), human(r.trim.bytes).c_str());
    }
    *out = r;
}

void OomReports::on_out_of_memory() noexcept
{
    const bool noted = t_oom && t_oom->noted;
    const OomRequest request = noted ? t_oom->request : OomRequest{};
    if (noted)
        t_oom->noted = false;
    // The message as it stands: the report's own calls may overwrite it.
    std::string message;
    try {
        message = last_error_message();
        gpumem_oom_report_t r{};
        build(noted ? &request : nullptr, &r);
        if (!t_oom)
            t_oom = std::make_unique<ThreadOom>();
        t_oom->report = r;
        trace::on_oom(r.kind, r.bytes, r.device, r.pool, r.stream, r.verdict);
        // The verdict comes last, whole: a long state of memory gives way.
        const size_t room = k_message_capacity - k_prefix_room - std::strlen(r.verdict) - 8;
        if (message.size() > room)
            message = message.substr(0, room) + "...";
        fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s; %s", message.c_str(), r.verdict);
    } catch (...) {
        // Out of host memory while reporting: the message as it was.
        if (!message.empty())
            fail(GPUMEM_ERROR_OUT_OF_MEMORY, "%s", message.c_str());
    }
}

} // namespace gpumem::detail
