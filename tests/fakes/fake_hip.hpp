// A fake HIP runtime (libfakehip.so) for testing gpumem's HIP backend without a GPU.
//
// It exports, with extern "C" and the HIP runtime's C signatures, every function of
// src/backends/hip/hip_symbols.def (and a few neighbours), as libamdhip64 does.  Memory
// lives in host memory: device allocations come from a reserved "device address range" that
// the CPU cannot touch (as on a real GPU; FAKE_HIP_HOST_ACCESS=1 lifts that), backed by
// memfds the fake reads and writes through a second mapping.  The environment variables
// (FAKE_HIP_*) turn features off so every fallback path of the backend runs in CI; see
// README.md next to this file.  Ported from the fake CUDA driver (fake_cuda*.cpp): the same
// memory, stream, pool and VMM model behind the HIP runtime's entry points.
//
// Internal header shared by the fake's translation units.  Every API function takes the
// one global mutex (state().mu) after the init check; helpers named *_locked expect it held.
//
// SPDX-License-Identifier: MIT
#pragma once

#include "fake_hip_types.hpp"

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

typedef unsigned long long fh_devptr;   // a device address, as the internals do arithmetic on it
typedef unsigned long long fh_memhandle; // a VMM handle (hipMemGenericAllocationHandle_t) as a number

namespace fakehip {
using namespace ::fakehip; // (the fh_ types of fake_hip_types.hpp)

// Built as libfakehip_newnames.so with FAKE_HIP_NEW_NAMES=1: pinned host memory is
// hipExtHostAlloc/hipFreeHost only (no hipHostMalloc, hipHostAlloc or hipHostFree).
#ifndef FAKE_HIP_NEW_NAMES
#define FAKE_HIP_NEW_NAMES 0
#endif


constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kGranularity = 2 * kMiB; // VMM minimum and recommended granularity
constexpr uint64_t kPoolAlign = 512;        // pool blocks: sizes and offsets
constexpr uint64_t kFdHeader = kPage;       // memfds shared between processes start with a header page

// ---------------------------------------------------------------------------------------------
// Configuration: the environment, read once.
// ---------------------------------------------------------------------------------------------
struct Config {
    int devices = 1;                // FAKE_HIP_DEVICES
    uint64_t memory = 8 * kGiB;     // FAKE_HIP_MEMORY (bytes, or with a K/M/G/T suffix)
    int runtime_version = 60241133; // FAKE_HIP_VERSION (HIP_VERSION: major*10^7+minor*10^5+patch; ROCm 6.2)
    bool xnack = true;              // FAKE_HIP_NO_XNACK=1: managed memory without XNACK (pages do not migrate)
    bool managed = true;            // FAKE_HIP_NO_MANAGED=1 turns off
    bool concurrent_managed = true; // FAKE_HIP_NO_CONCURRENT_MANAGED=1 turns off (and with managed)
    bool pools = true;              // FAKE_HIP_NO_POOLS=1
    bool vmm = true;                // FAKE_HIP_NO_VMM=1
    bool ipc = true;                // FAKE_HIP_NO_IPC=1
    bool host_register = true;      // FAKE_HIP_NO_HOST_REGISTER=1
    bool pageable = true;           // the device reads plain malloc memory (XNACK; FAKE_HIP_NO_XNACK=1 turns off)
    uint64_t pool_granule = 32 * kMiB; // FAKE_HIP_POOL_GRANULE: pools reserve and release in these
                                       // (32 MiB, as driver 580 does on an H200)
    bool host_access = false;       // FAKE_HIP_HOST_ACCESS=1: the CPU may touch device memory
    bool defer = false;             // FAKE_HIP_DEFER=1: stream work runs when the host waits for it
    bool no_device = false;         // FAKE_HIP_NO_DEVICE=1: hipInit/hipGetDeviceCount are hipErrorNoDevice
    bool init_fail = false;         // FAKE_HIP_INIT_FAIL=1: hipInit (and every call) is hipErrorNotInitialized
    bool v6() const { return runtime_version >= 60000000; }
    bool trace = false;             // FAKE_HIP_TRACE=1: every call on stderr
};
const Config &config();

// ---------------------------------------------------------------------------------------------
// Tracing.  Each API function opens a Call; its result goes through done()/fail(), which
// print one line with FAKE_HIP_TRACE=1 (and the reason for a failure).
// ---------------------------------------------------------------------------------------------
class Call {
public:
    explicit Call(const char *name) : name_(name) {}
    void args(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    void out(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    hipError_t done(hipError_t r);
    hipError_t fail(hipError_t r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

private:
    const char *name_;
    std::string args_, out_, why_;
};

const char *error_name(hipError_t r); // "CUDA_ERROR_..." or "CUDA_ERROR_<n>"

// hipSuccess when the driver may be used: the stub refuses everything, and nothing but
// hipGetErrorName/String and the versions; the first other call initialises, as hipInit would.
hipError_t check_initialized();

#define FAKE_ENTER(name, ...)                                                                                \
    ::fakehip::Call call_(name);                                                                            \
    if (::fakehip::config().trace)                                                                          \
        call_.args(__VA_ARGS__);                                                                             \
    if (hipError_t init_rc_ = ::fakehip::check_initialized())                                                 \
        return call_.done(init_rc_);                                                                         \
    std::lock_guard<std::mutex> state_lock_(::fakehip::state().mu)

#define RET(r) return call_.done(r)
#define FAIL(r, ...) return call_.fail((r), __VA_ARGS__)
#define OUT(...)                                                                                             \
    do {                                                                                                     \
        if (::fakehip::config().trace)                                                                      \
            call_.out(__VA_ARGS__);                                                                          \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Free-range bookkeeping (address space, pool arenas): start -> length, coalescing.
// ---------------------------------------------------------------------------------------------
class RangeSet {
public:
    void add(uint64_t start, uint64_t len);
    // A range of `len` bytes aligned to `align` (a power of two); at `hint` when that is
    // free.  Next-fit from the last allocation, so freed ranges are not handed out again
    // at once (stale pointers then point at nothing).  False when nothing fits.
    bool take(uint64_t len, uint64_t align, uint64_t hint, uint64_t *out);
    // Lowest-address fit (deterministic layouts for pools).
    bool take_lowest(uint64_t len, uint64_t align, uint64_t *out);
    bool contains(uint64_t start, uint64_t len) const;

private:
    bool take_at(uint64_t start, uint64_t len);
    std::map<uint64_t, uint64_t> free_;
    uint64_t rover_ = 0;
};

// Overflow-safe helpers.
inline bool round_up(uint64_t v, uint64_t a, uint64_t *out)
{
    if (v > UINT64_MAX - (a - 1))
        return false;
    *out = (v + a - 1) / a * a;
    return true;
}
inline bool aligned(uint64_t v, uint64_t a) { return v % a == 0; }

// ---------------------------------------------------------------------------------------------
// Objects.
// ---------------------------------------------------------------------------------------------
struct Pool;
struct Phys;

// A stream keeps the order information the stream-ordered allocator needs (which frees
// another stream has been made to wait for, which frees the host has seen complete).  Work
// runs at once, or with FAKE_HIP_DEFER=1 when the host waits for it (see enqueue_locked).
using Dep = std::pair<uint64_t, uint64_t>; // (stream id, seq) an operation must wait for
struct Stream {
    uint64_t id = 0;
    int device = 0;
    unsigned flags = 0;   // CU_STREAM_*
    bool legacy = false;  // the context's NULL stream
    uint64_t seq = 0;     // operations enqueued so far
    uint64_t done = 0;    // operations executed
    uint64_t synced = 0;  // operations the host has waited for
    std::map<uint64_t, uint64_t> waited; // stream id -> its seq this stream has been ordered after
    struct Op {
        uint64_t seq;
        std::function<void()> run; // may be empty
        std::vector<Dep> deps;
    };
    std::deque<Op> pending; // FAKE_HIP_DEFER=1: enqueued, not executed yet
};

struct Event {
    uint64_t id = 0;
    int device = 0;
    unsigned flags = 0;
    bool recorded = false;
    uint64_t stream = 0; // id of the stream it was recorded on
    uint64_t seq = 0;    // that stream's seq at the record
    bool completed = false; // the record has executed
    double ms = 0;          // host time of the record
};

// A live range of the device address space: what a device pointer means.
enum class SegKind { Device, PoolBlock, PoolImport, VmmMap };
struct Segment {
    uint64_t size = 0;      // bytes a copy may touch
    uint64_t charged = 0;   // Device: bytes of address space and device memory it holds
    char *shadow = nullptr; // where the fake reads and writes these bytes
    SegKind kind = SegKind::Device;
    int device = 0;
    std::shared_ptr<Pool> pool;  // PoolBlock, PoolImport
    std::shared_ptr<Phys> phys;  // VmmMap
    uint64_t phys_offset = 0;    // VmmMap
    std::vector<int> access;     // VmmMap: hipMemAccessFlags per device
    int imports = 0;             // PoolImport: times imported (each needs a free)
};

// Host memory the driver knows: page-locked (cuMemHostAlloc), registered, managed.
enum class HostKind { Pinned, Registered, Managed };
struct HostRange {
    uint64_t size = 0;
    HostKind kind = HostKind::Pinned;
    unsigned flags = 0;
    int device = 0; // context it was made in
    uint64_t map_size = 0; // bytes mmap'ed (Pinned, Managed)
};

// A memory pool (stream-ordered allocator).  Its memory is an arena in a memfd, mapped at
// `base` in the device address range, so another process can map it too.
struct Pool {
    uint64_t id = 0;     // hipMemPool_t handle value
    uint64_t uid = 0;    // identity across processes
    int device = 0;
    bool is_default = false;
    bool imported = false;
    bool destroyed = false;
    unsigned handle_types = 0;
    uint64_t max_size = 0; // 0 = unlimited
    uint64_t capacity = 0; // arena bytes
    uint64_t base = 0;     // device address of the arena
    char *shadow = nullptr;
    int fd = -1;

    // attributes
    int follow_event_deps = 1, opportunistic = 1, internal_deps = 1;
    uint64_t release_threshold = 0;
    uint64_t reserved = 0, used = 0, reserved_high = 0, used_high = 0;
    std::vector<int> access; // hipMemAccessFlags per device

    RangeSet unreserved;                 // arena offsets holding no memory (whole granules)
    std::map<uint64_t, bool> granules;   // offsets of the reserved granules (value unused)
    struct Cached {
        uint64_t size, stream, seq;
        bool synced;
    };
    std::map<uint64_t, Cached> cache;    // free memory in reserved granules (offset -> block)
    std::map<uint64_t, uint64_t> live;   // allocations: offset -> rounded size
    std::map<uint64_t, uint64_t> live_bytes; // allocations: offset -> bytes asked (USED_MEM_*)
    bool exported = false;               // its handle was exported (pointers may be then)
    ~Pool();
};

// A physical allocation of the VMM API (cuMemCreate or imported).
struct Phys {
    uint64_t id = 0; // fh_memhandle
    int device = 0;
    uint64_t size = 0;
    unsigned handle_types = 0;
    bool imported = false;
    int fd = -1;
    char *shadow = nullptr;
    ~Phys();
};

struct Device {
    uint64_t used = 0; // device memory held: allocations, pool reservations, VMM
    int unused_ = 0;
    uint64_t legacy_stream = 0;
    uint64_t default_pool = 0, current_pool = 0;
};

struct State {
    std::mutex mu;
    bool initialized = false;
    std::vector<Device> devices;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, std::unique_ptr<Stream>> streams;
    std::unordered_map<uint64_t, std::unique_ptr<Event>> events;
    std::unordered_map<uint64_t, std::shared_ptr<Pool>> pools;  // live handles only
    std::unordered_map<uint64_t, std::shared_ptr<Phys>> phys;   // unreleased handles only
    std::map<uint64_t, Segment> segments;                        // by device address
    std::map<uint64_t, uint64_t> reservations;                   // VMM: start -> size
    std::map<uint64_t, HostRange> host;                          // by host address
    uint64_t host_used = 0, host_limit = 0;
};
State &state();

// Handle values: distinct tags so that one kind of handle is never taken for another.
constexpr uint64_t kCtxTag = 0x00000ca700000000ull;
constexpr uint64_t kStreamTag = 0x00000ca800000000ull;
constexpr uint64_t kEventTag = 0x00000ca900000000ull;
constexpr uint64_t kPoolTag = 0x00000caa00000000ull;
constexpr uint64_t kMemTag = 0x00000cab00000000ull;
inline uint64_t new_handle(uint64_t tag) { return tag + (state().next_id++ << 4); }

// ---------------------------------------------------------------------------------------------
// Shared helpers (defined in the .cpp files).
// ---------------------------------------------------------------------------------------------
// fake_hip.cpp
bool valid_device(int dev);
// The device of the calling thread's current context: hipErrorInvalidContext without
// one, hipErrorContextIsDestroyed when its primary context is released.
hipError_t current_device_locked(int *dev);
// A stream handle (NULL and CU_STREAM_LEGACY: the current context's NULL stream).
hipError_t find_stream_locked(hipStream_t h, Stream **out);
// Enqueue an operation on `s`: `run` (if any) executes after everything enqueued before on
// `s` and after `deps`; the legacy NULL stream's implicit ordering against blocking streams
// is added.  Runs at once, unless FAKE_HIP_DEFER=1: then it waits in `pending` until the
// host synchronises (or a query lets the stream progress).
void enqueue_locked(Stream &s, std::function<void()> run = nullptr, std::vector<Dep> deps = {});
// Execute `s`'s pending operations up to `upto` (with what they wait for on other streams).
void run_stream_locked(Stream &s, uint64_t upto);
void run_all_locked(int device); // -1: every device
// Operations of stream `id` that executed (every one when the stream is gone).
uint64_t stream_done_locked(uint64_t id);
double now_ms();

// fake_hip_memory.cpp
bool region_init_locked(); // the device address range (at cuInit)
bool region_alloc_locked(uint64_t size, uint64_t align, uint64_t hint, uint64_t *va);
void region_release_locked(uint64_t va, uint64_t size); // back to the free device address space
bool region_map_fd_locked(uint64_t va, uint64_t size, int fd, uint64_t offset); // memfd at va
void region_map_none_locked(uint64_t va, uint64_t size);  // reserved, inaccessible
void region_set_prot_locked(uint64_t va, uint64_t size, int access_flags); // FAKE_HIP_HOST_ACCESS
bool in_region(uint64_t addr);
Segment *find_segment_locked(uint64_t addr, uint64_t *start);
HostRange *find_host_locked(uint64_t addr, uint64_t *start);
void destroy_context_memory_locked(int dev); // primary context released
void free_device_allocation_locked(uint64_t va); // a Device segment starting at va
// A memfd for sharing: header + `size` bytes.  -1 on failure (errno set).
int make_shared_memfd(const char *what, uint32_t kind, uint64_t uid, int device, uint64_t size, unsigned handle_types);
struct FdHeader {
    char magic[8];
    uint32_t version;
    uint32_t kind; // kFdPool / kFdVmm
    uint64_t uid;
    uint64_t size;
    int32_t device;
    uint32_t handle_types;
    uint64_t creator_pid;
};
constexpr uint32_t kFdPool = 1, kFdVmm = 2;
// Read and check the header of a descriptor another process sent; false when it is not one of ours.
bool read_shared_header(int fd, uint32_t kind, FdHeader *hdr);
uint64_t random_uid();

// fake_hip_pools.cpp
// After the host waited for work (stream, event or device synchronisation): frees that
// work covered become known-complete, and pools give back what exceeds their release
// threshold.
void pools_after_sync_locked();
void pool_free_block_locked(const std::shared_ptr<Pool> &pool, uint64_t addr, Stream *stream); // nullptr: synchronous
void destroy_context_pools_locked(int dev);
std::shared_ptr<Pool> default_pool_locked(int dev); // made on first use

} // namespace fakehip
using namespace ::fakehip;

// The fake's implementations (hidden; named after the CUDA driver call each was ported from,
// prefixed fake_).  fake_hip_exports.cpp exports them under the HIP runtime's names and C
// signatures.
#define FAKE_HIP_API extern "C" hipError_t
// fake_hip.cpp
FAKE_HIP_API fake_hipInit(unsigned int flags);
FAKE_HIP_API fake_hipDriverGetVersion(int *v);
FAKE_HIP_API fake_hipRuntimeGetVersion(int *v);
FAKE_HIP_API fake_hipSetDevice(int dev);
FAKE_HIP_API fake_hipGetDevice(int *dev);
extern "C" const char *fake_hipGetErrorName(hipError_t e);
extern "C" const char *fake_hipGetErrorString(hipError_t e);
FAKE_HIP_API fake_cuDeviceGetCount(int *count);
FAKE_HIP_API fake_cuDeviceGet(int *device, int ordinal);
FAKE_HIP_API fake_cuDeviceGetName(char *name, int len, int dev);
FAKE_HIP_API fake_cuDeviceTotalMem(size_t *bytes, int dev);
FAKE_HIP_API fake_cuDeviceGetAttribute(int *pi, int attrib, int dev);
FAKE_HIP_API fake_cuCtxSynchronize(void);
FAKE_HIP_API fake_cuStreamCreate(hipStream_t *phStream, unsigned int Flags);
FAKE_HIP_API fake_cuStreamDestroy(hipStream_t hStream);
FAKE_HIP_API fake_cuStreamSynchronize(hipStream_t hStream);
FAKE_HIP_API fake_cuStreamQuery(hipStream_t hStream);
FAKE_HIP_API fake_cuStreamWaitEvent(hipStream_t hStream, hipEvent_t hEvent, unsigned int Flags);
FAKE_HIP_API fake_cuEventCreate(hipEvent_t *phEvent, unsigned int Flags);
FAKE_HIP_API fake_cuEventDestroy(hipEvent_t hEvent);
FAKE_HIP_API fake_cuEventRecord(hipEvent_t hEvent, hipStream_t hStream);
FAKE_HIP_API fake_cuEventSynchronize(hipEvent_t hEvent);
FAKE_HIP_API fake_cuEventQuery(hipEvent_t hEvent);
FAKE_HIP_API fake_cuEventElapsedTime(float *pMilliseconds, hipEvent_t hStart, hipEvent_t hEnd);
// fake_hip_memory.cpp
FAKE_HIP_API fake_cuMemGetInfo(size_t *free, size_t *total);
FAKE_HIP_API fake_cuMemAlloc(fh_devptr *dptr, size_t bytesize);
FAKE_HIP_API fake_cuMemFree(fh_devptr dptr);
FAKE_HIP_API fake_cuMemGetAddressRange(fh_devptr *pbase, size_t *psize, fh_devptr dptr);
FAKE_HIP_API fake_hipPointerGetAttributes(fh_PointerAttribute *attr, fh_devptr ptr);
FAKE_HIP_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
FAKE_HIP_API fake_cuMemFreeHost(void *p);
FAKE_HIP_API fake_cuMemHostGetDevicePointer(fh_devptr *pdptr, void *p, unsigned int Flags);
FAKE_HIP_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FAKE_HIP_API fake_cuMemHostUnregister(void *p);
FAKE_HIP_API fake_cuMemcpy(fh_devptr dst, fh_devptr src, size_t ByteCount);
FAKE_HIP_API fake_cuMemcpyAsync(fh_devptr dst, fh_devptr src, size_t ByteCount, hipStream_t hStream);
FAKE_HIP_API fake_cuMemsetD8(fh_devptr dstDevice, unsigned char uc, size_t N);
FAKE_HIP_API fake_cuMemsetD8Async(fh_devptr dstDevice, unsigned char uc, size_t N, hipStream_t hStream);
FAKE_HIP_API fake_cuMemAllocManaged(fh_devptr *dptr, size_t bytesize, unsigned int flags);
FAKE_HIP_API fake_cuStreamAttachMemAsync(hipStream_t hStream, fh_devptr dptr, size_t length, unsigned int flags);
FAKE_HIP_API fake_cuMemPrefetchAsync_v1(fh_devptr devPtr, size_t count, int dstDevice, hipStream_t hStream);
FAKE_HIP_API fake_cuMemAdvise_v1(fh_devptr devPtr, size_t count, int advice, int device);
// fake_hip_pools.cpp
FAKE_HIP_API fake_cuDeviceGetDefaultMemPool(hipMemPool_t *pool_out, int dev);
FAKE_HIP_API fake_cuDeviceGetMemPool(hipMemPool_t *pool, int dev);
FAKE_HIP_API fake_cuDeviceSetMemPool(int dev, hipMemPool_t pool);
FAKE_HIP_API fake_cuMemPoolCreate(hipMemPool_t *pool, const fh_MemPoolProps *poolProps);
FAKE_HIP_API fake_cuMemPoolDestroy(hipMemPool_t pool);
FAKE_HIP_API fake_cuMemAllocFromPoolAsync(fh_devptr *dptr, size_t bytesize, hipMemPool_t pool, hipStream_t hStream);
FAKE_HIP_API fake_cuMemAllocAsync(fh_devptr *dptr, size_t bytesize, hipStream_t hStream);
FAKE_HIP_API fake_cuMemFreeAsync(fh_devptr dptr, hipStream_t hStream);
FAKE_HIP_API fake_cuMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value);
FAKE_HIP_API fake_cuMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value);
FAKE_HIP_API fake_cuMemPoolTrimTo(hipMemPool_t pool, size_t minBytesToKeep);
FAKE_HIP_API fake_cuMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *map, size_t count);
FAKE_HIP_API fake_cuMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t memPool, hipMemLocation *location);
FAKE_HIP_API fake_cuMemPoolExportToShareableHandle(void *handle_out, hipMemPool_t pool,
                                                    hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_HIP_API fake_cuMemPoolImportFromShareableHandle(hipMemPool_t *pool_out, void *handle,
                                                      hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_HIP_API fake_cuMemPoolExportPointer(hipMemPoolPtrExportData *shareData_out, fh_devptr ptr);
FAKE_HIP_API fake_cuMemPoolImportPointer(fh_devptr *ptr_out, hipMemPool_t pool, hipMemPoolPtrExportData *shareData);
// fake_hip_vmm.cpp
FAKE_HIP_API fake_cuMemGetAllocationGranularity(size_t *granularity, const fh_MemAllocationProp *prop,
                                                 fh_MemAllocationGranularity_flags option);
FAKE_HIP_API fake_cuMemCreate(fh_memhandle *handle, size_t size, const fh_MemAllocationProp *prop,
                               unsigned long long flags);
FAKE_HIP_API fake_cuMemRelease(fh_memhandle handle);
FAKE_HIP_API fake_cuMemAddressReserve(fh_devptr *ptr, size_t size, size_t alignment, fh_devptr addr,
                                       unsigned long long flags);
FAKE_HIP_API fake_cuMemAddressFree(fh_devptr ptr, size_t size);
FAKE_HIP_API fake_cuMemMap(fh_devptr ptr, size_t size, size_t offset, fh_memhandle handle,
                            unsigned long long flags);
FAKE_HIP_API fake_cuMemUnmap(fh_devptr ptr, size_t size);
FAKE_HIP_API fake_cuMemSetAccess(fh_devptr ptr, size_t size, const hipMemAccessDesc *desc, size_t count);
FAKE_HIP_API fake_cuMemGetAccess(unsigned long long *flags, const hipMemLocation *location, fh_devptr ptr);
FAKE_HIP_API fake_cuMemExportToShareableHandle(void *shareableHandle, fh_memhandle handle,
                                                hipMemAllocationHandleType handleType, unsigned long long flags);
FAKE_HIP_API fake_cuMemImportFromShareableHandle(fh_memhandle *handle, void *osHandle,
                                                  hipMemAllocationHandleType shHandleType);
FAKE_HIP_API fake_cuMemGetAllocationPropertiesFromHandle(fh_MemAllocationProp *prop,
                                                          fh_memhandle handle);
