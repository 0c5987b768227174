/* Streams and events. SPDX-License-Identifier: MIT */
#include "harness.h"

#include <math.h>
#include <pthread.h>

static void test_stream_lifecycle(void)
{
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    CHECK(s != NULL);
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_query(s));
    CHECK(gpumem_stream_native(s) != NULL);
    CHECK_OK(gpumem_stream_destroy(s));

    /* Dead and never-made handles. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_query(s));
    CHECK(gpumem_stream_native(s) == NULL);
    gpumem_stream_t madeup = (gpumem_stream_t)(uintptr_t)0x12345678u;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(madeup));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_query(madeup));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(madeup));
    CHECK(gpumem_stream_native(madeup) == NULL);
    int on_stack = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize((gpumem_stream_t)(void *)&on_stack));

    /* The default stream works and cannot be destroyed. */
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK_OK(gpumem_stream_query(NULL));
    CHECK(gpumem_stream_native(NULL) == NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(NULL));

    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_create(NULL));

    /* Many streams at once are all distinct. */
    gpumem_stream_t many[16];
    for (int i = 0; i < 16; ++i)
        REQUIRE_OK(gpumem_stream_create(&many[i]));
    for (int i = 0; i < 16; ++i)
        for (int j = i + 1; j < 16; ++j)
            CHECK(many[i] != many[j]);
    for (int i = 0; i < 16; ++i)
        CHECK_OK(gpumem_stream_destroy(many[i]));
}

static void test_wrong_type_handles(void)
{
    gpumem_stream_t s = NULL;
    gpumem_event_t e = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_event_create(&e));

    /* An event is not a stream and a stream is not an event. */
    gpumem_stream_t e_as_s = (gpumem_stream_t)(void *)e;
    gpumem_event_t s_as_e = (gpumem_event_t)(void *)s;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(e_as_s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_query(e_as_s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy(e_as_s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query(s_as_e));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_synchronize(s_as_e));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_destroy(s_as_e));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_record(s_as_e, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_record(e, e_as_s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_wait_event(e_as_s, e));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_wait_event(s, s_as_e));

    /* A pool or buffer handle is neither. */
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        gpumem_pool_t pool = NULL;
        REQUIRE_OK(gpumem_device_get_default_pool(&pool, 0));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize((gpumem_stream_t)(void *)pool));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query((gpumem_event_t)(void *)pool));
        /* ...and a stream is not a pool. */
        uint64_t v = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE,
                     gpumem_pool_get_attribute((gpumem_pool_t)(void *)s, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v));
    }
    if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
        gpumem_buffer_t b = NULL;
        REQUIRE_OK(gpumem_buffer_create(&b, 64, 4096, 0));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_destroy((gpumem_stream_t)(void *)b));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_destroy((gpumem_event_t)(void *)b));
        size_t sz = 0;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_buffer_size((gpumem_buffer_t)(void *)e, &sz));
        CHECK_OK(gpumem_buffer_destroy(b));
    }
    /* The real handles survived all of that. */
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_event_query(e));
    CHECK_OK(gpumem_event_destroy(e));
    CHECK_OK(gpumem_stream_destroy(s));
}

static void test_events(void)
{
    gpumem_stream_t s = NULL;
    gpumem_event_t a = NULL, b = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_event_create(&a));
    REQUIRE_OK(gpumem_event_create(&b));
    CHECK(a != b);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_create(NULL));

    /* Never recorded: complete. */
    CHECK_OK(gpumem_event_query(a));
    CHECK_OK(gpumem_event_synchronize(a));

    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 1 << 20));
    CHECK_OK(gpumem_event_record(a, s));
    CHECK_OK(gpumem_memset_async(dev, 7, 1 << 20, s));
    CHECK_OK(gpumem_event_record(b, s));
    CHECK_OK(gpumem_event_synchronize(b));
    CHECK_OK(gpumem_event_query(b));
    CHECK_OK(gpumem_event_query(a));

    float ms = -1.0f;
    CHECK_OK(gpumem_event_elapsed_ms(&ms, a, b));
    CHECKF(ms >= 0.0f && isfinite(ms), "elapsed %f", (double)ms);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_event_elapsed_ms(NULL, a, b));

    /* Events on the default stream, and recording the same event again. */
    CHECK_OK(gpumem_event_record(a, NULL));
    CHECK_OK(gpumem_event_synchronize(a));
    CHECK_OK(gpumem_event_record(a, s));
    CHECK_OK(gpumem_event_synchronize(a));

    /* stream_wait_event: later work on the other stream sees the first's. */
    gpumem_stream_t s2 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s2));
    CHECK_OK(gpumem_memset_async(dev, 0x3c, 1 << 20, s));
    CHECK_OK(gpumem_event_record(a, s));
    CHECK_OK(gpumem_stream_wait_event(s2, a));
    unsigned char *host = (unsigned char *)malloc(1 << 20);
    REQUIRE(host != NULL);
    memset(host, 0, 1 << 20);
    CHECK_OK(gpumem_memcpy_async(host, dev, 1 << 20, s2));
    CHECK_OK(gpumem_stream_synchronize(s2));
    CHECK(tst_verify_byte(host, 1 << 20, 0x3c) == (size_t)(1 << 20));
    CHECK_OK(gpumem_stream_wait_event(NULL, a));
    CHECK_OK(gpumem_device_synchronize());
    free(host);

    /* Dead events. */
    CHECK_OK(gpumem_event_destroy(b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_destroy(b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query(b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_synchronize(b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_record(b, s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_wait_event(s, b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_elapsed_ms(&ms, a, b));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_elapsed_ms(&ms, b, a));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_destroy(NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query(NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_record(NULL, s));
    gpumem_event_t madeup = (gpumem_event_t)(uintptr_t)0xdeadbee0u;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query(madeup));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_synchronize(madeup));

    /* Recording on a dead stream. */
    CHECK_OK(gpumem_stream_destroy(s2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_record(a, s2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_wait_event(s2, a));

    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_event_destroy(a));
    CHECK_OK(gpumem_stream_destroy(s));
}

static void test_stream_wrap(void)
{
    gpumem_stream_t owner = NULL;
    REQUIRE_OK(gpumem_stream_create(&owner));
    void *native = gpumem_stream_native(owner);
    REQUIRE(native != NULL);

    /* Wrap the native stream of another gpumem stream: works on every backend. */
    gpumem_stream_t w = NULL;
    REQUIRE_OK(gpumem_stream_wrap(native, &w));
    CHECK(w != NULL);
    CHECK(gpumem_stream_native(w) == native);
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    CHECK_OK(gpumem_memset_async(dev, 0x11, 4096, w));
    CHECK_OK(gpumem_stream_synchronize(w));
    unsigned char host[4096];
    CHECK_OK(gpumem_memcpy(host, dev, sizeof host));
    CHECK(tst_verify_byte(host, sizeof host, 0x11) == sizeof host);
    /* Destroying the wrapper leaves the native stream alone. */
    CHECK_OK(gpumem_stream_destroy(w));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(w));
    CHECK_OK(gpumem_memset_async(dev, 0x22, 4096, owner));
    CHECK_OK(gpumem_stream_synchronize(owner));
    CHECK_OK(gpumem_memcpy(host, dev, sizeof host));
    CHECK(tst_verify_byte(host, sizeof host, 0x22) == sizeof host);

    if (tst_backend() == GPUMEM_BACKEND_HOST) {
        /* On the host backend any non-NULL pointer is a native stream. */
        gpumem_stream_t h = NULL;
        CHECK_OK(gpumem_stream_wrap((void *)(uintptr_t)0x1000, &h));
        CHECK(gpumem_stream_native(h) == (void *)(uintptr_t)0x1000);
        CHECK_OK(gpumem_stream_synchronize(h));
        CHECK_OK(gpumem_stream_destroy(h));
    }
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_stream_wrap(native, NULL));

    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_stream_destroy(owner));
}

/* A destroyed handle stays dead: a later object does not bring its value back to life. */
static void test_destroyed_handles_stay_dead(void)
{
    gpumem_stream_t s = NULL, s2 = NULL;
    gpumem_event_t e = NULL, e2 = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_event_create(&e));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_event_destroy(e));
    REQUIRE_OK(gpumem_stream_create(&s2));
    REQUIRE_OK(gpumem_event_create(&e2));
    CHECKF(s2 != s, "a new stream has the destroyed stream's handle %p", (void *)s);
    CHECKF(e2 != e, "a new event has the destroyed event's handle %p", (void *)e);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_stream_synchronize(s));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_event_query(e));
    CHECK_OK(gpumem_stream_synchronize(s2));
    CHECK_OK(gpumem_event_query(e2));
    CHECK_OK(gpumem_event_destroy(e2));
    CHECK_OK(gpumem_stream_destroy(s2));
}

/* Copies and fills on a stream from a thread that never made a device current:
 * gpumem runs them in the context of the memory's device (the driver checks a
 * copy's pointers against the current context, and there is none here). */
struct fresh_thread_arg {
    gpumem_stream_t stream;
    void *device;
    uint8_t *src, *dst;
    size_t n;
    gpumem_status_t copy_in, fill, copy_out, sync;
};

static void *fresh_thread_main(void *varg)
{
    struct fresh_thread_arg *a = varg;
    a->copy_in = gpumem_memcpy_async(a->device, a->src, a->n, a->stream);
    a->fill = gpumem_memset_async((char *)a->device + a->n / 2, 0x5a, a->n / 4, a->stream);
    a->copy_out = gpumem_memcpy_async(a->dst, a->device, a->n, a->stream);
    a->sync = gpumem_stream_synchronize(a->stream);
    return NULL;
}

static void test_copy_from_fresh_thread(void)
{
    struct fresh_thread_arg a = {.n = 4096};
    REQUIRE_OK(gpumem_stream_create(&a.stream));
    REQUIRE_OK(gpumem_malloc(&a.device, a.n));
    REQUIRE_OK(gpumem_host_alloc((void **)&a.src, a.n, 0));
    REQUIRE_OK(gpumem_host_alloc((void **)&a.dst, a.n, 0));
    for (size_t i = 0; i < a.n; ++i)
        a.src[i] = (uint8_t)(i * 7);
    memset(a.dst, 0, a.n);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, fresh_thread_main, &a) == 0);
    pthread_join(t, NULL);
    CHECK_OK(a.copy_in);
    CHECK_OK(a.fill);
    CHECK_OK(a.copy_out);
    CHECK_OK(a.sync);
    size_t wrong = 0;
    for (size_t i = 0; i < a.n; ++i) {
        uint8_t want = i >= a.n / 2 && i < a.n / 2 + a.n / 4 ? 0x5a : (uint8_t)(i * 7);
        wrong += a.dst[i] != want;
    }
    CHECK(wrong == 0);
    CHECK_OK(gpumem_host_free(a.src));
    CHECK_OK(gpumem_host_free(a.dst));
    CHECK_OK(gpumem_free(a.device));
    CHECK_OK(gpumem_stream_destroy(a.stream));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_stream_lifecycle),
        TEST(test_wrong_type_handles),
        TEST(test_events),
        TEST(test_stream_wrap),
        TEST(test_destroyed_handles_stay_dead),
        TEST(test_copy_from_fresh_thread),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
