#include "core/runtime.hpp"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "core/batch.hpp"
#include "core/limit.hpp"
#include "core/pools/own_pools.hpp"
#include "core/selftest.hpp"
#include "core/stats.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {

std::atomic<Runtime *> g_runtime{nullptr};

namespace {

std::mutex g_init_mutex;

// fork(): the runtime a child inherited from its parent, unpublished (no call
// may use the parent's GPU state) until the child calls gpumem_finalize.
Runtime *g_inherited = nullptr;
Runtime *g_forking = nullptr; // between the prepare and the parent/child handlers
bool g_fork_locked = false;   // the prepare handler took the init mutex
// Runtimes a child forgot: never released (that would release the parent's
// memory), kept reachable so that leak checkers do not report them.
std::vector<Runtime *> *g_forgotten = nullptr;

// The init mutex, held by this thread, remembered as such (a trace callback
// run by finalize that calls gpumem must get an answer, not a deadlock).
class LifecycleLock {
public:
    LifecycleLock() : lock_(g_init_mutex) { t_in_lifecycle = true; }
    ~LifecycleLock() { t_in_lifecycle = false; }

private:
    std::lock_guard<std::mutex> lock_;
};

status_t fail_in_lifecycle(const char *what)
{
    return fail(GPUMEM_ERROR_BUSY, "%s was called while this thread is inside gpumem_init or gpumem_finalize (from a "
                "trace callback?): call it after that returns", what);
}

status_t fail_forked(const char *what)
{
    return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                "%s: this process was forked from one that had initialised gpumem, and the parent's memory, streams and "
                "pools cannot be used in a child (as in CUDA); call gpumem_finalize() first, then gpumem may be used "
                "afresh in this process",
                what);
}

// fork(): no thread is inside a gpumem call while the process is copied, so
// the child inherits no lock held and no half-made change.
void fork_prepare()
{
    if (t_in_lifecycle || (t_calls && t_calls->depth.load(std::memory_order_relaxed) > 0))
        return; // forked from inside gpumem (a trace callback): nothing can be waited for
    g_init_mutex.lock();
    g_fork_locked = true;
    g_forking = g_runtime.exchange(nullptr, std::memory_order_acq_rel);
    if (g_forking)
        lifecycle::wait_for_calls(); // calls starting now wait on the init mutex
}

void fork_parent()
{
    if (!g_fork_locked)
        return;
    g_fork_locked = false;
    if (g_forking)
        g_runtime.store(g_forking, std::memory_order_release);
    g_forking = nullptr;
    g_init_mutex.unlock();
}

void fork_child()
{
    lifecycle::drop_other_threads();
    if (!g_fork_locked) {
        // Forked from inside a gpumem call: unpublish what is left.
        if (Runtime *rt = g_runtime.exchange(nullptr, std::memory_order_relaxed))
            g_inherited = rt;
        return;
    }
    g_fork_locked = false;
    if (g_forking)
        g_inherited = g_forking;
    g_forking = nullptr;
    g_init_mutex.unlock();
}

// A child's gpumem_finalize: kill every handle the parent made and forget
// its runtime without releasing anything (the memory is the parent's).
void forget_inherited()
{
    for (uint64_t h : pool_table().live_handles())
        pool_table().destroy(h);
    for (uint64_t h : stream_table().live_handles())
        stream_table().destroy(h);
    for (uint64_t h : event_table().live_handles())
        event_table().destroy(h);
    for (uint64_t h : buffer_table().live_handles())
        buffer_table().destroy(h);
    for (uint64_t h : mem_handle_table().live_handles())
        mem_handle_table().destroy(h);
    own_pools::forget_all(); // gpumem's own pools are process-wide: their blocks are the parent's
    if (!g_forgotten)
        g_forgotten = new std::vector<Runtime *>;
    g_forgotten->push_back(g_inherited);
    g_inherited = nullptr;
    log(LogLevel::info, "gpumem_finalize in a forked child: forgot the parent's runtime (nothing released)");
}

int32_t level(bool native, bool disabled, bool can_emulate, bool fallback_allowed)
{
    if (native && !disabled)
        return GPUMEM_SUPPORT_NATIVE;
    return (can_emulate && fallback_allowed) ? GPUMEM_SUPPORT_EMULATED : GPUMEM_SUPPORT_NONE;
}

[[maybe_unused]] status_t not_built(int32_t which)
{
    const char *name = backend_name(which);
    return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                "the %s backend is not part of this build of gpumem %d.%d.%d (its headers were not found when it was "
                "built); use GPUMEM_BACKEND=host (or leave it unset), or rebuild with -D%s=enabled",
                name, GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH, name);
}

status_t open_backend(int32_t which, const Options &options, std::unique_ptr<Backend> *out)
{
    switch (which) {
    case GPUMEM_BACKEND_HOST:
        return make_host_backend(options.host_strict, out);
    case GPUMEM_BACKEND_CUDA:
#if defined(GPUMEM_HAVE_CUDA)
        return make_cuda_backend(options.cuda_library, out);
#else
        return not_built(which);
#endif
    case GPUMEM_BACKEND_HIP:
#if defined(GPUMEM_HAVE_HIP)
        return make_hip_backend(options.hip_library, out);
#else
        return not_built(which);
#endif
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE, "unknown backend %d", which);
    }
}

// Part of the runtime's construction: what the opened backend reports of
// each device, settled into support levels once.
status_t build_devices(Runtime &rt)
{
    Backend &backend = *rt.backend;
    int32_t count = backend.device_count();
    if (count <= 0)
        return fail(GPUMEM_ERROR_NO_DEVICE, "the %s backend has no device", backend_name(rt.backend_id));
    const bool allow = rt.options.fallback_allowed;
    Selftest selftest(backend, rt.backend_id, rt.options.selftest_cache);
    for (int32_t d = 0; d < count; ++d) {
        auto state = std::make_unique<DeviceState>();
        if (status_t st = backend.get_caps(d, &state->caps))
            return st;
        state->claimed_rdma_vmm = state->caps.rdma_vmm;
        // GPUMEM_SELFTEST: what the runtime claims is tried first, and a
        // feature whose try fails is settled below as if it were not claimed.
        if (rt.options.selftest) {
            state->selftest = selftest.run(d, state->caps);
            for (int f = 0; f < selftest_count; ++f)
                if (state->selftest.broken(static_cast<SelftestFeature>(f)))
                    state->broken_text[f] = "broken (its self-test failed: " + state->selftest.r[f].reason + ")";
            Selftest::take_away_broken(state->selftest, &state->caps);
        }
        const DeviceCaps &caps = state->caps;
        // Managed memory is emulated with mapped pinned memory, pools with
        // gpumem's own allocator, VMM (for growable buffers) by
        // allocate-copy-free; raw VMM calls still need NATIVE.
        state->managed_level = level(caps.managed, rt.disabled(feature_managed), true, allow);
        state->pools_level = level(caps.pools, rt.disabled(feature_pools), true, allow);
        state->vmm_level = level(caps.vmm, rt.disabled(feature_vmm), true, allow);
        state->host_register_level = level(caps.host_register, rt.disabled(feature_host_register), true, allow);
        state->ipc_types = rt.disabled(feature_ipc) ? 0 : caps.ipc_handle_types;
        // Pools share through the vendor where they are native on a GPU, else
        // only where gpumem's own pool can (the host backend's memfd arenas).
        state->pool_ipc_types = (rt.pools.vendor_pools(*state) || caps.builtin_pool_ipc) ? state->ipc_types : 0;
        if (state->selftest.broken(selftest_pool_ipc))
            state->pool_ipc_types = 0;
        // Pools of pinned and managed memory: native where the vendor's pools
        // have them, else gpumem's own pool over pinned or managed chunks
        // (on the host backend, which has no vendor pools, that is its native
        // form, as for device pools).  Managed pools need managed memory.
        const bool pools_on = state->pools_level != GPUMEM_SUPPORT_NONE;
        if (rt.pools.vendor_pools(*state)) {
            state->pinned_pools_level = level(caps.pinned_pools, false, pools_on, allow);
            state->managed_pools_level =
                level(caps.managed_pools && state->managed_level == GPUMEM_SUPPORT_NATIVE, false, pools_on, allow);
        } else {
            state->pinned_pools_level = state->pools_level;
            state->managed_pools_level = std::min(state->pools_level, state->managed_level);
        }
        if (state->managed_level == GPUMEM_SUPPORT_NONE)
            state->managed_pools_level = GPUMEM_SUPPORT_NONE;
        // RDMA-capable memory is VMM memory with a POSIX handle on a GPU
        // (caps.rdma_vmm says the runtime exports VMM memory; pools need not
        // share): it needs both, and is never emulated there.
        if (caps.rdma_any_memory) {
            state->rdma_level = GPUMEM_SUPPORT_EMULATED;
        } else if (caps.rdma_vmm && state->vmm_level == GPUMEM_SUPPORT_NATIVE && !rt.disabled(feature_ipc)) {
            state->rdma_level = GPUMEM_SUPPORT_NATIVE;
        } else {
            state->rdma_missing =
                !caps.rdma_vmm             ? caps.rdma_missing
                : rt.disabled(feature_vmm) ? "virtual memory management is disabled by GPUMEM_DISABLE"
                : rt.disabled(feature_ipc) ? "POSIX file-descriptor handles are disabled by GPUMEM_DISABLE"
                                           : "the device has no native virtual memory management";
        }
        init_stream_state(state->default_stream.state, d, nullptr, backend.synchronous_streams());
        rt.devices.add(std::move(state));
    }
    for (int32_t d = 0; d < count; ++d) {
        DeviceState &dev = rt.devices[d];
        if (dev.pools_level == GPUMEM_SUPPORT_NONE)
            continue;
        gpumem_pool_props_t props{};
        props.size = sizeof props;
        props.device = d;
        props.numa_node = -1;
        if (status_t st = rt.pools.create(props, true, &dev.default_pool))
            return st;
        dev.current_pool.store(dev.default_pool, std::memory_order_release);
    }
    return GPUMEM_SUCCESS;
}

void report_leaks_and_release(Runtime &rt)
{
    // Each service gives back what it still holds, users of memory first.
    size_t leaked_handles = 0, leaked_blocks = 0, leaked_reservations = 0, leaked_allocations = 0;
    uint64_t leaked_bytes = 0;
    // Until the next init, what gpumem's own pool gives back (here, or as the
    // runtime is destroyed) is what finalize released.
    Pointers::finalizing(true);
    rt.buffers.release_all(&leaked_handles);
    rt.streams.release_all(&leaked_handles);
    rt.vmm.release_all(&leaked_reservations, &leaked_handles);
    rt.pools.release_all(&leaked_blocks, &leaked_handles);
    rt.pinned.release_all();
    rt.memory.release_all(&leaked_allocations, &leaked_bytes);
    if (leaked_allocations || leaked_blocks || leaked_handles || leaked_reservations)
        log(LogLevel::warn,
            "gpumem_finalize released what was still held: %zu allocation(s) of %" PRIu64
            " bytes, %zu stream-ordered block(s), %zu handle(s), %zu VMM reservation(s)",
            leaked_allocations, leaked_bytes, leaked_blocks, leaked_handles, leaked_reservations);
}

} // namespace

Runtime *runtime_if_ready() { return g_runtime.load(std::memory_order_acquire); }

namespace {

status_t check_running(const Runtime &rt, int32_t backend)
{
    if (backend == GPUMEM_BACKEND_AUTO || backend == rt.backend_id)
        return GPUMEM_SUCCESS;
    return fail(GPUMEM_ERROR_BUSY, "gpumem is already initialised with the %s backend; call gpumem_finalize() "
                "before initialising with %s", backend_name(rt.backend_id), backend_name(backend));
}

// Under the init mutex.  `implicit`: the first call of another function.
status_t init_locked(int32_t backend, bool implicit)
{
    if (g_inherited)
        return implicit ? fail_forked("cannot initialise gpumem")
                        : fail(GPUMEM_ERROR_BUSY, "gpumem_init: this process was forked from one that had initialised "
                               "gpumem; call gpumem_finalize() first to forget the parent's state, then gpumem_init");
    if (Runtime *rt = g_runtime.load(std::memory_order_acquire))
        return check_running(*rt, backend);
    lifecycle::setup_barrier();
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    pthread_once(&atfork_once, [] { pthread_atfork(fork_prepare, fork_parent, fork_child); });

    const Options options = read_options();
    const uint64_t epoch_ns = precise_now_ns();
    int32_t wanted = backend != GPUMEM_BACKEND_AUTO ? backend : options.backend;
    std::unique_ptr<Backend> opened;
    int32_t opened_id = GPUMEM_BACKEND_HOST;

    status_t st = GPUMEM_SUCCESS;
    if (wanted != GPUMEM_BACKEND_AUTO) {
        // An explicit choice (argument or GPUMEM_BACKEND) is honoured or reported.
        st = open_backend(wanted, options, &opened);
        if (st == GPUMEM_SUCCESS && opened->device_count() <= 0)
            st = fail(GPUMEM_ERROR_NO_DEVICE, "the %s backend loaded but found no device", backend_name(wanted));
        if (st != GPUMEM_SUCCESS) {
            prefix_error(backend != GPUMEM_BACKEND_AUTO ? "gpumem_init" : "gpumem_init (GPUMEM_BACKEND)");
            log(LogLevel::info, "%s", last_error_message());
            return st;
        }
        opened_id = wanted;
    } else {
        // AUTO: the first GPU backend with a device, else the host.
        for (int32_t candidate : {GPUMEM_BACKEND_HIP, GPUMEM_BACKEND_CUDA}) {
            std::unique_ptr<Backend> b;
            if (open_backend(candidate, options, &b) == GPUMEM_SUCCESS && b->device_count() > 0) {
                opened = std::move(b);
                opened_id = candidate;
                break;
            }
            // A library named by the environment was meant to be used: falling back past it is a warning.
            const char *named = candidate == GPUMEM_BACKEND_CUDA ? options.cuda_library : options.hip_library;
            log(named ? LogLevel::warn : LogLevel::info, "auto: skipping the %s backend%s: %s",
                backend_name(candidate), named ? " although its library is named" : "", last_error_message());
        }
        if (!opened) {
            if ((st = open_backend(GPUMEM_BACKEND_HOST, options, &opened)))
                return st;
            opened_id = GPUMEM_BACKEND_HOST;
        }
    }
    auto rt = std::make_unique<Runtime>(std::move(opened), opened_id, options);
    rt->epoch_ns = epoch_ns;

    rt->host_strict = rt->options.host_strict && rt->backend_id == GPUMEM_BACKEND_HOST;
    if (rt->options.host_strict && !rt->host_strict)
        log(LogLevel::info, "GPUMEM_HOST_STRICT=1 is ignored: it applies to the host backend, and the %s backend "
            "runs on a real GPU", backend_name(rt->backend_id));
    if (rt->host_strict)
        log(LogLevel::info, "strict host mode: device memory faults on CPU access, stream work runs when waited "
            "for, freed stream-ordered memory is poisoned and held back");

    stats().reset_all();
    Pointers::finalizing(false);
    rt->pointers.open(*rt->backend);
    rt->vmm.open(*rt->backend, *rt->backend);
    rt->buffers.open(*rt->backend);
    rt->pools.open();
    if ((st = build_devices(*rt))) {
        report_leaks_and_release(*rt);
        return st;
    }
    limit::configure(rt->options, rt->devices);
    trace::start(rt->options, rt->devices, rt->backend_id, rt->epoch_ns);
    log(LogLevel::info, "initialised the %s backend with %d device(s)", backend_name(rt->backend_id),
        rt->device_count());
    g_runtime.store(rt.release(), std::memory_order_release);
    return GPUMEM_SUCCESS;
}

} // namespace

Runtime *runtime_enter_slow(CallCounter *calls, status_t *status)
{
    for (;;) {
        if (t_in_lifecycle) {
            *status = fail_in_lifecycle("a gpumem call");
            return nullptr;
        }
        {
            LifecycleLock lock;
            *status = init_locked(GPUMEM_BACKEND_AUTO, true);
        }
        if (*status != GPUMEM_SUCCESS)
            return nullptr;
        calls->depth.store(1, std::memory_order_relaxed);
        entry_barrier();
        if (Runtime *rt = g_runtime.load(std::memory_order_acquire))
            return rt;
        calls->depth.store(0, std::memory_order_release); // finalized again meanwhile: once more
    }
}

status_t runtime_init(int32_t backend)
{
    if (backend < GPUMEM_BACKEND_AUTO || backend > GPUMEM_BACKEND_HIP)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "gpumem_init: backend %d is not one of GPUMEM_BACKEND_AUTO, _HOST, _CUDA or _HIP", backend);
    // From inside a gpumem call (a trace callback): that call's runtime is
    // alive and in use; answer about it without waiting on the init mutex
    // (a gpumem_finalize on another thread holds it while it waits for us).
    if (CallCounter *c = t_calls; c && c->depth.load(std::memory_order_relaxed) > 0)
        return check_running(*c->rt, backend);
    if (t_in_lifecycle)
        return fail_in_lifecycle("gpumem_init");
    LifecycleLock lock;
    return init_locked(backend, false);
}

status_t runtime_finalize()
{
    if (CallCounter *c = t_calls; c && c->depth.load(std::memory_order_relaxed) > 0)
        return fail(GPUMEM_ERROR_BUSY, "gpumem_finalize was called from inside another gpumem call on this thread (a "
                    "trace callback?); it would wait for that call forever: call it after that call returns");
    if (t_in_lifecycle)
        return fail_in_lifecycle("gpumem_finalize");
    LifecycleLock lock;
    if (g_inherited) {
        forget_inherited();
        return GPUMEM_SUCCESS;
    }
    Runtime *rt = g_runtime.exchange(nullptr, std::memory_order_acq_rel);
    if (!rt)
        return GPUMEM_SUCCESS;
    // Calls that began before the exchange finish on `rt`; calls that begin
    // now see no runtime and wait on the init mutex to initialise afresh.
    lifecycle::wait_for_calls();
    report_leaks_and_release(*rt);
    // After the release, so the trace ends with what finalize gave back.
    trace::finish();
    limit::stop();
    delete rt;
    return GPUMEM_SUCCESS;
}

int32_t current_device()
{
    const Runtime *rt = g_runtime.load(std::memory_order_acquire);
    return rt ? rt->devices.current() : 0;
}

namespace devices {

status_t set_current(Runtime &rt, int32_t device) { return rt.devices.set_current(device); }

status_t workarounds(Runtime &rt, const char **names, const char **descriptions, size_t capacity, size_t *count)
{
    const std::vector<VendorBugInfo> &bugs = rt.devices.vendor_bugs();
    for (size_t i = 0; i < bugs.size() && i < capacity; ++i) {
        names[i] = bugs[i].name;
        if (descriptions)
            descriptions[i] = bugs[i].description;
    }
    *count = bugs.size();
    return GPUMEM_SUCCESS;
}

namespace {

// The PCI address as sysfs names it (lowercase hex), from the runtime's
// ("0000:1B:00.0" from CUDA); empty stays empty.
std::string sysfs_bus_id(const std::string &bus_id)
{
    std::string out = bus_id;
    for (char &c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// The NUMA node the kernel gives the PCI device (-1 where it has none: one
// node, or firmware that does not say), or -1 where there is no such device
// in sysfs (a container without /sys, a bus id no kernel device has).
int32_t numa_node_of(const std::string &bus_id)
{
    if (bus_id.empty() || bus_id.find('/') != std::string::npos)
        return -1;
    const std::string path = "/sys/bus/pci/devices/" + bus_id + "/numa_node";
    FILE *f = std::fopen(path.c_str(), "re");
    if (!f)
        return -1;
    int node = -1;
    if (std::fscanf(f, "%d", &node) != 1 || node < -1)
        node = -1;
    std::fclose(f);
    return node;
}

// The 16 bytes of a UUID written as 32 hex digits (DeviceCaps::uuid); zeros
// where there are not 32.
void uuid_bytes(const std::string &hex, char out[16])
{
    std::memset(out, 0, 16);
    if (hex.size() != 32)
        return;
    for (size_t i = 0; i < 16; ++i) {
        const unsigned long b = std::strtoul(hex.substr(2 * i, 2).c_str(), nullptr, 16);
        out[i] = static_cast<char>(static_cast<unsigned char>(b));
    }
}

} // namespace

status_t info(Runtime &rt, int32_t device, gpumem_device_info_t *full)
{
    if (status_t st = check_device(rt, device))
        return st;
    const DeviceState &dev = rt.devices[device];
    std::snprintf(full->name, sizeof full->name, "%s", dev.caps.name.c_str());
    std::snprintf(full->arch_name, sizeof full->arch_name, "%s", dev.caps.arch.c_str());
    full->backend = rt.backend_id;
    full->device = device;
    size_t free_bytes = 0, total_bytes = 0;
    if (rt.devices.memory(device, &free_bytes, &total_bytes) == GPUMEM_SUCCESS) {
        full->total_memory = total_bytes;
        full->free_memory = free_bytes;
    } else {
        full->total_memory = dev.caps.total_memory;
        full->free_memory = dev.caps.free_memory;
    }
    full->managed_memory = dev.managed_level;
    // Emulated managed memory is pinned host memory: it never migrates.
    full->managed_migrates = dev.managed_level == GPUMEM_SUPPORT_NATIVE && dev.caps.managed_migrates;
    full->pageable_memory_access = dev.caps.pageable_access;
    full->memory_pools = dev.pools_level;
    full->pinned_pools = dev.pinned_pools_level;
    full->managed_pools = dev.managed_pools_level;
    full->virtual_memory = dev.vmm_level;
    full->ipc_handle_types = dev.ipc_types;
    full->pool_ipc_handle_types = dev.pool_ipc_types;
    full->vmm_granularity = dev.caps.vmm_granularity;
    full->vmm_recommended_granularity = dev.caps.vmm_recommended_granularity;
    full->host_register = dev.host_register_level;
    full->compute_capability = dev.caps.compute_capability;
    full->batch_memops = rt.batch.support_level(device);
    full->rdma_memory = dev.rdma_level;
    full->dmabuf = rt.dmabuf.supported(device) ? GPUMEM_SUPPORT_NATIVE : GPUMEM_SUPPORT_NONE;
    // What the driver claims: creation may still be NOT_SUPPORTED where the
    // system has no fabric (no IMEX channel), which no attribute tells.
    full->fabric_handles = dev.caps.fabric_handles && !rt.disabled(feature_ipc) ? GPUMEM_SUPPORT_NATIVE
                                                                                : GPUMEM_SUPPORT_NONE;
    full->rows = rt.rows.support_level(device);
    full->stream_priorities = rt.streams.priorities_level(device);
    full->host_funcs = rt.streams.host_funcs_level(device);
    full->ipc_events = rt.streams.ipc_events_level(device);
    const std::string bus_id = sysfs_bus_id(dev.caps.pci_bus_id);
    std::snprintf(full->pci_bus_id, sizeof full->pci_bus_id, "%s", bus_id.c_str());
    uuid_bytes(dev.caps.uuid, full->uuid);
    // The host backend's device is the whole machine: no one node is nearest.
    full->numa_node = numa_node_of(bus_id);
    // A feature the runtime claims and whose self-test failed: BROKEN, though
    // it behaves as the level it fell back to (core/selftest.hpp).
    const SelftestResults &tested = dev.selftest;
    if (tested.broken(selftest_managed))
        full->managed_memory = GPUMEM_SUPPORT_BROKEN;
    if (tested.broken(selftest_vmm))
        full->virtual_memory = GPUMEM_SUPPORT_BROKEN;
    if (tested.broken(selftest_host_register))
        full->host_register = GPUMEM_SUPPORT_BROKEN;
    if (tested.broken(selftest_batch))
        full->batch_memops = GPUMEM_SUPPORT_BROKEN;
    if (tested.broken(selftest_dmabuf))
        full->dmabuf = GPUMEM_SUPPORT_BROKEN;
    if (dev.claimed_rdma_vmm && (tested.broken(selftest_vmm) || tested.broken(selftest_vmm_ipc)))
        full->rdma_memory = GPUMEM_SUPPORT_BROKEN;
    return GPUMEM_SUCCESS;
}

status_t mem_info(Runtime &rt, size_t *free_bytes, size_t *total_bytes)
{
    int32_t device = current_device();
    if (status_t st = check_device(rt, device))
        return st;
    return rt.devices.memory(device, free_bytes, total_bytes);
}

status_t synchronize(Runtime &rt) { return rt.streams.synchronize_device(current_device()); }

} // namespace devices

} // namespace gpumem::detail
