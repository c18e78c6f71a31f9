// What the unit driver (engine/shard/unit_driver.h) tells each unit it builds, the same for
// both kinds of unit: when to free the gathered parameters, where to count the bytes, the
// mixed-precision dtypes, how meta parameters are filled, and the prefetch callback.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "engine/model/param_init.h"
#include "engine/shard/byte_gauge.h"
#include "engine/shard/mixed_precision.h"

namespace shardbench::shard {

template <typename Unit>
struct UnitOptions {
  bool reshard_after_forward = true;          // false: SHARD_GRAD_OP (keep params until backward)
  bool is_root = false;                       // the root is never resharded after forward
  ByteGauge* unsharded_bytes = nullptr;       // optional: current/peak unsharded parameter bytes
  ByteGauge* unsharded_grad_bytes = nullptr;  // optional: full gradients awaiting reduce-scatter
  MixedPrecision mixed_precision;             // gather/compute and reduce dtypes
  model::Materialization materialize;         // for params still on the meta device
  // Called once the unit has re-gathered for its backward (backward prefetch hooks in here).
  std::function<void(Unit&)> after_backward_unshard;
};

// A unit's name in trace spans: its module path, "root" for the model itself.
inline std::string_view UnitLabel(const std::string& path) { return path.empty() ? std::string_view("root") : path; }

}  // namespace shardbench::shard
