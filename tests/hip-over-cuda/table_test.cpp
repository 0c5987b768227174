// The translation table of libhipovercuda, checked without CUDA: hip_over_cuda.cpp (the AMD
// half) linked with a stand-in for the NVIDIA half that answers as the CUDA runtime does and
// records what it was asked.  Runs wherever the HIP headers are (CI too), once as the default
// ROCm 7.1 and once with HIP_OVER_CUDA_VERSION=50221153 (ROCm 5), which the test reads to know
// which numbers to expect.  Exit 0 pass, 1 fail.
//
// SPDX-License-Identifier: MIT
#include "nvidia_side.hpp"

#include "fake_hip_types.hpp"

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The exports ROCm 5.2's header does not declare (hip_over_cuda.cpp defines them so).
extern "C" hipError_t hipExtHostAlloc(void **ptr, size_t size, unsigned int flags);
extern "C" hipError_t hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                                          fakehip::fh_MemcpyAttributes *attrs, size_t *attrs_idxs, size_t num_attrs,
                                          size_t *fail_idx, hipStream_t stream);

namespace {
int g_failures = 0;
#define EXPECT(cond)                                                                                              \
    do {                                                                                                          \
        if (!(cond)) {                                                                                            \
            std::fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                                 \
            ++g_failures;                                                                                         \
        }                                                                                                         \
    } while (0)

// What the stand-in was last asked.
struct Asked {
    int cuda_attribute = -1, driver_attribute = -1, hip_attribute = -1;
    unsigned host_flags = 0;
    int advice = -1;
    hipovercuda::nv::AllocationProp prop{};
    hipovercuda::nv::PoolProps pool{};
    uint64_t handle = 0;
} g_asked;

// Pointers the stand-in knows, as CUDA would describe them.
char g_host[64], g_device[64], g_managed[64], g_plain[64];
} // namespace

// --- The stand-in NVIDIA half ----------------------------------------------------------------
namespace hipovercuda::nv {
int hipInit(unsigned int) { return hipSuccess; }
int cuda_versions(int *runtime, int *driver) { *runtime = *driver = 13000; return hipSuccess; }
int hipGetDeviceCount(int *count) { *count = 2; return hipSuccess; }
int hipSetDevice(int) { return hipSuccess; }
int hipGetDevice(int *device) { *device = 0; return hipSuccess; }
int hipDeviceGetAttribute(int *value, int hip_attribute, int)
{
    g_asked.hip_attribute = hip_attribute;
    *value = 7;
    return hipSuccess;
}
int hipDeviceGetName(char *name, int length, int) { std::snprintf(name, length, "stand-in"); return hipSuccess; }
int hipDeviceTotalMem(size_t *bytes, int) { *bytes = 1 << 30; return hipSuccess; }
int hipMemGetInfo(size_t *f, size_t *t) { *f = *t = 1 << 30; return hipSuccess; }
int hipDeviceSynchronize() { return hipSuccess; }
int hipMalloc(void **ptr, size_t) { *ptr = g_device; return hipSuccess; }
int hipFree(void *) { return hipSuccess; }
int hipMemcpy(void *, const void *, size_t, int) { return hipSuccess; }
int hipMemcpyAsync(void *, const void *, size_t, int, void *) { return hipSuccess; }
int hipMemset(void *, int, size_t) { return hipSuccess; }
int hipMemsetAsync(void *, int, size_t, void *) { return hipSuccess; }
int hipHostGetDevicePointer(void **d, void *h, unsigned int) { *d = h; return hipSuccess; }
int hipStreamCreate(void **stream) { *stream = nullptr; return hipSuccess; }
int hipStreamDestroy(void *) { return hipSuccess; }
int hipStreamSynchronize(void *) { return hipSuccess; }
int hipStreamQuery(void *) { return hipSuccess; }
int hipStreamWaitEvent(void *, void *, unsigned int) { return hipSuccess; }
int hipEventCreate(void **event) { *event = nullptr; return hipSuccess; }
int hipEventDestroy(void *) { return hipSuccess; }
int hipEventRecord(void *, void *) { return hipSuccess; }
int hipEventSynchronize(void *) { return hipSuccess; }
int hipEventQuery(void *) { return hipSuccess; }
int hipEventElapsedTime(float *ms, void *, void *) { *ms = 1; return hipSuccess; }
int hipHostMalloc(void **ptr, size_t, unsigned int cuda_flags)
{
    g_asked.host_flags = cuda_flags;
    *ptr = g_host;
    return hipSuccess;
}
int hipHostFree(void *) { return hipSuccess; }
int hipHostRegister(void *, size_t, unsigned int) { return hipSuccess; }
int hipHostUnregister(void *) { return hipSuccess; }
int hipMemGetAddressRange(void **base, size_t *size, void *ptr) { *base = ptr; *size = 64; return hipSuccess; }
int hipMemcpyPeerAsync(void *, int, const void *, int, size_t, void *) { return hipSuccess; }
int hipMallocManaged(void **ptr, size_t, unsigned int) { *ptr = g_managed; return hipSuccess; }
int hipMemPrefetchAsync(const void *, size_t, int, void *) { return hipSuccess; }
int hipMemAdvise(const void *, size_t, int advice, int) { g_asked.advice = advice; return hipSuccess; }
int hipStreamAttachMemAsync(void *, void *, size_t, unsigned int) { return hipSuccess; }
int hipDeviceGetDefaultMemPool(void **pool, int) { *pool = nullptr; return hipSuccess; }
int hipMemPoolDestroy(void *) { return hipSuccess; }
int hipMallocFromPoolAsync(void **ptr, size_t, void *, void *) { *ptr = g_device; return hipSuccess; }
int hipFreeAsync(void *, void *) { return hipSuccess; }
int hipMemPoolSetAttribute(void *, int, void *) { return hipSuccess; }
int hipMemPoolGetAttribute(void *, int, void *) { return hipSuccess; }
int hipMemPoolTrimTo(void *, size_t) { return hipSuccess; }
int hipMemPoolSetAccess(void *, const AccessDesc *, size_t) { return hipSuccess; }
int hipMemPoolExportToShareableHandle(void *, void *, int, unsigned int) { return hipSuccess; }
int hipMemPoolImportFromShareableHandle(void **, void *, int, unsigned int) { return hipSuccess; }
int hipMemPoolExportPointer(void *, void *) { return hipSuccess; }
int hipMemPoolImportPointer(void **, void *, void *) { return hipSuccess; }
int hipDeviceCanAccessPeer(int *can, int, int) { *can = 1; return hipSuccess; }
int hipDeviceEnablePeerAccess(int, unsigned int) { return hipSuccess; }
int hipDeviceDisablePeerAccess(int) { return hipSuccess; }

int cuda_device_attribute(int *value, int cuda_attribute, int)
{
    g_asked.cuda_attribute = cuda_attribute;
    *value = 1;
    return hipSuccess;
}
int driver_device_attribute(int *value, int cu_attribute, int)
{
    g_asked.driver_attribute = cu_attribute;
    *value = 1;
    return hipSuccess;
}
int device_uuid(unsigned char bytes[16], int)
{
    std::memset(bytes, 7, 16);
    return hipSuccess;
}
int pointer_info(PointerInfo *info, const void *ptr, unsigned int *host_flags)
{
    *info = {};
    *host_flags = 0;
    info->device = 1;
    if (ptr == g_host) {
        info->cuda_type = k_cuda_memory_host;
        info->host_pointer = info->device_pointer = g_host;
        *host_flags = 3;
    } else if (ptr == g_device) {
        info->cuda_type = k_cuda_memory_device;
        info->device_pointer = g_device;
    } else if (ptr == g_managed) {
        info->cuda_type = k_cuda_memory_managed;
        info->host_pointer = info->device_pointer = g_managed;
    } else {
        info->cuda_type = k_cuda_memory_unregistered;
        info->device = -2;
        info->host_pointer = const_cast<void *>(ptr);
    }
    return hipSuccess;
}
int stream_get_device(void *, int *device) { *device = 1; return hipSuccess; }
int pool_create(void **pool, const PoolProps *props)
{
    g_asked.pool = *props;
    *pool = nullptr;
    return hipSuccess;
}
int vmm_granularity(size_t *granularity, const AllocationProp *prop, int)
{
    g_asked.prop = *prop;
    *granularity = 2 << 20;
    return hipSuccess;
}
int vmm_create(uint64_t *handle, size_t, const AllocationProp *prop, unsigned long long)
{
    g_asked.prop = *prop;
    *handle = 0x1234;
    return hipSuccess;
}
int vmm_release(uint64_t handle) { g_asked.handle = handle; return hipSuccess; }
int vmm_retain(uint64_t *handle, void *) { *handle = 0x1234; return hipSuccess; }
int device_pci_bus_id(char *bus_id, int length, int)
{
    std::snprintf(bus_id, static_cast<size_t>(length), "0000:1B:00.0");
    return hipSuccess;
}
int vmm_reserve(void **ptr, size_t, size_t, void *, unsigned long long) { *ptr = g_device; return hipSuccess; }
int vmm_free(void *, size_t) { return hipSuccess; }
int vmm_map(void *, size_t, size_t, uint64_t handle, unsigned long long) { g_asked.handle = handle; return hipSuccess; }
int vmm_unmap(void *, size_t) { return hipSuccess; }
int vmm_set_access(void *, size_t, const AccessDesc *, size_t) { return hipSuccess; }
int vmm_export(void *, uint64_t, int, unsigned long long) { return hipSuccess; }
int vmm_import(uint64_t *handle, void *, int) { *handle = 0x5678; return hipSuccess; }
int range_handle(void *handle, void *, size_t, int, unsigned long long) { *static_cast<int *>(handle) = 7; return hipSuccess; }
int vmm_properties(AllocationProp *prop, uint64_t)
{
    *prop = {};
    prop->type = 1;
    prop->handle_types = 1;
    prop->location = {1, 1};
    prop->rdma_capable = 1;
    return hipSuccess;
}
int memcpy_batch(void **, void **, size_t *, size_t, MemcpyAttributes *, size_t *, size_t, void *) { return hipSuccess; }
int prefetch_batch(void **, size_t *, size_t, Location *, size_t *, size_t, unsigned long long, void *) { return hipSuccess; }
int discard_batch(void **, size_t *, size_t, unsigned long long, void *) { return hipSuccess; }
int capture_info(void *, int *status, unsigned long long *, void **, void *, size_t *)
{
    *status = 1;
    return hipSuccess;
}
int exchange_capture_mode(int *mode) { *mode = 0; return hipSuccess; }
// (0.5: streams with flags and priorities, host functions, IPC events, rows and boxes)
int stream_create_with_flags(void **stream, unsigned int) { *stream = nullptr; return hipSuccess; }
int stream_create_with_priority(void **stream, unsigned int, int) { *stream = nullptr; return hipSuccess; }
int stream_get_priority(void *, int *priority) { *priority = 0; return hipSuccess; }
int stream_get_flags(void *, unsigned int *flags) { *flags = 0; return hipSuccess; }
int priority_range(int *least, int *greatest) { *least = 0; *greatest = -5; return hipSuccess; }
int event_create_with_flags(void **event, unsigned int) { *event = nullptr; return hipSuccess; }
int launch_host_func(void *, void (*)(void *), void *) { return hipSuccess; }
int ipc_get_event_handle(void *handle64, void *) { std::memset(handle64, 0, 64); return hipSuccess; }
int ipc_open_event_handle(void **event, const void *) { *event = nullptr; return hipSuccess; }
int malloc_pitch(void **ptr, size_t *pitch, size_t width, size_t) { *ptr = g_device; *pitch = width; return hipSuccess; }
int memcpy_2d_async(void *, size_t, const void *, size_t, size_t, size_t, int, void *) { return hipSuccess; }
int memcpy_3d_async(const Box *, void *) { return hipSuccess; }
int memset_2d_async(void *, size_t, int, size_t, size_t, void *) { return hipSuccess; }
int memset_d16_async(void *, unsigned short, size_t, void *) { return hipSuccess; }
int memset_d32_async(void *, unsigned int, size_t, void *) { return hipSuccess; }
int user_object_create(void **object, void *, void (*)(void *), unsigned int, unsigned int) { *object = nullptr; return hipSuccess; }
int user_object_release(void *, unsigned int) { return hipSuccess; }
int graph_retain_user_object(void *, void *, unsigned int, unsigned int) { return hipSuccess; }
} // namespace hipovercuda::nv

// --- The checks ------------------------------------------------------------------------------
using namespace fakehip;

int main()
{
    const char *v = std::getenv("HIP_OVER_CUDA_VERSION");
    const int expected_version = v != nullptr && *v != '\0' ? std::atoi(v) : 70100000;
    const bool v6 = expected_version >= 60000000;
    std::printf("claimed HIP_VERSION %d (%s layouts)\n", expected_version, v6 ? "ROCm 6" : "ROCm 5");

    int version = 0;
    EXPECT(hipRuntimeGetVersion(&version) == hipSuccess && version == expected_version);
    EXPECT(hipDriverGetVersion(&version) == hipSuccess && version == expected_version);

    // Error names are HIP's (the fakes' table), not CUDA's.
    EXPECT(std::strcmp(hipGetErrorName(hipErrorInvalidValue), "hipErrorInvalidValue") == 0);
    EXPECT(std::strcmp(hipGetErrorName(hipErrorNotSupported), "hipErrorNotSupported") == 0);
    EXPECT(std::strcmp(hipGetErrorName(static_cast<hipError_t>(12345)), "hipError_12345") == 0);
    EXPECT(std::strcmp(hipGetErrorString(hipSuccess), "no error") == 0);

    // Attributes: 0..88 through AMD's mapping; 89..91 from CUDA, ROCm 6 only.
    int value = 0;
    EXPECT(hipDeviceGetAttribute(&value, hipDeviceAttributeManagedMemory, 0) == hipSuccess && value == 7 &&
           g_asked.hip_attribute == hipDeviceAttributeManagedMemory);
    const hipDeviceAttribute_t vmm = static_cast<hipDeviceAttribute_t>(fh_DeviceAttributeVirtualMemoryManagementSupported);
    const hipDeviceAttribute_t reg = static_cast<hipDeviceAttribute_t>(fh_DeviceAttributeHostRegisterSupported);
    const hipDeviceAttribute_t handles = static_cast<hipDeviceAttribute_t>(fh_DeviceAttributeMemoryPoolSupportedHandleTypes);
    if (v6) {
        EXPECT(hipDeviceGetAttribute(&value, vmm, 0) == hipSuccess && value == 1 &&
               g_asked.driver_attribute == hipovercuda::nv::k_cu_attr_vmm_supported);
        EXPECT(hipDeviceGetAttribute(&value, reg, 0) == hipSuccess &&
               g_asked.cuda_attribute == hipovercuda::nv::k_cuda_attr_host_register_supported);
        EXPECT(hipDeviceGetAttribute(&value, handles, 0) == hipSuccess &&
               g_asked.cuda_attribute == hipovercuda::nv::k_cuda_attr_pool_supported_handle_types);
    } else {
        EXPECT(hipDeviceGetAttribute(&value, vmm, 0) == hipErrorInvalidValue);
        EXPECT(hipDeviceGetAttribute(&value, reg, 0) == hipErrorInvalidValue);
        EXPECT(hipDeviceGetAttribute(&value, handles, 0) == hipErrorInvalidValue);
    }

    // Pointer attributes, renumbered by ROCm generation.
    hipPointerAttribute_t a;
    auto *fa = reinterpret_cast<fh_PointerAttribute *>(&a);
    EXPECT(hipPointerGetAttributes(nullptr, g_host) == hipErrorInvalidValue);
    EXPECT(hipPointerGetAttributes(&a, g_host) == hipSuccess && fa->type == (v6 ? fh6_Host : fh5_Host) &&
           fa->allocationFlags == 3 && fa->isManaged == 0 && fa->hostPointer == g_host);
    EXPECT(hipPointerGetAttributes(&a, g_device) == hipSuccess && fa->type == (v6 ? fh6_Device : fh5_Device) &&
           fa->devicePointer == g_device && fa->device == 1);
    EXPECT(hipPointerGetAttributes(&a, g_managed) == hipSuccess && fa->type == (v6 ? fh6_Managed : fh5_Unified) &&
           fa->isManaged == 1);
    if (v6)
        EXPECT(hipPointerGetAttributes(&a, g_plain) == hipSuccess && fa->type == fh6_Unregistered && fa->device == -2);
    else
        EXPECT(hipPointerGetAttributes(&a, g_plain) == hipErrorInvalidValue);

    // Host flags CUDA has no meaning for are dropped; the others pass.
    void *p = nullptr;
    EXPECT(hipHostMalloc(&p, 64, hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent) == hipSuccess &&
           g_asked.host_flags == (hipHostMallocPortable | hipHostMallocMapped));
    EXPECT(hipExtHostAlloc(&p, 64, hipHostMallocNonCoherent | hipHostMallocNumaUser | hipHostMallocWriteCombined) ==
               hipSuccess &&
           g_asked.host_flags == hipHostMallocWriteCombined);

    // The coherence advice succeeds and reaches nothing; unknown advice is refused.
    g_asked.advice = -1;
    EXPECT(hipMemAdvise(g_managed, 64, hipMemAdviseSetCoarseGrain, 0) == hipSuccess && g_asked.advice == -1);
    EXPECT(hipMemAdvise(g_managed, 64, static_cast<hipMemoryAdvise>(42), 0) == hipErrorInvalidValue);
    EXPECT(hipMemAdvise(g_managed, 64, hipMemAdviseSetReadMostly, 0) == hipSuccess &&
           g_asked.advice == hipMemAdviseSetReadMostly);

    // ROCm 6's hipMemAllocationProp, field by field; handles as pointers.
    fh_MemAllocationProp prop{};
    prop.type = hipMemAllocationTypePinned;
    prop.requestedHandleType = hipMemHandleTypePosixFileDescriptor;
    prop.location.type = hipMemLocationTypeDevice;
    prop.location.id = 1;
    prop.allocFlags.gpuDirectRDMACapable = 1;
    const auto *amd_prop = reinterpret_cast<const hipMemAllocationProp *>(&prop);
    hipMemGenericAllocationHandle_t h = nullptr;
    size_t granularity = 0;
    if (v6) {
        EXPECT(hipMemGetAllocationGranularity(&granularity, amd_prop, hipMemAllocationGranularityMinimum) == hipSuccess &&
               granularity == (2u << 20));
        EXPECT(hipMemCreate(&h, 2 << 20, amd_prop, 0) == hipSuccess && reinterpret_cast<uintptr_t>(h) == 0x1234);
        EXPECT(g_asked.prop.type == 1 && g_asked.prop.handle_types == 1 && g_asked.prop.location.type == 1 &&
               g_asked.prop.location.id == 1 && g_asked.prop.rdma_capable == 1);
        EXPECT(hipMemMap(g_device, 2 << 20, 0, h, 0) == hipSuccess && g_asked.handle == 0x1234);
        EXPECT(hipMemRelease(h) == hipSuccess && g_asked.handle == 0x1234);
        fh_MemAllocationProp back{};
        EXPECT(hipMemGetAllocationPropertiesFromHandle(reinterpret_cast<hipMemAllocationProp *>(&back), h) == hipSuccess &&
               back.type == hipMemAllocationTypePinned && back.requestedHandleType == hipMemHandleTypePosixFileDescriptor &&
               back.location.id == 1 && back.allocFlags.gpuDirectRDMACapable == 1);
    } else {
        EXPECT(hipMemCreate(&h, 2 << 20, amd_prop, 0) == hipErrorNotSupported);
        EXPECT(hipMemGetAllocationGranularity(&granularity, amd_prop, hipMemAllocationGranularityMinimum) ==
               hipErrorNotSupported);
    }

    // hipMemPoolProps: maxSize only where ROCm 6 has it.
    fh_MemPoolProps pool_props{};
    pool_props.allocType = hipMemAllocationTypePinned;
    pool_props.location.type = hipMemLocationTypeDevice;
    pool_props.location.id = 1;
    pool_props.maxSize = v6 ? (64u << 20) : 0;
    hipMemPool_t pool = nullptr;
    EXPECT(hipMemPoolCreate(&pool, reinterpret_cast<const hipMemPoolProps *>(&pool_props)) == hipSuccess &&
           g_asked.pool.alloc_type == 1 && g_asked.pool.location.id == 1 &&
           g_asked.pool.max_size == (v6 ? (64u << 20) : 0));

    // The batched calls only from HIP 7.1.
    void *dst = g_device, *src = g_host;
    size_t size = 64, fail = SIZE_MAX, first = 0;
    fh_MemcpyAttributes attrs{};
    attrs.srcAccessOrder = fh_MemcpySrcAccessOrderStream;
    const hipError_t batch = hipMemcpyBatchAsync(&dst, &src, &size, 1, &attrs, &first, 1, &fail, nullptr);
    EXPECT(batch == (expected_version >= fh_batch_runtime ? hipSuccess : hipErrorNotSupported) && fail == SIZE_MAX);

    // Capture status and mode come back as HIP's enums.
    hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
    EXPECT(hipStreamGetCaptureInfo_v2(nullptr, &status, nullptr, nullptr, nullptr, nullptr) == hipSuccess &&
           status == hipStreamCaptureStatusActive);
    hipStreamCaptureMode mode = hipStreamCaptureModeRelaxed;
    EXPECT(hipThreadExchangeStreamCaptureMode(&mode) == hipSuccess && mode == hipStreamCaptureModeGlobal);

    std::printf("%s (%d failure%s)\n", g_failures ? "FAILED" : "OK", g_failures, g_failures == 1 ? "" : "s");
    return g_failures ? 1 : 0;
}
