/* dma-buf export (gpumem_mem_export_dmabuf) and fabric handles (GPUMEM_HANDLE_FABRIC).
 *
 * Where the device exports dma-bufs (gpumem_device_info_t.dmabuf NATIVE), every kind of device
 * memory gpumem makes gives a descriptor sized to the range; where it does not (the host
 * backend), the same ranges are NOT_SUPPORTED and say so.  The refusals of ranges that are not
 * device memory of one allocation are the same on every backend.  SPDX-License-Identifier: MIT */
#include "harness.h"

#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static char *align_up(void *p, size_t a) { return (char *)(((uintptr_t)p + a - 1) / a * a); }

static int exports_dmabuf(void) { return tst_info(0).dmabuf == GPUMEM_SUPPORT_NATIVE; }

static int fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

/* Export [p, p+n), which must succeed where the device exports dma-bufs and be NOT_SUPPORTED,
 * saying why, where it does not. */
#define CHECK_EXPORT(p, n) check_export_at(__FILE__, __LINE__, (p), (n))
static void check_export_at(const char *file, int line, const void *p, size_t n)
{
    int32_t fd = -7;
    gpumem_status_t st = gpumem_mem_export_dmabuf(&fd, p, n, 0);
    if (!exports_dmabuf()) {
        if (st != GPUMEM_ERROR_NOT_SUPPORTED)
            tst_fail(file, line, "export of %p + %zu: %s, expected NOT_SUPPORTED (dmabuf level NONE)", p, n,
                     gpumem_status_string(st));
        else if (!tst_contains(gpumem_last_error_message(), "dma-buf") ||
                 !tst_contains(gpumem_last_error_message(), "GPUMEM_SUPPORT_NONE"))
            tst_fail(file, line, "the refusal does not say why: \"%s\"", gpumem_last_error_message());
        if (fd != -7)
            tst_fail(file, line, "a refused export wrote fd %d", (int)fd);
        return;
    }
    if (st != GPUMEM_SUCCESS) {
        tst_fail(file, line, "export of %p + %zu: %s: %s", p, n, gpumem_status_string(st), gpumem_last_error_message());
        return;
    }
    if (fd < 0 || !fd_is_open(fd)) {
        tst_fail(file, line, "export of %p + %zu gave fd %d, which is not open", p, n, (int)fd);
        return;
    }
    /* Both the H200's dma-bufs and the fakes' stand-ins are sized to the range. */
    off_t end = lseek(fd, 0, SEEK_END);
    if (end != (off_t)n)
        tst_fail(file, line, "the dma-buf of %zu bytes reports %lld bytes to lseek", n, (long long)end);
    if (close(fd) != 0)
        tst_fail(file, line, "close(%d) failed", (int)fd);
}

/* A refusal with `expected`, a message that contains `why`, and fd untouched. */
#define CHECK_REFUSED(expected, why, p, n, flags) check_refused_at(__FILE__, __LINE__, (expected), (why), (p), (n), (flags))
static void check_refused_at(const char *file, int line, gpumem_status_t expected, const char *why, const void *p,
                             size_t n, uint32_t flags)
{
    int32_t fd = -7;
    gpumem_status_t st = gpumem_mem_export_dmabuf(&fd, p, n, flags);
    if (st != expected)
        tst_fail(file, line, "export of %p + %zu (flags 0x%x): %s, expected %s (%s)", p, n, flags,
                 gpumem_status_string(st), gpumem_status_string(expected), gpumem_last_error_message());
    else if (!tst_contains(gpumem_last_error_message(), why))
        tst_fail(file, line, "the message does not say \"%s\": \"%s\"", why, gpumem_last_error_message());
    if (fd != -7) {
        tst_fail(file, line, "a refused export wrote fd %d", (int)fd);
        if (fd >= 0)
            close(fd);
    }
}

static void test_device_info(void)
{
    gpumem_device_info_t info = tst_info(0);
    CHECK(info.dmabuf == GPUMEM_SUPPORT_NONE || info.dmabuf == GPUMEM_SUPPORT_NATIVE);
    CHECK(info.fabric_handles == GPUMEM_SUPPORT_NONE || info.fabric_handles == GPUMEM_SUPPORT_NATIVE);
    if (tst_backend() == GPUMEM_BACKEND_HOST) {
        CHECK(info.dmabuf == GPUMEM_SUPPORT_NONE);
        CHECK(info.fabric_handles == GPUMEM_SUPPORT_NONE);
    }
    /* A caller built against the 0.3 header passes a smaller struct: the new fields stay its own. */
    struct {
        gpumem_device_info_t info;
        int32_t guard[2];
    } old;
    memset(&old, 0x5a, sizeof old);
    old.info.size = offsetof(gpumem_device_info_t, dmabuf);
    CHECK_OK(gpumem_device_get_info(0, &old.info));
    CHECK(old.info.dmabuf == 0x5a5a5a5a && old.info.fabric_handles == 0x5a5a5a5a);
    CHECK(old.info.managed_pools == info.managed_pools);
}

static void test_plain(void)
{
    const size_t size = 8 * MiB, page = page_size();
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, size));
    char *p = align_up(d, 2 * MiB); /* whole pages wherever the runtime put the allocation */
    const size_t n = (size_t)((char *)d + size - p) / page * page;
    REQUIRE(n >= 4 * MiB);
    CHECK_EXPORT(p, n);
    CHECK_EXPORT(p + MiB, MiB);   /* a part */
    CHECK_EXPORT(p + 3 * page, page); /* one page */
    /* The allocation is untouched: it still copies and frees. */
    CHECK_OK(tst_upload(d, size, 3));
    CHECK(tst_download_verify(d, size, 3));
    CHECK_OK(gpumem_free(d));
}

static void test_pool_block(void)
{
    const size_t size = 4 * MiB, page = page_size();
    void *d = NULL;
    gpumem_status_t st = gpumem_malloc_async(&d, size, NULL);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED)
        SKIP("no stream-ordered allocation here: %s", gpumem_last_error_message());
    REQUIRE_OK(st);
    CHECK_OK(gpumem_stream_synchronize(NULL));
    char *p = align_up(d, page);
    const size_t n = (size_t)((char *)d + size - p) / page * page;
    CHECK_EXPORT(p, n);
    CHECK_EXPORT(p, page);
    CHECK_OK(gpumem_free_async(d, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    /* A freed block: gpumem's own pool and the graveyard know it was freed; a vendor pool's
     * address is no memory gpumem knows any more. */
    {
        int32_t fd = -7;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_export_dmabuf(&fd, p, page, 0));
        CHECKF(tst_contains(gpumem_last_error_message(), "freed") ||
                   tst_contains(gpumem_last_error_message(), "gpumem did not make this memory"),
               "\"%s\"", gpumem_last_error_message());
        CHECK(fd == -7);
    }
}

static void test_pool_of_pinned_memory(void)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.memory = GPUMEM_POOL_MEMORY_PINNED;
    props.numa_node = -1;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED)
        SKIP("no pools of pinned memory here: %s", gpumem_last_error_message());
    REQUIRE_OK(st);
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&d, 4 * MiB, pool, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    char *p = align_up(d, page_size());
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "pinned host", p, page_size(), 0);
    CHECK_OK(gpumem_free_async(d, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK_OK(gpumem_pool_destroy(pool));
}

static void test_vmm(void)
{
    if (tst_info(0).virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("no native VMM here");
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    gpumem_mem_handle_t a = 0, b = 0;
    REQUIRE_OK(gpumem_mem_create(&a, g, &props));
    REQUIRE_OK(gpumem_mem_create(&b, g, &props));
    void *v = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&v, 3 * g, 0, NULL));
    char *va = (char *)v;
    CHECK_OK(gpumem_mem_map(va, g, 0, a));
    CHECK_OK(gpumem_mem_map(va + g, g, 0, b));
    gpumem_access_desc_t desc = {0, GPUMEM_ACCESS_READWRITE};
    CHECK_OK(gpumem_mem_set_access(va, 2 * g, &desc, 1));

    CHECK_EXPORT(va, g);         /* one mapping */
    CHECK_EXPORT(va, 2 * g);     /* two mappings back to back: one range, as the driver takes it */
    CHECK_EXPORT(va + g, g);
    /* The third granule is reserved but not mapped. */
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "unmapped", va + g, 2 * g, 0);

    CHECK_OK(gpumem_mem_unmap(va, g));
    CHECK_OK(gpumem_mem_unmap(va + g, g));
    CHECK_OK(gpumem_mem_address_free(va, 3 * g));
    CHECK_OK(gpumem_mem_release(a));
    CHECK_OK(gpumem_mem_release(b));
}

static void test_buffer(void)
{
    gpumem_buffer_t buf = NULL;
    gpumem_status_t st = gpumem_buffer_create(&buf, 4 * MiB, 64 * MiB, 0);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED)
        SKIP("no growable buffers here: %s", gpumem_last_error_message());
    REQUIRE_OK(st);
    void *data = NULL;
    REQUIRE_OK(gpumem_buffer_data(buf, &data));
    char *p = align_up(data, page_size());
    const size_t n = (size_t)((char *)data + 4 * MiB - p) / page_size() * page_size();
    CHECK_EXPORT(p, n);
    /* Past the buffer's size (its capacity is larger): refused. */
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "past the end", p, n + 4 * MiB, 0);
    CHECK_OK(gpumem_buffer_destroy(buf));
}

static void test_bad_arguments(void)
{
    const size_t page = page_size();
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 4 * MiB));
    char *p = align_up(d, page);
    CHECK_OK(tst_upload(d, 4 * MiB, 5));
    {
        gpumem_status_t st = gpumem_mem_export_dmabuf(NULL, p, page, 0);
        CHECK(st == GPUMEM_ERROR_INVALID_VALUE);
        CHECKF(tst_contains(gpumem_last_error_message(), "fd is NULL"), "\"%s\"", gpumem_last_error_message());
    }
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "size is 0", p, 0, 0);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "flags 0x100", p, page, 0x100);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "flags 0x1", p, page, 0x1);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "ptr is NULL", NULL, page, 0);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "is not aligned to the host page size", p + 256, page, 0);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "size 4352 is not a multiple of the host page size", p,
                  (size_t)4352, 0);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "wraps", p, SIZE_MAX / page * page, 0);
    /* Past the allocation's end. */
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "allocation", p, 8 * MiB, 0);
    /* Bad input loses nothing: the allocation keeps its bytes. */
    CHECK(tst_download_verify(d, 4 * MiB, 5));
    CHECK_OK(gpumem_free(d));
}

static void test_across_two_allocations(void)
{
    /* Two blocks of gpumem's own pool (or the vendor's) lie back to back where the pool
     * carves them from one segment; elsewhere the second lies anywhere. */
    const size_t page = page_size();
    void *a = NULL, *b = NULL;
    gpumem_status_t st = gpumem_malloc_async(&a, 64 * 1024, NULL);
    if (st == GPUMEM_ERROR_NOT_SUPPORTED)
        SKIP("no stream-ordered allocation here");
    REQUIRE_OK(st);
    REQUIRE_OK(gpumem_malloc_async(&b, 64 * 1024, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    char *lo = (char *)(a < b ? a : b), *hi = (char *)(a < b ? b : a);
    if ((uintptr_t)lo % page == 0 && (size_t)(hi - lo) <= 256 * 1024) {
        const size_t n = (size_t)(hi - lo) + page;
        CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "across two allocations", lo, n, 0);
    } else {
        NOTE("the two blocks are not close (%p, %p): only the end of one is checked", a, b);
        CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "allocation", align_up(lo, page), 256 * MiB, 0);
    }
    CHECK_OK(gpumem_free_async(a, NULL));
    CHECK_OK(gpumem_free_async(b, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
}

static void test_not_device_memory(void)
{
    const size_t page = page_size();
    void *pinned = NULL;
    REQUIRE_OK(gpumem_host_alloc(&pinned, 4 * MiB, 0));
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "page-locked host memory", align_up(pinned, page), page, 0);
    CHECK_OK(gpumem_host_free(pinned));

    void *managed = NULL;
    gpumem_status_t st = gpumem_managed_alloc(&managed, 4 * MiB, GPUMEM_ATTACH_GLOBAL);
    if (st == GPUMEM_SUCCESS) {
        CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "managed", align_up(managed, page), page, 0);
        CHECK_OK(gpumem_free(managed));
    } else {
        CHECK(st == GPUMEM_ERROR_NOT_SUPPORTED);
    }

    void *pageable = NULL;
    REQUIRE(posix_memalign(&pageable, page, 4 * page) == 0);
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "gpumem did not make this memory", pageable, page, 0);
    free(pageable);

    void *freed = NULL;
    REQUIRE_OK(gpumem_malloc(&freed, 4 * MiB));
    char *at = align_up(freed, page);
    CHECK_OK(gpumem_free(freed));
    CHECK_REFUSED(GPUMEM_ERROR_INVALID_VALUE, "freed", at, page, 0);
}

static void test_fabric_handles(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_FABRIC;
    size_t g = 0;
    gpumem_mem_handle_t h = 0;
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        CHECK_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        /* No system these tests run on has a fabric (an IMEX channel): refused, saying so. */
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, g, &props));
        CHECKF(tst_contains(gpumem_last_error_message(), "fabric"), "\"%s\"", gpumem_last_error_message());
        if (info.fabric_handles == GPUMEM_SUPPORT_NATIVE) /* the driver claimed it and refused: its reason */
            CHECKF(tst_contains(gpumem_last_error_message(), "IMEX"), "\"%s\"", gpumem_last_error_message());
        CHECK(h == 0);
        /* Unknown handle bits stay INVALID_VALUE. */
        props.handle_types = 0x80;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_create(&h, g, &props));
    }

    gpumem_pool_props_t pp = GPUMEM_POOL_PROPS_INIT;
    pp.handle_types = GPUMEM_HANDLE_FABRIC;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &pp);
    const int imex = access("/dev/nvidia-caps-imex-channels", F_OK) == 0;
    if (info.fabric_handles == GPUMEM_SUPPORT_NATIVE && info.memory_pools == GPUMEM_SUPPORT_NATIVE && !imex) {
        /* The driver makes a pool of fabric memory without an IMEX channel, refuses its export,
         * and crashes at the pool's next call after that refusal (cuda_probe export on the H200:
         * fabric_pool_create succeeds, fabric_pool_export is NOT_PERMITTED, fabric_refused_export_*
         * die of SIGSEGV). A pool that can never be shared is refused before the driver is asked,
         * naming the missing channel. */
        CHECKF(st == GPUMEM_ERROR_NOT_SUPPORTED, "a pool of fabric memory: %s (%s)", gpumem_status_string(st),
               gpumem_last_error_message());
        CHECKF(tst_contains(gpumem_last_error_message(), "IMEX"), "\"%s\"", gpumem_last_error_message());
        CHECK(pool == NULL);
        if (st == GPUMEM_SUCCESS)
            CHECK_OK(gpumem_pool_destroy(pool));
        return;
    }
    if (info.fabric_handles == GPUMEM_SUPPORT_NATIVE && info.memory_pools == GPUMEM_SUPPORT_NATIVE) {
        /* A system with an IMEX channel (never one these tests ran on): the pool is made, serves
         * memory, and its 64-byte handle cannot go out through the descriptor calls. */
        CHECKF(st == GPUMEM_SUCCESS, "a pool of fabric memory: %s (%s)", gpumem_status_string(st),
               gpumem_last_error_message());
        if (st == GPUMEM_SUCCESS) {
            void *p = NULL;
            CHECK_OK(gpumem_malloc_from_pool_async(&p, 2u << 20, pool, NULL));
            if (p) {
                CHECK_OK(gpumem_memset_async(p, 0x5a, 2u << 20, NULL));
                unsigned char back[16];
                CHECK_OK(gpumem_memcpy(back, p, sizeof back));
                CHECK(back[0] == 0x5a && back[15] == 0x5a);
                /* Its handle is 64 bytes, which a descriptor cannot carry: the pool export refuses it,
                 * saying why and what would be needed; the pool cannot go out as a descriptor either,
                 * and so its blocks cannot. */
                int32_t fd = -1;
                CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED,
                             gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_FABRIC));
                const char *why = gpumem_last_error_message();
                CHECKF(tst_contains(why, "not a file descriptor") && tst_contains(why, "64") &&
                           tst_contains(why, "cuMemPoolExportToShareableHandle"),
                       "\"%s\"", why);
                CHECK(fd == -1);
                gpumem_pool_ptr_export_data_t data;
                memset(&data, 0, sizeof data);
                if (info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) {
                    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE,
                                 gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
                    CHECKF(tst_contains(gpumem_last_error_message(), "GPUMEM_HANDLE_FABRIC"), "\"%s\"",
                           gpumem_last_error_message());
                    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_export_pointer(&data, p));
                    CHECKF(tst_contains(gpumem_last_error_message(), "fabric"), "\"%s\"",
                           gpumem_last_error_message());
                } else { /* no descriptor sharing at all here: that is the reason given */
                    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED,
                                 gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
                    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_export_pointer(&data, p));
                }
                CHECK(fd == -1);
                CHECK_OK(gpumem_free_async(p, NULL));
            }
            CHECK_OK(gpumem_stream_synchronize(NULL));
            CHECK_OK(gpumem_pool_destroy(pool));
        }
        return;
    }
    /* No claim, or no vendor pools (gpumem's own pool has no fabric chunks): refused, saying so;
     * with no pools at all (GPUMEM_DISABLE=pools under GPUMEM_FALLBACK=deny) the refusal names that. */
    CHECKF(st == GPUMEM_ERROR_NOT_SUPPORTED, "a pool of fabric memory: %s (%s)", gpumem_status_string(st),
           gpumem_last_error_message());
    const char *why = gpumem_last_error_message();
    CHECKF(tst_contains(why, "fabric") || (info.memory_pools == GPUMEM_SUPPORT_NONE && tst_contains(why, "pools")),
           "\"%s\"", why);
    CHECK(pool == NULL);
    if (st == GPUMEM_SUCCESS)
        CHECK_OK(gpumem_pool_destroy(pool));
}

/* The calls that pass shareable handles as descriptors refuse a fabric handle on every backend,
 * before anything else: NOT_SUPPORTED (not a bad argument), saying it is 64 bytes and not a
 * descriptor, and which driver calls it would take. */
static void test_fabric_handle_is_not_a_descriptor(void)
{
    gpumem_device_info_t info = tst_info(0);
    int32_t fd = -1;
    gpumem_pool_t imported = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_import_from_shareable_handle(&imported, 0, GPUMEM_HANDLE_FABRIC));
    CHECKF(tst_contains(gpumem_last_error_message(), "not a file descriptor") &&
               tst_contains(gpumem_last_error_message(), "cuMemPoolImportFromShareableHandle"),
           "\"%s\"", gpumem_last_error_message());
    CHECK(imported == NULL);
    gpumem_mem_handle_t h = 0;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_import_from_shareable_handle(&h, 0, GPUMEM_HANDLE_FABRIC));
    CHECKF(tst_contains(gpumem_last_error_message(), "cuMemImportFromShareableHandle"), "\"%s\"",
           gpumem_last_error_message());
    CHECK(h == 0);
    /* A shareable pool, asked for a fabric handle. */
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_pool_props_t pp = GPUMEM_POOL_PROPS_INIT;
        pp.handle_types = GPUMEM_HANDLE_POSIX_FD;
        gpumem_pool_t pool = NULL;
        if (gpumem_pool_create(&pool, &pp) == GPUMEM_SUCCESS) {
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED,
                         gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_FABRIC));
            CHECKF(tst_contains(gpumem_last_error_message(), "not a file descriptor"), "\"%s\"",
                   gpumem_last_error_message());
            CHECK(fd == -1);
            CHECK_OK(gpumem_pool_destroy(pool));
        }
    }
    /* A shareable memory handle, asked for a fabric handle. */
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE && (info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD)) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        props.handle_types = GPUMEM_HANDLE_POSIX_FD;
        size_t g = 0;
        CHECK_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        if (g && gpumem_mem_create(&h, g, &props) == GPUMEM_SUCCESS) {
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_FABRIC));
            CHECKF(tst_contains(gpumem_last_error_message(), "cuMemExportToShareableHandle"), "\"%s\"",
                   gpumem_last_error_message());
            CHECK(fd == -1);
            CHECK_OK(gpumem_mem_release(h));
        }
    }
}

/* GPUMEM_POOL_RDMA with fabric handles: never made where the
 * system has no fabric, refused saying so, and the RDMA flag is never taken for a handle bit. */
static void test_fabric_with_rdma(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.rdma_memory == GPUMEM_SUPPORT_NONE)
        SKIP("no RDMA-capable memory here");
    gpumem_pool_props_t pp = GPUMEM_POOL_PROPS_INIT;
    pp.handle_types = GPUMEM_HANDLE_FABRIC;
    pp.flags = GPUMEM_POOL_RDMA;
    gpumem_pool_t pool = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &pp));
    CHECKF(tst_contains(gpumem_last_error_message(), "fabric"), "\"%s\"", gpumem_last_error_message());
    CHECK(pool == NULL);
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        props.handle_types = GPUMEM_HANDLE_FABRIC;
        props.flags = GPUMEM_POOL_RDMA;
        size_t g = 0;
        gpumem_mem_handle_t h = 0;
        CHECK_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, g, &props));
        CHECKF(tst_contains(gpumem_last_error_message(), "fabric"), "\"%s\"", gpumem_last_error_message());
        CHECK(h == 0);
        /* RDMA alone still works with a POSIX handle. */
        props.handle_types = GPUMEM_HANDLE_POSIX_FD;
        if (info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) {
            CHECK_OK(gpumem_mem_create(&h, g, &props));
            if (h)
                CHECK_OK(gpumem_mem_release(h));
        }
    }
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_device_info),  TEST(test_plain),           TEST(test_pool_block),
        TEST(test_pool_of_pinned_memory), TEST(test_vmm),    TEST(test_buffer),
        TEST(test_bad_arguments), TEST(test_across_two_allocations), TEST(test_not_device_memory),
        TEST(test_fabric_handles), TEST(test_fabric_handle_is_not_a_descriptor), TEST(test_fabric_with_rdma),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
