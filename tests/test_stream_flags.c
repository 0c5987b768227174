/* Streams and events as programs create them (0.5): stream flags and priorities and their
 * queries, event flags, events shared between processes, host functions in stream order (and
 * under capture), from many threads.
 *
 * The IPC case's child is this executable again (fork + exec of /proc/self/exe with
 * "--child <socket>"), so each process initialises gpumem on its own.
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include "graph_driver.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static char *g_self;

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */
/* ------------------------------------------------------------------------ */

static void test_stream_flags(void)
{
    gpumem_stream_t plain = NULL, nb = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&plain, GPUMEM_STREAM_DEFAULT, 0));
    REQUIRE_OK(gpumem_stream_create_with_flags(&nb, GPUMEM_STREAM_NON_BLOCKING, 0));
    uint32_t flags = 77;
    CHECK_OK(gpumem_stream_get_flags(&flags, plain));
    CHECK(flags == GPUMEM_STREAM_DEFAULT);
    CHECK_OK(gpumem_stream_get_flags(&flags, nb));
    CHECK(flags == GPUMEM_STREAM_NON_BLOCKING);
    int32_t device = -7, priority = 77;
    CHECK_OK(gpumem_stream_get_device(&device, nb));
    CHECK(device == 0);
    CHECK_OK(gpumem_stream_get_priority(&priority, nb));
    CHECK(priority == 0);

    /* The default stream: blocking, priority 0, the current device's. */
    CHECK_OK(gpumem_stream_get_flags(&flags, NULL));
    CHECK(flags == GPUMEM_STREAM_DEFAULT);
    CHECK_OK(gpumem_stream_get_priority(&priority, NULL));
    CHECK(priority == 0);
    CHECK_OK(gpumem_stream_get_device(&device, NULL));
    CHECK(device == 0);

    /* A stream from gpumem_stream_create is a blocking stream of priority 0. */
    gpumem_stream_t old = NULL;
    REQUIRE_OK(gpumem_stream_create(&old));
    CHECK_OK(gpumem_stream_get_flags(&flags, old));
    CHECK(flags == GPUMEM_STREAM_DEFAULT);
    CHECK_OK(gpumem_stream_get_priority(&priority, old));
    CHECK(priority == 0);

    /* Work on both kinds runs in each stream's order. */
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 4096));
    unsigned char host[4096];
    CHECK_OK(gpumem_memset_async(d, 0x5a, 4096, nb));
    CHECK_OK(gpumem_memcpy_async(host, d, 4096, nb));
    CHECK_OK(gpumem_stream_synchronize(nb));
    CHECK(tst_verify_byte(host, 4096, 0x5a) == 4096);
    CHECK_OK(gpumem_memset_async(d, 0x21, 4096, plain));
    CHECK_OK(gpumem_stream_synchronize(plain));
    CHECK_OK(gpumem_memcpy(host, d, 4096));
    CHECK(tst_verify_byte(host, 4096, 0x21) == 4096);
    CHECK_OK(gpumem_free(d));

    /* Bad arguments. */
    gpumem_stream_t s = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_create_with_flags(NULL, 0, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_create_with_flags(&s, 0x2, 0));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_STREAM_NON_BLOCKING"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_get_flags(NULL, nb));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_get_priority(NULL, nb));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_get_device(NULL, nb));

    CHECK_OK(gpumem_stream_destroy(old));
    CHECK_OK(gpumem_stream_destroy(plain));
    CHECK_OK(gpumem_stream_destroy(nb));
    /* Dead handles. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_get_flags(&flags, nb));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_get_priority(&priority, nb));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_get_device(&device, nb));
}

static void test_stream_priorities(void)
{
    gpumem_device_info_t info = tst_info(0);
    int32_t least = 99, greatest = 99;
    REQUIRE_OK(gpumem_device_get_stream_priority_range(&least, &greatest, 0));
    CHECK_OK(gpumem_device_get_stream_priority_range(NULL, NULL, 0)); /* either may be NULL */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_get_stream_priority_range(&least, &greatest, 1000));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_device_get_stream_priority_range(&least, &greatest, -1));
    REQUIRE_OK(gpumem_device_get_stream_priority_range(&least, &greatest, 0));
    CHECKF(least >= greatest, "least %d, greatest %d: lower numbers are more urgent", least, greatest);
    CHECK(info.stream_priorities >= GPUMEM_SUPPORT_NONE && info.stream_priorities <= GPUMEM_SUPPORT_NATIVE);
    if (info.stream_priorities == GPUMEM_SUPPORT_NONE)
        CHECK(least == 0 && greatest == 0);
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(info.stream_priorities == GPUMEM_SUPPORT_EMULATED);

    /* Each priority of the range, and beyond it (clamped, as the runtimes do). */
    const int32_t asked[] = {least, greatest, (least + greatest) / 2, greatest - 10, least + 10, 0};
    for (size_t i = 0; i < TST_COUNT(asked); ++i) {
        gpumem_stream_t s = NULL;
        REQUIRE_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, asked[i]));
        int32_t got = 99;
        CHECK_OK(gpumem_stream_get_priority(&got, s));
        CHECKF(got >= greatest && got <= least, "asked %d, got %d, range [%d, %d]", asked[i], got, greatest, least);
        if (asked[i] >= greatest && asked[i] <= least)
            CHECKF(got == asked[i], "asked %d within [%d, %d], got %d", asked[i], greatest, least, got);
        uint32_t flags = 0;
        CHECK_OK(gpumem_stream_get_flags(&flags, s));
        CHECK(flags == GPUMEM_STREAM_NON_BLOCKING);
        CHECK_OK(gpumem_stream_destroy(s));
    }
}

/* A wrapped native stream is asked of the runtime. */
static void test_wrapped_stream_queries(void)
{
    gpumem_stream_t nb = NULL, wrapper = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&nb, GPUMEM_STREAM_NON_BLOCKING, 0));
    REQUIRE_OK(gpumem_stream_wrap(gpumem_stream_native(nb), &wrapper));
    uint32_t flags = 0;
    int32_t device = -1;
    CHECK_OK(gpumem_stream_get_flags(&flags, wrapper));
    gpumem_device_info_t info = tst_info(0);
    /* Where the runtime can say, a wrapped stream's flags are the runtime's. */
    if (info.stream_priorities != GPUMEM_SUPPORT_NONE)
        CHECK(flags == GPUMEM_STREAM_NON_BLOCKING);
    CHECK_OK(gpumem_stream_get_device(&device, wrapper));
    CHECK(device == 0);
    CHECK_OK(gpumem_stream_destroy(wrapper));
    CHECK_OK(gpumem_stream_destroy(nb));
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static void test_event_flags(void)
{
    gpumem_event_t plain = NULL, blocking = NULL, untimed = NULL, untimed2 = NULL;
    REQUIRE_OK(gpumem_event_create_with_flags(&plain, GPUMEM_EVENT_DEFAULT));
    REQUIRE_OK(gpumem_event_create_with_flags(&blocking, GPUMEM_EVENT_BLOCKING_SYNC));
    REQUIRE_OK(gpumem_event_create_with_flags(&untimed, GPUMEM_EVENT_DISABLE_TIMING));
    REQUIRE_OK(gpumem_event_create_with_flags(&untimed2, GPUMEM_EVENT_DISABLE_TIMING | GPUMEM_EVENT_BLOCKING_SYNC));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, 0));
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 1 << 16));

    CHECK_OK(gpumem_event_record(plain, s));
    CHECK_OK(gpumem_memset_async(d, 1, 1 << 16, s));
    CHECK_OK(gpumem_event_record(blocking, s));
    CHECK_OK(gpumem_event_record(untimed, s));
    CHECK_OK(gpumem_event_record(untimed2, s));
    CHECK_OK(gpumem_event_synchronize(blocking));
    CHECK_OK(gpumem_event_synchronize(untimed));
    CHECK_OK(gpumem_event_query(untimed));
    CHECK_ONE_OF(gpumem_event_query(untimed2), GPUMEM_SUCCESS, GPUMEM_ERROR_BUSY);
    CHECK_OK(gpumem_event_synchronize(untimed2));
    CHECK_OK(gpumem_event_query(untimed2));
    CHECK_OK(gpumem_stream_wait_event(NULL, untimed));
    float ms = -1;
    CHECK_OK(gpumem_event_elapsed_ms(&ms, plain, blocking));
    CHECK(ms >= 0);
    /* A timing-free event has no timestamps: INVALID_VALUE naming the flag, either side. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_elapsed_ms(&ms, plain, untimed));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_EVENT_DISABLE_TIMING"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_elapsed_ms(&ms, untimed, plain));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_EVENT_DISABLE_TIMING"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_elapsed_ms(&ms, untimed, untimed2));

    /* Bad flags. */
    gpumem_event_t e = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_create_with_flags(NULL, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_create_with_flags(&e, 0x8));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_create_with_flags(&e, GPUMEM_EVENT_INTERPROCESS));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_EVENT_DISABLE_TIMING"));

    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_event_destroy(plain));
    CHECK_OK(gpumem_event_destroy(blocking));
    CHECK_OK(gpumem_event_destroy(untimed));
    CHECK_OK(gpumem_event_destroy(untimed2));
}

/* ------------------------------------------------------------------------ */
/* Events shared between processes                                           */
/* ------------------------------------------------------------------------ */

/* The child: opens the parent's event, waits for it, records it after work of its own, and says so. */
static int child_main(int sock)
{
    gpumem_ipc_event_handle_t h;
    if (!tst_read_all(sock, &h, sizeof h))
        return 2;
    gpumem_event_t e = NULL;
    if (gpumem_ipc_open_event_handle(&e, &h) != GPUMEM_SUCCESS) {
        fprintf(stderr, "child: gpumem_ipc_open_event_handle: %s\n", gpumem_last_error_message());
        return 1;
    }
    CHECK_OK(gpumem_event_synchronize(e));
    CHECK_OK(gpumem_event_query(e));
    gpumem_stream_t s = NULL;
    CHECK_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, 0));
    CHECK_OK(gpumem_stream_wait_event(s, e));
    void *d = NULL;
    CHECK_OK(gpumem_malloc(&d, 4096));
    CHECK_OK(gpumem_memset_async(d, 7, 4096, s));
    CHECK_OK(gpumem_event_record(e, s));
    CHECK_OK(gpumem_event_synchronize(e));
    float ms = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_elapsed_ms(&ms, e, e)); /* no timing */
    /* An opened event is not shared onward by this process. */
    gpumem_ipc_event_handle_t again;
    gpumem_status_t st = gpumem_ipc_get_event_handle(&again, e);
    CHECK(st != GPUMEM_SUCCESS || tst_backend() != GPUMEM_BACKEND_HOST);
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_event_destroy(e));
    char done = 'k';
    if (!tst_write_all(sock, &done, 1))
        return 2;
    return atomic_load(&tst_failures_) ? 1 : 0;
}

static void test_ipc_event_handle(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_event_t e = NULL, timed = NULL;
    if (info.ipc_events == GPUMEM_SUPPORT_NONE) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED,
                     gpumem_event_create_with_flags(&e, GPUMEM_EVENT_INTERPROCESS | GPUMEM_EVENT_DISABLE_TIMING));
        SKIP("no events shared between processes here");
    }
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(info.ipc_events == GPUMEM_SUPPORT_EMULATED);
    REQUIRE_OK(gpumem_event_create_with_flags(&e, GPUMEM_EVENT_INTERPROCESS | GPUMEM_EVENT_DISABLE_TIMING));
    REQUIRE_OK(gpumem_event_create(&timed));
    gpumem_ipc_event_handle_t h, zero;
    memset(&zero, 0, sizeof zero);
    /* Only an interprocess event is shared. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_get_event_handle(&h, timed));
    CHECK(tst_contains(gpumem_last_error_message(), "GPUMEM_EVENT_INTERPROCESS"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_get_event_handle(NULL, e));
    REQUIRE_OK(gpumem_ipc_get_event_handle(&h, e));
    /* Not opened in the process that made it; bytes that are no handle are refused. */
    gpumem_event_t opened = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_open_event_handle(&opened, &h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_open_event_handle(NULL, &h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_open_event_handle(&opened, NULL));
    if (tst_backend() == GPUMEM_BACKEND_HOST) /* (a real driver may crash on made-up bytes) */
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_open_event_handle(&opened, &zero));

    /* Work, then the record the child waits for. */
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 1 << 20));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    CHECK_OK(gpumem_memset_async(d, 3, 1 << 20, s));
    CHECK_OK(gpumem_event_record(e, s));

    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    char fdstr[16];
    snprintf(fdstr, sizeof fdstr, "%d", sv[1]);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        execl("/proc/self/exe", g_self, "--child", fdstr, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    CHECK(tst_write_all(sv[0], &h, sizeof h));
    char done = 0;
    CHECK(tst_read_all(sv[0], &done, 1) && done == 'k');
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status 0x%x", status);
    close(sv[0]);
    /* The child's record of the shared event is seen here. */
    CHECK_OK(gpumem_event_synchronize(e));
    CHECK_OK(gpumem_event_query(e));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_event_destroy(e));
    CHECK_OK(gpumem_event_destroy(timed));
}

/* ------------------------------------------------------------------------ */
/* Host functions                                                            */
/* ------------------------------------------------------------------------ */

struct host_seen {
    const unsigned char *pinned; /* what the stream's earlier copy wrote */
    size_t n;
    unsigned char want;
    unsigned char *out;  /* what the function writes for the stream's later copy */
    atomic_int calls;
    atomic_int wrong;
};

static void check_and_write(void *user)
{
    struct host_seen *h = (struct host_seen *)user;
    for (size_t i = 0; i < h->n; ++i)
        if (h->pinned[i] != h->want) {
            atomic_fetch_add(&h->wrong, 1);
            break;
        }
    memset(h->out, 0x77, h->n);
    atomic_fetch_add(&h->calls, 1);
}

static void count_call(void *user) { atomic_fetch_add((atomic_int *)user, 1); }

static gpumem_status_t g_nested_status = GPUMEM_SUCCESS;
static void calls_gpumem(void *user)
{
    (void)user;
    gpumem_stream_t s = NULL;
    g_nested_status = gpumem_stream_create(&s);
}

static void test_host_func(void)
{
    gpumem_device_info_t info = tst_info(0);
    CHECK(info.host_funcs == GPUMEM_SUPPORT_NATIVE || info.host_funcs == GPUMEM_SUPPORT_EMULATED);
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        CHECK(info.host_funcs == GPUMEM_SUPPORT_EMULATED);
    enum { N = 1 << 16 };
    gpumem_stream_t streams[2] = {NULL, NULL};
    REQUIRE_OK(gpumem_stream_create(&streams[0]));
    REQUIRE_OK(gpumem_stream_create_with_flags(&streams[1], GPUMEM_STREAM_NON_BLOCKING, 0));
    for (int k = 0; k < 3; ++k) {
        gpumem_stream_t s = k < 2 ? streams[k] : NULL;
        void *d = NULL;
        unsigned char *pinned = NULL, *out = NULL, *back = NULL;
        REQUIRE_OK(gpumem_malloc(&d, N));
        REQUIRE_OK(gpumem_host_alloc((void **)&pinned, N, 0));
        REQUIRE_OK(gpumem_host_alloc((void **)&out, N, 0));
        REQUIRE_OK(gpumem_host_alloc((void **)&back, N, 0));
        memset(pinned, 0, N);
        memset(out, 0, N);
        struct host_seen h = {pinned, N, (unsigned char)(0x40 + k), out, 0, 0};
        /* Earlier work: a fill and a copy into pinned memory, which fn checks. */
        CHECK_OK(gpumem_memset_async(d, 0x40 + k, N, s));
        CHECK_OK(gpumem_memcpy_async(pinned, d, N, s));
        CHECK_OK(gpumem_launch_host_func(s, check_and_write, &h));
        /* Later work: copies what fn wrote. */
        CHECK_OK(gpumem_memcpy_async(d, out, N, s));
        CHECK_OK(gpumem_memcpy_async(back, d, N, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(atomic_load(&h.calls) == 1);
        CHECK(atomic_load(&h.wrong) == 0);
        CHECK(tst_verify_byte(back, N, 0x77) == N);
        CHECK_OK(gpumem_free(d));
        CHECK_OK(gpumem_host_free(pinned));
        CHECK_OK(gpumem_host_free(out));
        CHECK_OK(gpumem_host_free(back));
    }
    /* In order with each other. */
    atomic_int count = 0;
    for (int i = 0; i < 50; ++i)
        CHECK_OK(gpumem_launch_host_func(streams[1], count_call, &count));
    CHECK_OK(gpumem_stream_synchronize(streams[1]));
    CHECK(atomic_load(&count) == 50);

    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_launch_host_func(streams[0], NULL, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE,
                 gpumem_launch_host_func((gpumem_stream_t)(uintptr_t)0x1234, count_call, &count));
    /* Where gpumem runs the function, a gpumem call from it is refused (a GPU runtime's thread
     * must not call the runtime either: not tried there). */
    if (info.host_funcs == GPUMEM_SUPPORT_EMULATED) {
        g_nested_status = GPUMEM_SUCCESS;
        CHECK_OK(gpumem_launch_host_func(streams[0], calls_gpumem, NULL));
        CHECK_OK(gpumem_stream_synchronize(streams[0]));
        CHECK(g_nested_status == GPUMEM_ERROR_NOT_SUPPORTED);
    }
    CHECK_OK(gpumem_stream_destroy(streams[0]));
    CHECK_OK(gpumem_stream_destroy(streams[1]));
}

/* Under capture a host function is a host node: it runs at each launch, not at capture. */
static void test_host_func_captured(void)
{
    if (tst_backend() == GPUMEM_BACKEND_HOST || gpumem_set_device(0) != GPUMEM_SUCCESS || !gd_open(tst_backend()))
        SKIP("no graphs on this backend");
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create_with_flags(&s, GPUMEM_STREAM_NON_BLOCKING, 0));
    void *native = gpumem_stream_native(s);
    atomic_int count = 0;
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    gpumem_status_t st = gpumem_launch_host_func(s, count_call, &count);
    gpumem_device_info_t info = tst_info(0);
    if (info.host_funcs == GPUMEM_SUPPORT_NATIVE)
        CHECK_OK(st);
    else
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, st); /* gpumem cannot run it in a graph */
    CHECKF(gd_status(native) == GD_STATUS_ACTIVE, "the capture was invalidated");
    void *graph = NULL, *exec = NULL;
    REQUIRE(gd_end(native, &graph) == 0);
    CHECK(atomic_load(&count) == 0);
    if (st == GPUMEM_SUCCESS) {
        CHECK(gd_node_count(graph) == 1);
        REQUIRE(gd_instantiate(&exec, graph) == 0);
        CHECK(gd_launch(exec, native) == 0);
        CHECK(gd_launch(exec, native) == 0);
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(atomic_load(&count) == 2);
        CHECK(gd_exec_destroy(exec) == 0);
    }
    CHECK(gd_graph_destroy(graph) == 0);
    CHECK_OK(gpumem_stream_destroy(s));
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

enum { THREADS = 8, ROUNDS = 40 };
static atomic_int g_thread_calls;

static void *thread_body(void *arg)
{
    const int id = (int)(intptr_t)arg;
    int32_t least = 0, greatest = 0;
    CHECK_OK(gpumem_device_get_stream_priority_range(&least, &greatest, 0));
    void *d = NULL;
    CHECK_OK(gpumem_malloc(&d, 4096));
    unsigned char host[4096];
    for (int r = 0; r < ROUNDS; ++r) {
        gpumem_stream_t s = NULL;
        gpumem_event_t e = NULL;
        const uint32_t flags = (r + id) % 2 ? GPUMEM_STREAM_NON_BLOCKING : GPUMEM_STREAM_DEFAULT;
        const int32_t prio = (r % 2) ? greatest : least;
        if (gpumem_stream_create_with_flags(&s, flags, prio) != GPUMEM_SUCCESS) {
            CHECK(0);
            break;
        }
        CHECK_OK(gpumem_event_create_with_flags(&e, GPUMEM_EVENT_DISABLE_TIMING));
        uint32_t got = 99;
        CHECK_OK(gpumem_stream_get_flags(&got, s));
        CHECK(got == flags);
        CHECK_OK(gpumem_memset_async(d, (id * 16 + r) & 0xff, 4096, s));
        CHECK_OK(gpumem_launch_host_func(s, count_call, &g_thread_calls));
        CHECK_OK(gpumem_event_record(e, s));
        CHECK_OK(gpumem_event_synchronize(e));
        CHECK_OK(gpumem_memcpy_async(host, d, 4096, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK(tst_verify_byte(host, 4096, (unsigned char)((id * 16 + r) & 0xff)) == 4096);
        CHECK_OK(gpumem_event_destroy(e));
        CHECK_OK(gpumem_stream_destroy(s));
    }
    CHECK_OK(gpumem_free(d));
    return NULL;
}

static void test_threads(void)
{
    atomic_store(&g_thread_calls, 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; ++i)
        REQUIRE(pthread_create(&t[i], NULL, thread_body, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; ++i)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&g_thread_calls) == THREADS * ROUNDS);
}

int main(int argc, char **argv)
{
    g_self = argv[0];
    signal(SIGPIPE, SIG_IGN);
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        alarm(30);
        int sock = atoi(argv[2]);
        int rc = child_main(sock);
        close(sock);
        return rc;
    }
    alarm(120);
    static const tst_case_t cases[] = {
        TEST(test_stream_flags),     TEST(test_stream_priorities), TEST(test_wrapped_stream_queries),
        TEST(test_event_flags),      TEST(test_ipc_event_handle),  TEST(test_host_func),
        TEST(test_host_func_captured), TEST(test_threads),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
