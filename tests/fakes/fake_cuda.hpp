// A fake CUDA driver (libfakecuda.so) for testing gpumem's CUDA backend without a GPU.
//
// It exports what a real libcuda exports and gpumem dlsyms (cuInit, cuDriverGetVersion,
// cuGetProcAddress and cuGetProcAddress_v2); everything else is reached through
// cuGetProcAddress, typed with the prototypes of CUDA 13's <cuda.h>.  Memory lives in host
// memory: device allocations come from a reserved "device address range" that the CPU
// cannot touch (as on a real GPU; FAKE_CUDA_HOST_ACCESS=1 lifts that), backed by memfds
// the fake reads and writes through a second mapping.  Work is synchronous.  The
// environment variables (FAKE_CUDA_*) turn features off so every fallback path of the
// backend runs in CI; see README.md next to this file.
//
// Internal header shared by the fake's translation units.  Every API function takes the
// one global mutex (state().mu) after the init check; helpers named *_locked expect it held.
//
// SPDX-License-Identifier: MIT
#pragma once

#include <cuda.h>

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

namespace fakecuda {

// Built as libfakecuda_v1.so with FAKE_CUDA_V1_ONLY=1: a CUDA 11.8 driver, which exports
// only the 4-argument cuGetProcAddress.
#ifndef FAKE_CUDA_V1_ONLY
#define FAKE_CUDA_V1_ONLY 0
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
    int devices = 1;                // FAKE_CUDA_DEVICES
    uint64_t memory = 8 * kGiB;     // FAKE_CUDA_MEMORY (bytes, or with a K/M/G/T suffix)
    int driver_version = 13000;     // FAKE_CUDA_DRIVER_VERSION; FAKE_CUDA_OLD_DRIVER=1 -> 11080
    bool managed = true;            // FAKE_CUDA_NO_MANAGED=1 turns off
    bool concurrent_managed = true; // FAKE_CUDA_NO_CONCURRENT_MANAGED=1 turns off (and with managed)
    bool pools = true;              // FAKE_CUDA_NO_POOLS=1
    bool vmm = true;                // FAKE_CUDA_NO_VMM=1
    bool ipc = true;                // FAKE_CUDA_NO_IPC=1
    bool host_register = true;      // FAKE_CUDA_NO_HOST_REGISTER=1
    bool pageable = false;          // FAKE_CUDA_PAGEABLE=1: the device reads plain malloc memory
    uint64_t pool_granule = 32 * kMiB; // FAKE_CUDA_POOL_GRANULE: pools reserve and release in these
                                       // (32 MiB, as driver 580 does on an H200)
    bool host_access = false;       // FAKE_CUDA_HOST_ACCESS=1: the CPU may touch device memory
    bool defer = false;             // FAKE_CUDA_DEFER=1: stream work runs when the host waits for it
    bool stub = false;              // FAKE_CUDA_STUB=1: every call is CUDA_ERROR_STUB_LIBRARY
    bool no_device = false;         // FAKE_CUDA_NO_DEVICE=1: cuInit is CUDA_ERROR_NO_DEVICE
    bool init_fail = false;         // FAKE_CUDA_INIT_FAIL=1: cuInit is CUDA_ERROR_UNKNOWN
    bool trace = false;             // FAKE_CUDA_TRACE=1: every call on stderr
};
const Config &config();

// ---------------------------------------------------------------------------------------------
// Tracing.  Each API function opens a Call; its result goes through done()/fail(), which
// print one line with FAKE_CUDA_TRACE=1 (and the reason for a failure).
// ---------------------------------------------------------------------------------------------
class Call {
public:
    explicit Call(const char *name) : name_(name) {}
    void args(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    void out(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    CUresult done(CUresult r);
    CUresult fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

private:
    const char *name_;
    std::string args_, out_, why_;
};

const char *error_name(CUresult r); // "CUDA_ERROR_..." or "CUDA_ERROR_<n>"

// CUDA_SUCCESS when the driver may be used: the stub refuses everything, and nothing but
// cuInit, cuDriverGetVersion, cuGetProcAddress and the error strings works before cuInit.
CUresult check_initialized();

#define FAKE_ENTER(name, ...)                                                                                \
    ::fakecuda::Call call_(name);                                                                            \
    if (::fakecuda::config().trace)                                                                          \
        call_.args(__VA_ARGS__);                                                                             \
    if (CUresult init_rc_ = ::fakecuda::check_initialized())                                                 \
        return call_.done(init_rc_);                                                                         \
    std::lock_guard<std::mutex> state_lock_(::fakecuda::state().mu)

#define RET(r) return call_.done(r)
#define FAIL(r, ...) return call_.fail((r), __VA_ARGS__)
#define OUT(...)                                                                                             \
    do {                                                                                                     \
        if (::fakecuda::config().trace)                                                                      \
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
// runs at once, or with FAKE_CUDA_DEFER=1 when the host waits for it (see enqueue_locked).
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
    std::deque<Op> pending; // FAKE_CUDA_DEFER=1: enqueued, not executed yet
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
    std::vector<int> access;     // VmmMap: CUmemAccess_flags per device
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
    uint64_t id = 0;     // CUmemoryPool handle value
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
    std::vector<int> access; // CUmemAccess_flags per device

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
    uint64_t id = 0; // CUmemGenericAllocationHandle
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
    int ctx_refs = 0;  // primary context retains
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
// fake_cuda.cpp
bool valid_device(int dev);
// The device of the calling thread's current context: CUDA_ERROR_INVALID_CONTEXT without
// one, CUDA_ERROR_CONTEXT_IS_DESTROYED when its primary context is released.
CUresult current_device_locked(int *dev);
// A stream handle (NULL and CU_STREAM_LEGACY: the current context's NULL stream).
CUresult find_stream_locked(CUstream h, Stream **out);
// Enqueue an operation on `s`: `run` (if any) executes after everything enqueued before on
// `s` and after `deps`; the legacy NULL stream's implicit ordering against blocking streams
// is added.  Runs at once, unless FAKE_CUDA_DEFER=1: then it waits in `pending` until the
// host synchronises (or a query lets the stream progress).
void enqueue_locked(Stream &s, std::function<void()> run = nullptr, std::vector<Dep> deps = {});
// Execute `s`'s pending operations up to `upto` (with what they wait for on other streams).
void run_stream_locked(Stream &s, uint64_t upto);
void run_all_locked(int device); // -1: every device
// Operations of stream `id` that executed (every one when the stream is gone).
uint64_t stream_done_locked(uint64_t id);
double now_ms();

// fake_cuda_memory.cpp
bool region_init_locked(); // the device address range (at cuInit)
bool region_alloc_locked(uint64_t size, uint64_t align, uint64_t hint, uint64_t *va);
void region_release_locked(uint64_t va, uint64_t size); // back to the free device address space
bool region_map_fd_locked(uint64_t va, uint64_t size, int fd, uint64_t offset); // memfd at va
void region_map_none_locked(uint64_t va, uint64_t size);  // reserved, inaccessible
void region_set_prot_locked(uint64_t va, uint64_t size, int access_flags); // FAKE_CUDA_HOST_ACCESS
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

// fake_cuda_pools.cpp
// After the host waited for work (stream, event or device synchronisation): frees that
// work covered become known-complete, and pools give back what exceeds their release
// threshold.
void pools_after_sync_locked();
void pool_free_block_locked(const std::shared_ptr<Pool> &pool, uint64_t addr, Stream *stream); // nullptr: synchronous
void destroy_context_pools_locked(int dev);
std::shared_ptr<Pool> default_pool_locked(int dev); // made on first use

} // namespace fakecuda

// The API functions the fake implements (names as in <cuda.h>, prefixed fake_).  The
// cuGetProcAddress table in fake_cuda.cpp checks each against <cuda.h>'s prototype.
#define FAKE_CUDA_API extern "C" CUresult
// fake_cuda.cpp
FAKE_CUDA_API fake_cuGetErrorName(CUresult error, const char **pStr);
FAKE_CUDA_API fake_cuGetErrorString(CUresult error, const char **pStr);
FAKE_CUDA_API fake_cuDeviceGetCount(int *count);
FAKE_CUDA_API fake_cuDeviceGet(CUdevice *device, int ordinal);
FAKE_CUDA_API fake_cuDeviceGetName(char *name, int len, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxRelease(CUdevice dev);
FAKE_CUDA_API fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
FAKE_CUDA_API fake_cuCtxSetCurrent(CUcontext ctx);
FAKE_CUDA_API fake_cuCtxGetCurrent(CUcontext *pctx);
FAKE_CUDA_API fake_cuCtxGetDevice(CUdevice *device);
FAKE_CUDA_API fake_cuCtxSynchronize(void);
FAKE_CUDA_API fake_cuStreamCreate(CUstream *phStream, unsigned int Flags);
FAKE_CUDA_API fake_cuStreamDestroy(CUstream hStream);
FAKE_CUDA_API fake_cuStreamSynchronize(CUstream hStream);
FAKE_CUDA_API fake_cuStreamQuery(CUstream hStream);
FAKE_CUDA_API fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
FAKE_CUDA_API fake_cuEventCreate(CUevent *phEvent, unsigned int Flags);
FAKE_CUDA_API fake_cuEventDestroy(CUevent hEvent);
FAKE_CUDA_API fake_cuEventRecord(CUevent hEvent, CUstream hStream);
FAKE_CUDA_API fake_cuEventSynchronize(CUevent hEvent);
FAKE_CUDA_API fake_cuEventQuery(CUevent hEvent);
FAKE_CUDA_API fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
// fake_cuda_memory.cpp
FAKE_CUDA_API fake_cuMemGetInfo(size_t *free, size_t *total);
FAKE_CUDA_API fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
FAKE_CUDA_API fake_cuMemFree(CUdeviceptr dptr);
FAKE_CUDA_API fake_cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
FAKE_CUDA_API fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
FAKE_CUDA_API fake_cuMemFreeHost(void *p);
FAKE_CUDA_API fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags);
FAKE_CUDA_API fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FAKE_CUDA_API fake_cuMemHostUnregister(void *p);
FAKE_CUDA_API fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
FAKE_CUDA_API fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
FAKE_CUDA_API fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
FAKE_CUDA_API fake_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
FAKE_CUDA_API fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
FAKE_CUDA_API fake_cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags);
FAKE_CUDA_API fake_cuMemPrefetchAsync_v1(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
FAKE_CUDA_API fake_cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                         CUstream hStream);
FAKE_CUDA_API fake_cuMemAdvise_v1(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
FAKE_CUDA_API fake_cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location);
// fake_cuda_pools.cpp
FAKE_CUDA_API fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
FAKE_CUDA_API fake_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
FAKE_CUDA_API fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
FAKE_CUDA_API fake_cuMemPoolDestroy(CUmemoryPool pool);
FAKE_CUDA_API fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
FAKE_CUDA_API fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
FAKE_CUDA_API fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
FAKE_CUDA_API fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
FAKE_CUDA_API fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
FAKE_CUDA_API fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
FAKE_CUDA_API fake_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
FAKE_CUDA_API fake_cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location);
FAKE_CUDA_API fake_cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                    CUmemAllocationHandleType handleType, unsigned long long flags);
FAKE_CUDA_API fake_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                      CUmemAllocationHandleType handleType, unsigned long long flags);
FAKE_CUDA_API fake_cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData);
// fake_cuda_vmm.cpp
FAKE_CUDA_API fake_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option);
FAKE_CUDA_API fake_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags);
FAKE_CUDA_API fake_cuMemRelease(CUmemGenericAllocationHandle handle);
FAKE_CUDA_API fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags);
FAKE_CUDA_API fake_cuMemAddressFree(CUdeviceptr ptr, size_t size);
FAKE_CUDA_API fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags);
FAKE_CUDA_API fake_cuMemUnmap(CUdeviceptr ptr, size_t size);
FAKE_CUDA_API fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
FAKE_CUDA_API fake_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr);
FAKE_CUDA_API fake_cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType, unsigned long long flags);
FAKE_CUDA_API fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                  CUmemAllocationHandleType shHandleType);
FAKE_CUDA_API fake_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                          CUmemGenericAllocationHandle handle);
