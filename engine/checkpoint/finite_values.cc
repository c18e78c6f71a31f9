#include "engine/checkpoint/finite_values.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>

#include "engine/common/error.h"

namespace shardbench::checkpoint {
namespace {

std::string ElementIndex(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = shape[d] > 0 ? shape[d] : 1;
    index[d] = flat % extent;
    flat /= extent;
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d) out += (d ? ", " : "") + std::to_string(index[d]);
  return out + "]";
}

std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

}  // namespace

void RequireFiniteLoaded(const at::Tensor& loaded, const at::Tensor& stored, const std::string& where,
                         const std::string& name, const std::vector<int64_t>& shape, int64_t flat_begin) {
  if (!at::isFloatingType(loaded.scalar_type()) || loaded.numel() == 0) return;
  const at::Tensor bad = at::isfinite(loaded).logical_not().reshape({-1});
  // One host read when all is well (the usual case): the load is outside the timed steps.
  if (!bad.any().item<bool>()) return;
  const at::Tensor positions = bad.nonzero();
  const int64_t first = positions[0][0].item<int64_t>(), count = positions.size(0);
  const double value = loaded.reshape({-1})[first].item<double>();
  std::string what = "holds " + Number(value);
  if (stored.defined() && at::isFloatingType(stored.scalar_type())) {
    const double was = stored.reshape({-1})[first].item<double>();
    if (std::isfinite(was)) {
      what = "holds " + Number(was) + ", which is " + Number(value) + " in the model's dtype " +
             std::string(c10::toString(loaded.scalar_type()));
    }
  }
  throw InputError(where + ": tensor '" + name + "' " + what + " at element " +
                   ElementIndex(shape, flat_begin + first) +
                   (count > 1 ? " (" + std::to_string(count - 1) + " more non-finite in the values read there)" : "") +
                   ": a checkpoint's values must be finite (training from it would diverge at step 0)");
}

}  // namespace shardbench::checkpoint
