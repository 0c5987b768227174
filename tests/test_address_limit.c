/* Growable buffers and shareable pools in a process allowed little address space (ulimit -v, a
 * container's limit): they reserve what the environment allows, not max_size's worth or the device's
 * whole memory.  main() lowers RLIMIT_AS to what the process maps already plus 2 GiB, once gpumem has
 * loaded its backend.  SPDX-License-Identifier: MIT */
#include "harness.h"

#include <sys/resource.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define ROOM ((size_t)2048 * MiB) /* address space allowed beyond what the process maps at start */

static int g_limited; /* RLIMIT_AS was lowered */

static size_t mapped_now(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static int buffers_supported(void)
{
    gpumem_device_info_t info = tst_info(0);
    return info.virtual_memory != GPUMEM_SUPPORT_NONE;
}

static void *data_of(gpumem_buffer_t b)
{
    void *p = NULL;
    CHECK_OK(gpumem_buffer_data(b, &p));
    return p;
}

/* The first and the last MiB of [p, p + n): what these tests write and read back, so that no case
 * commits more memory than a few MiB. */
static int ends_hold(const char *p, size_t n, unsigned seed)
{
    return tst_download_verify(p, MiB, seed) && tst_download_verify(p + n - MiB, MiB, seed + 1);
}

static gpumem_status_t write_ends(char *p, size_t n, unsigned seed)
{
    gpumem_status_t st = tst_upload(p, MiB, seed);
    return st ? st : tst_upload(p + n - MiB, MiB, seed + 1);
}

/* max_size 0 means the device's whole memory (25 GB on the host backend): far more than the process
 * may map, and still a buffer of 100 bytes is made, grows and leaves room for more. */
static void test_buffer_default_max_size(void)
{
    if (!g_limited)
        SKIP("RLIMIT_AS could not be lowered here");
    if (!buffers_supported())
        SKIP("growable buffers are not supported (virtual memory level NONE)");
    gpumem_buffer_t a = NULL, b = NULL;
    REQUIRE_OK(gpumem_buffer_create(&a, 100, 0, 0));
    CHECK_OK(tst_upload(data_of(a), 100, 3));
    CHECK(tst_download_verify(data_of(a), 100, 3));
    /* A second one fits too: the first left the program room. */
    REQUIRE_OK(gpumem_buffer_create(&b, 100, 0, 0));
    CHECK_OK(gpumem_buffer_resize(a, 64 * MiB));
    char *p = (char *)data_of(a);
    CHECK(tst_download_verify(p, 100, 3));
    CHECK_OK(write_ends(p, 64 * MiB, 5));
    CHECK(ends_hold(p, 64 * MiB, 5));
    /* And so does the program's own memory. */
    void *own = malloc(256 * MiB);
    CHECK(own != NULL);
    free(own);
    CHECK_OK(gpumem_buffer_destroy(b));
    CHECK_OK(gpumem_buffer_destroy(a));
}

/* A max_size 1.5x the room: the buffer reserves less, grows past that (moving where the reservation
 * is full: its bytes stay, the old address is freed memory) and fails, naming max_size, only where no
 * larger reservation fits. */
static void test_buffer_grows_past_its_reservation(void)
{
    if (!g_limited)
        SKIP("RLIMIT_AS could not be lowered here");
    if (!buffers_supported())
        SKIP("growable buffers are not supported (virtual memory level NONE)");
    gpumem_buffer_t b = NULL;
    const size_t max_size = ROOM / 2 * 3;
    REQUIRE_OK(gpumem_buffer_create(&b, 2 * MiB, max_size, 0));
    char *first = (char *)data_of(b);
    REQUIRE_OK(write_ends(first, 2 * MiB, 7));
    const size_t grown = ROOM / 2;
    gpumem_status_t first_growth = gpumem_buffer_resize(b, grown);
    if (first_growth != GPUMEM_SUCCESS && tst_backend() != GPUMEM_BACKEND_HOST) {
        /* A GPU runtime's own reservations count against the same limit (CUDA's driver 580 on an
         * H200 refused a 1 GiB reservation with 2 GiB of room): the growth may be refused, but
         * only as OUT_OF_MEMORY naming max_size, with the buffer as it was. */
        CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, first_growth);
        CHECKF(strstr(gpumem_last_error_message(), "max_size") != NULL, "%s", gpumem_last_error_message());
        CHECK((char *)data_of(b) == first && ends_hold(first, 2 * MiB, 7));
        CHECK_OK(gpumem_buffer_destroy(b));
        return;
    }
    REQUIRE_OK(first_growth);
    char *p = (char *)data_of(b);
    CHECK(ends_hold(p, 2 * MiB, 7));
    CHECK_OK(write_ends(p, grown, 9));
    CHECK(ends_hold(p, grown, 9));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p + grown - 1, &pi));
    CHECK(pi.kind == GPUMEM_KIND_BUFFER && pi.base == p && pi.alloc_size == grown);
    if (p != first) {
        NOTE("the buffer moved from %p to %p", (void *)first, (void *)p);
        char byte = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(&byte, first, 1));
    }
    /* Past what the process may still map: refused, the buffer as it was. */
    gpumem_status_t st = gpumem_buffer_resize(b, ROOM / 8 * 5);
    if (st == GPUMEM_SUCCESS) {
        NOTE("this backend's reservations do not count against RLIMIT_AS");
        CHECK_OK(gpumem_buffer_resize(b, grown));
    } else {
        CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, st);
        /* (The allocate-copy-free fallback reserves nothing ahead: max_size is not the matter there.) */
        if (tst_info(0).virtual_memory == GPUMEM_SUPPORT_NATIVE)
            CHECKF(tst_contains(gpumem_last_error_message(), "max_size"), "message: %s",
                   gpumem_last_error_message());
        size_t size = 0;
        CHECK_OK(gpumem_buffer_size(b, &size));
        CHECK(size == grown);
        CHECK(data_of(b) == p);
    }
    CHECK(ends_hold((char *)data_of(b), grown, 9));
    CHECK_OK(gpumem_buffer_resize(b, MiB));
    CHECK_OK(gpumem_buffer_destroy(b));
}

/* A shareable pool of the host backend without max_size reserves its capacity up front (64 GiB):
 * here it reserves less, and serves allocations.  (The runtimes' pools reserve as their runtime does.) */
static void test_shareable_pool(void)
{
    if (!g_limited)
        SKIP("RLIMIT_AS could not be lowered here");
    if (tst_backend() != GPUMEM_BACKEND_HOST)
        SKIP("the pools are the runtime's, not the host backend's");
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE || !(info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD))
        SKIP("shareable pools are not supported here");
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_pool_create(&pool, &props));
    void *p = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&p, 8 * MiB, pool, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    if (p) {
        CHECK_OK(write_ends((char *)p, 8 * MiB, 11));
        CHECK(ends_hold((char *)p, 8 * MiB, 11));
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
    }
    CHECK_OK(gpumem_pool_destroy(pool));
}

int main(int argc, char **argv)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)argc;
    (void)argv;
    printf("skipped: a sanitizer's shadow memory needs more address space than this test allows\n");
    return 77;
#else
    /* The backend loaded first: the limit is on what gpumem does, not on loading a runtime. */
    (void)tst_stats();
    struct rlimit lim;
    const size_t now = mapped_now();
    if (now && getrlimit(RLIMIT_AS, &lim) == 0 && (lim.rlim_max == RLIM_INFINITY || lim.rlim_max > now + ROOM)) {
        lim.rlim_cur = (rlim_t)(now + ROOM);
        g_limited = setrlimit(RLIMIT_AS, &lim) == 0;
    }
    static const tst_case_t cases[] = {
        TEST(test_buffer_default_max_size),
        TEST(test_buffer_grows_past_its_reservation),
        TEST(test_shareable_pool),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
#endif
}
