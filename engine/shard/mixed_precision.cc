#include "engine/shard/mixed_precision.h"

#include "engine/common/error.h"

namespace shardbench::shard {

c10::ScalarType ParseDtype(const std::string& name, const std::string& field) {
  if (name == "fp32") return c10::ScalarType::Float;
  if (name == "bf16") return c10::ScalarType::BFloat16;
  if (name == "fp16") return c10::ScalarType::Half;
  throw InputError(field + ": dtype '" + name + "', expected one of fp32, bf16, fp16");
}

const char* DtypeName(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "fp32";
    case c10::ScalarType::BFloat16: return "bf16";
    case c10::ScalarType::Half: return "fp16";
    default: return c10::toString(dtype);
  }
}

}  // namespace shardbench::shard
