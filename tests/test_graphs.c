/* Stream capture (CUDA and HIP graphs): every stream-ordered call on a capturing stream is
 * recorded or refused without harm, in each capture mode, on both pool implementations; a
 * graph replays with the right bytes; gpumem's own pool gives a graph private blocks, which no
 * allocation outside the graph receives, and which come back once the graph is destroyed.
 *
 * The capture is driven through the runtime gpumem loaded (tests/graph_driver.h): the fakes in
 * CI, the real driver on a GPU (tools/device/gpu-suite.sh runs this file there too).  The host backend
 * has no graphs: every case is skipped there (docs/graphs.md says what host programs get). */
#include "harness.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "debug_util.h"
#include "graph_driver.h"

enum { N = 4096, LAUNCHES = 5 };

static const char *mode_name(int mode)
{
    return mode == GD_MODE_GLOBAL ? "global" : mode == GD_MODE_THREAD_LOCAL ? "thread-local" : "relaxed";
}

/* The capture API of the backend under test, or a skip. */
static int open_capture(void)
{
    if (tst_backend() == GPUMEM_BACKEND_HOST)
        return 0;
    /* Instantiating a graph needs a current context, as an application has one: gpumem
     * leaves the thread's context as it found it (none here) after each of its own calls. */
    if (gpumem_set_device(0) != GPUMEM_SUCCESS)
        return 0;
    return gd_open(tst_backend());
}

/* The device's default pool (vendor's where the device has pools), or gpumem's own. */
static int make_pool(int own, gpumem_pool_t *pool)
{
    if (!own) {
        gpumem_device_info_t info = tst_info(0);
        if (info.memory_pools != GPUMEM_SUPPORT_NATIVE)
            return 0;
        return gpumem_device_get_default_pool(pool, 0) == GPUMEM_SUCCESS;
    }
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = 0;
    props.implementation = GPUMEM_POOL_BUILTIN;
    return gpumem_pool_create(pool, &props) == GPUMEM_SUCCESS;
}

static uint64_t used_bytes(gpumem_pool_t pool)
{
    uint64_t used = 0;
    CHECK_OK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    return used;
}

/* The pool's used bytes once the runtime's pending user-object destructors have run (the graphs
 * destroyed so far have given their blocks back), or after about 200 tries. */
static uint64_t used_when_settled(gpumem_pool_t pool, uint64_t expect)
{
    uint64_t used = used_bytes(pool);
    for (int tries = 0; tries < 200 && used != expect; ++tries) {
        gd_flush_callbacks();
        used = used_bytes(pool);
    }
    return used;
}

/* Whether the file at `path` contains `needle`. */
static int file_contains(const char *path, const char *needle)
{
    static char text[1 << 20];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return strstr(text, needle) != NULL;
}

/* The start of a case on gpumem's own pool: a new pool and a stream (and its native handle), or
 * why the case cannot run here (then nothing was made). */
static const char *own_pool_case(gpumem_pool_t *pool, gpumem_stream_t *s, void **native)
{
    if (!open_capture())
        return "no graphs on this backend";
    if (!make_pool(1, pool))
        return "gpumem's own pool is refused here (GPUMEM_FALLBACK=deny with pools disabled)";
    if (gpumem_stream_create(s) != GPUMEM_SUCCESS) {
        gpumem_pool_destroy(*pool);
        return "no stream";
    }
    *native = gpumem_stream_native(*s);
    return NULL;
}

/* One capture on `pool` in `mode`: allocate, fill, copy, a batch, free; replay LAUNCHES times
 * with allocations outside the graph in between; destroy; the pool's blocks come back. */
static void capture_and_replay(int own, int mode)
{
    gpumem_pool_t pool = NULL;
    if (!make_pool(own, &pool)) {
        printf("  (%s pool unavailable here)\n", own ? "own" : "vendor");
        return;
    }
    gpumem_stream_t s = NULL, other = NULL, side = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_stream_create(&other));
    REQUIRE_OK(gpumem_stream_create(&side));
    gpumem_event_t fork = NULL, join = NULL;
    REQUIRE_OK(gpumem_event_create(&fork));
    REQUIRE_OK(gpumem_event_create(&join));
    gpumem_pool_t was_current = NULL;
    REQUIRE_OK(gpumem_device_get_pool(&was_current, 0));
    REQUIRE_OK(gpumem_device_set_pool(0, pool)); /* gpumem_malloc_async takes the current pool */
    void *native = gpumem_stream_native(s);
    unsigned char *out1 = NULL, *out2 = NULL, *out3 = NULL, *in = NULL;
    REQUIRE_OK(gpumem_host_alloc((void **)&out1, N, 0));
    REQUIRE_OK(gpumem_host_alloc((void **)&out2, N, 0));
    REQUIRE_OK(gpumem_host_alloc((void **)&out3, N, 0));
    REQUIRE_OK(gpumem_host_alloc((void **)&in, N, 0));
    memset(in, 0x3c, N);
    const uint64_t used_before = own ? used_bytes(pool) : 0;

    REQUIRE(gd_begin(native, mode) == 0);
    void *p = NULL, *q = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&p, N, pool, s));
    CHECK_OK(gpumem_memset_async(p, 0x11, N, s));
    CHECK_OK(gpumem_memcpy_async(out1, p, N, s));
    CHECK_OK(gpumem_malloc_from_pool_async(&q, N, pool, s));
    /* A batch on a capturing stream becomes one copy per entry. */
    void *dsts[2] = {q, (char *)q + N / 2};
    const void *srcs[2] = {in, (char *)in + N / 2};
    size_t sizes[2] = {N / 2, N / 2};
    CHECK_OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, 2, s));
    CHECK_OK(gpumem_memcpy_async(out2, q, N, s));
    CHECK_OK(gpumem_free_async(q, s));
    /* Freed in the capture, reused in it in stream order (the own pool: the same block). */
    void *r = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&r, N, pool, s));
    CHECK_OK(gpumem_memset_async(r, 0x22, N, s));
    CHECK_OK(gpumem_free_async(r, s));
    CHECK_OK(gpumem_free_async(p, s));
    /* A fork to a second stream and a join back (event record, stream wait), with the current
     * pool's allocation there (gpumem_malloc_async). */
    CHECK_OK(gpumem_event_record(fork, s));
    CHECK_OK(gpumem_stream_wait_event(side, fork));
    void *t = NULL;
    CHECK_OK(gpumem_malloc_async(&t, N, side));
    CHECK_OK(gpumem_memset_async(t, 0x44, N, side));
    CHECK_OK(gpumem_memcpy_async(out3, t, N, side));
    CHECK_OK(gpumem_free_async(t, side));
    CHECK_OK(gpumem_event_record(join, side));
    CHECK_OK(gpumem_stream_wait_event(s, join));
    CHECKF(gd_status(native) == GD_STATUS_ACTIVE, "the %s capture (%s pool) was invalidated: %s", mode_name(mode),
           own ? "own" : "vendor", gpumem_last_error_message());
    void *graph = NULL;
    int ended = gd_end(native, &graph);
    CHECKF(ended == 0 && graph, "ending the %s capture gave %d", mode_name(mode), ended);
    if (!graph)
        goto out;
    CHECKF(gd_node_count(graph) >= 6, "the graph has %ld nodes", gd_node_count(graph));
    void *exec = NULL;
    int made = gd_instantiate(&exec, graph);
    CHECKF(made == 0, "instantiating the %s capture (%s pool) gave %d", mode_name(mode), own ? "own" : "vendor", made);
    if (made != 0) {
        gd_graph_destroy(graph);
        goto out;
    }

    for (int launch = 0; launch < LAUNCHES; ++launch) {
        memset(out1, 0, N);
        memset(out2, 0, N);
        memset(out3, 0, N);
        CHECK(gd_launch(exec, native) == 0);
        /* Work outside the graph, on another stream of the same pool, while the graph runs:
         * it never receives a block the graph owns. */
        void *x = NULL;
        CHECK_OK(gpumem_malloc_from_pool_async(&x, N, pool, other));
        CHECKF(x != p && x != q && x != r && x != t,
               "an allocation outside the graph got the graph's block %p (launch %d)", x, launch);
        CHECK_OK(gpumem_memset_async(x, 0x77, N, other));
        CHECK_OK(gpumem_free_async(x, other));
        CHECK_OK(gpumem_stream_synchronize(s));
        CHECK_OK(gpumem_stream_synchronize(other));
        CHECKF(tst_verify_byte(out1, N, 0x11) == N, "launch %d: the fill did not replay (%s pool, %s)", launch,
               own ? "own" : "vendor", mode_name(mode));
        CHECKF(tst_verify_byte(out2, N, 0x3c) == N, "launch %d: the batch did not replay (%s pool, %s)", launch,
               own ? "own" : "vendor", mode_name(mode));
        CHECKF(tst_verify_byte(out3, N, 0x44) == N, "launch %d: the forked stream's work did not replay (%s pool, %s)",
               launch, own ? "own" : "vendor", mode_name(mode));
    }
    CHECK(gd_exec_destroy(exec) == 0);
    CHECK(gd_graph_destroy(graph) == 0);
    if (own) {
        /* The graph's blocks come back once the runtime has run its destructors. */
        const uint64_t used = used_when_settled(pool, used_before);
        CHECKF(used == used_before, "the graph's blocks did not come back: %llu bytes used, %llu before",
               (unsigned long long)used, (unsigned long long)used_before);
    }
out:
    CHECK_OK(gpumem_device_set_pool(0, was_current));
    CHECK_OK(gpumem_event_destroy(fork));
    CHECK_OK(gpumem_event_destroy(join));
    CHECK_OK(gpumem_stream_destroy(side));
    CHECK_OK(gpumem_stream_destroy(other));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_host_free(out1));
    CHECK_OK(gpumem_host_free(out2));
    CHECK_OK(gpumem_host_free(out3));
    CHECK_OK(gpumem_host_free(in));
    if (own)
        CHECK_OK(gpumem_pool_destroy(pool));
}

/* The smallest graph: one fill of gpumem_malloc memory and one copy out, replayed. */
static void test_minimal_capture(void)
{
    if (!open_capture())
        SKIP("no graphs on this backend");
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    void *native = gpumem_stream_native(s);
    void *d = NULL;
    unsigned char *out = NULL;
    REQUIRE_OK(gpumem_malloc(&d, N));
    REQUIRE_OK(gpumem_host_alloc((void **)&out, N, 0));
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    CHECK_OK(gpumem_memset_async(d, 0x5e, N, s));
    CHECK_OK(gpumem_memcpy_async(out, d, N, s));
    void *graph = NULL;
    int ended = gd_end(native, &graph);
    CHECKF(ended == 0 && graph, "ending the capture gave %d", ended);
    void *exec = NULL;
    int made = graph ? gd_instantiate(&exec, graph) : -1;
    CHECKF(made == 0, "instantiating a graph of a fill and a copy gave %d", made);
    if (made == 0) {
        for (int launch = 0; launch < LAUNCHES; ++launch) {
            memset(out, 0, N);
            CHECK(gd_launch(exec, native) == 0);
            CHECK_OK(gpumem_stream_synchronize(s));
            CHECKF(tst_verify_byte(out, N, 0x5e) == N, "launch %d did not fill and copy", launch);
        }
        CHECK(gd_exec_destroy(exec) == 0);
    }
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    CHECK_OK(gpumem_free(d));
    CHECK_OK(gpumem_host_free(out));
    CHECK_OK(gpumem_stream_destroy(s));
}

/* Calls the runtimes cannot record (a prefetch, attaching managed memory to a stream) are
 * NOT_SUPPORTED, name the capture, and leave it intact; a discard is simply not made. */
static void test_unrecordable_calls_are_refused(void)
{
    if (!open_capture())
        SKIP("no graphs on this backend");
    gpumem_device_info_t info = tst_info(0);
    void *m = NULL;
    if (gpumem_managed_alloc(&m, N, GPUMEM_ATTACH_GLOBAL) != GPUMEM_SUCCESS)
        SKIP("no managed memory");
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    void *native = gpumem_stream_native(s);
    for (int mode = GD_MODE_GLOBAL; mode <= GD_MODE_RELAXED; ++mode) {
        REQUIRE(gd_begin(native, mode) == 0);
        const void *ptrs[1] = {m};
        size_t sizes[1] = {N};
        int32_t to[1] = {0};
        if (info.managed_memory == GPUMEM_SUPPORT_NATIVE) {
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_prefetch_async(m, N, 0, s));
            CHECK(tst_contains(gpumem_last_error_message(), "capturing"));
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_prefetch_batch_async(ptrs, sizes, 1, to, s));
            CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_stream_attach(s, m, 0, GPUMEM_ATTACH_SINGLE));
        } else {
            CHECK_OK(gpumem_prefetch_async(m, N, 0, s)); /* emulated: nothing moves, nothing to record */
        }
        CHECK_OK(gpumem_discard_batch_async((void *const *)ptrs, sizes, 1, s));
        CHECK_OK(gpumem_advise(m, N, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
        CHECKF(gd_status(native) == GD_STATUS_ACTIVE, "a refused call invalidated the %s capture: %s",
               mode_name(mode), gpumem_last_error_message());
        void *graph = NULL;
        CHECK(gd_end(native, &graph) == 0);
        if (graph)
            CHECK(gd_graph_destroy(graph) == 0);
    }
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(m));
}

/* The framework hooks (PyTorch's CUDAPluggableAllocator) during a global capture on a
 * non-blocking stream: freeing memory made before the capture on the legacy stream, and
 * allocating there, leave the capture intact, as the frameworks' own allocators do. */
static void test_hooks_leave_capture_intact(void)
{
    if (!open_capture())
        SKIP("no graphs on this backend");
    void *cap = NULL;
    REQUIRE(gd_stream_create_nonblocking(&cap) == 0);
    void *before = gpumem_pluggable_malloc(N, 0, NULL);
    if (!before) {
        CHECKF(tst_contains(gpumem_last_error_message(), "GPUMEM_FALLBACK=deny"), "the hook failed: %s",
               gpumem_last_error_message());
        gd_stream_destroy(cap);
        SKIP("no pool here (GPUMEM_FALLBACK=deny with pools disabled)");
    }
    REQUIRE_OK(gpumem_device_synchronize());
    REQUIRE(gd_begin(cap, GD_MODE_GLOBAL) == 0);
    void *inside = gpumem_pluggable_malloc(N, 0, cap);
    CHECKF(inside != NULL, "allocating on the capturing stream failed: %s", gpumem_last_error_message());
    gpumem_pluggable_free(before, N, 0, NULL);
    CHECKF(gd_status(cap) == GD_STATUS_ACTIVE, "freeing earlier memory on the legacy stream invalidated the capture: %s",
           gpumem_last_error_message());
    if (inside)
        gpumem_pluggable_free(inside, N, 0, cap);
    void *graph = NULL;
    CHECK(gd_end(cap, &graph) == 0);
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    CHECK(gd_stream_destroy(cap) == 0);
}

/* gpumem's own pool: a block made before a capture and freed in it becomes the graph's: no
 * allocation outside receives it while the graph lives; it comes back when the graph goes. */
static void test_block_freed_in_capture_is_the_graphs(void)
{
    gpumem_pool_t pool = NULL;
    gpumem_stream_t s = NULL;
    void *native = NULL;
    const char *why = own_pool_case(&pool, &s, &native);
    if (why)
        SKIP("%s", why);
    const uint64_t used_before = used_bytes(pool);
    void *pre = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&pre, N, pool, s));
    REQUIRE_OK(gpumem_stream_synchronize(s));
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    CHECK_OK(gpumem_memset_async(pre, 0x31, N, s));
    CHECK_OK(gpumem_free_async(pre, s));
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == 0);
    /* The same stream, the same size: an ordinary free would hand the block out again here. */
    void *after = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&after, N, pool, s));
    CHECKF(after != pre, "the block freed in the capture went to an allocation outside the graph");
    CHECK_OK(gpumem_free_async(after, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    const uint64_t used = used_when_settled(pool, used_before);
    CHECKF(used == used_before, "the graph kept the block: %llu bytes used, %llu before", (unsigned long long)used,
           (unsigned long long)used_before);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* GPUMEM_TRACE names the blocks a graph takes from gpumem's own pool (graph_block) and their
 * return when the graph is destroyed (graph_release). */
static void test_trace_names_graph_blocks(void)
{
    if (!open_capture())
        SKIP("no graphs on this backend");
    gpumem_pool_t pool = NULL;
    if (!make_pool(1, &pool))
        SKIP("gpumem's own pool is refused here (GPUMEM_FALLBACK=deny with pools disabled)");
    CHECK_OK(gpumem_pool_destroy(pool));
    char dir[PATH_MAX], path[PATH_MAX + 16], var[PATH_MAX + 32];
    REQUIRE(dbg_scratch(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    snprintf(var, sizeof var, "GPUMEM_TRACE=%s", path);
    const char *env[] = {var, NULL};
    REQUIRE_OK(dbg_restart(env));
    REQUIRE(open_capture());
    REQUIRE(make_pool(1, &pool));
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    void *native = gpumem_stream_native(s);
    const uint64_t used_before = used_bytes(pool);
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    void *p = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&p, N, pool, s));
    CHECK_OK(gpumem_free_async(p, s));
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == 0);
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    (void)used_when_settled(pool, used_before);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
    REQUIRE_OK(gpumem_finalize());
    CHECKF(file_contains(path, "\"graph_block\""), "the trace has no graph_block event");
    CHECKF(file_contains(path, "\"graph_release\""), "the trace has no graph_release event");
    const char *files[] = {"trace.json", NULL};
    dbg_cleanup(dir, files);
    REQUIRE_OK(dbg_restart(NULL));
}

/* A snapshot names the blocks a graph owns (gpumem_snapshot_allocation_t::graph, "graph" in
 * the JSON), and only those. */
static void test_snapshot_names_graph_blocks(void)
{
    gpumem_pool_t pool = NULL;
    gpumem_stream_t s = NULL;
    void *native = NULL;
    const char *why = own_pool_case(&pool, &s, &native);
    if (why)
        SKIP("%s", why);
    void *outside = NULL, *inside = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&outside, N, pool, s));
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    CHECK_OK(gpumem_malloc_from_pool_async(&inside, N, pool, s));
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == 0);
    gpumem_snapshot_t *snap = NULL;
    REQUIRE_OK(gpumem_snapshot_take(&snap));
    int seen_inside = 0, seen_outside = 0;
    for (size_t i = 0; i < snap->allocation_count; ++i) {
        const gpumem_snapshot_allocation_t *a =
            GPUMEM_SNAPSHOT_ITEM(gpumem_snapshot_allocation_t, snap->allocations, i);
        if (a->ptr == inside) {
            seen_inside = 1;
            CHECKF(a->graph != 0, "the graph's block is not named as the graph's");
        } else if (a->ptr == outside) {
            seen_outside = 1;
            CHECKF(a->graph == 0, "a block outside the graph is named as a graph's (%llu)",
                   (unsigned long long)a->graph);
        }
    }
    CHECK(seen_inside && seen_outside);
    char dir[PATH_MAX], path[PATH_MAX + 16];
    REQUIRE(dbg_scratch(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/snapshot.json", dir);
    CHECK_OK(gpumem_snapshot_write_json(snap, path));
    CHECK_OK(gpumem_snapshot_release(snap));
    CHECKF(file_contains(path, "\"graph\":"), "the snapshot JSON does not name the graph's block");
    const char *files[] = {"snapshot.json", NULL};
    dbg_cleanup(dir, files);
    CHECK_OK(gpumem_free_async(inside, s)); /* the graph keeps it until it goes */
    CHECK_OK(gpumem_free_async(outside, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    (void)used_when_settled(pool, 0);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* A graph that outlives gpumem_finalize: its blocks went with the pools at finalize, and its
 * destruction afterwards (the runtime then runs gpumem's callback) touches nothing freed. */
static void test_graph_outlives_finalize(void)
{
    gpumem_pool_t pool = NULL;
    gpumem_stream_t s = NULL;
    void *native = NULL;
    const char *why = own_pool_case(&pool, &s, &native);
    if (why)
        SKIP("%s", why);
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    void *p = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&p, N, pool, s));
    CHECK_OK(gpumem_free_async(p, s));
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == 0);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
    REQUIRE_OK(dbg_restart(NULL)); /* finalize (the graph still holds its block) and init again */
    REQUIRE(open_capture());
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    gd_flush_callbacks();
    void *q = NULL; /* gpumem works on after the orphaned graph's callback */
    CHECK_OK(gpumem_malloc_async(&q, N, NULL));
    CHECK_OK(gpumem_free_async(q, NULL));
    CHECK_OK(gpumem_device_synchronize());
}

/* A block allocated in a capture that the caller still holds when the graph is destroyed stays
 * the caller's (PyTorch keeps a graph's static outputs past the graph): no allocation receives it,
 * and its free later is an ordinary free that takes nobody else's memory. */
static void test_held_block_outlives_graph(void)
{
    gpumem_pool_t pool = NULL;
    gpumem_stream_t s = NULL;
    void *native = NULL;
    const char *why = own_pool_case(&pool, &s, &native);
    if (why)
        SKIP("%s", why);
    const uint64_t used_before = used_bytes(pool);
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    void *held = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&held, N, pool, s));
    CHECK_OK(gpumem_memset_async(held, 0x12, N, s));
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == 0);
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    (void)used_when_settled(pool, used_before); /* the callback has run: nothing comes back */
    void *x = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&x, N, pool, s));
    CHECKF(x != held, "an allocation after the graph went got the block its caller still holds");
    CHECK_OK(gpumem_free_async(held, s));
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(x, &info));
    CHECKF(info.kind == GPUMEM_KIND_STREAM_ORDERED, "freeing the held block freed another allocation");
    CHECK_OK(gpumem_free_async(x, s));
    CHECK_OK(gpumem_stream_synchronize(s));
    CHECK(used_when_settled(pool, used_before) == used_before);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

static void test_vendor_pool_every_mode(void)
{
    if (!open_capture())
        SKIP("no graphs on this backend");
    for (int mode = GD_MODE_GLOBAL; mode <= GD_MODE_RELAXED; ++mode)
        capture_and_replay(0, mode);
}

static void test_own_pool_every_mode(void)
{
    if (!open_capture())
        SKIP("no graphs on this backend");
    for (int mode = GD_MODE_GLOBAL; mode <= GD_MODE_RELAXED; ++mode)
        capture_and_replay(1, mode);
}

/* An aborted capture (invalidated by a call the runtime refuses) still gives the own pool's
 * blocks back, and gpumem refuses further own-pool work on the stream without harm. */
static void test_invalidated_capture_gives_blocks_back(void)
{
    gpumem_pool_t pool = NULL;
    gpumem_stream_t s = NULL;
    void *native = NULL;
    const char *why = own_pool_case(&pool, &s, &native);
    if (why)
        SKIP("%s", why);
    const uint64_t used_before = used_bytes(pool);
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    void *p = NULL;
    CHECK_OK(gpumem_malloc_from_pool_async(&p, N, pool, s));
    /* Synchronising a capturing stream cannot be captured: the runtime refuses it. */
    gpumem_status_t st = gpumem_stream_synchronize(s);
    CHECKF(st == GPUMEM_ERROR_NOT_SUPPORTED, "synchronising a capturing stream gave %s", gpumem_status_string(st));
    CHECK(tst_contains(gpumem_last_error_message(), "captur"));
    CHECK(gd_status(native) == GD_STATUS_INVALIDATED);
    void *more = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_malloc_from_pool_async(&more, N, pool, s));
    CHECK(tst_contains(gpumem_last_error_message(), "invalidated"));
    void *graph = NULL;
    CHECK(gd_end(native, &graph) != 0 && graph == NULL);
    /* The caller still holds p: an ordinary block now, freed as usual. */
    (void)used_when_settled(pool, used_before + N);
    CHECK_OK(gpumem_free_async(p, NULL));
    CHECK_OK(gpumem_device_synchronize());
    const uint64_t used = used_when_settled(pool, used_before);
    CHECKF(used == used_before, "an aborted capture kept its blocks: %llu bytes used, %llu before",
           (unsigned long long)used, (unsigned long long)used_before);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(pool));
}

/* gpumem's own calls during another thread's global capture invalidate nothing: pool
 * attributes, trims and synchronisation of other streams. */
static void test_own_calls_leave_capture_intact(void)
{
    gpumem_pool_t own = NULL;
    gpumem_stream_t s = NULL;
    void *native = NULL;
    const char *why = own_pool_case(&own, &s, &native);
    if (why)
        SKIP("%s", why);
    void *warm = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&warm, N, own, NULL));
    REQUIRE_OK(gpumem_free_async(warm, NULL));
    REQUIRE(gd_begin(native, GD_MODE_GLOBAL) == 0);
    uint64_t threshold = 0;
    CHECK_OK(gpumem_pool_set_attribute(own, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK_OK(gpumem_pool_trim_to(own, 0));
    gpumem_pool_t def = NULL;
    if (make_pool(0, &def)) {
        CHECK_OK(gpumem_pool_set_attribute(def, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
        CHECK_OK(gpumem_pool_trim_to(def, 0));
    }
    CHECKF(gd_status(native) == GD_STATUS_ACTIVE, "gpumem's pool calls invalidated the capture: %s",
           gpumem_last_error_message());
    void *graph = NULL;
    CHECK(gd_end(native, &graph) == 0);
    if (graph)
        CHECK(gd_graph_destroy(graph) == 0);
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_pool_destroy(own));
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_minimal_capture),
        TEST(test_vendor_pool_every_mode),
        TEST(test_own_pool_every_mode),
        TEST(test_block_freed_in_capture_is_the_graphs),
        TEST(test_invalidated_capture_gives_blocks_back),
        TEST(test_own_calls_leave_capture_intact),
        TEST(test_unrecordable_calls_are_refused),
        TEST(test_trace_names_graph_blocks),
        TEST(test_snapshot_names_graph_blocks),
        TEST(test_graph_outlives_finalize),
        TEST(test_held_block_outlives_graph),
        TEST(test_hooks_leave_capture_intact),
    };
    int rc = tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
    gd_close();
    return rc;
}
