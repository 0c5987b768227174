/*
 * gpumem_snapshot_take / _release / _write_json: every live allocation (with
 * its thread, time, pool and stream, and its backtrace under
 * GPUMEM_BACKTRACE=1) and every segment of gpumem's own pools with its free
 * blocks; the memory of every allocation and pool (pinned and managed pools
 * included), as pointer info says it.  The JSON is checked by
 * tests/debug_json_check.py.  Runs on every backend.
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"
#include "debug_util.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/syscall.h>

static char g_dir[PATH_MAX];
static char g_json[PATH_MAX + 32];
static const char *const g_files[] = {"snapshot.json", NULL};

static void set_up(void)
{
    if (!g_dir[0] && !dbg_scratch(g_dir, sizeof g_dir))
        tst_fail(__FILE__, __LINE__, "mkdtemp failed");
    snprintf(g_json, sizeof g_json, "%s/snapshot.json", g_dir);
    unlink(g_json);
}

#define ALLOC_AT(s, i) GPUMEM_SNAPSHOT_ITEM(gpumem_snapshot_allocation_t, (s)->allocations, i)
#define SEGMENT_AT(s, i) GPUMEM_SNAPSHOT_ITEM(gpumem_snapshot_segment_t, (s)->segments, i)
#define POOL_AT(s, i) GPUMEM_SNAPSHOT_ITEM(gpumem_snapshot_pool_t, (s)->pools, i)

/* The snapshot's allocation at `ptr`, or NULL. */
static const gpumem_snapshot_allocation_t *find_alloc(const gpumem_snapshot_t *s, const void *ptr)
{
    for (size_t i = 0; i < s->allocation_count; ++i)
        if (ALLOC_AT(s, i)->ptr == ptr)
            return ALLOC_AT(s, i);
    return NULL;
}

static gpumem_pointer_info_t info_of(const void *p)
{
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    return pi;
}

static const gpumem_snapshot_pool_t *find_pool(const gpumem_snapshot_t *s, gpumem_pool_t pool)
{
    for (size_t i = 0; i < s->pool_count; ++i)
        if (POOL_AT(s, i)->pool == pool)
            return POOL_AT(s, i);
    return NULL;
}

static void test_snapshot_lists_what_was_allocated(void)
{
    set_up();
    REQUIRE_OK(dbg_restart(NULL));
    const uint32_t me = (uint32_t)syscall(SYS_gettid);
    void *dev = NULL, *dev_small = NULL, *pinned = NULL, *managed = NULL, *block = NULL, *block_small = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 1 << 20));
    REQUIRE_OK(gpumem_malloc(&dev_small, 4096));
    REQUIRE_OK(gpumem_host_alloc(&pinned, 8192, 0));
    gpumem_status_t st = gpumem_managed_alloc(&managed, 65536, 0);
    if (st != GPUMEM_SUCCESS)
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
    gpumem_stream_t stream = NULL;
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_stream_create(&stream));
    st = gpumem_malloc_async(&block, 300000, stream);
    if (st == GPUMEM_SUCCESS) {
        REQUIRE_OK(gpumem_malloc_async(&block_small, 1000, stream));
        REQUIRE_OK(gpumem_device_get_pool(&pool, 0));
    } else {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
    }

    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    REQUIRE(snap != NULL);
    CHECK(snap->size >= sizeof(gpumem_snapshot_t));
    CHECK(snap->backend == tst_backend());
    int32_t devices = 0;
    CHECK_OK(gpumem_device_count(&devices));
    CHECK(snap->device_count == (size_t)devices);
    CHECK(snap->devices[0].total > 0 && snap->devices[0].free <= snap->devices[0].total);

    size_t expected = 3 + (managed ? 1 : 0) + (block ? 2 : 0);
    CHECKF(snap->allocation_count == expected, "%zu allocations, expected %zu", snap->allocation_count, expected);
    for (size_t i = 1; i < snap->allocation_count; ++i)
        CHECK((uintptr_t)ALLOC_AT(snap, i - 1)->ptr < (uintptr_t)ALLOC_AT(snap, i)->ptr);
    struct {
        void *ptr;
        size_t bytes;
        int32_t kind;
        int32_t memory;
    } want[] = {
        {dev, 1 << 20, GPUMEM_KIND_DEVICE, GPUMEM_POOL_MEMORY_DEVICE},
        {dev_small, 4096, GPUMEM_KIND_DEVICE, GPUMEM_POOL_MEMORY_DEVICE},
        {pinned, 8192, GPUMEM_KIND_HOST_PINNED, GPUMEM_POOL_MEMORY_PINNED},
        {managed, 65536, GPUMEM_KIND_MANAGED, GPUMEM_POOL_MEMORY_MANAGED /* emulated too, as pointer info says */},
        {block, 300000, GPUMEM_KIND_STREAM_ORDERED, GPUMEM_POOL_MEMORY_DEVICE},
        {block_small, 1000, GPUMEM_KIND_STREAM_ORDERED, GPUMEM_POOL_MEMORY_DEVICE},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        if (!want[i].ptr)
            continue;
        const gpumem_snapshot_allocation_t *a = find_alloc(snap, want[i].ptr);
        CHECKF(a != NULL, "allocation %zu (%p) is missing", i, want[i].ptr);
        if (!a)
            continue;
        CHECK(a->size >= sizeof(gpumem_snapshot_allocation_t));
        CHECKF(a->bytes == want[i].bytes && a->kind == want[i].kind, "%p: %zu bytes of kind %d", a->ptr, a->bytes,
               (int)a->kind);
        CHECKF(a->memory == want[i].memory, "%p: memory %d, expected %d", a->ptr, (int)a->memory, (int)want[i].memory);
        CHECK(a->memory == info_of(a->ptr).memory);
        CHECKF(a->thread == me, "thread %u, expected %u", a->thread, me);
        CHECK(a->time_us <= snap->time_us);
        CHECK(a->backtrace == NULL && a->backtrace_depth == 0); /* GPUMEM_BACKTRACE is unset */
        if (a->kind == GPUMEM_KIND_STREAM_ORDERED) {
            CHECK(a->pool == pool);
            CHECK(a->stream == stream);
        } else {
            CHECK(a->pool == NULL && a->stream == NULL);
        }
    }
    /* The backed bytes of gpumem's own pools' segments add up to each pool's reserved bytes. */
    for (size_t p = 0; p < snap->pool_count; ++p) {
        const gpumem_snapshot_pool_t *sp = POOL_AT(snap, p);
        uint64_t reserved = 0;
        CHECK_OK(gpumem_pool_get_attribute(sp->pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
        CHECK(sp->reserved_bytes == reserved);
        if (sp->implementation != GPUMEM_POOL_BUILTIN)
            continue;
        uint64_t in_segments = 0, in_address_space = 0, free_bytes = 0;
        for (size_t i = 0; i < snap->segment_count; ++i) {
            const gpumem_snapshot_segment_t *seg = SEGMENT_AT(snap, i);
            if (seg->pool != sp->pool)
                continue;
            CHECK(seg->backed_bytes <= seg->bytes);
            in_segments += seg->backed_bytes;
            in_address_space += seg->bytes;
            for (size_t b = 0; b < seg->free_block_count; ++b) {
                CHECK(seg->free_blocks[b].offset + seg->free_blocks[b].bytes <= seg->bytes);
                free_bytes += seg->free_blocks[b].bytes;
            }
        }
        CHECKF(in_segments == reserved, "pool %p: segments hold %" PRIu64 ", reserved is %" PRIu64, (void *)sp->pool,
               in_segments, reserved);
        /* What is not free holds the live blocks (rounded up to the pool's sizes),
         * and is backed. */
        CHECK(free_bytes + sp->used_bytes <= in_address_space);
        if (sp->pool == pool && block)
            CHECK(in_address_space - free_bytes >= 300000 + 1000 && reserved >= 300000 + 1000);
    }
    REQUIRE_OK(gpumem_snapshot_write_json(snap, g_json));
    CHECK_OK(gpumem_snapshot_release(snap));

    char args[512];
    int n = snprintf(args, sizeof args, "snapshot '%s' --alloc device=%d --alloc device=4096 --alloc host_pinned=8192",
                     g_json, 1 << 20);
    if (managed)
        n += snprintf(args + n, sizeof args - (size_t)n, " --alloc managed=65536");
    if (block)
        snprintf(args + n, sizeof args - (size_t)n, " --alloc stream_ordered=300000 --alloc stream_ordered=1000");
    CHECK_JSON("%s", args);

    if (block) {
        CHECK_OK(gpumem_free_async(block, stream));
        CHECK_OK(gpumem_free_async(block_small, stream));
    }
    CHECK_OK(gpumem_stream_synchronize(stream));
    CHECK_OK(gpumem_stream_destroy(stream));
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_free(dev_small));
    CHECK_OK(gpumem_host_free(pinned));
    if (managed)
        CHECK_OK(gpumem_free(managed));
    /* Freed allocations leave the next snapshot. */
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    CHECKF(snap->allocation_count == 0, "%zu allocations left", snap->allocation_count);
    CHECK_OK(gpumem_snapshot_release(snap));
}

static void test_snapshot_of_builtin_pool_segments(void)
{
    set_up();
    REQUIRE_OK(dbg_restart(NULL));
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.implementation = GPUMEM_POOL_BUILTIN;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (st != GPUMEM_SUCCESS) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
        SKIP("no pools here");
    }
    void *a = NULL, *b = NULL, *c = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&a, 1 << 20, pool, NULL));
    REQUIRE_OK(gpumem_malloc_from_pool_async(&b, 1 << 20, pool, NULL));
    REQUIRE_OK(gpumem_malloc_from_pool_async(&c, 1 << 20, pool, NULL));
    REQUIRE_OK(gpumem_free_async(b, NULL)); /* a hole between a and c */
    REQUIRE_OK(gpumem_device_synchronize());
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    uint64_t reserved = 0;
    CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    uint64_t in_segments = 0, in_address_space = 0;
    int hole_found = 0;
    for (size_t i = 0; i < snap->segment_count; ++i) {
        const gpumem_snapshot_segment_t *seg = SEGMENT_AT(snap, i);
        if (seg->pool != pool)
            continue;
        in_segments += seg->backed_bytes;
        in_address_space += seg->bytes;
        for (size_t k = 0; k < seg->free_block_count; ++k)
            if ((char *)seg->base + seg->free_blocks[k].offset == (char *)b && seg->free_blocks[k].bytes >= (1u << 20))
                hole_found = 1;
    }
    /* a and c stay backed; a paged pool gave the hole's pages back at the
     * synchronisation (release threshold 0), others keep the whole chunk. */
    CHECKF(in_segments == reserved && reserved >= 2u << 20 && in_address_space >= 3u << 20,
           "segments back %" PRIu64 " of %" PRIu64 ", reserved %" PRIu64, in_segments, in_address_space, reserved);
    CHECK(hole_found);
    REQUIRE_OK(gpumem_snapshot_write_json(snap, g_json));
    CHECK_OK(gpumem_snapshot_release(snap));
    CHECK_JSON("snapshot '%s' --segments --alloc stream_ordered=%d --alloc stream_ordered=%d", g_json, 1 << 20, 1 << 20);
    CHECK_OK(gpumem_free_async(a, NULL));
    CHECK_OK(gpumem_free_async(c, NULL));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* Pools of pinned and of managed memory, and their blocks, say so (the struct and the JSON). */
static void test_snapshot_names_pool_memory(void)
{
    set_up();
    REQUIRE_OK(dbg_restart(NULL));
    dbg_pool_block_t used[4];
    gpumem_stream_t stream = NULL;
    REQUIRE_OK(gpumem_stream_create(&stream));
    const int n = dbg_pool_blocks_make(used, GPUMEM_POOL_AUTO, 3000, stream);
    REQUIRE(n >= 0);
    if (n == 0) {
        CHECK_OK(gpumem_stream_destroy(stream));
        SKIP("no pools of pinned or managed memory here");
    }
    CHECK_OK(gpumem_stream_synchronize(stream));

    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    char args[2048];
    int len = snprintf(args, sizeof args, "snapshot '%s'", g_json);
    for (int i = 0; i < n; ++i) {
        const gpumem_snapshot_pool_t *p = find_pool(snap, used[i].pool);
        CHECKF(p != NULL, "the %s pool %p is missing", dbg_memory_name(used[i].memory), (void *)used[i].pool);
        if (p)
            CHECKF(p->memory == used[i].memory, "pool %p: memory %d, expected %d", (void *)p->pool, (int)p->memory,
                   (int)used[i].memory);
        const gpumem_snapshot_allocation_t *a = find_alloc(snap, used[i].block);
        CHECKF(a != NULL, "the block %p is missing", used[i].block);
        if (a) {
            CHECK(a->kind == GPUMEM_KIND_STREAM_ORDERED && a->pool == used[i].pool && a->bytes == 3000 + (size_t)i);
            CHECKF(a->memory == used[i].memory, "%p: memory %d, expected %d", a->ptr, (int)a->memory,
                   (int)used[i].memory);
            CHECK(a->memory == info_of(a->ptr).memory);
        }
    }
    dbg_pool_memory_args(args, sizeof args, len, used, n);
    REQUIRE_OK(gpumem_snapshot_write_json(snap, g_json));
    CHECK_OK(gpumem_snapshot_release(snap));
    CHECK_JSON("%s", args);

    for (int i = 0; i < n; ++i)
        CHECK_OK(gpumem_free_async(used[i].block, stream));
    CHECK_OK(gpumem_stream_synchronize(stream));
    for (int i = 0; i < n; ++i)
        if (used[i].made)
            CHECK_OK(gpumem_pool_destroy(used[i].pool));
    CHECK_OK(gpumem_stream_destroy(stream));
}

static void test_snapshot_with_backtraces(void)
{
    set_up();
    const char *env[] = {"GPUMEM_BACKTRACE=1", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 12345));
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    const gpumem_snapshot_allocation_t *a = find_alloc(snap, p);
    CHECK(a != NULL && a->backtrace != NULL && a->backtrace_depth > 0);
    REQUIRE_OK(gpumem_snapshot_write_json(snap, g_json));
    CHECK_OK(gpumem_snapshot_release(snap));
    CHECK_JSON("snapshot '%s' --backtraces --alloc device=12345", g_json);
    CHECK_OK(gpumem_free(p));
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_snapshot_outlives_finalize(void)
{
    set_up();
    REQUIRE_OK(dbg_restart(NULL));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    CHECK_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    /* Plain data: still readable and writable after finalize, until released. */
    CHECK(snap->allocation_count == 1 && ALLOC_AT(snap, 0)->ptr == p && ALLOC_AT(snap, 0)->bytes == 4096);
    CHECK_OK(gpumem_snapshot_write_json(snap, g_json));
    CHECK_OK(gpumem_snapshot_release(snap));
    CHECK_JSON("snapshot '%s' --alloc device=4096", g_json);
    REQUIRE_OK(dbg_restart(NULL));
}

/* The path's %p is the process id and %r the MPI rank; a path that another live process
 * writes (holds) gets this process's pid appended instead. */
static void test_snapshot_path_per_process(void)
{
    set_up();
    REQUIRE_OK(dbg_restart(NULL));
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    char pattern[PATH_MAX + 64], want[PATH_MAX + 64], mine[PATH_MAX + 64];
    snprintf(pattern, sizeof pattern, "%s/s-%%p-%%r.json", g_dir);
    snprintf(want, sizeof want, "%s/s-%ld-5.json", g_dir, (long)getpid());
    setenv("PMI_RANK", "5", 1);
    CHECK_OK(gpumem_snapshot_write_json(snap, pattern));
    unsetenv("PMI_RANK");
    CHECKF(dbg_exists(want), "%s not written", want);
    CHECK_JSON("snapshot '%s'", want);
    unlink(want);
    /* Another process holds g_json (flock, as gpumem's claim of a file does). */
    snprintf(mine, sizeof mine, "%s/snapshot.%ld.json", g_dir, (long)getpid());
    int ready[2], done[2];
    REQUIRE(pipe(ready) == 0 && pipe(done) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int fd = open(g_json, O_WRONLY | O_CREAT, 0666);
        char c = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    char c = 0;
    REQUIRE(read(ready[0], &c, 1) == 1 && c == 'y');
    CHECK_OK(gpumem_snapshot_write_json(snap, g_json)); /* and warns */
    CHECK(write(done[1], "x", 1) == 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
    struct stat st;
    CHECK(stat(g_json, &st) == 0 && st.st_size == 0);
    CHECKF(dbg_exists(mine), "%s not written", mine);
    CHECK_JSON("snapshot '%s'", mine);
    unlink(mine);
    CHECK_OK(gpumem_snapshot_release(snap));
}

static void test_snapshot_misuse(void)
{
    set_up();
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_take(NULL));
    CHECK_OK(gpumem_snapshot_release(NULL));
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_write_json(NULL, g_json));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_write_json(snap, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_write_json(snap, ""));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_write_json(snap, "/nonexistent-gpumem-dir/s.json"));
    CHECK(tst_contains(gpumem_last_error_message(), "nonexistent-gpumem-dir"));
    gpumem_snapshot_t forged = *snap;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_release(&forged));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_write_json(&forged, g_json));
    CHECK_OK(gpumem_snapshot_release(snap));
    /* Released twice: reported, nothing freed twice. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_release(snap));
    CHECK(tst_contains(gpumem_last_error_message(), "not a live snapshot"));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_snapshot_lists_what_was_allocated),
        TEST(test_snapshot_of_builtin_pool_segments),
        TEST(test_snapshot_names_pool_memory),
        TEST(test_snapshot_with_backtraces),
        TEST(test_snapshot_outlives_finalize),
        TEST(test_snapshot_path_per_process),
        TEST(test_snapshot_misuse),
    };
    int rc = tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
    dbg_cleanup(g_dir, g_files);
    return rc;
}
