#include "core/pinned.hpp"

#include <unistd.h>

#include "base/cpu_reach.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp"

namespace gpumem::detail {

namespace {

size_t page_rounded(size_t n)
{
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return n > SIZE_MAX - page ? n : (n + page - 1) / page * page;
}

} // namespace

// A freed block of the same flags and page-rounded size serves the next
// allocation without page-locking memory again.
bool Pinned::from_cache(size_t size, uint32_t flags, void **ptr, void **device_ptr)
{
    if (!cache_limit_)
        return false;
    std::lock_guard<std::shared_mutex> lock(mutex_);
    auto it = blocks_.find({flags, page_rounded(size)});
    if (it == blocks_.end())
        return false;
    *ptr = it->second.ptr;
    *device_ptr = it->second.device_pointer;
    bytes_ -= it->first.second;
    leave_locked(it->second);
    blocks_.erase(it);
    return true;
}

void Pinned::enter_locked(const Block &block, size_t rounded)
{
    for (void *at : {block.ptr, block.device_pointer}) {
        const uintptr_t start = reinterpret_cast<uintptr_t>(at);
        addresses_[start] = {start + rounded, block.was};
        if (start < low_.load(std::memory_order_relaxed))
            low_.store(start, std::memory_order_relaxed);
        if (start + rounded > high_.load(std::memory_order_relaxed))
            high_.store(start + rounded, std::memory_order_relaxed);
    }
    count_.fetch_add(1, std::memory_order_release);
}

void Pinned::leave_locked(const Block &block)
{
    addresses_.erase(reinterpret_cast<uintptr_t>(block.ptr));
    addresses_.erase(reinterpret_cast<uintptr_t>(block.device_pointer));
    if (count_.fetch_sub(1, std::memory_order_release) == 1) {
        low_.store(UINTPTR_MAX, std::memory_order_relaxed);
        high_.store(0, std::memory_order_relaxed);
    }
}

// Out of pinned memory: give the cached blocks back first.
bool Pinned::flush()
{
    std::lock_guard<std::shared_mutex> lock(mutex_);
    bool any = !blocks_.empty();
    for (auto &[key, block] : blocks_) {
        leave_locked(block);
        host_.host_free(current_device(), block.ptr, key.second);
    }
    blocks_.clear();
    bytes_ = 0;
    return any;
}

status_t Pinned::release(const Allocation &a, uint32_t flags, bool finalizing)
{
    void *ptr = reinterpret_cast<void *>(a.base);
    if (!finalizing) {
        size_t rounded = page_rounded(a.size);
        std::lock_guard<std::shared_mutex> lock(mutex_);
        if (bytes_ + rounded <= cache_limit_) {
            const Block block{ptr, a.device_pointer, Graves::Grave{a.base, a.size, a.kind, a.device, 0}};
            blocks_.emplace(std::make_pair(flags, rounded), block);
            enter_locked(block, rounded);
            bytes_ += rounded;
            return GPUMEM_SUCCESS;
        }
    }
    return host_.host_free(current_device(), ptr, page_rounded(a.size));
}

status_t Pinned::unregister(const Allocation &a)
{
    return a.locked ? host_.host_unregister(current_device(), reinterpret_cast<void *>(a.base), a.size)
                    : GPUMEM_SUCCESS;
}

void Pinned::release_all() { flush(); }

bool Pinned::cached_slow(uintptr_t p, Graves::Grave *out) const
{
    std::shared_lock<std::shared_mutex> lock(mutex_); // every copy of unknown memory may ask
    auto it = addresses_.upper_bound(p);
    if (it == addresses_.begin())
        return false;
    --it;
    if (p >= it->second.first)
        return false;
    *out = it->second.second;
    // The device address of mapped memory is freed memory too: said from there.
    out->base = it->first;
    return true;
}

status_t Pinned::alloc_uncached(size_t size, uint32_t flags, void **ptr, void **device_ptr)
{
    // Portable memory: any device's context makes it, and every device reaches it.
    const int32_t device = current_device();
    // Whole pages: the cache hands a freed block to any request of the same
    // page-rounded size, and a runtime carves small requests out of shared
    // pages, exactly as large as asked.
    const size_t rounded = page_rounded(size);
    if (status_t st = host_.host_alloc(device, rounded, flags, ptr))
        return st;
    *device_ptr = *ptr;
    if (status_t st = host_.host_device_pointer(device, *ptr, device_ptr)) {
        host_.host_free(device, *ptr, rounded);
        return st;
    }
    return GPUMEM_SUCCESS;
}

status_t Pinned::alloc_mapped(size_t size, uint32_t flags, void **ptr, void **device_ptr)
{
    if (from_cache(size, flags, ptr, device_ptr))
        return GPUMEM_SUCCESS;
    status_t st = alloc_uncached(size, flags, ptr, device_ptr);
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY && flush())
        st = alloc_uncached(size, flags, ptr, device_ptr);
    return st;
}

status_t Pinned::alloc(size_t size, uint32_t flags, void **ptr)
{
    void *p = nullptr, *dptr = nullptr;
    if (status_t st = alloc_mapped(size, flags, &p, &dptr))
        return st;
    Allocation a;
    a.base = reinterpret_cast<uintptr_t>(p);
    a.size = size;
    a.kind = GPUMEM_KIND_HOST_PINNED;
    a.device = GPUMEM_DEVICE_HOST;
    a.flags = flags;
    a.device_pointer = dptr;
    pointers_.record_new(a);
    *ptr = p;
    return GPUMEM_SUCCESS;
}

status_t Pinned::free(void *ptr)
{
    return pointers_.release_record(
        ptr, [](const Allocation &a) { return a.kind == GPUMEM_KIND_HOST_PINNED; },
        "pinned host memory from gpumem_host_alloc",
        [this](const Allocation &a) { return release(a, a.flags, false); });
}

status_t Pinned::register_range(void *ptr, size_t size, uint32_t flags)
{
    if (pointers_.overlaps(ptr, size))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "range %p + %zu bytes overlaps memory that is already registered or allocated by gpumem", ptr,
                    size);
    // The vendors pin the pages and refuse a range with unmapped or
    // inaccessible pages; the emulation and the host backend copy into it
    // with the CPU.  Both ask here, so that no later copy touches a page the
    // process cannot read, or write unless registered READ_ONLY.
    const bool read_only = flags & GPUMEM_HOST_REGISTER_READ_ONLY;
    uintptr_t bad = 0;
    if (!cpu_mapped(ptr, size, !read_only, &bad))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot register %zu bytes at %p: the page at %p is not mapped %s in this process; register "
                    "memory from malloc or mmap%s",
                    size, ptr, reinterpret_cast<void *>(bad), read_only ? "readable" : "readable and writable",
                    read_only ? "" : " (memory the device only reads: GPUMEM_HOST_REGISTER_READ_ONLY)");
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    int32_t level = devices_[device].host_register_level;
    if (level == GPUMEM_SUPPORT_NONE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "host_register is %s on device %d and GPUMEM_FALLBACK=deny refuses to emulate it",
                    devices_.why_absent(feature_host_register, device), device);
    if (read_only && level == GPUMEM_SUPPORT_NATIVE && !devices_[device].caps.host_register_read_only &&
        !cpu_mapped(ptr, size, true, &bad))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot register %zu bytes at %p read-only: the page at %p is not writable, and the %s runtime "
                    "registers every page for writing; register writable memory (the flag still keeps gpumem's "
                    "copies out of it)",
                    size, ptr, reinterpret_cast<void *>(bad), backend_name(devices_.backend_id()));
    Allocation a;
    a.base = reinterpret_cast<uintptr_t>(ptr);
    a.size = size;
    a.kind = GPUMEM_KIND_HOST_REGISTERED;
    a.device = GPUMEM_DEVICE_HOST;
    a.flags = flags;
    a.device_pointer = ptr;
    if (level == GPUMEM_SUPPORT_NATIVE) {
        if (status_t st = host_.host_register(device, ptr, size, flags))
            return st;
        a.locked = true;
        void *dptr = ptr;
        if (host_.host_device_pointer(device, ptr, &dptr) == GPUMEM_SUCCESS) {
            a.device_pointer = dptr;
        } else if (ask_device_pointer_) {
            // The device address may differ from ptr here: guessing it would
            // hand kernels a wrong address.  Undo the registration.
            const std::string why = last_error_message();
            host_.host_unregister(device, ptr, size);
            return fail(GPUMEM_ERROR_BACKEND,
                        "cannot register %zu bytes at %p: its device address is unknown (%s), and this runtime may "
                        "map registered memory at another address; register page-aligned memory from malloc or mmap",
                        size, ptr, why.c_str());
        }
    } else {
        // Recorded but not page-locked: copies work, just not at pinned speed.
        a.emulated = true;
        devices_.note_fallback(feature_host_register, device, "registered memory stays pageable (recorded only)");
    }
    pointers_.record_new(a);
    return GPUMEM_SUCCESS;
}

status_t Pinned::unregister_range(void *ptr)
{
    return pointers_.release_record(
        ptr, [](const Allocation &a) { return a.kind == GPUMEM_KIND_HOST_REGISTERED; },
        "host memory registered with gpumem_host_register", [this](const Allocation &a) { return unregister(a); });
}

status_t Pinned::device_pointer(void *hptr, void **dptr)
{
    Allocation a;
    if (!pointers_.find_record(hptr, &a) ||
        !(a.kind == GPUMEM_KIND_HOST_PINNED || a.kind == GPUMEM_KIND_HOST_REGISTERED ||
          (a.kind == GPUMEM_KIND_MANAGED && a.emulated)))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "%p is not pinned or registered host memory (gpumem_host_alloc / gpumem_host_register)", hptr);
    *dptr = static_cast<char *>(a.device_pointer) + (reinterpret_cast<uintptr_t>(hptr) - a.base);
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
