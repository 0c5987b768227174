/*
 * A tiny test harness for gpumem's conformance tests.
 *
 * Include it first (it defines _GNU_SOURCE for the POSIX calls the tests use).
 *
 *   CHECK(cond)                     non-fatal; prints file:line and the condition
 *   CHECK_STATUS(expected, expr)    non-fatal; prints both status names and the
 *                                   thread's gpumem_last_error_message()
 *   CHECK_ONE_OF(expr, a, b)        the call must give status a or b
 *   REQUIRE(cond) / REQUIRE_STATUS  the same, but end the current test case
 *   SKIP("why")                     end the current test case as skipped
 *
 * A test executable lists its cases and calls tst_main():
 *
 *   static const tst_case_t cases[] = { TEST(test_a), TEST(test_b) };
 *   int main(int argc, char **argv) { return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK); }
 *
 * The process exits 0 when every case passed (or some were skipped), 1 when
 * one failed and 77 when every case was skipped.  Arguments name the cases
 * to run (all when none).  With TST_LEAK_CHECK each case is bracketed by
 * gpumem_get_stats(): the live bytes and live allocation count of every kind
 * must come back to what they were, so a case that leaks fails.
 *
 * Every check is thread-safe: worker threads may use CHECK (not REQUIRE).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_TESTS_HARNESS_H
#define GPUMEM_TESTS_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <gpumem/gpumem.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#define TST_UNUSED __attribute__((unused))

typedef void (*tst_fn)(void);
typedef struct tst_case {
    const char *name;
    tst_fn fn;
} tst_case_t;

#define TEST(fn) {#fn, fn}
#define TST_COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define TST_LEAK_CHECK 1
#define TST_NO_LEAK_CHECK 0

static atomic_int tst_failures_; /* failures in the current case */
static int tst_skipped_;         /* the current case asked to be skipped */

/* All n bytes written to (read from) fd, through short counts and EINTR: 1, or 0 on an error or
 * end of file (the tests that pass data between processes). */
static TST_UNUSED int tst_write_all(int fd, const void *buf, size_t n)
{
    const char *p = (const char *)buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

static TST_UNUSED int tst_read_all(int fd, void *buf, size_t n)
{
    char *p = (char *)buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

static TST_UNUSED void tst_vreport(const char *file, int line, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    /* One fprintf per failure so that threads do not interleave within a line. */
    fprintf(stderr, "%s:%d: FAIL: %s\n", file, line, buf);
    fflush(stderr);
    atomic_fetch_add(&tst_failures_, 1);
}

static TST_UNUSED void tst_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static TST_UNUSED void tst_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tst_vreport(file, line, fmt, ap);
    va_end(ap);
}

static TST_UNUSED void tst_fail_status(const char *file, int line, const char *expr, gpumem_status_t expected,
                            gpumem_status_t actual)
{
    /* Read the message first: gpumem_status_string is a gpumem call too. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
    tst_fail(file, line, "%s\n    expected %s (%d), got %s (%d)\n    last error: \"%s\"", expr,
             gpumem_status_string(expected), (int)expected, gpumem_status_string(actual), (int)actual, msg);
}

static TST_UNUSED void tst_fail_status2(const char *file, int line, const char *expr, gpumem_status_t a, gpumem_status_t b,
                             gpumem_status_t actual)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
    char an[64];
    snprintf(an, sizeof an, "%s", gpumem_status_string(a));
    tst_fail(file, line, "%s\n    expected %s or %s, got %s (%d)\n    last error: \"%s\"", expr, an,
             gpumem_status_string(b), gpumem_status_string(actual), (int)actual, msg);
}

#define CHECK(cond)                                                                                                \
    do {                                                                                                           \
        if (!(cond))                                                                                               \
            tst_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                                                      \
    } while (0)

/* CHECK with a printf-style explanation of the values involved. */
#define CHECKF(cond, ...)                                                                                          \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            char tst_why_[512];                                                                                    \
            snprintf(tst_why_, sizeof tst_why_, __VA_ARGS__);                                                      \
            tst_fail(__FILE__, __LINE__, "CHECK(%s): %s", #cond, tst_why_);                                        \
        }                                                                                                          \
    } while (0)

#define CHECK_STATUS(expected, expr)                                                                               \
    do {                                                                                                           \
        gpumem_status_t tst_e_ = (expected);                                                                       \
        gpumem_status_t tst_a_ = (expr);                                                                           \
        if (tst_a_ != tst_e_)                                                                                      \
            tst_fail_status(__FILE__, __LINE__, #expr, tst_e_, tst_a_);                                            \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(GPUMEM_SUCCESS, expr)

#define CHECK_ONE_OF(expr, a, b)                                                                                   \
    do {                                                                                                           \
        gpumem_status_t tst_a_ = (expr);                                                                           \
        if (tst_a_ != (a) && tst_a_ != (b))                                                                        \
            tst_fail_status2(__FILE__, __LINE__, #expr, (a), (b), tst_a_);                                         \
    } while (0)

#define REQUIRE(cond)                                                                                              \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            tst_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond);                                                    \
            return;                                                                                                \
        }                                                                                                          \
    } while (0)

#define REQUIRE_STATUS(expected, expr)                                                                             \
    do {                                                                                                           \
        gpumem_status_t tst_e_ = (expected);                                                                       \
        gpumem_status_t tst_a_ = (expr);                                                                           \
        if (tst_a_ != tst_e_) {                                                                                    \
            tst_fail_status(__FILE__, __LINE__, #expr, tst_e_, tst_a_);                                            \
            return;                                                                                                \
        }                                                                                                          \
    } while (0)

#define REQUIRE_OK(expr) REQUIRE_STATUS(GPUMEM_SUCCESS, expr)

#define SKIP(...)                                                                                                  \
    do {                                                                                                           \
        printf("  skipped: ");                                                                                     \
        printf(__VA_ARGS__);                                                                                       \
        printf("\n");                                                                                              \
        tst_skipped_ = 1;                                                                                          \
        return;                                                                                                    \
    } while (0)

#define NOTE(...)                                                                                                  \
    do {                                                                                                           \
        printf("  note: ");                                                                                        \
        printf(__VA_ARGS__);                                                                                       \
        printf("\n");                                                                                              \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Helpers shared by the tests                                               */
/* ------------------------------------------------------------------------ */

/* True when `msg` contains `needle`, ignoring case. */
static TST_UNUSED int tst_contains(const char *msg, const char *needle)
{
    if (msg == NULL || needle == NULL)
        return 0;
    size_t n = strlen(needle);
    for (const char *p = msg; *p; ++p)
        if (strncasecmp(p, needle, n) == 0)
            return 1;
    return 0;
}

/* The active backend (GPUMEM_BACKEND_*), -1 when the call fails. */
static TST_UNUSED int32_t tst_backend(void)
{
    int32_t b = -1;
    if (gpumem_get_backend(&b) != GPUMEM_SUCCESS)
        return -1;
    return b;
}

/* Only the host backend's device memory can be touched by the CPU. */
/* True when the CPU may touch device memory: the host backend, except in strict
 * mode (GPUMEM_HOST_STRICT=1), where device memory faults on CPU access as on a GPU. */
static TST_UNUSED int tst_host_strict(void)
{
    const char *v = getenv("GPUMEM_HOST_STRICT");
    return v && strcmp(v, "1") == 0;
}
static TST_UNUSED int tst_device_memory_is_host(void)
{
    return tst_backend() == GPUMEM_BACKEND_HOST && !tst_host_strict();
}

/* Capabilities of `device` (a zeroed struct with size set when the call fails). */
static TST_UNUSED gpumem_device_info_t tst_info(int32_t device)
{
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    if (gpumem_device_get_info(device, &info) != GPUMEM_SUCCESS) {
        tst_fail(__FILE__, __LINE__, "gpumem_device_get_info(%d) failed: %s", (int)device,
                 gpumem_last_error_message());
        gpumem_device_info_t zero = GPUMEM_DEVICE_INFO_INIT;
        return zero;
    }
    return info;
}

static TST_UNUSED gpumem_stats_t tst_stats(void)
{
    gpumem_stats_t s = GPUMEM_STATS_INIT;
    if (gpumem_get_stats(&s) != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_get_stats failed: %s", gpumem_last_error_message());
    return s;
}

static TST_UNUSED const char *tst_kind_name(int kind)
{
    static const char *const names[] = {"UNKNOWN", "DEVICE",  "HOST_PINNED", "HOST_REGISTERED",
                                        "MANAGED", "STREAM_ORDERED", "VIRTUAL", "BUFFER"};
    return kind >= 0 && kind < GPUMEM_KIND_COUNT ? names[kind] : "?";
}

/* Fail unless every kind's live bytes and live count match `base`. */
static TST_UNUSED int tst_check_no_leak_at(const char *file, int line, const gpumem_stats_t *base)
{
    gpumem_stats_t now = tst_stats();
    int ok = 1;
    for (int k = 0; k < GPUMEM_KIND_COUNT; ++k) {
        uint64_t live_before = base->alloc_count[k] - base->free_count[k];
        uint64_t live_now = now.alloc_count[k] - now.free_count[k];
        if (now.current_bytes[k] != base->current_bytes[k] || live_now != live_before) {
            tst_fail(file, line,
                     "leak in kind %s: current_bytes %" PRIu64 " -> %" PRIu64 ", live allocations %" PRIu64
                     " -> %" PRIu64,
                     tst_kind_name(k), base->current_bytes[k], now.current_bytes[k], live_before, live_now);
            ok = 0;
        }
    }
    return ok;
}
#define CHECK_NO_LEAK(base) tst_check_no_leak_at(__FILE__, __LINE__, (base))

/* A byte pattern that differs per (seed, index). */
static TST_UNUSED unsigned char tst_pattern(unsigned seed, size_t i) { return (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xff); }

static TST_UNUSED void tst_fill(void *p, size_t n, unsigned seed)
{
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < n; ++i)
        b[i] = tst_pattern(seed, i);
}

/* Index of the first byte of `p` that breaks the pattern, or n. */
static TST_UNUSED size_t tst_verify(const void *p, size_t n, unsigned seed)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i)
        if (b[i] != tst_pattern(seed, i))
            return i;
    return n;
}

/* Index of the first byte of `p` that is not `v`, or n. */
static TST_UNUSED size_t tst_verify_byte(const void *p, size_t n, unsigned char v)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i)
        if (b[i] != v)
            return i;
    return n;
}

/* Write a pattern into any gpumem memory (through gpumem_memcpy). */
static TST_UNUSED gpumem_status_t tst_upload(void *dst, size_t n, unsigned seed)
{
    unsigned char *tmp = (unsigned char *)malloc(n ? n : 1);
    if (!tmp)
        return GPUMEM_ERROR_OUT_OF_MEMORY;
    tst_fill(tmp, n, seed);
    gpumem_status_t st = gpumem_memcpy(dst, tmp, n);
    free(tmp);
    return st;
}

/* Check the pattern in any gpumem memory (through gpumem_memcpy); 1 when it is there. */
static TST_UNUSED int tst_download_verify(const void *src, size_t n, unsigned seed)
{
    unsigned char *tmp = (unsigned char *)malloc(n ? n : 1);
    if (!tmp)
        return 0;
    memset(tmp, 0, n);
    gpumem_status_t st = gpumem_memcpy(tmp, src, n);
    int ok = st == GPUMEM_SUCCESS && tst_verify(tmp, n, seed) == n;
    free(tmp);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The runner                                                                */
/* ------------------------------------------------------------------------ */

static TST_UNUSED int tst_main(int argc, char **argv, const tst_case_t *cases, size_t ncases, int leak_check)
{
    int failed = 0, passed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < ncases; ++i) {
        if (argc > 1) {
            int wanted = 0;
            for (int a = 1; a < argc; ++a)
                if (strcmp(argv[a], cases[i].name) == 0)
                    wanted = 1;
            if (!wanted)
                continue;
        }
        printf("[ RUN  ] %s\n", cases[i].name);
        atomic_store(&tst_failures_, 0);
        tst_skipped_ = 0;
        gpumem_stats_t base = GPUMEM_STATS_INIT;
        if (leak_check)
            base = tst_stats();
        cases[i].fn();
        if (leak_check && atomic_load(&tst_failures_) == 0 && !tst_skipped_)
            tst_check_no_leak_at(__FILE__, __LINE__, &base);
        if (atomic_load(&tst_failures_) != 0) {
            printf("[ FAIL ] %s (%d failed checks)\n", cases[i].name, atomic_load(&tst_failures_));
            ++failed;
        } else if (tst_skipped_) {
            printf("[ SKIP ] %s\n", cases[i].name);
            ++skipped;
        } else {
            printf("[  OK  ] %s\n", cases[i].name);
            ++passed;
        }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed)
        return 1;
    if (passed == 0 && skipped > 0)
        return 77;
    return 0;
}

#endif /* GPUMEM_TESTS_HARNESS_H */
