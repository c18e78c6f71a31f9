// The counter-based initialisation (engine/model/param_init.h) computed where the tensor lives:
// the same splitmix64 draws and Box-Muller arithmetic as ATen tensor ops (64-bit integer
// multiplies wrap on every backend; logical shifts are arithmetic ones masked), so a parameter
// on a GPU is filled there instead of on the host and copied (the ~1B config took 33-38 s to
// initialise on an H200 that way).
//
// The equality rule: bit for bit the host generator's values (FillInitRange on the CPU). Uniform
// and constant parameters are IEEE products and sums on both sides. A normal element's double
// comes from the device's own log and cos, within a few units in the last place of a double of
// the C library's; it rounds to the same float unless it lies within 2^-40 (relative) of a
// midpoint between two floats, or where that reasoning does not hold (engine/model/
// normal_kernel.h's check, the same conditions): such elements, about 1 in 10^5, are recomputed
// on the host by NormalElement and written back. The code path is the same on every device, so
// tests/engine/device_init_test.cc checks the rule on CPU tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/model/param_init.h"

namespace shardbench::model {

struct DeviceInitStats {
  int64_t elements = 0;
  int64_t recomputed_on_host = 0;  // normal elements the check could not decide
};

// Fills `dst` (contiguous, any dtype, any device) with elements [begin, begin + dst.numel()) of
// the parameter whose key is `key`, computed with tensor ops on dst's device.
DeviceInitStats FillInitRangeOnDevice(const at::Tensor& dst, const ParamInit& init, uint64_t key, int64_t begin);

}  // namespace shardbench::model
