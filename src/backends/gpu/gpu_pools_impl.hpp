// GpuBackend<Vendor>: the vendor's native stream-ordered pools.
#pragma once

#include <cstring>

#include "backends/gpu/gpu_backend.hpp"

namespace gpumem::detail::gpu {

namespace {

// GPUMEM_POOL_ATTR_* the vendors know; the three reuse flags are ints (int32
// in the API), the rest 64-bit.
inline bool known_pool_attribute(int32_t attr)
{
    return attr >= GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES && attr <= GPUMEM_POOL_ATTR_USED_MEM_HIGH;
}
inline bool int_pool_attribute(int32_t attr) { return attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES; }

inline status_t unknown_attribute(int32_t attr)
{
    return fail(GPUMEM_ERROR_INVALID_VALUE, "pool attribute %d is not a GPUMEM_POOL_ATTR_* value", attr);
}

} // namespace

template <typename Vendor> status_t GpuBackend<Vendor>::default_pool(int32_t device, void **pool)
{
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    void *p = nullptr;
    if (status_t st = check(api(), v_.default_pool(&p, device), "find the default pool of device %d", device))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::create(int32_t device, uint32_t handle_types, uint64_t max_size, int32_t memory,
                                    int32_t numa_node, void **pool)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    // Whether max_size and this memory can be had is the vendor's to say.
    if (status_t st = v_.pool_max_size(max_size))
        return st;
    if (status_t st = v_.pool_memory(device, memory, numa_node))
        return st;
    // The CUDA driver makes a pool of fabric memory where the system has no fabric,
    // but will not export it, and after that refusal the pool's next call crashes
    // the process (H200, driver 580: probe/h200-export.txt).  Such a pool could never be
    // shared, so it is refused before the driver is asked, as the driver itself
    // refuses fabric VMM memory there.
    if (handle_types & GPUMEM_HANDLE_FABRIC)
        if (const char *missing = v_.fabric_missing())
            return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                        "cannot create a pool of fabric memory for device %d: %s; fabric handles need the system's "
                        "fabric (an IMEX channel, which the IMEX service makes for multi-node NVLink); without one, "
                        "create the pool without GPUMEM_HANDLE_FABRIC",
                        device, missing);
    const char *what = memory == GPUMEM_POOL_MEMORY_PINNED    ? "a pool of pinned host memory"
                       : memory == GPUMEM_POOL_MEMORY_MANAGED ? "a pool of managed memory"
                                                              : "a pool";
    void *p = nullptr;
    status_t st = check(api(), v_.pool_create(&p, device, handle_types, max_size, memory, numa_node),
                        "create %s for device %d", what, device);
    if (st != GPUMEM_SUCCESS && (handle_types & GPUMEM_HANDLE_FABRIC))
        st = fabric_refused(st);
    if (st != GPUMEM_SUCCESS)
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::destroy(int32_t device, void *pool)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.pool_destroy(pool), "destroy pool %p", pool);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::alloc(int32_t device, void *pool, size_t size, void *stream, void **ptr)
{
    const size_t largest = largest_device();
    if (size > largest)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes from pool %p: more than any device's memory (%zu bytes); allocate less",
                    size, pool, largest);
    // The pool names its device and the stream its context: the driver
    // allocates whatever is current (probe: from another device's context and
    // with none), so only the default stream needs the pool's device entered.
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    void *p = nullptr;
    if (status_t st = check(api(), v_.pool_alloc(&p, size, pool, stream), "allocate %zu bytes from pool %p on stream %p",
                            size, pool, stream))
        return st;
    *ptr = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::free(int32_t device, void *ptr, void *stream)
{
    Placed here(v_);
    if (status_t st = enter_for_stream(here, device, stream))
        return st;
    return check(api(), v_.free_async(ptr, stream), "free %p on stream %p", ptr, stream);
}

template <typename Vendor> status_t GpuBackend<Vendor>::set_attribute(int32_t device, void *pool, int32_t attr,
                                                                    const void *value)
{
    if (!known_pool_attribute(attr))
        return unknown_attribute(attr);
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    int as_int = 0;
    uint64_t as_u64 = 0;
    void *v = &as_u64;
    if (int_pool_attribute(attr)) {
        std::memcpy(&as_int, value, sizeof as_int); // 0 or 1: the core checked
        v = &as_int;
    } else {
        std::memcpy(&as_u64, value, sizeof as_u64);
    }
    return check(api(), v_.pool_set_attribute(pool, attr, v), "set attribute %d of pool %p", attr, pool);
}

template <typename Vendor> status_t GpuBackend<Vendor>::get_attribute(int32_t device, void *pool, int32_t attr, void *value)
{
    if (!known_pool_attribute(attr))
        return unknown_attribute(attr);
    Placed here(v_);
    if (status_t st = here.enter_for_query(device, device_count()))
        return st;
    const bool is_int = int_pool_attribute(attr);
    int as_int = 0;
    uint64_t as_u64 = 0;
    if (status_t st = check(api(), v_.pool_get_attribute(pool, attr, is_int ? static_cast<void *>(&as_int)
                                                                              : static_cast<void *>(&as_u64)),
                            "read attribute %d of pool %p", attr, pool))
        return st;
    if (is_int) {
        const int32_t out = as_int;
        std::memcpy(value, &out, sizeof out);
    } else {
        std::memcpy(value, &as_u64, sizeof as_u64);
    }
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::trim(int32_t device, void *pool, size_t min_bytes_to_keep)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.pool_trim(pool, min_bytes_to_keep), "trim pool %p to %zu bytes", pool, min_bytes_to_keep);
}

template <typename Vendor>
status_t GpuBackend<Vendor>::set_access(int32_t device, void *pool, int32_t accessor, int32_t flags)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check(api(), v_.pool_set_access(pool, accessor, flags), "set access %d for device %d on pool %p of device %d",
                 flags, accessor, pool, device);
}

template <typename Vendor> status_t GpuBackend<Vendor>::export_pool(int32_t device, void *pool, int *fd)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    int out = -1;
    if (status_t st = check_ipc(api(), v_.pool_export(&out, pool), Sharing::exporting, "export pool %p", pool))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::import_pool(int32_t device, int fd, void **pool)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    // The descriptor travels as the handle's value; it stays the caller's.
    void *p = nullptr;
    if (status_t st = check_ipc(api(), v_.pool_import(&p, fd), Sharing::importing_descriptor, "import a pool from descriptor %d", fd))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

template <typename Vendor>
status_t GpuBackend<Vendor>::export_pointer(int32_t device, void *ptr, gpumem_pool_ptr_export_data_t *data)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    return check_ipc(api(), v_.export_pointer(data, ptr), Sharing::exporting, "export pointer %p", ptr);
}

// The exporter's device, as this process numbers devices, is the one the
// runtime says the imported memory is on: a pool's descriptor and a
// pointer's export data are the runtime's own bytes, with no room for gpumem
// to add the exporter's device (UUID), and the runtime already maps it.
template <typename Vendor>
status_t GpuBackend<Vendor>::import_pointer(int32_t device, void *pool, const gpumem_pool_ptr_export_data_t *data,
                                            void **ptr, int32_t *owner)
{
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *p = nullptr;
    if (status_t st = check_ipc(api(), v_.import_pointer(&p, pool, data), Sharing::importing_pointer,
                                  "import a pointer into pool %p", pool))
        return st;
    int32_t d = device;
    if (status_t st = v_.pointer_device(p, &d)) {
        v_.free_async(p, nullptr); // an imported pointer is released by freeing it
        return st;
    }
    *ptr = p;
    *owner = d >= 0 && d < device_count() ? d : device;
    return GPUMEM_SUCCESS;
}

template <typename Vendor> status_t GpuBackend<Vendor>::block_range(int32_t device, void *ptr, void **base, size_t *size)
{
    if (!v_.has_address_range())
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "%s has no address-range query; the size of %p is unknown",
                    Vendor::runtime_words, ptr);
    Placed here(v_);
    if (status_t st = here.enter(device, device_count()))
        return st;
    void *b = nullptr;
    size_t n = 0;
    if (status_t st = check(api(), v_.address_range(&b, &n, ptr), "find the allocation holding %p", ptr))
        return st;
    *base = b;
    *size = n;
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::gpu
