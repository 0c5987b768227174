// Asks a CUDA driver the questions on which the fake had to choose an answer, and prints
// what it says, one line each ("group.question = answer").  Run it against the real
// driver on a GPU machine and against libfakecuda.so, and compare:
//
//   cuda_probe /usr/lib/x86_64-linux-gnu/libcuda.so.1 GROUP      (or the fake's path)
//
// Groups (one process each: a question may leave the context unusable): basic, memory,
// overrun, host, events, managed, pools, vmm, vmm-noaccess, multi, more, context, placement,
// reach, bridge, capture, rows, lazy, unknown (each question in a process of its own: the answer
// may be a crash), fault (a kernel reads address 0x10: what every call says afterwards),
// export (dma-buf, RDMA-capable and fabric memory; a pool of fabric memory exported and, where
// that works, imported by a second process of the probe: export:fabric-child; where the export
// is refused, each call that may crash afterwards asked by a process of its own:
// export:fabric-after-refusal STEP; neither child mode is run by hand), imported (a pool, a pool
// pointer and a VMM handle imported from this process's own export and by a second process of the
// probe, imported:child; every call asked of each import).
// Only valid handles are passed: a real driver may crash on made-up ones.
//
// SPDX-License-Identifier: MIT
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

using GetProcV2 = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
GetProcV2 g_get;
const char *g_group = "";
void *g_lib; // the driver (group capture looks for the fake's flush function there)
const char *g_lib_path = ""; // its path, for a second process of the probe (group export)

template <class F> F get(const char *name, int version = 12000)
{
    void *fn = nullptr;
    CUdriverProcAddressQueryResult st;
    if (g_get(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) != CUDA_SUCCESS)
        return nullptr;
    return reinterpret_cast<F>(fn);
}
#define F(name) static const auto name = get<decltype(&::name)>(#name)

const char *ename(CUresult r)
{
    F(cuGetErrorName);
    const char *n = nullptr;
    if (!cuGetErrorName || cuGetErrorName(r, &n) != CUDA_SUCCESS || !n) {
        static char buf[32];
        snprintf(buf, sizeof buf, "CUresult %d", (int)r);
        return buf;
    }
    return n;
}
void say(const char *q, CUresult r) { printf("%s.%s = %s\n", g_group, q, ename(r)); }
void sayv(const char *q, unsigned long long v) { printf("%s.%s = %llu\n", g_group, q, v); }
void sayv(const std::string &q, unsigned long long v) { sayv(q.c_str(), v); }
#define ASK(q, expr) say(q, (expr))

CUcontext g_ctx;
CUdeviceptr dp(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

void basic()
{
    F(cuDeviceGetAttribute);
    F(cuMemAlloc);
    F(cuCtxSynchronize);
    int v = -1;
    const struct {
        const char *name;
        CUdevice_attribute a;
    } attrs[] = {
        {"attr.managed", CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY},
        {"attr.concurrent_managed", CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
        {"attr.pageable", CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS},
        {"attr.pools", CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED},
        {"attr.pool_handle_types", CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES},
        {"attr.vmm", CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED},
        {"attr.posix_fd", CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED},
        {"attr.host_register", CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED},
        {"attr.unified", CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
    };
    for (const auto &a : attrs) {
        v = -1;
        cuDeviceGetAttribute(&v, a.a, 0);
        sayv(a.name, (unsigned long long)v);
    }
    ASK("attr_max", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0));
    void *fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    ASK("proc_unknown", g_get("cuNoSuchFunction", &fn, 13000, 0, &st));
    sayv("proc_unknown_status", st);
    ASK("proc_too_old", g_get("cuMemPoolCreate", &fn, 11000, 0, &st));
    sayv("proc_too_old_status", st);
    void *a = nullptr, *b = nullptr;
    g_get("cuMemPrefetchAsync", &a, 12000, 0, &st);
    g_get("cuMemPrefetchAsync", &b, 12020, 0, &st);
    sayv("prefetch_forms_differ", a != b);
    // Without a current context (this thread has none yet).
    CUdeviceptr d = 0;
    ASK("alloc_no_context", cuMemAlloc(&d, 64));
    ASK("ctx_sync_no_context", cuCtxSynchronize());
}

void memory()
{
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemsetD8);
    F(cuMemGetInfo);
    F(cuPointerGetAttribute);
    CUdeviceptr d = 0;
    ASK("alloc_0", cuMemAlloc(&d, 0));
    ASK("alloc_size_max", cuMemAlloc(&d, SIZE_MAX));
    ASK("free_0", cuMemFree(0));
    ASK("alloc", cuMemAlloc(&d, 65536 + 123));
    sayv("alloc_align_4k", d % 4096 == 0);
    ASK("free_interior", cuMemFree(d + 64));
    std::vector<unsigned char> host(1 << 20);
    ASK("memset_pageable", cuMemsetD8(dp(host.data()), 1, 4096));
    unsigned int type = 0;
    ASK("ptrattr_pageable", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp(host.data())));
    ASK("ptrattr_device", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    sayv("ptrattr_device_type", type);
    size_t f0 = 0, f1 = 0, t = 0;
    cuMemGetInfo(&f0, &t);
    CUdeviceptr e = 0;
    cuMemAlloc(&e, 64 << 20);
    cuMemGetInfo(&f1, &t);
    sayv("free_drop_64M_in_MiB", (f0 - f1) >> 20);
    cuMemFree(e);
    ASK("free", cuMemFree(d));
    ASK("free_twice", cuMemFree(d));
}

// A copy that runs one byte past the end of an allocation (plain, and a pool's).
void overrun()
{
    F(cuMemAlloc);
    F(cuMemcpy);
    F(cuMemsetD8);
    F(cuMemAllocAsync);
    F(cuStreamSynchronize);
    const size_t n = 65536 + 123;
    std::vector<unsigned char> host(n + 4096);
    CUdeviceptr d = 0, p = 0;
    cuMemAlloc(&d, n);
    ASK("copy_past_alloc_end", cuMemcpy(dp(host.data()), d, n + 1));
    ASK("memset_past_alloc_end", cuMemsetD8(d, 0, n + 1));
    cuMemAllocAsync(&p, n, nullptr);
    cuStreamSynchronize(nullptr);
    ASK("copy_past_pool_block_end", cuMemcpy(dp(host.data()), p, n + 1));
    ASK("sync_after", cuStreamSynchronize(nullptr));
}

void host()
{
    F(cuMemHostAlloc);
    F(cuMemHostRegister);
    F(cuMemHostUnregister);
    F(cuMemHostGetDevicePointer);
    F(cuMemFreeHost);
    F(cuPointerGetAttribute);
    void *ph = nullptr;
    ASK("host_alloc_0", cuMemHostAlloc(&ph, 0, 0));
    ASK("host_alloc", cuMemHostAlloc(&ph, 8192, 0));
    CUdeviceptr pd = 0;
    ASK("device_pointer_interior", cuMemHostGetDevicePointer(&pd, static_cast<char *>(ph) + 100, 0));
    sayv("device_pointer_same", pd == dp(ph) + 100);
    ASK("register_pinned", cuMemHostRegister(ph, 4096, 0));
    unsigned int type = 0;
    ASK("ptrattr_pinned", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp(ph)));
    sayv("ptrattr_pinned_type", type);
    ASK("free_host_interior", cuMemFreeHost(static_cast<char *>(ph) + 64));
    ASK("free_host", cuMemFreeHost(ph));
    void *buf = aligned_alloc(4096, 3 * 4096);
    ASK("register", cuMemHostRegister(buf, 3 * 4096, 0));
    ASK("register_overlap", cuMemHostRegister(static_cast<char *>(buf) + 4096, 100, 0));
    ASK("device_pointer_registered_no_devicemap", cuMemHostGetDevicePointer(&pd, buf, 0));
    ASK("unregister_interior", cuMemHostUnregister(static_cast<char *>(buf) + 4096));
    ASK("unregister", cuMemHostUnregister(buf));
    ASK("unregister_twice", cuMemHostUnregister(buf));
    std::vector<char> plain(100);
    ASK("device_pointer_pageable", cuMemHostGetDevicePointer(&pd, plain.data(), 0));
    free(buf);
}

void events()
{
    F(cuEventCreate);
    F(cuEventRecord);
    F(cuEventQuery);
    F(cuEventSynchronize);
    F(cuEventElapsedTime);
    F(cuEventDestroy);
    F(cuStreamCreate);
    F(cuStreamDestroy);
    CUevent a = nullptr, b = nullptr, nt = nullptr;
    cuEventCreate(&a, 0);
    cuEventCreate(&b, 0);
    cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING);
    ASK("query_unrecorded", cuEventQuery(a));
    ASK("sync_unrecorded", cuEventSynchronize(a));
    float ms = 0;
    ASK("elapsed_unrecorded", cuEventElapsedTime(&ms, a, b));
    cuEventRecord(a, nullptr);
    cuEventRecord(b, nullptr);
    cuEventRecord(nt, nullptr);
    cuEventSynchronize(b);
    ASK("elapsed", cuEventElapsedTime(&ms, a, b));
    ASK("elapsed_disable_timing", cuEventElapsedTime(&ms, a, nt));
    ASK("elapsed_null_out", cuEventElapsedTime(nullptr, a, b));
    ASK("event_flags_bad", cuEventCreate(&a, 0x80));
    CUstream s = nullptr;
    ASK("stream_flags_bad", cuStreamCreate(&s, 0x10));
    ASK("stream_destroy_null", cuStreamDestroy(nullptr));
}

void managed()
{
    F(cuMemAllocManaged);
    F(cuMemFree);
    F(cuStreamAttachMemAsync);
    F(cuPointerGetAttribute);
    F(cuStreamCreate);
    CUdeviceptr m = 0;
    ASK("managed_flags_0", cuMemAllocManaged(&m, 65536, 0));
    ASK("managed", cuMemAllocManaged(&m, 65536, CU_MEM_ATTACH_GLOBAL));
    unsigned int type = 0, is = 0;
    ASK("ptrattr", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m));
    sayv("ptrattr_type", type);
    cuPointerGetAttribute(&is, CU_POINTER_ATTRIBUTE_IS_MANAGED, m);
    sayv("is_managed", is);
    ASK("attach_single_null_stream", cuStreamAttachMemAsync(nullptr, m, 0, CU_MEM_ATTACH_SINGLE));
    CUstream s = nullptr;
    cuStreamCreate(&s, 0);
    ASK("attach_wrong_length", cuStreamAttachMemAsync(s, m, 100, CU_MEM_ATTACH_SINGLE));
    ASK("attach_interior", cuStreamAttachMemAsync(s, m + 4096, 0, CU_MEM_ATTACH_SINGLE));
    // (flags 0 crashes driver 580: not asked)
    ASK("free_interior", cuMemFree(m + 8));
    ASK("free", cuMemFree(m));
}

void pools()
{
    F(cuMemPoolCreate);
    F(cuMemPoolDestroy);
    F(cuMemAllocFromPoolAsync);
    F(cuMemFreeAsync);
    F(cuMemPoolGetAttribute);
    F(cuMemPoolSetAttribute);
    F(cuMemPoolSetAccess);
    F(cuMemPoolTrimTo);
    F(cuDeviceGetDefaultMemPool);
    F(cuMemPoolExportToShareableHandle);
    F(cuMemPoolExportPointer);
    F(cuMemPoolImportPointer);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    F(cuMemFree);
    CUmemoryPool def = nullptr, pool = nullptr;
    cuDeviceGetDefaultMemPool(&def, 0);
    ASK("destroy_default", cuMemPoolDestroy(def));
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ASK("create", cuMemPoolCreate(&pool, &props));
    auto attr = [&](CUmemPool_attribute a) {
        cuuint64_t v = 0;
        cuMemPoolGetAttribute(pool, a, &v);
        return (unsigned long long)v;
    };
    CUstream s1 = nullptr, s2 = nullptr;
    cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    CUdeviceptr p = 0, q = 0;
    ASK("alloc_0", cuMemAllocFromPoolAsync(&p, 0, pool, s1));
    cuMemAllocFromPoolAsync(&p, 4 << 20, pool, s1);
    sayv("reserved_after_4M_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    sayv("used_after_4M_KiB", attr(CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >> 10);
    cuMemAllocFromPoolAsync(&q, 1000, pool, s1);
    sayv("used_after_1000B_more", attr(CU_MEMPOOL_ATTR_USED_MEM_CURRENT) - (4ull << 20));
    sayv("block_distance", q - p);
    cuMemFreeAsync(q, s1);
    cuMemFreeAsync(p, s1);
    sayv("reserved_after_free_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    cuStreamSynchronize(s1);
    sayv("reserved_after_sync_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    // Stream order with every reuse rule off.
    int zero = 0;
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &zero);
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &zero);
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &zero);
    cuuint64_t big = UINT64_MAX;
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &big);
    cuMemAllocFromPoolAsync(&p, 65536, pool, s1);
    cuMemFreeAsync(p, s1);
    cuMemAllocFromPoolAsync(&q, 65536, pool, s1);
    sayv("same_stream_reuse", q == p);
    cuMemFreeAsync(q, s1);
    cuMemAllocFromPoolAsync(&q, 65536, pool, s2);
    sayv("other_stream_reuse_rules_off", q == p);
    cuMemFreeAsync(q, s2);
    cuStreamSynchronize(s1);
    cuStreamSynchronize(s2);
    cuMemAllocFromPoolAsync(&q, 65536, pool, s2);
    sayv("other_stream_reuse_after_sync", q == p);
    cuMemFreeAsync(q, s2);
    cuStreamSynchronize(s2);
    sayv("reserved_threshold_max_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    ASK("trim_2_63", cuMemPoolTrimTo(pool, size_t(1) << 63));
    sayv("reserved_after_trim_2_63_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    ASK("trim_max", cuMemPoolTrimTo(pool, SIZE_MAX));
    sayv("reserved_after_trim_max_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    ASK("trim", cuMemPoolTrimTo(pool, 0));
    sayv("reserved_after_trim_KiB", attr(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >> 10);
    cuuint64_t five = 5;
    ASK("set_used_high_5", cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &five));
    ASK("set_used_current", cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &five));
    int two = 2;
    ASK("set_flag_2", cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &two));
    CUmemAccessDesc ro;
    ro.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ro.location.id = 0;
    ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
    ASK("owner_read_only", cuMemPoolSetAccess(pool, &ro, 1));
    ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASK("owner_read_write", cuMemPoolSetAccess(pool, &ro, 1));
    int fd = -1;
    ASK("export_not_shareable", cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    cuMemAllocFromPoolAsync(&p, 4096, pool, s1);
    CUmemPoolPtrExportData data;
    ASK("export_pointer_not_shareable", cuMemPoolExportPointer(&data, p));
    ASK("free_sync_pool_block", cuMemFree(p));
    // Destroy with an allocation outstanding.
    cuMemAllocFromPoolAsync(&p, 4096, pool, s1);
    ASK("destroy_outstanding", cuMemPoolDestroy(pool));
    ASK("free_after_destroy", cuMemFreeAsync(p, s1));
    ASK("sync", cuStreamSynchronize(s1));
    // maxSize: rounding and refusal.
    props.maxSize = 8 << 20;
    ASK("create_max_8M", cuMemPoolCreate(&pool, &props));
    ASK("alloc_9M_in_8M", cuMemAllocFromPoolAsync(&p, 9 << 20, pool, s1));
    int n = 0;
    std::vector<CUdeviceptr> blocks;
    while (n < 200 && cuMemAllocFromPoolAsync(&p, 1 << 20, pool, s1) == CUDA_SUCCESS) {
        blocks.push_back(p);
        ++n;
    }
    sayv("one_MiB_blocks_in_8M", (unsigned long long)n);
    for (CUdeviceptr b : blocks)
        cuMemFreeAsync(b, s1);
    cuStreamSynchronize(s1);
    cuMemPoolDestroy(pool);
    // A shareable pool, and importing a pointer into a pool that was not imported.
    props.maxSize = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    ASK("create_shareable", cuMemPoolCreate(&pool, &props));
    cuMemAllocFromPoolAsync(&p, 4096, pool, s1);
    ASK("export_pointer", cuMemPoolExportPointer(&data, p));
    ASK("export_pointer_interior", cuMemPoolExportPointer(&data, p + 8));
    CUdeviceptr x = 0;
    ASK("import_pointer_into_own_pool", cuMemPoolImportPointer(&x, pool, &data));
    ASK("export", cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    cuMemFreeAsync(p, s1);
    cuStreamSynchronize(s1);
}

struct Vmm {
    decltype(&::cuMemCreate) create = get<decltype(&::cuMemCreate)>("cuMemCreate");
    decltype(&::cuMemAddressReserve) reserve = get<decltype(&::cuMemAddressReserve)>("cuMemAddressReserve");
    decltype(&::cuMemMap) map = get<decltype(&::cuMemMap)>("cuMemMap");
    decltype(&::cuMemSetAccess) access = get<decltype(&::cuMemSetAccess)>("cuMemSetAccess");
    CUmemAllocationProp prop;
    Vmm(int dev = 0)
    {
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = dev;
    }
};

void vmm()
{
    Vmm v;
    F(cuMemGetAllocationGranularity);
    F(cuMemRelease);
    F(cuMemAddressFree);
    F(cuMemUnmap);
    F(cuMemcpy);
    F(cuMemExportToShareableHandle);
    F(cuMemImportFromShareableHandle);
    F(cuMemGetAllocationPropertiesFromHandle);
    F(cuPointerGetAttribute);
    size_t g = 0, r = 0;
    cuMemGetAllocationGranularity(&g, &v.prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    cuMemGetAllocationGranularity(&r, &v.prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    sayv("granularity_KiB", g >> 10);
    sayv("recommended_KiB", r >> 10);
    CUmemGenericAllocationHandle h = 0, h2 = 0;
    ASK("create_misaligned", v.create(&h, g + 4096, &v.prop, 0));
    ASK("create_huge", v.create(&h, SIZE_MAX / g * g, &v.prop, 0));
    ASK("create", v.create(&h, 2 * g, &v.prop, 0));
    v.create(&h2, g, &v.prop, 0);
    CUdeviceptr va = 0, hinted = 0;
    ASK("reserve_misaligned", v.reserve(&va, g + 4096, 0, 0, 0));
    ASK("reserve", v.reserve(&va, 4 * g, 0, 0, 0));
    ASK("free_then_reserve_hint", cuMemAddressFree(va, 4 * g));
    v.reserve(&hinted, 4 * g, 0, va, 0);
    sayv("hint_honoured", hinted == va);
    va = hinted;
    ASK("map", v.map(va, 2 * g, 0, h, 0));
    ASK("map_overlapping", v.map(va + g, g, 0, h2, 0));
    ASK("map_past_reservation", v.map(va + 3 * g, 2 * g, 0, h2, 0));
    ASK("map_second", v.map(va + 2 * g, g, 0, h2, 0));
    CUmemAccessDesc rw;
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = 0;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASK("access_part_of_mapping", v.access(va, g, &rw, 1));
    ASK("access_across_two_mappings", v.access(va, 3 * g, &rw, 1));
    ASK("access_past_mappings", v.access(va, 4 * g, &rw, 1));
    std::vector<unsigned char> host(3 * g, 7);
    ASK("copy_across_two_mappings", cuMemcpy(va, dp(host.data()), 3 * g));
    unsigned int type = 0;
    ASK("ptrattr_vmm", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va));
    ASK("release_mapped", cuMemRelease(h));
    ASK("copy_after_release", cuMemcpy(dp(host.data()), va, 2 * g));
    sayv("data_kept", host[0] == 7 && host[2 * g - 1] == 7);
    ASK("release_twice", cuMemRelease(h));
    ASK("address_free_while_mapped", cuMemAddressFree(va, 4 * g));
    ASK("unmap_part", cuMemUnmap(va + g, g));
    ASK("unmap_with_hole", cuMemUnmap(va, 4 * g));
    ASK("unmap_two_mappings", cuMemUnmap(va, 3 * g));
    ASK("address_free_wrong_size", cuMemAddressFree(va, 3 * g));
    ASK("address_free", cuMemAddressFree(va, 4 * g));
    int fd = -1;
    ASK("export_not_shareable", cuMemExportToShareableHandle(&fd, h2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int pp[2];
    if (pipe(pp) == 0) {
        CUmemGenericAllocationHandle imp = 0;
        ASK("import_pipe", cuMemImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)pp[0]),
                                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        int dn = open("/dev/null", O_RDWR);
        ASK("import_dev_null", cuMemImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)dn),
                                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    }
    CUmemAllocationProp got;
    ASK("props", cuMemGetAllocationPropertiesFromHandle(&got, h2));
    ASK("release", cuMemRelease(h2));
}

// Answers the first probe run left open.
void more()
{
    F(cuMemHostAlloc);
    F(cuMemFreeHost);
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemFreeAsync);
    F(cuMemcpy);
    F(cuMemsetD8);
    F(cuMemHostGetDevicePointer);
    F(cuMemPoolCreate);
    F(cuMemAllocFromPoolAsync);
    F(cuMemPoolSetAttribute);
    F(cuMemPoolGetAttribute);
    F(cuMemPoolGetAccess);
    F(cuMemPoolExportToShareableHandle);
    F(cuMemPoolImportFromShareableHandle);
    F(cuMemPoolExportPointer);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    F(cuStreamWaitEvent);
    F(cuEventCreate);
    void *ph = reinterpret_cast<void *>(1);
    ASK("host_alloc_0", cuMemHostAlloc(&ph, 0, 0));
    sayv("host_alloc_0_null", ph == nullptr);
    if (ph)
        ASK("free_host_of_0", cuMemFreeHost(ph));
    CUdeviceptr d = 0;
    cuMemAlloc(&d, 64 << 20);
    sayv("alloc_64M_align_2M", d % (2 << 20) == 0);
    ASK("free_async_of_plain", cuMemFreeAsync(d, nullptr));
    ASK("free_after_free_async_try", cuMemFree(d));
    ASK("memset_0_bytes", cuMemsetD8(d, 0, 0));
    ASK("copy_from_null", cuMemcpy(d, 0, 16));
    ASK("copy_0_bytes_null", cuMemcpy(0, 0, 0));
    void *h2 = nullptr;
    cuMemHostAlloc(&h2, 4096, 0);
    CUdeviceptr pd = 0;
    ASK("device_pointer_flags_1", cuMemHostGetDevicePointer(&pd, h2, 1));
    CUstream s = nullptr;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    CUevent ev = nullptr;
    cuEventCreate(&ev, 0);
    ASK("wait_unrecorded_event", cuStreamWaitEvent(s, ev, 0));
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemoryPool pool = nullptr;
    cuMemPoolCreate(&pool, &props);
    CUdeviceptr p = 1;
    ASK("pool_alloc_0", cuMemAllocFromPoolAsync(&p, 0, pool, s));
    sayv("pool_alloc_0_ptr_null", p == 0);
    int two = 2, got = -1;
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &two);
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &got);
    sayv("flag_set_2_reads", (unsigned long long)got);
    int neg = -1;
    ASK("flag_set_minus_1", cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &neg));
    CUmemAccess_flags fl = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUmemLocation loc;
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = 0;
    ASK("get_access_owner", cuMemPoolGetAccess(&fl, pool, &loc));
    sayv("get_access_owner_flags", fl);
    CUmemPoolPtrExportData data;
    cuMemAllocFromPoolAsync(&p, 4096, pool, s);
    ASK("export_pointer_unsynced", cuMemPoolExportPointer(&data, p));
    cuStreamSynchronize(s);
    ASK("export_pointer_synced", cuMemPoolExportPointer(&data, p));
    int fd = -1;
    cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    ASK("export_pointer_after_handle", cuMemPoolExportPointer(&data, p));
    CUdeviceptr p2 = 0;
    cuMemAllocFromPoolAsync(&p2, 4096, pool, s);
    ASK("export_pointer_unsynced_after_handle", cuMemPoolExportPointer(&data, p2));
    int pp[2];
    if (pipe(pp) == 0) {
        CUmemoryPool imp = nullptr;
        ASK("pool_import_pipe", cuMemPoolImportFromShareableHandle(&imp, reinterpret_cast<void *>((intptr_t)pp[0]),
                                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    }
    cuStreamSynchronize(s);
}

// The primary context's life.
void context()
{
    F(cuDevicePrimaryCtxRelease);
    F(cuDevicePrimaryCtxRetain);
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemGetInfo);
    CUdeviceptr d = 0;
    cuMemAlloc(&d, 1 << 20);
    ASK("release", cuDevicePrimaryCtxRelease(0));
    size_t f = 0, t = 0;
    ASK("meminfo_after_release", cuMemGetInfo(&f, &t));
    ASK("free_after_release", cuMemFree(d));
    ASK("release_again", cuDevicePrimaryCtxRelease(0));
    CUcontext c = nullptr;
    ASK("retain_again", cuDevicePrimaryCtxRetain(&c, 0));
    sayv("same_handle", c == g_ctx);
    ASK("free_after_retain", cuMemFree(d));
}

// What can be asked of a device whose primary context nobody started (gpumem
// sets up every visible device at init, but starts a context only on the
// devices a process uses: one process per GPU must not make contexts on the
// others).  Device D is the last one; this thread has no current context.
void lazy()
{
    F(cuDeviceGetCount);
    F(cuDevicePrimaryCtxGetState);
    F(cuDevicePrimaryCtxRetain);
    F(cuDevicePrimaryCtxRelease);
    F(cuCtxSetCurrent);
    F(cuDeviceGet);
    F(cuDeviceGetName);
    F(cuDeviceTotalMem);
    F(cuMemGetInfo);
    F(cuMemGetAllocationGranularity);
    F(cuDeviceGetDefaultMemPool);
    F(cuMemPoolCreate);
    F(cuMemPoolDestroy);
    F(cuMemPoolGetAttribute);
    F(cuMemPoolSetAttribute);
    F(cuMemAllocFromPoolAsync);
    F(cuMemFreeAsync);
    F(cuStreamSynchronize);
    F(cuDeviceCanAccessPeer);
    int n = 0;
    cuDeviceGetCount(&n);
    const int d = n - 1;
    CUdevice dev = 0;
    cuDeviceGet(&dev, d);
    auto active = [&](const char *q) {
        unsigned int flags = 0;
        int on = -1;
        cuDevicePrimaryCtxGetState(dev, &flags, &on);
        sayv(std::string("active_after_") + q, (unsigned long long)on);
    };
    active("nothing");
    char name[128] = {};
    ASK("name", cuDeviceGetName(name, sizeof name - 1, dev));
    size_t total = 0;
    ASK("total_mem", cuDeviceTotalMem(&total, dev));
    size_t f = 0, t = 0;
    ASK("meminfo", cuMemGetInfo(&f, &t));
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = d;
    size_t g = 0;
    ASK("granularity", cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    active("granularity");
    CUmemoryPool def = nullptr;
    ASK("default_pool", cuDeviceGetDefaultMemPool(&def, dev));
    active("default_pool");
    cuuint64_t keep = ~cuuint64_t(0), v = 0;
    ASK("default_pool_set_threshold", cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    ASK("default_pool_get_reserved", cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    active("default_pool_attributes");
    CUmemPoolProps pp{};
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = d;
    CUmemoryPool mine = nullptr;
    ASK("pool_create", cuMemPoolCreate(&mine, &pp));
    active("pool_create");
#if CUDA_VERSION >= 13000
    CUmemPoolProps mp = pp;
    mp.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
    CUmemoryPool managed = nullptr;
    ASK("managed_pool_create", cuMemPoolCreate(&managed, &mp));
    active("managed_pool_create");
    if (managed)
        ASK("managed_pool_destroy", cuMemPoolDestroy(managed));
#endif
    if (n > 1) {
        int can = -1;
        ASK("can_access_peer", cuDeviceCanAccessPeer(&can, dev, 0));
        active("can_access_peer");
    }
    // Started now: what was set up before is still there and usable.
    CUcontext ctx = nullptr;
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    CUmemoryPool def2 = nullptr;
    cuDeviceGetDefaultMemPool(&def2, dev);
    sayv("default_pool_same_after_start", def2 == def);
    v = 0;
    cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
    sayv("threshold_kept_after_start", v == keep);
    CUdeviceptr p = 0;
    ASK("alloc_from_early_pool", cuMemAllocFromPoolAsync(&p, 1 << 20, mine, nullptr));
    if (p)
        cuMemFreeAsync(p, nullptr);
    ASK("sync", cuStreamSynchronize(nullptr));
    // Stopped again (the last reference): the pool made before the start.
    cuCtxSetCurrent(nullptr);
    cuDevicePrimaryCtxRelease(dev);
    active("release");
    ASK("early_pool_after_release", cuMemPoolGetAttribute(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    ASK("pool_destroy", cuMemPoolDestroy(mine));
}

// A copy into a mapping whose access was never set (may spoil the context: last).
void vmm_noaccess()
{
    Vmm v;
    F(cuMemcpy);
    F(cuCtxSynchronize);
    size_t g = 2 << 20;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    v.create(&h, g, &v.prop, 0);
    v.reserve(&va, g, 0, 0, 0);
    v.map(va, g, 0, h, 0);
    std::vector<unsigned char> host(g, 1);
    ASK("copy_without_access", cuMemcpy(va, dp(host.data()), 4096));
    ASK("sync_after", cuCtxSynchronize());
}

// Two devices: VMM memory accessible to device 0 only, copied in device 1's context.
void multi()
{
    F(cuDeviceGetCount);
    F(cuDevicePrimaryCtxRetain);
    F(cuCtxSetCurrent);
    F(cuCtxSynchronize);
    F(cuMemcpy);
    int n = 0;
    cuDeviceGetCount(&n);
    sayv("devices", (unsigned long long)n);
    if (n < 2)
        return;
    Vmm v;
    size_t g = 2 << 20;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    v.create(&h, g, &v.prop, 0);
    v.reserve(&va, g, 0, 0, 0);
    v.map(va, g, 0, h, 0);
    CUmemAccessDesc rw;
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = 0;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    v.access(va, g, &rw, 1);
    std::vector<unsigned char> host(4096, 3);
    ASK("copy_in_own_context", cuMemcpy(va, dp(host.data()), 4096));
    CUcontext c1 = nullptr;
    cuDevicePrimaryCtxRetain(&c1, 1);
    cuCtxSetCurrent(c1);
    ASK("copy_in_other_context_h2d", cuMemcpy(va, dp(host.data()), 4096));
    ASK("copy_in_other_context_d2h", cuMemcpy(dp(host.data()), va, 4096));
    ASK("sync_other_context", cuCtxSynchronize());
}


// Where a call may run (two or more devices): another device's memory of each kind from
// context 0, before and after access grants and peer access, and with no context current.
// Device 1 owns d1 (cuMemAlloc), b1 (its default pool), v1 (VMM, access for device 1 only).
struct Placement {
    CUcontext c0 = nullptr, c1 = nullptr;
    CUstream s0 = nullptr, s1 = nullptr;
    CUdeviceptr d0 = 0, d1 = 0, b0 = 0, b1 = 0, v0 = 0, v1 = 0;
    CUmemoryPool pool0 = nullptr, pool1 = nullptr;
};

CUdeviceptr vmm_on(int dev, size_t g)
{
    Vmm v(dev);
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    v.create(&h, g, &v.prop, 0);
    v.reserve(&va, g, 0, 0, 0);
    v.map(va, g, 0, h, 0);
    CUmemAccessDesc rw;
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = dev;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    v.access(va, g, &rw, 1);
    return va;
}

// Both primary contexts retained, and in device 1's (left current): a stream, a cuMemAlloc
// block and a block of its default pool, `g` bytes each.
void own_device1(Placement &p, size_t g)
{
    F(cuDevicePrimaryCtxRetain);
    F(cuCtxSetCurrent);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    F(cuMemAlloc);
    F(cuDeviceGetDefaultMemPool);
    F(cuMemAllocFromPoolAsync);
    cuDevicePrimaryCtxRetain(&p.c0, 0);
    cuDevicePrimaryCtxRetain(&p.c1, 1);
    cuCtxSetCurrent(p.c1);
    cuStreamCreate(&p.s1, CU_STREAM_NON_BLOCKING);
    cuMemAlloc(&p.d1, g);
    cuDeviceGetDefaultMemPool(&p.pool1, 1);
    cuMemAllocFromPoolAsync(&p.b1, g, p.pool1, p.s1);
    cuStreamSynchronize(p.s1);
}

void placement()
{
    F(cuDeviceGetCount);
    F(cuCtxSetCurrent);
    F(cuCtxGetCurrent);
    F(cuCtxSynchronize);
    F(cuCtxEnablePeerAccess);
    F(cuMemAlloc);
    F(cuMemsetD8);
    F(cuMemsetD8Async);
    F(cuMemcpy);
    F(cuMemcpyAsync);
    F(cuMemcpyPeer);
    F(cuMemcpyPeerAsync);
    F(cuMemGetAddressRange);
    F(cuPointerGetAttribute);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    F(cuStreamQuery);
    F(cuStreamWaitEvent);
    F(cuEventCreate);
    F(cuEventRecord);
    F(cuDeviceGetDefaultMemPool);
    F(cuMemAllocFromPoolAsync);
    F(cuMemFreeAsync);
    F(cuMemPoolSetAccess);
    F(cuMemPoolTrimTo);
    F(cuMemAllocManaged);
    F(cuMemHostAlloc);
    F(cuMemAddressReserve);
    F(cuMemSetAccess);
    int n = 0;
    cuDeviceGetCount(&n);
    sayv("devices", (unsigned long long)n);
    if (n < 2)
        return;
    Placement p;
    const size_t g = 2 << 20, k = 4096;
    std::vector<unsigned char> host(g, 5);
    own_device1(p, g); // device 1's memory, made in its own context
    p.v1 = vmm_on(1, g);
    CUevent e1 = nullptr;
    cuEventCreate(&e1, 0);
    // Device 0's.
    cuCtxSetCurrent(p.c0);
    cuStreamCreate(&p.s0, CU_STREAM_NON_BLOCKING);
    cuMemAlloc(&p.d0, g);
    cuDeviceGetDefaultMemPool(&p.pool0, 0);
    cuMemAllocFromPoolAsync(&p.b0, g, p.pool0, p.s0);
    cuStreamSynchronize(p.s0);
    p.v0 = vmm_on(0, g);
    CUevent e0 = nullptr;
    cuEventCreate(&e0, 0);
    CUdeviceptr managed = 0;
    cuMemAllocManaged(&managed, g, CU_MEM_ATTACH_GLOBAL);
    const struct {
        const char *name;
        CUdeviceptr mine, other;
    } kinds[] = {{"plain", p.d0, p.d1}, {"pool", p.b0, p.b1}, {"vmm", p.v0, p.v1}};

    // Context 0 current, no peer access, no grants.
    for (const auto &m : kinds) {
        char q[96];
        auto ask = [&](const char *what, CUresult r) {
            snprintf(q, sizeof q, "%s_%s", what, m.name);
            say(q, r);
        };
        ask("ctx0.memset_other", cuMemsetD8(m.other, 1, k));
        ask("ctx0.memset_async_other_legacy", cuMemsetD8Async(m.other, 1, k, nullptr));
        ask("ctx0.memset_async_other_owner_stream", cuMemsetD8Async(m.other, 1, k, p.s1));
        ask("ctx0.copy_h2d_other", cuMemcpy(m.other, dp(host.data()), k));
        ask("ctx0.copy_d2h_other", cuMemcpy(dp(host.data()), m.other, k));
        ask("ctx0.copy_async_h2d_other_owner_stream", cuMemcpyAsync(m.other, dp(host.data()), k, p.s1));
        ask("ctx0.copy_async_h2d_other_own_stream", cuMemcpyAsync(m.other, dp(host.data()), k, p.s0));
        ask("ctx0.copy_d2d_mine_to_other", cuMemcpy(m.other, m.mine, k));
        ask("ctx0.copy_d2d_other_to_mine", cuMemcpy(m.mine, m.other, k));
        if (cuMemcpyPeer && cuMemcpyPeerAsync) {
            ask("ctx0.peer_copy", cuMemcpyPeer(m.other, p.c1, m.mine, p.c0, k));
            ask("ctx0.peer_copy_async_s0", cuMemcpyPeerAsync(m.other, p.c1, m.mine, p.c0, k, p.s0));
            ask("ctx0.peer_copy_async_s1", cuMemcpyPeerAsync(m.mine, p.c0, m.other, p.c1, k, p.s1));
        } else {
            snprintf(q, sizeof q, "ctx0.peer_copy_%s", m.name);
            say(q, CUDA_ERROR_NOT_FOUND); // the driver lacks the entry point
        }
        CUdeviceptr base = 0;
        size_t size = 0;
        ask("ctx0.range_other", cuMemGetAddressRange(&base, &size, m.other + 64));
        int ordinal = -1;
        ask("ctx0.ordinal_other", cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, m.other));
        snprintf(q, sizeof q, "ctx0.ordinal_other_value_%s", m.name);
        sayv(q, (unsigned long long)(ordinal + 1));
        ask("ctx1.copy_h2d_own", (cuCtxSetCurrent(p.c1), cuMemcpy(m.other, dp(host.data()), k)));
        cuCtxSetCurrent(p.c0);
    }
    ASK("ctx0.sync_after_refusals", cuCtxSynchronize());
    cuStreamSynchronize(p.s1);
    CUdeviceptr q = 0;
    ASK("ctx0.pool_alloc_other_pool_own_stream", cuMemAllocFromPoolAsync(&q, k, p.pool1, p.s0));
    if (q)
        ASK("ctx0.free_async_that_block_s0", cuMemFreeAsync(q, p.s0));
    q = 0;
    ASK("ctx0.pool_alloc_other_pool_owner_stream", cuMemAllocFromPoolAsync(&q, k, p.pool1, p.s1));
    if (q)
        ASK("ctx0.free_async_other_block_own_stream", cuMemFreeAsync(q, p.s0));
    ASK("ctx0.stream_sync_other", cuStreamSynchronize(p.s1));
    ASK("ctx0.stream_query_other", cuStreamQuery(p.s1));
    ASK("ctx0.event_record_other_on_other", cuEventRecord(e1, p.s1));
    ASK("ctx0.event_record_mine_on_other", cuEventRecord(e0, p.s1));
    ASK("ctx0.wait_other_event", cuStreamWaitEvent(p.s0, e1, 0));
    ASK("ctx0.pool_trim_other", cuMemPoolTrimTo(p.pool1, 0));
    CUmemLocation loc;
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = 1;
    static const auto prefetch = get<decltype(&::cuMemPrefetchAsync_v2)>("cuMemPrefetchAsync", 12020);
    if (prefetch) {
        ASK("ctx0.prefetch_to_other_s0", prefetch(managed, g, loc, 0, p.s0));
        ASK("ctx0.prefetch_to_other_s1", prefetch(managed, g, loc, 0, p.s1));
    }

    // Access grants from context 0, then the same fills.
    CUmemAccessDesc d;
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 1;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    ASK("ctx0.pool_revoke_owner", cuMemPoolSetAccess(p.pool1, &d, 1));
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASK("ctx0.pool_grant_dev0", cuMemPoolSetAccess(p.pool1, &d, 1));
    ASK("ctx0.memset_pool_other_after_grant", cuMemsetD8(p.b1, 2, k));
    ASK("ctx0.range_pool_other_after_grant", [&] {
        CUdeviceptr b = 0;
        size_t s = 0;
        return cuMemGetAddressRange(&b, &s, p.b1);
    }());
    ASK("ctx0.vmm_grant_dev0", cuMemSetAccess(p.v1, g, &d, 1));
    ASK("ctx0.memset_vmm_other_after_grant", cuMemsetD8(p.v1, 2, k));
    ASK("ctx0.copy_vmm_d2d_after_grant", cuMemcpy(p.v1, p.v0, k));
    ASK("ctx0.enable_peer", cuCtxEnablePeerAccess(p.c1, 0));
    ASK("ctx0.memset_plain_other_peer", cuMemsetD8(p.d1, 3, k));
    ASK("ctx0.memset_async_plain_other_peer_legacy", cuMemsetD8Async(p.d1, 3, k, nullptr));
    ASK("ctx0.sync_after_grants", cuCtxSynchronize());

    // No context current: calls on streams and handles that name their own.
    cuCtxSetCurrent(nullptr);
    ASK("none.memset_async_owner_stream", cuMemsetD8Async(p.d1, 4, k, p.s1));
    ASK("none.copy_async_owner_stream", cuMemcpyAsync(p.d1, dp(host.data()), k, p.s1));
    q = 0;
    ASK("none.pool_alloc_owner_stream", cuMemAllocFromPoolAsync(&q, k, p.pool1, p.s1));
    if (q)
        ASK("none.free_async_owner_stream", cuMemFreeAsync(q, p.s1));
    ASK("none.stream_sync", cuStreamSynchronize(p.s1));
    ASK("none.pool_trim", cuMemPoolTrimTo(p.pool1, 0));
    CUdeviceptr r = 0;
    ASK("none.address_reserve", cuMemAddressReserve(&r, g, 0, 0, 0));
    void *h = nullptr;
    ASK("none.host_alloc", cuMemHostAlloc(&h, k, CU_MEMHOSTALLOC_PORTABLE));
    CUcontext now = nullptr;
    cuCtxGetCurrent(&now);
    sayv("none.still_none", now == nullptr);
}

// Follow-ups to placement, on what the fake had to choose without a driver's word: names
// cuGetProcAddress knows, device UUIDs, the owner's pool access asked from either context, range
// lookups (a mapping without access, plain memory under peer access), peer copies naming the
// wrong context or made with none current, and a pool of host memory without access.
void reach()
{
    F(cuDeviceGetCount);
    F(cuCtxSetCurrent);
    F(cuCtxGetDevice);
    F(cuCtxSynchronize);
    F(cuCtxEnablePeerAccess);
    F(cuDeviceGetAttribute);
    F(cuDeviceGetUuid);
    F(cuMemAlloc);
    F(cuMemsetD8);
    F(cuMemcpy);
    F(cuMemcpyPeer);
    F(cuMemcpyPeerAsync);
    F(cuMemGetAddressRange);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    F(cuDeviceGetDefaultMemPool);
    F(cuMemPoolCreate);
    F(cuMemAllocFromPoolAsync);
    F(cuMemPoolSetAccess);
    int n = 0;
    cuDeviceGetCount(&n);
    sayv("devices", (unsigned long long)n);
    if (n < 2)
        return;
    // Names.
    auto known = [](const char *name, int version) {
        void *fn = nullptr;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        g_get(name, &fn, version, 0, &st);
        return fn != nullptr && st == CU_GET_PROC_ADDRESS_SUCCESS;
    };
    sayv("proc_uuid", known("cuDeviceGetUuid", 12000));
    sayv("proc_uuid_v2_name", known("cuDeviceGetUuid_v2", 12000));
    sayv("proc_alloc_v2_name", known("cuMemAlloc_v2", 12000));
    sayv("proc_peer_async", known("cuMemcpyPeerAsync", 12000));
    sayv("proc_ctx_get_device", known("cuCtxGetDevice", 12000));
    {
        void *a = nullptr, *b = nullptr;
        CUdriverProcAddressQueryResult st;
        g_get("cuDeviceGetUuid", &a, 9020, 0, &st);
        g_get("cuDeviceGetUuid", &b, 11040, 0, &st);
        sayv("uuid_forms_differ", a != nullptr && b != nullptr && a != b);
    }
    CUuuid u0, u1, u0b;
    ASK("uuid", cuDeviceGetUuid(&u0, 0));
    cuDeviceGetUuid(&u1, 1);
    cuDeviceGetUuid(&u0b, 0);
    sayv("uuid_distinct", memcmp(&u0, &u1, sizeof u0) != 0);
    sayv("uuid_stable", memcmp(&u0, &u0b, sizeof u0) == 0);
    ASK("uuid_bad_device", cuDeviceGetUuid(&u0, n));

    Placement p;
    const size_t g = 2 << 20, k = 4096;
    std::vector<unsigned char> host(g, 5);
    own_device1(p, g);
    // A mapping of device 1's memory whose access was never set.
    Vmm v(1);
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr vna = 0;
    v.create(&h, g, &v.prop, 0);
    v.reserve(&vna, g, 0, 0, 0);
    v.map(vna, g, 0, h, 0);
    ASK("ctx1.range_own_vmm_without_access", [&] {
        CUdeviceptr b = 0;
        size_t sz = 0;
        return cuMemGetAddressRange(&b, &sz, vna);
    }());
    CUmemAccessDesc d;
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 1;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    ASK("ctx1.pool_revoke_owner", cuMemPoolSetAccess(p.pool1, &d, 1));
    cuCtxSetCurrent(p.c0);
    cuStreamCreate(&p.s0, CU_STREAM_NON_BLOCKING);
    cuMemAlloc(&p.d0, g);
    cuDeviceGetDefaultMemPool(&p.pool0, 0);
    cuMemAllocFromPoolAsync(&p.b0, g, p.pool0, p.s0);
    cuStreamSynchronize(p.s0);
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
    ASK("ctx0.pool_owner_read_only_other", cuMemPoolSetAccess(p.pool1, &d, 1));
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    ASK("ctx0.pool_revoke_owner_own", cuMemPoolSetAccess(p.pool0, &d, 1));
    // A peer copy naming the wrong context for a pointer.
    ASK("ctx0.peer_copy_pool_wrong_ctx", cuMemcpyPeer(p.b1, p.c0, p.b0, p.c0, k));
    ASK("ctx0.peer_copy_plain_wrong_ctx", cuMemcpyPeer(p.d1, p.c0, p.d0, p.c0, k));
    // A pool of host memory (driver 12.6+), no access granted to any device.
    int host_pools = 0;
    cuDeviceGetAttribute(&host_pools, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, 0);
    sayv("host_pools", (unsigned long long)host_pools);
    if (host_pools) {
        CUmemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_HOST;
        CUmemoryPool hp = nullptr;
        CUdeviceptr hb = 0;
        ASK("ctx0.host_pool_create", cuMemPoolCreate(&hp, &props));
        ASK("ctx0.host_pool_alloc", cuMemAllocFromPoolAsync(&hb, k, hp, p.s0));
        cuStreamSynchronize(p.s0);
        ASK("ctx0.host_pool_copy_h2d_no_access", cuMemcpy(hb, dp(host.data()), k));
        ASK("ctx0.host_pool_copy_d2d_no_access", cuMemcpy(p.d0, hb, k));
        ASK("ctx0.host_pool_memset_no_access", cuMemsetD8(hb, 1, k));
        ASK("ctx0.host_pool_range_no_access", [&] {
            CUdeviceptr b = 0;
            size_t sz = 0;
            return cuMemGetAddressRange(&b, &sz, hb);
        }());
        d.location.id = 0;
        d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        ASK("ctx0.host_pool_grant_dev0", cuMemPoolSetAccess(hp, &d, 1));
        ASK("ctx0.host_pool_copy_d2d_after_grant", cuMemcpy(p.d0, hb, k));
        ASK("ctx0.host_pool_memset_after_grant", cuMemsetD8(hb, 1, k));
    }
    ASK("ctx0.sync_after_refusals", cuCtxSynchronize());
    ASK("ctx0.enable_peer", cuCtxEnablePeerAccess(p.c1, 0));
    ASK("ctx0.range_plain_other_peer", [&] {
        CUdeviceptr b = 0;
        size_t sz = 0;
        return cuMemGetAddressRange(&b, &sz, p.d1);
    }());
    ASK("ctx0.copy_pool_other_peer", cuMemcpy(p.b1, dp(host.data()), k));
    // No context current.
    cuCtxSetCurrent(nullptr);
    ASK("none.peer_copy", cuMemcpyPeer(p.d1, p.c1, p.d0, p.c0, k));
    ASK("none.peer_copy_async_s1", cuMemcpyPeerAsync(p.d1, p.c1, p.d0, p.c0, k, p.s1));
    ASK("none.range", [&] {
        CUdeviceptr b = 0;
        size_t sz = 0;
        return cuMemGetAddressRange(&b, &sz, p.d1);
    }());
    ASK("none.ctx_get_device", [&] {
        CUdevice dv = -1;
        return cuCtxGetDevice(&dv);
    }());
    ASK("none.stream_sync", cuStreamSynchronize(p.s1));
}

// Work on the owner's memory on a stream of another device, the owner's context current: does
// a fill or a copy take the stream's context (and engine) or the current one?  gpumem answers
// by running such work on the owner's default stream between two events; these say whether
// that is needed.  One kind per process run would be cleaner: a refusal found only at the
// synchronisation spoils the context, so each question's synchronisation is asked right after.
void bridge()
{
    F(cuDeviceGetCount);
    F(cuCtxSetCurrent);
    F(cuMemAlloc);
    F(cuMemsetD8Async);
    F(cuMemcpyAsync);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    int n = 0;
    cuDeviceGetCount(&n);
    sayv("devices", (unsigned long long)n);
    if (n < 2)
        return;
    const size_t g = 2 << 20, k = 4096;
    std::vector<unsigned char> host(k, 9);
    Placement p;
    own_device1(p, g);
    cuCtxSetCurrent(p.c0);
    CUstream s0 = nullptr;
    cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING);
    cuCtxSetCurrent(p.c1);
    const struct {
        const char *name;
        CUdeviceptr p;
    } kinds[] = {{"plain", p.d1}, {"pool", p.b1}, {"vmm", vmm_on(1, g)}};
    for (const auto &m : kinds) {
        char q[96];
        snprintf(q, sizeof q, "ctx1.memset_async_own_on_s0_%s", m.name);
        say(q, cuMemsetD8Async(m.p, 1, k, s0));
        snprintf(q, sizeof q, "ctx1.memset_async_own_on_s0_sync_%s", m.name);
        say(q, cuStreamSynchronize(s0));
        snprintf(q, sizeof q, "ctx1.copy_async_own_on_s0_%s", m.name);
        say(q, cuMemcpyAsync(m.p, dp(host.data()), k, s0));
        snprintf(q, sizeof q, "ctx1.copy_async_own_on_s0_sync_%s", m.name);
        say(q, cuStreamSynchronize(s0));
    }
}
// ---------------------------------------------------------------------------------------------
// Group capture: stream capture, graphs and user objects (the fake's design note:
// fake_api_graphs.cpp).  Each question in a fresh capture on a stream of its own, ended (and its
// graph destroyed) before the next; after a call that may invalidate, the capture's status too
// ("<question>.status").  Calls that might spoil the context come last.
// Group export, fabric pools: can a pool of fabric memory leave this process?  Its handle is 64
// bytes (CUmemFabricHandle), not a descriptor, so a second process of the probe gets it, and the
// export data of one block, in hex on its command line.  The child imports both, reads
// kFabricBytes back and compares them with what this process wrote; its answers come back over a
// pipe and are printed here, in a fixed order, so that the record reads the same whatever the
// child did.  Where an export fails, the child is not started and its questions are recorded
// "not asked", with the reason.
//
// A refused export is dangerous: on the H200 (driver 580.159.04, no IMEX channel) the pool's
// export is NOT_PERMITTED, and the pool's next call (a block's export data or free, the pool's
// destroy) kills the process with SIGSEGV (probe/h200-export.txt).  So after a refusal this
// process touches neither the pool nor its block again, and each call that might crash is asked
// by a fresh process of the probe (export:fabric-after-refusal STEP, k_refusal_steps): a crash
// there is an answer ("no answer (the child was killed by SIGSEGV)").
constexpr size_t kFabricBytes = 4096;
unsigned char fabric_pattern(size_t i) { return static_cast<unsigned char>(i * 7 + 3); }

std::string to_hex(const unsigned char *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[b[i] >> 4];
        s += digits[b[i] & 15];
    }
    return s;
}

bool from_hex(const char *s, unsigned char *b, size_t n)
{
    auto nibble = [](char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    if (strlen(s) != 2 * n)
        return false;
    for (size_t i = 0; i < n; ++i) {
        const int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        b[i] = static_cast<unsigned char>(hi << 4 | lo);
    }
    return true;
}

// A question a child of the probe answers; an optional one is printed only where it answered.
struct ChildQuestion {
    std::string name;
    bool optional = false;
};

void not_asked(const std::vector<ChildQuestion> &qs, size_t from, const char *why)
{
    for (size_t i = from; i < qs.size(); ++i)
        if (!qs[i].optional)
            printf("%s.%s = not asked (%s)\n", g_group, qs[i].name.c_str(), why);
}

// Runs `/proc/self/exe LIBCUDA MODE ARGS...` (main makes the primary context current) and prints
// its answers to `qs` in order; a question it did not answer says how the child ended.  With
// `ended_q`, one more line says how it ended ("exited 0", "killed by SIGSEGV"): a child that
// answered may still die on its way out.  Under AddressSanitizer the child dies of the signal
// rather than the sanitizer's report of it, so that the answer reads the same in every build.
void run_child(const char *mode, const std::vector<std::string> &args, const std::vector<ChildQuestion> &qs,
               const char *ended_q = nullptr)
{
    fflush(stdout);
    int out[2];
    if (pipe(out) != 0) {
        not_asked(qs, 0, "pipe failed");
        return;
    }
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(out[0]);
        close(out[1]);
        not_asked(qs, 0, "posix_spawn_file_actions_init failed");
        return;
    }
    int fa_rc = posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (fa_rc == 0)
        fa_rc = posix_spawn_file_actions_addclose(&fa, out[0]);
    if (fa_rc == 0)
        fa_rc = posix_spawn_file_actions_addclose(&fa, out[1]);
    std::string self = "/proc/self/exe", lib = g_lib_path, m = mode;
    std::vector<std::string> owned = args;
    std::vector<char *> argv = {&self[0], &lib[0], &m[0]};
    for (std::string &a : owned)
        argv.push_back(&a[0]);
    argv.push_back(nullptr);
    const char *asan = getenv("ASAN_OPTIONS");
    if (!asan || !strstr(asan, "handle_segv=0")) {
        const std::string options = std::string(asan && *asan ? asan : "") + (asan && *asan ? ":" : "") + "handle_segv=0";
        setenv("ASAN_OPTIONS", options.c_str(), 1); // read by the child only: this process has started
    }
    pid_t pid = -1;
    const int rc = fa_rc != 0 ? fa_rc : posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), ::environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    std::string said;
    if (rc == 0) {
        char buf[512];
        for (ssize_t k; (k = read(out[0], buf, sizeof buf)) > 0;)
            said.append(buf, static_cast<size_t>(k));
    }
    close(out[0]);
    if (rc != 0) {
        const std::string why = std::string("posix_spawn failed: ") + strerror(rc);
        not_asked(qs, 0, why.c_str());
        return;
    }
    int status = 0;
    std::string how = "ended unseen"; // waitpid failed
    if (waitpid(pid, &status, 0) == pid) {
        if (WIFSIGNALED(status))
            how = std::string("killed by SIG") + (sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
        else
            how = "exited " + std::to_string(WEXITSTATUS(status));
    }
    const std::string ended = how == "exited 0"               ? "the child ended without answering"
                              : how.compare(0, 7, "killed ") == 0 ? "the child was " + how
                                                                  : "the child " + how;
    auto answer = [&](const std::string &q) -> std::string {
        const std::string key = std::string(g_group) + "." + q + " = ";
        for (size_t at = 0; (at = said.find(key, at)) != std::string::npos; ++at)
            if (at == 0 || said[at - 1] == '\n') {
                const size_t end = said.find('\n', at);
                return said.substr(at, end == std::string::npos ? std::string::npos : end - at);
            }
        return std::string();
    };
    for (const ChildQuestion &q : qs) {
        const std::string line = answer(q.name);
        if (!line.empty())
            printf("%s\n", line.c_str());
        else if (!q.optional)
            printf("%s.%s = no answer (%s)\n", g_group, q.name.c_str(), ended.c_str());
    }
    if (ended_q)
        printf("%s.%s = %s\n", g_group, ended_q, how.c_str());
    // The child's lines for the record only ("# ..."), after its answers.
    for (size_t at = 0; at < said.size();) {
        size_t end = said.find('\n', at);
        if (end == std::string::npos)
            end = said.size();
        if (said.compare(at, 2, "# ") == 0)
            printf("%s\n", said.substr(at, end - at).c_str());
        at = end + 1;
    }
}

const std::vector<ChildQuestion> k_fabric_child_questions = {{"fabric_pool_import_child"},
                                                             {"fabric_pool_import_pointer_child"},
                                                             {"fabric_pool_read_child"},
                                                             {"fabric_pool_read_child_matches", true}};

// The second process (argv: LIBCUDA export:fabric-child HANDLE_HEX DATA_HEX); main has made
// the primary context current.
int fabric_child(const char *handle_hex, const char *data_hex)
{
    F(cuMemPoolImportFromShareableHandle);
    F(cuMemPoolImportPointer);
    F(cuMemPoolDestroy);
    F(cuMemcpy);
    F(cuMemFree);
    if (!cuMemPoolImportFromShareableHandle || !cuMemPoolImportPointer || !cuMemPoolDestroy || !cuMemcpy || !cuMemFree) {
        fprintf(stderr, "fabric child: the driver lacks a pool import, copy or free entry point\n");
        return 2;
    }
    CUmemFabricHandle fh;
    CUmemPoolPtrExportData data;
    if (!from_hex(handle_hex, fh.data, sizeof fh.data) || !from_hex(data_hex, data.reserved, sizeof data.reserved)) {
        fprintf(stderr, "fabric child: the handle or the export data is not %zu bytes in hex\n", sizeof fh.data);
        return 2;
    }
    // An import that waits for a fabric that never answers ends here, not in the caller's budget:
    // the parent then records "no answer (the child was killed by SIGALRM)".
    alarm(60);
    CUmemoryPool pool = nullptr;
    CUresult r = cuMemPoolImportFromShareableHandle(&pool, &fh, CU_MEM_HANDLE_TYPE_FABRIC, 0);
    say("fabric_pool_import_child", r);
    if (r != CUDA_SUCCESS) {
        not_asked(k_fabric_child_questions, 1, "fabric_pool_import_child failed");
        return 0;
    }
    CUdeviceptr p = 0;
    r = cuMemPoolImportPointer(&p, pool, &data);
    say("fabric_pool_import_pointer_child", r);
    if (r != CUDA_SUCCESS) {
        not_asked(k_fabric_child_questions, 2, "fabric_pool_import_pointer_child failed");
    } else {
        std::vector<unsigned char> back(kFabricBytes, 0);
        r = cuMemcpy(dp(back.data()), p, back.size());
        say("fabric_pool_read_child", r);
        if (r == CUDA_SUCCESS) {
            size_t same = 0;
            for (size_t i = 0; i < back.size(); ++i)
                same += back[i] == fabric_pattern(i);
            sayv("fabric_pool_read_child_matches", same == back.size() ? 1 : 0);
        }
        // An imported block is freed here before the exporter frees it (the driver's rule).
        if (CUresult f = cuMemFree(p))
            fprintf(stderr, "fabric child: cuMemFree of the imported block: %s\n", ename(f));
    }
    if (CUresult d = cuMemPoolDestroy(pool))
        fprintf(stderr, "fabric child: cuMemPoolDestroy of the imported pool: %s\n", ename(d));
    return 0;
}

// After a refused fabric export, what each call on the pool does, each in a fresh process:
// the step's name, whether a 2 MiB block is allocated (and written) before the export, whether
// it is freed before it, and the call asked after it.  The step's answer is that call's result
// (fabric_refused_export_empty_pool: the export's own), and "<step>_export" the export's.
enum class AfterRefusal { Nothing, ExportPointer, Free, Destroy };
const struct {
    const char *step;
    bool alloc, free_first;
    AfterRefusal then;
} k_refusal_steps[] = {
    {"fabric_refused_export_then_export_pointer", true, false, AfterRefusal::ExportPointer},
    {"fabric_refused_export_then_free", true, false, AfterRefusal::Free},
    {"fabric_refused_export_then_destroy", true, true, AfterRefusal::Destroy},
    {"fabric_refused_export_empty_pool", false, false, AfterRefusal::Nothing},
    {"fabric_refused_export_empty_then_destroy", false, false, AfterRefusal::Destroy},
};

// The child (argv: LIBCUDA export:fabric-after-refusal STEP); main has made the primary context
// current.  Every line is flushed as it is said: a crash in the next call loses nothing.
int fabric_after_refusal(const char *step)
{
    F(cuMemPoolCreate);
    F(cuMemPoolDestroy);
    F(cuMemAllocFromPoolAsync);
    F(cuMemFreeAsync);
    F(cuStreamSynchronize);
    F(cuMemcpy);
    F(cuMemPoolExportToShareableHandle);
    F(cuMemPoolExportPointer);
    if (!cuMemPoolCreate || !cuMemPoolDestroy || !cuMemAllocFromPoolAsync || !cuMemFreeAsync || !cuStreamSynchronize ||
        !cuMemcpy || !cuMemPoolExportToShareableHandle || !cuMemPoolExportPointer) {
        fprintf(stderr, "fabric child: the driver lacks a pool, copy or export entry point\n");
        return 2;
    }
    const auto *s = std::find_if(std::begin(k_refusal_steps), std::end(k_refusal_steps),
                                 [&](const auto &x) { return strcmp(x.step, step) == 0; });
    if (s == std::end(k_refusal_steps)) {
        fprintf(stderr, "fabric child: no step %s\n", step);
        return 2;
    }
    alarm(60); // a call that hangs ends here: the parent records "killed by SIGALRM"
    auto skip = [&](const char *what, CUresult r) {
        if (s->then != AfterRefusal::Nothing)
            printf("%s.%s_export = not asked (%s failed: %s)\n", g_group, step, what, ename(r));
        printf("%s.%s = not asked (%s failed: %s)\n", g_group, step, what, ename(r));
        fflush(stdout);
        return 0;
    };
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CUmemoryPool pool = nullptr;
    CUresult r = cuMemPoolCreate(&pool, &props);
    if (r != CUDA_SUCCESS)
        return skip("cuMemPoolCreate", r);
    CUdeviceptr block = 0;
    if (s->alloc) {
        // As in the probe's own process: a block allocated, written and synchronised.
        std::vector<unsigned char> pattern(kFabricBytes);
        for (size_t i = 0; i < pattern.size(); ++i)
            pattern[i] = fabric_pattern(i);
        r = cuMemAllocFromPoolAsync(&block, size_t(2) << 20, pool, nullptr);
        if (r == CUDA_SUCCESS)
            r = cuMemcpy(block, dp(pattern.data()), pattern.size());
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(nullptr);
        if (r != CUDA_SUCCESS)
            return skip("the block's allocation", r);
    }
    if (s->free_first) {
        r = cuMemFreeAsync(block, nullptr);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(nullptr);
        if (r != CUDA_SUCCESS)
            return skip("freeing the block before the export", r);
    }
    CUmemFabricHandle fh;
    memset(&fh, 0, sizeof fh);
    r = cuMemPoolExportToShareableHandle(&fh, pool, CU_MEM_HANDLE_TYPE_FABRIC, 0);
    if (s->then == AfterRefusal::Nothing) {
        say(step, r);
        fflush(stdout);
        return 0;
    }
    say((std::string(step) + "_export").c_str(), r);
    fflush(stdout);
    if (r == CUDA_SUCCESS) {
        printf("%s.%s = not asked (the export succeeded)\n", g_group, step);
        fflush(stdout);
        return 0;
    }
    switch (s->then) {
    case AfterRefusal::ExportPointer: {
        CUmemPoolPtrExportData data;
        memset(&data, 0, sizeof data);
        r = cuMemPoolExportPointer(&data, block);
        break;
    }
    case AfterRefusal::Free:
        r = cuMemFreeAsync(block, nullptr);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(nullptr);
        break;
    case AfterRefusal::Destroy: r = cuMemPoolDestroy(pool); break;
    case AfterRefusal::Nothing: break;
    }
    say(step, r);
    fflush(stdout);
    return 0; // the process ends with what is left (its exit is answered too: "<step>_child_ended")
}

// Exports the pool and one block of it as fabric handles, and asks a second process to use them.
// Returns false where the pool's export was refused: the pool and the block must then not be
// touched again in this process (the next call on them crashes it).
bool fabric_pool_share(CUmemoryPool pool, CUdeviceptr block)
{
    F(cuMemcpy);
    F(cuStreamSynchronize);
    F(cuMemPoolExportToShareableHandle);
    F(cuMemPoolExportPointer);
    if (!cuMemcpy || !cuStreamSynchronize || !cuMemPoolExportToShareableHandle || !cuMemPoolExportPointer) {
        printf("%s.fabric_pool_export = absent\n", g_group);
        return true;
    }
    std::vector<unsigned char> pattern(kFabricBytes);
    for (size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = fabric_pattern(i);
    // The block was allocated on the legacy stream; the copy and the synchronisation follow it.
    CUresult w = cuMemcpy(block, dp(pattern.data()), pattern.size());
    if (w == CUDA_SUCCESS)
        w = cuStreamSynchronize(nullptr);
    CUmemFabricHandle fh;
    memset(&fh, 0, sizeof fh);
    const CUresult ex = cuMemPoolExportToShareableHandle(&fh, pool, CU_MEM_HANDLE_TYPE_FABRIC, 0);
    say("fabric_pool_export", ex);
    fflush(stdout);
    if (ex != CUDA_SUCCESS) {
        // Not asked here: after the refusal it crashes the process; a child asks it.
        printf("%s.fabric_pool_export_pointer = not asked (fabric_pool_export failed; a child asks "
               "fabric_refused_export_then_export_pointer)\n",
               g_group);
        not_asked(k_fabric_child_questions, 0, "fabric_pool_export failed");
        for (const auto &s : k_refusal_steps) {
            std::vector<ChildQuestion> qs;
            if (s.then != AfterRefusal::Nothing)
                qs.push_back({std::string(s.step) + "_export"});
            qs.push_back({s.step});
            const std::string ended = std::string(s.step) + "_child_ended";
            run_child("export:fabric-after-refusal", {s.step}, qs, ended.c_str());
        }
        return false;
    }
    CUmemPoolPtrExportData data;
    memset(&data, 0, sizeof data);
    const CUresult ep = cuMemPoolExportPointer(&data, block);
    say("fabric_pool_export_pointer", ep);
    if (ep != CUDA_SUCCESS)
        not_asked(k_fabric_child_questions, 0, "fabric_pool_export_pointer failed");
    else if (w != CUDA_SUCCESS) {
        const std::string why = std::string("writing the pattern failed: ") + ename(w);
        not_asked(k_fabric_child_questions, 0, why.c_str());
    } else
        run_child("export:fabric-child",
                  {to_hex(fh.data, sizeof fh.data), to_hex(data.reserved, sizeof data.reserved)},
                  k_fabric_child_questions);
    for (const auto &s : k_refusal_steps)
        printf("%s.%s = not asked (the export succeeded)\n", g_group, s.step);
    return true;
}

// What memory the driver exports for RDMA and other engines (the 0.4 contract: dma-buf
// export, RDMA-capable and fabric memory), asked before gpumem offers any of it: which
// memory cuMemGetHandleForAddressRange takes, what it says to a range it refuses, and
// whether fabric handles can be made here, and a pool of fabric memory shared.
void exports()
{
    F(cuDeviceGetAttribute);
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemHostAlloc);
    F(cuMemFreeHost);
    F(cuMemAllocManaged);
    F(cuMemAllocAsync);
    F(cuMemFreeAsync);
    F(cuStreamSynchronize);
    F(cuMemGetAllocationGranularity);
    F(cuMemRelease);
    F(cuMemAddressFree);
    F(cuMemUnmap);
    F(cuMemExportToShareableHandle);
    F(cuMemPoolCreate);
    F(cuMemPoolDestroy);
    F(cuMemAllocFromPoolAsync);
    using RangeHandle = CUresult (*)(void *, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
    const auto range_handle = get<RangeHandle>("cuMemGetHandleForAddressRange", 11070);
    const struct {
        const char *q;
        CUdevice_attribute a;
    } attrs[] = {{"attr_dma_buf", CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED},
                 {"attr_fabric", CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED},
                 {"attr_gdr", CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED},
                 {"attr_gdr_vmm", CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED},
                 {"attr_posix_fd", CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED}};
    for (const auto &x : attrs) {
        int v = -1;
        const CUresult r = cuDeviceGetAttribute(&v, x.a, 0);
        if (r == CUDA_SUCCESS)
            sayv(x.q, static_cast<unsigned long long>(v));
        else
            say(x.q, r);
    }
    if (!range_handle) {
        printf("%s.range_handle = absent\n", g_group);
        return;
    }
    // One export: its answer, and for a descriptor, whether its size is the range's.
    auto dmabuf = [&](const char *q, CUdeviceptr at, size_t size, unsigned long long flags) {
        int fd = -1;
        const CUresult r = range_handle(&fd, at, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, flags);
        say(q, r);
        if (r == CUDA_SUCCESS && fd >= 0) {
            const off_t end = lseek(fd, 0, SEEK_END);
            printf("%s.%s_size_matches = %d\n", g_group, q, end == static_cast<off_t>(size) ? 1 : 0);
            close(fd);
        }
    };
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    CUdeviceptr d = 0;
    cuMemAlloc(&d, size_t(4) << 20);
    dmabuf("plain", d, size_t(4) << 20, 0);
    dmabuf("plain_part", d + (size_t(1) << 20), size_t(1) << 20, 0);
    dmabuf("plain_one_page", d, page, 0);
    dmabuf("plain_unaligned_start", d + 256, size_t(1) << 20, 0);
    dmabuf("plain_unaligned_size", d, page + 256, 0);
    dmabuf("plain_past_end", d, size_t(8) << 20, 0);
    dmabuf("plain_size_zero", d, 0, 0);
    dmabuf("plain_flag_pcie", d, size_t(4) << 20, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE);
    dmabuf("plain_flag_unknown", d, size_t(4) << 20, 0x100);
    cuMemFree(d);
    dmabuf("freed", d, size_t(4) << 20, 0);
    // VMM: two physical allocations mapped back to back in one reservation.
    Vmm v;
    size_t g = 0;
    cuMemGetAllocationGranularity(&g, &v.prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUmemGenericAllocationHandle h1 = 0, h2 = 0;
    CUdeviceptr va = 0;
    v.create(&h1, g, &v.prop, 0);
    v.create(&h2, g, &v.prop, 0);
    v.reserve(&va, 4 * g, 0, 0, 0);
    v.map(va, g, 0, h1, 0);
    v.map(va + g, g, 0, h2, 0);
    CUmemAccessDesc rw;
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = 0;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    v.access(va, 2 * g, &rw, 1);
    dmabuf("vmm_one_mapping", va, g, 0);
    dmabuf("vmm_across_two_mappings", va, 2 * g, 0);
    dmabuf("vmm_into_unmapped", va + g, 2 * g, 0);
    cuMemUnmap(va, 2 * g);
    cuMemRelease(h1);
    cuMemRelease(h2);
    // VMM memory made RDMA-capable (what NCCL and GPUDirect RDMA want), with a POSIX handle.
    CUmemAllocationProp rdma = v.prop;
    rdma.allocFlags.gpuDirectRDMACapable = 1;
    rdma.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle hr = 0;
    ASK("vmm_rdma_create", v.create(&hr, g, &rdma, 0));
    if (hr) {
        v.map(va, g, 0, hr, 0);
        v.access(va, g, &rw, 1);
        dmabuf("vmm_rdma", va, g, 0);
        cuMemUnmap(va, g);
        cuMemRelease(hr);
    }
    // Fabric handles (multi-node NVLink): made, and exported, where the system has a fabric.
    CUmemAllocationProp fabric = v.prop;
    fabric.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CUmemGenericAllocationHandle hf = 0;
    ASK("fabric_create", v.create(&hf, g, &fabric, 0));
    if (hf) {
        CUmemFabricHandle fh;
        ASK("fabric_export", cuMemExportToShareableHandle(&fh, hf, CU_MEM_HANDLE_TYPE_FABRIC, 0));
        cuMemRelease(hf);
    }
    cuMemAddressFree(va, 4 * g);
    // Memory of the default pool, pinned host memory and managed memory.
    CUdeviceptr pd = 0;
    if (cuMemAllocAsync(&pd, size_t(4) << 20, nullptr) == CUDA_SUCCESS) {
        cuStreamSynchronize(nullptr);
        dmabuf("pool", pd, size_t(2) << 20, 0);
        cuMemFreeAsync(pd, nullptr);
        cuStreamSynchronize(nullptr);
    }
    void *hp = nullptr;
    if (cuMemHostAlloc(&hp, size_t(4) << 20, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS) {
        dmabuf("pinned", dp(hp), size_t(4) << 20, 0);
        cuMemFreeHost(hp);
    }
    CUdeviceptr m = 0;
    if (cuMemAllocManaged(&m, size_t(4) << 20, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS) {
        dmabuf("managed", m, size_t(4) << 20, 0);
        cuMemFree(m);
    }
    // A pool of fabric memory: refused when made, or only when its memory is?  Asked last: after
    // a refused export of it, the process may not be fit for anything else (fabric_pool_share).
    CUmemPoolProps fabric_pool{};
    fabric_pool.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    fabric_pool.location = v.prop.location;
    fabric_pool.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CUmemoryPool fp = nullptr;
    ASK("fabric_pool_create", cuMemPoolCreate(&fp, &fabric_pool));
    if (fp) {
        CUdeviceptr fd = 0;
        ASK("fabric_pool_alloc", cuMemAllocFromPoolAsync(&fd, size_t(2) << 20, fp, nullptr));
        // After a refused export the block is not freed nor the pool destroyed: the next call on
        // them crashes the process on the H200.  Both are left to the process's exit.
        if (fd && !fabric_pool_share(fp, fd))
            return;
        if (fd)
            cuMemFreeAsync(fd, nullptr);
        cuStreamSynchronize(nullptr);
        cuMemPoolDestroy(fp);
    }
}

// Group imported: what the driver lets a process do with a pool, a pool pointer and a VMM handle it
// imported, from its own export (`same.*`) and from another process's (`child.*`: the probe again,
// exec'd with the descriptors inherited; its answers come back in order).  Each pool attribute is
// read and set, the pool trimmed, its access read and set, the pool and the pointer exported again,
// the pointer imported twice, read and written; the VMM handle is exported again, mapped and read.
// The exporter writes the pattern first and, after the importer wrote its own, reads it back.
// `# imported.*` lines are for the record only (probe_compare.py does not compare them): the size
// the driver gives an imported pointer's range.
namespace imported_group {

constexpr size_t kPoolBytes = (size_t(1) << 20) + 123; // not a multiple of anything the driver rounds to
unsigned char pattern(size_t i, int round) { return static_cast<unsigned char>(i * 13 + 5 + 101 * round); }

const struct {
    const char *name;
    CUmemPool_attribute attr;
    bool is_int;
} k_attrs[] = {
    {"reuse_follow_event_dependencies", CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, true},
    {"reuse_allow_opportunistic", CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, true},
    {"reuse_allow_internal_dependencies", CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, true},
    {"release_threshold", CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, false},
    {"reserved_mem_current", CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, false},
    {"reserved_mem_high", CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, false},
    {"used_mem_current", CU_MEMPOOL_ATTR_USED_MEM_CURRENT, false},
    {"used_mem_high", CU_MEMPOOL_ATTR_USED_MEM_HIGH, false},
};

// The questions an importer answers, in order (`who` + "." + each); the parent's copy of the list
// puts a child's answers in this order and says which it did not give.
std::vector<std::string> question_names()
{
    std::vector<std::string> q = {"pool_import", "import_pointer", "import_pointer_new_address", "read",
                                  "read_matches", "range", "range_base_is_ptr", "range_covers_request"};
    for (const auto &a : k_attrs)
        q.push_back(std::string("get.") + a.name);
    for (const auto &a : k_attrs)
        q.push_back(std::string("set.") + a.name);
    for (const char *s : {"trim_0", "trim_max", "get_access_owner", "access_owner", "set_access_owner_rw",
                          "export_pool", "export_pointer", "import_pointer_again", "import_pointer_again_same_address",
                          "free_second_import", "first_import_survives_second_free",
                          "import_pointer_after_free", "write", "free", "pool_destroy", "mem_import", "mem_properties",
                          "mem_properties_device", "mem_export", "mem_map", "mem_read_matches", "mem_release"})
        q.push_back(s);
    return q;
}

// What the exporter hands an importer.
struct Shared {
    int pool_fd = -1;
    int mem_fd = -1; // -1: no VMM handle to import
    CUmemPoolPtrExportData data{};
    size_t bytes = 0;    // the pool block's size as asked
    size_t vmm_size = 0; // the VMM allocation's size
    CUdeviceptr exporter_block = 0; // in the exporting process only
};

// Asks every question of question_names() as `who` ("same" or "child"), in order.
void ask_importer(const char *who, const Shared &s)
{
    F(cuMemPoolImportFromShareableHandle);
    F(cuMemPoolImportPointer);
    F(cuMemPoolGetAttribute);
    F(cuMemPoolSetAttribute);
    F(cuMemPoolTrimTo);
    F(cuMemPoolSetAccess);
    F(cuMemPoolGetAccess);
    F(cuMemPoolExportToShareableHandle);
    F(cuMemPoolExportPointer);
    F(cuMemPoolDestroy);
    F(cuMemGetAddressRange);
    F(cuMemcpy);
    F(cuMemFreeAsync);
    F(cuStreamSynchronize);
    F(cuMemImportFromShareableHandle);
    F(cuMemExportToShareableHandle);
    F(cuMemGetAllocationPropertiesFromHandle);
    F(cuMemAddressReserve);
    F(cuMemAddressFree);
    F(cuMemMap);
    F(cuMemUnmap);
    F(cuMemSetAccess);
    F(cuMemRelease);
    const std::string w = who;
    auto q = [&](const char *name) { return w + "." + name; };
    auto ask_q = [&](const char *name, CUresult r) { say(q(name).c_str(), r); };
    auto val_q = [&](const char *name, unsigned long long v) { sayv(q(name), v); };
    auto not_asked_from = [&](const char *first, const char *why) {
        const std::vector<std::string> names = question_names();
        bool on = false;
        for (const std::string &n : names) {
            on = on || n == first;
            if (on)
                printf("%s.%s.%s = not asked (%s)\n", g_group, who, n.c_str(), why);
        }
    };
    CUmemoryPool pool = nullptr;
    CUresult r = cuMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void *>(static_cast<intptr_t>(s.pool_fd)),
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    ask_q("pool_import", r);
    if (r != CUDA_SUCCESS)
        return not_asked_from("import_pointer", "pool_import failed");
    CUmemPoolPtrExportData data = s.data;
    CUdeviceptr p = 0;
    r = cuMemPoolImportPointer(&p, pool, &data);
    ask_q("import_pointer", r);
    if (r != CUDA_SUCCESS)
        return not_asked_from("import_pointer_new_address", "import_pointer failed");
    val_q("import_pointer_new_address", s.exporter_block ? p != s.exporter_block : 1);
    std::vector<unsigned char> back(s.bytes, 0);
    r = cuMemcpy(dp(back.data()), p, back.size());
    ask_q("read", r);
    size_t same = 0;
    for (size_t i = 0; i < back.size(); ++i)
        same += back[i] == pattern(i, 0);
    val_q("read_matches", r == CUDA_SUCCESS && same == back.size());
    CUdeviceptr base = 0;
    size_t range = 0;
    r = cuMemGetAddressRange(&base, &range, p + 100);
    ask_q("range", r);
    val_q("range_base_is_ptr", r == CUDA_SUCCESS && base == p);
    val_q("range_covers_request", r == CUDA_SUCCESS && base == p && range >= s.bytes);
    printf("# %s.%s = %zu (the block was asked for %zu bytes; base %s the pointer)\n", g_group, q("range_size").c_str(),
           range, s.bytes, base == p ? "is" : "is not");
    for (const auto &a : k_attrs) {
        int iv = 0;
        cuuint64_t uv = 0;
        ask_q((std::string("get.") + a.name).c_str(),
              cuMemPoolGetAttribute(pool, a.attr, a.is_int ? static_cast<void *>(&iv) : static_cast<void *>(&uv)));
    }
    for (const auto &a : k_attrs) {
        int iv = 1;     // the reuse flags' default
        cuuint64_t uv = 0; // a threshold of 0, and the reset of a high-water mark
        ask_q((std::string("set.") + a.name).c_str(),
              cuMemPoolSetAttribute(pool, a.attr, a.is_int ? static_cast<void *>(&iv) : static_cast<void *>(&uv)));
    }
    ask_q("trim_0", cuMemPoolTrimTo(pool, 0));
    ask_q("trim_max", cuMemPoolTrimTo(pool, SIZE_MAX));
    CUmemLocation owner;
    owner.type = CU_MEM_LOCATION_TYPE_DEVICE;
    owner.id = 0;
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    ask_q("get_access_owner", cuMemPoolGetAccess(&flags, pool, &owner));
    val_q("access_owner", static_cast<unsigned long long>(flags));
    CUmemAccessDesc rw;
    rw.location = owner;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ask_q("set_access_owner_rw", cuMemPoolSetAccess(pool, &rw, 1));
    int again_fd = -1;
    r = cuMemPoolExportToShareableHandle(&again_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    ask_q("export_pool", r);
    if (r == CUDA_SUCCESS && again_fd >= 0)
        close(again_fd);
    CUmemPoolPtrExportData again;
    memset(&again, 0, sizeof again);
    ask_q("export_pointer", cuMemPoolExportPointer(&again, p));
    CUdeviceptr p2 = 0;
    data = s.data;
    r = cuMemPoolImportPointer(&p2, pool, &data);
    ask_q("import_pointer_again", r);
    val_q("import_pointer_again_same_address", r == CUDA_SUCCESS && p2 == p);
    if (r == CUDA_SUCCESS) {
        ask_q("free_second_import", cuMemFreeAsync(p2, nullptr));
        cuStreamSynchronize(nullptr);
        // Whether the first import still maps the block, asked of the driver's books: a copy
        // into an address the driver no longer maps is taken for host memory and crashes.
        CUdeviceptr b2 = 0;
        size_t s2 = 0;
        const CUresult still = cuMemGetAddressRange(&b2, &s2, p);
        val_q("first_import_survives_second_free", still == CUDA_SUCCESS);
        if (still != CUDA_SUCCESS) {
            data = s.data;
            r = cuMemPoolImportPointer(&p, pool, &data);
            ask_q("import_pointer_after_free", r);
            if (r != CUDA_SUCCESS)
                return not_asked_from("write", "the block could not be imported again");
        } else {
            printf("%s.%s = not asked (the first import survived)\n", g_group, q("import_pointer_after_free").c_str());
        }
    } else {
        printf("%s.%s = not asked (import_pointer_again failed)\n", g_group, q("free_second_import").c_str());
    }
    // The importer's own bytes, for the exporter to read back (exporter_read_matches).
    std::vector<unsigned char> mine(s.bytes);
    for (size_t i = 0; i < mine.size(); ++i)
        mine[i] = pattern(i, w == "same" ? 1 : 2);
    ask_q("write", cuMemcpy(p, dp(mine.data()), mine.size()));
    cuStreamSynchronize(nullptr);
    ask_q("free", cuMemFreeAsync(p, nullptr));
    cuStreamSynchronize(nullptr);
    ask_q("pool_destroy", cuMemPoolDestroy(pool));
    // The VMM handle.
    if (s.mem_fd < 0)
        return not_asked_from("mem_import", "no VMM handle was exported");
    CUmemGenericAllocationHandle h = 0;
    r = cuMemImportFromShareableHandle(&h, reinterpret_cast<void *>(static_cast<intptr_t>(s.mem_fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ask_q("mem_import", r);
    if (r != CUDA_SUCCESS)
        return not_asked_from("mem_properties", "mem_import failed");
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    r = cuMemGetAllocationPropertiesFromHandle(&prop, h);
    ask_q("mem_properties", r);
    val_q("mem_properties_device", r == CUDA_SUCCESS ? static_cast<unsigned long long>(prop.location.id) : 99);
    int mfd = -1;
    r = cuMemExportToShareableHandle(&mfd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    ask_q("mem_export", r);
    if (r == CUDA_SUCCESS && mfd >= 0)
        close(mfd);
    CUdeviceptr va = 0;
    r = cuMemAddressReserve(&va, s.vmm_size, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemMap(va, s.vmm_size, 0, h, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemSetAccess(va, s.vmm_size, &rw, 1);
    std::vector<unsigned char> vback(4096, 0);
    if (r == CUDA_SUCCESS)
        r = cuMemcpy(dp(vback.data()), va, vback.size());
    ask_q("mem_map", r);
    size_t vsame = 0;
    for (size_t i = 0; i < vback.size(); ++i)
        vsame += vback[i] == pattern(i, 3);
    val_q("mem_read_matches", r == CUDA_SUCCESS && vsame == vback.size());
    if (va) {
        cuMemUnmap(va, s.vmm_size);
        cuMemAddressFree(va, s.vmm_size);
    }
    ask_q("mem_release", cuMemRelease(h));
}

// The second process (argv: LIBCUDA imported:child POOL_FD MEM_FD DATA_HEX BYTES VMM_SIZE); main
// has made the primary context current.  The descriptors are the parent's, inherited.
int child(char **argv)
{
    Shared s;
    s.pool_fd = atoi(argv[3]);
    s.mem_fd = atoi(argv[4]);
    s.bytes = strtoull(argv[6], nullptr, 10);
    s.vmm_size = strtoull(argv[7], nullptr, 10);
    if (!from_hex(argv[5], s.data.reserved, sizeof s.data.reserved) || s.bytes == 0) {
        fprintf(stderr, "imported child: bad arguments\n");
        return 2;
    }
    alarm(60); // a call that hangs ends here: the parent records "killed by SIGALRM"
    ask_importer("child", s);
    return 0;
}

void run()
{
    F(cuDeviceGetAttribute);
    F(cuMemPoolCreate);
    F(cuMemPoolDestroy);
    F(cuMemAllocFromPoolAsync);
    F(cuMemFreeAsync);
    F(cuMemcpy);
    F(cuStreamSynchronize);
    F(cuMemPoolExportToShareableHandle);
    F(cuMemPoolExportPointer);
    F(cuMemGetAllocationGranularity);
    F(cuMemExportToShareableHandle);
    F(cuMemAddressFree);
    F(cuMemUnmap);
    F(cuMemRelease);
    int types = 0;
    cuDeviceGetAttribute(&types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0);
    printf("# %s.attr_pool_handle_types = %d\n", g_group, types);
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemoryPool pool = nullptr;
    ASK("create_shareable_pool", cuMemPoolCreate(&pool, &props));
    if (!pool)
        return;
    Shared s;
    s.bytes = kPoolBytes;
    ASK("alloc", cuMemAllocFromPoolAsync(&s.exporter_block, s.bytes, pool, nullptr));
    std::vector<unsigned char> mine(s.bytes), back(s.bytes);
    for (size_t i = 0; i < mine.size(); ++i)
        mine[i] = pattern(i, 0);
    cuMemcpy(s.exporter_block, dp(mine.data()), mine.size());
    cuStreamSynchronize(nullptr);
    ASK("export_pool", cuMemPoolExportToShareableHandle(&s.pool_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ASK("export_pointer", cuMemPoolExportPointer(&s.data, s.exporter_block));
    // A VMM allocation that can be shared, with a pattern in its first page.
    Vmm v;
    v.prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    cuMemGetAllocationGranularity(&s.vmm_size, &v.prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUmemGenericAllocationHandle h = 0;
    ASK("vmm_create", v.create(&h, s.vmm_size, &v.prop, 0));
    CUdeviceptr va = 0;
    if (h) {
        v.reserve(&va, s.vmm_size, 0, 0, 0);
        v.map(va, s.vmm_size, 0, h, 0);
        CUmemAccessDesc rw;
        rw.location = v.prop.location;
        rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        v.access(va, s.vmm_size, &rw, 1);
        std::vector<unsigned char> page(4096);
        for (size_t i = 0; i < page.size(); ++i)
            page[i] = pattern(i, 3);
        cuMemcpy(va, dp(page.data()), page.size());
        ASK("vmm_export", cuMemExportToShareableHandle(&s.mem_fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    }
    if (s.pool_fd < 0) {
        printf("%s.same = not asked (export_pool failed)\n", g_group);
        printf("%s.child = not asked (export_pool failed)\n", g_group);
    } else {
        ask_importer("same", s);
        cuMemcpy(dp(back.data()), s.exporter_block, back.size());
        size_t same = 0;
        for (size_t i = 0; i < back.size(); ++i)
            same += back[i] == pattern(i, 1);
        sayv("same.exporter_read_matches", same == back.size());
        cuMemcpy(s.exporter_block, dp(mine.data()), mine.size()); // the child reads the first pattern
        cuStreamSynchronize(nullptr);
        // The child inherits copies of the descriptors (not close-on-exec), numbered in its argv.
        const int pool_fd = fcntl(s.pool_fd, F_DUPFD, 3);
        const int mem_fd = s.mem_fd >= 0 ? fcntl(s.mem_fd, F_DUPFD, 3) : -1;
        std::vector<ChildQuestion> qs;
        for (const std::string &n : question_names())
            qs.push_back({"child." + n});
        run_child("imported:child",
                  {std::to_string(pool_fd), std::to_string(mem_fd), to_hex(s.data.reserved, sizeof s.data.reserved),
                   std::to_string(s.bytes), std::to_string(s.vmm_size)},
                  qs, "child_ended");
        if (pool_fd >= 0)
            close(pool_fd);
        if (mem_fd >= 0)
            close(mem_fd);
        cuMemcpy(dp(back.data()), s.exporter_block, back.size());
        same = 0;
        for (size_t i = 0; i < back.size(); ++i)
            same += back[i] == pattern(i, 2);
        sayv("child.exporter_read_matches", same == back.size());
        close(s.pool_fd);
    }
    if (s.mem_fd >= 0)
        close(s.mem_fd);
    if (va) {
        cuMemUnmap(va, s.vmm_size);
        cuMemAddressFree(va, s.vmm_size);
    }
    if (h)
        cuMemRelease(h);
    cuMemFreeAsync(s.exporter_block, nullptr);
    cuStreamSynchronize(nullptr);
    ASK("exporter_pool_destroy", cuMemPoolDestroy(pool));
}

} // namespace imported_group

namespace capture_group {

const char *status_name(int s)
{
    switch (s) {
    case CU_STREAM_CAPTURE_STATUS_NONE: return "NONE";
    case CU_STREAM_CAPTURE_STATUS_ACTIVE: return "ACTIVE";
    case CU_STREAM_CAPTURE_STATUS_INVALIDATED: return "INVALIDATED";
    default: return "?";
    }
}
void says(const std::string &q, const char *v) { printf("%s.%s = %s\n", g_group, q.c_str(), v); }
void ask(const std::string &q, CUresult r) { say(q.c_str(), r); }

struct Api {
    decltype(&::cuStreamBeginCapture) begin = get<decltype(&::cuStreamBeginCapture)>("cuStreamBeginCapture");
    decltype(&::cuStreamEndCapture) end = get<decltype(&::cuStreamEndCapture)>("cuStreamEndCapture");
    decltype(&::cuStreamIsCapturing) is_capturing = get<decltype(&::cuStreamIsCapturing)>("cuStreamIsCapturing");
    PFN_cuStreamGetCaptureInfo_v11030 info = get<PFN_cuStreamGetCaptureInfo_v11030>("cuStreamGetCaptureInfo");
    decltype(&::cuThreadExchangeStreamCaptureMode) exchange =
        get<decltype(&::cuThreadExchangeStreamCaptureMode)>("cuThreadExchangeStreamCaptureMode");
    decltype(&::cuGraphInstantiateWithFlags) instantiate =
        get<decltype(&::cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags");
    decltype(&::cuGraphLaunch) launch = get<decltype(&::cuGraphLaunch)>("cuGraphLaunch");
    decltype(&::cuGraphExecDestroy) exec_destroy = get<decltype(&::cuGraphExecDestroy)>("cuGraphExecDestroy");
    decltype(&::cuGraphDestroy) graph_destroy = get<decltype(&::cuGraphDestroy)>("cuGraphDestroy");
    decltype(&::cuGraphGetNodes) get_nodes = get<decltype(&::cuGraphGetNodes)>("cuGraphGetNodes");
    decltype(&::cuUserObjectCreate) uo_create = get<decltype(&::cuUserObjectCreate)>("cuUserObjectCreate");
    decltype(&::cuUserObjectRelease) uo_release = get<decltype(&::cuUserObjectRelease)>("cuUserObjectRelease");
    decltype(&::cuGraphRetainUserObject) graph_retain =
        get<decltype(&::cuGraphRetainUserObject)>("cuGraphRetainUserObject");
    decltype(&::cuCtxSetCurrent) ctx_set = get<decltype(&::cuCtxSetCurrent)>("cuCtxSetCurrent");
    decltype(&::cuStreamCreate) stream_create = get<decltype(&::cuStreamCreate)>("cuStreamCreate");
    decltype(&::cuStreamDestroy) stream_destroy = get<decltype(&::cuStreamDestroy)>("cuStreamDestroy");
    decltype(&::cuStreamSynchronize) stream_sync = get<decltype(&::cuStreamSynchronize)>("cuStreamSynchronize");
    decltype(&::cuStreamQuery) stream_query = get<decltype(&::cuStreamQuery)>("cuStreamQuery");
    decltype(&::cuStreamWaitEvent) wait = get<decltype(&::cuStreamWaitEvent)>("cuStreamWaitEvent");
    decltype(&::cuEventCreate) event_create = get<decltype(&::cuEventCreate)>("cuEventCreate");
    decltype(&::cuEventRecord) record = get<decltype(&::cuEventRecord)>("cuEventRecord");
    decltype(&::cuEventQuery) event_query = get<decltype(&::cuEventQuery)>("cuEventQuery");
    decltype(&::cuEventSynchronize) event_sync = get<decltype(&::cuEventSynchronize)>("cuEventSynchronize");
    decltype(&::cuMemAlloc) alloc = get<decltype(&::cuMemAlloc)>("cuMemAlloc");
    decltype(&::cuMemFree) free = get<decltype(&::cuMemFree)>("cuMemFree");
    decltype(&::cuMemcpy) copy = get<decltype(&::cuMemcpy)>("cuMemcpy");
    decltype(&::cuMemcpyAsync) copy_async = get<decltype(&::cuMemcpyAsync)>("cuMemcpyAsync");
    decltype(&::cuMemsetD8) fill = get<decltype(&::cuMemsetD8)>("cuMemsetD8");
    decltype(&::cuMemsetD8Async) fill_async = get<decltype(&::cuMemsetD8Async)>("cuMemsetD8Async");
    decltype(&::cuMemAllocAsync) alloc_async = get<decltype(&::cuMemAllocAsync)>("cuMemAllocAsync");
    decltype(&::cuMemAllocFromPoolAsync) alloc_pool_async =
        get<decltype(&::cuMemAllocFromPoolAsync)>("cuMemAllocFromPoolAsync");
    decltype(&::cuMemFreeAsync) free_async = get<decltype(&::cuMemFreeAsync)>("cuMemFreeAsync");
    decltype(&::cuMemHostAlloc) host_alloc = get<decltype(&::cuMemHostAlloc)>("cuMemHostAlloc");
    decltype(&::cuMemFreeHost) free_host = get<decltype(&::cuMemFreeHost)>("cuMemFreeHost");
    decltype(&::cuMemHostRegister) host_register = get<decltype(&::cuMemHostRegister)>("cuMemHostRegister");
    decltype(&::cuMemHostUnregister) host_unregister = get<decltype(&::cuMemHostUnregister)>("cuMemHostUnregister");
    decltype(&::cuMemAllocManaged) alloc_managed = get<decltype(&::cuMemAllocManaged)>("cuMemAllocManaged");
    decltype(&::cuStreamAttachMemAsync) attach = get<decltype(&::cuStreamAttachMemAsync)>("cuStreamAttachMemAsync");
    PFN_cuMemPrefetchAsync_v8000 prefetch = get<PFN_cuMemPrefetchAsync_v8000>("cuMemPrefetchAsync");
    decltype(&::cuCtxSynchronize) ctx_sync = get<decltype(&::cuCtxSynchronize)>("cuCtxSynchronize");
    decltype(&::cuDeviceGetDefaultMemPool) default_pool =
        get<decltype(&::cuDeviceGetDefaultMemPool)>("cuDeviceGetDefaultMemPool");
    decltype(&::cuMemPoolTrimTo) pool_trim = get<decltype(&::cuMemPoolTrimTo)>("cuMemPoolTrimTo");
    decltype(&::cuMemPoolSetAttribute) pool_set = get<decltype(&::cuMemPoolSetAttribute)>("cuMemPoolSetAttribute");
    decltype(&::cuMemPoolGetAttribute) pool_get = get<decltype(&::cuMemPoolGetAttribute)>("cuMemPoolGetAttribute");
    decltype(&::cuMemPoolCreate) pool_create = get<decltype(&::cuMemPoolCreate)>("cuMemPoolCreate");
    decltype(&::cuMemPoolDestroy) pool_destroy = get<decltype(&::cuMemPoolDestroy)>("cuMemPoolDestroy");
    decltype(&::cuMemPoolSetAccess) pool_access = get<decltype(&::cuMemPoolSetAccess)>("cuMemPoolSetAccess");
    decltype(&::cuMemCreate) vmm_create = get<decltype(&::cuMemCreate)>("cuMemCreate");
    decltype(&::cuMemRelease) vmm_release = get<decltype(&::cuMemRelease)>("cuMemRelease");
    decltype(&::cuMemAddressReserve) vmm_reserve = get<decltype(&::cuMemAddressReserve)>("cuMemAddressReserve");
    decltype(&::cuMemAddressFree) vmm_free = get<decltype(&::cuMemAddressFree)>("cuMemAddressFree");
    decltype(&::cuMemMap) vmm_map = get<decltype(&::cuMemMap)>("cuMemMap");
    decltype(&::cuMemUnmap) vmm_unmap = get<decltype(&::cuMemUnmap)>("cuMemUnmap");
    decltype(&::cuMemSetAccess) vmm_access = get<decltype(&::cuMemSetAccess)>("cuMemSetAccess");
    PFN_cuMemcpyBatchAsync_v13000 batch_copy = get<PFN_cuMemcpyBatchAsync_v13000>("cuMemcpyBatchAsync", 13000);
    decltype(&::cuMemPrefetchBatchAsync) batch_prefetch =
        get<decltype(&::cuMemPrefetchBatchAsync)>("cuMemPrefetchBatchAsync", 13000);
    decltype(&::cuMemDiscardBatchAsync) batch_discard =
        get<decltype(&::cuMemDiscardBatchAsync)>("cuMemDiscardBatchAsync", 13000);
};
Api *a;

int status_of(CUstream s) // -1: the driver refused to say
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (a->is_capturing(s, &st) != CUDA_SUCCESS)
        return -1;
    return (int)st;
}
void say_status(const std::string &q, CUstream s)
{
    const int st = status_of(s);
    says(q + ".status", st < 0 ? "(refused)" : status_name(st));
}

// Ends whatever capture `s` has and destroys the graph, so that the next question starts clean.
void finish(CUstream s)
{
    CUgraph g = nullptr;
    if (status_of(s) != CU_STREAM_CAPTURE_STATUS_NONE && a->end(s, &g) == CUDA_SUCCESS && g)
        a->graph_destroy(g);
}

// `f` on a thread of its own, the primary context current there.
template <class F> CUresult on_thread(F f)
{
    CUresult r = CUDA_ERROR_UNKNOWN;
    std::thread t([&] {
        a->ctx_set(g_ctx);
        r = f();
    });
    t.join();
    return r;
}

// User-object destructors: poll for them (a real driver runs them when it will).
std::atomic<int> g_ran{0};
std::atomic<bool> g_ran_on_caller{false};
std::thread::id g_caller;
void on_destroy(void *)
{
    g_ran_on_caller = std::this_thread::get_id() == g_caller;
    g_ran.fetch_add(1);
}
void (*g_flush)(void); // the fake's, when it is one
const char *ran_within(int want, int ms)
{
    if (g_flush)
        g_flush();
    for (int i = 0; i < ms && g_ran.load() < want; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return g_ran.load() >= want ? "ran" : "not-run";
}

// A potentially unsafe call, with what it needs made before the capture and undone after.
struct Unsafe {
    const char *name;
    std::function<void()> setup;
    std::function<CUresult()> call;
    std::function<void(CUresult)> cleanup;
};

void run()
{
    Api api;
    a = &api;
    g_caller = std::this_thread::get_id();
    g_flush = reinterpret_cast<void (*)(void)>(dlsym(g_lib, "fakecuda_flush_callbacks"));
    const size_t k = 65536;
    CUstream s = nullptr, s2 = nullptr, b = nullptr;
    a->stream_create(&s, CU_STREAM_NON_BLOCKING);
    a->stream_create(&s2, CU_STREAM_NON_BLOCKING);
    a->stream_create(&b, 0);
    CUdeviceptr d = 0, d2 = 0;
    a->alloc(&d, k);
    a->alloc(&d2, k);
    a->fill(d, 0, k);
    void *ph = nullptr;
    a->host_alloc(&ph, k, 0);
    std::vector<unsigned char> pageable(k, 0x21), back(k);
    CUevent ev = nullptr, ev2 = nullptr, ev_out = nullptr, never = nullptr;
    a->event_create(&ev, CU_EVENT_DISABLE_TIMING);
    a->event_create(&ev2, CU_EVENT_DISABLE_TIMING);
    a->event_create(&ev_out, CU_EVENT_DISABLE_TIMING);
    a->event_create(&never, CU_EVENT_DISABLE_TIMING);
    a->record(ev_out, s2); // recorded before (and outside) every capture
    a->stream_sync(s2);
    CUgraph g = nullptr;
    CUgraphExec e = nullptr;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    auto nodes = [](CUgraph graph) {
        size_t n = 0;
        a->get_nodes(graph, nullptr, &n);
        return (unsigned long long)n;
    };

    // --- Begin, end, status, ids, the thread's mode.
    ask("begin_legacy", a->begin(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ask("begin_null", a->begin(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ask("end_not_capturing", a->end(s, &g));
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("begin_twice", a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    say_status("begin_twice", s);
    cuuint64_t id1 = 0, id2 = 0;
    CUgraph cg = nullptr;
    const CUgraphNode *deps = nullptr;
    size_t ndeps = 99;
    ask("info", a->info(s, &cs, &id1, &cg, &deps, &ndeps));
    says("info_status", status_name((int)cs));
    sayv("info_graph_nonnull", cg != nullptr);
    sayv("info_dependencies", ndeps);
    ask("end", a->end(s, &g));
    sayv("end_graph_is_info_graph", g == cg);
    sayv("end_empty_nodes", nodes(g));
    a->graph_destroy(g);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->info(s, &cs, &id2, nullptr, nullptr, nullptr);
    says("id_two_captures", id1 != id2 ? "differs" : "same");
    finish(s);
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    a->exchange(&mode);
    sayv("exchange_default_mode", (unsigned long long)mode);
    a->exchange(&mode);
    a->begin(b, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("is_capturing_legacy_blocking", a->is_capturing(CU_STREAM_LEGACY, &cs));
    ask("info_legacy_blocking", a->info(CU_STREAM_LEGACY, &cs, nullptr, nullptr, nullptr, nullptr));
    say_status("is_capturing_legacy_blocking", b);
    finish(b);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("is_capturing_legacy_nonblocking", a->is_capturing(CU_STREAM_LEGACY, &cs));
    says("is_capturing_legacy_nonblocking_value", status_name((int)cs));
    finish(s);

    // --- Captured work.
    memset(ph, 0x5a, 4096);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("memcpy_async_d2d", a->copy_async(d2, d, 4096, s));
    say_status("memcpy_async_d2d", s);
    ask("memset_async", a->fill_async(d, 1, 4096, s));
    ask("memcpy_async_h2d_pinned", a->copy_async(d, dp(ph), 4096, s));
    CUdeviceptr p = 0;
    ask("alloc_async", a->alloc_async(&p, k, s));
    sayv("alloc_async_address_nonzero", p != 0);
    ask("memset_async_graph_alloc", a->fill_async(p, 2, k, s));
    ask("free_async_graph_alloc", a->free_async(p, s));
    say_status("free_async_graph_alloc", s);
    CUmemoryPool pool = nullptr;
    a->default_pool(&pool, 0);
    CUdeviceptr q = 0;
    ask("alloc_from_pool_async", a->alloc_pool_async(&q, 4096, pool, s));
    ask("free_async_pool_graph_alloc", a->free_async(q, s));
    ask("event_record", a->record(ev, s));
    say_status("event_record", s);
    ask("end_work", a->end(s, &g));
    sayv("nodes_copy_fill_copy_alloc_fill_free_alloc_free", nodes(g));
    ask("instantiate", a->instantiate(&e, g, 0));
    ask("launch", a->launch(e, s));
    ask("launch_again", a->launch(e, s));
    a->stream_sync(s);
    a->copy(dp(back.data()), d2, 4096);
    sayv("launch_copied", back[0] == 0x5a); // the second launch copied what the first left in d
    ask("exec_destroy", a->exec_destroy(e));
    ask("graph_destroy", a->graph_destroy(g));
    // Instantiating from a thread with no current context (gpumem leaves none where it found none).
    {
        F(cuCtxGetCurrent);
        F(cuCtxSetCurrent);
        a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        a->fill_async(d, 3, 4096, s);
        CUgraph ng = nullptr;
        a->end(s, &ng);
        CUcontext mine = nullptr;
        cuCtxGetCurrent(&mine);
        cuCtxSetCurrent(nullptr);
        CUgraphExec ne = nullptr;
        ask("instantiate_no_context", a->instantiate(&ne, ng, 0));
        cuCtxSetCurrent(mine);
        if (ne)
            a->exec_destroy(ne);
        if (ng)
            a->graph_destroy(ng);
    }
    // Pageable host memory: captured (copied at each launch, from what it holds then)?
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("memcpy_async_pageable", a->copy_async(d, dp(pageable.data()), 4096, s));
    say_status("memcpy_async_pageable", s);
    CUgraph pg = nullptr;
    if (a->end(s, &pg) == CUDA_SUCCESS && pg) {
        pageable[0] = 0x22;
        CUgraphExec pe = nullptr;
        a->instantiate(&pe, pg, 0);
        a->launch(pe, s);
        a->stream_sync(s);
        a->copy(dp(back.data()), d, 4096);
        sayv("memcpy_async_pageable_launch_copies_then", back[0] == 0x22 && back[1] == 0x21);
        a->exec_destroy(pe);
        a->graph_destroy(pg);
    } else {
        says("memcpy_async_pageable_launch_copies_then", "n/a");
    }
    // Forks and joins through events.
    for (int joined = 0; joined < 2; ++joined) {
        const char *w = joined ? "fork_joined" : "fork_unjoined";
        a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        a->fill_async(d, 3, 4096, s);
        a->record(ev, s);
        ask(std::string(w) + ".wait_captured_event", a->wait(s2, ev, 0));
        say_status(std::string(w) + ".wait_captured_event", s2);
        a->fill_async(d2, 4, 4096, s2);
        ask(std::string(w) + ".end_on_forked_stream", a->end(s2, &g));
        if (joined) {
            a->record(ev2, s2);
            a->wait(s, ev2, 0);
        }
        ask(std::string(w) + ".end", a->end(s, &g));
        say_status(std::string(w) + ".forked_stream_after_end", s2);
        if (joined && g) {
            sayv("fork_joined.nodes", nodes(g));
            a->graph_destroy(g);
        }
        finish(s2);
        finish(s);
    }
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("wait_uncaptured_event", a->wait(s, ev_out, 0));
    say_status("wait_uncaptured_event", s);
    ask("memset_async_after_invalidation", a->fill_async(d, 1, 16, s));
    ask("end_invalidated", a->end(s, &g));
    sayv("end_invalidated_graph_null", g == nullptr);
    finish(s);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("wait_uncaptured_event_external", a->wait(s, ev_out, CU_EVENT_WAIT_EXTERNAL));
    say_status("wait_uncaptured_event_external", s);
    if (a->end(s, &g) == CUDA_SUCCESS && g) {
        sayv("wait_uncaptured_event_external_nodes", nodes(g));
        a->graph_destroy(g);
    } else {
        says("wait_uncaptured_event_external_nodes", "n/a");
    }
    ask("wait_external_outside_capture", a->wait(s, ev_out, CU_EVENT_WAIT_EXTERNAL));
    a->stream_sync(s);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("wait_unrecorded_event", a->wait(s, never, 0));
    say_status("wait_unrecorded_event", s);
    finish(s);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->begin(s2, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->record(ev2, s2);
    ask("wait_other_capture_event", a->wait(s, ev2, 0));
    say_status("wait_other_capture_event", s);
    finish(s);
    finish(s2);
    a->record(ev2, s2);

    // Work put on the capturing stream by another thread is captured too, whatever the mode.
    for (CUstreamCaptureMode md : {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                   CU_STREAM_CAPTURE_MODE_RELAXED}) {
        const std::string w = std::string("other_thread_work.") +
                              (md == CU_STREAM_CAPTURE_MODE_GLOBAL         ? "global"
                               : md == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread_local"
                                                                           : "relaxed");
        a->begin(s, md);
        ask(w + ".memset_async", on_thread([&] { return a->fill_async(d, 6, 16, s); }));
        CUdeviceptr op = 0;
        ask(w + ".alloc_async", on_thread([&] { return a->alloc_async(&op, 4096, s); }));
        ask(w + ".free_async", on_thread([&] { return op ? a->free_async(op, s) : CUDA_ERROR_UNKNOWN; }));
        ask(w + ".event_record", on_thread([&] { return a->record(ev, s); }));
        say_status(w, s);
        g = nullptr;
        ask(w + ".end", a->end(s, &g));
        if (g) {
            sayv(w + ".nodes", nodes(g));
            a->graph_destroy(g);
        } else {
            says(w + ".nodes", "n/a");
        }
        finish(s);
    }
    a->record(ev, s);

    // --- Refused on a capturing stream.
    auto refused = [&](const char *q, CUstreamCaptureMode m, const std::function<CUresult()> &f) {
        a->begin(s, m);
        ask(q, f());
        say_status(q, s);
        finish(s);
    };
    refused("stream_sync_capturing", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] { return a->stream_sync(s); });
    refused("stream_sync_capturing_relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, [&] { return a->stream_sync(s); });
    refused("stream_query_capturing", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] { return a->stream_query(s); });
    refused("stream_query_capturing_relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, [&] { return a->stream_query(s); });
    refused("event_query_captured", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
        a->record(ev, s);
        return a->event_query(ev);
    });
    refused("event_sync_captured", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
        a->record(ev, s);
        return a->event_sync(ev);
    });
    refused("event_query_captured_thread_relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, [&] {
        a->record(ev, s);
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        a->exchange(&m);
        CUresult r = a->event_query(ev);
        a->exchange(&m);
        return r;
    });
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->record(ev, s);
    finish(s);
    ask("event_query_captured_after_end", a->event_query(ev));
    a->record(ev, s);
    a->event_sync(ev);
    CUdeviceptr m = 0;
    a->alloc_managed(&m, k, CU_MEM_ATTACH_GLOBAL);
    refused("prefetch_async", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] { return a->prefetch(m, k, 0, s); });
    refused("attach_mem_async", CU_STREAM_CAPTURE_MODE_GLOBAL,
            [&] { return a->attach(s, m, 0, CU_MEM_ATTACH_SINGLE); });
    a->stream_sync(s);
    if (a->batch_copy) {
        refused("batch_copy", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
            CUdeviceptr dsts[1] = {d2}, srcs[1] = {d};
            size_t sizes[1] = {4096}, idx[1] = {0};
            CUmemcpyAttributes attr;
            memset(&attr, 0, sizeof attr);
            attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
            return a->batch_copy(dsts, srcs, sizes, 1, &attr, idx, 1, s);
        });
    } else {
        says("batch_copy", "n/a");
        says("batch_copy.status", "n/a");
    }
    if (a->batch_prefetch && a->batch_discard) {
        refused("batch_prefetch", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
            CUdeviceptr ptrs[1] = {m};
            size_t sizes[1] = {k}, idx[1] = {0};
            CUmemLocation loc;
            loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
            loc.id = 0;
            return a->batch_prefetch(ptrs, sizes, 1, &loc, idx, 1, 0, s);
        });
        refused("batch_discard", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
            CUdeviceptr ptrs[1] = {m};
            size_t sizes[1] = {k};
            return a->batch_discard(ptrs, sizes, 1, 0, s);
        });
    } else {
        for (const char *w : {"batch_prefetch", "batch_prefetch.status", "batch_discard", "batch_discard.status"})
            says(w, "n/a");
    }
    a->stream_sync(s);
    a->free(m);
    // A graph launched into a capture (a child graph node on a driver that makes one).
    a->begin(s2, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->fill_async(d2, 5, 16, s2);
    CUgraph child = nullptr;
    a->end(s2, &child);
    CUgraphExec child_exec = nullptr;
    a->instantiate(&child_exec, child, 0);
    refused("graph_launch_into_capture", CU_STREAM_CAPTURE_MODE_GLOBAL, [&] { return a->launch(child_exec, s); });
    a->instantiate(&e, child, 0); // (no memory nodes: a second executable graph is allowed)
    ask("instantiate_second_without_memory_nodes", e ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    if (e)
        a->exec_destroy(e);
    a->exec_destroy(child_exec);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->info(s, &cs, nullptr, &cg, nullptr, nullptr);
    CUgraphExec ce = nullptr;
    ask("instantiate_graph_being_captured", a->instantiate(&ce, cg, 0));
    if (ce)
        a->exec_destroy(ce);
    finish(s);
    a->graph_destroy(child);

    // --- The legacy stream while a blocking stream captures (and while a non-blocking one does).
    CUdeviceptr before = 0; // a block allocated before the capture (for free_async)
    struct Legacy {
        const char *name;
        std::function<CUresult()> call;
    };
    CUdeviceptr la = 0;
    const Legacy legacy[] = {
        {"memset_async", [&] { return a->fill_async(d, 1, 16, nullptr); }},
        {"memcpy_async", [&] { return a->copy_async(d2, d, 16, nullptr); }},
        {"memset_sync", [&] { return a->fill(d, 1, 16); }},
        {"memcpy_sync", [&] { return a->copy(dp(back.data()), d, 16); }},
        {"event_record", [&] { return a->record(ev2, nullptr); }},
        {"stream_wait_event", [&] { return a->wait(nullptr, ev_out, 0); }},
        {"stream_sync", [&] { return a->stream_sync(nullptr); }},
        {"stream_query", [&] { return a->stream_query(nullptr); }},
        {"alloc_async", [&] { return a->alloc_async(&la, 4096, nullptr); }},
        {"free_async", [&] {
             CUresult r = a->free_async(before, nullptr);
             if (r == CUDA_SUCCESS)
                 before = 0;
             return r;
         }},
        {"other_thread_memset_async", [&] { return on_thread([&] { return a->fill_async(d, 1, 16, nullptr); }); }},
    };
    for (const char *kind : {"legacy_blocking", "legacy_nonblocking"}) {
        CUstream cap = strcmp(kind, "legacy_blocking") == 0 ? b : s;
        for (const Legacy &l : legacy) {
            if (before == 0) {
                a->alloc_async(&before, 4096, nullptr);
                a->stream_sync(nullptr);
            }
            a->begin(cap, CU_STREAM_CAPTURE_MODE_RELAXED);
            const std::string q = std::string(kind) + "." + l.name;
            ask(q, l.call());
            say_status(q, cap);
            finish(cap);
            a->stream_sync(nullptr);
            if (la) {
                a->free_async(la, nullptr);
                la = 0;
            }
        }
    }
    if (before == 0)
        a->alloc_async(&before, 4096, nullptr);
    a->stream_sync(nullptr);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUresult fr = a->free_async(before, nullptr);
    if (fr == CUDA_SUCCESS)
        before = 0;
    ask("legacy_nonblocking_global.free_async", fr);
    say_status("legacy_nonblocking_global.free_async", s);
    finish(s);
    a->stream_sync(nullptr);
    // The same during a GLOBAL capture, this thread's mode exchanged to RELAXED first (as gpumem's
    // own pool calls run): the free, and an allocation on the legacy stream.
    if (before == 0)
        a->alloc_async(&before, 4096, nullptr);
    a->stream_sync(nullptr);
    auto relaxed_call = [&](const std::function<CUresult()> &f) {
        CUstreamCaptureMode rm = CU_STREAM_CAPTURE_MODE_RELAXED;
        a->exchange(&rm);
        CUresult r = f();
        a->exchange(&rm);
        return r;
    };
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    fr = relaxed_call([&] { return a->free_async(before, nullptr); });
    if (fr == CUDA_SUCCESS)
        before = 0;
    ask("legacy_nonblocking_global_relaxed_thread.free_async", fr);
    say_status("legacy_nonblocking_global_relaxed_thread.free_async", s);
    finish(s);
    a->stream_sync(nullptr);
    CUdeviceptr ra = 0;
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("legacy_nonblocking_global_relaxed_thread.alloc_async",
        relaxed_call([&] { return a->alloc_async(&ra, 4096, nullptr); }));
    say_status("legacy_nonblocking_global_relaxed_thread.alloc_async", s);
    finish(s);
    if (ra)
        a->free_async(ra, nullptr);
    a->stream_sync(nullptr);
    // Another thread asks about a GLOBAL capture (GetCaptureInfo, 11.3's form): it may.
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUstreamCaptureStatus ocs = CU_STREAM_CAPTURE_STATUS_NONE;
    ask("info_other_thread_global", on_thread([&] { return a->info(s, &ocs, nullptr, nullptr, nullptr, nullptr); }));
    says("info_other_thread_global.value", status_name((int)ocs));
    say_status("info_other_thread_global", s);
    finish(s);

    // --- Potentially unsafe calls: each from the capturing thread and from another one, by the
    // capture's mode, and with the calling thread's mode exchanged to RELAXED.
    CUmemoryPool defpool = nullptr;
    a->default_pool(&defpool, 0);
    cuuint64_t threshold = 0;
    a->pool_get(defpool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemAllocationProp vprop;
    memset(&vprop, 0, sizeof vprop);
    vprop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    vprop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    const size_t gran = 2 << 20;
    CUmemAccessDesc rw;
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = 0;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    struct {
        CUdeviceptr x = 0, va = 0;
        void *h = nullptr, *buf = nullptr;
        CUmemoryPool pool = nullptr;
        CUmemGenericAllocationHandle vh = 0;
        bool mapped = false;
    } u;
    auto undo_vmm = [&] {
        if (u.mapped)
            a->vmm_unmap(u.va, gran);
        if (u.va)
            a->vmm_free(u.va, gran);
        if (u.vh)
            a->vmm_release(u.vh);
        u.va = 0;
        u.vh = 0;
        u.mapped = false;
    };
    const Unsafe unsafe[] = {
        {"mem_alloc", [] {}, [&] { return a->alloc(&u.x, 64); },
         [&](CUresult r) { if (r == CUDA_SUCCESS) a->free(u.x); }},
        {"mem_free", [&] { a->alloc(&u.x, 64); }, [&] { return a->free(u.x); },
         [&](CUresult r) { if (r != CUDA_SUCCESS) a->free(u.x); }},
        {"host_alloc", [] {}, [&] { return a->host_alloc(&u.h, 64, 0); },
         [&](CUresult r) { if (r == CUDA_SUCCESS) a->free_host(u.h); }},
        {"free_host", [&] { a->host_alloc(&u.h, 64, 0); }, [&] { return a->free_host(u.h); },
         [&](CUresult r) { if (r != CUDA_SUCCESS) a->free_host(u.h); }},
        {"alloc_managed", [] {}, [&] { return a->alloc_managed(&u.x, 4096, CU_MEM_ATTACH_GLOBAL); },
         [&](CUresult r) { if (r == CUDA_SUCCESS) a->free(u.x); }},
        {"host_register", [&] { u.buf = aligned_alloc(4096, 4096); }, [&] { return a->host_register(u.buf, 4096, 0); },
         [&](CUresult r) {
             if (r == CUDA_SUCCESS)
                 a->host_unregister(u.buf);
             ::free(u.buf);
         }},
        {"host_unregister",
         [&] {
             u.buf = aligned_alloc(4096, 4096);
             a->host_register(u.buf, 4096, 0);
         },
         [&] { return a->host_unregister(u.buf); },
         [&](CUresult r) {
             if (r != CUDA_SUCCESS)
                 a->host_unregister(u.buf);
             ::free(u.buf);
         }},
        {"ctx_sync", [] {}, [&] { return a->ctx_sync(); }, [](CUresult) {}},
        {"event_query_uncaptured", [] {}, [&] { return a->event_query(ev_out); }, [](CUresult) {}},
        {"event_sync_uncaptured", [] {}, [&] { return a->event_sync(ev_out); }, [](CUresult) {}},
        {"stream_sync_other", [] {}, [&] { return a->stream_sync(s2); }, [](CUresult) {}},
        {"stream_query_other", [] {}, [&] { return a->stream_query(s2); }, [](CUresult) {}},
        {"memcpy_sync", [] {}, [&] { return a->copy(dp(back.data()), d, 64); }, [](CUresult) {}},
        {"memset_sync", [] {}, [&] { return a->fill(d, 0, 64); }, [](CUresult) {}},
        {"pool_trim", [] {}, [&] { return a->pool_trim(defpool, 0); }, [](CUresult) {}},
        {"pool_set_attribute", [] {}, [&] { return a->pool_set(defpool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold); },
         [](CUresult) {}},
        {"pool_get_attribute", [] {}, [&] {
             cuuint64_t v = 0;
             return a->pool_get(defpool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
         },
         [](CUresult) {}},
        {"pool_set_access", [] {}, [&] { return a->pool_access(defpool, &rw, 1); }, [](CUresult) {}},
        {"pool_create", [] {}, [&] { return a->pool_create(&u.pool, &props); },
         [&](CUresult r) { if (r == CUDA_SUCCESS) a->pool_destroy(u.pool); }},
        {"pool_destroy", [&] { a->pool_create(&u.pool, &props); }, [&] { return a->pool_destroy(u.pool); },
         [&](CUresult r) { if (r != CUDA_SUCCESS) a->pool_destroy(u.pool); }},
        {"vmm_create", [] {}, [&] { return a->vmm_create(&u.vh, gran, &vprop, 0); }, [&](CUresult) { undo_vmm(); }},
        {"vmm_release", [&] { a->vmm_create(&u.vh, gran, &vprop, 0); },
         [&] {
             CUresult r = a->vmm_release(u.vh);
             if (r == CUDA_SUCCESS)
                 u.vh = 0;
             return r;
         },
         [&](CUresult) { undo_vmm(); }},
        {"vmm_map",
         [&] {
             a->vmm_create(&u.vh, gran, &vprop, 0);
             a->vmm_reserve(&u.va, gran, 0, 0, 0);
         },
         [&] {
             CUresult r = a->vmm_map(u.va, gran, 0, u.vh, 0);
             u.mapped = r == CUDA_SUCCESS;
             return r;
         },
         [&](CUresult) { undo_vmm(); }},
        {"vmm_unmap",
         [&] {
             a->vmm_create(&u.vh, gran, &vprop, 0);
             a->vmm_reserve(&u.va, gran, 0, 0, 0);
             u.mapped = a->vmm_map(u.va, gran, 0, u.vh, 0) == CUDA_SUCCESS;
         },
         [&] {
             CUresult r = a->vmm_unmap(u.va, gran);
             if (r == CUDA_SUCCESS)
                 u.mapped = false;
             return r;
         },
         [&](CUresult) { undo_vmm(); }},
        {"vmm_set_access",
         [&] {
             a->vmm_create(&u.vh, gran, &vprop, 0);
             a->vmm_reserve(&u.va, gran, 0, 0, 0);
             u.mapped = a->vmm_map(u.va, gran, 0, u.vh, 0) == CUDA_SUCCESS;
         },
         [&] { return a->vmm_access(u.va, gran, &rw, 1); }, [&](CUresult) { undo_vmm(); }},
    };
    struct Scenario {
        const char *name;
        CUstreamCaptureMode mode; // the capture's
        bool other_thread;        // the call from another thread (its mode GLOBAL)
        bool exchange_relaxed;    // the calling (capturing) thread's mode exchanged to RELAXED
    };
    const Scenario scenarios[] = {
        {"own.global", CU_STREAM_CAPTURE_MODE_GLOBAL, false, false},
        {"own.thread_local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, false, false},
        {"own.relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, false, false},
        {"own_mode_relaxed.global", CU_STREAM_CAPTURE_MODE_GLOBAL, false, true},
        {"other.global", CU_STREAM_CAPTURE_MODE_GLOBAL, true, false},
        {"other.thread_local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true, false},
        {"other.relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, true, false},
    };
    for (const Scenario &sc : scenarios) {
        for (const Unsafe &c : unsafe) {
            c.setup();
            a->begin(s, sc.mode);
            CUresult r;
            if (sc.other_thread) {
                r = on_thread(c.call);
            } else if (sc.exchange_relaxed) {
                CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
                a->exchange(&m);
                r = c.call();
                a->exchange(&m);
            } else {
                r = c.call();
            }
            const std::string q = std::string(sc.name) + "." + c.name;
            ask(q, r);
            say_status(q, s);
            finish(s);
            c.cleanup(r);
        }
    }
    // cuMemAlloc from another thread whose own mode is THREAD_LOCAL, during a GLOBAL capture.
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("other_mode_thread_local.global.mem_alloc", on_thread([&] {
            CUstreamCaptureMode mm = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            a->exchange(&mm);
            CUdeviceptr y = 0;
            CUresult r = a->alloc(&y, 64);
            if (r == CUDA_SUCCESS)
                a->free(y);
            return r;
        }));
    say_status("other_mode_thread_local.global.mem_alloc", s);
    finish(s);

    // --- The end: from another thread, by mode.
    for (CUstreamCaptureMode md : {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                   CU_STREAM_CAPTURE_MODE_RELAXED}) {
        const std::string w = md == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global" : md == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread_local" : "relaxed";
        a->begin(s, md);
        a->fill_async(d, 1, 16, s);
        CUgraph og = nullptr;
        ask("end_other_thread." + w, on_thread([&] { return a->end(s, &og); }));
        if (og)
            a->graph_destroy(og);
        say_status("end_other_thread." + w, s);
        ask("end_other_thread." + w + ".then_own", status_of(s) == CU_STREAM_CAPTURE_STATUS_NONE ? CUDA_ERROR_ILLEGAL_STATE : a->end(s, &g));
        if (status_of(s) == CU_STREAM_CAPTURE_STATUS_NONE && g) {
            a->graph_destroy(g);
            g = nullptr;
        }
        finish(s);
    }

    // --- Graph allocations across launches.
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    p = 0;
    a->alloc_async(&p, k, s);
    a->fill_async(p, 7, k, s);
    a->end(s, &g);
    ask("alloc_graph.instantiate", a->instantiate(&e, g, 0));
    CUgraphExec e2 = nullptr;
    ask("alloc_graph.instantiate_second", a->instantiate(&e2, g, 0));
    if (e2)
        a->exec_destroy(e2);
    ask("alloc_graph.launch", a->launch(e, s));
    a->stream_sync(s);
    ask("alloc_graph.copy_after_launch", a->copy(dp(back.data()), p, 16));
    sayv("alloc_graph.contents", back[0] == 7);
    ask("alloc_graph.launch_unfreed", a->launch(e, s));
    ask("alloc_graph.free_async", a->free_async(p, s));
    ask("alloc_graph.launch_after_free", a->launch(e, s));
    a->stream_sync(s);
    ask("alloc_graph.mem_free", a->free(p));
    a->exec_destroy(e);
    ask("alloc_graph.instantiate_auto_free", a->instantiate(&e, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    ask("alloc_graph.auto_free.launch", a->launch(e, s));
    ask("alloc_graph.auto_free.launch_again", a->launch(e, s));
    a->stream_sync(s);
    a->graph_destroy(g);
    a->exec_destroy(e);
    ask("alloc_graph.copy_after_graph_and_exec_destroyed", a->copy(dp(back.data()), p, 16));
    a->free_async(p, s);
    a->stream_sync(s);
    // A free, during capture, of a block allocated before it.
    CUdeviceptr pre = 0;
    a->alloc_async(&pre, 4096, s);
    a->stream_sync(s);
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ask("free_preexisting", a->free_async(pre, s));
    say_status("free_preexisting", s);
    g = nullptr;
    ask("free_preexisting.end", a->end(s, &g));
    if (g) {
        ask("free_preexisting.instantiate", a->instantiate(&e, g, 0));
        ask("free_preexisting.launch", e ? a->launch(e, s) : CUDA_ERROR_UNKNOWN);
        a->stream_sync(s);
        if (e)
            a->exec_destroy(e);
        a->graph_destroy(g);
    } else {
        says("free_preexisting.instantiate", "n/a");
        says("free_preexisting.launch", "n/a");
        a->free_async(pre, s);
    }
    a->stream_sync(s);

    // --- User objects.
    CUuserObject uo = nullptr;
    ask("user_object.create_flags_0", a->uo_create(&uo, nullptr, on_destroy, 1, 0));
    ask("user_object.create", a->uo_create(&uo, nullptr, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    a->uo_release(uo, 1);
    says("user_object.release_last", ran_within(1, 2000));
    says("user_object.destructor_thread", g_ran_on_caller ? "caller" : "other");
    int want = g_ran.load();
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->fill_async(d, 1, 16, s);
    a->end(s, &g);
    a->uo_create(&uo, nullptr, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    ask("user_object.graph_retain_move", a->graph_retain(g, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    a->graph_destroy(g);
    says("user_object.graph_destroy_at_return", g_ran.load() > want ? "ran" : "not-run");
    says("user_object.graph_destroy", ran_within(++want, 2000));
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->fill_async(d, 1, 16, s);
    a->end(s, &g);
    a->uo_create(&uo, nullptr, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    a->graph_retain(g, uo, 1, CU_GRAPH_USER_OBJECT_MOVE);
    a->instantiate(&e, g, 0);
    a->graph_destroy(g);
    says("user_object.exec_holds_after_graph_destroy", ran_within(want + 1, 200));
    a->launch(e, s);
    a->stream_sync(s);
    a->exec_destroy(e);
    says("user_object.exec_destroy", ran_within(++want, 2000));
    a->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->info(s, &cs, nullptr, &cg, nullptr, nullptr);
    a->uo_create(&uo, nullptr, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    ask("user_object.retain_into_capture", a->graph_retain(cg, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    CUdeviceptr y = 0;
    a->alloc(&y, 64); // invalidates (if the driver treats it as unsafe)
    say_status("user_object.invalidating_alloc", s);
    ask("user_object.invalidated_end", a->end(s, &g));
    if (g)
        a->graph_destroy(g);
    if (y)
        a->free(y);
    says("user_object.invalidated_end_destructor", ran_within(++want, 2000));

    // --- A stream destroyed while it captures (last: its handle is gone).
    a->begin(s2, CU_STREAM_CAPTURE_MODE_GLOBAL);
    a->fill_async(d, 1, 16, s2);
    ask("stream_destroy_capturing", a->stream_destroy(s2));
    ask("sync_at_end", a->ctx_sync());
}

} // namespace capture_group

// Host memory the driver does not know and the CPU cannot reach, in each copy and fill entry
// point gpumem uses: an error, or the driver reads it with the CPU and the process dies.  Each
// question runs in a child process (`unknown:NAME`); the parent says the child's answer or
// the signal that ended it.
namespace unknown_group {

const char *const k_questions[] = {
    "copy_unmapped_to_device", "copy_device_to_unmapped", "copy_unmapped_to_host", "copy_host_to_unmapped",
    "async_unmapped_to_device", "async_device_to_unmapped", "memset_unmapped", "memset_async_unmapped",
    "copy_device_to_readonly", "copy_prot_none_to_device", "ptrattr_pageable", "ptrattr_prot_none",
    "ptrattr_pinned", "register_unmapped", "register_prot_none", "register_readonly", "register_readonly_flag",
};

void ask(const char *q)
{
    F(cuMemAlloc);
    F(cuMemcpy);
    F(cuMemcpyAsync);
    F(cuMemsetD8);
    F(cuMemsetD8Async);
    F(cuStreamCreate);
    F(cuStreamSynchronize);
    F(cuPointerGetAttribute);
    F(cuMemHostAlloc);
    F(cuMemHostRegister);
    CUdeviceptr d = 0;
    cuMemAlloc(&d, 1 << 20);
    CUstream s = nullptr;
    cuStreamCreate(&s, 0);
    static unsigned char host[4096];
    const CUdeviceptr unmapped = 0x1000; // below vm.mmap_min_addr: never mapped
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto async = [&](CUresult r) { return r == CUDA_SUCCESS ? cuStreamSynchronize(s) : r; };
    int ordinal = -1;
    const std::string name = q;
    CUresult r = CUDA_ERROR_UNKNOWN;
    if (name == "copy_unmapped_to_device")
        r = cuMemcpy(d, unmapped, 64);
    else if (name == "copy_device_to_unmapped")
        r = cuMemcpy(unmapped, d, 64);
    else if (name == "copy_unmapped_to_host")
        r = cuMemcpy(dp(host), unmapped, 64);
    else if (name == "copy_host_to_unmapped")
        r = cuMemcpy(unmapped, dp(host), 64);
    else if (name == "async_unmapped_to_device")
        r = async(cuMemcpyAsync(d, unmapped, 64, s));
    else if (name == "async_device_to_unmapped")
        r = async(cuMemcpyAsync(unmapped, d, 64, s));
    else if (name == "memset_unmapped")
        r = cuMemsetD8(unmapped, 0, 64);
    else if (name == "memset_async_unmapped")
        r = async(cuMemsetD8Async(unmapped, 0, 64, s));
    else if (name == "copy_device_to_readonly") {
        void *ro = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r = cuMemcpy(dp(ro), d, 64);
    } else if (name == "copy_prot_none_to_device") {
        void *none = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r = cuMemcpy(d, dp(none), 64);
    } else if (name == "ptrattr_pageable")
        r = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp(host));
    else if (name == "ptrattr_prot_none") {
        void *none = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp(none));
    } else if (name == "ptrattr_pinned") {
        void *pinned = nullptr;
        cuMemHostAlloc(&pinned, 4096, 0);
        r = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp(pinned));
    } else if (name == "register_unmapped")
        r = cuMemHostRegister(reinterpret_cast<void *>(unmapped), page, 0);
    else if (name == "register_prot_none") {
        void *none = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r = cuMemHostRegister(none, page, 0);
    } else if (name == "register_readonly" || name == "register_readonly_flag") {
        void *ro = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r = cuMemHostRegister(ro, page, name == "register_readonly" ? 0 : CU_MEMHOSTREGISTER_READ_ONLY);
    }
    say(q, r);
}

// The parent: one child per question, through exec (CUDA is not to be used in a forked child).
int run_all(const char *self, const char *lib)
{
    for (const char *q : k_questions) {
        fflush(stdout);
        int out[2];
        if (pipe(out) != 0)
            return 1;
        const pid_t pid = fork();
        if (pid == 0) {
            dup2(out[1], 1);
            close(out[0]);
            close(out[1]);
            const std::string group = std::string("unknown:") + q;
            // Under AddressSanitizer the child dies of the signal rather than the sanitizer's
            // report of it, so that the answer reads the same in every build.
            const char *asan = getenv("ASAN_OPTIONS");
            const std::string options = std::string(asan && *asan ? asan : "") + (asan && *asan ? ":" : "") +
                                        "handle_segv=0";
            setenv("ASAN_OPTIONS", options.c_str(), 1);
            execl(self, self, lib, group.c_str(), static_cast<char *>(nullptr));
            _exit(127);
        }
        close(out[1]);
        std::string said;
        char buf[256];
        for (ssize_t k; (k = read(out[0], buf, sizeof buf)) > 0;)
            said.append(buf, static_cast<size_t>(k));
        close(out[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status))
            printf("unknown.%s = %s\n", q, sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "signal");
        else if (said.empty())
            printf("unknown.%s = exit %d\n", q, WEXITSTATUS(status));
        else
            printf("%s", said.c_str());
    }
    return 0;
}

} // namespace unknown_group

// After a kernel read address 0x10 (a device fault): what the driver says of each call gpumem
// makes, in the faulted context.  On the fake, which runs no kernels,
// fake_cuda_device_fault() stands in for the kernel.
void fault()
{
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemcpy);
    F(cuMemsetD8);
    F(cuStreamCreate);
    F(cuStreamDestroy);
    F(cuStreamSynchronize);
    F(cuEventCreate);
    F(cuCtxSynchronize);
    F(cuMemGetInfo);
    F(cuMemAllocAsync);
    F(cuPointerGetAttribute);
    F(cuModuleLoadData);
    F(cuModuleGetFunction);
    F(cuLaunchKernel);
    F(cuDevicePrimaryCtxGetState);
    CUdeviceptr before = 0;
    ASK("alloc_before", cuMemAlloc(&before, 4096));
    static unsigned char host[4096];
    auto inject = reinterpret_cast<void (*)(void)>(dlsym(g_lib, "fake_cuda_device_fault"));
    if (inject) {
        say("launch", CUDA_SUCCESS);
        inject();
    } else {
        static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                                  ".visible .entry read_0x10()\n{\n .reg .b64 %rd<2>;\n .reg .b32 %r<2>;\n"
                                  " mov.u64 %rd1, 16;\n ld.volatile.global.u32 %r1, [%rd1];\n"
                                  " st.volatile.global.u32 [%rd1+4], %r1;\n ret;\n}\n";
        CUmodule m = nullptr;
        CUfunction f = nullptr;
        CUresult r = cuModuleLoadData(&m, ptx);
        if (r == CUDA_SUCCESS)
            r = cuModuleGetFunction(&f, m, "read_0x10");
        if (r == CUDA_SUCCESS)
            r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
        say("launch", r);
    }
    ASK("sync", cuCtxSynchronize());
    ASK("sync_again", cuCtxSynchronize());
    CUdeviceptr d = 0;
    ASK("alloc", cuMemAlloc(&d, 4096));
    ASK("alloc_async", cuMemAllocAsync(&d, 4096, nullptr));
    ASK("memcpy_to_device", cuMemcpy(before, dp(host), 64));
    ASK("memcpy_to_host", cuMemcpy(dp(host), before, 64));
    ASK("memset", cuMemsetD8(before, 0, 64));
    CUstream s = nullptr;
    ASK("stream_create", cuStreamCreate(&s, 0));
    ASK("stream_synchronize_null", cuStreamSynchronize(nullptr));
    CUevent e = nullptr;
    ASK("event_create", cuEventCreate(&e, 0));
    size_t free_bytes = 0, total = 0;
    ASK("mem_get_info", cuMemGetInfo(&free_bytes, &total));
    int ordinal = -1;
    ASK("ptrattr_before", cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, before));
    ASK("free_before", cuMemFree(before));
    unsigned flags = 0;
    int active = 0;
    ASK("primary_state", cuDevicePrimaryCtxGetState(0, &flags, &active));
}



// Group rows: what programs that move onto gpumem use besides plain memory (stream priorities,
// flags and their queries, timing-free and interprocess events, host functions, also under
// capture) and rows and boxes (pitched allocations, 2-D and 3-D copies, fills of rows and of
// 16- and 32-bit elements): the answers fake_api_rows.cpp chose.  Its record,
// probe/h100-rows.txt, holds the fake's predictions until a driver is asked
// (tools/device/rows.sh asks one and compares).  The IPC questions of a second process are asked
// by a child of the probe (rows:ipc-child HANDLE_HEX).
namespace rows_group {

void sayi(const char *q, long long v) { printf("%s.%s = %lld\n", g_group, q, v); }

std::atomic<int> g_host_calls{0};
void count_host_call(void *) { g_host_calls.fetch_add(1); }

const std::vector<ChildQuestion> k_ipc_child_questions = {
    {"ipc_child_open"}, {"ipc_child_query"}, {"ipc_child_synchronize"}, {"ipc_child_record"},
    {"ipc_child_wait"}, {"ipc_child_elapsed"}, {"ipc_child_handle_of_opened"}, {"ipc_child_destroy"}};

// The second process: opens the parent's event (recorded and complete by then), asks it, records it.
int ipc_child(const char *handle_hex)
{
    F(cuIpcOpenEventHandle);
    F(cuIpcGetEventHandle);
    F(cuEventQuery);
    F(cuEventSynchronize);
    F(cuEventRecord);
    F(cuEventElapsedTime);
    F(cuEventDestroy);
    F(cuStreamCreate);
    F(cuStreamWaitEvent);
    F(cuStreamSynchronize);
    CUipcEventHandle h;
    if (!cuIpcOpenEventHandle || !from_hex(handle_hex, reinterpret_cast<unsigned char *>(h.reserved), sizeof h.reserved))
        return 2;
    alarm(60);
    CUevent e = nullptr;
    ASK("ipc_child_open", cuIpcOpenEventHandle(&e, h));
    if (!e)
        return 1;
    ASK("ipc_child_query", cuEventQuery(e));
    ASK("ipc_child_synchronize", cuEventSynchronize(e));
    CUstream s = nullptr;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    ASK("ipc_child_record", cuEventRecord(e, s));
    ASK("ipc_child_wait", cuStreamWaitEvent(s, e, 0));
    cuStreamSynchronize(s);
    float ms = 0;
    ASK("ipc_child_elapsed", cuEventElapsedTime(&ms, e, e));
    CUipcEventHandle again;
    ASK("ipc_child_handle_of_opened", cuIpcGetEventHandle(&again, e));
    ASK("ipc_child_destroy", cuEventDestroy(e));
    return 0;
}

void run()
{
    F(cuCtxGetStreamPriorityRange);
    F(cuStreamCreateWithPriority);
    F(cuStreamGetPriority);
    F(cuStreamGetFlags);
    F(cuStreamDestroy);
    F(cuStreamSynchronize);
    F(cuEventCreate);
    F(cuEventRecord);
    F(cuEventSynchronize);
    F(cuEventElapsedTime);
    F(cuEventDestroy);
    F(cuIpcGetEventHandle);
    F(cuIpcOpenEventHandle);
    F(cuLaunchHostFunc);
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemAllocAsync);
    F(cuMemFreeAsync);
    F(cuMemHostAlloc);
    F(cuMemFreeHost);
    F(cuMemcpy);
    F(cuMemAllocPitch);
    F(cuMemcpy2DAsync);
    F(cuMemcpy3DAsync);
    F(cuMemsetD2D8Async);
    F(cuMemsetD16Async);
    F(cuMemsetD32Async);
    F(cuMemsetD8);
    F(cuStreamBeginCapture);
    F(cuStreamEndCapture);
    F(cuGraphGetNodes);
    F(cuGraphInstantiateWithFlags);
    F(cuGraphLaunch);
    F(cuGraphExecDestroy);
    F(cuGraphDestroy);

    // Stream priorities and flags.
    int least = 99, greatest = 99;
    ASK("priority_range", cuCtxGetStreamPriorityRange(&least, &greatest));
    sayi("priority_least", least);
    sayi("priority_greatest", greatest);
    CUstream s = nullptr;
    int prio = 99;
    ASK("stream_priority_above_range", cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, greatest - 10));
    ASK("stream_priority_above_range_get", cuStreamGetPriority(s, &prio));
    sayi("stream_priority_above_range_got", prio);
    unsigned flags = 99;
    ASK("stream_flags_get", cuStreamGetFlags(s, &flags));
    sayv("stream_flags_got", flags);
    cuStreamDestroy(s);
    ASK("stream_priority_below_range", cuStreamCreateWithPriority(&s, 0, least + 10));
    cuStreamGetPriority(s, &prio);
    sayi("stream_priority_below_range_got", prio);
    cuStreamGetFlags(s, &flags);
    sayv("stream_flags_default_got", flags);
    cuStreamDestroy(s);
    CUstream bad = nullptr;
    ASK("stream_bad_flags", cuStreamCreateWithPriority(&bad, 0x2, 0));

    // Events: timing-free, interprocess.
    CUstream ns = nullptr;
    cuStreamCreateWithPriority(&ns, CU_STREAM_NON_BLOCKING, 0);
    CUevent timed = nullptr, untimed = nullptr, ipc = nullptr, bad_ipc = nullptr;
    cuEventCreate(&timed, CU_EVENT_DEFAULT);
    cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING);
    cuEventRecord(timed, ns);
    cuEventRecord(untimed, ns);
    cuEventSynchronize(untimed);
    float ms = 0;
    ASK("elapsed_disable_timing", cuEventElapsedTime(&ms, timed, untimed));
    ASK("elapsed_disable_timing_start", cuEventElapsedTime(&ms, untimed, timed));
    ASK("event_interprocess_without_disable_timing", cuEventCreate(&bad_ipc, CU_EVENT_INTERPROCESS));
    CUipcEventHandle h;
    ASK("ipc_handle_without_interprocess", cuIpcGetEventHandle(&h, timed));
    ASK("ipc_event_create", cuEventCreate(&ipc, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    ASK("ipc_handle", cuIpcGetEventHandle(&h, ipc));
    {
        // A thread where no context is current: the event names its own.
        CUipcEventHandle other;
        CUresult no_context = CUDA_SUCCESS;
        std::thread t([&] { no_context = cuIpcGetEventHandle(&other, ipc); });
        t.join();
        ASK("ipc_handle_no_context", no_context);
    }
    CUevent same = nullptr;
    ASK("ipc_open_same_process", cuIpcOpenEventHandle(&same, h));
    // Work, the record, and a second process that opens the event once it completed.
    CUdeviceptr d = 0;
    cuMemAlloc(&d, 1 << 20);
    cuMemsetD8(d, 1, 1 << 20);
    ASK("ipc_record", cuEventRecord(ipc, ns));
    cuEventSynchronize(ipc);
    run_child("rows:ipc-child", {to_hex(reinterpret_cast<const unsigned char *>(h.reserved), sizeof h.reserved)},
              k_ipc_child_questions, "ipc_child_ended");
    ASK("ipc_synchronize_after_child", cuEventSynchronize(ipc));

    // Host functions.
    g_host_calls = 0;
    ASK("host_func", cuLaunchHostFunc(ns, count_host_call, nullptr));
    cuStreamSynchronize(ns);
    sayv("host_func_ran", (unsigned long long)g_host_calls.load());
    ASK("host_func_null", cuLaunchHostFunc(ns, nullptr, nullptr));
    g_host_calls = 0;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    ASK("host_func_capture_begin", cuStreamBeginCapture(ns, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ASK("host_func_captured", cuLaunchHostFunc(ns, count_host_call, nullptr));
    ASK("host_func_capture_end", cuStreamEndCapture(ns, &graph));
    size_t nodes = 0;
    if (graph)
        cuGraphGetNodes(graph, nullptr, &nodes);
    sayv("host_func_captured_nodes", nodes);
    sayv("host_func_ran_at_capture", (unsigned long long)g_host_calls.load());
    if (graph && cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS) {
        cuGraphLaunch(exec, ns);
        cuGraphLaunch(exec, ns);
        cuStreamSynchronize(ns);
        cuGraphExecDestroy(exec);
    }
    sayv("host_func_ran_after_two_launches", (unsigned long long)g_host_calls.load());
    if (graph)
        cuGraphDestroy(graph);

    // Pitched allocations.
    for (size_t w : {1, 100, 512, 513, 4000}) {
        CUdeviceptr p = 0;
        size_t pitch = 0;
        const std::string q = "pitch_w" + std::to_string(w);
        say(q.c_str(), cuMemAllocPitch(&p, &pitch, w, 8, 16));
        sayv(q + "_pitch", pitch);
        if (p)
            cuMemFree(p);
    }
    CUdeviceptr pd = 0;
    size_t pitch = 0;
    ASK("pitch_elem_3", cuMemAllocPitch(&pd, &pitch, 100, 8, 3));
    ASK("pitch_width_0", cuMemAllocPitch(&pd, &pitch, 0, 8, 16));

    // 2-D copies.
    enum { W = 100, H = 16, P = 128 };
    static unsigned char host[P * H], back[P * H];
    for (size_t i = 0; i < sizeof host; ++i)
        host[i] = (unsigned char)(i * 7 + 1);
    CUdeviceptr dev = 0;
    cuMemAlloc(&dev, P * H);
    auto copy2d = [&](CUdeviceptr dst, const void *dst_host, size_t dpitch, CUdeviceptr src, const void *src_host,
                      size_t spitch, size_t width, size_t height) {
        CUDA_MEMCPY2D m{};
        m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.srcDevice = src_host ? dp(src_host) : src;
        m.srcPitch = spitch;
        m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.dstDevice = dst_host ? dp(dst_host) : dst;
        m.dstPitch = dpitch;
        m.WidthInBytes = width;
        m.Height = height;
        CUresult r = cuMemcpy2DAsync(&m, ns);
        cuStreamSynchronize(ns);
        return r;
    };
    auto rows_match = [&](size_t pitch_a, size_t pitch_b) {
        for (size_t y = 0; y < H; ++y)
            if (memcmp(host + y * pitch_a, back + y * pitch_b, W) != 0)
                return 0ull;
        return 1ull;
    };
    ASK("copy2d_pageable_to_device", copy2d(dev, nullptr, P, 0, host, P, W, H));
    memset(back, 0, sizeof back);
    ASK("copy2d_device_to_pageable", copy2d(0, back, P, dev, nullptr, P, W, H));
    sayv("copy2d_round_trip_matches", rows_match(P, P));
    ASK("copy2d_pitch_below_width_h1", copy2d(dev, nullptr, W - 1, 0, host, P, W, 1));
    ASK("copy2d_pitch_below_width_h2", copy2d(dev, nullptr, W - 1, 0, host, P, W, 2));
    ASK("copy2d_width_0", copy2d(dev, nullptr, P, 0, host, P, 0, H));
    ASK("copy2d_rows_past_end", copy2d(dev, nullptr, P, 0, host, P, W, H + 1));
    CUdeviceptr block = 0;
    ASK("pool_block", cuMemAllocAsync(&block, P * H, ns));
    cuStreamSynchronize(ns);
    ASK("copy2d_pageable_to_pool_block", copy2d(block, nullptr, P, 0, host, P, W, H));
    memset(back, 0, sizeof back);
    ASK("copy2d_pool_block_to_pageable", copy2d(0, back, W, block, nullptr, P, W, H));
    sayv("copy2d_pool_block_matches", rows_match(P, W));
    void *pinned = nullptr;
    cuMemHostAlloc(&pinned, P * H, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    ASK("copy2d_device_to_pinned", copy2d(0, pinned, P, dev, nullptr, P, W, H));

    // Fills.
    ASK("fill2d", cuMemsetD2D8Async(dev, P, 0x5a, W, H, ns));
    cuStreamSynchronize(ns);
    cuMemcpy(dp(back), dev, P * H);
    unsigned long long fill_ok = 1;
    for (size_t y = 0; y < H; ++y)
        for (size_t x = 0; x < P; ++x)
            if ((x < W) != (back[y * P + x] == 0x5a))
                fill_ok = 0;
    sayv("fill2d_rows_only", fill_ok);
    ASK("fill2d_pitch_below_width", cuMemsetD2D8Async(dev, W - 1, 0, W, 2, ns));
    ASK("fill_d16_misaligned", cuMemsetD16Async(dev + 1, 1, 4, ns));
    ASK("fill_d32_misaligned", cuMemsetD32Async(dev + 2, 1, 4, ns));
    ASK("fill_d32", cuMemsetD32Async(dev, 0x12345678u, 8, ns));
    cuStreamSynchronize(ns);
    uint32_t words[8] = {};
    cuMemcpy(dp(words), dev, sizeof words);
    sayv("fill_d32_value_matches", words[0] == 0x12345678u && words[7] == 0x12345678u);
    ASK("fill_d16_pageable", cuMemsetD16Async(dp(back), 1, 4, ns));
    cuStreamSynchronize(ns);

    // 3-D copies.
    auto copy3d = [&](size_t src_height, size_t depth) {
        CUDA_MEMCPY3D m{};
        m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.srcDevice = dp(host);
        m.srcPitch = P;
        m.srcHeight = src_height;
        m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.dstDevice = dev;
        m.dstPitch = P;
        m.dstHeight = 4;
        m.WidthInBytes = W;
        m.Height = 4;
        m.Depth = depth;
        CUresult r = cuMemcpy3DAsync(&m, ns);
        cuStreamSynchronize(ns);
        return r;
    };
    ASK("copy3d", copy3d(4, 4));
    ASK("copy3d_src_height_below_height", copy3d(3, 2));
    ASK("copy3d_src_height_0_depth_1", copy3d(0, 1));

    // A 2-D copy and a fill on a capturing stream are nodes.
    graph = nullptr;
    ASK("copy2d_capture_begin", cuStreamBeginCapture(ns, CU_STREAM_CAPTURE_MODE_GLOBAL));
    {
        CUDA_MEMCPY2D m{};
        m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.srcDevice = dp(pinned);
        m.srcPitch = P;
        m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        m.dstDevice = dev;
        m.dstPitch = P;
        m.WidthInBytes = W;
        m.Height = H;
        ASK("copy2d_captured", cuMemcpy2DAsync(&m, ns));
    }
    ASK("fill2d_captured", cuMemsetD2D8Async(dev, P, 1, W, H, ns));
    ASK("copy2d_capture_end", cuStreamEndCapture(ns, &graph));
    nodes = 0;
    if (graph) {
        cuGraphGetNodes(graph, nullptr, &nodes);
        cuGraphDestroy(graph);
    }
    sayv("copy2d_captured_nodes", nodes);

    cuMemFreeHost(pinned);
    cuMemFreeAsync(block, ns);
    cuStreamSynchronize(ns);
    cuMemFree(dev);
    cuMemFree(d);
    cuEventDestroy(ipc);
    cuEventDestroy(timed);
    cuEventDestroy(untimed);
    cuStreamDestroy(ns);
}

} // namespace rows_group

} // namespace

// Group foreign: what the driver says of memory a program made with its own calls, which
// gpumem_pointer_get_info reports for memory gpumem did not make (cuPointerGetAttribute), the
// handle of a VMM mapping (cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle,
// gpumem_mem_retain_allocation_handle) and a device's PCI address (cuDeviceGetPCIBusId, from
// which gpumem reads the NUMA node).  Each with bad input: NULL, memory the driver does not know,
// host memory, an interior pointer, a freed pointer.  probe/h100-foreign.txt holds the fake's
// predicted answers until a driver answers them.
namespace foreign_group {

void *as_ptr(CUdeviceptr p) { return reinterpret_cast<void *>(p); }

// The attributes gpumem asks of one address: the memory type's result, then what it says.
void attributes(const char *what, CUdeviceptr p, CUdeviceptr base, size_t size)
{
    F(cuPointerGetAttribute);
    unsigned type = 99, managed = 99;
    int ordinal = -99;
    CUdeviceptr start = 0;
    size_t range = 0;
    const std::string q = std::string("ptrattr_") + what;
    ASK(q.c_str(), cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    sayv(q + "_type", type);
    cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
    sayv(q + "_managed", managed);
    cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    printf("%s.%s_ordinal = %d\n", g_group, q.c_str(), ordinal);
    ASK((q + "_range_start").c_str(), cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
    sayv(q + "_range_start_is_base", start == base);
    ASK((q + "_range_size").c_str(), cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
    sayv(q + "_range_size_covers", range >= size && start + range >= p);
    printf("# %s: range 0x%llx + %zu for 0x%llx\n", q.c_str(), (unsigned long long)start, range,
           (unsigned long long)p);
}

void run()
{
    F(cuPointerGetAttribute);
    F(cuMemAlloc);
    F(cuMemFree);
    F(cuMemHostAlloc);
    F(cuMemFreeHost);
    F(cuMemHostRegister);
    F(cuMemHostUnregister);
    F(cuMemAllocManaged);
    F(cuMemGetAddressRange);
    F(cuMemGetAllocationGranularity);
    F(cuMemRelease);
    F(cuMemAddressFree);
    F(cuMemUnmap);
    F(cuMemRetainAllocationHandle);
    F(cuMemGetAllocationPropertiesFromHandle);
    F(cuDeviceGetPCIBusId);
    F(cuDeviceGetCount);
    const size_t n = size_t(1) << 20;

    // Pointer attributes of memory a program made itself.
    unsigned type = 99;
    ASK("ptrattr_null", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 0));
    std::vector<char> pageable(8192, 1);
    ASK("ptrattr_pageable", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp(pageable.data())));
    CUdeviceptr d = 0;
    ASK("alloc", cuMemAlloc(&d, n));
    attributes("device", d, d, n);
    attributes("device_interior", d + n / 2 + 3, d, n);
    CUdeviceptr base = 0;
    size_t range = 0;
    ASK("address_range_interior", cuMemGetAddressRange(&base, &range, d + n / 2 + 3));
    sayv("address_range_interior_is_base", base == d);
    CUmemGenericAllocationHandle h = 0;
    ASK("retain_device_memory", cuMemRetainAllocationHandle(&h, as_ptr(d)));
    cuMemFree(d);
    ASK("ptrattr_freed", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    ASK("retain_freed", cuMemRetainAllocationHandle(&h, as_ptr(d)));

    void *pinned = nullptr;
    ASK("host_alloc", cuMemHostAlloc(&pinned, n, 0));
    attributes("pinned", dp(pinned) + 10, dp(pinned), n);
    ASK("retain_pinned", cuMemRetainAllocationHandle(&h, pinned));
    cuMemFreeHost(pinned);
    void *page = aligned_alloc(65536, n);
    ASK("host_register", cuMemHostRegister(page, n, 0));
    attributes("registered", dp(page) + 10, dp(page), n);
    cuMemHostUnregister(page);
    free(page);
    CUdeviceptr m = 0;
    if (cuMemAllocManaged && cuMemAllocManaged(&m, n, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS) {
        attributes("managed", m + 10, m, n);
        cuMemFree(m);
    }
    ASK("retain_pageable", cuMemRetainAllocationHandle(&h, pageable.data()));

    // The handle of a VMM mapping.
    Vmm v;
    size_t g = 0;
    cuMemGetAllocationGranularity(&g, &v.prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUmemGenericAllocationHandle made = 0, got = 0, again = 0;
    ASK("vmm_create", v.create(&made, 2 * g, &v.prop, 0));
    CUdeviceptr va = 0;
    ASK("vmm_reserve", v.reserve(&va, 4 * g, 0, 0, 0));
    ASK("retain_unmapped", cuMemRetainAllocationHandle(&got, as_ptr(va)));
    ASK("vmm_map", v.map(va, 2 * g, 0, made, 0));
    attributes("vmm", va + g + 5, va, 2 * g);
    ASK("retain_past_mapping", cuMemRetainAllocationHandle(&got, as_ptr(va + 2 * g)));
    ASK("retain_null_handle", cuMemRetainAllocationHandle(nullptr, as_ptr(va)));
    ASK("retain_null_address", cuMemRetainAllocationHandle(&got, nullptr));
    ASK("retain", cuMemRetainAllocationHandle(&got, as_ptr(va)));
    sayv("retain_same_handle", got == made);
    ASK("retain_interior", cuMemRetainAllocationHandle(&again, as_ptr(va + g + 5)));
    sayv("retain_interior_same_handle", again == made);
    CUmemAllocationProp prop;
    memset(&prop, 0xff, sizeof prop);
    ASK("props_retained", cuMemGetAllocationPropertiesFromHandle(&prop, got));
    sayv("props_retained_type_pinned", prop.type == CU_MEM_ALLOCATION_TYPE_PINNED);
    sayv("props_retained_on_device_0", prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop.location.id == 0);
    ASK("props_null", cuMemGetAllocationPropertiesFromHandle(nullptr, got));
    ASK("release_created", cuMemRelease(made));
    ASK("props_after_created_released", cuMemGetAllocationPropertiesFromHandle(&prop, got));
    ASK("release_retained", cuMemRelease(got));
    ASK("release_retained_interior", cuMemRelease(again));
    ASK("props_all_released", cuMemGetAllocationPropertiesFromHandle(&prop, got));
    ASK("release_once_more", cuMemRelease(got));
    // Every handle released, the mapping still holds the memory: its handle comes back.
    ASK("retain_after_release", cuMemRetainAllocationHandle(&got, as_ptr(va)));
    sayv("retain_after_release_same_handle", got == made);
    cuMemRelease(got);
    ASK("vmm_unmap", cuMemUnmap(va, 2 * g));
    ASK("retain_after_unmap", cuMemRetainAllocationHandle(&got, as_ptr(va)));
    cuMemAddressFree(va, 4 * g);

    // The PCI address.
    char bus[64];
    memset(bus, 0, sizeof bus);
    ASK("pci_bus_id", cuDeviceGetPCIBusId(bus, sizeof bus, 0));
    unsigned domain = 0, b = 0, dev = 0, fn = 0;
    sayv("pci_bus_id_parses", sscanf(bus, "%x:%x:%x.%x", &domain, &b, &dev, &fn) == 4);
    sayv("pci_bus_id_length", strlen(bus));
    // Hex digits above 9 in capitals, where the id has any (an id of digits alone has none).
    bool lower = false;
    for (const char *c = bus; *c; ++c)
        lower = lower || (*c >= 'a' && *c <= 'f');
    sayv("pci_bus_id_no_lowercase", !lower);
    std::string path = "/sys/bus/pci/devices/";
    for (const char *c = bus; *c; ++c)
        path += (char)tolower((unsigned char)*c);
    printf("# pci_bus_id %s; %s/numa_node %s\n", bus, path.c_str(), access((path + "/numa_node").c_str(), R_OK) == 0 ? "readable" : "absent");
    char small[6];
    memset(small, 'x', sizeof small);
    ASK("pci_bus_id_short", cuDeviceGetPCIBusId(small, sizeof small, 0));
    sayv("pci_bus_id_short_terminated", memchr(small, '\0', sizeof small) != nullptr);
    ASK("pci_bus_id_null", cuDeviceGetPCIBusId(nullptr, 64, 0));
    ASK("pci_bus_id_zero_length", cuDeviceGetPCIBusId(bus, 0, 0));
    int count = 0;
    cuDeviceGetCount(&count);
    ASK("pci_bus_id_bad_device", cuDeviceGetPCIBusId(bus, sizeof bus, count));
}

} // namespace foreign_group

int main(int argc, char **argv)
{
    // (More arguments only in the child processes of groups export (export:fabric-child HANDLE DATA,
    // export:fabric-after-refusal STEP) and imported (imported:child POOL_FD MEM_FD DATA BYTES VMM_SIZE).)
    const bool fabric_child_mode = argc == 5 && strcmp(argv[2], "export:fabric-child") == 0;
    const bool refusal_child_mode = argc == 4 && strcmp(argv[2], "export:fabric-after-refusal") == 0;
    const bool imported_child_mode = argc == 8 && strcmp(argv[2], "imported:child") == 0;
    const bool rows_child_mode = argc == 4 && strcmp(argv[2], "rows:ipc-child") == 0;
    if (argc != 3 && !fabric_child_mode && !refusal_child_mode && !imported_child_mode && !rows_child_mode) {
        fprintf(stderr, "usage: %s LIBCUDA GROUP\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    g_group = fabric_child_mode || refusal_child_mode ? "export"
              : imported_child_mode                  ? "imported"
              : rows_child_mode                      ? "rows"
                                                     : argv[2];
    g_lib = lib;
    g_lib_path = argv[1];
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
    g_get = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!init || !g_get)
        return 1;
    if (CUresult r = init(0)) {
        say("init", r);
        return 1;
    }
    const char *grp = argv[2];
    if (strcmp(grp, "unknown") == 0)
        return unknown_group::run_all(argv[0], argv[1]);
    if (strncmp(grp, "unknown:", 8) == 0)
        g_group = "unknown";
    if (strcmp(grp, "basic") == 0) {
        basic(); // before any context
        return 0;
    }
    if (strcmp(grp, "lazy") == 0) {
        lazy(); // no context retained
        return 0;
    }
    F(cuDevicePrimaryCtxRetain);
    F(cuCtxSetCurrent);
    if (rows_child_mode) {
        CUcontext ctx = nullptr;
        if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
            return 1;
        return rows_group::ipc_child(argv[3]);
    }
    if (fabric_child_mode || refusal_child_mode || imported_child_mode) {
        // Its parent records "no answer (the child exited 1)"; the driver's words are on stderr.
        CUresult r = cuDevicePrimaryCtxRetain(&g_ctx, 0);
        if (r == CUDA_SUCCESS)
            r = cuCtxSetCurrent(g_ctx);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "fabric child: no context on device 0: %s\n", ename(r));
            return 1;
        }
        if (imported_child_mode)
            return imported_group::child(argv);
        return fabric_child_mode ? fabric_child(argv[3], argv[4]) : fabric_after_refusal(argv[3]);
    }
    cuDevicePrimaryCtxRetain(&g_ctx, 0);
    cuCtxSetCurrent(g_ctx);
    if (strcmp(grp, "memory") == 0)
        memory();
    else if (strcmp(grp, "overrun") == 0)
        overrun();
    else if (strcmp(grp, "host") == 0)
        host();
    else if (strcmp(grp, "events") == 0)
        events();
    else if (strcmp(grp, "managed") == 0)
        managed();
    else if (strcmp(grp, "pools") == 0)
        pools();
    else if (strcmp(grp, "vmm") == 0)
        vmm();
    else if (strcmp(grp, "vmm-noaccess") == 0)
        vmm_noaccess();
    else if (strcmp(grp, "multi") == 0)
        multi();
    else if (strcmp(grp, "more") == 0)
        more();
    else if (strcmp(grp, "context") == 0)
        context();
    else if (strcmp(grp, "placement") == 0)
        placement();
    else if (strcmp(grp, "reach") == 0)
        reach();
    else if (strcmp(grp, "bridge") == 0)
        bridge();
    else if (strcmp(grp, "capture") == 0)
        capture_group::run();
    else if (strncmp(grp, "unknown:", 8) == 0)
        unknown_group::ask(grp + 8);
    else if (strcmp(grp, "fault") == 0)
        fault();
    else if (strcmp(grp, "export") == 0)
        exports();
    else if (strcmp(grp, "imported") == 0)
        imported_group::run();
    else if (strcmp(grp, "rows") == 0)
        rows_group::run();
    else if (strcmp(grp, "foreign") == 0)
        foreign_group::run();
    else
        return 2;
    return 0;
}
