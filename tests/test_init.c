/* Init, finalize, version, status strings and backends. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <pthread.h>

static void test_status_strings(void)
{
    static const struct {
        gpumem_status_t status;
        const char *name;
    } known[] = {
        {GPUMEM_SUCCESS, "GPUMEM_SUCCESS"},
        {GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_ERROR_INVALID_VALUE"},
        {GPUMEM_ERROR_OUT_OF_MEMORY, "GPUMEM_ERROR_OUT_OF_MEMORY"},
        {GPUMEM_ERROR_NOT_SUPPORTED, "GPUMEM_ERROR_NOT_SUPPORTED"},
        {GPUMEM_ERROR_NO_DEVICE, "GPUMEM_ERROR_NO_DEVICE"},
        {GPUMEM_ERROR_INVALID_DEVICE, "GPUMEM_ERROR_INVALID_DEVICE"},
        {GPUMEM_ERROR_INVALID_POINTER, "GPUMEM_ERROR_INVALID_POINTER"},
        {GPUMEM_ERROR_INVALID_HANDLE, "GPUMEM_ERROR_INVALID_HANDLE"},
        {GPUMEM_ERROR_BACKEND_UNAVAILABLE, "GPUMEM_ERROR_BACKEND_UNAVAILABLE"},
        {GPUMEM_ERROR_BACKEND, "GPUMEM_ERROR_BACKEND"},
        {GPUMEM_ERROR_IPC, "GPUMEM_ERROR_IPC"},
        {GPUMEM_ERROR_BUSY, "GPUMEM_ERROR_BUSY"},
    };
    /* The values are part of the ABI. */
    CHECK(GPUMEM_SUCCESS == 0 && GPUMEM_ERROR_INVALID_VALUE == 1 && GPUMEM_ERROR_OUT_OF_MEMORY == 2 &&
          GPUMEM_ERROR_NOT_SUPPORTED == 3 && GPUMEM_ERROR_NO_DEVICE == 4 && GPUMEM_ERROR_INVALID_DEVICE == 5 &&
          GPUMEM_ERROR_INVALID_POINTER == 6 && GPUMEM_ERROR_INVALID_HANDLE == 7 &&
          GPUMEM_ERROR_BACKEND_UNAVAILABLE == 8 && GPUMEM_ERROR_BACKEND == 9 && GPUMEM_ERROR_IPC == 10 &&
          GPUMEM_ERROR_BUSY == 11);
    for (size_t i = 0; i < TST_COUNT(known); ++i) {
        const char *s = gpumem_status_string(known[i].status);
        CHECKF(s != NULL && strcmp(s, known[i].name) == 0, "status %d gave \"%s\", want \"%s\"",
               (int)known[i].status, s ? s : "(null)", known[i].name);
    }
    const gpumem_status_t unknown[] = {12, 13, 100, -1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < TST_COUNT(unknown); ++i) {
        const char *s = gpumem_status_string(unknown[i]);
        CHECKF(s != NULL && strcmp(s, "GPUMEM_ERROR_UNKNOWN") == 0, "status %d gave \"%s\"", (int)unknown[i],
               s ? s : "(null)");
    }
}

static void test_version(void)
{
    CHECK(GPUMEM_VERSION == GPUMEM_VERSION_MAJOR * 10000 + GPUMEM_VERSION_MINOR * 100 + GPUMEM_VERSION_PATCH);
    CHECKF(gpumem_version() == GPUMEM_VERSION, "run-time %d, header %d", (int)gpumem_version(), GPUMEM_VERSION);
    /* The header declares the functions of node GPUMEM_0.2 (gpumem_kind_name among them), so it is
     * 0.2 or later: a program tests `GPUMEM_VERSION >= 200` before it uses them. */
    CHECKF(GPUMEM_VERSION >= 200, "GPUMEM_VERSION %d, but the header has 0.2's functions", GPUMEM_VERSION);
}

static void test_backend_names(void)
{
    CHECK(GPUMEM_BACKEND_AUTO == 0 && GPUMEM_BACKEND_HOST == 1 && GPUMEM_BACKEND_CUDA == 2 && GPUMEM_BACKEND_HIP == 3);
    static const char *const names[] = {"auto", "host", "cuda", "hip"};
    for (int32_t b = 0; b < 4; ++b) {
        const char *s = gpumem_backend_name(b);
        CHECKF(s != NULL && strcmp(s, names[b]) == 0, "backend %d gave \"%s\"", (int)b, s ? s : "(null)");
    }
    const int32_t bad[] = {4, -1, 1000, INT32_MIN};
    for (size_t i = 0; i < TST_COUNT(bad); ++i) {
        const char *s = gpumem_backend_name(bad[i]);
        CHECKF(s != NULL && strcmp(s, "unknown") == 0, "backend %d gave \"%s\"", (int)bad[i], s ? s : "(null)");
    }
}

/* The backend GPUMEM_BACKEND names, or -1 when it names none. */
static int32_t env_backend(void)
{
    const char *e = getenv("GPUMEM_BACKEND");
    if (!e)
        return -1;
    if (strcmp(e, "host") == 0)
        return GPUMEM_BACKEND_HOST;
    if (strcmp(e, "cuda") == 0)
        return GPUMEM_BACKEND_CUDA;
    if (strcmp(e, "hip") == 0)
        return GPUMEM_BACKEND_HIP;
    return -1;
}

static void test_init_rules(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t active = -1;
    REQUIRE_OK(gpumem_get_backend(&active));
    CHECKF(active == GPUMEM_BACKEND_HOST || active == GPUMEM_BACKEND_CUDA || active == GPUMEM_BACKEND_HIP,
           "active backend %d", (int)active);
    if (env_backend() >= 0)
        CHECKF(active == env_backend(), "GPUMEM_BACKEND=%s but the active backend is %s", getenv("GPUMEM_BACKEND"),
               gpumem_backend_name(active));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_get_backend(NULL));

    /* Initialising again: AUTO or the active backend is fine, another is BUSY. */
    CHECK_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    CHECK_OK(gpumem_init(active));
    for (int32_t b = GPUMEM_BACKEND_HOST; b <= GPUMEM_BACKEND_HIP; ++b) {
        if (b == active)
            continue;
        CHECK_STATUS(GPUMEM_ERROR_BUSY, gpumem_init(b));
        CHECK(strlen(gpumem_last_error_message()) > 0);
        int32_t still = -1;
        CHECK_OK(gpumem_get_backend(&still));
        CHECK(still == active);
    }
    /* Unknown backends are INVALID_VALUE whether or not gpumem is initialised. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_init(4));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_init(-1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_init(INT32_MAX));
    CHECK_OK(gpumem_finalize());
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_init(4));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_init(-7));
    /* Its message names the call, as every other failure's does. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_init(42));
    CHECKF(strncmp(gpumem_last_error_message(), "gpumem_init: backend 42 ", 24) == 0, "got \"%s\"",
           gpumem_last_error_message());
    /* An implicit init happens on the first call. */
    int32_t count = 0;
    CHECK_OK(gpumem_device_count(&count));
    CHECK(count >= 1);
    CHECK_OK(gpumem_get_backend(&active));
    CHECK_OK(gpumem_finalize());
    CHECK_OK(gpumem_finalize()); /* finalize twice is harmless */
}

static void *thread_last_error(void *arg)
{
    int *ok = (int *)arg;
    const char *m = gpumem_last_error_message();
    ok[0] = m != NULL && m[0] == '\0';
    /* A failure here must not show in the other thread. */
    ok[1] = gpumem_malloc(NULL, 16) == GPUMEM_ERROR_INVALID_VALUE;
    m = gpumem_last_error_message();
    ok[2] = m != NULL && strlen(m) > 0;
    return NULL;
}

static void test_last_error_thread_local(void)
{
    const char *m = gpumem_last_error_message();
    REQUIRE(m != NULL);
    /* Make a known failure on this thread. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_DEVICE, gpumem_set_device(1 << 20));
    char mine[512];
    snprintf(mine, sizeof mine, "%s", gpumem_last_error_message());
    CHECK(strlen(mine) > 0);

    int ok[3] = {0, 0, 0};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, thread_last_error, ok) == 0);
    pthread_join(t, NULL);
    CHECKF(ok[0], "a new thread's last error is not \"\"");
    CHECK(ok[1]);
    CHECK(ok[2]);
    CHECKF(strcmp(mine, gpumem_last_error_message()) == 0, "another thread's failure changed this thread's message: \"%s\" -> \"%s\"",
           mine, gpumem_last_error_message());
}

/* After gpumem_finalize every handle and pointer from before is dead, never a crash. */
static void test_finalize_kills_everything(void)
{
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    gpumem_device_info_t info = tst_info(0);

    gpumem_stream_t s = NULL;
    gpumem_event_t e = NULL;
    gpumem_pool_t pool = NULL;
    gpumem_buffer_t buf = NULL;
    void *dev = NULL, *pinned = NULL, *managed = NULL, *async = NULL;
    gpumem_mem_handle_t mh = 0;
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_event_create(&e));
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    REQUIRE_OK(gpumem_host_alloc(&pinned, 4096, 0));
    if (info.managed_memory != GPUMEM_SUPPORT_NONE)
        REQUIRE_OK(gpumem_managed_alloc(&managed, 4096, 0));
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        REQUIRE_OK(gpumem_pool_create(&pool, NULL));
        REQUIRE_OK(gpumem_malloc_async(&async, 4096, s));
    }
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE)
        REQUIRE_OK(gpumem_buffer_create(&buf, 4096, 1 << 20, 0));
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        size_t g = 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        REQUIRE_OK(gpumem_mem_create(&mh, g, &props));
    }

    /* Leaks are logged, but finalize succeeds. */
    REQUIRE_OK(gpumem_finalize());

    /* The next call initialises afresh; the old objects are gone. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query(e));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_destroy(e));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(dev));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_host_free(pinned));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(pinned));
    if (managed)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(managed));
    if (async)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free_async(async, NULL));
    if (pool) {
        uint64_t v = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_pool_destroy(pool));
    }
    if (buf) {
        size_t sz = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_size(buf, &sz));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_destroy(buf));
    }
    if (mh)
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(mh));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(dev, &pi));
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);

    /* Everything was released: the fresh library holds nothing. */
    gpumem_stats_t st = tst_stats();
    for (int k = 0; k < GPUMEM_KIND_COUNT; ++k)
        CHECKF(st.current_bytes[k] == 0, "kind %s still has %" PRIu64 " bytes after finalize", tst_kind_name(k),
               st.current_bytes[k]);
    CHECK_OK(gpumem_finalize());
}

/* A GPU backend that is not there is BACKEND_UNAVAILABLE, with a message naming it. */
static void test_backend_unavailable(void)
{
    int checked = 0;
    const int32_t gpu[] = {GPUMEM_BACKEND_CUDA, GPUMEM_BACKEND_HIP};
    for (size_t i = 0; i < TST_COUNT(gpu); ++i) {
        CHECK_OK(gpumem_finalize());
        gpumem_status_t st = gpumem_init(gpu[i]);
        if (st == GPUMEM_SUCCESS) {
            NOTE("%s is available here: its BACKEND_UNAVAILABLE check does not apply", gpumem_backend_name(gpu[i]));
            int32_t b = -1;
            CHECK_OK(gpumem_get_backend(&b));
            CHECK(b == gpu[i]);
            continue;
        }
        CHECK_STATUS(GPUMEM_ERROR_BACKEND_UNAVAILABLE, st);
        const char *m = gpumem_last_error_message();
        CHECKF(tst_contains(m, gpumem_backend_name(gpu[i])), "the message does not name %s: \"%s\"",
               gpumem_backend_name(gpu[i]), m);
        ++checked;
        /* A failed init leaves gpumem usable with another backend. */
        CHECK_OK(gpumem_init(GPUMEM_BACKEND_HOST));
        int32_t b = -1;
        CHECK_OK(gpumem_get_backend(&b));
        CHECK(b == GPUMEM_BACKEND_HOST);
    }
    CHECK_OK(gpumem_finalize());
    if (!checked)
        SKIP("both GPU backends are available");
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_status_strings),       TEST(test_version),
        TEST(test_backend_names),        TEST(test_init_rules),
        TEST(test_last_error_thread_local), TEST(test_finalize_kills_everything),
        TEST(test_backend_unavailable),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
}
