// Memory pools: the runtime's native stream-ordered pools (hipMemPool*), and
// the chunk source for gpumem's own pool where that one is used instead.
#include "backends/hip/hip_backend.hpp"

#include <cstring>

#include "base/log.hpp"

namespace gpumem::detail::hip {

static_assert(sizeof(hipMemPoolPtrExportData) == sizeof(gpumem_pool_ptr_export_data_t),
              "an exported pool pointer is copied through unchanged");

namespace {

hipMemPool_t native_pool(void *pool) { return static_cast<hipMemPool_t>(pool); }

// GPUMEM_POOL_ATTR_* as the runtime's attribute; false for an unknown one.
// The three reuse flags are ints (int32 in the API), the rest uint64_t.
bool pool_attribute(int32_t attr, int *out, bool *is_int)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *out = hipMemPoolReuseFollowEventDependencies; break;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *out = hipMemPoolReuseAllowOpportunistic; break;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *out = hipMemPoolReuseAllowInternalDependencies; break;
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: *out = hipMemPoolAttrReleaseThreshold; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: *out = hipMemPoolAttrReservedMemCurrent; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: *out = hipMemPoolAttrReservedMemHigh; break;
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: *out = hipMemPoolAttrUsedMemCurrent; break;
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH: *out = hipMemPoolAttrUsedMemHigh; break;
    default: return false;
    }
    *is_int = attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    return true;
}

status_t unknown_attribute(int32_t attr)
{
    return fail(GPUMEM_ERROR_INVALID_VALUE, "pool attribute %d is not a GPUMEM_POOL_ATTR_* value", attr);
}

// A descriptor written by an export call: the runtime stores an int (or a
// pointer-sized value) at the address given; read it from a zeroed 8 bytes.
int fd_from(uint64_t raw) { return static_cast<int>(static_cast<uint32_t>(raw)); }

} // namespace

// --- Native pools ---------------------------------------------------------------------

status_t HipBackend::default_pool(int32_t device, void **pool)
{
    if (status_t st = bind(device))
        return st;
    hipMemPool_t p = nullptr;
    if (status_t st = check(rt_, rt_.hipDeviceGetDefaultMemPool(&p, device), "hipDeviceGetDefaultMemPool",
                            "find the default pool of device %d", device))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::create(int32_t device, uint32_t handle_types, uint64_t max_size, void **pool)
{
    if (status_t st = bind(device))
        return st;
    // ROCm 6 carved hipMemPoolProps::maxSize out of bytes older runtimes
    // ignore as reserved, and no release says which runtime first honours it:
    // a limited pool is gpumem's own (AUTO), which keeps the limit exactly.
    if (max_size != 0)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "a native HIP pool cannot be given a max_size gpumem can rely on; use GPUMEM_POOL_AUTO or "
                    "GPUMEM_POOL_BUILTIN (gpumem's own pool enforces it), or max_size = 0");
    hipMemPoolProps props{};
    props.allocType = hipMemAllocationTypePinned;
    props.location = location_of(device);
    props.handleTypes = (handle_types & GPUMEM_HANDLE_POSIX_FD) ? hipMemHandleTypePosixFileDescriptor
                                                                 : hipMemHandleTypeNone;
    hipMemPool_t p = nullptr;
    if (status_t st = check(rt_, rt_.hipMemPoolCreate(&p, &props), "hipMemPoolCreate", "create a pool on device %d",
                            device))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::destroy(void *pool)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipMemPoolDestroy(native_pool(pool)), "hipMemPoolDestroy", "destroy pool %p", pool);
}

status_t HipBackend::alloc(void *pool, size_t size, void *stream, void **ptr)
{
    size_t largest = 0;
    for (const DeviceInfo &dev : devices_)
        largest = dev.total_memory > largest ? dev.total_memory : largest;
    if (size > largest)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes from pool %p: more than any device's memory (%zu bytes); allocate less",
                    size, pool, largest);
    if (status_t st = ensure_device())
        return st;
    hipError_t r = rt_.hipMallocFromPoolAsync(ptr, size, native_pool(pool), native_stream(stream));
    if (r == hipErrorOutOfMemory) {
        // The pool may hold freed memory other streams' pending work still
        // orders: let that work finish, give back what is cached, try again.
        if (status_t st = check(rt_, rt_.hipStreamSynchronize(native_stream(stream)), "hipStreamSynchronize",
                                "wait for stream %p before retrying an allocation", stream))
            return st;
        if (status_t st = check(rt_, rt_.hipMemPoolTrimTo(native_pool(pool), 0), "hipMemPoolTrimTo",
                                "release the memory pool %p caches", pool))
            return st;
        r = rt_.hipMallocFromPoolAsync(ptr, size, native_pool(pool), native_stream(stream));
    }
    return check(rt_, r, "hipMallocFromPoolAsync", "allocate %zu bytes from pool %p on stream %p", size, pool,
                 stream);
}

status_t HipBackend::free(void *ptr, void *stream)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipFreeAsync(ptr, native_stream(stream)), "hipFreeAsync", "free %p on stream %p", ptr,
                 stream);
}

status_t HipBackend::set_attribute(void *pool, int32_t attr, const void *value)
{
    int a = 0;
    bool is_int = false;
    if (!pool_attribute(attr, &a, &is_int))
        return unknown_attribute(attr);
    if (status_t st = ensure_device())
        return st;
    int as_int = 0;
    uint64_t as_u64 = 0;
    void *v = &as_u64;
    if (is_int) {
        std::memcpy(&as_int, value, sizeof as_int); // 0 or 1: the core checked
        v = &as_int;
    } else {
        std::memcpy(&as_u64, value, sizeof as_u64);
    }
    return check(rt_, rt_.hipMemPoolSetAttribute(native_pool(pool), a, v), "hipMemPoolSetAttribute",
                 "set attribute %d of pool %p", attr, pool);
}

status_t HipBackend::get_attribute(void *pool, int32_t attr, void *value)
{
    int a = 0;
    bool is_int = false;
    if (!pool_attribute(attr, &a, &is_int))
        return unknown_attribute(attr);
    if (status_t st = ensure_device())
        return st;
    int as_int = 0;
    uint64_t as_u64 = 0;
    if (status_t st = check(rt_, rt_.hipMemPoolGetAttribute(native_pool(pool), a, is_int ? static_cast<void *>(&as_int)
                                                                                        : static_cast<void *>(&as_u64)),
                            "hipMemPoolGetAttribute", "read attribute %d of pool %p", attr, pool))
        return st;
    if (is_int) {
        const int32_t out = as_int;
        std::memcpy(value, &out, sizeof out);
    } else {
        std::memcpy(value, &as_u64, sizeof as_u64);
    }
    return GPUMEM_SUCCESS;
}

status_t HipBackend::trim(void *pool, size_t min_bytes_to_keep)
{
    if (status_t st = ensure_device())
        return st;
    return check(rt_, rt_.hipMemPoolTrimTo(native_pool(pool), min_bytes_to_keep), "hipMemPoolTrimTo",
                 "trim pool %p to %zu bytes", pool, min_bytes_to_keep);
}

status_t HipBackend::set_access(void *pool, int32_t device, int32_t flags)
{
    if (status_t st = ensure_device())
        return st;
    hipMemAccessDesc desc{};
    desc.location = location_of(device);
    desc.flags = access_flags(flags);
    return check(rt_, rt_.hipMemPoolSetAccess(native_pool(pool), &desc, 1), "hipMemPoolSetAccess",
                 "set access %d for device %d on pool %p", flags, device, pool);
}

status_t HipBackend::export_pool(void *pool, int *fd)
{
    if (status_t st = ensure_device())
        return st;
    uint64_t raw = 0;
    if (status_t st = check_ipc(rt_, rt_.hipMemPoolExportToShareableHandle(&raw, native_pool(pool),
                                                                           hipMemHandleTypePosixFileDescriptor, 0),
                                "hipMemPoolExportToShareableHandle", "export pool %p", pool))
        return st;
    *fd = fd_from(raw);
    return GPUMEM_SUCCESS;
}

status_t HipBackend::import_pool(int fd, void **pool)
{
    if (status_t st = ensure_device())
        return st;
    // The descriptor travels as the handle's value; it stays the caller's.
    void *shared = reinterpret_cast<void *>(static_cast<uintptr_t>(fd));
    hipMemPool_t p = nullptr;
    if (status_t st = check_ipc(rt_, rt_.hipMemPoolImportFromShareableHandle(&p, shared,
                                                                             hipMemHandleTypePosixFileDescriptor, 0),
                                "hipMemPoolImportFromShareableHandle", "import a pool from descriptor %d", fd))
        return st;
    *pool = p;
    return GPUMEM_SUCCESS;
}

status_t HipBackend::export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data)
{
    if (status_t st = ensure_device())
        return st;
    hipMemPoolPtrExportData out{};
    if (status_t st = check_ipc(rt_, rt_.hipMemPoolExportPointer(&out, ptr), "hipMemPoolExportPointer",
                                "export pointer %p", ptr))
        return st;
    std::memcpy(data, &out, sizeof out);
    return GPUMEM_SUCCESS;
}

status_t HipBackend::import_pointer(void *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr)
{
    if (status_t st = ensure_device())
        return st;
    hipMemPoolPtrExportData in;
    std::memcpy(&in, data, sizeof in);
    return check_ipc(rt_, rt_.hipMemPoolImportPointer(ptr, native_pool(pool), &in), "hipMemPoolImportPointer",
                     "import a pointer into pool %p", pool);
}

// --- gpumem's own pool ------------------------------------------------------------------

status_t HipBackend::pool_upstream(int32_t device, bool shareable, uint64_t, std::unique_ptr<PoolUpstream> *out)
{
    if (status_t st = bind(device))
        return st;
    if (shareable)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "gpumem's own pool cannot share memory between processes on the hip backend; use a native pool "
                    "(GPUMEM_POOL_NATIVE or AUTO, and do not disable pools with GPUMEM_DISABLE)");
    // max_size is the pool's to enforce: chunks are plain allocations.
    *out = make_device_chunk_upstream(*this, device, k_chunk_granule);
    return GPUMEM_SUCCESS;
}

status_t HipBackend::pool_upstream_import(int, std::unique_ptr<PoolUpstream> *)
{
    return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                "the hip backend imports only native pools; export the pool from a native pool (GPUMEM_POOL_NATIVE "
                "or AUTO) in the other process");
}

} // namespace gpumem::detail::hip
