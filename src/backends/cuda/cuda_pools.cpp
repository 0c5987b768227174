// Memory pools: the driver's native stream-ordered pools (cuMemPool*), and
// the chunk source for gpumem's own pool where that one is used instead.
#include "backends/cuda/cuda_backend.hpp"

#include <cstring>

#include "base/log.hpp"

namespace gpumem::detail::cuda {

static_assert(sizeof(CUmemPoolPtrExportData) == sizeof(gpumem_pool_ptr_export_data_t),
              "an exported pool pointer is copied through unchanged");

namespace {

CUmemoryPool native_pool(void *pool) { return static_cast<CUmemoryPool>(pool); }

// GPUMEM_POOL_ATTR_* as the driver's attribute; false for an unknown one.
// The three reuse flags are ints (int32 in the API), the rest cuuint64_t.
bool pool_attribute(int32_t attr, CUmemPool_attribute *out, bool *is_int)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *out = CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES; break;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *out = CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC; break;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *out = CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
        break;
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: *out = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: *out = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: *out = CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH; break;
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: *out = CU_MEMPOOL_ATTR_USED_MEM_CURRENT; break;
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH: *out = CU_MEMPOOL_ATTR_USED_MEM_HIGH; break;
    default: return false;
    }
    *is_int = attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    return true;
}

status_t unknown_attribute(int32_t attr)
{
    return fail(GPUMEM_ERROR_INVALID_VALUE, "pool attribute %d is not a GPUMEM_POOL_ATTR_* value", attr);
}

} // namespace

// --- Native pools ---------------------------------------------------------------------

status_t CudaBackend::default_pool(int32_t device, void **pool)
{
    if (status_t st = bind(device))
        return st;
    CUmemoryPool p = nullptr;
    if (status_t st = check(d_, d_.cuDeviceGetDefaultMemPool(&p, devices_[device].handle), "cuDeviceGetDefaultMemPool",
                            "find the default pool of device %d", device))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::create(int32_t device, uint32_t handle_types, uint64_t max_size, void **pool)
{
    if (status_t st = bind(device))
        return st;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = location_of(device);
    if (handle_types & GPUMEM_HANDLE_POSIX_FD)
        props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
#if CUDA_VERSION >= 12020
    // Older drivers see the field as reserved bytes, which must be zero.
    if (max_size != 0 && d_.version < k_pool_max_size_version)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "a native pool's max_size needs a CUDA 12.2 driver (this one is %d); update the driver, or use "
                    "GPUMEM_POOL_BUILTIN, or max_size = 0",
                    d_.version);
    // 0 is the driver's default (unlimited); larger than size_t cannot be held anyway.  The driver
    // rounds the limit up to its own reservation granule (32 MiB on an H200).
    props.maxSize = max_size > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(max_size);
#else
    if (max_size != 0)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "a native pool's max_size needs gpumem built with CUDA 12.2 or newer headers; use "
                    "GPUMEM_POOL_BUILTIN, or max_size = 0");
#endif
    CUmemoryPool p = nullptr;
    if (status_t st = check(d_, d_.cuMemPoolCreate(&p, &props), "cuMemPoolCreate", "create a pool on device %d",
                            device))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::destroy(void *pool)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemPoolDestroy(native_pool(pool)), "cuMemPoolDestroy", "destroy pool %p", pool);
}

status_t CudaBackend::alloc(void *pool, size_t size, void *stream, void **ptr)
{
    size_t largest = 0;
    for (const DeviceInfo &dev : devices_)
        largest = dev.total_memory > largest ? dev.total_memory : largest;
    if (size > largest)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes from pool %p: more than any device's memory (%zu bytes); allocate less",
                    size, pool, largest);
    if (status_t st = ensure_context())
        return st;
    CUdeviceptr p = 0;
    CUresult r = d_.cuMemAllocFromPoolAsync(&p, size, native_pool(pool), native_stream(stream));
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        // The pool may hold freed memory other streams' pending work still
        // orders: let that work finish, give back what is cached, try again.
        CUresult sync = d_.cuStreamSynchronize(native_stream(stream));
        if (status_t st = check(d_, sync, "cuStreamSynchronize", "wait for stream %p before retrying an allocation",
                                stream))
            return st;
        if (status_t st = check(d_, d_.cuMemPoolTrimTo(native_pool(pool), 0), "cuMemPoolTrimTo",
                                "release the memory pool %p caches", pool))
            return st;
        r = d_.cuMemAllocFromPoolAsync(&p, size, native_pool(pool), native_stream(stream));
    }
    if (status_t st = check(d_, r, "cuMemAllocFromPoolAsync", "allocate %zu bytes from pool %p on stream %p", size,
                            pool, stream))
        return st;
    *ptr = as_pointer(p);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::free(void *ptr, void *stream)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemFreeAsync(dptr(ptr), native_stream(stream)), "cuMemFreeAsync", "free %p on stream %p",
                 ptr, stream);
}

status_t CudaBackend::set_attribute(void *pool, int32_t attr, const void *value)
{
    CUmemPool_attribute a;
    bool is_int = false;
    if (!pool_attribute(attr, &a, &is_int))
        return unknown_attribute(attr);
    if (status_t st = ensure_context())
        return st;
    int as_int = 0;
    cuuint64_t as_u64 = 0;
    void *v = &as_u64;
    if (is_int) {
        std::memcpy(&as_int, value, sizeof as_int); // 0 or 1: the core checked
        v = &as_int;
    } else {
        std::memcpy(&as_u64, value, sizeof as_u64);
    }
    return check(d_, d_.cuMemPoolSetAttribute(native_pool(pool), a, v), "cuMemPoolSetAttribute",
                 "set attribute %d of pool %p", attr, pool);
}

status_t CudaBackend::get_attribute(void *pool, int32_t attr, void *value)
{
    CUmemPool_attribute a;
    bool is_int = false;
    if (!pool_attribute(attr, &a, &is_int))
        return unknown_attribute(attr);
    if (status_t st = ensure_context())
        return st;
    int as_int = 0;
    cuuint64_t as_u64 = 0;
    if (status_t st = check(d_, d_.cuMemPoolGetAttribute(native_pool(pool), a, is_int ? static_cast<void *>(&as_int)
                                                                                      : static_cast<void *>(&as_u64)),
                            "cuMemPoolGetAttribute", "read attribute %d of pool %p", attr, pool))
        return st;
    if (is_int) {
        const int32_t out = as_int;
        std::memcpy(value, &out, sizeof out);
    } else {
        const uint64_t out = as_u64;
        std::memcpy(value, &out, sizeof out);
    }
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::trim(void *pool, size_t min_bytes_to_keep)
{
    if (status_t st = ensure_context())
        return st;
    return check(d_, d_.cuMemPoolTrimTo(native_pool(pool), min_bytes_to_keep), "cuMemPoolTrimTo",
                 "trim pool %p to %zu bytes", pool, min_bytes_to_keep);
}

status_t CudaBackend::set_access(void *pool, int32_t device, int32_t flags)
{
    if (status_t st = ensure_context())
        return st;
    CUmemAccessDesc desc{};
    desc.location = location_of(device);
    desc.flags = access_flags(flags);
    return check(d_, d_.cuMemPoolSetAccess(native_pool(pool), &desc, 1), "cuMemPoolSetAccess",
                 "set access %d for device %d on pool %p", flags, device, pool);
}

status_t CudaBackend::export_pool(void *pool, int *fd)
{
    if (status_t st = ensure_context())
        return st;
    int out = -1; // a POSIX descriptor is written as an int
    if (status_t st = check_ipc(d_, d_.cuMemPoolExportToShareableHandle(&out, native_pool(pool),
                                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                                "cuMemPoolExportToShareableHandle", "export pool %p", pool))
        return st;
    *fd = out;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::import_pool(int fd, void **pool)
{
    if (status_t st = ensure_context())
        return st;
    // The descriptor travels as the handle's value; it stays the caller's.
    void *shared = reinterpret_cast<void *>(static_cast<uintptr_t>(fd));
    CUmemoryPool p = nullptr;
    if (status_t st = check_ipc(d_, d_.cuMemPoolImportFromShareableHandle(&p, shared,
                                                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                                "cuMemPoolImportFromShareableHandle", "import a pool from descriptor %d", fd))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data)
{
    if (status_t st = ensure_context())
        return st;
    CUmemPoolPtrExportData out{};
    if (status_t st = check_ipc(d_, d_.cuMemPoolExportPointer(&out, dptr(ptr)), "cuMemPoolExportPointer",
                                "export pointer %p", ptr))
        return st;
    std::memcpy(data, &out, sizeof out);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::import_pointer(void *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr)
{
    if (status_t st = ensure_context())
        return st;
    CUmemPoolPtrExportData in;
    std::memcpy(&in, data, sizeof in);
    CUdeviceptr p = 0;
    if (status_t st = check_ipc(d_, d_.cuMemPoolImportPointer(&p, native_pool(pool), &in), "cuMemPoolImportPointer",
                                "import a pointer into pool %p", pool))
        return st;
    *ptr = as_pointer(p);
    return GPUMEM_SUCCESS;
}

// --- gpumem's own pool ------------------------------------------------------------------

status_t CudaBackend::pool_upstream(int32_t device, bool shareable, uint64_t, std::unique_ptr<PoolUpstream> *out)
{
    if (status_t st = bind(device))
        return st;
    if (shareable)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "gpumem's own pool cannot share memory between processes on the cuda backend; use a native pool "
                    "(GPUMEM_POOL_NATIVE or AUTO, and do not disable pools with GPUMEM_DISABLE)");
    // max_size is the pool's to enforce: chunks are plain allocations.
    *out = make_device_chunk_upstream(*this, device, k_chunk_granule);
    return GPUMEM_SUCCESS;
}

status_t CudaBackend::pool_upstream_import(int, std::unique_ptr<PoolUpstream> *)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "the cuda backend imports only native pools; export the pool from a native pool (GPUMEM_POOL_NATIVE "
                "or AUTO) in the other process");
}

} // namespace gpumem::detail::cuda
