// StartKernelTrace in builds without CUDA or without CUPTI.
#include "engine/common/error.h"
#include "engine/profile/kernel_trace.h"

namespace shardbench::profile {

std::unique_ptr<KernelTrace> StartKernelTrace() {
  throw InputError("profile.kernel_trace needs CUPTI: this build was compiled without CUDA or without CUPTI "
              "(configure with the CUDA toolkit present; see README, GPU path)");
}

}  // namespace shardbench::profile
