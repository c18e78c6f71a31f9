// FSDP's MixedPrecision: parameters are gathered and used in `param_dtype` (bf16) and
// gradients are reduced in `reduce_dtype` (fp32), while the sharded master parameters, their
// gradients and the optimizer state keep the parameters' own dtype (fp32). Unset = the
// parameter's own dtype (no cast). Both sharding engines take it.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace shardbench::shard {

struct MixedPrecision {
  std::optional<c10::ScalarType> param_dtype;
  std::optional<c10::ScalarType> reduce_dtype;
  c10::ScalarType gather(c10::ScalarType own) const { return param_dtype.value_or(own); }
  // FSDP: reduce_dtype defaults to param_dtype when only that is given.
  c10::ScalarType reduce(c10::ScalarType own) const { return reduce_dtype.value_or(param_dtype.value_or(own)); }
};

// "fp32" | "bf16" | "fp16" -> dtype; InputError naming `field` otherwise.
c10::ScalarType ParseDtype(const std::string& name, const std::string& field);
const char* DtypeName(c10::ScalarType dtype);

}  // namespace shardbench::shard
