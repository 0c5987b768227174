#include "core/rows.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "base/cpu_reach.hpp"
#include "core/devices.hpp"
#include "core/memory.hpp"
#include "core/placement.hpp"
#include "core/pointers.hpp"
#include "core/streams.hpp"

namespace gpumem::detail {

namespace {

// Name the row a failure is about in the message ("row 17: ...", "row 3 of slice 2: ...").
status_t at_row(size_t y, size_t z, size_t depth, status_t st)
{
    char context[64];
    if (depth > 1)
        std::snprintf(context, sizeof context, "row %zu of slice %zu", y, z);
    else
        std::snprintf(context, sizeof context, "row %zu", y);
    prefix_error(context);
    return st;
}

// Row y of slice z of a side.
inline const char *row_of(const void *base, size_t pitch, size_t rows, size_t y, size_t z)
{
    return static_cast<const char *>(base) + (z * rows + y) * pitch;
}

// Bytes from a side's first row's start to its last row's end (no overflow: checked by the API).
inline size_t extent_of(size_t pitch, size_t rows, size_t width, size_t height, size_t depth)
{
    return ((depth - 1) * rows + (height - 1)) * pitch + width;
}

} // namespace

int32_t Rows::support_level(int32_t device) const
{
    return runtime_ && !devices_[device].caps.cpu_device ? GPUMEM_SUPPORT_NATIVE : GPUMEM_SUPPORT_EMULATED;
}

status_t Rows::check_side(const void *base, size_t pitch, size_t rows, size_t width, size_t height, size_t depth,
                          bool write, const char *what, Side *out) const
{
    const size_t extent = extent_of(pitch, rows, width, height, depth);
    size_t one_mapping = extent;
    {
        Side side;
        if (pointers_.check_range(base, extent, write, what, &one_mapping, &side.owner, &side.memory) ==
                GPUMEM_SUCCESS &&
            one_mapping == extent) {
            *out = side;
            return GPUMEM_SUCCESS;
        }
    }
    // Rows over several allocations or VMM mappings, or a bad one: each row
    // (the extent's failure is not the answer: a row's is).
    Side side;
    side.uniform = one_mapping == extent;
    bool first = true;
    for (size_t z = 0; z < depth; ++z)
        for (size_t y = 0; y < height; ++y) {
            int32_t owner = GPUMEM_DEVICE_HOST, memory = GPUMEM_POOL_MEMORY_UNKNOWN;
            size_t in_one = width;
            const char *row = row_of(base, pitch, rows, y, z);
            if (status_t st = pointers_.check_range(row, width, write, what, &in_one, &owner, &memory)) {
                // Rows that start in gpumem's memory and run on into freed
                // memory or a gap: past the first row's allocation, whatever
                // the driver's reuse of addresses left next to it.
                if (!first && side.memory != GPUMEM_POOL_MEMORY_UNKNOWN) {
                    const std::string there = last_error_message();
                    return at_row(y, z, depth,
                                  fail(GPUMEM_ERROR_INVALID_VALUE,
                                       "%s %p lies past the end of the allocation the first row is in (%p): give "
                                       "rows and a pitch that stay inside it (%s)",
                                       what, static_cast<const void *>(row), base, there.c_str()));
                }
                return at_row(y, z, depth, st);
            }
            if (first) {
                side.owner = owner;
                side.memory = memory;
                first = false;
            } else if (owner != side.owner || memory != side.memory) {
                // Rows that start in gpumem's memory and run on beyond it: past
                // its end, as gpumem_memcpy refuses a range that runs past it.
                if (memory == GPUMEM_POOL_MEMORY_UNKNOWN && side.memory != GPUMEM_POOL_MEMORY_UNKNOWN)
                    return at_row(y, z, depth,
                                  fail(GPUMEM_ERROR_INVALID_VALUE,
                                       "%s %p lies past the end of the allocation the first row is in (%p): give "
                                       "rows and a pitch that stay inside it",
                                       what, static_cast<const void *>(row), base));
                side.uniform = false;
            }
        }
    *out = side;
    return GPUMEM_SUCCESS;
}

status_t Rows::copy(const RowsCopy &c, gpumem_stream_t stream, bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    Side dst, src;
    if (status_t st = check_side(c.dst, c.dst_pitch, c.dst_rows, c.width, c.height, c.depth, true, "destination", &dst))
        return st;
    if (status_t st = check_side(c.src, c.src_pitch, c.src_rows, c.width, c.height, c.depth, false, "source", &src))
        return st;
    const bool uniform = dst.uniform && src.uniform;
    // Memory gpumem does not know: the whole of each side at once where the
    // kernel vouches for it (a read of the source's pages; the mapping of the
    // destination's, which touches no byte between its rows), else row by row
    // as gpumem_memcpy checks its range.
    if (!uniform || dst.memory == GPUMEM_POOL_MEMORY_UNKNOWN || src.memory == GPUMEM_POOL_MEMORY_UNKNOWN) {
        bool vouched = uniform;
        uintptr_t bad = 0;
        if (vouched && src.memory == GPUMEM_POOL_MEMORY_UNKNOWN)
            vouched = cpu_reaches(const_cast<void *>(c.src), extent_of(c.src_pitch, c.src_rows, c.width, c.height, c.depth),
                                  false, &bad);
        if (vouched && dst.memory == GPUMEM_POOL_MEMORY_UNKNOWN)
            vouched = cpu_mapped(c.dst, extent_of(c.dst_pitch, c.dst_rows, c.width, c.height, c.depth), true, &bad);
        if (!vouched) {
            for (size_t z = 0; z < c.depth; ++z)
                for (size_t y = 0; y < c.height; ++y) {
                    void *d = const_cast<char *>(row_of(c.dst, c.dst_pitch, c.dst_rows, y, z));
                    const void *r = row_of(c.src, c.src_pitch, c.src_rows, y, z);
                    int32_t dm = dst.memory, sm = src.memory, owner = GPUMEM_DEVICE_HOST;
                    if (!dst.uniform)
                        pointers_.check_range(d, c.width, true, "destination", nullptr, &owner, &dm);
                    if (!src.uniform)
                        pointers_.check_range(r, c.width, false, "source", nullptr, &owner, &sm);
                    if (status_t st = memory_.check_unknown_memory(s->state, d, dm, r, sm, c.width, async))
                        return at_row(y, z, c.depth, st);
                }
        }
    }
    if (runtime_ && uniform) {
        const placement::CopyPlace at = placement::for_copy(dst.owner, src.owner, s->state.device);
        if (!at.peer)
            return runtime_->copy_rows(at.device, c, s->state.native, async ? CopyMode::async : CopyMode::sync);
    }
    // One copy per row, each placed as gpumem_memcpy_async places it; the
    // synchronous form then waits for every stream that took rows.
    std::vector<int32_t> waited;
    placement::CopyPlace at = placement::for_copy(dst.owner, src.owner, s->state.device);
    for (size_t z = 0; z < c.depth; ++z)
        for (size_t y = 0; y < c.height; ++y) {
            void *d = const_cast<char *>(row_of(c.dst, c.dst_pitch, c.dst_rows, y, z));
            const void *r = row_of(c.src, c.src_pitch, c.src_rows, y, z);
            if (!uniform) {
                int32_t dst_owner = GPUMEM_DEVICE_HOST, src_owner = GPUMEM_DEVICE_HOST;
                pointers_.check_range(d, c.width, true, "destination", nullptr, &dst_owner);
                pointers_.check_range(r, c.width, false, "source", nullptr, &src_owner);
                at = placement::for_copy(dst_owner, src_owner, s->state.device);
            }
            if (status_t st = memory_.copy_at(at, d, r, c.width, s->state.native, CopyMode::async))
                return at_row(y, z, c.depth, st);
            // A NULL stream is the default stream of the device the row ran on.
            const int32_t on = s->state.native || at.peer ? s->state.device : at.device;
            if (waited.empty() || waited.back() != on)
                waited.push_back(on);
        }
    if (async)
        return GPUMEM_SUCCESS;
    for (size_t i = 0; i < waited.size(); ++i) {
        bool seen = false;
        for (size_t j = 0; j < i; ++j)
            seen = seen || waited[j] == waited[i];
        if (!seen)
            if (status_t st = streams_.stream_synchronize(waited[i], s->state.native))
                return st;
    }
    return GPUMEM_SUCCESS;
}

status_t Rows::fill(void *dst, size_t pitch, unsigned char byte, size_t width, size_t height, gpumem_stream_t stream,
                    bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    Side side;
    if (status_t st = check_side(dst, pitch, height, width, height, 1, true, "destination", &side))
        return st;
    if (runtime_ && side.uniform && side.memory != GPUMEM_POOL_MEMORY_UNKNOWN) {
        const int32_t device = placement::for_range(side.owner, s->state.device);
        return memory_.ordered(device, s->state, stream != nullptr, [&](void *on) {
            return runtime_->fill_rows(device, dst, pitch, byte, width, height, on, async);
        });
    }
    // Memory gpumem does not know (filled by the runtime where it knows it,
    // else by the CPU through the kernel), rows over several allocations or
    // VMM mappings, or a runtime without the call: gpumem_memset per row.
    for (size_t y = 0; y < height; ++y)
        if (status_t st = memory_.fill(static_cast<char *>(dst) + y * pitch, byte, width, stream, async))
            return at_row(y, 0, 1, st);
    return GPUMEM_SUCCESS;
}

status_t Rows::fill_elements(void *dst, uint32_t value, unsigned size, size_t count, gpumem_stream_t stream,
                             bool async)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    const size_t n = count * size;
    int32_t owner = GPUMEM_DEVICE_HOST, memory = GPUMEM_POOL_MEMORY_UNKNOWN;
    size_t one_mapping = n;
    if (status_t st = pointers_.check_range(dst, n, true, "destination", &one_mapping, &owner, &memory))
        return st;
    // The host backend's fill is the CPU's: memory nobody knows is written
    // through the kernel, which refuses a bad address instead of faulting.
    if (memory == GPUMEM_POOL_MEMORY_UNKNOWN && devices_[s->state.device].caps.cpu_fills_pageable)
        return memory_.fill_unknown(s->state, dst, value, size, n, "the kernel refused the write");
    unsigned char bytes[4] = {0, 0, 0, 0};
    for (unsigned k = 0; k < size; ++k)
        bytes[k] = static_cast<unsigned char>(value >> (8 * k)); // little-endian: the low byte first
    bool alike = true;
    for (unsigned k = 1; k < size; ++k)
        alike = alike && bytes[k] == bytes[0];
    if (alike)
        return memory_.fill(dst, bytes[0], n, stream, async); // 0, 0xFFFF...: one byte fill
    if (runtime_ && one_mapping == n) {
        const int32_t device = placement::for_range(owner, s->state.device);
        return memory_.ordered(device, s->state, stream != nullptr, [&](void *on) {
            status_t st = runtime_->fill_elements(device, dst, value, size, count, on, async);
            if (st == GPUMEM_ERROR_INVALID_POINTER && owner == GPUMEM_DEVICE_HOST) [[unlikely]]
                st = memory_.fill_unknown(s->state, dst, value, size, n, last_error_message());
            return st;
        });
    }
    // Without the runtime's 16- and 32-bit fills (or across VMM mappings):
    // each byte of the element is a fill of every size-th byte.
    for (unsigned k = 0; k < size; ++k)
        if (status_t st = fill(static_cast<char *>(dst) + k, size, bytes[k], 1, count, stream, async))
            return st;
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
