/*
 * Seed 001 (ROCm's VMM guide): grow a VMM range in place.  Reserve, map, set
 * access; reserve again with the end of the first range as the hint; map new
 * physical memory there and use the whole as one range.  Copies and fills
 * across the seam, pointer info on both sides, unmap and free in any order.
 * The same program runs on the host backend and on every fake config.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

static size_t g; /* minimum granularity */
static const gpumem_access_desc_t RW = {0, GPUMEM_ACCESS_READWRITE};

static int need_vmm(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        return 0;
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    g = 0;
    if (gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM) != GPUMEM_SUCCESS || g == 0) {
        tst_fail(__FILE__, __LINE__, "no granularity: %s", gpumem_last_error_message());
        return 0;
    }
    return 1;
}

#define NEED_VMM()                                                                                                \
    do {                                                                                                          \
        if (!need_vmm())                                                                                          \
            SKIP("virtual memory management is not native here");                                               \
    } while (0)

/* One piece of the grown range: its reservation, physical handle and size. */
typedef struct piece {
    char *va;
    size_t size;
    gpumem_mem_handle_t handle;
} piece_t;

/* Reserve (at `hint` when given), create, map and grant read-write: the guide's order. */
static int piece_make(piece_t *p, size_t size, void *hint)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    void *va = NULL;
    memset(p, 0, sizeof *p);
    if (gpumem_mem_address_reserve(&va, size, 0, hint) != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "reserve %zu at %p: %s", size, hint, gpumem_last_error_message());
        return 0;
    }
    p->va = va;
    p->size = size;
    if (gpumem_mem_create(&p->handle, size, &props) != GPUMEM_SUCCESS ||
        gpumem_mem_map(va, size, 0, p->handle) != GPUMEM_SUCCESS ||
        gpumem_mem_set_access(va, size, &RW, 1) != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "create/map/set_access %zu at %p: %s", size, va, gpumem_last_error_message());
        return 0;
    }
    return 1;
}

/* The guide releases the handle once mapped; the mapping keeps the memory. */
static void piece_unmap(piece_t *p)
{
    CHECK_OK(gpumem_mem_unmap(p->va, p->size));
    if (p->handle)
        CHECK_OK(gpumem_mem_release(p->handle));
    p->handle = 0;
}

static void piece_free(piece_t *p)
{
    CHECK_OK(gpumem_mem_address_free(p->va, p->size));
    p->va = NULL;
}

/* Grow `first` by a reservation at its end.  On every backend gpumem runs on
 * here the hint must be honoured: the host backend keeps room after each
 * reservation, the fakes (like the vendors) give free hinted ranges. */
static int grow(const piece_t *first, piece_t *next, size_t size)
{
    if (!piece_make(next, size, first->va + first->size))
        return 0;
    CHECKF(next->va == first->va + first->size, "the hint %p was not honoured: the reservation came back at %p",
           (void *)(first->va + first->size), (void *)next->va);
    return next->va == first->va + first->size;
}

static void check_info(const void *p, const piece_t *expect)
{
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    CHECK(pi.kind == GPUMEM_KIND_VIRTUAL);
    CHECK(pi.device == 0);
    CHECKF(pi.base == expect->va && pi.alloc_size == expect->size, "info of %p: base %p size %zu, expected %p %zu", p,
           pi.base, pi.alloc_size, (void *)expect->va, expect->size);
}

/* Copies and fills of 64 bytes across the seam, sync and async, every direction. */
static void check_seam(char *seam)
{
    unsigned char in[64], out[64];
    for (int i = 0; i < 64; ++i)
        in[i] = (unsigned char)(i * 7 + 3);
    /* host -> across the seam -> host */
    CHECK_OK(gpumem_memcpy(seam - 32, in, 64));
    memset(out, 0, sizeof out);
    CHECK_OK(gpumem_memcpy(out, seam - 32, 64));
    CHECK(memcmp(in, out, 64) == 0);
    /* fill across the seam */
    CHECK_OK(gpumem_memset(seam - 16, 0x5a, 32));
    CHECK_OK(gpumem_memcpy(out, seam - 32, 64));
    CHECK(memcmp(out, in, 16) == 0);
    CHECK(tst_verify_byte(out + 16, 32, 0x5a) == 32);
    CHECK(memcmp(out + 48, in + 48, 16) == 0);
    /* device -> device, both ranges across the seam (they overlap nothing) */
    CHECK_OK(gpumem_memcpy(seam - 32, in, 64));
    CHECK_OK(gpumem_memcpy(seam - 200, seam - 32, 64)); /* read across, write left */
    CHECK_OK(gpumem_memcpy(seam + 100, seam - 32, 64)); /* read across, write right */
    CHECK_OK(gpumem_memset(seam - 32, 0, 64));
    CHECK_OK(gpumem_memcpy(seam - 32, seam - 200, 64)); /* write across */
    CHECK_OK(gpumem_memcpy(out, seam - 32, 64));
    CHECK(memcmp(in, out, 64) == 0);
    CHECK_OK(gpumem_memcpy(out, seam + 100, 64));
    CHECK(memcmp(in, out, 64) == 0);
    /* the same on a stream */
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    CHECK_OK(gpumem_memset_async(seam - 8, 0x11, 16, s));
    CHECK_OK(gpumem_memcpy_async(out, seam - 32, 64, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(memcmp(out, in, 24) == 0);
    CHECK(tst_verify_byte(out + 24, 16, 0x11) == 16);
    CHECK(memcmp(out + 40, in + 40, 24) == 0);
    CHECK_OK(gpumem_stream_destroy(s));
    /* on the host backend the bytes are the CPU's too */
    if (tst_device_memory_is_host()) {
        CHECK(seam[-9] == (char)in[23] && seam[-8] == 0x11 && seam[7] == 0x11 && seam[8] == (char)in[40]);
    }
}

/* The guide as written: one range, grown once, used across the seam. */
static void test_guide_pattern(void)
{
    NEED_VMM();
    piece_t a, b = {0};
    REQUIRE(piece_make(&a, 2 * g, NULL));
    /* Other allocations in between, as in a program: they must not take the room. */
    void *dev = NULL, *pinned = NULL;
    CHECK_OK(gpumem_malloc(&dev, g));
    CHECK_OK(gpumem_host_alloc(&pinned, g, 0));
    int grown = grow(&a, &b, g);
    if (grown) {
        check_seam(b.va);
        check_info(a.va, &a);
        check_info(a.va + a.size - 1, &a);
        check_info(b.va, &b);
        check_info(b.va + b.size - 1, &b);
        uint64_t flags = 0;
        CHECK_OK(gpumem_mem_get_access(&flags, 0, b.va - 1));
        CHECK(flags == GPUMEM_ACCESS_READWRITE);
        CHECK_OK(gpumem_mem_get_access(&flags, 0, b.va));
        CHECK(flags == GPUMEM_ACCESS_READWRITE);
        /* The whole range copies as one. */
        size_t n = a.size + b.size;
        unsigned char *host = malloc(n);
        REQUIRE(host != NULL);
        tst_fill(host, n, 9);
        CHECK_OK(gpumem_memcpy(a.va, host, n));
        memset(host, 0, n);
        CHECK_OK(gpumem_memcpy(host, a.va, n));
        CHECK(tst_verify(host, n, 9) == n);
        free(host);
        /* Access set on the whole grown range at once (it spans both reservations). */
        gpumem_access_desc_t ro = {0, GPUMEM_ACCESS_READ};
        CHECK_OK(gpumem_mem_set_access(a.va, a.size + b.size, &ro, 1));
        CHECK_OK(gpumem_mem_get_access(&flags, 0, b.va + b.size - 1));
        CHECK(flags == GPUMEM_ACCESS_READ);
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(b.va - 16, 0, 32));
        CHECK_OK(gpumem_mem_set_access(a.va, a.size + b.size, &RW, 1));
        CHECK_OK(gpumem_memset(b.va - 16, 0, 32));
        /* Past the end of the grown range is still refused. */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_set_access(a.va, a.size + b.size + g, &RW, 1));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(b.va + b.size - 8, 0, 16));
    }
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_host_free(pinned));
    /* Unmap the first piece first: the seam copy is refused from then on. */
    piece_unmap(&a);
    if (grown) {
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(b.va - 16, 0, 32));
        CHECKF(tst_contains(gpumem_last_error_message(), "unmapped"), "message: %s", gpumem_last_error_message());
        CHECK_OK(gpumem_memset(b.va, 0, 32)); /* the right side alone still works */
        piece_unmap(&b);
        piece_free(&a); /* the first reservation before the second */
        piece_free(&b);
    } else {
        if (b.va) { /* reserved elsewhere: only cleaned up */
            piece_unmap(&b);
            piece_free(&b);
        }
        piece_free(&a);
    }
}

/* Grown twice; pieces released last-first; a copy spans all three. */
static void test_grow_twice_release_reversed(void)
{
    NEED_VMM();
    piece_t a, b = {0}, c = {0};
    REQUIRE(piece_make(&a, g, NULL));
    int ok = grow(&a, &b, g) && grow(&b, &c, 2 * g);
    if (ok) {
        check_seam(b.va);
        check_seam(c.va);
        check_info(b.va + g / 2, &b);
        size_t n = g + 128;
        unsigned char *host = malloc(n);
        REQUIRE(host != NULL);
        tst_fill(host, n, 4);
        CHECK_OK(gpumem_memcpy(b.va - 64, host, n)); /* a, all of b, c */
        memset(host, 0, n);
        CHECK_OK(gpumem_memcpy(host, b.va - 64, n));
        CHECK(tst_verify(host, n, 4) == n);
        free(host);
        /* A read-only piece in the middle: writing across it is refused, reading is not. */
        gpumem_access_desc_t ro = {0, GPUMEM_ACCESS_READ};
        CHECK_OK(gpumem_mem_set_access(b.va, b.size, &ro, 1));
        CHECK_OK(gpumem_memcpy(c.va + 64, b.va - 8, 16 + g));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(b.va - 8, 0, 16 + g));
        CHECK_OK(gpumem_mem_set_access(b.va, b.size, &RW, 1));
        CHECK_OK(gpumem_memset(b.va - 8, 0, 16 + g));
    }
    if (c.va) {
        piece_unmap(&c);
        piece_free(&c);
    }
    if (b.va) {
        piece_unmap(&b);
        piece_free(&b);
    }
    piece_unmap(&a);
    piece_free(&a);
}

/* Released out of order, then the pattern again at the same place: nothing
 * is left behind (the host backend's room goes with its reservation). */
static void test_free_any_order_and_again(void)
{
    NEED_VMM();
    for (int round = 0; round < 3; ++round) {
        piece_t a, b;
        REQUIRE(piece_make(&a, g, NULL));
        if (!grow(&a, &b, 3 * g)) {
            if (b.va) {
                piece_unmap(&b);
                piece_free(&b);
            }
            piece_unmap(&a);
            piece_free(&a);
            return;
        }
        check_seam(b.va);
        /* Order: unmap b, free b, check a alone, unmap a, free a (round 0);
         * unmap a, free a while b lives, b still works (round 1 and 2). */
        if (round == 0) {
            piece_unmap(&b);
            piece_free(&b);
            CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memset(a.va + a.size - 8, 0, 16));
            CHECK_OK(gpumem_memset(a.va, 1, a.size));
            piece_unmap(&a);
            piece_free(&a);
        } else {
            char *bva = b.va;
            piece_unmap(&a);
            piece_free(&a);
            CHECK_OK(gpumem_memset(bva, 2, b.size));
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(bva - 1, &pi));
            CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
            piece_unmap(&b);
            piece_free(&b);
        }
    }
}

/* The room after a reservation is 2x its size, at least 1 GiB (docs/semantics.md).  A piece
 * carved from the end of the room and one reserved right after it are two vendor reservations
 * (CUDA refuses a memset across such a seam): fills and copies across it still work. */
static void test_seam_past_the_room(void)
{
    NEED_VMM();
    const size_t room = (size_t)1 << 30;
    if (g > room / 4)
        SKIP("granularity too large for this layout");
    piece_t a, b = {0}, c = {0};
    REQUIRE(piece_make(&a, g, NULL));
    REQUIRE(piece_make(&b, g, a.va + g + room - g)); /* the last granule of a's room */
    int adjacent = b.va == a.va + room;
    if (adjacent) {
        REQUIRE(piece_make(&c, g, b.va + g)); /* just past the room: a fresh reservation */
        adjacent = c.va == b.va + g;
    }
    if (adjacent) {
        check_seam(c.va);
        CHECK_OK(gpumem_memset(b.va, 0x33, 2 * g));
        unsigned char probe[2] = {0, 0};
        CHECK_OK(gpumem_memcpy(&probe[0], b.va, 1));
        CHECK_OK(gpumem_memcpy(&probe[1], c.va + g - 1, 1));
        CHECK(probe[0] == 0x33 && probe[1] == 0x33);
    } else {
        printf("note: the address after the room was taken (a %p, b %p, c %p); the seam of two reservations was not tried\n", (void *)a.va, (void *)b.va, (void *)c.va);
    }
    piece_t *all[] = {&c, &b, &a};
    for (int i = 0; i < 3; ++i) {
        if (all[i]->va) {
            piece_unmap(all[i]);
            piece_free(all[i]);
        }
    }
}

/* A hint that lands on a live reservation is not honoured and is no error. */
static void test_taken_hint_gives_another_address(void)
{
    NEED_VMM();
    void *a = NULL, *b = NULL, *c = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&a, 2 * g, 0, NULL));
    REQUIRE_OK(gpumem_mem_address_reserve(&b, g, 0, (char *)a + 2 * g));
    CHECK(b == (char *)a + 2 * g);
    /* The end of `a` is taken by `b` now. */
    CHECK_OK(gpumem_mem_address_reserve(&c, g, 0, (char *)a + 2 * g));
    CHECK(c != NULL && c != b);
    CHECKF((char *)c + g <= (char *)a || (char *)c >= (char *)b + g, "%p overlaps %p or %p", c, a, b);
    CHECK_OK(gpumem_mem_address_free(c, g));
    CHECK_OK(gpumem_mem_address_free(a, 2 * g));
    CHECK_OK(gpumem_mem_address_free(b, g));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_guide_pattern),
        TEST(test_grow_twice_release_reversed),
        TEST(test_free_any_order_and_again),
        TEST(test_seam_past_the_room),
        TEST(test_taken_hint_gives_another_address),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
