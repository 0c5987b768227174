#include "core/batch.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/capture.hpp"
#include "core/devices.hpp"
#include "core/managed.hpp"
#include "core/memory.hpp"
#include "core/placement.hpp"
#include "core/pointers.hpp"
#include "core/streams.hpp"

namespace gpumem::detail {

namespace {

// Name the entry a failure is about in the message ("entry 7: ...").
status_t at_entry(size_t index, status_t st)
{
    char context[40];
    std::snprintf(context, sizeof context, "entry %zu", index);
    prefix_error(context);
    return st;
}

struct Span {
    uintptr_t begin, end;
    size_t entry;
};

// Copies within a batch run in no particular order on a GPU (the runtimes
// say so), so a destination that overlaps another entry's destination or
// source would give a result that depends on the runtime: refused, with
// both entries named.  `active` are the entries with bytes to copy.
status_t check_independent(void *const *dsts, const void *const *srcs, const size_t *sizes,
                           const std::vector<size_t> &active)
{
    std::vector<Span> out;
    out.reserve(active.size());
    for (size_t i : active) {
        const uintptr_t d = reinterpret_cast<uintptr_t>(dsts[i]);
        out.push_back({d, d + sizes[i], i});
    }
    std::sort(out.begin(), out.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
    for (size_t k = 1; k < out.size(); ++k)
        if (out[k].begin < out[k - 1].end)
            return at_entry(out[k].entry,
                            fail(GPUMEM_ERROR_INVALID_VALUE,
                                 "its destination %p + %zu bytes overlaps the destination of entry %zu; the copies "
                                 "of a batch run in no particular order, so give them disjoint destinations (or "
                                 "split the batch)",
                                 dsts[out[k].entry], sizes[out[k].entry], out[k - 1].entry));
    // The destinations are disjoint and sorted, so their ends are sorted too:
    // a source can only meet the last destination that starts before its end
    // (or, when that is its own entry's, the one before).
    for (size_t i : active) {
        const uintptr_t s = reinterpret_cast<uintptr_t>(srcs[i]), e = s + sizes[i];
        auto it = std::lower_bound(out.begin(), out.end(), e, [](const Span &a, uintptr_t v) { return a.begin < v; });
        for (int step = 0; step < 2 && it != out.begin(); ++step) {
            --it;
            if (it->end <= s)
                break;
            if (it->entry != i)
                return at_entry(i, fail(GPUMEM_ERROR_INVALID_VALUE,
                                        "its source %p + %zu bytes overlaps the destination of entry %zu; the copies "
                                        "of a batch run in no particular order, so a copy cannot read what another "
                                        "writes: split the batch",
                                        srcs[i], sizes[i], it->entry));
        }
    }
    return GPUMEM_SUCCESS;
}

} // namespace

// The batch facet, when it has this call natively for the stream's device
// and takes the stream, and the stream is not capturing a graph (the runtimes
// refuse their batched calls there, invalidating the capture; one call per
// entry is recorded).
BatchMemops *Batch::native_for(const StreamObject &s, bool DeviceCaps::*call) const
{
    BatchMemops *native = runtime_;
    if (!native || !(devices_[s.state.device].caps.*call) || !native->takes_batch_stream(s.state.native))
        return nullptr;
    if (call == &DeviceCaps::batch_copy && (workarounds_ & workaround_no_batch_copy))
        return nullptr;
    CaptureState capture;
    if (capture_.state_of(s.state, &capture) != GPUMEM_SUCCESS ||
        capture.status != CaptureState::Status::none)
        return nullptr; // one call per entry: where the runtime cannot say, the safe way
    return native;
}

int32_t Batch::support_level(int32_t device) const
{
    const bool native = runtime_ && devices_[device].caps.batch_copy &&
                        !(workarounds_ & workaround_no_batch_copy);
    return native ? GPUMEM_SUPPORT_NATIVE : GPUMEM_SUPPORT_EMULATED;
}

status_t Batch::copy(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                     gpumem_stream_t stream)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    // Every entry as gpumem_memcpy_async checks it; empty ones copy nothing.
    std::vector<size_t> active;
    std::vector<placement::CopyPlace> places(count);
    bool on_stream_device = true; // every entry runs where the stream is: one native call can take them all
    active.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (sizes[i] == 0)
            continue;
        if (!dsts[i] || !srcs[i])
            return at_entry(i, fail(GPUMEM_ERROR_INVALID_VALUE,
                                    "dst and src must be non-NULL when the size (%zu) is not 0 (dst %p, src %p)",
                                    sizes[i], dsts[i], srcs[i]));
        int32_t dst_owner = GPUMEM_DEVICE_HOST, src_owner = GPUMEM_DEVICE_HOST;
        int32_t dst_memory = GPUMEM_POOL_MEMORY_UNKNOWN, src_memory = GPUMEM_POOL_MEMORY_UNKNOWN;
        if (status_t st =
                pointers_.check_range(dsts[i], sizes[i], true, "destination", nullptr, &dst_owner, &dst_memory))
            return at_entry(i, st);
        if (status_t st = pointers_.check_range(srcs[i], sizes[i], false, "source", nullptr, &src_owner, &src_memory))
            return at_entry(i, st);
        places[i] = placement::for_copy(dst_owner, src_owner, s->state.device);
        if (status_t st =
                memory_.check_unknown_memory(s->state, dsts[i], dst_memory, srcs[i], src_memory, sizes[i], true))
            return at_entry(i, st);
        on_stream_device = on_stream_device && !places[i].peer && places[i].device == s->state.device;
        active.push_back(i);
    }
    if (status_t st = check_independent(dsts, srcs, sizes, active))
        return st;
    if (active.empty())
        return GPUMEM_SUCCESS;

    BatchMemops *native = on_stream_device ? native_for(*s, &DeviceCaps::batch_copy) : nullptr;
    if (native) {
        std::vector<void *> d;
        std::vector<const void *> src;
        std::vector<size_t> n;
        const bool all = active.size() == count;
        if (!all) {
            for (size_t i : active) {
                d.push_back(dsts[i]);
                src.push_back(srcs[i]);
                n.push_back(sizes[i]);
            }
        }
        size_t failed = SIZE_MAX;
        const int32_t device = s->state.device;
        status_t st = all ? native->copy_batch(device, dsts, srcs, sizes, count, s->state.native, &failed)
                          : native->copy_batch(device, d.data(), src.data(), n.data(), n.size(), s->state.native,
                                               &failed);
        if (st && failed < active.size())
            return at_entry(active[failed], st);
        return st;
    }
    // One copy per entry, in order.  Every entry was checked above; a runtime
    // failure part-way leaves the earlier ones enqueued, and names the entry.
    for (size_t i : active)
        if (status_t st = memory_.copy_at(places[i], dsts[i], srcs[i], sizes[i], s->state.native, CopyMode::async))
            return at_entry(i, st);
    return GPUMEM_SUCCESS;
}

status_t Batch::prefetch(const void *const *ptrs, const size_t *sizes, size_t count, const int32_t *devices,
                         gpumem_stream_t stream)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    // Every entry as gpumem_prefetch_async checks it.
    std::vector<managed::Range> ranges(count);
    std::vector<size_t> moving; // native managed memory: emulated memory stays in host memory
    moving.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (status_t st = managed_.find_range(ptrs[i], sizes[i], &ranges[i]))
            return at_entry(i, st);
        if (status_t st = managed_.check_location(devices[i]))
            return at_entry(i, st);
        if (!ranges[i].emulated)
            moving.push_back(i);
    }
    if (!moving.empty()) {
        if (status_t st = capture_.refuse_if_capturing(s->state, "a prefetch of managed memory"))
            return st;
        if (BatchMemops *native = native_for(*s, &DeviceCaps::batch_prefetch)) {
            std::vector<const void *> p;
            std::vector<size_t> n;
            std::vector<int32_t> to;
            for (size_t i : moving) {
                p.push_back(ptrs[i]);
                n.push_back(sizes[i]);
                to.push_back(devices[i]);
            }
            if (status_t st =
                    native->prefetch_batch(s->state.device, p.data(), n.data(), p.size(), to.data(), s->state.native))
                return st;
        } else {
            for (size_t i : moving)
                if (status_t st =
                        managed_.prefetch_range(s->state.device, ptrs[i], sizes[i], devices[i], s->state.native))
                    return at_entry(i, st);
        }
    }
    for (size_t i = 0; i < count; ++i)
        managed::note_prefetch(ranges[i], sizes[i], devices[i]);
    return GPUMEM_SUCCESS;
}

status_t Batch::discard(void *const *ptrs, const size_t *sizes, size_t count, gpumem_stream_t stream)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    std::vector<size_t> native_entries;
    native_entries.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        managed::Range range;
        if (status_t st = managed_.find_range(ptrs[i], sizes[i], &range))
            return at_entry(i, st);
        if (!range.emulated)
            native_entries.push_back(i);
    }
    // Discarding permits the runtime to drop the contents; it does not oblige
    // anyone to.  Where the runtime cannot discard a batch (or the memory is
    // gpumem's emulation in pinned memory) the contents simply stay.
    BatchMemops *native = native_entries.empty() ? nullptr : native_for(*s, &DeviceCaps::batch_discard);
    if (!native)
        return GPUMEM_SUCCESS;
    std::vector<void *> p;
    std::vector<size_t> n;
    for (size_t i : native_entries) {
        p.push_back(ptrs[i]);
        n.push_back(sizes[i]);
    }
    return native->discard_batch(s->state.device, p.data(), n.data(), p.size(), s->state.native);
}

} // namespace gpumem::detail
