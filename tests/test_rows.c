/* Rows and boxes (0.5): pitched allocations, 2-D copies between every pair of kinds, 2-D fills,
 * fills of 16- and 32-bit elements, 3-D copies of boxes, sync and async, a bad row named, capture,
 * threads.
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include "graph_driver.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define W ((size_t)100) /* bytes of a row */
#define H ((size_t)37)  /* rows */
#define GAP 0xEE        /* what the bytes between rows hold */

/* A pitched region of some kind of memory. */
typedef struct region {
    const char *name;
    int kind;     /* GPUMEM_KIND_*, UNKNOWN for plain malloc */
    void *ptr;
    size_t pitch;
    size_t size;  /* pitch * H */
    void *raw;
    size_t raw_size;
    gpumem_mem_handle_t handle;
} region_t;

enum { R_MAX = 7 };

static size_t round_up(size_t v, size_t g) { return (v + g - 1) / g * g; }

static int make_regions(region_t *r)
{
    gpumem_device_info_t info = tst_info(0);
    int n = 0;
    memset(r, 0, sizeof(region_t) * R_MAX);
    const size_t pitch = 128, size = pitch * H;

    r[n] = (region_t){"pageable", GPUMEM_KIND_UNKNOWN, malloc(size), pitch, size, NULL, 0, 0};
    if (r[n].ptr)
        ++n;
    r[n] = (region_t){"device", GPUMEM_KIND_DEVICE, NULL, pitch, size, NULL, 0, 0};
    if (gpumem_malloc(&r[n].ptr, size) == GPUMEM_SUCCESS)
        ++n;
    r[n] = (region_t){"pitched", GPUMEM_KIND_DEVICE, NULL, 0, 0, NULL, 0, 0};
    if (gpumem_malloc_pitch(&r[n].ptr, &r[n].pitch, W, H) == GPUMEM_SUCCESS) {
        r[n].size = r[n].pitch * H;
        ++n;
    } else {
        tst_fail(__FILE__, __LINE__, "gpumem_malloc_pitch: %s", gpumem_last_error_message());
    }
    r[n] = (region_t){"pinned", GPUMEM_KIND_HOST_PINNED, NULL, pitch, size, NULL, 0, 0};
    if (gpumem_host_alloc(&r[n].ptr, size, 0) == GPUMEM_SUCCESS)
        ++n;
    if (info.managed_memory != GPUMEM_SUPPORT_NONE) {
        r[n] = (region_t){"managed", GPUMEM_KIND_MANAGED, NULL, pitch, size, NULL, 0, 0};
        if (gpumem_managed_alloc(&r[n].ptr, size, 0) == GPUMEM_SUCCESS)
            ++n;
    }
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        r[n] = (region_t){"stream-ordered", GPUMEM_KIND_STREAM_ORDERED, NULL, pitch, size, NULL, 0, 0};
        if (gpumem_malloc_async(&r[n].ptr, size, NULL) == GPUMEM_SUCCESS && gpumem_stream_synchronize(NULL) == 0)
            ++n;
    }
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        r[n] = (region_t){"virtual", GPUMEM_KIND_VIRTUAL, NULL, pitch, size, NULL, 0, 0};
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
        int ok = gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM) == GPUMEM_SUCCESS && g > 0;
        if (ok) {
            r[n].raw_size = round_up(size, g);
            ok = gpumem_mem_create(&r[n].handle, r[n].raw_size, &props) == GPUMEM_SUCCESS &&
                 gpumem_mem_address_reserve(&r[n].raw, r[n].raw_size, 0, NULL) == GPUMEM_SUCCESS &&
                 gpumem_mem_map(r[n].raw, r[n].raw_size, 0, r[n].handle) == GPUMEM_SUCCESS &&
                 gpumem_mem_set_access(r[n].raw, r[n].raw_size, &rw, 1) == GPUMEM_SUCCESS;
        }
        r[n].ptr = r[n].raw;
        if (ok)
            ++n;
        else
            tst_fail(__FILE__, __LINE__, "VMM setup: %s", gpumem_last_error_message());
    }
    return n;
}

static void free_regions(region_t *r, int n)
{
    for (int i = 0; i < n; ++i) {
        switch (r[i].kind) {
        case GPUMEM_KIND_UNKNOWN: free(r[i].ptr); break;
        case GPUMEM_KIND_HOST_PINNED: CHECK_OK(gpumem_host_free(r[i].ptr)); break;
        case GPUMEM_KIND_STREAM_ORDERED:
            CHECK_OK(gpumem_free_async(r[i].ptr, NULL));
            CHECK_OK(gpumem_stream_synchronize(NULL));
            break;
        case GPUMEM_KIND_VIRTUAL:
            CHECK_OK(gpumem_mem_unmap(r[i].raw, r[i].raw_size));
            CHECK_OK(gpumem_mem_release(r[i].handle));
            CHECK_OK(gpumem_mem_address_free(r[i].raw, r[i].raw_size));
            break;
        default: CHECK_OK(gpumem_free(r[i].ptr)); break;
        }
    }
}

/* The whole region as `image` says (a 1-D copy: the CPU may not touch device memory). */
static int put_image(region_t *r, const unsigned char *image)
{
    return gpumem_memcpy(r->ptr, image, r->size) == GPUMEM_SUCCESS;
}

static int get_image(const region_t *r, unsigned char *image)
{
    return gpumem_memcpy(image, r->ptr, r->size) == GPUMEM_SUCCESS;
}

/* Rows of the pattern `seed`, GAP between them. */
static void make_image(unsigned char *image, size_t pitch, unsigned seed)
{
    memset(image, GAP, pitch * H);
    for (size_t y = 0; y < H; ++y)
        for (size_t x = 0; x < W; ++x)
            image[y * pitch + x] = tst_pattern(seed + (unsigned)y, x);
}

/* The first byte of `image` that is not as make_image made it, or -1. */
static long check_image(const unsigned char *image, size_t pitch, unsigned seed)
{
    for (size_t y = 0; y < H; ++y)
        for (size_t x = 0; x < pitch; ++x) {
            unsigned char want = x < W ? tst_pattern(seed + (unsigned)y, x) : GAP;
            if (image[y * pitch + x] != want)
                return (long)(y * pitch + x);
        }
    return -1;
}

/* ------------------------------------------------------------------------ */

static void test_malloc_pitch(void)
{
    gpumem_device_info_t info = tst_info(0);
    CHECK(info.rows == GPUMEM_SUPPORT_NATIVE || info.rows == GPUMEM_SUPPORT_EMULATED);
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(info.rows == GPUMEM_SUPPORT_EMULATED);
    const char *expect = getenv("GPUMEM_TEST_EXPECT_ROWS");
    if (expect)
        CHECKF(info.rows == (strcmp(expect, "native") == 0 ? GPUMEM_SUPPORT_NATIVE : GPUMEM_SUPPORT_EMULATED),
               "rows %d, expected %s", (int)info.rows, expect);
    const size_t widths[] = {1, 100, 511, 512, 513, 4000};
    for (size_t i = 0; i < TST_COUNT(widths); ++i) {
        void *p = NULL;
        size_t pitch = 0;
        REQUIRE_OK(gpumem_malloc_pitch(&p, &pitch, widths[i], 19));
        CHECKF(p != NULL && pitch >= widths[i], "width %zu: pitch %zu", widths[i], pitch);
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(p, &pi));
        CHECK(pi.kind == GPUMEM_KIND_DEVICE);
        CHECKF(pi.alloc_size >= pitch * 19, "alloc_size %zu, pitch %zu", (size_t)pi.alloc_size, pitch);
        /* The last row's bytes are there to copy. */
        unsigned char row[4000];
        tst_fill(row, widths[i], 5);
        CHECK_OK(gpumem_memcpy((char *)p + pitch * 18, row, widths[i]));
        CHECK_OK(gpumem_free(p));
    }
    void *p = (void *)1;
    size_t pitch = 9;
    CHECK_OK(gpumem_malloc_pitch(&p, &pitch, 0, 10));
    CHECK(p == NULL && pitch == 0);
    CHECK_OK(gpumem_malloc_pitch(&p, &pitch, 10, 0));
    CHECK(p == NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_malloc_pitch(NULL, &pitch, 10, 10));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_malloc_pitch(&p, NULL, 10, 10));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc_pitch(&p, &pitch, SIZE_MAX / 2, 4));
    CHECK(p == NULL);
}

/* Every pair of kinds, each with its own pitch, synchronously and in stream order. */
static void test_copy_2d_every_pair(void)
{
    region_t r[R_MAX];
    const int n = make_regions(r);
    REQUIRE(n >= 4);
    gpumem_stream_t nb = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&nb, GPUMEM_STREAM_NON_BLOCKING, 0));
    size_t most = 0;
    for (int i = 0; i < n; ++i)
        most = r[i].size > most ? r[i].size : most;
    unsigned char *image = malloc(most), *got = malloc(most);
    REQUIRE(image && got);
    unsigned seed = 1;
    for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d) {
            if (s == d)
                continue;
            for (int mode = 0; mode < 3; ++mode, ++seed) {
                make_image(image, r[s].pitch, seed);
                REQUIRE(put_image(&r[s], image));
                memset(image, GAP, r[d].size);
                REQUIRE(put_image(&r[d], image));
                gpumem_status_t st;
                if (mode == 0)
                    st = gpumem_memcpy_2d(r[d].ptr, r[d].pitch, r[s].ptr, r[s].pitch, W, H);
                else
                    st = gpumem_memcpy_2d_async(r[d].ptr, r[d].pitch, r[s].ptr, r[s].pitch, W, H,
                                                mode == 1 ? NULL : nb);
                CHECKF(st == GPUMEM_SUCCESS, "%s -> %s (mode %d): %s", r[s].name, r[d].name, mode,
                       gpumem_last_error_message());
                if (mode)
                    CHECK_OK(gpumem_stream_synchronize(mode == 1 ? NULL : nb));
                REQUIRE(get_image(&r[d], got));
                long bad = check_image(got, r[d].pitch, seed - 0);
                CHECKF(bad < 0, "%s (pitch %zu) -> %s (pitch %zu), mode %d: byte %ld differs", r[s].name, r[s].pitch,
                       r[d].name, r[d].pitch, mode, bad);
            }
        }
    free(image);
    free(got);
    CHECK_OK(gpumem_stream_destroy(nb));
    free_regions(r, n);
}

static void test_copy_2d_arguments(void)
{
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 128 * H));
    unsigned char host[128 * H];
    /* A pitch below the width. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d(d, 99, host, 128, 100, H));
    CHECK(tst_contains(gpumem_last_error_message(), "dpitch"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d(d, 128, host, 99, 100, H));
    CHECK(tst_contains(gpumem_last_error_message(), "spitch"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d_async(d, 50, host, 128, 100, H, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_2d(d, 99, 0, 100, H));
    /* Nothing to copy: success, whatever the pointers. */
    CHECK_OK(gpumem_memcpy_2d(NULL, 0, NULL, 0, 0, 10));
    CHECK_OK(gpumem_memcpy_2d(NULL, 0, NULL, 0, 10, 0));
    CHECK_OK(gpumem_memset_2d(NULL, 0, 0, 0, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d(NULL, 128, host, 128, 100, 2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d(d, 128, NULL, 128, 100, 2));
    /* Rows past the end of the address space. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d(d, SIZE_MAX / 2, host, 128, 100, 4));
    /* A bad stream. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE,
                 gpumem_memcpy_2d_async(d, 128, host, 128, 100, H, (gpumem_stream_t)(uintptr_t)0x999));
    CHECK_OK(gpumem_free(d));
}

/* A bad row anywhere is named, and nothing crashes. */
static void test_bad_rows(void)
{
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 128 * 10));
    unsigned char host[128 * 20];
    memset(host, 1, sizeof host);
    /* The 11th row runs past the allocation. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_2d(d, 128, host, 128, 100, 11));
    CHECK(tst_contains(gpumem_last_error_message(), "row 10"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_2d(d, 128, 0, 100, 11));
    CHECK(tst_contains(gpumem_last_error_message(), "row 10"));
    /* Host memory that is not there: row 2 of the source lies in a page that is unmapped. */
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *map = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED);
    munmap(map + page * 2, (size_t)page);
    /* Rows of 100 bytes, one page apart: rows 0 and 1 are mapped, row 2 is not. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy_2d(d, 128, map, (size_t)page, 100, 3));
    CHECK(tst_contains(gpumem_last_error_message(), "row 2"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy_2d(map, (size_t)page, d, 128, 100, 3));
    CHECK(tst_contains(gpumem_last_error_message(), "row 2"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset_2d(map, (size_t)page, 0, 100, 3));
    CHECK(tst_contains(gpumem_last_error_message(), "row 2"));
    /* Two rows that are there copy, even with an unmapped page between... (rows 0 and 1 only). */
    CHECK_OK(gpumem_memcpy_2d(map, (size_t)page, d, 128, 100, 2));
    munmap(map, (size_t)page * 2);
    /* Freed memory is INVALID_POINTER for every row. */
    void *gone = NULL;
    REQUIRE_OK(gpumem_malloc(&gone, 128 * 10));
    CHECK_OK(gpumem_free(gone));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy_2d(gone, 128, host, 128, 100, 10));
    CHECK(tst_contains(gpumem_last_error_message(), "row 0"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy_2d(host, 128, gone, 128, 100, 10));
    CHECK_OK(gpumem_free(d));
}

static void test_memset_2d(void)
{
    region_t r[R_MAX];
    const int n = make_regions(r);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    unsigned char image[4096 * H];
    for (int i = 0; i < n; ++i) {
        memset(image, GAP, r[i].size);
        REQUIRE(put_image(&r[i], image));
        for (int mode = 0; mode < 2; ++mode) {
            const int v = 0x30 + mode;
            gpumem_status_t st = mode == 0 ? gpumem_memset_2d(r[i].ptr, r[i].pitch, v, W, H)
                                           : gpumem_memset_2d_async(r[i].ptr, r[i].pitch, v, W, H, s);
            CHECKF(st == GPUMEM_SUCCESS, "%s: %s", r[i].name, gpumem_last_error_message());
            CHECK_OK(gpumem_stream_synchronize(s));
            REQUIRE(get_image(&r[i], image));
            for (size_t y = 0; y < H; ++y) {
                CHECKF(tst_verify_byte(image + y * r[i].pitch, W, (unsigned char)v) == W, "%s row %zu", r[i].name, y);
                CHECKF(tst_verify_byte(image + y * r[i].pitch + W, r[i].pitch - W, GAP) == r[i].pitch - W,
                       "%s: the gap after row %zu was written", r[i].name, y);
            }
        }
    }
    CHECK_OK(gpumem_stream_destroy(s));
    free_regions(r, n);
}

static void test_memset_d16_d32(void)
{
    region_t r[R_MAX];
    const int n = make_regions(r);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, 0));
    const size_t count = 600; /* 6 bytes an element pair + 10: inside every region */
    for (int i = 0; i < n; ++i) {
        unsigned char *img = malloc(r[i].size);
        REQUIRE(img);
        const uint32_t values[] = {0x12345678u, 0, 0xFFFFFFFFu, 0xA5A5A5A5u, 0x00FF00FFu};
        for (size_t k = 0; k < TST_COUNT(values); ++k) {
            for (int async = 0; async < 2; ++async) {
                memset(img, GAP, r[i].size);
                REQUIRE(put_image(&r[i], img));
                /* 32-bit elements from byte 4, then 16-bit ones after them. */
                char *p32 = (char *)r[i].ptr + 4, *p16 = p32 + 4 * count + 2;
                const uint32_t v16 = values[k] & 0xFFFF;
                if (async) {
                    CHECK_OK(gpumem_memset_d32_async(p32, values[k], count, s));
                    CHECK_OK(gpumem_memset_d16_async(p16, v16, count, s));
                    CHECK_OK(gpumem_stream_synchronize(s));
                } else {
                    CHECKF(gpumem_memset_d32(p32, values[k], count) == GPUMEM_SUCCESS, "%s: %s", r[i].name,
                           gpumem_last_error_message());
                    CHECK_OK(gpumem_memset_d16(p16, v16, count));
                }
                REQUIRE(get_image(&r[i], img));
                CHECK(tst_verify_byte(img, 4, GAP) == 4);
                int bad32 = 0, bad16 = 0;
                for (size_t e = 0; e < count; ++e) {
                    uint32_t g32;
                    uint16_t g16;
                    memcpy(&g32, img + 4 + 4 * e, 4);
                    memcpy(&g16, img + 4 + 4 * count + 2 + 2 * e, 2);
                    bad32 += g32 != values[k];
                    bad16 += g16 != v16;
                }
                CHECKF(bad32 == 0 && bad16 == 0, "%s, value 0x%x: %d 32-bit and %d 16-bit elements differ", r[i].name,
                       values[k], bad32, bad16);
                CHECK(tst_verify_byte(img + 4 + 6 * count + 2, 4, GAP) == 4);
            }
        }
        free(img);
    }
    /* Misaligned, too large a 16-bit value, nothing to do, NULL. */
    void *d = r[1].ptr;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d16((char *)d + 1, 1, 4));
    CHECK(tst_contains(gpumem_last_error_message(), "aligned"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d32((char *)d + 2, 1, 4));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d32_async((char *)d + 1, 1, 4, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d16(d, 0x10000, 4));
    CHECK(tst_contains(gpumem_last_error_message(), "0xFFFF"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d16_async(d, 0x10000, 4, s));
    CHECK_OK(gpumem_memset_d16(NULL, 1, 0));
    CHECK_OK(gpumem_memset_d32(NULL, 1, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d32(NULL, 1, 4));
    /* Past the end of the allocation. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d32(d, 1, r[1].size / 4 + 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset_d32(d, 1, SIZE_MAX / 2));
    CHECK_OK(gpumem_stream_destroy(s));
    free_regions(r, n);
}

/* A box out of a volume into another, every side of the box checked. */
static void test_memcpy_3d(void)
{
    enum { SX = 40, SY = 9, SZ = 7, DX = 64, DY = 12, DZ = 6 };
    const size_t src_pitch = SX, dst_pitch = DX;
    unsigned char *src_h = malloc((size_t)SX * SY * SZ), *dst_h = malloc((size_t)DX * DY * DZ);
    REQUIRE(src_h && dst_h);
    for (size_t i = 0; i < (size_t)SX * SY * SZ; ++i)
        src_h[i] = tst_pattern(9, i);
    void *src_d = NULL, *dst_d = NULL;
    REQUIRE_OK(gpumem_malloc(&src_d, (size_t)SX * SY * SZ));
    REQUIRE_OK(gpumem_malloc(&dst_d, (size_t)DX * DY * DZ));
    REQUIRE_OK(gpumem_memcpy(src_d, src_h, (size_t)SX * SY * SZ));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    for (int variant = 0; variant < 4; ++variant) {
        memset(dst_h, GAP, (size_t)DX * DY * DZ);
        REQUIRE_OK(gpumem_memcpy(dst_d, dst_h, (size_t)DX * DY * DZ));
        gpumem_memcpy3d_t c = GPUMEM_MEMCPY3D_INIT;
        c.src = variant & 1 ? src_d : src_h;
        c.src_pitch = src_pitch;
        c.src_height = SY;
        c.src_x = 3;
        c.src_y = 2;
        c.src_z = 1;
        c.dst = dst_d;
        c.dst_pitch = dst_pitch;
        c.dst_height = DY;
        c.dst_x = 10;
        c.dst_y = 4;
        c.dst_z = 2;
        c.width = 30;
        c.height = 6;
        c.depth = 4;
        if (variant & 2) {
            CHECK_OK(gpumem_memcpy_3d_async(&c, s));
            CHECK_OK(gpumem_stream_synchronize(s));
        } else {
            CHECKF(gpumem_memcpy_3d(&c) == GPUMEM_SUCCESS, "variant %d: %s", variant, gpumem_last_error_message());
        }
        unsigned char *got = malloc((size_t)DX * DY * DZ);
        REQUIRE(got);
        CHECK_OK(gpumem_memcpy(got, dst_d, (size_t)DX * DY * DZ));
        long bad = -1;
        for (size_t z = 0; z < DZ && bad < 0; ++z)
            for (size_t y = 0; y < DY && bad < 0; ++y)
                for (size_t x = 0; x < DX && bad < 0; ++x) {
                    int in = z >= 2 && z < 6 && y >= 4 && y < 10 && x >= 10 && x < 40;
                    unsigned char want = GAP;
                    if (in) {
                        size_t sx = x - 10 + 3, sy = y - 4 + 2, sz = z - 2 + 1;
                        want = src_h[(sz * SY + sy) * SX + sx];
                    }
                    if (got[(z * DY + y) * DX + x] != want)
                        bad = (long)((z * DY + y) * DX + x);
                }
        CHECKF(bad < 0, "variant %d: byte %ld differs", variant, bad);
        free(got);
    }
    /* The box must fit its rows and slices; the struct must be whole. */
    gpumem_memcpy3d_t c = GPUMEM_MEMCPY3D_INIT;
    c.src = src_d;
    c.src_pitch = 40;
    c.src_height = 9;
    c.dst = dst_d;
    c.dst_pitch = 64;
    c.dst_height = 12;
    c.width = 30;
    c.height = 6;
    c.depth = 2;
    CHECK_OK(gpumem_memcpy_3d(&c));
    c.src_x = 11; /* 11 + 30 > 40 */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_3d(&c));
    CHECK(tst_contains(gpumem_last_error_message(), "src_pitch"));
    c.src_x = 0;
    c.dst_y = 7; /* 7 + 6 > 12 */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_3d(&c));
    CHECK(tst_contains(gpumem_last_error_message(), "dst_height"));
    c.dst_y = 0;
    c.depth = 7; /* the source has 7 slices of 9 rows: slice 7 is past its end */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_3d(&c));
    CHECK(tst_contains(gpumem_last_error_message(), "slice"));
    c.depth = 0;
    CHECK_OK(gpumem_memcpy_3d(&c)); /* nothing to copy */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_3d(NULL));
    c.depth = 1;
    c.size = offsetof(gpumem_memcpy3d_t, depth);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy_3d(&c));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_MEMCPY3D_INIT"));
    free(src_h);
    free(dst_h);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(src_d));
    CHECK_OK(gpumem_free(dst_d));
}

/* Stream order: fills and copies of rows on one stream run in order. */
static void test_stream_order(void)
{
    void *a = NULL, *b = NULL;
    size_t pa = 0, pb = 0;
    REQUIRE_OK(gpumem_malloc_pitch(&a, &pa, W, H));
    REQUIRE_OK(gpumem_malloc_pitch(&b, &pb, W, H));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, 0));
    unsigned char *host = NULL;
    REQUIRE_OK(gpumem_host_alloc((void **)&host, W * H, 0));
    for (int round = 0; round < 8; ++round) {
        CHECK_OK(gpumem_memset_2d_async(a, pa, round, W, H, s));
        CHECK_OK(gpumem_memcpy_2d_async(b, pb, a, pa, W, H, s));
        CHECK_OK(gpumem_memset_d32_async(a, 0x01010101u * (unsigned)(round + 100), pa * H / 4, s));
        CHECK_OK(gpumem_memcpy_2d_async(host, W, b, pb, W, H, s));
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify_byte(host, W * H, 7) == W * H);
    CHECK_OK(gpumem_host_free(host));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(a));
    CHECK_OK(gpumem_free(b));
}

/* On a capturing stream, 2-D copies and fills are recorded, and run at each launch. */
static void test_captured(void)
{
    if (tst_backend() == GPUMEM_BACKEND_HOST || gpumem_set_device(0) != GPUMEM_SUCCESS || !gd_open(tst_backend()))
        SKIP("no graphs on this backend");
    void *a = NULL, *b = NULL;
    size_t pa = 0, pb = 0;
    REQUIRE_OK(gpumem_malloc_pitch(&a, &pa, W, H));
    REQUIRE_OK(gpumem_malloc_pitch(&b, &pb, W, H));
    unsigned char *host = NULL;
    REQUIRE_OK(gpumem_host_alloc((void **)&host, W * H, 0));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, 0));
    void *native = gpumem_stream_native(s);
    CHECK_OK(gpumem_memset_2d(a, pa, 1, W, H));
    memset(host, 0, W * H);
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    CHECK_OK(gpumem_memset_2d_async(a, pa, 0x42, W, H, s));
    CHECK_OK(gpumem_memcpy_2d_async(b, pb, a, pa, W, H, s));
    CHECK_OK(gpumem_memset_d16_async(a, 0x1234, 10, s));
    CHECK_OK(gpumem_memcpy_2d_async(host, W, b, pb, W, H, s));
    CHECKF(gd_status(native) == GD_STATUS_ACTIVE, "the capture was invalidated");
    void *graph = NULL, *exec = NULL;
    REQUIRE(gd_end(native, &graph) == 0);
    /* Nothing ran at capture. */
    CHECK(tst_verify_byte(host, W * H, 0) == W * H);
    CHECKF(gd_node_count(graph) >= 4, "%ld nodes", gd_node_count(graph));
    REQUIRE(gd_instantiate(&exec, graph) == 0);
    CHECK(gd_launch(exec, native) == 0);
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify_byte(host, W * H, 0x42) == W * H);
    CHECK(gd_exec_destroy(exec) == 0);
    CHECK(gd_graph_destroy(graph) == 0);
    CHECK_OK(gpumem_host_free(host));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(a));
    CHECK_OK(gpumem_free(b));
}

/* Two devices: rows copied between their memory, a fill of one's rows on the other's stream. */
static void test_two_devices(void)
{
    int32_t count = 0;
    CHECK_OK(gpumem_device_count(&count));
    if (count < 2)
        SKIP("one device");
    void *a = NULL, *b = NULL;
    size_t pa = 0, pb = 0;
    CHECK_OK(gpumem_set_device(0));
    REQUIRE_OK(gpumem_malloc_pitch(&a, &pa, W, H));
    gpumem_stream_t s0 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s0));
    CHECK_OK(gpumem_set_device(1));
    REQUIRE_OK(gpumem_malloc_pitch(&b, &pb, W, H));
    CHECK_OK(gpumem_set_device(0));
    unsigned char host[W * H];
    CHECK_OK(gpumem_memset_2d_async(b, pb, 0x61, W, H, s0)); /* device 1's rows, device 0's stream */
    CHECK_OK(gpumem_memcpy_2d_async(a, pa, b, pb, W, H, s0));
    CHECK_OK(gpumem_memcpy_2d_async(host, W, a, pa, W, H, s0));
    CHECK_OK(gpumem_stream_synchronize(s0));
    CHECK(tst_verify_byte(host, W * H, 0x61) == W * H);
    CHECK_OK(gpumem_memset_d32(b, 0x01020304u, 16));
    uint32_t v[16];
    CHECK_OK(gpumem_memcpy(v, b, sizeof v));
    CHECK(v[0] == 0x01020304u && v[15] == 0x01020304u);
    CHECK_OK(gpumem_stream_destroy(s0));
    CHECK_OK(gpumem_free(a));
    CHECK_OK(gpumem_free(b));
}

enum { THREADS = 8, ROUNDS = 30 };

static void *thread_body(void *arg)
{
    const unsigned id = (unsigned)(uintptr_t)arg;
    void *d = NULL;
    size_t pitch = 0;
    if (gpumem_malloc_pitch(&d, &pitch, W, H) != GPUMEM_SUCCESS) {
        CHECK(0);
        return NULL;
    }
    gpumem_stream_t s = NULL;
    CHECK_OK(gpumem_stream_create_with_flags(&s, id % 2 ? GPUMEM_STREAM_NON_BLOCKING : 0, 0));
    unsigned char src[W * H], dst[W * H];
    for (int r = 0; r < ROUNDS; ++r) {
        tst_fill(src, W * H, id * 100 + (unsigned)r);
        CHECK_OK(gpumem_memcpy_2d_async(d, pitch, src, W, W, H, s));
        CHECK_OK(gpumem_memset_d16_async(d, 0xBEEF, 1, s));
        CHECK_OK(gpumem_memcpy_2d_async(dst, W, d, pitch, W, H, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        uint16_t head;
        memcpy(&head, dst, 2);
        CHECK(head == 0xBEEF);
        CHECK(memcmp(dst + 2, src + 2, W * H - 2) == 0);
    }
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(d));
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; ++i)
        REQUIRE(pthread_create(&t[i], NULL, thread_body, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < THREADS; ++i)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    alarm(240);
    static const tst_case_t cases[] = {
        TEST(test_malloc_pitch), TEST(test_copy_2d_every_pair), TEST(test_copy_2d_arguments),
        TEST(test_bad_rows),     TEST(test_memset_2d),          TEST(test_memset_d16_d32),
        TEST(test_memcpy_3d),    TEST(test_stream_order),       TEST(test_captured),
        TEST(test_two_devices),  TEST(test_threads),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
