// The CUDA backend: the shared GPU backend over the CUDA driver API.
#include "backends/cuda/cuda_vendor.hpp"
#include "backends/gpu/gpu_backend_impl.hpp"
#include "backends/gpu/gpu_batch_impl.hpp"
#include "backends/gpu/gpu_capture_impl.hpp"
#include "backends/gpu/gpu_pools_impl.hpp"
#include "backends/gpu/gpu_vmm_impl.hpp"

namespace gpumem::detail {

template class gpu::GpuBackend<cuda::Vendor>;

status_t make_cuda_backend(const char *library, std::unique_ptr<Backend> *out)
{
    return gpu::make_gpu_backend<cuda::Vendor>(library, cuda::load_driver, out);
}

} // namespace gpumem::detail
