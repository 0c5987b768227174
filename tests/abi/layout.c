/* The ABI on x86-64: struct sizes and offsets, and the numeric values of every constant.
 * The expected numbers are written out by hand so that a change to the header that moves a
 * field or renumbers a value fails here instead of silently breaking callers.
 * SPDX-License-Identifier: MIT */
#include <gpumem/gpumem.h>

#include <stddef.h>
#include <stdio.h>

static int failures;

#define EXPECT(what, actual, expected)                                                                            \
    do {                                                                                                          \
        long long a_ = (long long)(actual), e_ = (long long)(expected);                                           \
        if (a_ != e_) {                                                                                           \
            printf("FAIL: %s is %lld, the ABI says %lld\n", what, a_, e_);                                        \
            ++failures;                                                                                           \
        }                                                                                                         \
    } while (0)
#define OFF(type, field, expected) EXPECT("offsetof(" #type ", " #field ")", offsetof(type, field), expected)
#define SIZE(type, expected) EXPECT("sizeof(" #type ")", sizeof(type), expected)
#define VAL(name, expected) EXPECT(#name, name, expected)

int main(void)
{
#if !defined(__x86_64__)
    printf("not x86-64: the layout table below is for x86-64\n");
    return 77;
#else
    SIZE(gpumem_status_t, 4);
    SIZE(gpumem_mem_handle_t, 8);
    SIZE(gpumem_stream_t, 8);

    SIZE(gpumem_device_info_t, 480);
    OFF(gpumem_device_info_t, size, 0);
    OFF(gpumem_device_info_t, name, 8);
    OFF(gpumem_device_info_t, backend, 264);
    OFF(gpumem_device_info_t, device, 268);
    OFF(gpumem_device_info_t, total_memory, 272);
    OFF(gpumem_device_info_t, free_memory, 280);
    OFF(gpumem_device_info_t, managed_memory, 288);
    OFF(gpumem_device_info_t, managed_migrates, 292);
    OFF(gpumem_device_info_t, pageable_memory_access, 296);
    OFF(gpumem_device_info_t, memory_pools, 300);
    OFF(gpumem_device_info_t, virtual_memory, 304);
    OFF(gpumem_device_info_t, ipc_handle_types, 308);
    OFF(gpumem_device_info_t, vmm_granularity, 312);
    OFF(gpumem_device_info_t, vmm_recommended_granularity, 320);
    OFF(gpumem_device_info_t, host_register, 328);
    OFF(gpumem_device_info_t, compute_capability, 332);
    OFF(gpumem_device_info_t, arch_name, 336);
    OFF(gpumem_device_info_t, pool_ipc_handle_types, 400);
    OFF(gpumem_device_info_t, batch_memops, 404);
    OFF(gpumem_device_info_t, pinned_pools, 408);
    OFF(gpumem_device_info_t, managed_pools, 412);
    OFF(gpumem_device_info_t, rdma_memory, 416);
    OFF(gpumem_device_info_t, dmabuf, 420);
    OFF(gpumem_device_info_t, fabric_handles, 424);
    OFF(gpumem_device_info_t, rows, 428);
    OFF(gpumem_device_info_t, stream_priorities, 432);
    OFF(gpumem_device_info_t, host_funcs, 436);
    OFF(gpumem_device_info_t, ipc_events, 440);
    OFF(gpumem_device_info_t, pci_bus_id, 444);
    OFF(gpumem_device_info_t, uuid, 460);
    OFF(gpumem_device_info_t, numa_node, 476);

    SIZE(gpumem_pointer_info_t, 64);
    OFF(gpumem_pointer_info_t, size, 0);
    OFF(gpumem_pointer_info_t, kind, 8);
    OFF(gpumem_pointer_info_t, device, 12);
    OFF(gpumem_pointer_info_t, base, 16);
    OFF(gpumem_pointer_info_t, alloc_size, 24);
    OFF(gpumem_pointer_info_t, emulated, 32);
    OFF(gpumem_pointer_info_t, flags, 36);
    OFF(gpumem_pointer_info_t, pool, 40);
    OFF(gpumem_pointer_info_t, device_pointer, 48);
    OFF(gpumem_pointer_info_t, memory, 56);
    OFF(gpumem_pointer_info_t, vendor_known, 60);

    SIZE(gpumem_stats_t, 272);
    OFF(gpumem_stats_t, size, 0);
    OFF(gpumem_stats_t, current_bytes, 8);
    OFF(gpumem_stats_t, peak_bytes, 72);
    OFF(gpumem_stats_t, alloc_count, 136);
    OFF(gpumem_stats_t, free_count, 200);
    OFF(gpumem_stats_t, fallback_count, 264);

    SIZE(gpumem_trace_event_t, 56);
    OFF(gpumem_trace_event_t, size, 0);
    OFF(gpumem_trace_event_t, op, 8);
    OFF(gpumem_trace_event_t, kind, 12);
    OFF(gpumem_trace_event_t, ptr, 16);
    OFF(gpumem_trace_event_t, bytes, 24);
    OFF(gpumem_trace_event_t, device, 32);
    OFF(gpumem_trace_event_t, emulated, 36);
    OFF(gpumem_trace_event_t, stream, 40);
    OFF(gpumem_trace_event_t, pool, 48);

    /* Snapshots (0.2) */
    SIZE(gpumem_snapshot_free_block_t, 16);
    OFF(gpumem_snapshot_free_block_t, offset, 0);
    OFF(gpumem_snapshot_free_block_t, bytes, 8);
    SIZE(gpumem_snapshot_device_t, 288);
    OFF(gpumem_snapshot_device_t, size, 0);
    OFF(gpumem_snapshot_device_t, device, 8);
    OFF(gpumem_snapshot_device_t, reserved0, 12);
    OFF(gpumem_snapshot_device_t, name, 16);
    OFF(gpumem_snapshot_device_t, total, 272);
    OFF(gpumem_snapshot_device_t, free, 280);
    SIZE(gpumem_snapshot_pool_t, 48);
    OFF(gpumem_snapshot_pool_t, size, 0);
    OFF(gpumem_snapshot_pool_t, pool, 8);
    OFF(gpumem_snapshot_pool_t, device, 16);
    OFF(gpumem_snapshot_pool_t, implementation, 20);
    OFF(gpumem_snapshot_pool_t, memory, 24);
    OFF(gpumem_snapshot_pool_t, reserved0, 28);
    OFF(gpumem_snapshot_pool_t, reserved_bytes, 32);
    OFF(gpumem_snapshot_pool_t, used_bytes, 40);
    SIZE(gpumem_snapshot_allocation_t, 88);
    OFF(gpumem_snapshot_allocation_t, size, 0);
    OFF(gpumem_snapshot_allocation_t, ptr, 8);
    OFF(gpumem_snapshot_allocation_t, bytes, 16);
    OFF(gpumem_snapshot_allocation_t, kind, 24);
    OFF(gpumem_snapshot_allocation_t, memory, 28);
    OFF(gpumem_snapshot_allocation_t, device, 32);
    OFF(gpumem_snapshot_allocation_t, thread, 36);
    OFF(gpumem_snapshot_allocation_t, pool, 40);
    OFF(gpumem_snapshot_allocation_t, stream, 48);
    OFF(gpumem_snapshot_allocation_t, time_us, 56);
    OFF(gpumem_snapshot_allocation_t, backtrace, 64);
    OFF(gpumem_snapshot_allocation_t, backtrace_depth, 72);
    OFF(gpumem_snapshot_allocation_t, graph, 80);
    SIZE(gpumem_snapshot_segment_t, 64);
    OFF(gpumem_snapshot_segment_t, size, 0);
    OFF(gpumem_snapshot_segment_t, pool, 8);
    OFF(gpumem_snapshot_segment_t, device, 16);
    OFF(gpumem_snapshot_segment_t, reserved0, 20);
    OFF(gpumem_snapshot_segment_t, base, 24);
    OFF(gpumem_snapshot_segment_t, bytes, 32);
    OFF(gpumem_snapshot_segment_t, free_blocks, 40);
    OFF(gpumem_snapshot_segment_t, free_block_count, 48);
    OFF(gpumem_snapshot_segment_t, backed_bytes, 56);
    SIZE(gpumem_snapshot_t, 88);
    OFF(gpumem_snapshot_t, size, 0);
    OFF(gpumem_snapshot_t, backend, 8);
    OFF(gpumem_snapshot_t, reserved0, 12);
    OFF(gpumem_snapshot_t, time_us, 16);
    OFF(gpumem_snapshot_t, devices, 24);
    OFF(gpumem_snapshot_t, device_count, 32);
    OFF(gpumem_snapshot_t, pools, 40);
    OFF(gpumem_snapshot_t, pool_count, 48);
    OFF(gpumem_snapshot_t, allocations, 56);
    OFF(gpumem_snapshot_t, allocation_count, 64);
    OFF(gpumem_snapshot_t, segments, 72);
    OFF(gpumem_snapshot_t, segment_count, 80);
    /* Out-of-memory report (0.4). */
    SIZE(gpumem_oom_remedy_t, 16);
    OFF(gpumem_oom_remedy_t, bytes, 0);
    OFF(gpumem_oom_remedy_t, fits, 8);
    OFF(gpumem_oom_remedy_t, reserved0, 12);
    SIZE(gpumem_oom_report_t, 472);
    OFF(gpumem_oom_report_t, size, 0);
    OFF(gpumem_oom_report_t, has_report, 8);
    OFF(gpumem_oom_report_t, device, 12);
    OFF(gpumem_oom_report_t, kind, 16);
    OFF(gpumem_oom_report_t, reserved0, 20);
    OFF(gpumem_oom_report_t, bytes, 24);
    OFF(gpumem_oom_report_t, rounded_bytes, 32);
    OFF(gpumem_oom_report_t, pool, 40);
    OFF(gpumem_oom_report_t, stream, 48);
    OFF(gpumem_oom_report_t, device_free, 56);
    OFF(gpumem_oom_report_t, device_total, 64);
    OFF(gpumem_oom_report_t, gpumem_reserved, 72);
    OFF(gpumem_oom_report_t, gpumem_used, 80);
    OFF(gpumem_oom_report_t, limit, 88);
    OFF(gpumem_oom_report_t, limit_held, 96);
    OFF(gpumem_oom_report_t, trim, 104);
    OFF(gpumem_oom_report_t, trim_pool, 120);
    OFF(gpumem_oom_report_t, trim_pool_bytes, 128);
    OFF(gpumem_oom_report_t, pending, 136);
    OFF(gpumem_oom_report_t, pending_stream, 152);
    OFF(gpumem_oom_report_t, fragmentation, 160);
    OFF(gpumem_oom_report_t, largest_free_block, 176);
    OFF(gpumem_oom_report_t, limit_raise, 184);
    OFF(gpumem_oom_report_t, outside, 200);
    OFF(gpumem_oom_report_t, verdict, 216);

    SIZE(gpumem_pool_props_t, 48);
    OFF(gpumem_pool_props_t, size, 0);
    OFF(gpumem_pool_props_t, device, 8);
    OFF(gpumem_pool_props_t, handle_types, 12);
    OFF(gpumem_pool_props_t, max_size, 16);
    OFF(gpumem_pool_props_t, implementation, 24);
    OFF(gpumem_pool_props_t, memory, 28);
    OFF(gpumem_pool_props_t, numa_node, 32);
    OFF(gpumem_pool_props_t, reserved1, 36);
    OFF(gpumem_pool_props_t, flags, 40);

    SIZE(gpumem_ipc_event_handle_t, 64);
    OFF(gpumem_ipc_event_handle_t, reserved, 0);

    SIZE(gpumem_memcpy3d_t, 128);
    OFF(gpumem_memcpy3d_t, size, 0);
    OFF(gpumem_memcpy3d_t, src, 8);
    OFF(gpumem_memcpy3d_t, src_pitch, 16);
    OFF(gpumem_memcpy3d_t, src_height, 24);
    OFF(gpumem_memcpy3d_t, src_x, 32);
    OFF(gpumem_memcpy3d_t, src_y, 40);
    OFF(gpumem_memcpy3d_t, src_z, 48);
    OFF(gpumem_memcpy3d_t, dst, 56);
    OFF(gpumem_memcpy3d_t, dst_pitch, 64);
    OFF(gpumem_memcpy3d_t, dst_height, 72);
    OFF(gpumem_memcpy3d_t, dst_x, 80);
    OFF(gpumem_memcpy3d_t, dst_y, 88);
    OFF(gpumem_memcpy3d_t, dst_z, 96);
    OFF(gpumem_memcpy3d_t, width, 104);
    OFF(gpumem_memcpy3d_t, height, 112);
    OFF(gpumem_memcpy3d_t, depth, 120);

    SIZE(gpumem_access_desc_t, 8);
    OFF(gpumem_access_desc_t, device, 0);
    OFF(gpumem_access_desc_t, flags, 4);

    SIZE(gpumem_pool_ptr_export_data_t, 64);
    OFF(gpumem_pool_ptr_export_data_t, reserved, 0);

    SIZE(gpumem_alloc_props_t, 24);
    OFF(gpumem_alloc_props_t, size, 0);
    OFF(gpumem_alloc_props_t, device, 8);
    OFF(gpumem_alloc_props_t, handle_types, 12);
    OFF(gpumem_alloc_props_t, flags, 16);

    /* Constants. */
    VAL(GPUMEM_SUCCESS, 0);
    VAL(GPUMEM_ERROR_INVALID_VALUE, 1);
    VAL(GPUMEM_ERROR_OUT_OF_MEMORY, 2);
    VAL(GPUMEM_ERROR_NOT_SUPPORTED, 3);
    VAL(GPUMEM_ERROR_NO_DEVICE, 4);
    VAL(GPUMEM_ERROR_INVALID_DEVICE, 5);
    VAL(GPUMEM_ERROR_INVALID_POINTER, 6);
    VAL(GPUMEM_ERROR_INVALID_HANDLE, 7);
    VAL(GPUMEM_ERROR_BACKEND_UNAVAILABLE, 8);
    VAL(GPUMEM_ERROR_BACKEND, 9);
    VAL(GPUMEM_ERROR_IPC, 10);
    VAL(GPUMEM_ERROR_BUSY, 11);
    VAL(GPUMEM_BACKEND_AUTO, 0);
    VAL(GPUMEM_BACKEND_HOST, 1);
    VAL(GPUMEM_BACKEND_CUDA, 2);
    VAL(GPUMEM_BACKEND_HIP, 3);
    VAL(GPUMEM_DEVICE_HOST, -1);
    VAL(GPUMEM_LOCATION_INVALID, -2);
    VAL(GPUMEM_SUPPORT_NONE, 0);
    VAL(GPUMEM_SUPPORT_EMULATED, 1);
    VAL(GPUMEM_SUPPORT_NATIVE, 2);
    VAL(GPUMEM_SUPPORT_BROKEN, 3);
    VAL(GPUMEM_HANDLE_NONE, 0);
    VAL(GPUMEM_HANDLE_POSIX_FD, 1);
    VAL(GPUMEM_HANDLE_FABRIC, 0x2);
    VAL(GPUMEM_HOST_PORTABLE, 0x1);
    VAL(GPUMEM_HOST_MAPPED, 0x2);
    VAL(GPUMEM_HOST_WRITE_COMBINED, 0x4);
    VAL(GPUMEM_HOST_COHERENT, 0x8);
    VAL(GPUMEM_HOST_NONCOHERENT, 0x10);
    VAL(GPUMEM_HOST_REGISTER_PORTABLE, 0x1);
    VAL(GPUMEM_HOST_REGISTER_MAPPED, 0x2);
    VAL(GPUMEM_HOST_REGISTER_READ_ONLY, 0x8);
    VAL(GPUMEM_ATTACH_GLOBAL, 0x1);
    VAL(GPUMEM_ATTACH_HOST, 0x2);
    VAL(GPUMEM_ATTACH_SINGLE, 0x4);
    VAL(GPUMEM_ADVISE_SET_READ_MOSTLY, 1);
    VAL(GPUMEM_ADVISE_UNSET_READ_MOSTLY, 2);
    VAL(GPUMEM_ADVISE_SET_PREFERRED_LOCATION, 3);
    VAL(GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION, 4);
    VAL(GPUMEM_ADVISE_SET_ACCESSED_BY, 5);
    VAL(GPUMEM_ADVISE_UNSET_ACCESSED_BY, 6);
    VAL(GPUMEM_ADVISE_SET_COARSE_GRAIN, 100);
    VAL(GPUMEM_ADVISE_UNSET_COARSE_GRAIN, 101);
    VAL(GPUMEM_RANGE_READ_MOSTLY, 1);
    VAL(GPUMEM_RANGE_PREFERRED_LOCATION, 2);
    VAL(GPUMEM_RANGE_ACCESSED_BY, 3);
    VAL(GPUMEM_RANGE_LAST_PREFETCH_LOCATION, 4);
    VAL(GPUMEM_KIND_UNKNOWN, 0);
    VAL(GPUMEM_KIND_DEVICE, 1);
    VAL(GPUMEM_KIND_HOST_PINNED, 2);
    VAL(GPUMEM_KIND_HOST_REGISTERED, 3);
    VAL(GPUMEM_KIND_MANAGED, 4);
    VAL(GPUMEM_KIND_STREAM_ORDERED, 5);
    VAL(GPUMEM_KIND_VIRTUAL, 6);
    VAL(GPUMEM_KIND_BUFFER, 7);
    VAL(GPUMEM_KIND_COUNT, 8);
    VAL(GPUMEM_TRACE_ALLOC, 1);
    VAL(GPUMEM_TRACE_FREE, 2);
    VAL(GPUMEM_POOL_AUTO, 0);
    VAL(GPUMEM_POOL_NATIVE, 1);
    VAL(GPUMEM_POOL_BUILTIN, 2);
    VAL(GPUMEM_POOL_RDMA, 0x1);
    VAL(GPUMEM_POOL_MEMORY_UNKNOWN, -1);
    VAL(GPUMEM_POOL_MEMORY_DEVICE, 0);
    VAL(GPUMEM_POOL_MEMORY_PINNED, 1);
    VAL(GPUMEM_POOL_MEMORY_MANAGED, 2);
    VAL(GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 1);
    VAL(GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 2);
    VAL(GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 3);
    VAL(GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, 4);
    VAL(GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, 5);
    VAL(GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, 6);
    VAL(GPUMEM_POOL_ATTR_USED_MEM_CURRENT, 7);
    VAL(GPUMEM_POOL_ATTR_USED_MEM_HIGH, 8);
    VAL(GPUMEM_ACCESS_NONE, 0);
    VAL(GPUMEM_ACCESS_READ, 1);
    VAL(GPUMEM_ACCESS_READWRITE, 3);
    VAL(GPUMEM_GRANULARITY_MINIMUM, 0);
    VAL(GPUMEM_GRANULARITY_RECOMMENDED, 1);
    VAL(GPUMEM_STREAM_DEFAULT, 0x0);
    VAL(GPUMEM_STREAM_NON_BLOCKING, 0x1);
    VAL(GPUMEM_EVENT_DEFAULT, 0x0);
    VAL(GPUMEM_EVENT_BLOCKING_SYNC, 0x1);
    VAL(GPUMEM_EVENT_DISABLE_TIMING, 0x2);
    VAL(GPUMEM_EVENT_INTERPROCESS, 0x4);

    /* The run-time library and the header agree on the version. */
    VAL(gpumem_version(), GPUMEM_VERSION);

    printf("%s\n", failures ? "layout DIFFERS from the ABI" : "layout matches the x86-64 ABI");
    return failures ? 1 : 0;
#endif
}
