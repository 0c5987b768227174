// Added by gpumem's hip_nvidia_headers.py at the end of HIP's NVIDIA platform header, for the
// HIP releases (before 6) whose NVIDIA platform lacks these names: the memory pools' enum
// values and the virtual memory management calls that the ROCm guides' pool and VMM examples
// use.  Each is CUDA's own, under its HIP name, as HIP's NVIDIA platform maps everything else;
// the values are the ones the AMD ABI uses too (hip_over_cuda.cpp checks them).
//
// hipMemAllocationProp is declared here with the CUDA runtime's enum types in the driver's
// CUmemAllocationProp layout, so that hipMemAllocationTypePinned and hipMemLocationTypeDevice
// (cudaMemAllocationType, cudaMemLocationType, as hipMemPoolProps needs them) fit both.
//
// SPDX-License-Identifier: MIT
#ifndef GPUMEM_HIP_NVIDIA_COMPLETION_H
#define GPUMEM_HIP_NVIDIA_COMPLETION_H
#if HIP_VERSION_MAJOR < 6

#include <cuda.h>
#include <cuda_runtime_api.h>

#define hipMemAllocationTypeInvalid cudaMemAllocationTypeInvalid
#define hipMemAllocationTypePinned cudaMemAllocationTypePinned
#define hipMemLocationTypeInvalid cudaMemLocationTypeInvalid
#define hipMemLocationTypeDevice cudaMemLocationTypeDevice
#define hipMemHandleTypeNone cudaMemHandleTypeNone
#define hipMemHandleTypePosixFileDescriptor cudaMemHandleTypePosixFileDescriptor
#define hipMemAccessFlagsProtNone cudaMemAccessFlagsProtNone
#define hipMemAccessFlagsProtRead cudaMemAccessFlagsProtRead
#define hipMemAccessFlagsProtReadWrite cudaMemAccessFlagsProtReadWrite
#define hipMemPoolReuseFollowEventDependencies cudaMemPoolReuseFollowEventDependencies
#define hipMemPoolReuseAllowOpportunistic cudaMemPoolReuseAllowOpportunistic
#define hipMemPoolReuseAllowInternalDependencies cudaMemPoolReuseAllowInternalDependencies
#define hipMemPoolAttrReleaseThreshold cudaMemPoolAttrReleaseThreshold
#define hipMemPoolAttrReservedMemCurrent cudaMemPoolAttrReservedMemCurrent
#define hipMemPoolAttrReservedMemHigh cudaMemPoolAttrReservedMemHigh
#define hipMemPoolAttrUsedMemCurrent cudaMemPoolAttrUsedMemCurrent
#define hipMemPoolAttrUsedMemHigh cudaMemPoolAttrUsedMemHigh

typedef CUmemGenericAllocationHandle hipMemGenericAllocationHandle_t;
typedef enum hipMemAllocationGranularity_flags {
    hipMemAllocationGranularityMinimum = CU_MEM_ALLOC_GRANULARITY_MINIMUM,
    hipMemAllocationGranularityRecommended = CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
} hipMemAllocationGranularity_flags;
typedef struct hipMemAllocationProp {
    enum cudaMemAllocationType type;
    enum cudaMemAllocationHandleType requestedHandleTypes;
    struct cudaMemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} hipMemAllocationProp;

static inline const CUmemAllocationProp *hip_nvidia_allocation_prop(const hipMemAllocationProp *prop) {
    typedef char layout_matches_CUmemAllocationProp[sizeof(hipMemAllocationProp) == sizeof(CUmemAllocationProp) ? 1 : -1];
    (void)sizeof(layout_matches_CUmemAllocationProp);
    return (const CUmemAllocationProp *)prop;
}

inline static hipError_t hipMemGetAllocationGranularity(size_t *granularity, const hipMemAllocationProp *prop,
                                                        hipMemAllocationGranularity_flags option) {
    return hipCUResultTohipError(cuMemGetAllocationGranularity(granularity, hip_nvidia_allocation_prop(prop),
                                                               (CUmemAllocationGranularity_flags)option));
}
inline static hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                                      const hipMemAllocationProp *prop, unsigned long long flags) {
    return hipCUResultTohipError(cuMemCreate(handle, size, hip_nvidia_allocation_prop(prop), flags));
}
inline static hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
    return hipCUResultTohipError(cuMemRelease(handle));
}
inline static hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                              unsigned long long flags) {
    return hipCUResultTohipError(cuMemAddressReserve((CUdeviceptr *)ptr, size, alignment, (CUdeviceptr)addr, flags));
}
inline static hipError_t hipMemAddressFree(void *ptr, size_t size) {
    return hipCUResultTohipError(cuMemAddressFree((CUdeviceptr)ptr, size));
}
inline static hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                                   unsigned long long flags) {
    return hipCUResultTohipError(cuMemMap((CUdeviceptr)ptr, size, offset, handle, flags));
}
inline static hipError_t hipMemUnmap(void *ptr, size_t size) {
    return hipCUResultTohipError(cuMemUnmap((CUdeviceptr)ptr, size));
}
inline static hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc, size_t count) {
    return hipCUResultTohipError(cuMemSetAccess((CUdeviceptr)ptr, size, (const CUmemAccessDesc *)desc, count));
}

#endif
#endif
