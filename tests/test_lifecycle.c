/* The lifecycle: gpumem_finalize while other threads are inside gpumem calls,
 * finalize from a trace callback, repeated init/finalize, fork after init.
 * The outcomes are those of docs/semantics.md (Init and backends).
 * SPDX-License-Identifier: MIT */
#include "harness.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Seconds since the first call.  Loops stop at their count or after a time
 * budget, whichever comes first: a real GPU's init/finalize (a primary context
 * retained and released) takes a hundred times longer than the host's. */
static double elapsed_s(void)
{
    static struct timespec t0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!t0.tv_sec && !t0.tv_nsec)
        t0 = now;
    return (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        ++n;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------------ */
/* finalize and re-init while other threads call gpumem                      */
/* ------------------------------------------------------------------------ */

#define WORKERS 6
static atomic_int g_stop;
static atomic_long g_calls;
/* Which runtime a pointer came from.  A pointer from before a finalize is dead,
 * but its address may be handed out again by the next runtime: freeing it then
 * would free another thread's block, as with free().  So a worker frees only
 * what its current runtime made; finalize and the count change together under
 * the write lock, frees run under the read lock. */
static pthread_rwlock_t g_runtime_lock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_long g_runtimes;

/* Free `ptr` (made while g_runtimes was `made_in`) if its runtime still lives. */
static void free_if_current(void *ptr, long made_in, int async)
{
    pthread_rwlock_rdlock(&g_runtime_lock);
    if (ptr && atomic_load(&g_runtimes) == made_in)
        CHECK_OK(async ? gpumem_free_async(ptr, NULL) : gpumem_free(ptr));
    pthread_rwlock_unlock(&g_runtime_lock);
}

/* A call racing finalize either finished on the old runtime or ran on a fresh
 * one; what the old runtime made is then dead.  Memory is never touched here:
 * it may be gone by the time a worker would write it. */
static void *churn(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        void *a = NULL, *b = NULL;
        gpumem_stream_t s = NULL;
        long made_in = atomic_load(&g_runtimes);
        gpumem_status_t st = gpumem_malloc_async(&a, 256, NULL);
        CHECK_ONE_OF(st, GPUMEM_SUCCESS, GPUMEM_ERROR_NOT_SUPPORTED);
        free_if_current(a, made_in, 1);
        made_in = atomic_load(&g_runtimes);
        CHECK_OK(gpumem_malloc(&b, 4096));
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        CHECK_OK(gpumem_pointer_get_info(b, &pi));
        free_if_current(b, made_in, 0);
        CHECK_OK(gpumem_stream_create(&s));
        CHECK_ONE_OF(gpumem_stream_synchronize(s), GPUMEM_SUCCESS, GPUMEM_ERROR_INVALID_HANDLE);
        CHECK_ONE_OF(gpumem_stream_destroy(s), GPUMEM_SUCCESS, GPUMEM_ERROR_INVALID_HANDLE);
        gpumem_stats_t stats = GPUMEM_STATS_INIT;
        CHECK_OK(gpumem_get_stats(&stats));
        int32_t count = 0;
        CHECK_OK(gpumem_device_count(&count));
        atomic_fetch_add(&g_calls, 1);
    }
    return NULL;
}

static void test_finalize_while_threads_call(void)
{
    pthread_t t[WORKERS];
    atomic_store(&g_stop, 0);
    atomic_store(&g_calls, 0);
    for (int i = 0; i < WORKERS; ++i)
        REQUIRE(pthread_create(&t[i], NULL, churn, NULL) == 0);
    double start = elapsed_s();
    int rounds = 0;
    for (int round = 0; round < 60 && (round < 10 || elapsed_s() - start < 8.0); ++round, ++rounds) {
        sleep_us(500 + (round % 7) * 300);
        pthread_rwlock_wrlock(&g_runtime_lock);
        CHECK_OK(gpumem_finalize());
        atomic_fetch_add(&g_runtimes, 1);
        pthread_rwlock_unlock(&g_runtime_lock);
        if (round % 3 == 0)
            CHECK_OK(gpumem_init(GPUMEM_BACKEND_AUTO)); /* else the workers' next call initialises */
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < WORKERS; ++i)
        pthread_join(t[i], NULL);
    NOTE("%ld worker rounds across %d finalizations", atomic_load(&g_calls), rounds);
    CHECK_OK(gpumem_finalize());
}

/* finalize waits for a call in flight on another thread, and a call nested in
 * it (from its trace callback) still works on the runtime it began with. */
static atomic_int g_in_callback, g_callback_done, g_nested_status, g_nested_kind;
static void *g_slow_ptr;

static void slow_trace(const gpumem_trace_event_t *ev, void *user)
{
    (void)user;
    if (ev->op != GPUMEM_TRACE_ALLOC || ev->ptr != g_slow_ptr)
        return;
    atomic_store(&g_in_callback, 1);
    sleep_us(150 * 1000);
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    atomic_store(&g_nested_status, gpumem_pointer_get_info(ev->ptr, &pi));
    atomic_store(&g_nested_kind, pi.kind);
    atomic_store(&g_callback_done, 1);
}

/* Set the pointer before the callback can see it: a marker the callback knows. */
static void trace_mark(const gpumem_trace_event_t *ev, void *user)
{
    (void)user;
    if (ev->op == GPUMEM_TRACE_ALLOC && ev->kind == GPUMEM_KIND_DEVICE && ev->bytes == 12345) {
        g_slow_ptr = ev->ptr;
        slow_trace(ev, user);
    }
}

static void *slow_caller(void *arg)
{
    (void)arg;
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 12345));
    return NULL;
}

static void test_finalize_waits_for_calls(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    atomic_store(&g_in_callback, 0);
    atomic_store(&g_callback_done, 0);
    REQUIRE_OK(gpumem_set_trace_callback(trace_mark, NULL));
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, slow_caller, NULL) == 0);
    while (!atomic_load(&g_in_callback))
        sleep_us(100);
    CHECK_OK(gpumem_finalize()); /* releases the allocation: leaks are logged */
    CHECKF(atomic_load(&g_callback_done) == 1, "gpumem_finalize returned while another thread was inside gpumem_malloc");
    pthread_join(t, NULL);
    CHECK_OK(atomic_load(&g_nested_status));
    CHECK(atomic_load(&g_nested_kind) == GPUMEM_KIND_DEVICE);
    CHECK_OK(gpumem_set_trace_callback(NULL, NULL));
    CHECK_OK(gpumem_finalize());
}

/* ------------------------------------------------------------------------ */
/* finalize (and init) from a trace callback                                 */
/* ------------------------------------------------------------------------ */

static atomic_int g_cb_finalize, g_cb_init, g_cb_stats, g_cb_calls;
static char g_cb_message[512];

static void finalize_trace(const gpumem_trace_event_t *ev, void *user)
{
    (void)ev;
    (void)user;
    if (atomic_fetch_add(&g_cb_calls, 1) != 0)
        return;
    atomic_store(&g_cb_finalize, gpumem_finalize());
    snprintf(g_cb_message, sizeof g_cb_message, "%s", gpumem_last_error_message());
    atomic_store(&g_cb_init, gpumem_init(GPUMEM_BACKEND_AUTO));
    gpumem_stats_t st = GPUMEM_STATS_INIT;
    atomic_store(&g_cb_stats, gpumem_get_stats(&st));
}

static void test_finalize_from_trace_callback(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    atomic_store(&g_cb_calls, 0);
    REQUIRE_OK(gpumem_set_trace_callback(finalize_trace, NULL));
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 4096));
    CHECK(atomic_load(&g_cb_calls) >= 1);
    CHECK_STATUS(GPUMEM_ERROR_BUSY, atomic_load(&g_cb_finalize));
    CHECKF(tst_contains(g_cb_message, "inside"), "the message does not say why: \"%s\"", g_cb_message);
    CHECK_OK(atomic_load(&g_cb_init));
    CHECK_OK(atomic_load(&g_cb_stats));
    /* The call that ran the callback is whole, and gpumem is still usable. */
    CHECK_OK(gpumem_free(p));
    CHECK_OK(gpumem_set_trace_callback(NULL, NULL));
    CHECK_OK(gpumem_finalize());
}

/* ------------------------------------------------------------------------ */
/* calls after finalize, and repeated init/finalize                          */
/* ------------------------------------------------------------------------ */

static void test_reinit_cycles_hold_nothing(void)
{
    int fds = -1, cycles = 0;
    double start = elapsed_s();
    for (int cycle = 0; cycle < 150 && (cycle < 20 || elapsed_s() - start < 8.0); ++cycle, ++cycles) {
        REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
        gpumem_device_info_t info = tst_info(0);
        void *dev = NULL, *pinned = NULL, *async = NULL;
        gpumem_stream_t s = NULL;
        gpumem_pool_t pool = NULL;
        REQUIRE_OK(gpumem_malloc(&dev, 1 << 16));
        REQUIRE_OK(gpumem_host_alloc(&pinned, 1 << 16, 0));
        REQUIRE_OK(gpumem_stream_create(&s));
        if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
            gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
            props.handle_types = info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD;
            REQUIRE_OK(gpumem_pool_create(&pool, &props));
            REQUIRE_OK(gpumem_malloc_from_pool_async(&async, 1 << 16, pool, s));
        }
        if (cycle % 2) { /* half the cycles leave everything for finalize */
            CHECK_OK(gpumem_free(dev));
            CHECK_OK(gpumem_host_free(pinned));
            if (async)
                CHECK_OK(gpumem_free_async(async, s));
            CHECK_OK(gpumem_stream_destroy(s));
            if (pool)
                CHECK_OK(gpumem_pool_destroy(pool));
        }
        REQUIRE_OK(gpumem_finalize());
        /* Calls after finalize: what came before is dead, never a crash. */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(dev));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(s));
        if (pool)
            CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_pool_destroy(pool));
        gpumem_stats_t st = tst_stats();
        for (int k = 0; k < GPUMEM_KIND_COUNT; ++k)
            CHECK(st.current_bytes[k] == 0);
        REQUIRE_OK(gpumem_finalize());
        if (cycle == 10)
            fds = open_fds();
    }
    CHECKF(open_fds() == fds, "open descriptors grew from %d to %d over %d init/finalize cycles", fds, open_fds(),
           cycles - 11);
}

/* ------------------------------------------------------------------------ */
/* fork after init (host backend: a GPU runtime forbids the child anyway)    */
/* ------------------------------------------------------------------------ */

static int wait_child(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return 0;
    if (!WIFEXITED(status)) {
        fprintf(stderr, "child killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
        return 0;
    }
    return WEXITSTATUS(status) == 0;
}

#define SKIP_UNLESS_HOST()                                                                  \
    do {                                                                                    \
        if (tst_backend() != GPUMEM_BACKEND_HOST)                                           \
            SKIP("fork tests run on the host backend (a GPU runtime is unusable in a child)"); \
    } while (0)

static void test_fork_child_starts_afresh(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    SKIP_UNLESS_HOST();
    gpumem_device_info_t info = tst_info(0);
    void *dev = NULL, *async = NULL;
    gpumem_stream_t s = NULL;
    gpumem_pool_t pool = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_memset(dev, 0x5a, 4096)); /* not memset: strict mode's device memory faults */
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.handle_types = info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD;
        REQUIRE_OK(gpumem_pool_create(&pool, &props));
        REQUIRE_OK(gpumem_malloc_from_pool_async(&async, 4096, pool, s));
        REQUIRE_OK(gpumem_memset_async(async, 0x33, 4096, s));
        REQUIRE_OK(gpumem_stream_synchronize(s));
    }

    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        atomic_store(&tst_failures_, 0);
        /* Until gpumem_finalize, every call but init/finalize and the queries fails. */
        void *p = NULL;
        CHECK_STATUS(GPUMEM_ERROR_BACKEND_UNAVAILABLE, gpumem_malloc(&p, 64));
        CHECKF(tst_contains(gpumem_last_error_message(), "fork"), "the message does not say why: \"%s\"",
               gpumem_last_error_message());
        CHECK_STATUS(GPUMEM_ERROR_BACKEND_UNAVAILABLE, gpumem_free(dev));
        CHECK_STATUS(GPUMEM_ERROR_BACKEND_UNAVAILABLE, gpumem_stream_synchronize(s));
        if (pool) {
            CHECK_STATUS(GPUMEM_ERROR_BACKEND_UNAVAILABLE, gpumem_malloc_from_pool_async(&p, 4096, pool, s));
            CHECK_STATUS(GPUMEM_ERROR_BACKEND_UNAVAILABLE, gpumem_free_async(async, s));
        }
        CHECK_STATUS(GPUMEM_ERROR_BUSY, gpumem_init(GPUMEM_BACKEND_AUTO));
        CHECK(gpumem_version() == GPUMEM_VERSION);
        CHECK(strcmp(gpumem_status_string(GPUMEM_SUCCESS), "GPUMEM_SUCCESS") == 0);
        /* finalize forgets the parent's state (releasing nothing of it)... */
        CHECK_OK(gpumem_finalize());
        /* ...and what the parent made is dead here. */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(s));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(s));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(dev));
        if (pool) {
            uint64_t v = 0;
            CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE,
                         gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v));
            CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_pool_destroy(pool));
            CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free_async(async, NULL));
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(async, &pi));
            CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
        }
        /* A fresh start: the child's own memory, pools and streams. */
        CHECK_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
        gpumem_stream_t cs = NULL;
        CHECK_OK(gpumem_stream_create(&cs));
        CHECK_OK(gpumem_malloc(&p, 4096));
        CHECK_OK(gpumem_memset(p, 0x11, 4096));
        if (pool) {
            gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
            props.handle_types = info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD;
            gpumem_pool_t cp = NULL;
            void *q = NULL;
            CHECK_OK(gpumem_pool_create(&cp, &props));
            CHECK_OK(gpumem_malloc_from_pool_async(&q, 4096, cp, cs));
            CHECK_OK(gpumem_memset_async(q, 0x77, 4096, cs)); /* must not reach the parent's block */
            CHECK_OK(gpumem_stream_synchronize(cs));
            CHECK_OK(gpumem_free_async(q, cs));
            CHECK_OK(gpumem_pool_destroy(cp));
        }
        CHECK_OK(gpumem_free(p));
        CHECK_OK(gpumem_stream_destroy(cs));
        CHECK_OK(gpumem_finalize());
        fflush(NULL);
        _exit(atomic_load(&tst_failures_) ? 1 : 0);
    }
    CHECK(wait_child(pid));

    /* The parent is unaffected (read through copies: strict mode's device memory faults). */
    static unsigned char back[4096];
    CHECK_OK(gpumem_memcpy(back, dev, sizeof back));
    CHECK(tst_verify_byte(back, sizeof back, 0x5a) == sizeof back);
    if (async) {
        CHECK_OK(gpumem_memcpy(back, async, sizeof back));
        CHECK(tst_verify_byte(back, sizeof back, 0x33) == sizeof back);
        void *again = NULL;
        CHECK_OK(gpumem_malloc_from_pool_async(&again, 4096, pool, s));
        CHECK_OK(gpumem_free_async(again, s));
        CHECK_OK(gpumem_free_async(async, s));
        CHECK_OK(gpumem_pool_destroy(pool));
    }
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_finalize());
}

/* A child that calls gpumem_finalize at once; and a fork before init. */
static void test_fork_finalize_in_child_only(void)
{
    /* On a GPU the vendor's driver, once initialised in the parent (earlier
     * cases did), is unusable in any child, whatever gpumem did. */
    SKIP_UNLESS_HOST();
    REQUIRE_OK(gpumem_finalize());
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) { /* nothing was inherited: gpumem just works */
        void *p = NULL;
        int ok = gpumem_malloc(&p, 64) == GPUMEM_SUCCESS && gpumem_free(p) == GPUMEM_SUCCESS &&
                 gpumem_finalize() == GPUMEM_SUCCESS;
        _exit(ok ? 0 : 1);
    }
    CHECK(wait_child(pid));

    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    SKIP_UNLESS_HOST();
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int ok = gpumem_finalize() == GPUMEM_SUCCESS && gpumem_finalize() == GPUMEM_SUCCESS;
        void *p = NULL;
        ok = ok && gpumem_malloc(&p, 64) == GPUMEM_SUCCESS && gpumem_free(p) == GPUMEM_SUCCESS;
        _exit(ok ? 0 : 1);
    }
    CHECK(wait_child(pid));
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 64));
    CHECK_OK(gpumem_free(p));
    CHECK_OK(gpumem_finalize());
}

/* fork while other threads are inside gpumem calls: the child inherits no
 * half-made change and no lock held. */
static void test_fork_while_threads_call(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    SKIP_UNLESS_HOST();
    pthread_t t[4];
    atomic_store(&g_stop, 0);
    for (int i = 0; i < 4; ++i)
        REQUIRE(pthread_create(&t[i], NULL, churn, NULL) == 0);
    for (int round = 0; round < 20; ++round) {
        sleep_us(1000);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            void *p = NULL;
            int ok = gpumem_malloc(&p, 64) == GPUMEM_ERROR_BACKEND_UNAVAILABLE && gpumem_finalize() == GPUMEM_SUCCESS &&
                     gpumem_malloc(&p, 64) == GPUMEM_SUCCESS && gpumem_free(p) == GPUMEM_SUCCESS &&
                     gpumem_finalize() == GPUMEM_SUCCESS;
            _exit(ok ? 0 : 1);
        }
        CHECKF(wait_child(pid), "child %d failed", round);
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 4; ++i)
        pthread_join(t[i], NULL);
    CHECK_OK(gpumem_finalize());
}

/* Memory still live at gpumem_finalize is released by it: a later free says so, not that the
 * caller gave it back. */
static void test_free_after_finalize_names_finalize(void)
{
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    gpumem_finalize();
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
    const char *m = gpumem_last_error_message();
    CHECKF(strstr(m, "gpumem_finalize") != NULL && strstr(m, "given back with") == NULL, "%s", m);

    /* A stream-ordered block of gpumem's own pool: its chunk went back at finalize, not by a free. */
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    if (tst_info(0).memory_pools == GPUMEM_SUPPORT_NONE)
        return;
    REQUIRE_OK(gpumem_malloc_async(&p, 4096, NULL));
    gpumem_finalize();
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
    m = gpumem_last_error_message();
    CHECKF(strstr(m, "freed with") == NULL, "%s", m);
    CHECKF(strstr(m, "still held at gpumem_finalize") != NULL, "%s", m);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_free_after_finalize_names_finalize),
        TEST(test_finalize_while_threads_call), TEST(test_finalize_waits_for_calls),
        TEST(test_finalize_from_trace_callback), TEST(test_reinit_cycles_hold_nothing),
        TEST(test_fork_child_starts_afresh),     TEST(test_fork_finalize_in_child_only),
        TEST(test_fork_while_threads_call),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
}
