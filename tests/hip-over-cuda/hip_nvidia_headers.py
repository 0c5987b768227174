#!/usr/bin/env python3
"""Copy HIP's headers and adapt HIP's NVIDIA platform (hip/nvidia_detail) to CUDA 12 and 13.

    hip_nvidia_headers.py HIP_INCLUDE_DIR OUT_DIR

HIP_INCLUDE_DIR holds hip/ (Debian's ROCm 5.2 headers: /usr/include).  OUT_DIR/hip is a copy
in which nvidia_detail/nvidia_hip_runtime_api.h no longer uses what CUDA 12 and 13 removed, and
ends by including hip_nvidia_completion.h (next to this script): the pool enum values and VMM
calls that HIP's NVIDIA platform gained only after ROCm 5.2, which the ROCm guides' examples use.
Each edit below names the CUDA change it answers; every other line of AMD's mapping is kept
as it is, so a HIP program compiled against OUT_DIR gets AMD's own hip* -> cuda* mapping.
An edit whose text is not found stops the script: a different HIP release needs a look,
not a silent half-patched header.  Edits already absent from a newer HIP are skipped only
when the whole file shows no trace of the old call.
"""
import pathlib
import shutil
import sys

# Helpers the edits below call, put before the first wrapper that needs them.  CUDA 13 takes a
# cudaMemLocation where CUDA 12 took a device ordinal (cudaCpuDeviceId meaning the host), gives
# cudaMemPrefetchAsync a flags argument, adds per-edge data to the graph calls (none asked for
# here) and folds cudaStreamGetCaptureInfo_v2 into cudaStreamGetCaptureInfo; CUDA 12.x keeps
# the old forms.
HELPERS = """
#if CUDART_VERSION >= 13000
static inline struct cudaMemLocation hip_nvidia_location(int device) {
    struct cudaMemLocation where;
    where.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    where.id = device == cudaCpuDeviceId ? 0 : device;
    return where;
}
#define HIP_NVIDIA_PREFETCH_FLAGS 0,
#define HIP_NVIDIA_NO_EDGE_DATA NULL,
#define cudaStreamGetCaptureInfo_v2(s, status, id, graph, deps, count) \\
    cudaStreamGetCaptureInfo(s, status, id, graph, deps, NULL, count)
#else
static inline int hip_nvidia_location(int device) { return device; }
#define HIP_NVIDIA_PREFETCH_FLAGS
#define HIP_NVIDIA_NO_EDGE_DATA
#endif
static inline int hip_nvidia_attribute(enum cudaDeviceAttr attr, int device) {
    int value = 0;
    return cudaDeviceGetAttribute(&value, attr, device) == cudaSuccess ? value : 0;
}
"""

# (old text, new text, why).  Each old text must occur at least once.
EDITS = [
    ("inline static hipError_t hipMemAdvise(",
     HELPERS + "\ninline static hipError_t hipMemAdvise(",
     "helpers for the edits below"),
    ("hipMemoryAdviseTocudaMemoryAdvise(advice), device));",
     "hipMemoryAdviseTocudaMemoryAdvise(advice), hip_nvidia_location(device)));",
     "CUDA 13: cudaMemAdvise takes a cudaMemLocation"),
    ("cudaMemPrefetchAsync(dev_ptr, count, device, stream)",
     "cudaMemPrefetchAsync(dev_ptr, count, hip_nvidia_location(device), HIP_NVIDIA_PREFETCH_FLAGS stream)",
     "CUDA 13: cudaMemPrefetchAsync takes a cudaMemLocation and flags"),
    ("    cdprop.clockRate = prop->clockRate;\n", "",
     "CUDA 13: cudaDeviceProp has no clockRate (hipChooseDevice no longer matches on it)"),
    ("    cdprop.computeMode = prop->computeMode;\n", "",
     "CUDA 13: cudaDeviceProp has no computeMode"),
    ("    cdprop.memoryClockRate = prop->memoryClockRate;\n", "",
     "CUDA 13: cudaDeviceProp has no memoryClockRate"),
    ("p_prop->clockRate = cdprop.clockRate;",
     "p_prop->clockRate = hip_nvidia_attribute(cudaDevAttrClockRate, device);",
     "CUDA 13: the clock rate is a device attribute only"),
    ("p_prop->memoryClockRate = cdprop.memoryClockRate;",
     "p_prop->memoryClockRate = hip_nvidia_attribute(cudaDevAttrMemoryClockRate, device);",
     "CUDA 13: the memory clock rate is a device attribute only"),
    ("p_prop->computeMode = cdprop.computeMode;",
     "p_prop->computeMode = hip_nvidia_attribute(cudaDevAttrComputeMode, device);",
     "CUDA 13: the compute mode is a device attribute only"),
    ("p_prop->clockInstructionRate = cdprop.clockRate;",
     "p_prop->clockInstructionRate = p_prop->clockRate;",
     "CUDA 13: cudaDeviceProp has no clockRate"),
    ("p_prop->cooperativeMultiDeviceLaunch = cdprop.cooperativeMultiDeviceLaunch;",
     "p_prop->cooperativeMultiDeviceLaunch = 0;",
     "CUDA 13 removed multi-device cooperative launches"),
    ("p_prop->kernelExecTimeoutEnabled = cdprop.kernelExecTimeoutEnabled;",
     "p_prop->kernelExecTimeoutEnabled = hip_nvidia_attribute(cudaDevAttrKernelExecTimeout, device);",
     "CUDA 13: the kernel timeout is a device attribute only"),
    ("            cdattr = cudaDevAttrCooperativeMultiDeviceLaunch;\n",
     "            return hipErrorNotSupported;\n",
     "CUDA 13 removed multi-device cooperative launches"),
    ("cuCtxCreate(ctx, flags, device)",
     "cuCtxCreate(ctx, NULL, flags, device)",
     "CUDA 13: cuCtxCreate takes creation parameters"),
    ("return hipCUDAErrorTohipError(cudaBindTexture(offset, tex, devPtr, desc, size));",
     "(void)offset; (void)tex; (void)devPtr; (void)desc; (void)size; return hipErrorNotSupported;",
     "CUDA 12 removed texture references"),
    ("return hipCUDAErrorTohipError(cudaBindTexture2D(offset, tex, devPtr, desc, width, height, pitch));",
     "(void)offset; (void)tex; (void)devPtr; (void)desc; (void)width; (void)height; (void)pitch;"
     " return hipErrorNotSupported;",
     "CUDA 12 removed texture references"),
    ("return hipCUDAErrorTohipError(cudaGetTextureAlignmentOffset(offset,texref));",
     "(void)offset; (void)texref; return hipErrorNotSupported;",
     "CUDA 12 removed texture references"),
    ("cudaGraphAddDependencies(graph, from, to, numDependencies)",
     "cudaGraphAddDependencies(graph, from, to, HIP_NVIDIA_NO_EDGE_DATA numDependencies)",
     "CUDA 13: graph edges carry data"),
    ("cudaGraphRemoveDependencies(graph, from, to, numDependencies)",
     "cudaGraphRemoveDependencies(graph, from, to, HIP_NVIDIA_NO_EDGE_DATA numDependencies)",
     "CUDA 13: graph edges carry data"),
    ("cudaGraphGetEdges(graph, from, to, numEdges)",
     "cudaGraphGetEdges(graph, from, to, HIP_NVIDIA_NO_EDGE_DATA numEdges)",
     "CUDA 13: graph edges carry data"),
    ("cudaGraphNodeGetDependencies(node, pDependencies, pNumDependencies)",
     "cudaGraphNodeGetDependencies(node, pDependencies, HIP_NVIDIA_NO_EDGE_DATA pNumDependencies)",
     "CUDA 13: graph edges carry data"),
    ("cudaGraphNodeGetDependentNodes(node, pDependentNodes, pNumDependentNodes)",
     "cudaGraphNodeGetDependentNodes(node, pDependentNodes, HIP_NVIDIA_NO_EDGE_DATA pNumDependentNodes)",
     "CUDA 13: graph edges carry data"),
    ("cudaStreamUpdateCaptureDependencies(stream, dependencies,\n",
     "cudaStreamUpdateCaptureDependencies(stream, dependencies, HIP_NVIDIA_NO_EDGE_DATA\n",
     "CUDA 13: graph edges carry data"),
    ("return hipCUDAErrorTohipError(cudaLaunchCooperativeKernelMultiDevice(launchParamsList, numDevices, flags));",
     "(void)launchParamsList; (void)numDevices; (void)flags; return hipErrorNotSupported;",
     "CUDA 13 removed multi-device cooperative launches"),
]


# (first line, last line, why): the lines from first to last, inclusive, are compiled only
# with CUDA releases that still have what they use.
WRAPS = [
    ("template <class T, int dim, enum cudaTextureReadMode readMode>\n"
     "inline static hipError_t hipBindTexture(size_t* offset, const struct texture<T, dim, readMode>& tex,",
     "    return hipCUDAErrorTohipError(cudaBindTextureToArray(tex, array));\n}\n",
     "CUDART_VERSION < 12000", "CUDA 12 removed texture references (texture<T, dim, readMode>)"),
]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: hip_nvidia_headers.py HIP_INCLUDE_DIR OUT_DIR")
    src = pathlib.Path(sys.argv[1]) / "hip"
    out = pathlib.Path(sys.argv[2])
    header = src / "nvidia_detail" / "nvidia_hip_runtime_api.h"
    if not header.is_file():
        sys.exit(f"hip_nvidia_headers.py: {header} not found: HIP's NVIDIA platform headers are needed")
    if (out / "hip").exists():
        shutil.rmtree(out / "hip")
    shutil.copytree(src, out / "hip")
    text = header.read_text()
    for old, new, why in EDITS:
        if old not in text:
            sys.exit(f"hip_nvidia_headers.py: {header}: no '{old[:60]}' ({why}); this HIP release needs a look")
        text = text.replace(old, new)
    for first, last, condition, why in WRAPS:
        start = text.find(first)
        end = text.find(last, start)
        if start < 0 or end < 0:
            sys.exit(f"hip_nvidia_headers.py: {header}: no '{first[:60]}' ... ({why}); this HIP release needs a look")
        end += len(last)
        text = text[:start] + f"#if {condition} // {why}\n" + text[start:end] + "#endif\n" + text[end:]
    # The names this HIP's NVIDIA platform lacks (pool enum values, VMM), inside the header's
    # include guard: hip_nvidia_completion.h says which and why (it is empty from HIP 6 on).
    guard_end = "#endif  // HIP_INCLUDE_HIP_NVIDIA_DETAIL_HIP_RUNTIME_API_H"
    if guard_end not in text:
        sys.exit(f"hip_nvidia_headers.py: {header}: no '{guard_end}'; this HIP release needs a look")
    text = text.replace(guard_end, '#include "hip_nvidia_completion.h"\n\n' + guard_end)
    shutil.copyfile(pathlib.Path(__file__).with_name("hip_nvidia_completion.h"),
                    out / "hip" / "nvidia_detail" / "hip_nvidia_completion.h")
    target = out / "hip" / "nvidia_detail" / "nvidia_hip_runtime_api.h"
    target.chmod(0o644)
    target.write_text("// Adapted to CUDA 12 and 13 by gpumem's tests/hip-over-cuda/hip_nvidia_headers.py\n" + text)


if __name__ == "__main__":
    main()
