// The HIP backend: the shared GPU backend over the HIP runtime API.
#include "backends/gpu/gpu_backend_impl.hpp"
#include "backends/gpu/gpu_batch_impl.hpp"
#include "backends/gpu/gpu_capture_impl.hpp"
#include "backends/gpu/gpu_pools_impl.hpp"
#include "backends/gpu/gpu_vmm_impl.hpp"
#include "backends/hip/hip_vendor.hpp"

namespace gpumem::detail {

template class gpu::GpuBackend<hip::Vendor>;

status_t make_hip_backend(const char *library, std::unique_ptr<Backend> *out)
{
    return gpu::make_gpu_backend<hip::Vendor>(library, hip::load_runtime, out);
}

} // namespace gpumem::detail
