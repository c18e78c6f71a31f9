// The denominator of MFU. Measured: a short square matmul loop on the run's own device (bf16 on
// a GPU), the best rate over a few timed repetitions after a warmup; and the datasheet's dense
// bf16 peak for the GPUs we know (both are reported: the measured peak is what this device
// reaches today, the datasheet's is what papers divide by).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>

namespace shardbench::profile {

struct MatmulPeak {
  int64_t size = 0;          // n of the n x n x n products
  int64_t iterations = 0;    // products timed (all repetitions)
  double flops = 0;          // 2 n^3 per product, summed over the timed ones
  double best_flops_per_s = 0;  // the fastest repetition's rate
};

// `repetitions` timed rounds of `per_round` products each, after one warmup round.
MatmulPeak CalibrateMatmulPeak(const c10::Device& device, c10::ScalarType dtype, int64_t size, int repetitions = 5,
                               int per_round = 4);

// Dense bf16 tensor-core peak (FLOP/s) from the datasheet for a device name ("NVIDIA H200"):
// H200 / H100 SXM 989.4 T, H100 PCIe 756 T, A100 312 T, L40S 362 T; nullopt otherwise.
std::optional<double> DatasheetBf16Peak(const std::string& device_name);
// The CUDA device's name (empty without the GPU path).
std::string CudaDeviceName(int device_index);

}  // namespace shardbench::profile
