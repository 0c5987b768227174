// Rows and boxes: pitched allocations, 2-D and 3-D copies, fills of rows and of 16- and 32-bit elements.
#include <cstddef>

#include "api/entry.hpp"

using namespace gpumem::detail;

namespace {

// a * b + c without overflow, or false.
bool mul_add(size_t a, size_t b, size_t c, size_t *out)
{
    size_t m;
    return !__builtin_mul_overflow(a, b, &m) && !__builtin_add_overflow(m, c, out);
}

// The bytes a side of `depth` slices of `rows` rows, `height` of them used,
// spans from its first used byte: ((depth - 1) * rows + height - 1) * pitch + width.
bool side_extent(size_t pitch, size_t rows, size_t width, size_t height, size_t depth, size_t *out)
{
    size_t last_row;
    return mul_add(depth - 1, rows, height - 1, &last_row) && mul_add(last_row, pitch, width, out);
}

// The checks every 2-D call shares: a pitch at least the width, rows that fit the address space.
status_t check_rows(const void *ptr, size_t pitch, size_t width, size_t height, const char *what, const char *pitch_name)
{
    GPUMEM_REQUIRE(ptr, "%s is NULL", what);
    GPUMEM_REQUIRE(pitch >= width,
                   "%s (%zu) is below the width (%zu bytes): rows would overlap; give the bytes from one row's start "
                   "to the next (gpumem_malloc_pitch's pitch for its memory, the width for packed rows)",
                   pitch_name, pitch, width);
    size_t extent = 0;
    GPUMEM_REQUIRE(side_extent(pitch, height, width, height, 1, &extent) &&
                       extent <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(ptr),
                   "%zu rows of %zu bytes, %zu apart, from %p run past the end of the address space", height, width,
                   pitch, ptr);
    return GPUMEM_SUCCESS;
}

status_t copy_2d(Runtime &rt, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                 gpumem_stream_t stream, bool async)
{
    if (width == 0 || height == 0)
        return GPUMEM_SUCCESS;
    if (status_t st = check_rows(dst, dpitch, width, height, "dst", "dpitch"))
        return st;
    if (status_t st = check_rows(src, spitch, width, height, "src", "spitch"))
        return st;
    RowsCopy c;
    c.dst = dst;
    c.dst_pitch = dpitch;
    c.dst_rows = height;
    c.src = src;
    c.src_pitch = spitch;
    c.src_rows = height;
    c.width = width;
    c.height = height;
    c.depth = 1;
    return rt.rows.copy(c, stream, async);
}

status_t fill_2d(Runtime &rt, void *dst, size_t pitch, int32_t value, size_t width, size_t height,
                 gpumem_stream_t stream, bool async)
{
    if (width == 0 || height == 0)
        return GPUMEM_SUCCESS;
    if (status_t st = check_rows(dst, pitch, width, height, "dst", "pitch"))
        return st;
    return rt.rows.fill(dst, pitch, static_cast<unsigned char>(value), width, height, stream, async);
}

status_t fill_elements(Runtime &rt, void *dst, uint32_t value, unsigned size, size_t count, gpumem_stream_t stream,
                       bool async)
{
    if (count == 0)
        return GPUMEM_SUCCESS;
    GPUMEM_REQUIRE(dst, "dst is NULL");
    GPUMEM_REQUIRE(reinterpret_cast<uintptr_t>(dst) % size == 0,
                   "dst %p is not aligned to the %u-byte element: give an address that is a multiple of %u", dst, size,
                   size);
    GPUMEM_REQUIRE(size != 2 || value <= 0xFFFF,
                   "value 0x%x does not fit a 16-bit element: give at most 0xFFFF (or use gpumem_memset_d32)", value);
    size_t n = 0;
    GPUMEM_REQUIRE(!__builtin_mul_overflow(count, static_cast<size_t>(size), &n) &&
                       n <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(dst),
                   "%zu %u-byte elements from %p run past the end of the address space", count, size, dst);
    return rt.rows.fill_elements(dst, value, size, count, stream, async);
}

status_t copy_3d(Runtime &rt, const gpumem_memcpy3d_t *copy, gpumem_stream_t stream, bool async)
{
    GPUMEM_REQUIRE_STRUCT(copy, gpumem_memcpy3d_t);
    GPUMEM_REQUIRE(copy->size >= offsetof(gpumem_memcpy3d_t, depth) + sizeof copy->depth,
                   "copy->size is %zu: a gpumem_memcpy3d_t of this library has %zu bytes, and every field is needed; "
                   "initialise it with GPUMEM_MEMCPY3D_INIT",
                   copy->size, sizeof(gpumem_memcpy3d_t));
    const gpumem_memcpy3d_t b = read_struct(copy);
    if (b.width == 0 || b.height == 0 || b.depth == 0)
        return GPUMEM_SUCCESS;
    GPUMEM_REQUIRE(b.src && b.dst, "copy->src and copy->dst must be non-NULL (src %p, dst %p)", b.src,
                   static_cast<void *>(b.dst));
    size_t row_end = 0;
    GPUMEM_REQUIRE(!__builtin_add_overflow(b.src_x, b.width, &row_end) && b.src_pitch >= row_end,
                   "copy->src_pitch (%zu) is below src_x + width (%zu + %zu): the box runs past its source rows",
                   b.src_pitch, b.src_x, b.width);
    GPUMEM_REQUIRE(!__builtin_add_overflow(b.dst_x, b.width, &row_end) && b.dst_pitch >= row_end,
                   "copy->dst_pitch (%zu) is below dst_x + width (%zu + %zu): the box runs past its destination rows",
                   b.dst_pitch, b.dst_x, b.width);
    GPUMEM_REQUIRE(!__builtin_add_overflow(b.src_y, b.height, &row_end) && b.src_height >= row_end,
                   "copy->src_height (%zu rows a slice) is below src_y + height (%zu + %zu): the box runs past its "
                   "source slices",
                   b.src_height, b.src_y, b.height);
    GPUMEM_REQUIRE(!__builtin_add_overflow(b.dst_y, b.height, &row_end) && b.dst_height >= row_end,
                   "copy->dst_height (%zu rows a slice) is below dst_y + height (%zu + %zu): the box runs past its "
                   "destination slices",
                   b.dst_height, b.dst_y, b.height);
    // The box's first byte on each side, and the bytes to its last.
    size_t src_row = 0, dst_row = 0, src_at = 0, dst_at = 0, src_span = 0, dst_span = 0;
    const bool fits = mul_add(b.src_z, b.src_height, b.src_y, &src_row) && mul_add(src_row, b.src_pitch, b.src_x, &src_at) &&
                      mul_add(b.dst_z, b.dst_height, b.dst_y, &dst_row) && mul_add(dst_row, b.dst_pitch, b.dst_x, &dst_at) &&
                      side_extent(b.src_pitch, b.src_height, b.width, b.height, b.depth, &src_span) &&
                      side_extent(b.dst_pitch, b.dst_height, b.width, b.height, b.depth, &dst_span) &&
                      src_at <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(b.src) &&
                      dst_at <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(b.dst) &&
                      src_span <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(b.src) - src_at &&
                      dst_span <= UINTPTR_MAX - reinterpret_cast<uintptr_t>(b.dst) - dst_at;
    GPUMEM_REQUIRE(fits, "the box (%zu x %zu x %zu bytes at (%zu, %zu, %zu) of %p and (%zu, %zu, %zu) of %p) runs past "
                   "the end of the address space",
                   b.width, b.height, b.depth, b.src_x, b.src_y, b.src_z, b.src, b.dst_x, b.dst_y, b.dst_z,
                   static_cast<void *>(b.dst));
    RowsCopy c;
    c.dst = static_cast<char *>(b.dst) + dst_at;
    c.dst_pitch = b.dst_pitch;
    c.dst_rows = b.dst_height;
    c.src = static_cast<const char *>(b.src) + src_at;
    c.src_pitch = b.src_pitch;
    c.src_rows = b.src_height;
    c.width = b.width;
    c.height = b.height;
    c.depth = b.depth;
    return rt.rows.copy(c, stream, async);
}

} // namespace

GPUMEM_EXPORT gpumem_status_t gpumem_malloc_pitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_malloc_pitch");
    return entry("gpumem_malloc_pitch", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        GPUMEM_REQUIRE(pitch, "pitch is NULL: pass the address of a size_t to receive the pitch");
        *ptr = nullptr;
        *pitch = 0;
        if (width == 0 || height == 0)
            return GPUMEM_SUCCESS;
        // Rows of at least `width` bytes, 512 apart at the most: never more than this many bytes.
        size_t most = 0;
        if (!mul_add(width / 512 + 1, 512, 0, &most) || !mul_add(most, height, 0, &most))
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "cannot allocate %zu rows of %zu bytes: the size overflows; allocate less", height, width);
        return oom::note_current(rt.memory.pitch_alloc(rt.rows.runtime(), width, height, ptr, pitch),
                                 GPUMEM_KIND_DEVICE, most);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                               size_t height)
{
    return entry("gpumem_memcpy_2d",
                 [&](Runtime &rt) { return copy_2d(rt, dst, dpitch, src, spitch, width, height, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                     size_t width, size_t height, gpumem_stream_t stream)
{
    return entry("gpumem_memcpy_2d_async",
                 [&](Runtime &rt) { return copy_2d(rt, dst, dpitch, src, spitch, width, height, stream, true); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_2d(void *dst, size_t pitch, int32_t value, size_t width, size_t height)
{
    return entry("gpumem_memset_2d",
                 [&](Runtime &rt) { return fill_2d(rt, dst, pitch, value, width, height, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_2d_async(void *dst, size_t pitch, int32_t value, size_t width,
                                                     size_t height, gpumem_stream_t stream)
{
    return entry("gpumem_memset_2d_async",
                 [&](Runtime &rt) { return fill_2d(rt, dst, pitch, value, width, height, stream, true); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_d16(void *dst, uint32_t value, size_t count)
{
    return entry("gpumem_memset_d16", [&](Runtime &rt) { return fill_elements(rt, dst, value, 2, count, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_d16_async(void *dst, uint32_t value, size_t count, gpumem_stream_t stream)
{
    return entry("gpumem_memset_d16_async",
                 [&](Runtime &rt) { return fill_elements(rt, dst, value, 2, count, stream, true); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_d32(void *dst, uint32_t value, size_t count)
{
    return entry("gpumem_memset_d32", [&](Runtime &rt) { return fill_elements(rt, dst, value, 4, count, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memset_d32_async(void *dst, uint32_t value, size_t count, gpumem_stream_t stream)
{
    return entry("gpumem_memset_d32_async",
                 [&](Runtime &rt) { return fill_elements(rt, dst, value, 4, count, stream, true); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy_3d(const gpumem_memcpy3d_t *copy)
{
    return entry("gpumem_memcpy_3d", [&](Runtime &rt) { return copy_3d(rt, copy, nullptr, false); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_memcpy_3d_async(const gpumem_memcpy3d_t *copy, gpumem_stream_t stream)
{
    return entry("gpumem_memcpy_3d_async", [&](Runtime &rt) { return copy_3d(rt, copy, stream, true); });
}
