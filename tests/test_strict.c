/* Strict host mode (GPUMEM_HOST_STRICT=1): the three bugs it exists to catch, each shown
 * caught, and the same program written correctly shown to pass.
 *   1. the CPU touches device memory: the process dies of SIGSEGV and the message names the
 *      allocation (a child process; faults outside gpumem memory still reach the program's
 *      own handler);
 *   2. a missing synchronise: stream work has not run, the host reads stale data;
 *   3. use after free of a stream-ordered block: gpumem calls give INVALID_POINTER, and work
 *      that races the free reads the poison (0xdf).
 * Skipped (77) unless the host backend runs in strict mode.  SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "harness.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define POISON 0xdf

static void need_strict(void)
{
    if (tst_backend() != GPUMEM_BACKEND_HOST || !tst_host_strict())
        SKIP("strict mode is a host-backend setting: run with GPUMEM_BACKEND=host GPUMEM_HOST_STRICT=1");
}

/* --- Child processes (this executable again, with --child WHAT) ------------------------ */

static void own_segv_handler(int sig)
{
    (void)sig;
    _exit(42); /* the program's own handler: what a fault outside gpumem memory must reach */
}

/* Each returns only if it failed to die. */
static int child_main(const char *what)
{
    if (strcmp(what, "touch-device") == 0) {
        void *p = NULL;
        if (gpumem_malloc(&p, 4096) != GPUMEM_SUCCESS)
            return 3;
        printf("base %p\n", p);
        fflush(stdout);
        volatile unsigned char *bytes = (volatile unsigned char *)p;
        return bytes[100]; /* the bug: dies here */
    }
    if (strcmp(what, "touch-pool") == 0) {
        void *p = NULL;
        if (gpumem_malloc_async(&p, 1000, NULL) != GPUMEM_SUCCESS)
            return 3;
        printf("block %p\n", p);
        fflush(stdout);
        ((volatile unsigned char *)p)[10] = 1; /* dies here */
        return 4;
    }
    if (strcmp(what, "touch-freed") == 0) {
        void *p = NULL;
        if (gpumem_malloc(&p, 4096) != GPUMEM_SUCCESS || gpumem_free(p) != GPUMEM_SUCCESS)
            return 3;
        return ((volatile unsigned char *)p)[8]; /* dies here */
    }
    if (strcmp(what, "foreign-fault") == 0) {
        /* A handler installed before gpumem's still gets the faults that are not gpumem's. */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_segv_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        void *p = NULL;
        if (gpumem_malloc(&p, 4096) != GPUMEM_SUCCESS) /* initialises strict mode */
            return 3;
        void *guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (guard == MAP_FAILED)
            return 5;
        return ((volatile unsigned char *)guard)[0]; /* exits 42 in own_segv_handler */
    }
    return 2;
}

/* Runs `--child what`; *status as waitpid gives it; out: its stdout and stderr. */
static int run_child(const char *what, int *status, char *out, size_t out_size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        char *const argv[] = {(char *)"test_strict", (char *)"--child", (char *)what, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    for (;;) {
        ssize_t n = read(fds[0], out + used, out_size - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
        if (used == out_size - 1)
            break;
    }
    out[used] = '\0';
    close(fds[0]);
    return waitpid(pid, status, 0) == pid;
}

static void test_cpu_touch_of_device_memory_dies_with_a_message(void)
{
    need_strict();
    int status = 0;
    char out[8192];
    REQUIRE(run_child("touch-device", &status, out, sizeof out));
    CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "the child did not die of SIGSEGV (status %#x): %s",
           status, out);
    /* The message names the address, the allocation (size, base, offset) and its maker. */
    char base_text[64] = "";
    const char *b = strstr(out, "base ");
    if (b)
        sscanf(b + 5, "%63s", base_text);
    CHECKF(base_text[0] != '\0', "the child printed no base: %s", out);
    CHECKF(tst_contains(out, "gpumem strict mode: the CPU touched device memory at "), "no message: %s", out);
    CHECKF(tst_contains(out, "inside the 4096-byte device allocation at "), "the allocation is not named: %s", out);
    CHECKF(tst_contains(out, base_text), "the base %s is not in the message: %s", base_text, out);
    CHECKF(tst_contains(out, "(offset 100)"), "the offset is not in the message: %s", out);
    CHECKF(tst_contains(out, "made by gpumem_malloc called from "), "the maker is not named: %s", out);
    CHECKF(tst_contains(out, "test_strict"), "the calling module is not named: %s", out);
}

static void test_cpu_touch_of_pool_memory_dies_with_a_message(void)
{
    need_strict();
    int status = 0;
    char out[8192];
    REQUIRE(run_child("touch-pool", &status, out, sizeof out));
    CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "the child did not die of SIGSEGV (status %#x): %s",
           status, out);
    CHECKF(tst_contains(out, "pool chunk of stream-ordered memory"), "the pool chunk is not named: %s", out);
    CHECKF(tst_contains(out, "made by gpumem_malloc_async called from "), "the maker is not named: %s", out);
}

static void test_touch_of_freed_device_memory_is_named(void)
{
    need_strict();
    int status = 0;
    char out[8192];
    REQUIRE(run_child("touch-freed", &status, out, sizeof out));
    CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "the child did not die of SIGSEGV (status %#x): %s",
           status, out);
    CHECKF(tst_contains(out, "the CPU touched freed device memory at "), "the memory is not said to be freed: %s", out);
    CHECKF(tst_contains(out, "and freed since"), "the message does not end with the free: %s", out);

    /* In-process: gpumem calls on freed device memory are INVALID_POINTER, not a crash. */
    void *p = NULL;
    unsigned char h[64];
    REQUIRE_OK(gpumem_malloc(&p, 4096));
    CHECK_OK(gpumem_free(p));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(h, p, sizeof h));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset((char *)p + 64, 0, 64));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
}

static void test_other_faults_reach_the_program_handler(void)
{
    need_strict();
    int status = 0;
    char out[8192];
    REQUIRE(run_child("foreign-fault", &status, out, sizeof out));
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 42,
           "a fault outside gpumem memory did not reach the program's own handler (status %#x): %s", status, out);
    CHECKF(!tst_contains(out, "gpumem strict mode"), "gpumem claimed a fault that is not its own: %s", out);
}

/* gpumem's own copies and fills reach device memory, at any offset. */
static void test_copies_and_fills_still_work(void)
{
    need_strict();
    void *d = NULL, *a = NULL;
    REQUIRE_OK(gpumem_malloc(&d, 10000));
    REQUIRE_OK(gpumem_malloc_async(&a, 10000, NULL));
    CHECK_OK(tst_upload(d, 10000, 5));
    CHECK_OK(gpumem_memcpy(a, d, 10000));
    CHECK(tst_download_verify(a, 10000, 5));
    CHECK_OK(gpumem_memset((char *)d + 3, 0x44, 7));
    unsigned char back[16];
    CHECK_OK(gpumem_memcpy(back, (char *)d + 3, 7));
    CHECK(tst_verify_byte(back, 7, 0x44) == 7);
    CHECK_OK(gpumem_free_async(a, NULL));
    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_device_synchronize());
}

/* Bug 2: reading the result of an async copy without synchronising. */
static void test_missing_synchronize_reads_stale_data(void)
{
    need_strict();
    enum { N = 4096 };
    gpumem_stream_t s = NULL;
    gpumem_event_t ev = NULL;
    void *d = NULL;
    unsigned char *h = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_event_create(&ev));
    REQUIRE_OK(gpumem_malloc(&d, N));
    REQUIRE_OK(gpumem_host_alloc((void **)&h, N, 0));
    memset(h, 0, N);

    /* The bug: the host reads before the copy is known to be done. */
    CHECK_OK(gpumem_memset_async(d, 7, N, s));
    CHECK_OK(gpumem_memcpy_async(h, d, N, s));
    CHECKF(tst_verify_byte(h, N, 0) == N, "strict mode ran stream work before anything waited for it");
    /* The fix: synchronise first. */
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify_byte(h, N, 7) == N);

    /* An event waits for the work before its record only. */
    memset(h, 0, N);
    CHECK_OK(gpumem_memset_async(d, 8, N, s));
    CHECK_OK(gpumem_memcpy_async(h, d, N / 2, s));
    CHECK_OK(gpumem_event_record(ev, s));
    CHECK_OK(gpumem_memcpy_async(h + N / 2, d, N / 2, s));
    CHECK_OK(gpumem_event_synchronize(ev));
    CHECK(tst_verify_byte(h, N / 2, 8) == N / 2);
    CHECKF(tst_verify_byte(h + N / 2, N / 2, 0) == N / 2, "work recorded after the event ran with it");
    CHECK_OK(gpumem_event_query(ev));
    CHECK_OK(gpumem_stream_query(s)); /* a query is a wait too: the rest runs */
    CHECK(tst_verify_byte(h + N / 2, N / 2, 8) == N / 2);

    /* Another stream's work waits until someone waits for it, even behind a wait on this one. */
    gpumem_stream_t s2 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s2));
    memset(h, 0, N);
    CHECK_OK(gpumem_memset_async(d, 9, N, s2));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_memcpy_async(h, d, N, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    /* A race on a GPU; strict mode always shows the stale side (d still holds 8). */
    CHECKF(tst_verify_byte(h, N, 8) == N, "s2's fill ran though nothing waited for s2");
    /* ...and a stream that waits on an event of the other is ordered after it. */
    CHECK_OK(gpumem_memset_async(d, 10, N, s2));
    CHECK_OK(gpumem_event_record(ev, s2));
    CHECK_OK(gpumem_stream_wait_event(s, ev));
    CHECK_OK(gpumem_memcpy_async(h, d, N, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(tst_verify_byte(h, N, 10) == N);

    /* A synchronous copy is ordered after the work of every stream (the legacy default stream). */
    CHECK_OK(gpumem_memset_async(d, 11, N, s2));
    CHECK_OK(gpumem_memcpy(h, d, N));
    CHECK(tst_verify_byte(h, N, 11) == N);

    CHECK_OK(gpumem_stream_destroy(s2));
    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_host_free(h));
    CHECK_OK(gpumem_event_destroy(ev));
    CHECK_OK(gpumem_stream_destroy(s));
}

/* Bug 3: using a stream-ordered block after freeing it. */
static void test_use_after_free_is_refused_and_poisoned(void)
{
    need_strict();
    enum { N = 4096 };
    gpumem_stream_t s1 = NULL, s2 = NULL;
    gpumem_event_t done = NULL;
    REQUIRE_OK(gpumem_stream_create(&s1));
    REQUIRE_OK(gpumem_stream_create(&s2));
    REQUIRE_OK(gpumem_event_create(&done));
    static unsigned char h[N];

    /* Any gpumem call on the freed block: INVALID_POINTER. */
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc_async(&p, N, s1));
    CHECK_OK(gpumem_memset_async(p, 1, N, s1));
    CHECK_OK(gpumem_free_async(p, s1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy(h, p, N));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memcpy_async(p, h, N, s1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_memset(p, 0, N));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free_async(p, s1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(p));
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &info));
    CHECK(info.kind == GPUMEM_KIND_UNKNOWN);

    /* Held back: the next allocation of the same size on the same stream is another block. */
    void *q = NULL;
    REQUIRE_OK(gpumem_malloc_async(&q, N, s1));
    CHECKF(q != p, "the freed block %p was handed out again at once", p);
    CHECK_OK(gpumem_free_async(q, s1));

    /* The bug: s2 still reads the block when s1 frees it, with nothing ordering the two.
     * On a GPU it reads whatever is there; strict mode makes that the poison. */
    REQUIRE_OK(gpumem_malloc_async(&p, N, s1));
    CHECK_OK(gpumem_memset_async(p, 2, N, s1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    memset(h, 0, N);
    CHECK_OK(gpumem_memcpy_async(h, p, N, s2));
    CHECK_OK(gpumem_free_async(p, s1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    CHECK_OK(gpumem_stream_synchronize(s2));
    CHECKF(tst_verify_byte(h, N, POISON) == N, "the racing read did not see the poison (first byte %#x)", h[0]);

    /* The fix: the freeing stream waits for the reader. */
    REQUIRE_OK(gpumem_malloc_async(&p, N, s1));
    CHECK_OK(gpumem_memset_async(p, 3, N, s1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    memset(h, 0, N);
    CHECK_OK(gpumem_memcpy_async(h, p, N, s2));
    CHECK_OK(gpumem_event_record(done, s2));
    CHECK_OK(gpumem_stream_wait_event(s1, done));
    CHECK_OK(gpumem_free_async(p, s1));
    CHECK_OK(gpumem_stream_synchronize(s1));
    CHECK_OK(gpumem_stream_synchronize(s2));
    CHECK(tst_verify_byte(h, N, 3) == N);

    CHECK_OK(gpumem_event_destroy(done));
    CHECK_OK(gpumem_stream_destroy(s1));
    CHECK_OK(gpumem_stream_destroy(s2));
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2]);
    /* Strict mode is the host backend's: on a GPU backend there is nothing to test. */
    const char *backend = getenv("GPUMEM_BACKEND");
    if (backend && strcmp(backend, "host") != 0) {
        printf("SKIP: strict host mode needs GPUMEM_BACKEND=host (it is %s)\n", backend);
        return 77;
    }
    static const tst_case_t cases[] = {
        TEST(test_cpu_touch_of_device_memory_dies_with_a_message),
        TEST(test_cpu_touch_of_pool_memory_dies_with_a_message),
        TEST(test_touch_of_freed_device_memory_is_named),
        TEST(test_other_faults_reach_the_program_handler),
        TEST(test_copies_and_fills_still_work),
        TEST(test_missing_synchronize_reads_stale_data),
        TEST(test_use_after_free_is_refused_and_poisoned),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
