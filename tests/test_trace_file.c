/*
 * GPUMEM_TRACE: the Chrome-trace file written at gpumem_finalize, its format
 * (docs/semantics.md, "Trace file"), GPUMEM_TRACE_MAX keeping the newest
 * events, GPUMEM_BACKTRACE, the memory of pinned and managed pools' events,
 * every kind at its address (VMM memory as its mappings).  The written files
 * are checked by tests/debug_json_check.py.  Runs on every backend.
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

static char g_dir[PATH_MAX];
static char g_trace[PATH_MAX + 32];
static const char *const g_files[] = {"trace.json", NULL};

static void set_up(void)
{
    if (!g_dir[0] && !dbg_scratch(g_dir, sizeof g_dir))
        tst_fail(__FILE__, __LINE__, "mkdtemp failed");
    snprintf(g_trace, sizeof g_trace, "%s/trace.json", g_dir);
    unlink(g_trace);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A pool of gpumem's own allocator (where pools exist at all), so that pool growth shows. */
static gpumem_pool_t builtin_pool(void)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.implementation = GPUMEM_POOL_BUILTIN;
    gpumem_pool_t pool = NULL;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (st != GPUMEM_SUCCESS) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st);
        return NULL;
    }
    return pool;
}

static void test_trace_written_at_finalize(void)
{
    set_up();
    char var[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", g_trace);
    const char *env[] = {var, NULL};
    REQUIRE_OK(dbg_restart(env));

    void *dev = NULL, *gone = NULL, *pinned = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 1 << 20));
    REQUIRE_OK(gpumem_malloc(&gone, 4096));
    REQUIRE_OK(gpumem_free(gone));
    REQUIRE_OK(gpumem_host_alloc(&pinned, 8192, 0));
    size_t stream_live = 0;
    gpumem_pool_t pool = builtin_pool();
    gpumem_stream_t stream = NULL;
    void *block = NULL;
    if (pool) {
        void *small = NULL;
        REQUIRE_OK(gpumem_stream_create(&stream));
        REQUIRE_OK(gpumem_malloc_from_pool_async(&block, 300000, pool, stream));
        REQUIRE_OK(gpumem_malloc_from_pool_async(&small, 1000, pool, stream));
        REQUIRE_OK(gpumem_free_async(small, stream));
        REQUIRE_OK(gpumem_stream_synchronize(stream));
        REQUIRE_OK(gpumem_pool_trim_to(pool, 0));
        stream_live = 300000;
    }
    /* A refused allocation is an oom event with its verdict (the checker reads it). */
    void *huge = NULL;
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&huge, SIZE_MAX / 2));
    REQUIRE_OK(gpumem_device_synchronize());
    /* Nothing is written before finalize: the file is only claimed (created empty). */
    CHECK(file_size(g_trace) == 0);
    /* What is live when the trace ends: alloc minus free bytes in the file. */
    REQUIRE_OK(gpumem_finalize());
    REQUIRE(dbg_exists(g_trace));
    char live[256];
    snprintf(live, sizeof live, "--live device=%d --live host_pinned=8192 --live stream_ordered=%zu", 1 << 20,
             stream_live);
    CHECK_JSON("trace '%s' %s --sync --dropped 0 %s", g_trace, live, pool ? "--pool-events --trim" : "");
    /* The next init starts a new trace; free what the previous runtime released. */
    REQUIRE_OK(dbg_restart(NULL));
    (void)block;
}

/* Blocks of pinned and managed pools, frees included, and those pools' growth, release and trims say their memory. */
static void test_trace_names_pool_memory(void)
{
    set_up();
    char var[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", g_trace);
    const char *env[] = {var, NULL};
    REQUIRE_OK(dbg_restart(env));
    /* The default pools (native where the device has such pools), and pools of gpumem's own,
     * whose chunks show as pool_grow and pool_release. */
    dbg_pool_block_t used[4];
    gpumem_stream_t stream = NULL;
    REQUIRE_OK(gpumem_stream_create(&stream));
    const int n = dbg_pool_blocks_make(used, GPUMEM_POOL_BUILTIN, 5000, stream);
    REQUIRE(n >= 0);
    if (n == 0) {
        CHECK_OK(gpumem_stream_destroy(stream));
        REQUIRE_OK(dbg_restart(NULL));
        SKIP("no pools of pinned or managed memory here");
    }
    /* Freed only once all are allocated: no address serves two of them. */
    for (int i = 0; i < n; ++i)
        REQUIRE_OK(gpumem_free_async(used[i].block, stream));
    REQUIRE_OK(gpumem_stream_synchronize(stream));
    char args[2048];
    int len = snprintf(args, sizeof args, "trace '%s' --dropped 0 --pool-events --trim", g_trace);
    for (int i = 0; i < n; ++i)
        REQUIRE_OK(gpumem_pool_trim_to(used[i].pool, 0));
    dbg_pool_memory_args(args, sizeof args, len, used, n);
    for (int i = 0; i < n; ++i)
        if (used[i].made)
            REQUIRE_OK(gpumem_pool_destroy(used[i].pool));
    REQUIRE_OK(gpumem_stream_destroy(stream));
    REQUIRE_OK(gpumem_finalize());
    CHECK_JSON("%s", args);
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_trace_keeps_the_newest(void)
{
    set_up();
    char var[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", g_trace);
    const char *env[] = {var, "GPUMEM_TRACE_MAX=10", NULL};
    REQUIRE_OK(dbg_restart(env));
    /* 20 allocations and 20 frees: 40 events, of which the newest 10 stay. */
    for (int i = 1; i <= 20; ++i) {
        void *p = NULL;
        REQUIRE_OK(gpumem_malloc(&p, (size_t)i * 4096));
        REQUIRE_OK(gpumem_free(p));
    }
    REQUIRE_OK(gpumem_finalize());
    CHECK_JSON("trace '%s' --events 10 --dropped 30 --last-bytes %d --live device=0", g_trace, 20 * 4096);
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_trace_with_backtraces(void)
{
    set_up();
    char var[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", g_trace);
    const char *env[] = {var, "GPUMEM_BACKTRACE=1", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL, *h = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 65536));
    REQUIRE_OK(gpumem_host_alloc(&h, 4096, 0));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_host_free(h));
    REQUIRE_OK(gpumem_finalize());
    CHECK_JSON("trace '%s' --backtraces --dropped 0 --live device=0", g_trace);
    REQUIRE_OK(dbg_restart(NULL));
}

/* Every kind is traced at its address with its backtrace, and each free pairs with its alloc:
 * VMM memory as its mappings (one unmap may end several; physical memory has no address),
 * a growable buffer as its extents (an empty extent of the fallback holds nothing and is
 * not traced), pool blocks and plain allocations.  The statistics still count VMM physical
 * memory from gpumem_mem_create to gpumem_mem_release. */
static void test_trace_every_kind_at_its_address(void)
{
    set_up();
    char var[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", g_trace);
    const char *env[] = {var, "GPUMEM_BACKTRACE=1", NULL};
    REQUIRE_OK(dbg_restart(env));
    const gpumem_device_info_t info = tst_info(0);
    char expect[1024] = "";
    int len = 0;
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    CHECK_OK(gpumem_free(dev));
    len += snprintf(expect + len, sizeof expect - (size_t)len, " --kind device --memory %p=device", dev);
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        size_t g = 0;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        gpumem_mem_handle_t first = 0, second = 0;
        char *va = NULL;
        const gpumem_stats_t before = tst_stats();
        REQUIRE_OK(gpumem_mem_create(&first, g, &props));
        REQUIRE_OK(gpumem_mem_create(&second, 2 * g, &props));
        const gpumem_stats_t created = tst_stats();
        CHECK(created.current_bytes[GPUMEM_KIND_VIRTUAL] == before.current_bytes[GPUMEM_KIND_VIRTUAL] + 3 * g);
        REQUIRE_OK(gpumem_mem_address_reserve((void **)&va, 4 * g, 0, NULL));
        REQUIRE_OK(gpumem_mem_map(va, g, 0, first));
        REQUIRE_OK(gpumem_mem_map(va + g, 2 * g, 0, second));
        CHECK_OK(gpumem_mem_release(first)); /* the mapping keeps its memory */
        CHECK_OK(gpumem_mem_unmap(va, 3 * g));
        CHECK_OK(gpumem_mem_release(second));
        CHECK_OK(gpumem_mem_address_free(va, 4 * g));
        const gpumem_stats_t after = tst_stats();
        CHECK(after.current_bytes[GPUMEM_KIND_VIRTUAL] == before.current_bytes[GPUMEM_KIND_VIRTUAL]);
        len += snprintf(expect + len, sizeof expect - (size_t)len,
                        " --kind virtual --memory %p=device --memory %p=device", (void *)va, (void *)(va + g));
    }
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        gpumem_buffer_t buffer = NULL;
        void *data = NULL;
        REQUIRE_OK(gpumem_buffer_create(&buffer, 5000, 1 << 20, 0));
        REQUIRE_OK(gpumem_buffer_data(buffer, &data));
        CHECK_OK(gpumem_buffer_resize(buffer, 0));
        CHECK_OK(gpumem_buffer_resize(buffer, 70000));
        CHECK_OK(gpumem_buffer_destroy(buffer));
        len += snprintf(expect + len, sizeof expect - (size_t)len, " --kind buffer --memory %p=device", data);
    }
    if (info.memory_pools == GPUMEM_SUPPORT_NATIVE) {
        void *block = NULL;
        REQUIRE_OK(gpumem_malloc_async(&block, 3000, NULL));
        CHECK_OK(gpumem_free_async(block, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        len += snprintf(expect + len, sizeof expect - (size_t)len, " --kind stream_ordered --memory %p=device", block);
    }
    REQUIRE_OK(gpumem_finalize());
    CHECK_JSON("trace '%s' --backtraces --dropped 0 --live device=0%s", g_trace, expect);
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_no_trace_without_the_variable(void)
{
    set_up();
    REQUIRE_OK(dbg_restart(NULL));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    CHECK(!dbg_exists(g_trace));
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_unwritable_trace_path(void)
{
    /* A trace that cannot be written is a warning at finalize, never a failure. */
    const char *env[] = {"GPUMEM_TRACE=/nonexistent-gpumem-dir/trace.json", "GPUMEM_LOG=error", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    CHECK_OK(gpumem_finalize());
    CHECK(!dbg_exists("/nonexistent-gpumem-dir/trace.json"));
    unsetenv("GPUMEM_LOG");
    REQUIRE_OK(dbg_restart(NULL));
}

/* %p is the process id and %r the MPI rank that the launcher set. */
static void test_trace_path_names_process_and_rank(void)
{
    set_up();
    char var[PATH_MAX + 64], want[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s/t-%%p-r%%r.json", g_dir);
    snprintf(want, sizeof want, "%s/t-%ld-r3.json", g_dir, (long)getpid());
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    const char *env[] = {var, NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    unsetenv("OMPI_COMM_WORLD_RANK");
    CHECKF(file_size(want) > 0, "%s not written", want);
    CHECK_JSON("trace '%s' --dropped 0", want);
    unlink(want);
    REQUIRE_OK(dbg_restart(NULL));
}

/* While another process holds the path (as every process tracing to it does until it
 * exits), this one writes the path with its pid appended, and leaves the other's file alone. */
static void test_trace_path_held_by_another_process(void)
{
    set_up();
    char shared[PATH_MAX + 64], mine[PATH_MAX + 64], var[PATH_MAX + 96];
    snprintf(shared, sizeof shared, "%s/shared.json", g_dir);
    snprintf(mine, sizeof mine, "%s/shared.%ld.json", g_dir, (long)getpid());
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", shared);
    int ready[2], done[2];
    REQUIRE(pipe(ready) == 0 && pipe(done) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) { /* the other process: holds the file as gpumem's claim does, writes nothing */
        int fd = open(shared, O_WRONLY | O_CREAT, 0666);
        char c = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    char c = 0;
    REQUIRE(read(ready[0], &c, 1) == 1 && c == 'y');
    const char *env[] = {var, "GPUMEM_LOG=error", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    CHECK(write(done[1], "x", 1) == 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
    CHECK(file_size(shared) == 0);
    CHECKF(file_size(mine) > 0, "%s not written", mine);
    CHECK_JSON("trace '%s' --dropped 0", mine);
    unlink(mine);
    unlink(shared);
    unsetenv("GPUMEM_LOG");
    REQUIRE_OK(dbg_restart(NULL));
}

/* What is not a regular file (/dev/null, a FIFO) is written as it is, never given a pid: a
 * second process tracing to /dev/null, which another holds, does not make /dev/null.PID. */
static void test_trace_to_a_device(void)
{
    char beside[64];
    snprintf(beside, sizeof beside, "/dev/null.%ld", (long)getpid());
    int ready[2], done[2];
    REQUIRE(pipe(ready) == 0 && pipe(done) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int fd = open("/dev/null", O_WRONLY);
        char c = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    char c = 0;
    REQUIRE(read(ready[0], &c, 1) == 1);
    const char *env[] = {"GPUMEM_TRACE=/dev/null", NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    CHECK(write(done[1], "x", 1) == 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
    CHECKF(!dbg_exists(beside), "%s was made", beside);
    unlink(beside);
    REQUIRE_OK(dbg_restart(NULL));
}

/* A relative path is taken from the directory current at init: the trace lands there even
 * if the program has moved elsewhere by the time it is written. */
static void test_trace_relative_path(void)
{
    set_up();
    char here[PATH_MAX], want[PATH_MAX + 32];
    REQUIRE(getcwd(here, sizeof here) != NULL);
    snprintf(want, sizeof want, "%s/rel.json", g_dir);
    REQUIRE(chdir(g_dir) == 0);
    const char *env[] = {"GPUMEM_TRACE=rel.json", NULL};
    REQUIRE_OK(dbg_restart(env));
    REQUIRE(chdir("/") == 0);
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    REQUIRE(chdir(here) == 0);
    CHECKF(file_size(want) > 0, "%s not written", want);
    CHECK(!dbg_exists("/rel.json"));
    unlink(want);
    unlink("/rel.json");
    REQUIRE_OK(dbg_restart(NULL));
}

static void test_kind_names(void)
{
    static const char *const names[GPUMEM_KIND_COUNT] = {"unknown", "device",         "host_pinned", "host_registered",
                                                         "managed", "stream_ordered", "virtual",     "buffer"};
    for (int32_t k = 0; k < GPUMEM_KIND_COUNT; ++k)
        CHECKF(strcmp(gpumem_kind_name(k), names[k]) == 0, "kind %d is \"%s\"", (int)k, gpumem_kind_name(k));
    CHECK(strcmp(gpumem_kind_name(-1), "unknown") == 0);
    CHECK(strcmp(gpumem_kind_name(GPUMEM_KIND_COUNT), "unknown") == 0);
    CHECK(strcmp(gpumem_kind_name(INT32_MAX), "unknown") == 0);
}

/* A FIFO that nobody reads: finalize does not wait for a reader that never comes (it warns and
 * writes nothing); a snapshot there is INVALID_VALUE naming the FIFO.  With a reader, the trace
 * goes through it whole. */
static void test_trace_to_a_fifo(void)
{
    set_up();
    char fifo[PATH_MAX + 32];
    snprintf(fifo, sizeof fifo, "%s/trace.fifo", g_dir);
    unlink(fifo);
    REQUIRE(mkfifo(fifo, 0600) == 0);
    char var[PATH_MAX + 64];
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", fifo);
    const char *env[] = {var, NULL};
    REQUIRE_OK(dbg_restart(env));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_snapshot_write_json(snap, fifo));
    CHECKF(strstr(gpumem_last_error_message(), "reads the FIFO") != NULL, "%s", gpumem_last_error_message());
    CHECK_OK(gpumem_snapshot_release(snap));
    CHECK_OK(gpumem_finalize()); /* returns: the test's timeout would end a wait */

    /* A reader that is there: it gets the whole trace. */
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int fd = open(fifo, O_RDONLY | O_NONBLOCK);
        if (fd < 0 || write(ready[1], "y", 1) != 1)
            _exit(2);
        int flags = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        char buf[4096];
        size_t total = 0;
        int saw_header = 0;
        for (;;) {
            ssize_t k = read(fd, buf, sizeof buf);
            if (k > 0) {
                if (total == 0 && k > 20 && memcmp(buf, "{\"displayTimeUnit\"", 18) == 0)
                    saw_header = 1;
                total += (size_t)k;
                continue;
            }
            if (k == 0 && total > 0)
                break;
            if (k == 0) { /* no writer yet */
                usleep(1000);
                continue;
            }
            _exit(3);
        }
        _exit(saw_header ? 0 : 4);
    }
    char c = 0;
    REQUIRE(read(ready[0], &c, 1) == 1 && c == 'y');
    REQUIRE_OK(dbg_restart(env));
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    REQUIRE_OK(gpumem_free(p));
    REQUIRE_OK(gpumem_finalize());
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader ended with status 0x%x", status);
    close(ready[0]), close(ready[1]);
    unlink(fifo);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_kind_names),
        TEST(test_trace_written_at_finalize),
        TEST(test_trace_names_pool_memory),
        TEST(test_trace_keeps_the_newest),
        TEST(test_trace_with_backtraces),
        TEST(test_trace_every_kind_at_its_address),
        TEST(test_no_trace_without_the_variable),
        TEST(test_unwritable_trace_path),
        TEST(test_trace_path_names_process_and_rank),
        TEST(test_trace_path_held_by_another_process),
        TEST(test_trace_to_a_device),
        TEST(test_trace_to_a_fifo),
        TEST(test_trace_relative_path),
    };
    int rc = tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
    dbg_cleanup(g_dir, g_files);
    return rc;
}
