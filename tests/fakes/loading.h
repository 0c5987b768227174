/* What the loading tests of the GPU backends share (test_cuda_loading.c, test_hip_loading.c):
 * a backend that cannot start says why, every call fails the same way while GPUMEM_BACKEND
 * forces it, and AUTO falls through to the host backend; over a working fake, AUTO picks
 * the GPU backend and device memory is accounted.  Each test keeps only what its vendor
 * reports differently (its caps mode, and HIP's real-runtime modes).
 *
 *   loading_run(mode, arg, &backend)   runs explicit NEEDLES, forced NEEDLES, auto-host and
 *                                      auto-<name> for `backend`; 0 when `mode` is none of these
 *   loading_result()                   prints PASS or FAIL and gives the exit status
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_TESTS_FAKES_LOADING_H
#define GPUMEM_TESTS_FAKES_LOADING_H

#include "../harness.h"

/* The backend a loading test is about. */
typedef struct loading_backend {
    int32_t id;             /* GPUMEM_BACKEND_CUDA */
    const char *name;       /* "cuda", as GPUMEM_BACKEND spells it */
    const char *enum_name;  /* "GPUMEM_BACKEND_CUDA", for the messages */
} loading_backend_t;

static TST_UNUSED int needle_found(const char *msg, const char *needles)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", needles);
    for (char *save = NULL, *n = strtok_r(buf, "|", &save); n; n = strtok_r(NULL, "|", &save))
        if (tst_contains(msg, n))
            return 1;
    return 0;
}

/* A FAKE_* switch: set, and neither empty nor "0". */
static TST_UNUSED int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* A failed start: the status and the words of its message. */
static TST_UNUSED void check_failure(const char *what, gpumem_status_t st, const char *needles)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gpumem_last_error_message());
    CHECKF(st == GPUMEM_ERROR_BACKEND_UNAVAILABLE || st == GPUMEM_ERROR_NO_DEVICE,
           "%s gave %s (%d), expected BACKEND_UNAVAILABLE or NO_DEVICE; message \"%s\"", what,
           gpumem_status_string(st), (int)st, msg);
    CHECKF(needle_found(msg, needles), "%s: the message \"%s\" names none of \"%s\"", what, msg, needles);
    printf("  %s -> %s: %s\n", what, gpumem_status_string(st), msg);
}

static TST_UNUSED void explicit_init(const loading_backend_t *b, const char *needles)
{
    char what[128];
    snprintf(what, sizeof what, "gpumem_init(%s)", b->enum_name);
    gpumem_status_t st = gpumem_init(b->id);
    check_failure(what, st, needles);
    /* Asking again gives the same answer (a failure is not half an init). */
    gpumem_status_t again = gpumem_init(b->id);
    CHECKF(again == st, "the second %s gave %s, the first %s", what, gpumem_status_string(again),
           gpumem_status_string(st));
    /* AUTO never fails: it falls through to the host backend. */
    CHECK_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    CHECKF(tst_backend() == GPUMEM_BACKEND_HOST, "AUTO picked %s", gpumem_backend_name(tst_backend()));
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 64));
    CHECK_OK(gpumem_free(p));
    CHECK_OK(gpumem_finalize());
}

static TST_UNUSED void forced(const loading_backend_t *b, const char *needles)
{
    char what[128];
    void *p = NULL;
    snprintf(what, sizeof what, "gpumem_malloc with GPUMEM_BACKEND=%s", b->name);
    check_failure(what, gpumem_malloc(&p, 64), needles);
    int32_t n = 0;
    snprintf(what, sizeof what, "gpumem_device_count with GPUMEM_BACKEND=%s", b->name);
    check_failure(what, gpumem_device_count(&n), needles);
    snprintf(what, sizeof what, "gpumem_init(AUTO) with GPUMEM_BACKEND=%s", b->name);
    check_failure(what, gpumem_init(GPUMEM_BACKEND_AUTO), needles);
    /* Nothing was silently replaced by the host backend. */
    int32_t got = -1;
    gpumem_status_t st = gpumem_get_backend(&got);
    CHECKF(st != GPUMEM_SUCCESS || got != GPUMEM_BACKEND_HOST, "GPUMEM_BACKEND=%s fell back to the host backend",
           b->name);
}

static TST_UNUSED void auto_pick(int32_t expected)
{
    int32_t n = 0;
    CHECK_OK(gpumem_device_count(&n));
    CHECK(n >= 1);
    CHECKF(tst_backend() == expected, "AUTO picked %s, expected %s", gpumem_backend_name(tst_backend()),
           gpumem_backend_name(expected));
    CHECK_OK(gpumem_finalize());
}

/* Device memory is accounted: free memory goes down by at least what was asked, and more than
 * there is fails with OUT_OF_MEMORY. */
static TST_UNUSED void check_memory_accounted(void)
{
    size_t free0 = 0, free1 = 0, total = 0;
    CHECK_OK(gpumem_mem_get_info(&free0, &total));
    void *p = NULL;
    CHECK_OK(gpumem_malloc(&p, 64 << 20));
    CHECK_OK(gpumem_mem_get_info(&free1, &total));
    CHECKF(free1 + (64 << 20) <= free0, "free %zu -> %zu after 64 MiB", free0, free1);
    CHECK_OK(gpumem_free(p));
    CHECK_STATUS(GPUMEM_ERROR_OUT_OF_MEMORY, gpumem_malloc(&p, total + 1));
}

/* The modes every loading test has; 0 when `mode` is none of them. */
static TST_UNUSED int loading_run(const char *mode, const char *arg, const loading_backend_t *b)
{
    char auto_mode[32];
    snprintf(auto_mode, sizeof auto_mode, "auto-%s", b->name);
    if (strcmp(mode, "explicit") == 0)
        explicit_init(b, arg);
    else if (strcmp(mode, "forced") == 0)
        forced(b, arg);
    else if (strcmp(mode, "auto-host") == 0)
        auto_pick(GPUMEM_BACKEND_HOST);
    else if (strcmp(mode, auto_mode) == 0)
        auto_pick(b->id);
    else
        return 0;
    return 1;
}

static TST_UNUSED int loading_result(void)
{
    int failures = atomic_load(&tst_failures_);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}

#endif
