// The host backend: the semantics of a GPU in plain host memory, so that every
// gpumem function works on a machine with no GPU.
//
// One device (the CPU).  Device, pinned and managed memory are anonymous
// mappings (strict mode: device memory is a PROT_NONE view, host_strict.hpp);
// streams are synchronous (strict mode: deferred until waited for); VMM is real (memfd physical allocations
// mapped into PROT_NONE reservations); shareable pools are one memfd each.
// Internal to the backend: the core sees only make_host_backend().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/backend.hpp"
#include "backends/host/host_strict.hpp"

namespace gpumem::detail::host {

// --- OS helpers (host_os.cpp) ---------------------------------------------

size_t page_size();
// Granularity of pool chunks and the recommended VMM granularity.
constexpr size_t k_large_granule = size_t{2} << 20;

// Round `value` up to a multiple of `align` (a power of two); false on overflow.
bool round_up(size_t value, size_t align, size_t *out);

// Physical memory plus swap: no single allocation larger than this can ever
// be backed, so it is refused up front (a GPU refuses what it cannot hold).
uint64_t memory_ceiling();

// Total and available memory as the OS reports it (MemTotal/MemAvailable),
// clamped by the calling process's cgroup memory limit where one is set.
void memory_info(uint64_t *total, uint64_t *available);

// The CPU's model name ("model name" in /proc/cpuinfo, else uname machine)
// and uname's machine ("x86_64", "aarch64").
std::string cpu_name();
std::string machine_name();

// The machine's id (/etc/machine-id: 32 lowercase hex digits), the "device
// UUID" of the host backend's one device; empty where it is unreadable or
// not of that form (a container without the file).
std::string machine_id();

// Map `size` bytes aligned to `align` (a power of two, at least a page) by
// over-reserving and trimming the ends.  `prot`/`flags` are mmap's; flags
// must include MAP_PRIVATE|MAP_ANONYMOUS.  Returns MAP_FAILED with errno set.
void *map_aligned(size_t size, size_t align, int prot, int flags);

// Give back the memory of a mapping gpumem freed, keeping its address range
// reserved for a while (host_backend.cpp says why); false when it could not be
// kept (then unmap it).
bool retire_mapping(void *ptr, size_t len);

// Status for an errno from a call that allocates memory: ENOMEM and friends
// become OUT_OF_MEMORY, anything else BACKEND.
status_t alloc_errno_status(int err);

// A new memfd (close-on-exec, sealable, never executable); -1 with errno set.
int make_memfd(const char *name);

// A random 64-bit identifier (getrandom, with a time/pid fallback).
uint64_t random_id();

// `count` elements of `size` bytes (1, 2 or 4) at `dst` set to `value` (its
// low `size` bytes, in the machine's byte order, as a GPU stores them).
inline void fill_pattern(void *dst, uint32_t value, unsigned size, size_t count)
{
    switch (size) {
    case 2: {
        uint16_t *p = static_cast<uint16_t *>(dst);
        for (size_t i = 0; i < count; ++i)
            p[i] = static_cast<uint16_t>(value);
        break;
    }
    case 4: {
        uint32_t *p = static_cast<uint32_t *>(dst);
        for (size_t i = 0; i < count; ++i)
            p[i] = value;
        break;
    }
    default: std::memset(dst, static_cast<unsigned char>(value), count);
    }
}

// The pitch of the host backend's pitched allocations: rows start at
// multiples of 512 bytes, as cuMemAllocPitch gives them on NVIDIA GPUs, so
// that a program which takes the pitch for the width fails here as there.
constexpr size_t k_pitch_alignment = 512;

// First eight bytes of a shareable pool's memfd ("GPUMEMPL" little-endian).
// VMM import refuses a pool descriptor by it, pool import anything else.
constexpr uint64_t k_pool_magic = 0x4c504d454d555047ull;

// --- The backend -------------------------------------------------------------

class HostBackend final : public Backend, public RowMemops {
public:
    // strict: GPUMEM_HOST_STRICT (host_strict.hpp).
    explicit HostBackend(bool strict);

    int32_t id() const override { return GPUMEM_BACKEND_HOST; }
    int32_t device_count() const override { return 1; }
    status_t get_caps(int32_t device, DeviceCaps *caps) override;
    status_t mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes) override;
    int32_t current_device() const override { return 0; } // one device
    status_t set_current_device(int32_t device) override;
    // Strict mode defers stream work until the program waits for it.
    bool synchronous_streams() const override { return !strict_; }

    status_t device_alloc(int32_t device, size_t size, void **ptr) override;
    status_t device_free(int32_t device, void *ptr, size_t size) override;

    status_t host_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) override;
    status_t host_free(int32_t device, void *ptr, size_t size) override;
    status_t host_register(int32_t device, void *ptr, size_t size, uint32_t flags) override;
    status_t host_unregister(int32_t device, void *ptr, size_t size) override;
    status_t host_device_pointer(int32_t device, void *host_ptr, void **device_ptr) override;

    status_t managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) override;
    status_t managed_free(int32_t device, void *ptr, size_t size) override;
    status_t prefetch(int32_t device, const void *ptr, size_t count, int32_t target, void *stream) override;
    status_t advise(int32_t device, const void *ptr, size_t count, int32_t advice, int32_t location) override;
    status_t stream_attach(int32_t device, void *stream, void *ptr, size_t length, uint32_t flags) override;

    status_t stream_create(int32_t device, uint32_t flags, int32_t priority, void **stream) override;
    status_t stream_flags(int32_t device, void *stream, uint32_t *flags) override;
    status_t stream_priority(int32_t device, void *stream, int32_t *priority) override;
    status_t priority_range(int32_t device, int32_t *least, int32_t *greatest) override;
    status_t stream_device(void *, int32_t *device) override
    {
        *device = 0; // one device
        return GPUMEM_SUCCESS;
    }
    status_t stream_destroy(int32_t device, void *stream) override;
    status_t stream_synchronize(int32_t device, void *stream) override;
    status_t stream_query(int32_t device, void *stream) override;
    status_t event_create(int32_t device, uint32_t flags, void **event) override;
    status_t event_ipc_handle(int32_t device, void *event, gpumem_ipc_event_handle_t *handle) override;
    status_t event_ipc_open(int32_t device, const gpumem_ipc_event_handle_t *handle, void **event) override;
    status_t launch_host_func(int32_t device, void *stream, void (*fn)(void *), void *user) override;
    status_t event_destroy(int32_t device, void *event) override;
    status_t event_record(int32_t device, void *event, void *stream) override;
    status_t event_synchronize(int32_t device, void *event) override;
    status_t event_query(int32_t device, void *event) override;
    status_t stream_wait_event(int32_t device, void *stream, void *event) override;
    status_t event_elapsed_ms(int32_t device, float *ms, void *start, void *end) override;
    status_t device_synchronize(int32_t device) override;

    status_t copy(int32_t device, void *dst, const void *src, size_t n, void *stream, CopyMode mode) override;
    // One device: no copy is ever between two.
    status_t copy_peer(int32_t dst_device, void *dst, int32_t src_device, const void *src, size_t n, void *stream,
                       bool async) override;
    status_t fill(int32_t device, void *dst, int32_t value, size_t n, void *stream, bool async) override;
    int32_t pointer_device(const void *) override { return GPUMEM_DEVICE_HOST; } // gpumem's books know them all
    // No runtime to ask: memory gpumem did not make is the process's own, which nothing here tracks.
    status_t vendor_pointer(const void *, VendorPointer *out) override
    {
        *out = VendorPointer{};
        return GPUMEM_SUCCESS;
    }

    status_t vmm_granularity(int32_t device, int32_t option, size_t *granularity) override;
    status_t vmm_create(int32_t device, size_t size, uint32_t handle_types, bool rdma, void **phys) override;
    status_t vmm_release(int32_t device, void *phys) override;
    status_t vmm_reserve(int32_t device, size_t size, size_t alignment, void *hint, void **ptr) override;
    status_t vmm_free(int32_t device, void *ptr, size_t size) override;
    status_t vmm_map(int32_t device, void *ptr, size_t size, size_t offset, void *phys) override;
    status_t vmm_unmap(int32_t device, void *ptr, size_t size) override;
    status_t vmm_set_access(int32_t device, void *ptr, size_t size, int32_t accessor, int32_t flags) override;
    status_t vmm_retain(int32_t device, void *ptr, int32_t *owner, size_t *size, void **phys) override;
    status_t vmm_properties(int32_t device, void *phys, int32_t *owner, uint32_t *handle_types,
                            uint32_t *flags) override;
    status_t vmm_export(int32_t device, void *phys, int32_t handle_type, int *fd) override;
    status_t vmm_import(int32_t device, int fd, int32_t handle_type, int32_t *owner, size_t *size,
                        void **phys) override;

    status_t pool_upstream(int32_t device, bool shareable, size_t page, uint64_t max_size, bool rdma,
                           std::unique_ptr<PoolUpstream> *out) override;
    status_t pool_upstream_import(int32_t device, int fd, std::unique_ptr<PoolUpstream> *out) override;

    // No vendor pools: gpumem's own pool serves every pool request.
    NativePools *native_pools() override { return nullptr; }
    PeerAccess *peer_access() override { return nullptr; } // one device: no peers
    // No vendor runtime, no vendor bugs.
    const std::vector<VendorBugInfo> &vendor_bugs() const override
    {
        static const std::vector<VendorBugInfo> none;
        return none;
    }
    uint32_t workarounds() const override { return 0; }
    BatchMemops *batch_memops() override { return nullptr; } // the core makes one call per entry
    // No graphs: host streams complete every call at once, nothing is captured (docs/graphs.md).
    StreamCapture *stream_capture() override { return nullptr; }
    // No dma-buf: "device" memory here is the process's own anonymous memory,
    // and a memfd made now would hold a copy of its bytes, not the bytes.
    DmaBufExport *dmabuf_export() override { return nullptr; }
    // Rows and boxes: one memmove or fill per row, in stream order (the
    // support level says EMULATED: DeviceCaps::rows_native is false).
    RowMemops *row_memops() override { return this; }

    // RowMemops
    status_t alloc_pitch(int32_t device, size_t width, size_t height, void **ptr, size_t *pitch) override;
    status_t copy_rows(int32_t device, const RowsCopy &copy, void *stream, CopyMode mode) override;
    status_t fill_rows(int32_t device, void *dst, size_t pitch, unsigned char byte, size_t width, size_t height,
                       void *stream, bool async) override;
    status_t fill_elements(int32_t device, void *dst, uint32_t value, unsigned size, size_t count, void *stream,
                           bool async) override;

private:
    // Queued stream work up to now runs (strict mode; nothing otherwise).
    void run_stream_work(void *stream);
    // Whether `stream` is a stream of this backend made GPUMEM_STREAM_NON_BLOCKING.
    bool nonblocking(void *stream);
    void run_all_work();
    void run_event_work(void *event); // up to the event's record
    // `size` rounded up to pages, refused when it cannot ever be backed.
    status_t check_size(size_t size, const char *what, size_t *rounded);

    // Anonymous read-write mapping of `size` bytes for device/pinned/managed
    // memory; `what` names the call in messages.
    status_t map_memory(size_t size, const char *what, void **ptr);
    status_t unmap_memory(void *ptr, size_t size, const char *what);

    std::string name_;
    std::string arch_;
    std::unique_ptr<StrictMode> strict_; // GPUMEM_HOST_STRICT=1, else nullptr

    // Ranges that gpumem_host_register really locked, by the caller's pointer
    // (page-rounded bounds).  mlock does not nest, so unregistering must not
    // unlock a boundary page that another registered range still covers.
    struct LockedRange {
        uintptr_t lo;
        uintptr_t hi;
    };
    std::mutex locked_mutex_;
    std::map<uintptr_t, LockedRange> locked_;

    // The streams this backend made, by address, with their flags and
    // priority (a wrapped stream, any pointer, is never dereferenced).
    struct StreamInfo {
        uint32_t flags;
        int32_t priority;
    };
    std::mutex streams_mutex_;
    std::map<const void *, StreamInfo> streams_;

    // The VMM mappings this backend made (start -> size and physical
    // allocation), so that an address finds the allocation mapped there
    // (vmm_retain) as the GPU drivers find theirs.  A physical allocation
    // counts its handles and mappings, and its memfd closes with the last:
    // a retained handle must still export it (host_vmm.cpp).
    struct VmmMapping {
        size_t size;
        void *phys;
    };
    std::mutex vmm_mutex_;
    std::map<uintptr_t, VmmMapping> vmm_mappings_;
};

} // namespace gpumem::detail::host
