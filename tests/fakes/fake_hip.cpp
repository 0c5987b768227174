// The fake HIP runtime: configuration, error names and strings, init and versions, devices
// and their attributes, pointer attributes.  The shared bodies are fake_api_*.cpp (see
// fake_api.hpp).
// SPDX-License-Identifier: MIT
#include "fake_api.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

namespace fakehip {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------
// The settings both fakes share are read by the engine (read_engine_config); here the
// runtime's own.
Config read_config()
{
    Config c;
    c.name = "fakehip";
    c.env_prefix = "FAKE_HIP_";
    c.initial_device = 0; // no contexts: a thread works on device 0 until hipSetDevice
    read_engine_config(c, [&c] {
        if (const char *v = getenv("FAKE_HIP_VERSION")) {
            long n = atol(v);
            if (n >= 50000000 && n < 100000000)
                c.runtime_version = (int)n;
            else
                fprintf(stderr, "fakehip: FAKE_HIP_VERSION=%s ignored (a HIP_VERSION, e.g. 60241133)\n", v);
        }
    });
    c.xnack = c.managed && !env_flag(c, "NO_XNACK");
    c.concurrent_managed = c.xnack;
    c.pageable = c.xnack;
    return c;
}

static hipError_t init_locked();

// The HIP runtime initialises itself on the first call; a runtime that could not start
// answers every call with the reason.
hipError_t check_initialized()
{
    const Config &c = config();
    if (c.init_fail)
        return hipErrorNotInitialized;
    if (c.no_device)
        return hipErrorInvalidDevice; // ROCm 5.2 without a GPU: every call but hipGetDeviceCount
    std::lock_guard<std::mutex> lock(state().mu);
    return init_locked();
}


// ---------------------------------------------------------------------------------------------
// Devices: the current device is per thread (0 until hipSetDevice), as in the HIP runtime.
// ---------------------------------------------------------------------------------------------
// The engine keeps it (thread_device(); a thread starts on device 0: Config::initial_device).
hipError_t current_device_locked(int *dev)
{
    const int cur = thread_device();
    if (!valid_device(cur))
        return hipErrorInvalidDevice;
    *dev = cur;
    return hipSuccess;
}

static hipError_t init_locked()
{
    State &s = state();
    if (s.initialized)
        return hipSuccess;
    if (!region_init_locked())
        return hipErrorOutOfMemory;
    s.devices.assign((size_t)config().devices, Device{});
    for (int d = 0; d < config().devices; ++d)
        s.devices[(size_t)d].legacy_stream = make_stream_locked(d, 0, true).id;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    s.host_limit = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 16 * kGiB;
    s.initialized = true;
    return hipSuccess;
}

} // namespace fakehip

using namespace fakehip;

// Error strings work at any time, like the real ones.  Unknown codes: the runtime's words.
extern "C" const char *fake_hipGetErrorName(hipError_t e)
{
    const ErrorText *t = find_error(e);
    return t ? t->name : "hipErrorUnknown";
}

extern "C" const char *fake_hipGetErrorString(hipError_t e)
{
    const ErrorText *t = find_error(e);
    return t ? t->text : "unknown error";
}

// ---------------------------------------------------------------------------------------------
// Init and versions
// ---------------------------------------------------------------------------------------------
FAKE_HIP_API fake_hipInit(unsigned int flags)
{
    Call call_("hipInit");
    if (config().trace)
        call_.args("flags=%u", flags);
    const Config &c = config();
    if (flags != 0)
        FAIL(hipErrorInvalidValue, "flags must be 0");
    if (c.init_fail)
        FAIL(hipErrorNotInitialized, "FAKE_HIP_INIT_FAIL is set");
    if (c.no_device) // (what ROCm 5.2's hipInit says on a machine without an AMD GPU)
        FAIL(hipErrorInvalidDevice, "FAKE_HIP_NO_DEVICE is set (or FAKE_HIP_DEVICES=0)");
    std::lock_guard<std::mutex> lock(state().mu);
    if (hipError_t r = init_locked())
        FAIL(r, "could not reserve the device address range: %s", strerror(errno));
    RET(hipSuccess);
}

// HIP's driver version is the runtime's HIP_VERSION too on ROCm.
FAKE_HIP_API fake_hipDriverGetVersion(int *v)
{
    Call call_("hipDriverGetVersion");
    if (v == nullptr)
        FAIL(hipErrorInvalidValue, "driverVersion is NULL");
    *v = config().runtime_version;
    OUT("*driverVersion=%d", *v);
    RET(hipSuccess);
}

FAKE_HIP_API fake_hipRuntimeGetVersion(int *v)
{
    Call call_("hipRuntimeGetVersion");
    if (v == nullptr)
        FAIL(hipErrorInvalidValue, "runtimeVersion is NULL");
    *v = config().runtime_version;
    OUT("*runtimeVersion=%d", *v);
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------
const char fakehip::k_device_name[] = "gpumem fake HIP device";
const char fakehip::k_pci_bus_id_format[] = "%04x:%02x:%02x.0";

FAKE_HIP_API fake_cuDeviceGetCount(int *count)
{
    Call call_("hipGetDeviceCount");
    if (count == nullptr)
        FAIL(hipErrorInvalidValue, "count is NULL");
    *count = 0;
    if (config().init_fail)
        FAIL(hipErrorNotInitialized, "FAKE_HIP_INIT_FAIL is set");
    if (config().no_device)
        FAIL(hipErrorNoDevice, "FAKE_HIP_NO_DEVICE is set (or FAKE_HIP_DEVICES=0)");
    if (hipError_t r = check_initialized())
        RET(r);
    *count = config().devices;
    OUT("*count=%d", *count);
    RET(hipSuccess);
}

FAKE_HIP_API fake_hipSetDevice(int dev)
{
    FAKE_ENTER("hipSetDevice", "dev=%d", dev);
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", dev);
    set_thread_device(dev);
    RET(hipSuccess);
}

FAKE_HIP_API fake_hipGetDevice(int *dev)
{
    FAKE_ENTER("hipGetDevice", "%s", "");
    if (dev == nullptr)
        FAIL(hipErrorInvalidValue, "deviceId is NULL");
    *dev = thread_device();
    RET(hipSuccess);
}

// A UUID per device, as cuDeviceGetUuid's (the engine's: stable across processes).
FAKE_HIP_API fake_hipDeviceGetUuid(hipUUID *uuid, int dev)
{
    FAKE_ENTER("hipDeviceGetUuid", "dev=%d", dev);
    if (uuid == nullptr)
        FAIL(hipErrorInvalidValue, "uuid is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", dev);
    static_assert(sizeof uuid->bytes == 16, "hipUUID");
    device_uuid(dev, reinterpret_cast<unsigned char *>(uuid->bytes));
    RET(hipSuccess);
}

// Peer copies: each pointer checked from the device named for it (memcpy_peer_locked).
static hipError_t memcpy_peer(Call &call_, fh_devptr dst, int dstDevice, fh_devptr src, int srcDevice, size_t n,
                              hipStream_t stream, bool sync)
{
    if (!valid_device(dstDevice) || !valid_device(srcDevice))
        FAIL(hipErrorInvalidDevice, "no device %d", valid_device(dstDevice) ? srcDevice : dstDevice);
    return memcpy_peer_locked(call_, dst, dstDevice, src, srcDevice, n, stream, sync);
}

FAKE_HIP_API fake_hipMemcpyPeer(fh_devptr dst, int dstDevice, fh_devptr src, int srcDevice, size_t sizeBytes)
{
    FAKE_ENTER("hipMemcpyPeer", "dst=0x%llx, dstDevice=%d, src=0x%llx, srcDevice=%d, sizeBytes=%zu", dst, dstDevice, src,
               srcDevice, sizeBytes);
    return memcpy_peer(call_, dst, dstDevice, src, srcDevice, sizeBytes, nullptr, true);
}

FAKE_HIP_API fake_hipMemcpyPeerAsync(fh_devptr dst, int dstDevice, fh_devptr src, int srcDevice, size_t sizeBytes,
                                     hipStream_t stream)
{
    FAKE_ENTER("hipMemcpyPeerAsync", "dst=0x%llx, dstDevice=%d, src=0x%llx, srcDevice=%d, sizeBytes=%zu, stream=%p", dst,
               dstDevice, src, srcDevice, sizeBytes, (void *)stream);
    return memcpy_peer(call_, dst, dstDevice, src, srcDevice, sizeBytes, stream, false);
}

// The attributes gpumem asks, with an MI210-like device's values; others in the CUDA-compatible
// and AMD-specific ranges are 0, anything else hipErrorInvalidValue.
static bool device_attribute(int a, int *v)
{
    const Config &c = config();
    // ROCm 5's enum ends at MemoryPoolsSupported: later values are unknown attributes there.
    if (!c.v6() && a > fh_DeviceAttributeMemoryPoolsSupported && a < fh_DeviceAttributeCudaCompatibleEnd)
        return false;
    switch (a) {
    case hipDeviceAttributeCanMapHostMemory: *v = 1; break;
    case hipDeviceAttributeConcurrentManagedAccess: *v = c.managed && c.xnack; break;
    case hipDeviceAttributeDirectManagedMemAccessFromHost: *v = 0; break;
    case hipDeviceAttributeManagedMemory: *v = c.managed; break;
    case hipDeviceAttributePageableMemoryAccess: *v = c.pageable; break;
    case hipDeviceAttributePageableMemoryAccessUsesHostPageTables: *v = c.pageable; break;
    case hipDeviceAttributeUnifiedAddressing: *v = 1; break;
    case hipDeviceAttributeComputeCapabilityMajor: *v = 9; break;
    case hipDeviceAttributeComputeCapabilityMinor: *v = 0; break;
    case hipDeviceAttributeMultiprocessorCount: *v = 104; break;
    case hipDeviceAttributeWarpSize: *v = 64; break;
    case hipDeviceAttributeMaxThreadsPerBlock: *v = 1024; break;
    case hipDeviceAttributeClockRate: *v = 1700000; break;
    case hipDeviceAttributeMemoryClockRate: *v = 1600000; break;
    case hipDeviceAttributeMemoryBusWidth: *v = 4096; break;
    case hipDeviceAttributeL2CacheSize: *v = 8 * 1024 * 1024; break;
    case hipDeviceAttributeIntegrated: *v = 0; break;
    case hipDeviceAttributePciBusId: *v = 3; break;
    case hipDeviceAttributeConcurrentKernels: *v = 1; break;
    case fh_DeviceAttributeMemoryPoolsSupported: *v = c.pools; break;
    case fh_DeviceAttributeVirtualMemoryManagementSupported: *v = c.vmm; break;
    case fh_DeviceAttributeHostRegisterSupported: *v = c.host_register; break;
    case fh_DeviceAttributeMemoryPoolSupportedHandleTypes:
        *v = c.pools && c.ipc ? hipMemHandleTypePosixFileDescriptor : 0;
        break;
    case hipDeviceAttributeGcnArch: *v = 910; break;
    default:
        if ((a >= 0 && a < fh_DeviceAttributeCudaCompatibleEnd && a <= fh_DeviceAttributeMemoryPoolSupportedHandleTypes) ||
            (a >= fh_DeviceAttributeAmdSpecificBegin && a < fh_DeviceAttributeAmdSpecificBegin + 40)) {
            *v = 0;
            break;
        }
        return false;
    }
    return true;
}

FAKE_HIP_API fake_cuDeviceGetAttribute(int *pi, int attrib, int dev)
{
    FAKE_ENTER("hipDeviceGetAttribute", "attrib=%d, dev=%d", attrib, dev);
    if (pi == nullptr)
        FAIL(hipErrorInvalidValue, "pi is NULL");
    if (!valid_device(dev))
        FAIL(hipErrorInvalidDevice, "no device %d", dev);
    if (!device_attribute(attrib, pi))
        FAIL(hipErrorInvalidValue, "unknown attribute %d", attrib);
    OUT("*pi=%d", *pi);
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Pointer attributes
// ---------------------------------------------------------------------------------------------
// What the runtime knows about an address (hipPointerGetAttributes).  Memory it did not make
// or register: ROCm 6 answers hipSuccess with hipMemoryTypeUnregistered, ROCm 5
// hipErrorInvalidValue.  hipMemoryType's values follow the runtime version.
FAKE_HIP_API fake_hipPointerGetAttributes(fh_PointerAttribute *attr, fh_devptr ptr)
{
    FAKE_ENTER("hipPointerGetAttributes", "ptr=0x%llx", (unsigned long long)ptr);
    if (attr == nullptr)
        FAIL(hipErrorInvalidValue, "attributes is NULL");
    const bool v6 = config().v6();
    uint64_t start = 0;
    memset(attr, 0, sizeof *attr);
    if (Segment *seg = find_segment_locked(ptr, &start)) {
        attr->type = v6 ? fh6_Device : fh5_Device;
        attr->device = seg->device;
        attr->devicePointer = reinterpret_cast<void *>(ptr);
    } else if (HostRange *h = find_host_locked(ptr, &start)) {
        attr->device = h->device;
        attr->devicePointer = reinterpret_cast<void *>(ptr);
        attr->hostPointer = reinterpret_cast<void *>(ptr);
        attr->allocationFlags = h->flags;
        if (h->kind == HostKind::Managed) {
            attr->type = v6 ? fh6_Managed : fh5_Unified;
            attr->isManaged = 1;
        } else {
            attr->type = v6 ? fh6_Host : fh5_Host;
        }
    } else if (HostRange *r = config().bug_register_device_address ? find_host_locked(ptr ^ kRegisteredAlias, &start)
                                                                    : nullptr;
               r != nullptr && r->kind == HostKind::Registered) {
        // The device address of registered memory (the reproduced bug): the runtime knows it.
        attr->type = v6 ? fh6_Host : fh5_Host;
        attr->device = r->device;
        attr->devicePointer = reinterpret_cast<void *>(ptr);
        attr->hostPointer = reinterpret_cast<void *>(ptr ^ kRegisteredAlias);
        attr->allocationFlags = r->flags;
    } else if (v6) {
        attr->type = fh6_Unregistered;
        attr->device = -2;
        attr->hostPointer = reinterpret_cast<void *>(ptr);
    } else {
        FAIL(hipErrorInvalidValue, "0x%llx is not memory the runtime knows (ROCm 5)", (unsigned long long)ptr);
    }
    OUT("type=%d, device=%d, isManaged=%d", attr->type, attr->device, attr->isManaged);
    RET(hipSuccess);
}

// ---------------------------------------------------------------------------------------------
// Batched calls (HIP 7.1): the runtime takes void * arrays; the shared bodies take addresses.
// ---------------------------------------------------------------------------------------------
static std::vector<DevPtr> addresses(void *const *ptrs, size_t count)
{
    std::vector<DevPtr> out(ptrs ? count : 0);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = (DevPtr) reinterpret_cast<uintptr_t>(ptrs[i]);
    return out;
}

FAKE_HIP_API fake_hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                                      fh_MemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                      hipStream_t stream)
{
    FAKE_ENTER("hipMemcpyBatchAsync", "count=%zu, numAttrs=%zu, failIdx=%p, stream=%p", count, numAttrs,
               (void *)failIdx, (void *)stream);
    if (config().runtime_version < fh_batch_runtime)
        FAIL(hipErrorNotSupported, "batched calls need HIP 7.1 (FAKE_HIP_VERSION is %d)", config().runtime_version);
    bool order_ok = attrs != nullptr && location_runs_ok(attrsIdxs, numAttrs, count);
    for (size_t k = 0; order_ok && k < numAttrs; ++k)
        order_ok = attrs[k].srcAccessOrder >= fh_MemcpySrcAccessOrderStream &&
                   attrs[k].srcAccessOrder <= fh_MemcpySrcAccessOrderAny;
    const std::vector<DevPtr> d = addresses(dsts, count), s = addresses(srcs, count);
    return copy_batch_locked(call_, dsts ? d.data() : nullptr, srcs ? s.data() : nullptr, sizes, count, order_ok,
                             failIdx, stream);
}

FAKE_HIP_API fake_hipMemPrefetchBatchAsync(void **dptrs, size_t *sizes, size_t count, hipMemLocation *prefetchLocs,
                                           size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                           hipStream_t stream)
{
    FAKE_ENTER("hipMemPrefetchBatchAsync", "count=%zu, numPrefetchLocs=%zu, flags=%llu, stream=%p", count,
               numPrefetchLocs, flags, (void *)stream);
    if (config().runtime_version < fh_batch_runtime)
        FAIL(hipErrorNotSupported, "batched calls need HIP 7.1 (FAKE_HIP_VERSION is %d)", config().runtime_version);
    if (!config().managed)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_MANAGED is set");
    if (prefetchLocs == nullptr || !location_runs_ok(prefetchLocIdxs, numPrefetchLocs, count))
        FAIL(hipErrorInvalidValue, "prefetchLocs/prefetchLocIdxs do not split the batch");
    std::vector<int> devs(count);
    for (size_t k = 0; k < numPrefetchLocs; ++k) {
        const hipMemLocation &loc = prefetchLocs[k];
        // Read as an int: older headers (ROCm 5.2) have no host member, and loading 2 as the enum is undefined.
        int type = 0;
        static_assert(sizeof loc.type == sizeof type, "hipMemLocationType is an int");
        std::memcpy(&type, &loc.type, sizeof type);
        int dev = 0;
        if (type == fh_MemLocationTypeHost)
            dev = hipCpuDeviceId;
        else if (type == fh_MemLocationTypeDevice)
            dev = loc.id;
        else
            FAIL(hipErrorInvalidValue, "location %zu has type %d", k, type);
        const size_t end = k + 1 < numPrefetchLocs ? prefetchLocIdxs[k + 1] : count;
        for (size_t i = prefetchLocIdxs[k]; i < end; ++i)
            devs[i] = dev;
    }
    const std::vector<DevPtr> p = addresses(dptrs, count);
    return prefetch_batch_locked(call_, dptrs ? p.data() : nullptr, sizes, count, devs.data(), flags, stream);
}

FAKE_HIP_API fake_hipMemDiscardBatchAsync(void **dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                          hipStream_t stream)
{
    FAKE_ENTER("hipMemDiscardBatchAsync", "count=%zu, flags=%llu, stream=%p", count, flags, (void *)stream);
    if (config().runtime_version < fh_batch_runtime)
        FAIL(hipErrorNotSupported, "batched calls need HIP 7.1 (FAKE_HIP_VERSION is %d)", config().runtime_version);
    if (!config().managed)
        FAIL(hipErrorNotSupported, "FAKE_HIP_NO_MANAGED is set");
    const std::vector<DevPtr> p = addresses(dptrs, count);
    return discard_batch_locked(call_, dptrs ? p.data() : nullptr, sizes, count, flags, stream);
}
