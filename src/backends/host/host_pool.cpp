// Chunk sources for gpumem's own pool on the host backend.
//
// Not shareable: anonymous mappings, one per chunk.
// Shareable (POSIX fd): ONE memfd and ONE reserved range per pool, so that a
// single descriptor exports the whole pool and a pointer travels as an offset.
// The memfd's first granule holds a header; chunks follow at granule-aligned
// offsets.  The whole capacity is mapped from the start (address space only):
// pages past the file's end are touched only after ftruncate has grown it.
#include "backends/host/host_backend.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.hpp"

namespace gpumem::detail::host {

namespace {

constexpr uint32_t k_pool_version = 1;
// Address space reserved for a shareable pool without max_size, unless the
// machine's memory is larger.  Only address space: nothing is committed.
constexpr uint64_t k_default_capacity = uint64_t{64} << 30;
// The least of it taken where the process may map less (SharedUpstream::create).
constexpr uint64_t k_least_capacity = uint64_t{64} << 20;

// The first bytes of a shareable pool's memfd.  Same machine on both ends,
// so native byte order; the version guards against layout changes.
struct PoolHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size; // sizeof(PoolHeader) of the writer
    uint64_t capacity;    // bytes of address space, header granule included
    uint64_t pool_id;
    uint64_t granularity; // chunk alignment; the header occupies the first one
    uint64_t reserved[3];
};
static_assert(sizeof(PoolHeader) == 64, "the pool header layout is part of the IPC format");

// Paged: a chunk is a private anonymous mapping (address space, backed by the
// kernel on first touch), and the pages under free holes go back with
// MADV_DONTNEED, as a GPU pool unmaps its physical pages.
class AnonUpstream final : public PoolUpstream {
public:
    // The kernel's pages, finer than the VMM granularity the core offers.
    explicit AnonUpstream(bool paged) : page_(paged ? host::page_size() : 0) {}
    size_t granularity() const override { return k_large_granule; }
    size_t page_size() const override { return page_; }
    status_t back(void *, size_t) override { return GPUMEM_SUCCESS; } // the kernel backs pages on first touch
    void unback(void *ptr, size_t size) override
    {
        if (madvise(ptr, size, MADV_DONTNEED) != 0) {
            int err = errno;
            log(LogLevel::warn, "pool pages at %p (%zu bytes) not given back: madvise failed: %s", ptr, size,
                std::strerror(err));
        }
    }

    status_t allocate(size_t size, void **ptr) override
    {
        const uint64_t ceiling = memory_ceiling();
        if (size > ceiling)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "cannot grow the pool by %zu bytes: more than this machine's memory and swap (%llu bytes); "
                        "allocate less",
                        size, static_cast<unsigned long long>(ceiling));
        // Granule-aligned so that the kernel can back chunks with huge pages.
        void *p = map_aligned(size, k_large_granule, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        if (p == MAP_FAILED) {
            int err = errno;
            return fail(alloc_errno_status(err), "cannot grow the pool by %zu bytes: mmap failed: %s; free memory "
                                                 "or allocate less",
                        size, std::strerror(err));
        }
        *ptr = p;
        return GPUMEM_SUCCESS;
    }

    void deallocate(void *ptr, size_t size) override
    {
        if (retire_mapping(ptr, size))
            return;
        if (munmap(ptr, size) != 0) {
            int err = errno;
            log(LogLevel::warn, "pool chunk at %p (%zu bytes) not returned: munmap failed: %s", ptr, size,
                std::strerror(err));
        }
    }

private:
    size_t page_;
};

// Strict mode: chunks the CPU cannot touch (host_strict.hpp).  The pool
// hands out blocks inside them; gpumem's copies reach them through the alias.
class StrictUpstream final : public PoolUpstream {
public:
    explicit StrictUpstream(StrictMode &strict) : strict_(strict) {}

    size_t granularity() const override { return k_large_granule; }

    status_t allocate(size_t size, void **ptr) override
    {
        const uint64_t ceiling = memory_ceiling();
        if (size > ceiling)
            return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                        "cannot grow the pool by %zu bytes: more than this machine's memory and swap (%llu bytes); "
                        "allocate less",
                        size, static_cast<unsigned long long>(ceiling));
        return strict_.views.map(size, size, k_large_granule, "pool chunk of stream-ordered memory", ptr);
    }

    void deallocate(void *ptr, size_t size) override
    {
        // Queued work may still reach the chunk through its alias.
        strict_.work.run_all();
        if (!strict_.views.unmap(ptr))
            log(LogLevel::warn, "pool chunk at %p (%zu bytes) not returned: strict mode has no view there", ptr, size);
    }

private:
    StrictMode &strict_;
};

// A shareable pool's memory: the creating process (owner) carves chunks out
// of it; an importing process only maps it.
class SharedUpstream final : public PoolUpstream {
public:
    ~SharedUpstream() override
    {
        if (strict_)
            strict_->work.run_all(); // queued work may still write here
        if (base_)
            munmap(base_, capacity_);
        if (fd_ >= 0)
            close(fd_);
    }

    // The creating side: a new memfd with its header, mapped whole.
    // `strict`: the backend's strict mode, or nullptr (its queued work runs
    // before memory goes away).
    static status_t create(uint64_t max_size, StrictMode *strict, std::unique_ptr<PoolUpstream> *out);
    // The importing side: map the pool behind `fd` (a duplicate is kept).
    static status_t open(int fd, StrictMode *strict, std::unique_ptr<PoolUpstream> *out);

    size_t granularity() const override { return granule_; }
    bool can_allocate() const override { return owner_; }
    bool shareable() const override { return true; }

    status_t allocate(size_t size, void **ptr) override;
    void deallocate(void *ptr, size_t size) override;
    status_t export_fd(int *fd) override;
    status_t offset_of(const void *ptr, uint64_t *offset, uint64_t *pool_id) const override;
    status_t address_of(uint64_t offset, uint64_t size, uint64_t pool_id, void **ptr) override;

private:
    SharedUpstream() = default;
    // Reserve `capacity_` bytes aligned to `granule_` and map fd_ over them.
    status_t map_whole(const char *what);

    StrictMode *strict_ = nullptr;
    int fd_ = -1;
    char *base_ = nullptr;
    size_t capacity_ = 0; // bytes mapped at base_, header granule included
    size_t granule_ = k_large_granule;
    uint64_t pool_id_ = 0;
    bool owner_ = false;

    // Owner only: carving state.
    std::mutex mutex_;
    size_t bump_ = 0;      // offsets at and past this were never handed out
    size_t file_size_ = 0; // the memfd's current size
    size_t live_ = 0;      // bytes in chunks handed out and not returned
    std::map<size_t, size_t> holes_; // returned ranges below bump_: offset -> size (coalesced)
};

status_t SharedUpstream::map_whole(const char *what)
{
    void *res = map_aligned(capacity_, granule_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (res == MAP_FAILED) {
        int err = errno;
        // EINVAL: a length the kernel cannot place (valgrind's answer to one
        // beyond its address space), so too large, as ENOMEM says.
        return fail(err == EINVAL ? GPUMEM_ERROR_OUT_OF_MEMORY : alloc_errno_status(err),
                    "cannot %s: reserving %zu bytes of address space failed: mmap: %s; %s", what, capacity_,
                    std::strerror(err),
                    owner_ ? "create the pool with a smaller max_size" : "free address space in this process");
    }
    void *m = mmap(res, capacity_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd_, 0);
    if (m == MAP_FAILED) {
        int err = errno;
        munmap(res, capacity_);
        return fail(owner_ ? alloc_errno_status(err) : GPUMEM_ERROR_IPC,
                    "cannot %s: mmap of the pool's memory (%zu bytes) failed: %s", what, capacity_,
                    std::strerror(err));
    }
    base_ = static_cast<char *>(m);
    // The header is read-only in the mapping, safe from stray writes.
    (void)mprotect(base_, granule_, PROT_READ);
    return GPUMEM_SUCCESS;
}

status_t SharedUpstream::create(uint64_t max_size, StrictMode *strict, std::unique_ptr<PoolUpstream> *out)
{
    std::unique_ptr<SharedUpstream> up(new (std::nothrow) SharedUpstream);
    if (!up)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create a shareable pool: out of host memory");
    up->strict_ = strict;
    up->owner_ = true;
    const size_t granule = up->granule_;

    uint64_t data = max_size;
    if (data == 0) // as much as the machine could ever back, within reason
        data = std::max(k_default_capacity, std::min(memory_ceiling(), uint64_t{1} << 46));
    size_t data_rounded;
    if (data > SIZE_MAX || !round_up(static_cast<size_t>(data), granule, &data_rounded) ||
        data_rounded > (size_t{1} << 62) - granule)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot create a shareable pool of max_size %llu bytes: more address space than exists; use a "
                    "smaller max_size (0 = as much as the machine's memory)",
                    static_cast<unsigned long long>(max_size));
    up->capacity_ = granule + data_rounded;
    const bool shrinkable = max_size == 0;

    up->fd_ = make_memfd("gpumem-pool");
    if (up->fd_ < 0) {
        int err = errno;
        return fail(alloc_errno_status(err),
                    "cannot create a shareable pool: memfd_create failed: %s; close descriptors or raise the "
                    "open-files limit (ulimit -n)",
                    std::strerror(err));
    }
    if (ftruncate(up->fd_, static_cast<off_t>(granule)) != 0) {
        int err = errno;
        return fail(alloc_errno_status(err), "cannot create a shareable pool: ftruncate of its memfd failed: %s",
                    std::strerror(err));
    }
    // The pool only grows (freed chunks are punched out, not cut off), so no
    // importer may shrink it under the owner's mappings.  Best effort.
    (void)fcntl(up->fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL);

    // Without max_size the capacity is only a bound, and a process may be
    // allowed far less address space (ulimit -v, a container's limit,
    // valgrind): it halves until the mapping fits, and half of that is kept
    // so that the rest of the program has as much again; no less than
    // k_least_capacity.
    status_t st = up->map_whole("create a shareable pool");
    if (st == GPUMEM_ERROR_OUT_OF_MEMORY && shrinkable) {
        const std::string why = last_error_message();
        const auto halve = [granule](size_t data) {
            return std::max<size_t>(data / 2 / granule * granule, k_least_capacity);
        };
        size_t data = data_rounded;
        do {
            data = halve(data);
            up->capacity_ = granule + data;
            st = up->map_whole("create a shareable pool");
        } while (st == GPUMEM_ERROR_OUT_OF_MEMORY && data > k_least_capacity);
        if (st == GPUMEM_SUCCESS && halve(data) < data) {
            munmap(up->base_, up->capacity_);
            up->base_ = nullptr;
            up->capacity_ = granule + halve(data);
            if ((st = up->map_whole("create a shareable pool")) != GPUMEM_SUCCESS) {
                up->capacity_ = granule + data; // another thread took the room meanwhile
                st = up->map_whole("create a shareable pool");
            }
        }
        if (st == GPUMEM_ERROR_OUT_OF_MEMORY)
            return fail(st,
                        "cannot create a shareable pool: neither the %zu bytes of address space it reserves without "
                        "max_size nor %llu bytes can be reserved (%s); free address space or raise the process's "
                        "limit on it (ulimit -v)",
                        granule + data_rounded, static_cast<unsigned long long>(granule + k_least_capacity),
                        why.c_str());
        if (st == GPUMEM_SUCCESS)
            log(LogLevel::info,
                "shareable pool: reserved %zu bytes of address space, not %zu (%s); the pool holds no more; set "
                "max_size to choose",
                up->capacity_, granule + data_rounded, why.c_str());
    }
    if (st != GPUMEM_SUCCESS)
        return st;

    up->pool_id_ = random_id();
    PoolHeader h{};
    h.magic = k_pool_magic;
    h.version = k_pool_version;
    h.header_size = sizeof(PoolHeader);
    h.capacity = up->capacity_;
    h.pool_id = up->pool_id_;
    h.granularity = granule;
    ssize_t n;
    do {
        n = pwrite(up->fd_, &h, sizeof h, 0);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof h)) {
        int err = n < 0 ? errno : EIO;
        return fail(alloc_errno_status(err), "cannot create a shareable pool: writing its header failed: %s",
                    std::strerror(err));
    }

    up->bump_ = granule;
    up->file_size_ = granule;
    *out = std::move(up);
    return GPUMEM_SUCCESS;
}

status_t SharedUpstream::open(int fd, StrictMode *strict, std::unique_ptr<PoolUpstream> *out)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import a pool from descriptor %d: fstat failed: %s; pass a descriptor received with "
                    "gpumem_ipc_recv_fd",
                    fd, std::strerror(err));
    }
    PoolHeader h{};
    ssize_t n = -1;
    if (S_ISREG(st.st_mode) && st.st_size >= static_cast<off_t>(sizeof h)) {
        do {
            n = pread(fd, &h, sizeof h, 0);
        } while (n < 0 && errno == EINTR);
    }
    if (n != static_cast<ssize_t>(sizeof h) || h.magic != k_pool_magic)
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import a pool from descriptor %d: not a gpumem pool descriptor; pass what "
                    "gpumem_pool_export_to_shareable_handle gave the exporting process",
                    fd);
    if (h.version != k_pool_version || h.header_size != sizeof h)
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import a pool from descriptor %d: its layout version %u differs from this library's "
                    "%u; use the same gpumem version in both processes",
                    fd, h.version, k_pool_version);
    const uint64_t g = h.granularity;
    if (g < host::page_size() || (g & (g - 1)) != 0 || g > (uint64_t{1} << 30) || h.capacity <= g ||
        h.capacity % g != 0 || h.capacity > (uint64_t{1} << 62))
        return fail(GPUMEM_ERROR_IPC, "cannot import a pool from descriptor %d: its header is damaged", fd);

    std::unique_ptr<SharedUpstream> up(new (std::nothrow) SharedUpstream);
    if (!up)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot import a pool: out of host memory");
    up->owner_ = false;
    up->strict_ = strict;
    up->granule_ = static_cast<size_t>(g);
    up->capacity_ = static_cast<size_t>(h.capacity);
    up->pool_id_ = h.pool_id;
    up->fd_ = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (up->fd_ < 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot import a pool from descriptor %d: fcntl(F_DUPFD_CLOEXEC) failed: %s; close "
                    "descriptors or raise the open-files limit (ulimit -n)",
                    fd, std::strerror(err));
    }
    status_t s = up->map_whole("import a pool");
    if (s != GPUMEM_SUCCESS)
        return s;
    *out = std::move(up);
    return GPUMEM_SUCCESS;
}

status_t SharedUpstream::allocate(size_t size, void **ptr)
{
    if (!owner_)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "an imported pool cannot allocate; allocate in the process that created the pool and export "
                    "the pointer");
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t ceiling = memory_ceiling();
    if (size > ceiling || live_ > ceiling - size)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot grow the pool by %zu bytes: with the %zu bytes it holds, more than this machine's "
                    "memory and swap (%llu bytes); free memory or allocate less",
                    size, live_, static_cast<unsigned long long>(ceiling));

    // Reuse a returned range first (first fit, lowest offset): keeps the
    // file and the used address space compact.
    for (auto it = holes_.begin(); it != holes_.end(); ++it) {
        if (it->second < size)
            continue;
        const size_t offset = it->first;
        const size_t rest = it->second - size;
        holes_.erase(it);
        if (rest != 0) {
            try {
                holes_.emplace(offset + size, rest);
            } catch (...) {
                // Lose track of the tail: address space only, its pages are punched.
            }
        }
        live_ += size;
        *ptr = base_ + offset;
        return GPUMEM_SUCCESS;
    }

    if (bump_ > capacity_ || size > capacity_ - bump_)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                    "cannot grow the pool by %zu bytes: its capacity of %zu bytes is used up; create the pool "
                    "with a larger max_size",
                    size, capacity_ - granule_);
    const size_t end = bump_ + size;
    if (end > file_size_) {
        if (ftruncate(fd_, static_cast<off_t>(end)) != 0) {
            int err = errno;
            return fail(alloc_errno_status(err),
                        "cannot grow the pool by %zu bytes: ftruncate of its memfd failed: %s; free memory or "
                        "allocate less",
                        size, std::strerror(err));
        }
        file_size_ = end;
    }
    *ptr = base_ + bump_;
    bump_ = end;
    live_ += size;
    return GPUMEM_SUCCESS;
}

void SharedUpstream::deallocate(void *ptr, size_t size)
{
    if (!owner_)
        return;
    if (strict_)
        strict_->work.run_all(); // queued work may still write here
    const size_t offset = static_cast<size_t>(static_cast<char *>(ptr) - base_);
    // Give the memory back; the range stays mapped (in every process) and
    // reads as zeros until reused.
    if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(size)) != 0 &&
        madvise(ptr, size, MADV_REMOVE) != 0) {
        int err = errno;
        log(LogLevel::warn, "pool chunk at %p (%zu bytes) not given back to the system: fallocate and madvise "
                            "failed: %s; it will be reused",
            ptr, size, std::strerror(err));
    }

    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= std::min(live_, size);
    size_t lo = offset, hi = offset + size;
    try {
        // Coalesce with the neighbouring holes.
        auto next = holes_.lower_bound(lo);
        if (next != holes_.end() && next->first == hi) {
            hi += next->second;
            next = holes_.erase(next);
        }
        if (next != holes_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == lo) {
                lo = prev->first;
                holes_.erase(prev);
            }
        }
        if (hi == bump_)
            bump_ = lo; // the top of the carved space comes back
        else
            holes_.emplace(lo, hi - lo);
    } catch (...) {
        // Out of host memory for the bookkeeping: the range is not reused.
    }
}

status_t SharedUpstream::export_fd(int *fd)
{
    int d = fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    if (d < 0) {
        int err = errno;
        return fail(GPUMEM_ERROR_IPC,
                    "cannot export the pool: fcntl(F_DUPFD_CLOEXEC) failed: %s; close descriptors or raise the "
                    "open-files limit (ulimit -n)",
                    std::strerror(err));
    }
    *fd = d;
    return GPUMEM_SUCCESS;
}

status_t SharedUpstream::offset_of(const void *ptr, uint64_t *offset, uint64_t *pool_id) const
{
    const char *p = static_cast<const char *>(ptr);
    if (p < base_ + granule_ || p >= base_ + capacity_)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "cannot export %p: it is not inside this pool's memory", ptr);
    *offset = static_cast<uint64_t>(p - base_);
    *pool_id = pool_id_;
    return GPUMEM_SUCCESS;
}

status_t SharedUpstream::address_of(uint64_t offset, uint64_t size, uint64_t pool_id, void **ptr)
{
    if (pool_id != pool_id_)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot import the pointer: it was exported from another pool (id %016llx, this pool is "
                    "%016llx); import it into the pool it came from",
                    static_cast<unsigned long long>(pool_id), static_cast<unsigned long long>(pool_id_));
    if (offset < granule_ || offset > capacity_ || size > capacity_ - offset)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot import the pointer: offset %llu (+%llu bytes) lies outside the pool; the export data "
                    "is damaged",
                    static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size));
    // Past the file's end the mapping faults (SIGBUS): refuse instead.
    struct stat st;
    if (fstat(fd_, &st) == 0 && offset + size > static_cast<uint64_t>(st.st_size))
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "cannot import the pointer: offset %llu (+%llu bytes) lies past the pool's memory (%lld bytes); "
                    "was it freed in the exporting process?",
                    static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size),
                    static_cast<long long>(st.st_size));
    *ptr = base_ + offset;
    return GPUMEM_SUCCESS;
}

} // namespace

// `rdma` changes nothing: the memory is ordinary host memory, which an RDMA
// NIC registers as it is (DeviceCaps::rdma_any_memory).
status_t HostBackend::pool_upstream(int32_t, bool shareable, size_t page, uint64_t max_size, bool,
                                    std::unique_ptr<PoolUpstream> *out)
{
    if (shareable)
        return SharedUpstream::create(max_size, strict_.get(), out);
    PoolUpstream *up = strict_ ? static_cast<PoolUpstream *>(new (std::nothrow) StrictUpstream(*strict_))
                               : new (std::nothrow) AnonUpstream(page != 0);
    if (!up)
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot create a pool: out of host memory");
    out->reset(up);
    return GPUMEM_SUCCESS;
}

status_t HostBackend::pool_upstream_import(int32_t, int fd, std::unique_ptr<PoolUpstream> *out)
{
    return SharedUpstream::open(fd, strict_.get(), out);
}

} // namespace gpumem::detail::host
