// The HIP types the fake needs that ROCm 5.2's <hip/hip_runtime_api.h> (Debian's) lacks or
// lays out differently, declared with ROCm 6's layout and values (prefixed fh_ so that they
// never collide with a newer header's own).  The backend declares the same in
// src/backends/hip/hip_types.hpp; both follow ROCm 6.x's hip_runtime_api.h exactly.
//
// SPDX-License-Identifier: MIT
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fakehip {

// ROCm 6 hipDeviceAttribute_t: the CUDA-compatible entries keep their places; ROCm 5.2's
// header ends at MemoryPoolsSupported (88), ROCm 6 adds the next three.
constexpr int fh_DeviceAttributeMemoryPoolsSupported = 88;
constexpr int fh_DeviceAttributeVirtualMemoryManagementSupported = 89;
constexpr int fh_DeviceAttributeHostRegisterSupported = 90;
constexpr int fh_DeviceAttributeMemoryPoolSupportedHandleTypes = 91;
constexpr int fh_DeviceAttributeCudaCompatibleEnd = 9999;
constexpr int fh_DeviceAttributeAmdSpecificBegin = 10000;

// hipMemoryType: ROCm 6 renumbered it (the runtime's version says which applies).
constexpr int fh6_Unregistered = 0, fh6_Host = 1, fh6_Device = 2, fh6_Managed = 3, fh6_Array = 10, fh6_Unified = 11;
constexpr int fh5_Host = 0, fh5_Device = 1, fh5_Array = 2, fh5_Unified = 3, fh5_Managed = 4;

// hipPointerAttribute_t (the same layout in ROCm 5 and 6; the first field is
// memoryType in 5, type in 6).
struct fh_PointerAttribute {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned allocationFlags;
};

// hipMemLocationType: ROCm 6 adds the host kinds (CUDA's values).
constexpr int fh_MemLocationTypeInvalid = 0;
constexpr int fh_MemLocationTypeDevice = 1;
constexpr int fh_MemLocationTypeHost = 2;
constexpr int fh_MemLocationTypeHostNuma = 3;
constexpr int fh_MemLocationTypeHostNumaCurrent = 4;

// hipMemcpyAttributes (HIP 7.1, CUDA's layout) and hipMemcpySrcAccessOrder's values.
struct fh_MemcpyAttributes {
    int srcAccessOrder;
    hipMemLocation srcLocHint;
    hipMemLocation dstLocHint;
    unsigned int flags;
};
constexpr int fh_MemcpySrcAccessOrderStream = 1, fh_MemcpySrcAccessOrderAny = 3;
// The batched calls appeared in HIP 7.1.
constexpr int fh_batch_runtime = 70100000;

// hipMemPoolProps with ROCm 6's maxSize (taken from the reserved bytes: the size is unchanged).
struct fh_MemPoolProps {
    hipMemAllocationType allocType;
    hipMemAllocationHandleType handleTypes;
    hipMemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned char reserved[56];
};
static_assert(sizeof(fh_MemPoolProps) == sizeof(hipMemPoolProps), "hipMemPoolProps layout");

// Virtual memory management (ROCm 5.3+; absent from ROCm 5.2's header).
typedef struct ihipMemGenericAllocationHandle *fh_MemGenericAllocationHandle_t;
typedef enum fh_MemAllocationGranularity_flags {
    fh_MemAllocationGranularityMinimum = 0x0,
    fh_MemAllocationGranularityRecommended = 0x1,
} fh_MemAllocationGranularity_flags;
struct fh_MemAllocationProp {
    hipMemAllocationType type;
    hipMemAllocationHandleType requestedHandleType; // (requestedHandleTypes in ROCm 6.2+: a union)
    hipMemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
    } allocFlags;
};

// User objects (ROCm 6; absent from ROCm 5.2's header).  The handle is ROCm 6's
// `struct hipUserObject *`, so a newer header's hipUserObject_t is the same type.
typedef struct hipUserObject *fh_UserObject_t;
constexpr unsigned fh_UserObjectNoDestructorSync = 0x1; // hipUserObjectNoDestructorSync
constexpr unsigned fh_GraphUserObjectMove = 0x1;        // hipGraphUserObjectMove

} // namespace fakehip
