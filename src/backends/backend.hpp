// The interface every backend implements (host, cuda, hip).
//
// A backend is a thin, checked layer over one runtime.  It knows nothing of the
// registry, the options or the fallbacks: the core validates arguments, keeps
// the registry, decides fallbacks, and calls these methods with arguments that
// are already valid.  Every method returns a status and, on failure, sets the
// thread's last-error message with detail::fail() naming the vendor call.
//
// Where a call runs is the core's decision (core/placement.hpp): every method
// that touches memory, a stream, an event or a pool takes `device` first, the
// device whose context the call runs in.  A GPU backend makes that device
// current for the call alone and puts the caller's context back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>
#include <string>

#include "base/error.hpp"
#include "pool/upstream.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

// What a device really has, before GPUMEM_DISABLE / GPUMEM_FALLBACK.
// Workarounds for known vendor bugs (backends/gpu/vendor_bugs.def), as the
// core and the backend act on them: named by what gpumem does, not by vendor.
enum Workaround : uint32_t {
    workaround_trim_at_sync = 1u << 0,        // the pools service trims native pools to their threshold
    workaround_no_native_retry = 1u << 1,     // a failed native pool allocation is not retried there
    workaround_ask_device_pointer = 1u << 2,  // registered memory's device address must be asked for
    workaround_builtin_auto_pools = 1u << 3,  // GPUMEM_POOL_AUTO pools are gpumem's own
    workaround_no_batch_copy = 1u << 4,       // batched copies are made one call per entry
    workaround_split_fill_at_seams = 1u << 5, // a fill across VMM mappings is one fill per mapping
    workaround_defer_pool_destroy = 1u << 6,  // a native pool with live blocks is destroyed after the last
};

// One known vendor bug in force, for gpumem-info and the log.
struct VendorBugInfo {
    const char *name;
    const char *bug;
    const char *workaround;
    const char *source;
    const char *description; // the three above in one line
};

struct DeviceCaps {
    std::string name;
    std::string arch;
    uint64_t total_memory = 0;
    uint64_t free_memory = 0;
    bool managed = false;          // native managed memory
    bool managed_migrates = false; // pages migrate on access
    // Managed memory has coherence grains that GPUMEM_ADVISE_*_COARSE_GRAIN
    // change (AMD's); elsewhere that advice is accepted and does nothing.
    bool coarse_grain_advice = false;
    bool pageable_access = false;  // device reads plain malloc memory
    // The device is this process's CPU: fill() writes pageable memory with a
    // plain memset, which no runtime checks first, so the core fills memory
    // no one knows through the kernel (a bad address is then an error, not a crash).
    bool cpu_fills_pageable = false;
    // The unit the runtime backs device allocations and pools in (what an out-of-memory report
    // rounds a request to): 2 MiB pages for CUDA and HIP, the CPU's page on the host.
    uint64_t backing_page = 2u << 20;
    // The runtime's name in messages a framework shows ("CUDA out of memory."): "CUDA", "HIP", "GPU".
    const char *vendor_name = "GPU";
    bool pools = false;            // native stream-ordered pools (only with Backend::native_pools())
    // Native pools of other memory (only where `pools`): page-locked host memory
    // (location HOST), on a chosen NUMA node too (HOST_NUMA), and managed memory.
    bool pinned_pools = false;
    bool pinned_pools_numa = false;
    bool managed_pools = false;
    bool vmm = false;              // native virtual memory management
    bool host_register = false;
    // Registration takes pages the process may only read (GPUMEM_HOST_REGISTER_READ_ONLY reaches
    // the runtime); without it the runtime pins every page for writing.
    bool host_register_read_only = false;
    uint32_t ipc_handle_types = 0; // GPUMEM_HANDLE_* the runtime can export
    bool builtin_pool_ipc = false; // gpumem's own pool over this backend can be shared
    size_t vmm_granularity = 0;
    size_t vmm_recommended_granularity = 0;
    int32_t compute_capability = 0;
    // The runtime's batched calls this device can use (only with Backend::batch_memops()).
    bool batch_copy = false;
    bool batch_prefetch = false; // needs concurrent managed access on every device (CUDA)
    bool batch_discard = false;
    // dma-buf export of device memory (only with Backend::dmabuf_export()).
    bool dmabuf = false;
    // The driver claims fabric handles (GPUMEM_HANDLE_FABRIC); making one may
    // still be refused where the system has no fabric (no IMEX channel).
    bool fabric_handles = false;
    // Memory that GPUDirect RDMA and NCCL's buffer registration accept
    // (GPUMEM_POOL_RDMA): VMM memory created RDMA-capable with a POSIX handle
    // (GPU backends), or every allocation as it is (the host backend: ordinary
    // host memory, which an RDMA NIC registers without help).  Where neither,
    // rdma_missing says what the device lacks, in the runtime's words.
    bool rdma_vmm = false;
    bool rdma_any_memory = false;
    std::string rdma_missing;
    // The runtime's version (cuDriverGetVersion, hipRuntimeGetVersion; 0 on
    // the host backend): the self-test's cache is kept per driver.
    int32_t driver_version = 0;
    // The device's UUID as 32 lowercase hex digits (cuDeviceGetUuid,
    // hipDeviceGetUuid; on the host backend the machine's id), so that the
    // self-test's cache follows the device and not its slot.  Empty where the
    // runtime cannot say (a runtime without the call, a host without
    // /etc/machine-id): the cache is then kept per device name alone.
    std::string uuid;
    // The device's PCI address as the runtime writes it ("0000:1B:00.0",
    // cuDeviceGetPCIBusId, hipDeviceGetPCIBusId); empty where it cannot say
    // (the host backend, a runtime without the call).  The core lowercases it
    // and finds the device's NUMA node from it.
    std::string pci_bus_id;
    // The runtime has peer access (Backend::peer_access()) and the device has
    // another device to reach; which pairs connect is can_access_peer's
    // answer.  The core answers "no peer" for a device without it.
    bool peer_access = false;
    // What programs that create their own streams and events use (0.5):
    // stream priorities and the runtime's word on a stream's flags and
    // priority (Streams::stream_flags, stream_priority, priority_range; without
    // them the core answers what it recorded and gives every stream priority
    // 0); functions run in stream order (launch_host_func; without it the core
    // waits for the stream and calls the function); events shared between
    // processes (event_ipc_handle, event_ipc_open; without them NOT_SUPPORTED).
    bool stream_priorities = false;
    bool host_funcs = false;
    bool ipc_events = false;
    // The device is the CPU standing in for a GPU (the host backend): what it
    // provides itself (rows and boxes a row at a time, priorities that
    // schedule nothing, host functions, events shared between processes) is
    // reported EMULATED, not NATIVE.
    bool cpu_device = false;
};

// The interface is cut into facets, one a family of methods.  The mandatory
// facets are the bases of Backend, so their methods are called on the
// backend itself (`backend->device_alloc(...)`), and a service that needs
// one family holds that facet alone.  An optional facet is reached through
// an accessor that answers nullptr where the backend lacks it: its absence is
// the capability (as in libglvnd's vendor ABI), and nothing refuses on its
// behalf.  Per-device answers (DeviceCaps) still say whether a device of a
// backend that has the facet can use it.

// When a copy returns.  The runtimes' synchronous copy returns with the
// bytes in place only when they land in host memory ("API synchronization
// behavior" in CUDA's documentation; hipMemcpy blocks likewise): a
// device-to-device copy or one from pageable memory may still be in flight.
//   async           once enqueued on the stream;
//   sync            once complete: the synchronous copy, then a wait for
//                   the stream;
//   sync_into_host  once complete, `dst` being host memory: the synchronous
//                   copy alone.
enum class CopyMode { async, sync, sync_into_host };

// What the runtime says of an address gpumem did not make (pointer info of
// memory a framework or library allocated with the runtime's own calls).
struct VendorPointer {
    bool known = false;                          // the runtime knows the address
    int32_t memory = GPUMEM_POOL_MEMORY_UNKNOWN; // GPUMEM_POOL_MEMORY_*
    int32_t device = GPUMEM_DEVICE_HOST;         // the owning device; HOST for host memory
    void *base = nullptr;                        // the allocation holding it (nullptr: not told)
    size_t size = 0;
};

// Explicit device memory, copies and fills, and chunks for gpumem's own pool.
class DeviceMemory {
public:
    virtual status_t device_alloc(int32_t device, size_t size, void **ptr) = 0;
    virtual status_t device_free(int32_t device, void *ptr, size_t size) = 0;

    // Copies and fills; any pair of host/device/managed pointers, run in
    // `device`'s context, which must reach every device byte they touch.  A
    // fill the runtime refuses because `dst` is host memory it does not know
    // (plain pageable memory) is INVALID_POINTER, with nothing enqueued.
    virtual status_t copy(int32_t device, void *dst, const void *src, size_t n, void *stream, CopyMode mode) = 0;
    virtual status_t fill(int32_t device, void *dst, int32_t value, size_t n, void *stream, bool async) = 0;
    // A copy between memory that only its owners reach (pool blocks, VMM
    // mappings of two devices): each pointer is resolved in its own device's
    // context.  A nullptr stream is dst_device's default stream.
    virtual status_t copy_peer(int32_t dst_device, void *dst, int32_t src_device, const void *src, size_t n,
                               void *stream, bool async) = 0;
    // The device whose memory `ptr` is, as the runtime says (it answers from
    // any context); GPUMEM_DEVICE_HOST where it does not know the address.
    virtual int32_t pointer_device(const void *ptr) = 0;
    // What the runtime knows of `ptr` (any context): out->known false, and
    // SUCCESS, where it does not know the address; an error only where the
    // runtime failed otherwise.  The host backend has no runtime to ask.
    virtual status_t vendor_pointer(const void *ptr, VendorPointer *out) = 0;

    // Chunk sources for gpumem's own pool on `device`.  `shareable` asks for
    // memory another process can map (GPUMEM_HANDLE_POSIX_FD).  `page`: 0 for
    // whole chunks, else paged chunks (PoolUpstream::page_size) with pages of
    // this many bytes, the device's VMM granularity (a backend may page finer).
    // `rdma` (only where DeviceCaps::rdma_vmm or rdma_any_memory): memory that
    // GPUDirect RDMA and NCCL register, mapped for `device` alone.
    virtual status_t pool_upstream(int32_t device, bool shareable, size_t page, uint64_t max_size, bool rdma,
                                   std::unique_ptr<PoolUpstream> *out) = 0;

protected:
    ~DeviceMemory() = default;
};

// Page-locked host memory (flags are GPUMEM_HOST_* / GPUMEM_HOST_REGISTER_*).
// Pinned memory belongs to no device: `device` only names the context the
// runtime is called in.
class HostMemory {
public:
    virtual status_t host_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) = 0;
    virtual status_t host_free(int32_t device, void *ptr, size_t size) = 0;
    virtual status_t host_register(int32_t device, void *ptr, size_t size, uint32_t flags) = 0;
    virtual status_t host_unregister(int32_t device, void *ptr, size_t size) = 0;
    virtual status_t host_device_pointer(int32_t device, void *host_ptr, void **device_ptr) = 0;

protected:
    ~HostMemory() = default;
};

// Native managed memory (the core emulates it with mapped pinned memory
// where DeviceCaps::managed is false).
class ManagedMemory {
public:
    virtual status_t managed_alloc(int32_t device, size_t size, uint32_t flags, void **ptr) = 0;
    virtual status_t managed_free(int32_t device, void *ptr, size_t size) = 0;
    // `target`: where the pages go (a device or GPUMEM_DEVICE_HOST).
    virtual status_t prefetch(int32_t device, const void *ptr, size_t count, int32_t target, void *stream) = 0;
    // `location`: the device the advice names (or GPUMEM_DEVICE_HOST).
    virtual status_t advise(int32_t device, const void *ptr, size_t count, int32_t advice, int32_t location) = 0;
    virtual status_t stream_attach(int32_t device, void *stream, void *ptr, size_t length, uint32_t flags) = 0;

protected:
    ~ManagedMemory() = default;
};

// Streams and events, as native handles; `device` is the stream's or event's.
// A nullptr stream is `device`'s default stream.
class Streams {
public:
    // True when every enqueued operation has finished before the call returns
    // (the host backend): stream-ordered frees then complete at once.
    virtual bool synchronous_streams() const = 0;
    // `flags` GPUMEM_STREAM_*; `priority` 0, or (where DeviceCaps::stream_priorities)
    // any value, which the runtime clamps to its range.
    virtual status_t stream_create(int32_t device, uint32_t flags, int32_t priority, void **stream) = 0;
    // What the runtime says of a stream of `device` (nullptr: its default
    // stream): its GPUMEM_STREAM_* flags and the priority it got.  Only where
    // DeviceCaps::stream_priorities, as is priority_range (least and greatest
    // urgency: 0 and a negative number).
    virtual status_t stream_flags(int32_t device, void *stream, uint32_t *flags) = 0;
    virtual status_t stream_priority(int32_t device, void *stream, int32_t *priority) = 0;
    virtual status_t priority_range(int32_t device, int32_t *least, int32_t *greatest) = 0;
    // The device of a stream the application made (gpumem_stream_wrap, the
    // framework hooks); *device stays as given where the runtime cannot say.
    virtual status_t stream_device(void *stream, int32_t *device) = 0;
    virtual status_t stream_destroy(int32_t device, void *stream) = 0;
    virtual status_t stream_synchronize(int32_t device, void *stream) = 0;
    virtual status_t stream_query(int32_t device, void *stream) = 0; // SUCCESS idle, BUSY pending
    // `flags` GPUMEM_EVENT_* (checked by the core).
    virtual status_t event_create(int32_t device, uint32_t flags, void **event) = 0;
    // Events shared between processes, where DeviceCaps::ipc_events: the
    // 64 bytes of an event made with GPUMEM_EVENT_INTERPROCESS, and an event
    // opened from such bytes in `device`'s context (bytes the core has not
    // checked: the runtime says INVALID_VALUE for what is no handle, and for
    // a handle of this process).
    virtual status_t event_ipc_handle(int32_t device, void *event, gpumem_ipc_event_handle_t *handle) = 0;
    virtual status_t event_ipc_open(int32_t device, const gpumem_ipc_event_handle_t *handle, void **event) = 0;
    // fn(user) in the order of `stream` (of `device`), where DeviceCaps::host_funcs.
    virtual status_t launch_host_func(int32_t device, void *stream, void (*fn)(void *), void *user) = 0;
    virtual status_t event_destroy(int32_t device, void *event) = 0;
    // The event and the stream are of `device`.
    virtual status_t event_record(int32_t device, void *event, void *stream) = 0;
    virtual status_t event_synchronize(int32_t device, void *event) = 0;
    virtual status_t event_query(int32_t device, void *event) = 0; // SUCCESS done, BUSY pending
    // `device` is the stream's; the event may be another device's.
    virtual status_t stream_wait_event(int32_t device, void *stream, void *event) = 0;
    virtual status_t event_elapsed_ms(int32_t device, float *ms, void *start, void *end) = 0;
    virtual status_t device_synchronize(int32_t device) = 0;

protected:
    ~Streams() = default;
};

// Virtual memory management.  A physical allocation is an opaque pointer
// owned by the backend; the core wraps it in a gpumem_mem_handle_t.  `device`
// is the physical memory's (for reservations, which belong to no device, the
// caller's current one).
class VirtualMemory {
public:
    virtual status_t vmm_granularity(int32_t device, int32_t option, size_t *granularity) = 0;
    // `rdma` (only where DeviceCaps::rdma_vmm or rdma_any_memory): memory that
    // GPUDirect RDMA and NCCL register (on a GPU, RDMA-capable with a POSIX handle).
    virtual status_t vmm_create(int32_t device, size_t size, uint32_t handle_types, bool rdma, void **phys) = 0;
    // Memory still mapped stays valid until unmapped.
    virtual status_t vmm_release(int32_t device, void *phys) = 0;
    virtual status_t vmm_reserve(int32_t device, size_t size, size_t alignment, void *hint, void **ptr) = 0;
    virtual status_t vmm_free(int32_t device, void *ptr, size_t size) = 0;
    virtual status_t vmm_map(int32_t device, void *ptr, size_t size, size_t offset, void *phys) = 0;
    // Leaves the range reserved and inaccessible.
    virtual status_t vmm_unmap(int32_t device, void *ptr, size_t size) = 0;
    // `flags` is GPUMEM_ACCESS_* for `accessor` over a range mapped to `device`'s memory.
    virtual status_t vmm_set_access(int32_t device, void *ptr, size_t size, int32_t accessor, int32_t flags) = 0;
    // A new reference to the physical allocation mapped at `ptr` (any address
    // of a mapping, gpumem's or the application's), asked in `device`'s
    // context: a `phys` as vmm_create's, given back with vmm_release.  *owner
    // is the memory's device, *size its bytes (the mapping's where the runtime
    // tells no more).  INVALID_VALUE where `ptr` is in no mapping.
    virtual status_t vmm_retain(int32_t device, void *ptr, int32_t *owner, size_t *size, void **phys) = 0;
    // What the runtime says of a physical allocation of `device`: the device
    // holding it, its GPUMEM_HANDLE_* types and GPUMEM_POOL_RDMA (or 0).
    virtual status_t vmm_properties(int32_t device, void *phys, int32_t *owner, uint32_t *handle_types,
                                    uint32_t *flags) = 0;
    // The same `flags` for each of `accessors` (count > 0) over a range mapped
    // to `device`'s memory (one mapping or several adjacent ones), in one
    // vendor call where the vendor takes several descriptors: a GPU driver
    // charges per call (docs/semantics.md, "When the own pool gives memory
    // back").  By default one vmm_set_access per accessor.
    virtual status_t vmm_set_access_all(int32_t device, void *ptr, size_t size, const int32_t *accessors, size_t count,
                                        int32_t flags)
    {
        status_t st = GPUMEM_SUCCESS;
        for (size_t i = 0; st == GPUMEM_SUCCESS && i < count; ++i)
            st = vmm_set_access(device, ptr, size, accessors[i], flags);
        return st;
    }

protected:
    ~VirtualMemory() = default;
};

// New physical memory of `device` mapped at [ptr, ptr + size), a part of a
// reservation where nothing is mapped, with read-write access for each of
// `accessors` (in one vmm_set_access_all): create, map, set access, the
// sequence of core/vmm's growable ranges.  (The paged pool chunks below map
// several units and set access once per run: PagedDeviceUpstream.)
// On failure nothing stays: what was mapped is unmapped, what was created
// released.  With `phys`, the physical allocation comes back for the caller
// to release once it has unmapped it; without, it is released at once (the
// mapping keeps the memory until it is unmapped).
status_t vmm_map_new(VirtualMemory &vmm, int32_t device, void *ptr, size_t size, const int32_t *accessors,
                     size_t count, void **phys);

// Sharing memory with other processes by descriptor (DeviceCaps::ipc_handle_types
// and builtin_pool_ipc say what a device can share).  The native pools'
// own sharing is part of NativePools.
class Ipc {
public:
    virtual status_t vmm_export(int32_t device, void *phys, int32_t handle_type, int *fd) = 0;
    // Imported in `device`'s context; the allocation's `owner` and `size` are returned.
    virtual status_t vmm_import(int32_t device, int fd, int32_t handle_type, int32_t *owner, size_t *size,
                                void **phys) = 0;
    // The memory of a pool gpumem's own pool exported in another process (the
    // fd stays the caller's), imported in `device`'s context.
    virtual status_t pool_upstream_import(int32_t device, int fd, std::unique_ptr<PoolUpstream> *out) = 0;

protected:
    ~Ipc() = default;
};

// Optional: the vendor's stream-ordered pools.  Called only for a device
// whose caps say pools.  A pool is an opaque vendor handle; attributes are
// GPUMEM_POOL_ATTR_* with the value types of the public API.  `device` is the
// pool's (an imported pool's: the exporter's device, as this process numbers it).
class NativePools {
public:
    virtual status_t default_pool(int32_t device, void **pool) = 0;
    // `memory` is GPUMEM_POOL_MEMORY_*, asked only where the device's caps say
    // so; `numa_node` (PINNED only, -1 = any) a host NUMA node.  A pool of
    // pinned memory starts reachable as the vendor makes it (set_access grants more).
    virtual status_t create(int32_t device, uint32_t handle_types, uint64_t max_size, int32_t memory,
                            int32_t numa_node, void **pool) = 0;
    virtual status_t destroy(int32_t device, void *pool) = 0;
    // OUT_OF_MEMORY where the vendor's pool cannot serve it now (the core decides what follows).
    virtual status_t alloc(int32_t device, void *pool, size_t size, void *stream, void **ptr) = 0;
    virtual status_t free(int32_t device, void *ptr, void *stream) = 0;
    virtual status_t set_attribute(int32_t device, void *pool, int32_t attr, const void *value) = 0;
    virtual status_t get_attribute(int32_t device, void *pool, int32_t attr, void *value) = 0;
    virtual status_t trim(int32_t device, void *pool, size_t min_bytes_to_keep) = 0;
    // `flags` (GPUMEM_ACCESS_*) for `accessor`.
    virtual status_t set_access(int32_t device, void *pool, int32_t accessor, int32_t flags) = 0;
    virtual status_t export_pool(int32_t device, void *pool, int *fd) = 0;
    // The fd stays the caller's; imported in `device`'s context (the pool's
    // owner is known once a pointer of it arrives: import_pointer).
    virtual status_t import_pool(int32_t device, int fd, void **pool) = 0;
    virtual status_t export_pointer(int32_t device, void *ptr, gpumem_pool_ptr_export_data_t *data) = 0;
    // *owner: the device whose memory the pointer is, as this process numbers devices.
    virtual status_t import_pointer(int32_t device, void *pool, const gpumem_pool_ptr_export_data_t *data, void **ptr,
                                    int32_t *owner) = 0;
    // The vendor's allocation holding `ptr` (a pool block, imported ones
    // included): its base and size.  NOT_SUPPORTED where the vendor cannot say.
    virtual status_t block_range(int32_t device, void *ptr, void **base, size_t *size) = 0;

protected:
    ~NativePools() = default;
};

// Optional: peer access between devices of one backend (multi-GPU).  The
// host backend has none (one device).  `device` is the device that gains or
// loses access to `peer`'s plain device memory; the core has checked both
// ids and that they differ.  Enabling what is already enabled and disabling
// what is not enabled are SUCCESS (the core promises idempotence).
class PeerAccess {
public:
    virtual status_t can_access_peer(int32_t device, int32_t peer, int32_t *can_access) = 0;
    // `enabled_now` (may be nullptr): set true where this call enabled the
    // access, false where it already was, so that whoever enabled it only to
    // try it (the self-test) can leave the application's own access in place.
    virtual status_t enable_peer_access(int32_t device, int32_t peer, bool *enabled_now) = 0;
    virtual status_t disable_peer_access(int32_t device, int32_t peer) = 0;

protected:
    ~PeerAccess() = default;
};

// Optional: the runtime's batched copies, prefetches and discards, one call
// for many ranges (DeviceCaps::batch_* say which a device can use).  The core
// has checked every entry, dropped those with nothing to do, and calls these
// only for a stream the runtime's batch calls take (takes_batch_stream); where
// it cannot, it makes one call per entry itself.  `devices` are ordinals or
// GPUMEM_DEVICE_HOST.
class BatchMemops {
public:
    // CUDA refuses its legacy default stream in its batch calls.
    virtual bool takes_batch_stream(void *stream) const = 0;
    // On failure *failed is the entry the runtime blamed, SIZE_MAX when it did not say.
    virtual status_t copy_batch(int32_t device, void *const *dsts, const void *const *srcs, const size_t *sizes,
                                size_t count, void *stream, size_t *failed) = 0;
    virtual status_t prefetch_batch(int32_t device, const void *const *ptrs, const size_t *sizes, size_t count,
                                    const int32_t *devices, void *stream) = 0;
    virtual status_t discard_batch(int32_t device, void *const *ptrs, const size_t *sizes, size_t count,
                                   void *stream) = 0;

protected:
    ~BatchMemops() = default;
};

// Optional: rows and boxes (2-D and 3-D copies, fills of rows and of 16- and
// 32-bit elements, pitched allocations), each in one call.  The core has
// checked every row (pitches, alignment, ranges, the memory of each side),
// decided where it runs (`device`: the one device whose memory the rows are,
// or the stream's; rows of two devices' memory are copied row by row with
// copy_peer), and calls these only where every row of a side lies in the same
// kind of memory.  Where the facet is absent the core makes one DeviceMemory
// call per row.  Rows are `width` bytes: row r of slice z of a side starts at
// ptr + z * pitch * rows + r * pitch.
struct RowsCopy {
    void *dst = nullptr;
    size_t dst_pitch = 0;
    size_t dst_rows = 0; // rows of a destination slice (depth > 1)
    const void *src = nullptr;
    size_t src_pitch = 0;
    size_t src_rows = 0;
    size_t width = 0, height = 0, depth = 1;
};
class RowMemops {
public:
    // Device memory of `device` for `height` rows of `width` bytes (both > 0);
    // *pitch the bytes from one row to the next.
    virtual status_t alloc_pitch(int32_t device, size_t width, size_t height, void **ptr, size_t *pitch) = 0;
    virtual status_t copy_rows(int32_t device, const RowsCopy &copy, void *stream, CopyMode mode) = 0;
    // `height` rows of `width` bytes, `pitch` apart, set to `byte`.
    virtual status_t fill_rows(int32_t device, void *dst, size_t pitch, unsigned char byte, size_t width,
                               size_t height, void *stream, bool async) = 0;
    // `count` elements of `size` bytes (2 or 4; dst aligned to it) set to `value`.
    virtual status_t fill_elements(int32_t device, void *dst, uint32_t value, unsigned size, size_t count,
                                   void *stream, bool async) = 0;

protected:
    ~RowMemops() = default;
};

// Optional: stream capture (CUDA graphs, HIP graphs), where the runtime has
// it.  The core asks only where the answer changes what it does
// (core/capture.hpp); nothing here begins or ends a capture.
struct CaptureState {
    enum class Status { none, active, invalidated };
    Status status = Status::none;
    uint64_t id = 0;       // the capture sequence, unique in the process (active or invalidated)
    void *graph = nullptr; // the graph being built (active only)
};
class StreamCapture {
public:
    // What `stream` (of `device`; nullptr is its default stream) is
    // capturing.  Asking invalidates nothing, from any thread.
    virtual status_t capture_state(int32_t device, void *stream, CaptureState *out) = 0;
    // Make the calling thread's capture mode relaxed and return the mode it
    // had, for restore_capture_mode: in between, the thread's calls that are
    // not on a capturing stream (an allocation, a query of another stream or
    // event, a trim) invalidate no capture of this thread or another.
    virtual int32_t relax_capture_mode() = 0;
    virtual void restore_capture_mode(int32_t mode) = 0;
    // Call release(data) once `graph` and every executable graph made from it
    // are destroyed and their launches have finished.  It runs on a thread of
    // the runtime and must not call the runtime.  NOT_SUPPORTED where the
    // runtime has no user objects (cuUserObjectCreate, hipUserObjectCreate).
    virtual status_t on_graph_destroyed(void *graph, void (*release)(void *), void *data) = 0;

protected:
    ~StreamCapture() = default;
};

// Optional: dma-buf export of device memory (DeviceCaps::dmabuf says which
// devices can).  The core has checked that [ptr, ptr+size) is page-aligned
// device memory of one gpumem allocation of `device`, the device whose
// context the call runs in.  *fd is a new descriptor, the caller's to close.
class DmaBufExport {
public:
    virtual status_t export_dmabuf(int32_t device, const void *ptr, size_t size, int *fd) = 0;

protected:
    ~DmaBufExport() = default;
};

class Backend : public DeviceMemory,
                public HostMemory,
                public ManagedMemory,
                public Streams,
                public VirtualMemory,
                public Ipc {
public:
    virtual ~Backend() = default;

    virtual int32_t id() const = 0; // GPUMEM_BACKEND_*
    virtual int32_t device_count() const = 0;
    virtual status_t get_caps(int32_t device, DeviceCaps *caps) = 0;
    virtual status_t mem_info(int32_t device, size_t *free_bytes, size_t *total_bytes) = 0;
    // Whether `device` runs a context in this process (gpumem's or the
    // application's).  gpumem starts one only on first use; what only reports
    // (snapshots, out-of-memory messages) leaves the others unstarted.
    virtual bool device_started(int32_t) const { return true; }
    // The calling thread's current device: on a GPU backend the runtime's
    // (the device of the current CUDA context, hipGetDevice), 0 where none is
    // current; gpumem_set_device and cudaSetDevice both change it.
    virtual int32_t current_device() const = 0;
    // Make `device` current on the calling thread and leave it so (gpumem_set_device).
    virtual status_t set_current_device(int32_t device) = 0;

    // Optional facets: nullptr where the backend has none.
    virtual NativePools *native_pools() = 0;
    virtual PeerAccess *peer_access() = 0;

    // The known vendor bugs of this runtime (decided at load), and the
    // Workaround bits they put in force; none for the host backend.
    virtual const std::vector<VendorBugInfo> &vendor_bugs() const = 0;
    virtual uint32_t workarounds() const = 0;
    virtual BatchMemops *batch_memops() = 0;
    virtual StreamCapture *stream_capture() = 0;
    virtual DmaBufExport *dmabuf_export() = 0;
    virtual RowMemops *row_memops() = 0;
};

// Chunks for gpumem's own pool made of a backend's plain device memory
// (device_alloc / device_free), as the GPU backends use where native pools
// are absent or not wanted.  The backend must outlive the upstream (pools go
// at gpumem_finalize, before the backend).  device_free waits for the
// device's work, so no pending kernel still touches a chunk given back.
std::unique_ptr<PoolUpstream> make_device_chunk_upstream(DeviceMemory &memory, int32_t device, size_t granularity);
// Paged chunks of device memory (PoolUpstream::page_size): a chunk is a VMM
// reservation, and each page the pool backs is its own physical allocation
// (created, mapped and released at once: the mapping keeps it), so that pages
// under free holes can be unmapped one by one.  `device` and every device that
// can access it as a peer get read-write access to what is mapped.  For
// devices with native VMM (DeviceCaps::vmm); `page` is their VMM granularity.
// With `rdma` (DeviceCaps::rdma_vmm) each page is RDMA-capable memory with a
// POSIX handle, and only `device` gets access: NCCL's own allocator maps on
// every peer, which slows kernel launches, and a NIC needs no peer mapping.
std::unique_ptr<PoolUpstream> make_paged_device_upstream(Backend &backend, int32_t device, size_t page,
                                                         size_t granularity, bool rdma = false);
// Chunks of host memory for gpumem's own pools of pinned or managed memory:
// mapped, portable page-locked memory (host_alloc), or managed memory of
// `device` (managed_alloc, attached globally).  A chunk goes back only once
// `device`'s work has finished, so no pending kernel still touches it.
enum class HostChunks { pinned, managed };
std::unique_ptr<PoolUpstream> make_host_chunk_upstream(Backend &backend, HostChunks kind, int32_t device,
                                                       size_t granularity);

// Factories.  The host backend always loads; GPU ones return
// BACKEND_UNAVAILABLE (with a message) when their runtime cannot start.
// strict: GPUMEM_HOST_STRICT=1 (docs/strict-mode.md).
status_t make_host_backend(bool strict, std::unique_ptr<Backend> *out);
// Loads the CUDA driver (GPUMEM_CUDA_LIBRARY, else libcuda.so.1, else
// libcuda.so); BACKEND_UNAVAILABLE when it is missing, a stub, or fails to start.
status_t make_cuda_backend(const char *library, std::unique_ptr<Backend> *out);
// Finds the HIP runtime (GPUMEM_HIP_LIBRARY; one already in the process;
// libamdhip64.so.7/.6/.5/.so; $ROCM_PATH/lib; /opt/rocm/lib); BACKEND_UNAVAILABLE,
// with the reason (no library, no GPU, a runtime that fails to start), when it
// cannot be used.
status_t make_hip_backend(const char *library, std::unique_ptr<Backend> *out);

} // namespace gpumem::detail
