// The engine shared by the fake CUDA driver (libfakecuda.so) and the fake HIP runtime
// (libfakehip.so): device and host memory bookkeeping, the device address range with its
// second (shadow) mapping, streams and events, memory pools with stream-ordered reuse,
// release threshold and export/import, the memfds shared between processes, and what stream
// capture and graphs keep (captures, graphs, graph allocations, user objects).  Written
// in runtime-neutral terms: its own status codes (Status), access flags and handle-type
// numbers; each runtime (fake_cuda*.cpp, fake_hip*.cpp) maps them onto its own error codes
// and types and provides config() / state() through the hooks declared here.
//
// Every API function takes the one global mutex (state().mu) after the init check; helpers
// named *_locked expect it held.
//
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace fakegpu {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kGranularity = 2 * kMiB; // VMM minimum and recommended granularity
constexpr uint64_t kPoolAlign = 512;        // pool blocks: sizes and offsets
constexpr uint64_t kPitchAlignment = 512;   // pitched allocations: rows start at multiples of it
constexpr uint64_t kFdHeader = kPage;       // memfds shared between processes start with a header page

// ---------------------------------------------------------------------------------------------
// Runtime-neutral numbers.  Each runtime static_asserts that its own constants match.
// ---------------------------------------------------------------------------------------------
enum Status {
    kStatusOk = 0,
    kStatusInvalidValue,
    kStatusOutOfMemory,
};
constexpr int kAccessNone = 0, kAccessRead = 1, kAccessReadWrite = 3; // per-device access flags
constexpr unsigned kHandleTypeNone = 0, kHandleTypePosixFd = 1;       // shareable handle types
constexpr unsigned kStreamNonBlocking = 1;                            // stream creation flag
typedef unsigned long long DevPtr;                                    // a device address

// ---------------------------------------------------------------------------------------------
// Configuration that means the same in both runtimes (read from FAKE_CUDA_* or FAKE_HIP_*).
// ---------------------------------------------------------------------------------------------
struct EngineConfig {
    const char *name = "fakegpu";         // message prefix and memfd names: "fakecuda", "fakehip"
    const char *env_prefix = "FAKE_GPU_"; // "FAKE_CUDA_", "FAKE_HIP_"
    int devices = 1;                // <prefix>DEVICES
    uint64_t memory = 8 * kGiB;     // <prefix>MEMORY (bytes, or with a K/M/G/T suffix)
    bool managed = true;            // <prefix>NO_MANAGED=1 turns off
    bool concurrent_managed = true;
    bool pools = true;              // <prefix>NO_POOLS=1
    bool vmm = true;                // <prefix>NO_VMM=1
    bool ipc = true;                // <prefix>NO_IPC=1
    // GPUDirect RDMA with VMM memory, as an H200 has it (probe group export:
    // attr_gdr_vmm 1, vmm_rdma_create succeeds); <prefix>NO_RDMA=1 takes it away.
    bool rdma = true;
    bool host_register = true;      // <prefix>NO_HOST_REGISTER=1
    bool pageable = false;          // the device reads plain malloc memory
    uint64_t pool_granule = 32 * kMiB; // <prefix>POOL_GRANULE: pools reserve and release in these
                                       // (32 MiB, as driver 580 does on an H200)
    bool host_access = false;       // <prefix>HOST_ACCESS=1: the CPU may touch device memory
    bool defer = false;             // <prefix>DEFER=1: stream work runs when the host waits for it
    int initial_device = -1;        // a thread's current device before it sets one: CUDA none (-1), HIP 0
    uint64_t uuid_seed = 0x6770756d656d0001ull; // <prefix>UUID_SEED: the devices' UUIDs derive from it
    bool no_device = false;         // <prefix>NO_DEVICE=1
    bool init_fail = false;         // <prefix>INIT_FAIL=1
    bool trace = false;             // <prefix>TRACE=1: every call on stderr
    // Known vendor bugs, reproduced (gpumem's table: src/backends/gpu/vendor_bugs.def).
    bool bug_ignore_release_threshold = false; // <prefix>BUG_IGNORE_RELEASE_THRESHOLD=1: pools keep
                                               // everything at synchronisation (explicit trims still work)
    bool bug_double_free_on_failed_alloc = false; // <prefix>BUG_DOUBLE_FREE_ON_FAILED_ALLOC=1: a failed
                                                  // pool allocation retried on that pool is a double free
    bool bug_register_device_address = false;  // <prefix>BUG_REGISTER_DEVICE_ADDRESS=1: registered memory's
                                               // device address is not its host address
    bool bug_leak_free_async = false;          // <prefix>BUG_LEAK_FREE_ASYNC=1: blocks freed with
                                               // FreeAsync never go back to their pool (counted)
    bool bug_pool_destroy_deferred = false;    // <prefix>BUG_POOL_DESTROY_DEFERRED=1: destroying a pool
                                               // with live allocations kills the process, as the
                                               // driver's deferred destruction later does
    // Features the device claims and a container or platform then refuses
    // (<prefix>BREAK, a comma list), each with the error the driver gives there:
    bool break_vmm_export = false;       // vmm_export: MemExportToShareableHandle is NOT_PERMITTED
                                         // (a container without the permission to share)
    bool break_managed_prefetch = false; // managed_prefetch: MemPrefetchAsync is INVALID_DEVICE
                                         // (what a device without concurrent managed access says)
    bool break_dmabuf = false;           // dmabuf: GetHandleForAddressRange is NOT_SUPPORTED
                                         // (DMA_BUF_SUPPORTED says 1, the kernel module refuses)
    bool break_peer_copy = false;        // peer_copy: peer access enables, and MemcpyPeer(Async)
                                         // between two devices with access enabled (either way)
                                         // is PEER_ACCESS_UNSUPPORTED (a platform whose peer path
                                         // maps but does not copy; without access it is staged)
};
// What the reproduced bugs did, for the fakes' own checks and messages.
struct BugCounters {
    uint64_t double_frees = 0;
    uint64_t leaked_bytes = 0;
};
BugCounters &bug_counters(); // under state().mu
// bug_register_device_address: the bits that tell a registered range's device address from its host one.
constexpr uint64_t kRegisteredAlias = uint64_t{1} << 46;
// Defined by the runtime (its Config derives from EngineConfig).
const EngineConfig &engine_config();
// The settings every runtime reads alike, from c.env_prefix + NAME.  `version` runs between
// the memory size and the pool granule (the order the runtimes report bad values in).
bool env_flag(const EngineConfig &c, const char *name);
void read_engine_config(EngineConfig &c, const std::function<void()> &version);
bool parse_size(const char *v, uint64_t *out);

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
    // Exactly [start, start+len), or false when any of it is taken.
    bool take_at(uint64_t start, uint64_t len);

private:
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
struct Capture;

// A stream keeps the order information the stream-ordered allocator needs (which frees
// another stream has been made to wait for, which frees the host has seen complete).  Work
// runs at once, or with FAKE_*_DEFER=1 when the host waits for it (see enqueue_locked).
using Dep = std::pair<uint64_t, uint64_t>; // (stream id, seq) an operation must wait for
struct Stream {
    uint64_t id = 0;
    int device = 0;
    unsigned flags = 0;   // CU_STREAM_*
    int priority = 0;     // as clamped at creation (kPriorityLeast..kPriorityGreatest of the vendor)
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
    std::deque<Op> pending; // FAKE_*_DEFER=1: enqueued, not executed yet
    // Stream capture (fake_api_graphs.cpp): the capture this stream takes part in (its origin, or
    // one it joined by waiting on an event recorded in it), and the nodes the next captured node
    // depends on (their handles too, for GetCaptureInfo).
    std::shared_ptr<Capture> capture;
    std::vector<uint64_t> capture_deps;
    std::vector<void *> capture_deps_out;
    std::vector<unsigned char> capture_edges_out; // (CUDA 12.3's form: edge data, all default)
};

// The state an event shared between processes keeps in a memfd both map (fake_api_rows.cpp):
// records made so far by either process, and how many of them have executed.
struct IpcEventShared {
    char magic[8];
    uint64_t uid;
    uint64_t recorded;  // atomically (__atomic builtins: two processes)
    uint64_t completed;
};
struct IpcEvent {
    int fd = -1;
    IpcEventShared *shared = nullptr; // mapped
    uint64_t uid = 0;
    bool opened = false; // opened from another process's handle
    ~IpcEvent();
};

struct Event {
    uint64_t id = 0;
    int device = 0;
    unsigned flags = 0;
    std::shared_ptr<IpcEvent> ipc; // CU_EVENT_INTERPROCESS: made at its first handle, or opened
    bool recorded = false;
    uint64_t stream = 0; // id of the stream it was recorded on
    uint64_t seq = 0;    // that stream's seq at the record
    bool completed = false; // the record has executed
    double ms = 0;          // host time of the record
    uint64_t capture = 0;   // the capture its last record was captured in (0: recorded outside any)
    std::vector<uint64_t> capture_deps; // the recording stream's capture dependencies at the record
};

// A live range of the device address space: what a device pointer means.
// GraphAlloc: a graph's allocation while it is allocated (see GraphMem).
enum class SegKind { Device, PoolBlock, PoolImport, VmmMap, GraphAlloc };
struct GraphMem;
struct Segment {
    uint64_t size = 0;      // bytes a copy may touch
    uint64_t charged = 0;   // Device: bytes of address space and device memory it holds
    char *shadow = nullptr; // where the fake reads and writes these bytes
    SegKind kind = SegKind::Device;
    int device = 0;
    std::shared_ptr<Pool> pool;  // PoolBlock, PoolImport
    std::shared_ptr<Phys> phys;  // VmmMap
    uint64_t phys_offset = 0;    // VmmMap
    std::vector<int> access;     // VmmMap: access flags (kAccess*) per device
    std::shared_ptr<GraphMem> gmem; // GraphAlloc
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

// What a pool's memory is: device memory (the arena faults on the host unless HOST_ACCESS),
// host memory or managed memory (the CPU reaches the arena; it is not device memory).
enum class PoolMemory { Device, Host, Managed };

// A memory pool (stream-ordered allocator).  Its memory is an arena in a memfd, mapped at
// `base` in the device address range, so another process can map it too.
struct Pool {
    uint64_t id = 0;     // pool handle value
    uint64_t uid = 0;    // identity across processes
    int device = 0;
    bool is_default = false;
    bool imported = false;
    bool destroyed = false;
    PoolMemory memory = PoolMemory::Device;
    unsigned handle_types = 0;
    uint64_t max_size = 0; // 0 = unlimited
    uint64_t failed_size = 0; // bug_double_free_on_failed_alloc: the size of the last failed allocation,
                              // until memory comes back to the pool
    uint64_t capacity = 0; // arena bytes
    uint64_t base = 0;     // device address of the arena
    char *shadow = nullptr;
    int fd = -1;

    // attributes
    int follow_event_deps = 1, opportunistic = 1, internal_deps = 1;
    uint64_t release_threshold = 0;
    uint64_t reserved = 0, used = 0, reserved_high = 0, used_high = 0;
    std::vector<int> access; // access flags (kAccess*) per device

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
    bool fabric_export_refused = false;  // its fabric export was refused: some calls on it crash
                                         // (fake_api_pools.cpp, crash_as_the_driver)
    ~Pool();
};

// A physical allocation of the VMM API (cuMemCreate or imported).
struct Phys {
    uint64_t id = 0; // VMM handle value
    int device = 0;
    uint64_t size = 0;
    unsigned handle_types = 0;
    bool rdma = false; // made with allocFlags.gpuDirectRDMACapable
    bool imported = false;
    int fd = -1;
    char *shadow = nullptr;
    int refs = 1; // handles to it (created or imported, and each retain); a mapping holds it apart
    int mappings = 0; // segments mapped from it
    ~Phys();
};

// ---------------------------------------------------------------------------------------------
// Stream capture and graphs (the model: fake_gpu_graphs.cpp; the rules and entry points:
// fake_api_graphs.cpp).  Values are CUDA's and HIP's alike.
// ---------------------------------------------------------------------------------------------
constexpr int kCaptureGlobal = 0, kCaptureThreadLocal = 1, kCaptureRelaxed = 2; // capture modes
constexpr int kCaptureNone = 0, kCaptureActive = 1, kCaptureInvalidated = 2;    // capture statuses
constexpr unsigned long long kInstantiateAutoFree = 1, kInstantiateUpload = 2, kInstantiateDeviceLaunch = 4,
                             kInstantiateNodePriority = 8;

struct Graph;
// One capture sequence, from begin to end.  Streams that wait on an event recorded in it join it.
struct Capture {
    uint64_t id = 0;            // unique over the process (GetCaptureInfo)
    int mode = kCaptureGlobal;  // the mode it began with
    uint64_t thread = 0;        // the thread that began it (thread_serial())
    uint64_t origin = 0;        // the stream it began on (where it must end)
    int device = 0;             // the origin's device
    bool invalidated = false;
    std::string why;            // what invalidated it
    std::shared_ptr<Graph> graph;
};

// A graph allocation (an alloc node's memory).  Its address is fixed when the node is made and
// stays reserved while a graph, an executable graph or the allocation itself holds it; the memory
// exists (a GraphAlloc segment, charged to the device) from a launch's alloc node to the free that
// matches it (a free node, cuMemFreeAsync, cuMemFree).
struct GraphMem {
    uint64_t va = 0, size = 0, charged = 0;
    int device = 0;
    uint64_t graph = 0;          // the graph whose alloc node made it
    bool live = false;           // allocated now
    bool freed_in_graph = false; // a free node of some graph frees it
    ~GraphMem();                 // gives the address range back (state().mu held)
};

enum class NodeKind { Copy, Fill, Alloc, Free, EventWait, Host };
// Rows of a copy or fill (2-D and 3-D calls): `height` rows of `size` bytes, `depth` times; row y
// of slice z of a side starts at its address + (z * rows + y) * pitch.  One row: a plain range.
struct RowsGeom {
    uint64_t height = 1, depth = 1;
    uint64_t dst_pitch = 0, dst_rows = 1, src_pitch = 0, src_rows = 1;
    unsigned elem = 1; // Fill: bytes of an element (1, 2, 4), `value` its pattern
};
struct GraphNode {
    uint64_t id = 0; // handle value (kNodeTag)
    NodeKind kind = NodeKind::Copy;
    std::vector<uint64_t> deps;    // node ids
    DevPtr dst = 0, src = 0;       // Copy, Fill (dst)
    uint64_t size = 0;             // Copy, Fill (of a row)
    uint32_t value = 0;            // Fill
    RowsGeom rows;                 // Copy, Fill
    void (*fn)(void *) = nullptr;  // Host: the function and its argument, run at each launch
    void *user = nullptr;
    int dst_dev = 0, src_dev = 0;  // the devices each side is checked from (a fill: dst_dev)
    std::shared_ptr<GraphMem> mem; // Alloc, Free
    uint64_t event = 0;            // EventWait: the event waited for at each launch
};

struct Graph {
    uint64_t id = 0; // handle value (kGraphTag)
    int device = 0;
    std::vector<GraphNode> nodes;             // in the order captured (a topological order)
    std::map<uint64_t, unsigned> user_refs;   // user object -> references this graph owns
    uint64_t capture = 0;                     // the capture building it (0: complete)
    int execs = 0;                            // executable graphs made from it that live
    bool has_mem_nodes() const;
};

// User-object references an executable graph owns: released when the last of the exec and its
// pending launches lets go (the launches' stream operations hold them too).
struct ExecRefs {
    std::map<uint64_t, unsigned> user_refs;
    ~ExecRefs(); // state().mu held
};

struct GraphExec {
    uint64_t id = 0; // handle value (kExecTag)
    int device = 0;
    uint64_t graph = 0; // the graph it came from
    unsigned long long flags = 0;
    std::vector<GraphNode> nodes;
    std::shared_ptr<ExecRefs> refs;
};

struct UserObject {
    uint64_t id = 0; // handle value (kUserObjTag)
    void *ptr = nullptr;
    void (*destroy)(void *) = nullptr;
    uint64_t refs = 0;
};

struct Device {
    uint64_t used = 0; // device memory held: allocations, pool reservations, VMM
    int ctx_refs = 0;  // primary context retains
    bool faulted = false; // a device fault left its context unusable (sticky_fault)
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
    std::unordered_map<uint64_t, std::shared_ptr<Phys>> phys;   // held handles, and released ones still mapped
    std::map<uint64_t, Segment> segments;                        // by device address
    std::map<uint64_t, uint64_t> reservations;                   // VMM: start -> size
    std::map<uint64_t, HostRange> host;                          // by host address
    std::set<std::pair<int, int>> peers;                         // peer access enabled: (device, peer)
    uint64_t host_used = 0, host_limit = 0;
    // Stream capture and graphs.
    uint64_t next_capture_id = 1;
    std::map<uint64_t, std::shared_ptr<Capture>> captures;       // under way (active or invalidated)
    std::map<uint64_t, std::shared_ptr<Graph>> graphs;           // by handle
    std::map<uint64_t, std::unique_ptr<GraphExec>> execs;        // by handle
    std::map<uint64_t, UserObject> user_objects;                 // by handle, while referenced
    std::map<uint64_t, std::weak_ptr<GraphMem>> graph_mems;      // by address
};
State &state();

// Handle values: distinct tags so that one kind of handle is never taken for another.
constexpr uint64_t kCtxTag = 0x00000ca700000000ull;
constexpr uint64_t kStreamTag = 0x00000ca800000000ull;
constexpr uint64_t kEventTag = 0x00000ca900000000ull;
constexpr uint64_t kPoolTag = 0x00000caa00000000ull;
constexpr uint64_t kMemTag = 0x00000cab00000000ull;
constexpr uint64_t kGraphTag = 0x00000cac00000000ull;
constexpr uint64_t kExecTag = 0x00000cad00000000ull;
constexpr uint64_t kNodeTag = 0x00000cae00000000ull;
constexpr uint64_t kUserObjTag = 0x00000caf00000000ull;
inline uint64_t new_handle(uint64_t tag) { return tag + (state().next_id++ << 4); }

// ---------------------------------------------------------------------------------------------
// Engine helpers (fake_gpu_engine.cpp, fake_gpu_pools.cpp).
// ---------------------------------------------------------------------------------------------
bool valid_device(int dev);

// The calling thread's current device: the device of CUDA's current context, HIP's current
// device; -1 none.  A thread starts with EngineConfig::initial_device.  (Whether a CUDA context
// is still alive is the vendor's to check: current_device_locked.)
int thread_device();
void set_thread_device(int dev);
// Device `dev`'s UUID: 16 bytes (an RFC 4122 version 4 layout) from the device's ordinal and
// <prefix>UUID_SEED, so distinct per device and the same in every process of one fake machine.
void device_uuid(int dev, unsigned char out[16]);

// Where device memory can be reached from (the "acting device" of a call; see the design note
// in fake_gpu_engine.cpp).  A copy reads or writes, a fill writes, a range lookup only asks.
enum class Reach { Copy, Fill, Range };
// Whether `dev` may touch the live device memory `seg` this way; if not, *why says why.
bool device_reaches_locked(const Segment &seg, int dev, Reach how, bool write, std::string *why);
// Enqueue an operation on `s`: `run` (if any) executes after everything enqueued before on
// `s` and after `deps`; the legacy NULL stream's implicit ordering against blocking streams
// is added.  Runs at once, unless <prefix>DEFER=1: then it waits in `pending` until the
// host synchronises (or a query lets the stream progress).
void enqueue_locked(Stream &s, std::function<void()> run = nullptr, std::vector<Dep> deps = {});
// Execute `s`'s pending operations up to `upto` (with what they wait for on other streams).
void run_stream_locked(Stream &s, uint64_t upto);
void run_all_locked(int device); // -1: every device
// Operations of stream `id` that executed (every one when the stream is gone).
uint64_t stream_done_locked(uint64_t id);
// The host has seen `st`'s work up to `upto` complete / every stream of `dev` complete.
void stream_synced_locked(Stream &st, uint64_t upto);
void device_synced_locked(int dev);
double now_ms();

bool region_init_locked(); // the device address range (at initialisation)
bool region_alloc_locked(uint64_t size, uint64_t align, uint64_t hint, uint64_t *va);
void region_release_locked(uint64_t va, uint64_t size); // back to the free device address space
bool region_take_at_locked(uint64_t va, uint64_t size);  // exactly there, or false
bool region_map_fd_locked(uint64_t va, uint64_t size, int fd, uint64_t offset); // memfd at va
void region_map_none_locked(uint64_t va, uint64_t size);  // reserved, inaccessible
void region_set_prot_locked(uint64_t va, uint64_t size, int access_flags); // <prefix>HOST_ACCESS
bool in_region(uint64_t addr);
char *region_shadow(uint64_t va); // the fake's read-write view of plain device memory at va
// Host memory the fake knows that overlaps [addr, addr + len) (its start in *which).
HostRange *overlapping_host_locked(uint64_t addr, uint64_t len, uint64_t *which);
void free_device_segment_locked(uint64_t va, Segment &seg); // a plain device allocation
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

// Pools.  After the host waited for work (stream, event or device synchronisation): frees that
// work covered become known-complete, and pools give back what exceeds their release
// threshold.
void pools_after_sync_locked();
void pool_free_block_locked(const std::shared_ptr<Pool> &pool, uint64_t addr, Stream *stream); // nullptr: synchronous
void destroy_context_pools_locked(int dev);
std::shared_ptr<Pool> default_pool_locked(int dev); // made on first use
// A pool handle (CUmemoryPool, hipMemPool_t) to its pool.
Status find_pool_locked(const void *h, std::shared_ptr<Pool> *out);
Status create_pool_locked(int dev, unsigned handle_types, uint64_t max_size, bool is_default,
                            std::shared_ptr<Pool> *out, std::string *why, PoolMemory memory = PoolMemory::Device);
Status pool_alloc_locked(Pool &p, const std::shared_ptr<Pool> &ref, uint64_t size, Stream &st, DevPtr *dptr,
                           std::string *why);
void release_cached_locked(Pool &p, uint64_t keep, bool only_synced);
// Export data of a pool pointer (64 opaque bytes in CUDA and HIP).
struct PtrExport {
    char magic[8];
    uint64_t uid;
    uint64_t offset;
    uint64_t size;
    uint64_t check;
    char pad[24];
};
extern const char k_ptr_magic[8];
uint64_t ptr_check(const PtrExport &e);

// Stream capture and graphs (fake_gpu_graphs.cpp).
// A number for the calling thread, unique over the process (0 is never one).
uint64_t thread_serial();
// The calling thread's capture interaction mode (cuThreadExchangeStreamCaptureMode; kCaptureGlobal
// until it is exchanged).
int thread_capture_mode();
void set_thread_capture_mode(int mode);
// A graph allocation becomes allocated (a GraphAlloc segment, charged to its device) or not (the
// address stays reserved while anything holds the GraphMem; its bytes are left as they are:
// undefined, and pending stream work may still read them).
void graph_mem_set_live_locked(const std::shared_ptr<GraphMem> &m, bool live);
// User objects: drop `count` references; at zero the destructor runs.  Where, as driver 580 does:
// when the API call itself let go of the last reference (cuUserObjectRelease, cuGraphDestroy,
// cuGraphExecDestroy, the end of an invalidated capture...), on the calling thread before the call
// returns (run_due_callbacks, after state().mu is released); when completed stream work did (a
// launch that outlived its executable graph: StreamWorkScope), on the fake's own thread, later.
void user_object_release_locked(uint64_t id, uint64_t count);
// Runs the destructors due on the calling thread (the Call of every entry point, at its return).
void run_due_callbacks();
// While stream work runs and goes, the references it drops are the driver's (its thread runs them).
struct StreamWorkScope {
    StreamWorkScope();
    ~StreamWorkScope();
    StreamWorkScope(const StreamWorkScope &) = delete;
    StreamWorkScope &operator=(const StreamWorkScope &) = delete;
};
// Runtime callbacks scheduled for the fake's own thread run there, in order, never with
// state().mu held and never inside the API call that scheduled them: the thread waits a moment
// before running one (unless flush_callbacks asks), so a program that relies on a destructor having
// run without waiting for it fails here as it may on a real driver.  A callback that calls the
// runtime aborts the process with a message (illegal on a real driver), on either thread.
void schedule_callback_locked(void (*fn)(void *), void *arg);
// Waits until every callback scheduled before the call has run.
void flush_callbacks();
// Whether the calling thread is running a callback (every entry point checks: runtime_reentered).
bool in_runtime_callback();
// Mark the calling thread as running one (a host function's stream work, fake_api_rows.cpp).
void set_in_runtime_callback(bool on);
[[noreturn]] void runtime_reentered(const char *api);

} // namespace fakegpu
