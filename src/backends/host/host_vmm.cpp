// Virtual memory management on the host, for real: a physical allocation is
// a memfd; a reservation is PROT_NONE address space; mapping puts the memfd's
// pages into the reservation (inaccessible until set_access, as with CUDA);
// export hands out a duplicate of the memfd.
#include "backends/host/host_backend.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpumem::detail::host {

namespace {

// What a gpumem_mem_handle_t stands for on the host backend.  `refs` counts
// the handles (created, imported, retained) and the mappings that hold it, as
// a GPU driver counts its allocation's references; the memfd closes with the
// last (the pages of a mapping live on in the kernel regardless).
struct PhysAlloc {
    int fd;      // the memfd
    size_t size; // bytes, a multiple of the page size
    int32_t device;
    uint32_t handle_types; // GPUMEM_HANDLE_* it was created with
    bool rdma;             // created with GPUMEM_POOL_RDMA
    int refs;              // under HostBackend::vmm_mutex_
};

void drop(PhysAlloc *p)
{
    if (--p->refs == 0) {
        close(p->fd);
        delete p;
    }
}

constexpr int k_reserve_flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

int prot_of(int32_t flags)
{
    switch (flags) {
    case GPUMEM_ACCESS_NONE: return PROT_NONE;
    case GPUMEM_ACCESS_READ: return PROT_READ;
    case GPUMEM_ACCESS_READWRITE: return PROT_READ | PROT_WRITE;
    default: return -1;
    }
}

} // namespace

status_t HostBackend::vmm_granularity(int32_t, int32_t option, size_t *granularity)
{
    switch (option) {
    case GPUMEM_GRANULARITY_MINIMUM: *granularity = page_size(); return GPUMEM_SUCCESS;
    case GPUMEM_GRANULARITY_RECOMMENDED: *granularity = k_large_granule; return GPUMEM_SUCCESS;
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "unknown granularity option %d; use GPUMEM_GRANULARITY_MINIMUM or GPUMEM_GRANULARITY_RECOMMENDED",
                    option);
    }
}

namespace {
constexpr const char *k_vmm_memfd_name = "gpumem-vmm";
constexpr int k_vmm_seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// A descriptor of a physical allocation gpumem made (here or in the exporting
// process): the memfd's name says so where /proc shows it; else its seals.
bool made_for_vmm(int fd, int seals)
{
    char path[64], link[128];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n > 0) {
        link[n] = '\0';
        char want[64];
        std::snprintf(want, sizeof want, "/memfd:%s", k_vmm_memfd_name);
        size_t len = std::strlen(want);
        return std::strncmp(link, want, len) == 0 && (link[len] == '\0' || link[len] == ' ');
    }
    return (seals & k_vmm_seals) == k_vmm_seals;
}
} // namespace

// `rdma` changes nothing: a memfd's pages are ordinary host memory (DeviceCaps::rdma_any_memory).
status_t HostBackend::vmm_create(int32_t device, size_t size, uint32_t handle_types, bool rdma, void **phys)
{
    const uint64_t ceiling = memory_ceiling();
    if (size > ceiling || size > static_cast<uint64_t>(INT64_MAX))
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot create a %zu-byte physical allocation: more than this machine's memory and swap "
                    "(%llu bytes); create a smaller one",
                    size, static_cast<unsigned long long>(ceiling));
    int fd = make_memfd(k_vmm_memfd_name);
    if (fd < 0) {
        int err = errno;
        return fail(alloc_errno_status(err),
                    "cannot create a %zu-byte physical allocation: memfd_create failed: %s; "
                    "release handles or raise the open-files limit (ulimit -n)",
                    size, std::strerror(err));
    }
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        int err = errno;
        close(fd);
        return fail(alloc_errno_status(err),
                    "cannot create a %zu-byte physical allocation: ftruncate of its memfd failed: %s; "
                    "create a smaller one",
                    size, std::strerror(err));
    }
    // The size is fixed: sealed so that no importer can shrink it under a
    // mapping (which would turn accesses into SIGBUS).  Best effort.
    (void)fcntl(fd, F_ADD_SEALS, k_vmm_seals);
    PhysAlloc *p = new (std::nothrow) PhysAlloc{fd, size, device, handle_types, rdma, 1};
    if (!p) {
        close(fd);
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create a physical allocation: out of host memory");
    }
    *phys = p;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_release(int32_t, void *phys)
{
    std::lock_guard<std::mutex> lock(vmm_mutex_);
    drop(static_cast<PhysAlloc *>(phys)); // a mapping keeps it until unmapped
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_retain(int32_t, void *ptr, int32_t *owner, size_t *size, void **phys)
{
    const uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(vmm_mutex_);
    auto it = vmm_mappings_.upper_bound(at);
    if (it == vmm_mappings_.begin() || at - std::prev(it)->first >= std::prev(it)->second.size)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot retain the allocation handle of %p: no physical allocation is mapped there; pass an "
                    "address inside a mapping made with gpumem_mem_map",
                    ptr);
    PhysAlloc *p = static_cast<PhysAlloc *>(std::prev(it)->second.phys);
    ++p->refs;
    *owner = p->device;
    *size = p->size;
    *phys = p;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_properties(int32_t, void *phys, int32_t *owner, uint32_t *handle_types, uint32_t *flags)
{
    const PhysAlloc *p = static_cast<const PhysAlloc *>(phys);
    *owner = p->device;
    *handle_types = p->handle_types;
    *flags = p->rdma ? GPUMEM_POOL_RDMA : 0;
    return GPUMEM_SUCCESS;
}

namespace {

// PROT_NONE address space at exactly `at`, or false (taken, or a kernel
// before 4.17 that takes MAP_FIXED_NOREPLACE as a mere hint).
bool reserve_exactly(uintptr_t at, size_t size)
{
    void *want = reinterpret_cast<void *>(at);
#ifdef MAP_FIXED_NOREPLACE
    void *p = mmap(want, size, PROT_NONE, k_reserve_flags | MAP_FIXED_NOREPLACE, -1, 0);
#else
    void *p = mmap(want, size, PROT_NONE, k_reserve_flags, -1, 0);
#endif
    if (p == want)
        return true;
    if (p != MAP_FAILED)
        munmap(p, size);
    return false;
}

} // namespace

// The hint is honoured where that address space is free, as by the GPU
// runtimes; else the reservation lies anywhere (the core's VMM service
// decides what to do about that).
status_t HostBackend::vmm_reserve(int32_t, size_t size, size_t alignment, void *hint, void **ptr)
{
    const size_t page = page_size();
    size_t align = alignment > page ? alignment : page;
    if ((align & (align - 1)) != 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot reserve with alignment %zu: it must be a power of two",
                    alignment);
    const uintptr_t want = reinterpret_cast<uintptr_t>(hint);
    uintptr_t want_end;
    if (hint && want % align == 0 && !__builtin_add_overflow(want, size, &want_end) && reserve_exactly(want, size)) {
        *ptr = hint;
        return GPUMEM_SUCCESS;
    }
    void *p = map_aligned(size, align, PROT_NONE, k_reserve_flags);
    if (p == MAP_FAILED) {
        int err = errno;
        // EINVAL for a length the kernel cannot place (valgrind's answer to
        // one beyond its address space) is a size too large: the core's
        // growable ranges then reserve less.
        return fail(err == EINVAL && size > 0 ? GPUMEM_ERROR_OUT_OF_MEMORY : alloc_errno_status(err),
                    "cannot reserve %zu bytes of address space (alignment %zu): mmap failed: %s; reserve less",
                    size, align, std::strerror(err));
    }
    *ptr = p;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_free(int32_t, void *ptr, size_t size)
{
    if (munmap(ptr, size) != 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_BACKEND, "cannot free the reservation at %p (%zu bytes): munmap failed: %s", ptr,
                    size, std::strerror(err));
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_map(int32_t, void *ptr, size_t size, size_t offset, void *phys)
{
    PhysAlloc *p = static_cast<PhysAlloc *>(phys);
    if (offset > p->size || size > p->size - offset)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot map %zu bytes at offset %zu of a %zu-byte physical allocation: the range lies outside "
                    "it",
                    size, offset, p->size);
    // Inaccessible until vmm_set_access, as with cuMemMap/cuMemSetAccess.
    void *m = mmap(ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd, static_cast<off_t>(offset));
    if (m == MAP_FAILED) {
        int err = errno;
        return fail(alloc_errno_status(err),
                    "cannot map %zu bytes at %p: mmap of the physical allocation failed: %s%s", size, ptr,
                    std::strerror(err),
                    err == ENOMEM ? "; too many mappings (vm.max_map_count) or out of memory: map larger pieces" : "");
    }
    std::lock_guard<std::mutex> lock(vmm_mutex_);
    vmm_mappings_[reinterpret_cast<uintptr_t>(ptr)] = VmmMapping{size, p};
    ++p->refs;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_unmap(int32_t, void *ptr, size_t size)
{
    // Put the inaccessible reservation back in one step (no window in which
    // another thread's mmap could take the range).
    void *m = mmap(ptr, size, PROT_NONE, k_reserve_flags | MAP_FIXED, -1, 0);
    if (m == MAP_FAILED) {
        int err = errno;
        return fail(GPUMEM_ERROR_BACKEND, "cannot unmap %zu bytes at %p: mmap of the reservation failed: %s", size,
                    ptr, std::strerror(err));
    }
    // Every mapping of the range lets go of its allocation.
    const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(vmm_mutex_);
    for (auto it = vmm_mappings_.lower_bound(lo); it != vmm_mappings_.end() && it->first - lo < size;) {
        drop(static_cast<PhysAlloc *>(it->second.phys));
        it = vmm_mappings_.erase(it);
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_set_access(int32_t, void *ptr, size_t size, int32_t, int32_t flags)
{
    const int prot = prot_of(flags);
    if (prot < 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "unknown access flags %d; use GPUMEM_ACCESS_NONE, GPUMEM_ACCESS_READ or GPUMEM_ACCESS_READWRITE",
                    flags);
    if (mprotect(ptr, size, prot) != 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_BACKEND, "cannot set access %d on %zu bytes at %p: mprotect failed: %s", flags,
                    size, ptr, std::strerror(err));
    }
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_export(int32_t, void *phys, int32_t handle_type, int *fd)
{
    if (handle_type != GPUMEM_HANDLE_POSIX_FD)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot export handle type %d: the host backend exports GPUMEM_HANDLE_POSIX_FD only", handle_type);
    int d = fcntl(static_cast<PhysAlloc *>(phys)->fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot export the physical allocation: fcntl(F_DUPFD_CLOEXEC) failed: %s; "
                    "close descriptors or raise the open-files limit (ulimit -n)",
                    std::strerror(err));
    }
    *fd = d;
    return GPUMEM_SUCCESS;
}

status_t HostBackend::vmm_import(int32_t, int fd, int32_t handle_type, int32_t *owner, size_t *size,
                                 void **phys)
{
    if (handle_type != GPUMEM_HANDLE_POSIX_FD)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "cannot import handle type %d: the host backend imports GPUMEM_HANDLE_POSIX_FD only", handle_type);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import descriptor %d: fstat failed: %s; pass a descriptor received with "
                    "gpumem_ipc_recv_fd",
                    fd, std::strerror(err));
    }
    // Only memory files (memfd/shmem) answer F_GET_SEALS.
    const int seals = S_ISREG(st.st_mode) ? fcntl(fd, F_GET_SEALS) : -1;
    if (seals < 0 || st.st_size <= 0 || static_cast<uint64_t>(st.st_size) % page_size() != 0)
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import descriptor %d: it is not a gpumem memory handle (not a sized memory file); pass "
                    "what gpumem_mem_export_to_shareable_handle gave the exporting process",
                    fd);
    // A pool's memfd can grow (ours for VMM are sealed): look for its header.
    uint64_t magic = 0;
    ssize_t n = 0;
    if (!(seals & F_SEAL_GROW)) {
        do {
            n = pread(fd, &magic, sizeof magic, 0);
        } while (n < 0 && errno == EINTR);
    }
    if (n == static_cast<ssize_t>(sizeof magic) && magic == k_pool_magic)
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import descriptor %d as a memory handle: it is a memory pool's; import it with "
                    "gpumem_pool_import_from_shareable_handle",
                    fd);
    if (!made_for_vmm(fd, seals))
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import descriptor %d: it is a memory file gpumem did not export (no gpumem VMM memfd); "
                    "pass what gpumem_mem_export_to_shareable_handle gave the exporting process",
                    fd);
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import descriptor %d: fcntl(F_DUPFD_CLOEXEC) failed: %s; close descriptors or raise "
                    "the open-files limit (ulimit -n)",
                    fd, std::strerror(err));
    }
    PhysAlloc *p = new (std::nothrow) PhysAlloc{d, static_cast<size_t>(st.st_size), 0, GPUMEM_HANDLE_POSIX_FD, false, 1};
    if (!p) {
        close(d);
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot import a physical allocation: out of host memory");
    }
    *owner = 0;
    *size = p->size;
    *phys = p;
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::host
