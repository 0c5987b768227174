/*
 * When gpumem's own pool gives memory back (docs/semantics.md, "When the own pool gives memory
 * back"), on every backend: after a warm-up, a loop of allocations and frees of changing sizes
 * makes no physical create, release or unmap (counted in the fake drivers through their
 * fake_vmm_call_counts; elsewhere only the memory checks run), and memory still goes back: at
 * a trim, at a synchronisation over the release threshold, by decay once the use fell, and
 * under pressure (a device with no memory left, on the fakes).
 *
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"
#include "graph_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { k_create, k_release, k_map, k_unmap, k_access, k_calls };
typedef void (*counts_fn)(unsigned long long counts[k_calls]);

/* The fake driver's counters, or NULL (host backend, a real driver). */
static counts_fn fake_counts(void)
{
    const char *libs[2] = {getenv("GPUMEM_CUDA_LIBRARY"), getenv("GPUMEM_HIP_LIBRARY")};
    for (int i = 0; i < 2; ++i) {
        if (!libs[i])
            continue;
        void *lib = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
        if (!lib)
            continue;
        counts_fn fn = (counts_fn)dlsym(lib, "fake_vmm_call_counts");
        dlclose(lib); /* gpumem still holds it */
        if (fn)
            return fn;
    }
    return NULL;
}

static uint64_t attr64(gpumem_pool_t pool, int32_t attr)
{
    uint64_t v = 0;
    CHECK_OK(gpumem_pool_get_attribute(pool, attr, &v));
    return v;
}

static uint64_t reserved_of(gpumem_pool_t pool) { return attr64(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT); }

/* gpumem's own pool on device 0 that keeps its memory at synchronisations, or NULL (skipped). */
static gpumem_pool_t own_pool(void)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.implementation = GPUMEM_POOL_BUILTIN;
    gpumem_pool_t pool = NULL;
    if (gpumem_pool_create(&pool, &props) != GPUMEM_SUCCESS)
        return NULL;
    const uint64_t keep = UINT64_MAX;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
    return pool;
}

/* Paged pools (VMM native, GPUMEM_POOL_PAGED not 0) give back the memory under free holes. */
static int paged(void)
{
    const char *env = getenv("GPUMEM_POOL_PAGED");
    return tst_info(0).virtual_memory == GPUMEM_SUPPORT_NATIVE && !(env && strcmp(env, "0") == 0) &&
           !tst_host_strict();
}

static unsigned next_rand(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) & 0x7fff;
}

/* One "step": the largest sizes change by up to 32x from step to step (a framework's batch
 * and sequence drawn anew), eight tensors live at once, freed in an order that leaves holes. */
static int step(gpumem_pool_t pool, gpumem_stream_t s, unsigned *rng)
{
    enum { n = 8 };
    void *p[n] = {0};
    const size_t scale = 1 + next_rand(rng) % 32;
    for (int i = 0; i < n; ++i) {
        const size_t size = (1 + next_rand(rng) % 4) * scale * (size_t)(128 << 10) + 4096 * (size_t)i;
        if (gpumem_malloc_from_pool_async(&p[i], size, pool, s) != GPUMEM_SUCCESS) {
            CHECKF(0, "allocating %zu bytes: %s", size, gpumem_last_error_message());
            for (int j = 0; j < i; ++j)
                CHECK_OK(gpumem_free_async(p[j], s));
            return 0;
        }
    }
    for (int i = 1; i < n; i += 2)
        CHECK_OK(gpumem_free_async(p[i], s));
    for (int i = 0; i < n; i += 2)
        CHECK_OK(gpumem_free_async(p[i], s));
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* After a warm-up, the same loop of changing sizes again makes no create, release or unmap. */
static void test_steady_state_makes_no_driver_calls(void)
{
    gpumem_pool_t pool = own_pool();
    if (!pool)
        SKIP("no own pool here: %s", gpumem_last_error_message());
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    counts_fn counts = fake_counts();
    enum { steps = 150 };
    unsigned long long before[k_calls] = {0}, after[k_calls] = {0};
    double took = 0;
    /* Three passes of warm-up (the pool reaches its steady state in two or three), one measured. */
    for (int pass = 0; pass < 4; ++pass) {
        unsigned rng = 35; /* the same sizes every pass */
        if (pass == 3 && counts)
            counts(before);
        const double t0 = now_s();
        for (int i = 0; i < steps; ++i)
            if (!step(pool, s, &rng))
                break;
        took = now_s() - t0;
    }
    if (counts) {
        counts(after);
        NOTE("steady loop of %d steps (%.3f s): %llu creates, %llu releases, %llu maps, %llu unmaps, %llu set-access",
             steps, took, after[k_create] - before[k_create], after[k_release] - before[k_release],
             after[k_map] - before[k_map], after[k_unmap] - before[k_unmap], after[k_access] - before[k_access]);
        /* A decay deadline (1 s) may fall in a slow loop: then pages over the budget go back. */
        if (took < 0.9) {
            CHECK(after[k_create] == before[k_create]);
            CHECK(after[k_release] == before[k_release]);
            CHECK(after[k_unmap] == before[k_unmap]);
        }
    }
    const uint64_t held = reserved_of(pool);
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(reserved_of(pool) == held); /* the release threshold keeps it */
    CHECK_OK(gpumem_pool_trim_to(pool, 0));
    CHECK(reserved_of(pool) == 0);
    if (counts) {
        unsigned long long trimmed[k_calls];
        counts(trimmed);
        if (paged() && held)
            CHECK(trimmed[k_unmap] > after[k_unmap]);
        /* Every physical allocation made is released again: none is kept past a call. */
        CHECKF(trimmed[k_create] == trimmed[k_release], "%llu creates, %llu releases", trimmed[k_create],
               trimmed[k_release]);
    }
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* The own pool and a stream for a test that waits for decay deadlines, or NULL with *why (the
 * reason to skip): a fake that runs stream work only when waited for completes no free. */
static gpumem_pool_t timed_pool(gpumem_stream_t *s, const char **why)
{
    if (getenv("FAKE_CUDA_DEFER") || getenv("FAKE_HIP_DEFER")) {
        *why = "stream work runs only when waited for: no free completes without a synchronisation";
        return NULL;
    }
    gpumem_pool_t pool = own_pool();
    if (!pool) {
        static char reason[512];
        snprintf(reason, sizeof reason, "no own pool here: %s", gpumem_last_error_message());
        *why = reason;
        return NULL;
    }
    if (gpumem_stream_create(s) != GPUMEM_SUCCESS) {
        CHECKF(0, "gpumem_stream_create: %s", gpumem_last_error_message());
        CHECK_OK(gpumem_pool_destroy(pool));
        *why = "no stream";
        return NULL;
    }
    return pool;
}

/* A steady loop slower than the decay period (1 s): the deadlines that fall in it give nothing
 * back that the loop needs again, so once the decay window (four periods here) has seen the loop, its
 * passes make no create, release or unmap.  Fake drivers only (they count the calls), and
 * paged pools only (an unpaged pool never gives back between synchronisations). */
static void test_steady_state_spans_deadlines(void)
{
    counts_fn counts = fake_counts();
    if (!counts || !paged())
        SKIP("needs a fake driver's call counts and a paged pool");
    gpumem_stream_t s = NULL;
    const char *why = NULL;
    gpumem_pool_t pool = timed_pool(&s, &why);
    if (!pool)
        SKIP("%s", why);
    enum { steps = 100, warm_passes = 5, passes = 7 };
    unsigned long long before[k_calls] = {0}, after[k_calls] = {0};
    const double t0 = now_s();
    double measured_from = 0;
    for (int pass = 0; pass < passes; ++pass) {
        unsigned rng = 35; /* the same sizes every pass */
        if (pass == warm_passes) {
            counts(before);
            measured_from = now_s();
        }
        for (int i = 0; i < steps; ++i) {
            if (!step(pool, s, &rng))
                break;
            struct timespec nap = {0, 12 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
    }
    counts(after);
    NOTE("%d passes of %d steps over %.1f s, the last %d (%.1f s, two or more deadlines): %llu creates, %llu releases, "
         "%llu maps, %llu unmaps, %llu set-access",
         passes, steps, now_s() - t0, passes - warm_passes, now_s() - measured_from, after[k_create] - before[k_create],
         after[k_release] - before[k_release], after[k_map] - before[k_map], after[k_unmap] - before[k_unmap],
         after[k_access] - before[k_access]);
    CHECK(after[k_create] == before[k_create]);
    CHECK(after[k_release] == before[k_release]);
    CHECK(after[k_unmap] == before[k_unmap]);
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* A synchronisation gives back what is over the release threshold (0: everything free). */
static void test_synchronisation_gives_back(void)
{
    gpumem_pool_t pool = own_pool();
    if (!pool)
        SKIP("no own pool here: %s", gpumem_last_error_message());
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    unsigned rng = 7;
    for (int i = 0; i < 40; ++i)
        step(pool, s, &rng);
    CHECK(reserved_of(pool) > 0);
    const uint64_t zero = 0;
    CHECK_OK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(reserved_of(pool) == 0);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* The decay tests' big phase: `count` blocks of 8 MiB allocated on s, then freed. */
static void big_phase(gpumem_pool_t pool, gpumem_stream_t s, void **p, int count)
{
    for (int i = 0; i < count; ++i)
        CHECK_OK(gpumem_malloc_from_pool_async(&p[i], (size_t)8 << 20, pool, s));
    for (int i = 0; i < count; ++i)
        CHECK_OK(gpumem_free_async(p[i], s));
}

/* Then small use for `seconds`: a 3 MiB block (the pool's slow path, which checks the decay
 * deadline) allocated and freed every 50 ms. */
static void small_use(gpumem_pool_t pool, gpumem_stream_t s, double seconds)
{
    const double t0 = now_s();
    while (now_s() - t0 < seconds) {
        void *q = NULL;
        CHECK_OK(gpumem_malloc_from_pool_async(&q, (size_t)3 << 20, pool, s));
        CHECK_OK(gpumem_free_async(q, s));
        struct timespec nap = {0, 50 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

/* Once the use fell, a paged pool gives its memory back over a few decay periods (1 s each)
 * after a window of four (GPUMEM_POOL_DECAY=4, set in main), from its later calls alone: no trim,
 * no synchronisation. */
static void test_decay_gives_back(void)
{
    if (!paged())
        SKIP("the pool is not paged here: it gives back whole chunks at a trim or a synchronisation");
    gpumem_stream_t s = NULL;
    const char *why = NULL;
    gpumem_pool_t pool = timed_pool(&s, &why);
    if (!pool)
        SKIP("%s", why);
    enum { big = 24 };
    void *p[big] = {0};
    big_phase(pool, s, p, big);
    const uint64_t high = reserved_of(pool);
    CHECK(high >= (uint64_t)big * (8 << 20));
    /* Small use for seven and a half decay periods: four in the window, then the decay. */
    small_use(pool, s, 7.5);
    const uint64_t low = reserved_of(pool);
    NOTE("held %llu bytes after the big phase, %llu after 7.5 s of small use", (unsigned long long)high,
         (unsigned long long)low);
    CHECK(low <= high / 3 * 2);
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* Nothing goes back during a capture: with a decay deadline due, an allocation a capture makes
 * (graph-private memory from the own pool) unmaps nothing; the thread's next allocation outside
 * the capture gives back what the deadline decided.  Fake drivers only (they count unmaps; a
 * capture needs the CUDA or HIP runtime). */
static void test_no_give_back_during_capture(void)
{
    counts_fn counts = fake_counts();
    if (!counts || !paged())
        SKIP("needs a fake driver's call counts and a paged pool");
    if (!gd_open(tst_backend()))
        SKIP("no capture API in the runtime gpumem loaded");
    void *native = NULL;
    REQUIRE(gd_stream_create_nonblocking(&native) == GD_OK);
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_wrap(native, &s));
    gpumem_pool_t pool = own_pool();
    REQUIRE(pool);
    /* A big phase, then small use until the decay window (four periods) has passed and the
     * decay gives back, then a pause: a deadline is due. */
    enum { big = 24 };
    void *p[big] = {0};
    big_phase(pool, s, p, big);
    CHECK_OK(gpumem_stream_synchronize(s));
    small_use(pool, s, 5.5);
    CHECK_OK(gpumem_stream_synchronize(s));
    struct timespec pause = {1, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    unsigned long long before[k_calls], during[k_calls], after[k_calls];
    counts(before);
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == GD_OK);
    void *in_graph = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&in_graph, (size_t)5 << 20, pool, s));
    CHECK_OK(gpumem_free_async(in_graph, s));
    counts(during);
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == GD_OK);
    if (graph)
        CHECK(gd_graph_destroy(graph) == GD_OK);
    void *outside = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&outside, (size_t)6 << 20, pool, s));
    CHECK_OK(gpumem_free_async(outside, s));
    counts(after);
    NOTE("unmaps: %llu during the capture's allocation, %llu at the next one outside it",
         during[k_unmap] - before[k_unmap], after[k_unmap] - during[k_unmap]);
    CHECK(during[k_unmap] == before[k_unmap]);
    CHECK(during[k_release] == before[k_release]);
    CHECK(after[k_unmap] > during[k_unmap]); /* the deadline was due: it gave back afterwards */
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK(gd_stream_destroy(native) == GD_OK);
    CHECK_OK(gpumem_pool_destroy(pool));
    gd_flush_callbacks();
    gd_close();
}

/* Under pressure (the device has no memory left for a new page) the pool gives back every free
 * page and backs again, whatever its budget: a fake driver only, where the device can be filled
 * without touching memory. */
static void test_pressure_gives_back(void)
{
    gpumem_pool_t pool = own_pool();
    if (!pool)
        SKIP("no own pool here: %s", gpumem_last_error_message());
    if (!fake_counts()) {
        CHECK_OK(gpumem_pool_destroy(pool));
        SKIP("filling the device is safe on a fake driver only");
    }
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    enum { blocks = 24 };
    void *p[blocks] = {0};
    for (int i = 0; i < blocks; ++i)
        CHECK_OK(gpumem_malloc_from_pool_async(&p[i], (size_t)8 << 20, pool, s));
    for (int i = 0; i < blocks; ++i)
        CHECK_OK(gpumem_free_async(p[i], s));
    CHECK_OK(gpumem_stream_synchronize(s)); /* the frees completed; the threshold keeps the memory */
    const uint64_t held = reserved_of(pool);
    CHECK(held >= (uint64_t)blocks * (8 << 20));
    size_t free_bytes = 0, total = 0;
    CHECK_OK(gpumem_mem_get_info(&free_bytes, &total));
    const size_t room = (size_t)64 << 20; /* far less than the next block needs */
    void *hog = NULL;
    if (free_bytes > room + ((size_t)2 << 20) &&
        gpumem_malloc(&hog, (free_bytes - room) / ((size_t)2 << 20) * ((size_t)2 << 20)) == GPUMEM_SUCCESS) {
        /* Larger than any free run: new pages, which only the pool's free pages can back. */
        void *big = NULL;
        CHECK_OK(gpumem_malloc_from_pool_async(&big, (size_t)256 << 20, pool, s));
        NOTE("held %llu bytes before, %llu with the 256 MiB block", (unsigned long long)held,
             (unsigned long long)reserved_of(pool));
        CHECK(reserved_of(pool) <= ((uint64_t)256 << 20) + ((uint64_t)4 << 20));
        if (big)
            CHECK_OK(gpumem_free_async(big, s));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_free(hog));
    } else {
        NOTE("the device could not be filled: %s", gpumem_last_error_message());
    }
    CHECK_OK(gpumem_pool_trim_to(pool, 0));
    CHECK(reserved_of(pool) == 0);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

int main(int argc, char **argv)
{
    /* The decay tests' timing counts on a window of four seconds (the default): fixed here. */
    setenv("GPUMEM_POOL_DECAY", "4", 1);
    static const tst_case_t cases[] = {
        TEST(test_steady_state_makes_no_driver_calls),
        TEST(test_steady_state_spans_deadlines),
        TEST(test_synchronisation_gives_back),
        TEST(test_decay_gives_back),
        TEST(test_no_give_back_during_capture),
        TEST(test_pressure_gives_back),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
