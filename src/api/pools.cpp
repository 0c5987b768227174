// Stream-ordered allocation, memory pools, pool sharing and framework hooks.
#include <climits>
#include <cstddef>
#include <new>
#include <string>

#include "api/entry.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT gpumem_status_t gpumem_malloc_async(void **ptr, size_t size, gpumem_stream_t stream)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_malloc_async");
    return entry("gpumem_malloc_async", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        if (size == 0)
            return GPUMEM_SUCCESS;
        const int32_t device = current_device();
        return oom::note(rt.pools.allocate(device, size, stream, ptr), device, GPUMEM_KIND_STREAM_ORDERED, size,
                         nullptr, stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_free_async(void *ptr, gpumem_stream_t stream)
{
    return entry("gpumem_free_async", [&](Runtime &rt) { return rt.pools.free_async(ptr, stream); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_malloc_from_pool_async(void **ptr, size_t size, gpumem_pool_t pool,
                                                            gpumem_stream_t stream)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_malloc_from_pool_async");
    return entry("gpumem_malloc_from_pool_async", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer to receive the allocation");
        *ptr = nullptr;
        // The report takes the device from the pool's books.
        return oom::note_current(rt.pools.allocate_from(pool, size, stream, ptr), GPUMEM_KIND_STREAM_ORDERED, size, pool,
                                 stream);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_create(gpumem_pool_t *pool, const gpumem_pool_props_t *props)
{
    return entry("gpumem_pool_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        gpumem_pool_props_t p{};
        p.size = sizeof p;
        p.device = current_device();
        p.numa_node = -1;
        if (props) {
            GPUMEM_REQUIRE_STRUCT(props, gpumem_pool_props_t);
            p = read_struct(props);
            // A 0.1 caller's struct ends before numa_node: "any node".
            if (props->size < offsetof(gpumem_pool_props_t, numa_node) + sizeof p.numa_node)
                p.numa_node = -1;
        }
        p.reserved1 = 0; // a 0.2 or 0.3 caller's padding
        GPUMEM_REQUIRE(!(p.flags & ~static_cast<uint32_t>(GPUMEM_POOL_RDMA)),
                       "flags 0x%x has unknown bits; use 0 or GPUMEM_POOL_RDMA (and initialise the struct with "
                       "GPUMEM_POOL_PROPS_INIT)",
                       p.flags);
        if (status_t st = check_device(rt, p.device))
            return st;
        GPUMEM_REQUIRE(!(p.handle_types & ~static_cast<uint32_t>(GPUMEM_HANDLE_POSIX_FD | GPUMEM_HANDLE_FABRIC)),
                       "handle_types 0x%x has unknown bits; use GPUMEM_HANDLE_NONE, GPUMEM_HANDLE_POSIX_FD or "
                       "GPUMEM_HANDLE_FABRIC",
                       p.handle_types);
        GPUMEM_REQUIRE(p.implementation >= GPUMEM_POOL_AUTO && p.implementation <= GPUMEM_POOL_BUILTIN,
                       "implementation %d is not GPUMEM_POOL_AUTO, _NATIVE or _BUILTIN", p.implementation);
        GPUMEM_REQUIRE(p.memory >= GPUMEM_POOL_MEMORY_DEVICE && p.memory <= GPUMEM_POOL_MEMORY_MANAGED,
                       "memory %d is not GPUMEM_POOL_MEMORY_DEVICE, _PINNED or _MANAGED", p.memory);
        GPUMEM_REQUIRE(p.numa_node >= -1, "numa_node %d is not a host NUMA node; use -1 for any node", p.numa_node);
        GPUMEM_REQUIRE(p.numa_node == -1 || p.memory == GPUMEM_POOL_MEMORY_PINNED,
                       "numa_node %d is for pools of pinned host memory only; leave it -1 (GPUMEM_POOL_PROPS_INIT) "
                       "for a pool of %s memory",
                       p.numa_node, p.memory == GPUMEM_POOL_MEMORY_DEVICE ? "device" : "managed");
        uint64_t handle = 0;
        if (status_t st = rt.pools.create(p, false, &handle))
            return st;
        *pool = handle_from_bits<gpumem_pool_t>(handle);
        return GPUMEM_SUCCESS;
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_destroy(gpumem_pool_t pool)
{
    return entry("gpumem_pool_destroy", [&](Runtime &rt) { return rt.pools.destroy(pool); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_default_pool(gpumem_pool_t *pool, int32_t device)
{
    return entry("gpumem_device_get_default_pool", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        return rt.pools.default_pool(device, pool);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_get_default_pool_for(gpumem_pool_t *pool, int32_t memory, int32_t location)
{
    return entry("gpumem_get_default_pool_for", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        GPUMEM_REQUIRE(memory >= GPUMEM_POOL_MEMORY_DEVICE && memory <= GPUMEM_POOL_MEMORY_MANAGED,
                       "memory %d is not GPUMEM_POOL_MEMORY_DEVICE, _PINNED or _MANAGED", memory);
        GPUMEM_REQUIRE(memory != GPUMEM_POOL_MEMORY_PINNED || location >= -1,
                       "location %d is not a host NUMA node; a pinned pool's location is a NUMA node, or -1 for any",
                       location);
        return rt.pools.default_pool_for(memory, location, pool);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_set_pool(int32_t device, gpumem_pool_t pool)
{
    return entry("gpumem_device_set_pool", [&](Runtime &rt) { return rt.pools.set_current(device, pool); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_device_get_pool(gpumem_pool_t *pool, int32_t device)
{
    return entry("gpumem_device_get_pool", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        return rt.pools.current_pool(device, pool);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_set_attribute(gpumem_pool_t pool, int32_t attr, const void *value)
{
    return entry("gpumem_pool_set_attribute", [&](Runtime &rt) {
        GPUMEM_REQUIRE(attr >= GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES && attr <= GPUMEM_POOL_ATTR_USED_MEM_HIGH,
                       "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
        GPUMEM_REQUIRE(value, "value is NULL: pass the address of the attribute's new value");
        return rt.pools.set_attribute(pool, attr, value);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_get_attribute(gpumem_pool_t pool, int32_t attr, void *value)
{
    return entry("gpumem_pool_get_attribute", [&](Runtime &rt) {
        GPUMEM_REQUIRE(attr >= GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES && attr <= GPUMEM_POOL_ATTR_USED_MEM_HIGH,
                       "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
        GPUMEM_REQUIRE(value, "value is NULL: pass the address to receive the attribute's value");
        return rt.pools.get_attribute(pool, attr, value);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_trim_to(gpumem_pool_t pool, size_t min_bytes_to_keep)
{
    return entry("gpumem_pool_trim_to", [&](Runtime &rt) { return rt.pools.trim_to(pool, min_bytes_to_keep); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_set_access(gpumem_pool_t pool, const gpumem_access_desc_t *descs,
                                                     size_t count)
{
    return entry("gpumem_pool_set_access", [&](Runtime &rt) { return rt.pools.set_access(pool, descs, count); });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_get_access(int32_t *flags, gpumem_pool_t pool, int32_t device)
{
    return entry("gpumem_pool_get_access", [&](Runtime &rt) {
        GPUMEM_REQUIRE(flags, "flags is NULL: pass the address of an int32_t");
        return rt.pools.get_access(flags, pool, device);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_export_to_shareable_handle(int32_t *fd, gpumem_pool_t pool,
                                                                     int32_t handle_type)
{
    return entry("gpumem_pool_export_to_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(fd, "fd is NULL: pass the address of an int32_t");
        return rt.pools.export_fd(pool, handle_type, fd);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_import_from_shareable_handle(gpumem_pool_t *pool, int32_t fd,
                                                                       int32_t handle_type)
{
    return entry("gpumem_pool_import_from_shareable_handle", [&](Runtime &rt) {
        GPUMEM_REQUIRE(pool, "pool is NULL: pass the address of a gpumem_pool_t");
        GPUMEM_REQUIRE(fd >= 0, "fd %d is not a file descriptor", fd);
        return rt.pools.import_fd(fd, handle_type, pool);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_export_pointer(gpumem_pool_ptr_export_data_t *data, void *ptr)
{
    return entry("gpumem_pool_export_pointer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(data, "data is NULL: pass the address of a gpumem_pool_ptr_export_data_t");
        GPUMEM_REQUIRE(ptr, "ptr is NULL");
        return rt.pools.export_pointer(ptr, data);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_pool_import_pointer(void **ptr, gpumem_pool_t pool,
                                                         const gpumem_pool_ptr_export_data_t *data)
{
    return entry("gpumem_pool_import_pointer", [&](Runtime &rt) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer");
        GPUMEM_REQUIRE(data, "data is NULL: pass the export data from gpumem_pool_export_pointer");
        return rt.pools.import_pointer(pool, data, ptr);
    });
}

// Framework hooks: PyTorch passes its native stream; each one is wrapped once.
namespace {

// The hook's allocation; `*vendor` names the runtime ("CUDA", "HIP") for the
// message a framework shows.
status_t pluggable_allocate(ssize_t size, int device, void *stream, void **ptr, const char **vendor)
{
    return entry("gpumem_pluggable_malloc", [&](Runtime &rt) {
        GPUMEM_REQUIRE(size >= 0, "size %zd is negative", size);
        if (status_t st = rt.devices.check(device))
            return st;
        *vendor = rt.devices[device].caps.vendor_name;
        if (size == 0)
            return GPUMEM_SUCCESS;
        gpumem_stream_t s = nullptr;
        if (status_t st = rt.streams.wrap_once(stream, device, &s))
            return st;
        return oom::note(rt.pools.allocate(device, static_cast<size_t>(size), s, ptr, Pools::Caller::framework_hook),
                         device, GPUMEM_KIND_STREAM_ORDERED, static_cast<uint64_t>(size), nullptr, s);
    });
}

// What a framework's allocation failure throws: a std::bad_alloc (an
// allocation failed) whose text is gpumem's message, verdict included.
class PluggableAllocationFailed : public std::bad_alloc {
public:
    explicit PluggableAllocationFailed(std::string text) : text_(std::move(text)) {}
    const char *what() const noexcept override { return text_.c_str(); }

private:
    std::string text_;
};

} // namespace

GPUMEM_EXPORT void *gpumem_pluggable_malloc(ssize_t size, int device, void *stream)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_pluggable_malloc");
    void *ptr = nullptr;
    const char *vendor = "GPU";
    status_t st = pluggable_allocate(size, device, stream, &ptr, &vendor);
    // The framework sees only NULL and prints its own text, which cannot carry
    // gpumem's: the reason goes to the log (stderr, shown by default) just before it.
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY) {
        gpumem_oom_report_t report{};
        oom::last(&report);
        log(LogLevel::warn, "gpumem_pluggable_malloc: out of memory for %zd bytes on device %d; %s", size, device,
            report.verdict);
    } else if (st != GPUMEM_SUCCESS) {
        log(LogLevel::warn, "%s: %s (the framework sees NULL)", status_name(st), last_error_message());
    }
    return st == GPUMEM_SUCCESS ? ptr : nullptr;
}

// PyTorch's CUDAPluggableAllocator does not check the pointer it is given: a
// NULL becomes a tensor with no memory, and the first kernel that touches it
// faults.  Its allocator contract is to throw, as its own allocator does, and
// its Python bindings turn any std::exception into a RuntimeError with the
// exception's text: so this hook throws.  The text starts as PyTorch's own
// out-of-memory message does ("CUDA out of memory."), which tools that look
// for it (batch-size finders) recognise, and ends with gpumem's message and
// verdict.
GPUMEM_EXPORT void *gpumem_pluggable_malloc_or_throw(ssize_t size, int device, void *stream)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_pluggable_malloc_or_throw");
    void *ptr = nullptr;
    const char *vendor = "GPU";
    const status_t st = pluggable_allocate(size, device, stream, &ptr, &vendor);
    if (st == GPUMEM_SUCCESS)
        return ptr;
    std::string text = st == GPUMEM_ERROR_OUT_OF_MEMORY ? std::string(vendor) + " out of memory. " : std::string();
    text += "gpumem could not allocate ";
    text += std::to_string(size);
    text += " bytes on device ";
    text += std::to_string(device);
    text += ": ";
    text += status_name(st);
    text += ": ";
    text += last_error_message();
    throw PluggableAllocationFailed(std::move(text));
}

GPUMEM_EXPORT void *gpumem_hook_malloc(void *stream, size_t size, int device)
{
    if (size > static_cast<size_t>(SSIZE_MAX)) {
        entry("gpumem_hook_malloc", [&](Runtime &) -> status_t {
            GPUMEM_REQUIRE(false, "size %zu is too large", size);
        });
        return nullptr;
    }
    return gpumem_pluggable_malloc(static_cast<ssize_t>(size), device, stream);
}

GPUMEM_EXPORT void gpumem_hook_free(void *stream, void *ptr, int device) { gpumem_pluggable_free(ptr, 0, device, stream); }

GPUMEM_EXPORT void gpumem_pluggable_free(void *ptr, ssize_t, int device, void *stream)
{
    const status_t st = entry("gpumem_pluggable_free", [&](Runtime &rt) {
        gpumem_stream_t s = nullptr;
        if (status_t st = rt.streams.wrap_once(stream, device, &s))
            return st;
        return rt.pools.free_async(ptr, s, Pools::Caller::framework_hook);
    });
    // No status reaches the framework: a free it got wrong (a pointer gpumem never gave, a
    // double free) is a bug in the caller, said where the user sees it.
    if (st != GPUMEM_SUCCESS && ptr)
        log(LogLevel::warn, "%s: %s (the framework's free returns nothing)", status_name(st), last_error_message());
}
