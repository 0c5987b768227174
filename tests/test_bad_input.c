/* Bad input everywhere: each refused call gives its status, never crashes, and leaks nothing
 * (after every call the live bytes and counts of every kind are back at the baseline).
 * SPDX-License-Identifier: MIT */
#include "harness.h"

#include <unistd.h>

#define PAGE 4096

/* Check the status, then that nothing was allocated or freed. */
#define BAD(expected, expr)                                                                                       \
    do {                                                                                                          \
        CHECK_STATUS(expected, expr);                                                                             \
        CHECK_NO_LEAK(&base);                                                                                     \
    } while (0)
#define BAD2(a, b, expr)                                                                                          \
    do {                                                                                                          \
        CHECK_ONE_OF(expr, a, b);                                                                                 \
        CHECK_NO_LEAK(&base);                                                                                     \
    } while (0)

enum { IV = GPUMEM_ERROR_INVALID_VALUE, OOM = GPUMEM_ERROR_OUT_OF_MEMORY, IDEV = GPUMEM_ERROR_INVALID_DEVICE,
       IPTR = GPUMEM_ERROR_INVALID_POINTER, IH = GPUMEM_ERROR_INVALID_HANDLE, NS = GPUMEM_ERROR_NOT_SUPPORTED,
       IPC = GPUMEM_ERROR_IPC };

static gpumem_device_info_t g_info;
static size_t g_gran;

static void setup(void)
{
    g_info = tst_info(0);
    g_gran = 0;
    if (g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        if (gpumem_mem_get_granularity(&g_gran, &props, GPUMEM_GRANULARITY_MINIMUM) != GPUMEM_SUCCESS)
            g_gran = 0;
    }
}

static int has_managed(void) { return g_info.managed_memory != GPUMEM_SUPPORT_NONE; }
static int has_pools(void) { return g_info.memory_pools != GPUMEM_SUPPORT_NONE; }
static int has_vmm(void) { return g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE && g_gran > 0; }
static int has_buffers(void) { return g_info.virtual_memory != GPUMEM_SUPPORT_NONE; }
static int has_register(void) { return g_info.host_register != GPUMEM_SUPPORT_NONE; }
static int has_ipc(void) { return (g_info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0; }
/* Pools may not share where VMM handles do (gpumem's own pool on a GPU). */
static int has_pool_ipc(void) { return (g_info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0; }

static void test_null_out_pointers(void)
{
    setup();
    void *dev = NULL, *managed = NULL;
    gpumem_stream_t s = NULL;
    gpumem_event_t e = NULL;
    gpumem_pool_t pool = NULL;
    gpumem_buffer_t buf = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_event_create(&e));
    CHECK_OK(gpumem_event_record(e, s));
    if (has_managed())
        REQUIRE_OK(gpumem_managed_alloc(&managed, 4096, 0));
    if (has_pools())
        REQUIRE_OK(gpumem_device_get_default_pool(&pool, 0));
    if (has_buffers())
        REQUIRE_OK(gpumem_buffer_create(&buf, 64, 4096, 0));
    size_t sz = 0;
    gpumem_stats_t base = tst_stats();

    BAD(IV, gpumem_get_backend(NULL));
    BAD(IV, gpumem_device_count(NULL));
    BAD(IV, gpumem_get_device(NULL));
    BAD(IV, gpumem_device_get_info(0, NULL));
    BAD(IV, gpumem_mem_get_info(NULL, &sz));
    BAD(IV, gpumem_mem_get_info(&sz, NULL));
    BAD(IV, gpumem_stream_create(NULL));
    BAD(IV, gpumem_stream_wrap(gpumem_stream_native(s), NULL));
    BAD(IV, gpumem_event_create(NULL));
    BAD(IV, gpumem_event_elapsed_ms(NULL, e, e));
    BAD(IV, gpumem_malloc(NULL, 16));
    BAD(IV, gpumem_malloc(NULL, 0));
    BAD(IV, gpumem_host_alloc(NULL, 16, 0));
    BAD(IV, gpumem_host_get_device_pointer(NULL, dev));
    BAD(IV, gpumem_pointer_get_info(dev, NULL));
    BAD(IV, gpumem_get_stats(NULL));
    BAD(IV, gpumem_ipc_recv_fd(0, NULL));
    if (has_managed()) {
        BAD(IV, gpumem_managed_alloc(NULL, 16, 0));
        BAD(IV, gpumem_range_get_attribute(NULL, 4, GPUMEM_RANGE_READ_MOSTLY, managed, 4096));
    }
    if (has_pools()) {
        BAD(IV, gpumem_malloc_async(NULL, 16, s));
        BAD(IV, gpumem_malloc_from_pool_async(NULL, 16, pool, s));
        BAD(IV, gpumem_pool_create(NULL, NULL));
        BAD(IV, gpumem_device_get_default_pool(NULL, 0));
        BAD(IV, gpumem_device_get_pool(NULL, 0));
        BAD(IV, gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, NULL));
        BAD(IV, gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, NULL));
        BAD(IV, gpumem_pool_get_access(NULL, pool, 0));
        BAD(IV, gpumem_pool_set_access(pool, NULL, 1));
        BAD(IV, gpumem_pool_import_pointer(NULL, pool, NULL));
        if (has_pool_ipc())
            BAD(IV, gpumem_pool_import_from_shareable_handle(NULL, 0, GPUMEM_HANDLE_POSIX_FD));
    }
    if (has_vmm()) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        BAD(IV, gpumem_mem_get_granularity(NULL, &props, 0));
        BAD(IV, gpumem_mem_get_granularity(&sz, NULL, 0));
        BAD(IV, gpumem_mem_create(NULL, g_gran, &props));
        BAD(IV, gpumem_mem_create((gpumem_mem_handle_t *)&sz, g_gran, NULL));
        BAD(IV, gpumem_mem_address_reserve(NULL, g_gran, 0, NULL));
        BAD(IV, gpumem_mem_get_access(NULL, 0, dev));
        if (has_ipc())
            BAD(IV, gpumem_mem_import_from_shareable_handle(NULL, 0, GPUMEM_HANDLE_POSIX_FD));
    }
    if (has_buffers()) {
        BAD(IV, gpumem_buffer_create(NULL, 64, 4096, 0));
        BAD(IV, gpumem_buffer_data(buf, NULL));
        BAD(IV, gpumem_buffer_size(buf, NULL));
        CHECK_OK(gpumem_buffer_destroy(buf));
    }
    if (managed)
        CHECK_OK(gpumem_free(managed));
    CHECK_OK(gpumem_event_destroy(e));
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(dev));
}

static void test_huge_sizes(void)
{
    setup();
    void *p = NULL, *dev = NULL;
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    REQUIRE_OK(gpumem_stream_create(&s));
    unsigned char host[64];
    gpumem_stats_t base = tst_stats();

    const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2 + 1, (size_t)1 << 62};
    for (size_t i = 0; i < TST_COUNT(huge); ++i) {
        BAD(OOM, gpumem_malloc(&p, huge[i]));
        BAD(OOM, gpumem_host_alloc(&p, huge[i], 0));
        BAD(OOM, gpumem_host_alloc(&p, huge[i], GPUMEM_HOST_MAPPED));
        if (has_managed())
            BAD(OOM, gpumem_managed_alloc(&p, huge[i], 0));
        if (has_pools())
            BAD(OOM, gpumem_malloc_async(&p, huge[i], s));
        if (has_buffers())
            BAD(OOM, gpumem_buffer_create((gpumem_buffer_t *)&p, huge[i], huge[i], 0));
        /* A copy or fill that long runs past the allocation it starts in. */
        BAD(IV, gpumem_memcpy(dev, host, huge[i]));
        BAD(IV, gpumem_memcpy(host, dev, huge[i]));
        BAD(IV, gpumem_memset(dev, 0, huge[i]));
        BAD(IV, gpumem_memcpy_async(dev, host, huge[i], s));
        BAD(IV, gpumem_memset_async(dev, 0, huge[i], s));
    }
    if (has_vmm()) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        gpumem_mem_handle_t h = 0;
        BAD(OOM, gpumem_mem_create(&h, SIZE_MAX / g_gran * g_gran, &props));
        BAD(OOM, gpumem_mem_address_reserve(&p, SIZE_MAX / g_gran * g_gran, 0, NULL));
    }
    if (has_register()) {
        char *r = (char *)aligned_alloc(PAGE, PAGE);
        REQUIRE(r != NULL);
        BAD2(IV, OOM, gpumem_host_register(r, SIZE_MAX, 0));
        BAD2(IV, OOM, gpumem_host_register(r, SIZE_MAX - (uintptr_t)r + 1, 0)); /* wraps around */
        free(r);
    }
    CHECK_OK(gpumem_stream_destroy(s));
    CHECK_OK(gpumem_free(dev));
}

/* Pointers that are no gpumem allocation's base, given to every call that frees or maps one. */
static void test_unknown_interior_freed_pointers(void)
{
    setup();
    void *dev = NULL, *pinned = NULL, *managed = NULL, *so = NULL;
    void *freed_dev = NULL, *freed_pinned = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    REQUIRE_OK(gpumem_host_alloc(&pinned, 4096, GPUMEM_HOST_MAPPED));
    if (has_managed())
        REQUIRE_OK(gpumem_managed_alloc(&managed, 4096, 0));
    if (has_pools())
        REQUIRE_OK(gpumem_malloc_async(&so, 4096, NULL));
    REQUIRE_OK(gpumem_malloc(&freed_dev, 100));
    REQUIRE_OK(gpumem_free(freed_dev));
    REQUIRE_OK(gpumem_host_alloc(&freed_pinned, 100, 0));
    REQUIRE_OK(gpumem_host_free(freed_pinned));
    int on_stack = 0;
    void *heap = malloc(128);
    REQUIRE(heap != NULL);
    gpumem_stats_t base = tst_stats();

    void *ptrs[12];
    int n = 0;
    ptrs[n++] = &on_stack;
    ptrs[n++] = heap;
    ptrs[n++] = (void *)(uintptr_t)1;
    ptrs[n++] = (void *)(uintptr_t)(UINTPTR_MAX - 15);
    ptrs[n++] = (char *)dev + 1;
    ptrs[n++] = (char *)dev + 4095;
    ptrs[n++] = (char *)pinned + 64;
    ptrs[n++] = freed_dev;
    ptrs[n++] = freed_pinned;
    if (managed)
        ptrs[n++] = (char *)managed + 8;
    if (so)
        ptrs[n++] = (char *)so + 256;
    for (int i = 0; i < n; ++i) {
        void *d = NULL;
        gpumem_pool_ptr_export_data_t data;
        BAD(IPTR, gpumem_free(ptrs[i]));
        BAD(IPTR, gpumem_host_free(ptrs[i]));
        BAD(IPTR, gpumem_host_unregister(ptrs[i]));
        /* (interior pointers of live pinned or managed memory do have a device address) */
        if (ptrs[i] != (char *)pinned + 64 && !(managed && ptrs[i] == (char *)managed + 8))
            BAD2(IPTR, IV, gpumem_host_get_device_pointer(&d, ptrs[i]));
        if (has_pools()) {
            BAD(IPTR, gpumem_free_async(ptrs[i], NULL));
            gpumem_pluggable_free(ptrs[i], 16, 0, NULL);
            CHECK_NO_LEAK(&base);
            if (has_pool_ipc())
                BAD2(IPTR, IV, gpumem_pool_export_pointer(&data, ptrs[i]));
            else
                BAD(NS, gpumem_pool_export_pointer(&data, ptrs[i]));
        }
        if (has_managed()) {
            int32_t v = 0;
            if (ptrs[i] != (char *)managed + 8) { /* managed is live here */
                BAD(IV, gpumem_prefetch_async(ptrs[i], 8, 0, NULL));
                BAD(IV, gpumem_advise(ptrs[i], 8, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
                BAD(IV, gpumem_range_get_attribute(&v, 4, GPUMEM_RANGE_READ_MOSTLY, ptrs[i], 8));
            }
        }
        if (has_vmm()) {
            BAD2(IV, IPTR, gpumem_mem_address_free(ptrs[i], g_gran));
            BAD(IV, gpumem_mem_unmap(ptrs[i], g_gran));
        }
        /* Unknown memory is SUCCESS / UNKNOWN for introspection. */
        gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
        BAD(GPUMEM_SUCCESS, gpumem_pointer_get_info(ptrs[i], &pi));
    }
    /* Freed memory is no one's to copy to or from, nor to fill: refused, nothing written. */
    char buf[16];
    memset(buf, 0x66, sizeof buf);
    void *freed[] = {freed_dev, (char *)freed_dev + 40, freed_pinned, (char *)freed_pinned + 40};
    for (int i = 0; i < 4; ++i) {
        void *to_buf[1] = {buf};
        const void *from_freed[1] = {freed[i]};
        size_t sizes[1] = {sizeof buf};
        BAD(IPTR, gpumem_memcpy(buf, freed[i], sizeof buf));
        BAD(IPTR, gpumem_memcpy(freed[i], buf, sizeof buf));
        BAD(IPTR, gpumem_memcpy_async(buf, freed[i], sizeof buf, NULL));
        BAD(IPTR, gpumem_memset(freed[i], 0, sizeof buf));
        BAD(IPTR, gpumem_memset_async(freed[i], 0, sizeof buf, NULL));
        BAD(IPTR, gpumem_memcpy_batch_async(to_buf, from_freed, sizes, 1, NULL));
    }
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK(tst_verify_byte(buf, sizeof buf, 0x66) == sizeof buf);
    /* The live allocations survived every refusal. */
    CHECK_OK(tst_upload(dev, 4096, 1));
    CHECK(tst_download_verify(dev, 4096, 1));
    free(heap);
    if (so) {
        CHECK_OK(gpumem_free_async(so, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
    }
    if (managed)
        CHECK_OK(gpumem_free(managed));
    CHECK_OK(gpumem_host_free(pinned));
    CHECK_OK(gpumem_free(dev));
}

/* ------------------------------------------------------------------------ */
/* Every kind against every freeing call                                     */
/* ------------------------------------------------------------------------ */

enum { F_FREE, F_HOST_FREE, F_UNREGISTER, F_FREE_ASYNC, F_COUNT };
static const char *const free_names[F_COUNT] = {"gpumem_free", "gpumem_host_free", "gpumem_host_unregister",
                                                "gpumem_free_async"};

typedef struct {
    int kind;
    void *ptr;
    void *raw;
    size_t raw_size;
    gpumem_mem_handle_t h;
    gpumem_buffer_t b;
} obj_t;

static int make_obj(int kind, obj_t *o)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    switch (kind) {
    case GPUMEM_KIND_DEVICE: return gpumem_malloc(&o->ptr, 4096) == GPUMEM_SUCCESS;
    case GPUMEM_KIND_HOST_PINNED: return gpumem_host_alloc(&o->ptr, 4096, 0) == GPUMEM_SUCCESS;
    case GPUMEM_KIND_HOST_REGISTERED:
        if (!has_register())
            return 0;
        o->raw = aligned_alloc(PAGE, PAGE);
        o->ptr = o->raw;
        return o->raw && gpumem_host_register(o->raw, PAGE, 0) == GPUMEM_SUCCESS;
    case GPUMEM_KIND_MANAGED: return has_managed() && gpumem_managed_alloc(&o->ptr, 4096, 0) == GPUMEM_SUCCESS;
    case GPUMEM_KIND_STREAM_ORDERED: return has_pools() && gpumem_malloc_async(&o->ptr, 4096, NULL) == GPUMEM_SUCCESS;
    case GPUMEM_KIND_VIRTUAL: {
        if (!has_vmm())
            return 0;
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        o->raw_size = g_gran;
        return gpumem_mem_create(&o->h, g_gran, &props) == GPUMEM_SUCCESS &&
               gpumem_mem_address_reserve(&o->ptr, g_gran, 0, NULL) == GPUMEM_SUCCESS &&
               gpumem_mem_map(o->ptr, g_gran, 0, o->h) == GPUMEM_SUCCESS;
    }
    case GPUMEM_KIND_BUFFER:
        return has_buffers() && gpumem_buffer_create(&o->b, 4096, 8192, 0) == GPUMEM_SUCCESS &&
               gpumem_buffer_data(o->b, &o->ptr) == GPUMEM_SUCCESS;
    default: return 0;
    }
}

static void release_obj(obj_t *o)
{
    switch (o->kind) {
    case GPUMEM_KIND_HOST_REGISTERED:
        CHECK_OK(gpumem_host_unregister(o->raw));
        free(o->raw);
        break;
    case GPUMEM_KIND_VIRTUAL:
        CHECK_OK(gpumem_mem_unmap(o->ptr, o->raw_size));
        CHECK_OK(gpumem_mem_release(o->h));
        CHECK_OK(gpumem_mem_address_free(o->ptr, o->raw_size));
        break;
    case GPUMEM_KIND_BUFFER: CHECK_OK(gpumem_buffer_destroy(o->b)); break;
    default: CHECK_OK(gpumem_free(o->ptr)); break;
    }
}

static int frees(int f, int kind)
{
    switch (f) {
    case F_FREE:
        return kind == GPUMEM_KIND_DEVICE || kind == GPUMEM_KIND_HOST_PINNED || kind == GPUMEM_KIND_MANAGED ||
               kind == GPUMEM_KIND_STREAM_ORDERED;
    case F_HOST_FREE: return kind == GPUMEM_KIND_HOST_PINNED;
    case F_UNREGISTER: return kind == GPUMEM_KIND_HOST_REGISTERED;
    case F_FREE_ASYNC: return kind == GPUMEM_KIND_STREAM_ORDERED;
    default: return 0;
    }
}

static gpumem_status_t call_free(int f, void *p)
{
    switch (f) {
    case F_FREE: return gpumem_free(p);
    case F_HOST_FREE: return gpumem_host_free(p);
    case F_UNREGISTER: return gpumem_host_unregister(p);
    default: {
        gpumem_status_t st = gpumem_free_async(p, NULL);
        gpumem_stream_synchronize(NULL);
        return st;
    }
    }
}

static void test_wrong_free_function(void)
{
    setup();
    for (int kind = GPUMEM_KIND_DEVICE; kind < GPUMEM_KIND_COUNT; ++kind) {
        for (int f = 0; f < F_COUNT; ++f) {
            if (f == F_FREE_ASYNC && !has_pools())
                continue;
            gpumem_stats_t base = tst_stats();
            obj_t o;
            if (!make_obj(kind, &o))
                continue;
            gpumem_status_t st = call_free(f, o.ptr);
            gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
            CHECK_OK(gpumem_pointer_get_info(o.ptr, &pi));
            if (frees(f, kind)) {
                CHECKF(st == GPUMEM_SUCCESS, "%s refused %s memory: %s", free_names[f], tst_kind_name(kind),
                       gpumem_last_error_message());
                CHECKF(pi.kind == GPUMEM_KIND_UNKNOWN, "%s of %s memory left it live", free_names[f], tst_kind_name(kind));
                if (st != GPUMEM_SUCCESS)
                    release_obj(&o);
                if (kind == GPUMEM_KIND_HOST_REGISTERED)
                    free(o.raw);
            } else {
                CHECKF(st == GPUMEM_ERROR_INVALID_POINTER, "%s of %s memory gave %s, want INVALID_POINTER",
                       free_names[f], tst_kind_name(kind), gpumem_status_string(st));
                CHECKF(pi.kind == kind, "a refused %s of %s memory changed it (kind now %s)", free_names[f],
                       tst_kind_name(kind), tst_kind_name(pi.kind));
                if (st != GPUMEM_SUCCESS && pi.kind == kind)
                    release_obj(&o);
            }
            CHECK_NO_LEAK(&base);
        }
    }
}

static void test_invalid_devices(void)
{
    setup();
    int32_t count = 1;
    REQUIRE_OK(gpumem_device_count(&count));
    void *managed = NULL;
    gpumem_pool_t pool = NULL;
    if (has_managed())
        REQUIRE_OK(gpumem_managed_alloc(&managed, 4096, 0));
    if (has_pools())
        REQUIRE_OK(gpumem_device_get_default_pool(&pool, 0));
    gpumem_stats_t base = tst_stats();
    const int32_t bad[] = {count, count + 1, -2, -3, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < TST_COUNT(bad); ++i) {
        int32_t d = bad[i];
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        gpumem_pool_t p = NULL;
        gpumem_buffer_t b = NULL;
        BAD(IDEV, gpumem_set_device(d));
        BAD(IDEV, gpumem_device_get_info(d, &info));
        if (has_managed()) {
            BAD(IDEV, gpumem_prefetch_async(managed, 4096, d, NULL));
            BAD(IDEV, gpumem_advise(managed, 4096, GPUMEM_ADVISE_SET_PREFERRED_LOCATION, d));
            BAD(IDEV, gpumem_advise(managed, 4096, GPUMEM_ADVISE_SET_ACCESSED_BY, d));
        }
        if (has_pools()) {
            gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
            props.device = d;
            int32_t f = 0;
            gpumem_access_desc_t desc = {d, GPUMEM_ACCESS_READWRITE};
            BAD(IDEV, gpumem_device_get_default_pool(&p, d));
            BAD(IDEV, gpumem_device_get_pool(&p, d));
            BAD(IDEV, gpumem_device_set_pool(d, pool));
            BAD(IDEV, gpumem_pool_create(&p, &props));
            BAD(IDEV, gpumem_pool_get_access(&f, pool, d));
            BAD(IDEV, gpumem_pool_set_access(pool, &desc, 1));
            CHECK(gpumem_pluggable_malloc(64, d, NULL) == NULL);
            CHECK_NO_LEAK(&base);
        }
        if (has_buffers())
            BAD(IDEV, gpumem_buffer_create(&b, 64, 4096, d));
        if (has_vmm()) {
            gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
            props.device = d;
            size_t gr = 0;
            gpumem_mem_handle_t h = 0;
            BAD(IDEV, gpumem_mem_get_granularity(&gr, &props, 0));
            BAD(IDEV, gpumem_mem_create(&h, g_gran, &props));
        }
    }
    /* GPUMEM_DEVICE_HOST only where a location is taken. */
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    BAD(IDEV, gpumem_set_device(GPUMEM_DEVICE_HOST));
    BAD(IDEV, gpumem_device_get_info(GPUMEM_DEVICE_HOST, &info));
    if (has_pools()) {
        gpumem_pool_t p = NULL;
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.device = GPUMEM_DEVICE_HOST;
        BAD(IDEV, gpumem_device_get_default_pool(&p, GPUMEM_DEVICE_HOST));
        BAD(IDEV, gpumem_pool_create(&p, &props));
    }
    if (has_buffers()) {
        gpumem_buffer_t b = NULL;
        BAD(IDEV, gpumem_buffer_create(&b, 64, 4096, GPUMEM_DEVICE_HOST));
    }
    if (has_managed()) {
        BAD(GPUMEM_SUCCESS, gpumem_prefetch_async(managed, 4096, GPUMEM_DEVICE_HOST, NULL));
        BAD(GPUMEM_SUCCESS, gpumem_advise(managed, 4096, GPUMEM_ADVISE_SET_ACCESSED_BY, GPUMEM_DEVICE_HOST));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        CHECK_OK(gpumem_free(managed));
    }
    int32_t cur = -1;
    CHECK_OK(gpumem_get_device(&cur));
    CHECK(cur == 0);
}

static void test_dead_handles_of_every_type(void)
{
    setup();
    gpumem_stream_t s = NULL, live = NULL;
    gpumem_event_t e = NULL, live_e = NULL;
    REQUIRE_OK(gpumem_stream_create(&live));
    REQUIRE_OK(gpumem_event_create(&live_e));
    REQUIRE_OK(gpumem_stream_create(&s));
    REQUIRE_OK(gpumem_stream_destroy(s));
    REQUIRE_OK(gpumem_event_create(&e));
    REQUIRE_OK(gpumem_event_destroy(e));
    void *dev = NULL;
    REQUIRE_OK(gpumem_malloc(&dev, 4096));
    unsigned char host[16];
    float ms = 0;
    gpumem_stats_t base = tst_stats();

    gpumem_stream_t bad_s[] = {s, (gpumem_stream_t)(uintptr_t)0x77777770u, (gpumem_stream_t)(void *)live_e};
    for (size_t i = 0; i < TST_COUNT(bad_s); ++i) {
        void *p = NULL;
        BAD(IH, gpumem_stream_destroy(bad_s[i]));
        BAD(IH, gpumem_stream_synchronize(bad_s[i]));
        BAD(IH, gpumem_stream_query(bad_s[i]));
        BAD(IH, gpumem_event_record(live_e, bad_s[i]));
        BAD(IH, gpumem_stream_wait_event(bad_s[i], live_e));
        BAD(IH, gpumem_memcpy_async(host, dev, 16, bad_s[i]));
        BAD(IH, gpumem_memset_async(dev, 0, 16, bad_s[i]));
        if (has_pools())
            BAD(IH, gpumem_malloc_async(&p, 16, bad_s[i]));
        CHECK(gpumem_stream_native(bad_s[i]) == NULL);
    }
    gpumem_event_t bad_e[] = {e, NULL, (gpumem_event_t)(uintptr_t)0x66666660u, (gpumem_event_t)(void *)live};
    for (size_t i = 0; i < TST_COUNT(bad_e); ++i) {
        BAD(IH, gpumem_event_destroy(bad_e[i]));
        BAD(IH, gpumem_event_record(bad_e[i], live));
        BAD(IH, gpumem_event_synchronize(bad_e[i]));
        BAD(IH, gpumem_event_query(bad_e[i]));
        BAD(IH, gpumem_stream_wait_event(live, bad_e[i]));
        BAD(IH, gpumem_event_elapsed_ms(&ms, bad_e[i], live_e));
        BAD(IH, gpumem_event_elapsed_ms(&ms, live_e, bad_e[i]));
    }
    BAD(IH, gpumem_stream_destroy(NULL));
    if (has_pools()) {
        gpumem_pool_t dead = NULL;
        REQUIRE_OK(gpumem_pool_create(&dead, NULL));
        REQUIRE_OK(gpumem_pool_destroy(dead));
        gpumem_pool_t bad_p[] = {dead, NULL, (gpumem_pool_t)(uintptr_t)0x55555550u, (gpumem_pool_t)(void *)live};
        for (size_t i = 0; i < TST_COUNT(bad_p); ++i) {
            void *p = NULL;
            uint64_t v = 0;
            int32_t f = 0, fd = -1;
            gpumem_access_desc_t desc = {0, GPUMEM_ACCESS_READWRITE};
            gpumem_pool_ptr_export_data_t data;
            memset(&data, 0, sizeof data);
            BAD(IH, gpumem_pool_destroy(bad_p[i]));
            BAD(IH, gpumem_device_set_pool(0, bad_p[i]));
            BAD(IH, gpumem_malloc_from_pool_async(&p, 16, bad_p[i], NULL));
            BAD(IH, gpumem_pool_set_attribute(bad_p[i], GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &v));
            BAD(IH, gpumem_pool_get_attribute(bad_p[i], GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &v));
            BAD(IH, gpumem_pool_trim_to(bad_p[i], 0));
            BAD(IH, gpumem_pool_set_access(bad_p[i], &desc, 1));
            BAD(IH, gpumem_pool_get_access(&f, bad_p[i], 0));
            if (has_pool_ipc()) {
                BAD(IH, gpumem_pool_import_pointer(&p, bad_p[i], &data));
                BAD(IH, gpumem_pool_export_to_shareable_handle(&fd, bad_p[i], GPUMEM_HANDLE_POSIX_FD));
            }
        }
    }
    if (has_buffers()) {
        gpumem_buffer_t dead = NULL;
        REQUIRE_OK(gpumem_buffer_create(&dead, 64, 4096, 0));
        REQUIRE_OK(gpumem_buffer_destroy(dead));
        gpumem_buffer_t bad_b[] = {dead, NULL, (gpumem_buffer_t)(uintptr_t)0x44444440u, (gpumem_buffer_t)(void *)live};
        for (size_t i = 0; i < TST_COUNT(bad_b); ++i) {
            void *p = NULL;
            size_t n = 0;
            BAD(IH, gpumem_buffer_destroy(bad_b[i]));
            BAD(IH, gpumem_buffer_resize(bad_b[i], 128));
            BAD(IH, gpumem_buffer_data(bad_b[i], &p));
            BAD(IH, gpumem_buffer_size(bad_b[i], &n));
        }
    }
    if (has_vmm()) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        gpumem_mem_handle_t dead = 0;
        REQUIRE_OK(gpumem_mem_create(&dead, g_gran, &props));
        REQUIRE_OK(gpumem_mem_release(dead));
        void *va = NULL;
        REQUIRE_OK(gpumem_mem_address_reserve(&va, g_gran, 0, NULL));
        base = tst_stats();
        const gpumem_mem_handle_t bad_h[] = {dead, 0, 0x123456789ull, (gpumem_mem_handle_t)(uintptr_t)live};
        for (size_t i = 0; i < TST_COUNT(bad_h); ++i) {
            int32_t fd = -1;
            BAD(IH, gpumem_mem_release(bad_h[i]));
            BAD(IH, gpumem_mem_map(va, g_gran, 0, bad_h[i]));
            if (has_ipc())
                BAD(IH, gpumem_mem_export_to_shareable_handle(&fd, bad_h[i], GPUMEM_HANDLE_POSIX_FD));
        }
        CHECK_OK(gpumem_mem_address_free(va, g_gran));
    }
    CHECK_OK(gpumem_free(dev));
    CHECK_OK(gpumem_event_destroy(live_e));
    CHECK_OK(gpumem_stream_destroy(live));
}

static void test_bad_flags_and_attributes(void)
{
    setup();
    void *managed = NULL;
    gpumem_stream_t s = NULL;
    REQUIRE_OK(gpumem_stream_create(&s));
    if (has_managed())
        REQUIRE_OK(gpumem_managed_alloc(&managed, 4096, 0));
    char *reg = (char *)aligned_alloc(PAGE, PAGE);
    REQUIRE(reg != NULL);
    gpumem_stats_t base = tst_stats();
    void *p = NULL;

    BAD(IV, gpumem_init(7));
    BAD(IV, gpumem_host_alloc(&p, 64, 0x40));
    BAD(IV, gpumem_host_alloc(&p, 64, GPUMEM_HOST_COHERENT | GPUMEM_HOST_NONCOHERENT));
    if (has_register()) {
        BAD(IV, gpumem_host_register(reg, PAGE, 0x4));
        BAD(IV, gpumem_host_register(reg, PAGE, 0x10));
        BAD(IV, gpumem_host_register(reg, 0, 0));
    } else {
        BAD(NS, gpumem_host_register(reg, PAGE, 0));
    }
    if (has_managed()) {
        int32_t v = 0;
        BAD(IV, gpumem_managed_alloc(&p, 64, GPUMEM_ATTACH_SINGLE));
        BAD(IV, gpumem_managed_alloc(&p, 64, 0x8));
        BAD(IV, gpumem_stream_attach(s, managed, 0, 0x80));
        BAD(IV, gpumem_advise(managed, 4096, 0, 0));
        BAD(IV, gpumem_advise(managed, 4096, 7, 0));
        BAD(IV, gpumem_advise(managed, 4096, 99, 0));
        BAD(IV, gpumem_range_get_attribute(&v, 4, 0, managed, 4096));
        BAD(IV, gpumem_range_get_attribute(&v, 4, 9, managed, 4096));
        BAD(IV, gpumem_range_get_attribute(&v, 3, GPUMEM_RANGE_READ_MOSTLY, managed, 4096));
        BAD(IV, gpumem_prefetch_async(managed, 0, 0, s));
        BAD(IV, gpumem_advise(managed, 0, GPUMEM_ADVISE_SET_READ_MOSTLY, 0));
    } else {
        BAD(NS, gpumem_managed_alloc(&p, 64, 0));
    }
    if (has_pools()) {
        gpumem_pool_t pool = NULL;
        REQUIRE_OK(gpumem_device_get_default_pool(&pool, 0));
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        uint64_t v = 0;
        int32_t two = 2;
        gpumem_access_desc_t desc = {0, 2};
        BAD(IV, gpumem_pool_set_attribute(pool, 0, &v));
        BAD(IV, gpumem_pool_set_attribute(pool, 9, &v));
        BAD(IV, gpumem_pool_get_attribute(pool, 100, &v));
        BAD(IV, gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &two));
        BAD(IV, gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v));
        BAD(IV, gpumem_pool_set_access(pool, &desc, 1));
        gpumem_pool_t np = NULL;
        props.handle_types = 0x4;
        BAD(IV, gpumem_pool_create(&np, &props));
        props.handle_types = 0;
        props.implementation = 5;
        BAD(IV, gpumem_pool_create(&np, &props));
        props.implementation = 0;
        props.size = 1;
        BAD(IV, gpumem_pool_create(&np, &props));
    } else {
        BAD(NS, gpumem_malloc_async(&p, 64, s));
    }
    if (has_vmm()) {
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        size_t gr = 0;
        gpumem_mem_handle_t h = 0;
        BAD(IV, gpumem_mem_get_granularity(&gr, &props, 3));
        props.handle_types = 0x8;
        BAD(IV, gpumem_mem_create(&h, g_gran, &props));
        props.handle_types = 0;
        props.size = 0;
        BAD(IV, gpumem_mem_create(&h, g_gran, &props));
        props.size = sizeof props;
        /* misaligned sizes */
        BAD(IV, gpumem_mem_create(&h, g_gran + 1, &props));
        BAD(IV, gpumem_mem_create(&h, g_gran - 1, &props));
        BAD(IV, gpumem_mem_address_reserve(&p, g_gran + 1, 0, NULL));
        BAD(IV, gpumem_mem_address_reserve(&p, g_gran, 3, NULL));
        REQUIRE_OK(gpumem_mem_create(&h, g_gran, &props));
        REQUIRE_OK(gpumem_mem_address_reserve(&p, 2 * g_gran, 0, NULL));
        base = tst_stats();
        gpumem_access_desc_t desc = {0, 2};
        BAD(IV, gpumem_mem_map(p, g_gran - 1, 0, h));
        BAD(IV, gpumem_mem_map((char *)p + 1, g_gran, 0, h));
        BAD(IV, gpumem_mem_map(p, g_gran, 1, h));
        CHECK_OK(gpumem_mem_map(p, g_gran, 0, h));
        BAD(IV, gpumem_mem_set_access(p, g_gran, &desc, 1));
        BAD(IV, gpumem_mem_set_access(p, g_gran - 1, &desc, 1));
        BAD(IV, gpumem_mem_unmap(p, g_gran - 1));
        CHECK_OK(gpumem_mem_unmap(p, g_gran));
        CHECK_OK(gpumem_mem_release(h));
        CHECK_OK(gpumem_mem_address_free(p, 2 * g_gran));
    }
    free(reg);
    if (managed)
        CHECK_OK(gpumem_free(managed));
    CHECK_OK(gpumem_stream_destroy(s));
}

/* Every refusal leaves a message saying what went wrong. */
static void test_messages(void)
{
    void *p = NULL;
    CHECK_STATUS(IV, gpumem_malloc(NULL, 1));
    const char *m = gpumem_last_error_message();
    CHECKF(strlen(m) > 10, "a short message: \"%s\"", m);
    CHECK_STATUS(OOM, gpumem_malloc(&p, SIZE_MAX));
    m = gpumem_last_error_message();
    CHECKF(strlen(m) > 10, "a short message: \"%s\"", m);
    CHECK_STATUS(IPTR, gpumem_free(&p));
    m = gpumem_last_error_message();
    CHECKF(strlen(m) > 10, "a short message: \"%s\"", m);
    CHECK_STATUS(IDEV, gpumem_set_device(1000));
    m = gpumem_last_error_message();
    CHECKF(strlen(m) > 10, "a short message: \"%s\"", m);
    CHECK_STATUS(IH, gpumem_event_query(NULL));
    m = gpumem_last_error_message();
    CHECKF(strlen(m) > 10, "a short message: \"%s\"", m);
}

int main(int argc, char **argv)
{
    static const tst_case_t cases[] = {
        TEST(test_null_out_pointers),         TEST(test_huge_sizes),
        TEST(test_unknown_interior_freed_pointers), TEST(test_wrong_free_function),
        TEST(test_invalid_devices),           TEST(test_dead_handles_of_every_type),
        TEST(test_bad_flags_and_attributes),  TEST(test_messages),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
