/* Memory gpumem did not make (0.5): pointer info of memory the runtime allocated directly
 * (cuMemAlloc, hipMalloc, pinned host memory) and of plain host memory, interior pointers, callers
 * with the struct's older size; the devices' PCI address, UUID and NUMA node; a handle retained
 * from a VMM mapping, its properties and its release.
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stddef.h>
#include <unistd.h>

#define N ((size_t)1 << 20)

/* ------------------------------------------------------------------------ */
/* The runtime's own allocation calls, through the library gpumem loaded      */
/* ------------------------------------------------------------------------ */

/* One allocator of the runtime: device or pinned host memory, and its free. */
typedef struct vendor_alloc {
    int (*alloc)(void **ptr, size_t n); /* 0 on success */
    int (*release)(void *ptr);
} vendor_alloc_t;

typedef int (*get_proc_t)(const char *, void **, int, unsigned long long, int *);
typedef int (*get_proc_v1_t)(const char *, void **, int, unsigned long long);
static int (*cu_mem_alloc)(unsigned long long *, size_t);
static int (*cu_mem_free)(unsigned long long);
static int (*cu_host_alloc)(void **, size_t, unsigned);
static int (*cu_host_free)(void *);
static int (*hip_malloc)(void **, size_t);
static int (*hip_free)(void *);
static int (*hip_host_alloc)(void **, size_t, unsigned);
static int (*hip_host_free)(void *);

static int cuda_device_alloc(void **p, size_t n)
{
    unsigned long long d = 0;
    int r = cu_mem_alloc(&d, n);
    *p = (void *)(uintptr_t)d;
    return r;
}
static int cuda_device_free(void *p) { return cu_mem_free((unsigned long long)(uintptr_t)p); }
static int cuda_host_alloc(void **p, size_t n) { return cu_host_alloc(p, n, 0); }
static int hip_host_alloc0(void **p, size_t n) { return hip_host_alloc(p, n, 0); }

/* The runtime gpumem loaded (GPUMEM_*_LIBRARY or the vendor's name), already open. */
static void *loaded(const char *variable, const char *fallback)
{
    const char *path = getenv(variable);
    return dlopen(path && *path ? path : fallback, RTLD_NOW | RTLD_NOLOAD);
}

/* The runtime's allocators; 0 on the host backend (no runtime) or where they cannot be found. */
static int vendor_allocators(vendor_alloc_t *device, vendor_alloc_t *pinned)
{
    int32_t backend = tst_backend();
    if (backend == GPUMEM_BACKEND_CUDA) {
        void *lib = loaded("GPUMEM_CUDA_LIBRARY", "libcuda.so.1");
        if (!lib)
            return 0;
        /* A 12.x driver has cuGetProcAddress_v2; an 11.x driver only the 4-argument form. */
        get_proc_t get = (get_proc_t)dlsym(lib, "cuGetProcAddress_v2");
        get_proc_v1_t get_v1 = (get_proc_v1_t)dlsym(lib, "cuGetProcAddress");
        int found = 0;
#define GET(name, fn) (get ? get(name, (void **)&fn, 11000, 0, &found) : get_v1 ? get_v1(name, (void **)&fn, 11000, 0) : 1)
        if (GET("cuMemAlloc", cu_mem_alloc) || !cu_mem_alloc || GET("cuMemFree", cu_mem_free) || !cu_mem_free ||
            GET("cuMemHostAlloc", cu_host_alloc) || !cu_host_alloc || GET("cuMemFreeHost", cu_host_free) ||
            !cu_host_free)
            return 0;
#undef GET
        *device = (vendor_alloc_t){cuda_device_alloc, cuda_device_free};
        *pinned = (vendor_alloc_t){cuda_host_alloc, cu_host_free};
        /* The runtime allocates in the current context: device 0's primary context. */
        return gpumem_set_device(0) == GPUMEM_SUCCESS;
    }
    if (backend == GPUMEM_BACKEND_HIP) {
        void *lib = loaded("GPUMEM_HIP_LIBRARY", "libamdhip64.so");
        if (!lib)
            return 0;
        hip_malloc = (int (*)(void **, size_t))dlsym(lib, "hipMalloc");
        hip_free = (int (*)(void *))dlsym(lib, "hipFree");
        hip_host_alloc = (int (*)(void **, size_t, unsigned))dlsym(lib, "hipHostMalloc");
        if (!hip_host_alloc)
            hip_host_alloc = (int (*)(void **, size_t, unsigned))dlsym(lib, "hipExtHostAlloc");
        hip_host_free = (int (*)(void *))dlsym(lib, "hipHostFree");
        if (!hip_host_free)
            hip_host_free = (int (*)(void *))dlsym(lib, "hipFreeHost");
        if (!hip_malloc || !hip_free || !hip_host_alloc || !hip_host_free)
            return 0;
        *device = (vendor_alloc_t){hip_malloc, hip_free};
        *pinned = (vendor_alloc_t){hip_host_alloc0, hip_host_free};
        return gpumem_set_device(0) == GPUMEM_SUCCESS;
    }
    return 0;
}

static gpumem_pointer_info_t info_of(const void *p)
{
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(p, &pi));
    return pi;
}

/* ------------------------------------------------------------------------ */
/* Pointer info                                                              */
/* ------------------------------------------------------------------------ */

/* Plain host memory: no runtime knows it, on any backend. */
static void test_plain_host_memory(void)
{
    char *p = calloc(1, 4096);
    REQUIRE(p);
    gpumem_pointer_info_t pi = info_of(p + 10);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
    CHECK(pi.vendor_known == 0);
    CHECK(pi.memory == GPUMEM_POOL_MEMORY_UNKNOWN);
    CHECK(pi.device == GPUMEM_DEVICE_HOST);
    CHECK(pi.base == NULL && pi.alloc_size == 0);
    free(p);
    int on_stack = 0;
    pi = info_of(&on_stack);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN && pi.vendor_known == 0);
}

/* NULL: SUCCESS, nothing known; a NULL or unsized struct is refused with a message. */
static void test_null_arguments(void)
{
    gpumem_pointer_info_t pi = info_of(NULL);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN && pi.vendor_known == 0 && pi.memory == GPUMEM_POOL_MEMORY_UNKNOWN);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pointer_get_info(&pi, NULL));
    CHECK(tst_contains(gpumem_last_error_message(), "info is NULL"));
    gpumem_pointer_info_t unsized = GPUMEM_POINTER_INFO_INIT;
    unsized.size = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pointer_get_info(&pi, &unsized));
}

/* gpumem's own memory: its record answers, the runtime is not asked. */
static void test_own_memory_not_vendor(void)
{
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, N));
    gpumem_pointer_info_t pi = info_of((char *)d + 100);
    CHECK(pi.kind == GPUMEM_KIND_DEVICE);
    CHECK(pi.vendor_known == 0);
    CHECK(pi.base == d && pi.alloc_size == N);
    CHECK_OK(gpumem_free(d));
    /* Freed: neither gpumem's nor (device memory given back) the runtime's. */
    pi = info_of(d);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
}

/* Memory the runtime allocated directly: kind UNKNOWN, the rest the runtime's answer; interior
 * pointers find the allocation; once freed the runtime knows it no more. */
static void test_vendor_memory(void)
{
    vendor_alloc_t device, pinned;
    if (!vendor_allocators(&device, &pinned)) {
        /* The host backend has no runtime: its answer is always vendor_known 0. */
        if (tst_backend() == GPUMEM_BACKEND_HOST)
            SKIP("the host backend has no runtime to allocate from (vendor_known is always 0)");
        tst_fail(__FILE__, __LINE__, "the runtime's allocation calls were not found in the loaded library");
        return;
    }
    void *d = NULL;
    REQUIRE(device.alloc(&d, N) == 0 && d);
    gpumem_pointer_info_t pi = info_of(d);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN);
    CHECKF(pi.vendor_known == 1, "vendor_known %d", pi.vendor_known);
    CHECK(pi.memory == GPUMEM_POOL_MEMORY_DEVICE);
    CHECK(pi.device == 0);
    CHECK(pi.base == d);
    CHECKF(pi.alloc_size >= N, "alloc_size %zu", pi.alloc_size);
    CHECK(pi.pool == NULL && pi.emulated == 0);

    gpumem_pointer_info_t inner = info_of((char *)d + N / 2 + 3);
    CHECK(inner.kind == GPUMEM_KIND_UNKNOWN && inner.vendor_known == 1);
    CHECK(inner.base == d && inner.alloc_size == pi.alloc_size);
    CHECK(inner.memory == GPUMEM_POOL_MEMORY_DEVICE && inner.device == 0);

    /* A caller built before vendor_known: the fields its size covers, nothing past them. */
    struct {
        gpumem_pointer_info_t info;
        char guard[16];
    } old;
    memset(&old, 0xA5, sizeof old);
    old.info.size = offsetof(gpumem_pointer_info_t, vendor_known);
    CHECK_OK(gpumem_pointer_get_info(d, &old.info));
    CHECK(old.info.base == d && old.info.memory == GPUMEM_POOL_MEMORY_DEVICE);
    const unsigned char *tail = (const unsigned char *)&old.info + offsetof(gpumem_pointer_info_t, vendor_known);
    for (size_t i = 0; i < sizeof old.info - offsetof(gpumem_pointer_info_t, vendor_known); ++i)
        CHECKF(tail[i] == 0xA5, "byte %zu past the caller's size was written", i);

    /* gpumem copies to and from it as the caller's memory. */
    unsigned char *host = malloc(4096);
    REQUIRE(host);
    tst_fill(host, 4096, 3);
    CHECK_OK(gpumem_memcpy((char *)d + 4096, host, 4096));
    memset(host, 0, 4096);
    CHECK_OK(gpumem_memcpy(host, (char *)d + 4096, 4096));
    CHECK(tst_verify(host, 4096, 3) == 4096);
    free(host);

    CHECK(device.release(d) == 0);
    pi = info_of(d);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN && pi.vendor_known == 0);
    CHECK(pi.memory == GPUMEM_POOL_MEMORY_UNKNOWN && pi.base == NULL);

    /* Page-locked host memory: host memory of no device. */
    void *h = NULL;
    REQUIRE(pinned.alloc(&h, N) == 0 && h);
    pi = info_of((char *)h + 10);
    CHECK(pi.kind == GPUMEM_KIND_UNKNOWN && pi.vendor_known == 1);
    CHECK(pi.memory == GPUMEM_POOL_MEMORY_PINNED);
    CHECK(pi.device == GPUMEM_DEVICE_HOST);
    CHECK(pi.base == h && pi.alloc_size >= N);
    CHECK(pinned.release(h) == 0);
}

/* ------------------------------------------------------------------------ */
/* Device info                                                               */
/* ------------------------------------------------------------------------ */

/* What the kernel says of a PCI device's node (-1 where it says nothing). */
static int sysfs_numa_node(const char *bus_id)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", bus_id);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int node = -1;
    if (fscanf(f, "%d", &node) != 1)
        node = -1;
    fclose(f);
    return node;
}

static void test_device_identity(void)
{
    int32_t count = 0;
    REQUIRE_OK(gpumem_device_count(&count));
    unsigned char zero[16] = {0};
    gpumem_device_info_t first = tst_info(0);
    for (int32_t d = 0; d < count; ++d) {
        gpumem_device_info_t info = tst_info(d);
        CHECK(memchr(info.pci_bus_id, '\0', sizeof info.pci_bus_id) != NULL);
        if (tst_backend() == GPUMEM_BACKEND_HOST) {
            CHECK(info.pci_bus_id[0] == '\0');
            CHECK(info.numa_node == -1);
            continue;
        }
        /* domain:bus:device.function in lowercase hex, as sysfs names it */
        unsigned domain = 0, bus = 0, dev = 0, fn = 0;
        CHECKF(sscanf(info.pci_bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4, "pci_bus_id \"%s\"",
               info.pci_bus_id);
        for (const char *c = info.pci_bus_id; *c; ++c)
            CHECKF(!isupper((unsigned char)*c), "pci_bus_id \"%s\" is not lowercase", info.pci_bus_id);
        CHECKF(info.numa_node == sysfs_numa_node(info.pci_bus_id), "numa_node %d", info.numa_node);
        CHECK(memcmp(info.uuid, zero, 16) != 0);
        if (d > 0) {
            CHECK(memcmp(info.uuid, first.uuid, 16) != 0);
            CHECK(strcmp(info.pci_bus_id, first.pci_bus_id) != 0);
        }
    }
    /* The host backend's UUID is the machine's id: the same in every call and process. */
    gpumem_device_info_t again = tst_info(0);
    CHECK(memcmp(again.uuid, first.uuid, 16) == 0);

    /* A caller built before these fields: nothing past its size is written. */
    struct {
        gpumem_device_info_t info;
        char guard[16];
    } old;
    memset(&old, 0x5A, sizeof old);
    old.info.size = offsetof(gpumem_device_info_t, pci_bus_id);
    CHECK_OK(gpumem_device_get_info(0, &old.info));
    CHECK(strcmp(old.info.name, first.name) == 0);
    const unsigned char *tail = (const unsigned char *)&old.info + offsetof(gpumem_device_info_t, pci_bus_id);
    for (size_t i = 0; i < sizeof old.info - offsetof(gpumem_device_info_t, pci_bus_id); ++i)
        CHECKF(tail[i] == 0x5A, "byte %zu past the caller's size was written", i);
}

/* ------------------------------------------------------------------------ */
/* Retained allocation handles                                               */
/* ------------------------------------------------------------------------ */

static void test_retain_bad_input(void)
{
    gpumem_mem_handle_t h = 0;
    int on_stack = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_retain_allocation_handle(NULL, &on_stack));
    CHECK(tst_contains(gpumem_last_error_message(), "handle is NULL"));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_retain_allocation_handle(&h, NULL));
    CHECK(tst_contains(gpumem_last_error_message(), "ptr is NULL"));
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_allocation_properties(NULL, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_get_allocation_properties(&props, 0));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_get_allocation_properties(&props, 0x1234567));
    props.size = 0;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_get_allocation_properties(&props, 1));

    gpumem_device_info_t info = tst_info(0);
    const gpumem_status_t refused =
        info.virtual_memory == GPUMEM_SUPPORT_NATIVE ? GPUMEM_ERROR_INVALID_VALUE : GPUMEM_ERROR_NOT_SUPPORTED;
    /* Memory in no mapping: plain host memory, gpumem_malloc's. */
    char *host = calloc(1, 4096);
    REQUIRE(host);
    CHECK_STATUS(refused, gpumem_mem_retain_allocation_handle(&h, host));
    free(host);
    void *d = NULL;
    REQUIRE_OK(gpumem_malloc(&d, N));
    CHECK_STATUS(refused, gpumem_mem_retain_allocation_handle(&h, (char *)d + 64));
    CHECK_OK(gpumem_free(d));
    CHECK_STATUS(refused, gpumem_mem_retain_allocation_handle(&h, d));
}

static void test_retain_mapping(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("no native VMM on device 0");
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.device = 0;
    props.handle_types = info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    const size_t size = 2 * g;
    gpumem_mem_handle_t made = 0, retained = 0, again = 0;
    REQUIRE_OK(gpumem_mem_create(&made, size, &props));
    void *va = NULL, *va2 = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&va, 2 * size, 0, NULL));
    REQUIRE_OK(gpumem_mem_address_reserve(&va2, size, 0, NULL));
    /* Reserved and not mapped: nothing to retain. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_retain_allocation_handle(&retained, va));
    CHECK(tst_contains(gpumem_last_error_message(), "nothing is mapped"));
    REQUIRE_OK(gpumem_mem_map(va, size, 0, made));
    gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
    REQUIRE_OK(gpumem_mem_set_access(va, size, &rw, 1));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_retain_allocation_handle(&retained, (char *)va + size));
    CHECK_OK(tst_upload(va, size, 11));

    const gpumem_stats_t before = tst_stats();
    /* From an interior address: a handle of its own, the same memory. */
    REQUIRE_OK(gpumem_mem_retain_allocation_handle(&retained, (char *)va + g + 17));
    CHECK(retained != 0 && retained != made);
    REQUIRE_OK(gpumem_mem_retain_allocation_handle(&again, va));
    CHECK(again != retained && again != made);
    const gpumem_stats_t after = tst_stats();
    CHECK(after.current_bytes[GPUMEM_KIND_VIRTUAL] == before.current_bytes[GPUMEM_KIND_VIRTUAL]);

    gpumem_alloc_props_t got = GPUMEM_ALLOC_PROPS_INIT;
    got.device = 99;
    CHECK_OK(gpumem_mem_get_allocation_properties(&got, retained));
    CHECK(got.device == 0);
    CHECK(got.handle_types == props.handle_types);
    CHECK(got.flags == 0);
    gpumem_alloc_props_t of_made = GPUMEM_ALLOC_PROPS_INIT;
    CHECK_OK(gpumem_mem_get_allocation_properties(&of_made, made));
    CHECK(of_made.device == got.device && of_made.handle_types == got.handle_types);
    /* A caller whose struct ends before flags: only device and handle_types. */
    struct {
        gpumem_alloc_props_t props;
        char guard[8];
    } old;
    memset(&old, 0x77, sizeof old);
    old.props.size = offsetof(gpumem_alloc_props_t, flags);
    CHECK_OK(gpumem_mem_get_allocation_properties(&old.props, retained));
    CHECK(old.props.device == 0);
    const unsigned char *tail = (const unsigned char *)&old.props + offsetof(gpumem_alloc_props_t, flags);
    CHECK(tail[0] == 0x77 && tail[3] == 0x77);

    /* The creating handle goes; the retained one still holds the memory, and maps it again. */
    CHECK_OK(gpumem_mem_release(made));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_get_allocation_properties(&got, made));
    CHECK_OK(gpumem_mem_map(va2, size, 0, retained));
    CHECK_OK(gpumem_mem_set_access(va2, size, &rw, 1));
    CHECK(tst_download_verify(va2, size, 11));
    CHECK_OK(gpumem_mem_unmap(va2, size));

    CHECK_OK(gpumem_mem_release(retained));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(retained));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_get_allocation_properties(&got, retained));
    CHECK(tst_download_verify(va, size, 11)); /* the mapping keeps the memory */
    CHECK_OK(gpumem_mem_release(again));
    CHECK_OK(gpumem_mem_unmap(va, size));
    /* Unmapped: nothing to retain there any more. */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_retain_allocation_handle(&retained, va));
    CHECK_OK(gpumem_mem_address_free(va, 2 * size));
    CHECK_OK(gpumem_mem_address_free(va2, size));
}

/* A retained handle left unreleased is given back by gpumem_finalize, as any handle. */
static void test_retained_at_finalize(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("no native VMM on device 0");
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    gpumem_mem_handle_t made = 0, retained = 0;
    void *va = NULL;
    REQUIRE_OK(gpumem_mem_create(&made, g, &props));
    REQUIRE_OK(gpumem_mem_address_reserve(&va, g, 0, NULL));
    REQUIRE_OK(gpumem_mem_map(va, g, 0, made));
    REQUIRE_OK(gpumem_mem_retain_allocation_handle(&retained, va));
    CHECK_OK(gpumem_mem_release(made));
    CHECK_OK(gpumem_finalize());
    CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_mem_release(retained));
}

int main(int argc, char **argv)
{
    alarm(120);
    static const tst_case_t cases[] = {
        TEST(test_plain_host_memory), TEST(test_null_arguments), TEST(test_own_memory_not_vendor),
        TEST(test_vendor_memory),     TEST(test_device_identity), TEST(test_retain_bad_input),
        TEST(test_retain_mapping),    TEST(test_retained_at_finalize),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
