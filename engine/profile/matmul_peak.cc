#include "engine/profile/matmul_peak.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#ifdef SHARDBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace shardbench::profile {
namespace {

void Synchronize(const c10::Device& device) {
#ifdef SHARDBENCH_WITH_CUDA
  if (device.is_cuda()) at::cuda::getCurrentCUDAStream(device.index()).synchronize();
#else
  (void)device;
#endif
}

}  // namespace

MatmulPeak CalibrateMatmulPeak(const c10::Device& device, c10::ScalarType dtype, int64_t size, int repetitions,
                               int per_round) {
  const auto options = at::TensorOptions().device(device).dtype(dtype);
  const at::Tensor a = at::randn({size, size}, options), b = at::randn({size, size}, options);
  at::Tensor c = at::empty({size, size}, options);
  MatmulPeak peak;
  peak.size = size;
  const double per_product = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  for (int round = 0; round <= repetitions; ++round) {  // round 0 warms up (kernel choice, clocks)
    Synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < per_round; ++i) at::mm_out(c, a, b);
    Synchronize(device);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (round == 0) continue;
    peak.iterations += per_round;
    peak.flops += per_product * per_round;
    peak.best_flops_per_s = std::max(peak.best_flops_per_s, per_product * per_round / seconds);
  }
  return peak;
}

std::optional<double> DatasheetBf16Peak(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H200")) return 989.4e12;
  if (has("H100") && has("PCIe")) return 756e12;
  if (has("H100")) return 989.4e12;
  if (has("A100")) return 312e12;
  if (has("L40S")) return 362e12;
  return std::nullopt;
}

std::string CudaDeviceName(int device_index) {
#ifdef SHARDBENCH_WITH_CUDA
  return at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device_index))->name;
#else
  (void)device_index;
  return "";
#endif
}

}  // namespace shardbench::profile
