#include "engine/memory/memory_record.h"

namespace shardbench::memory {

const char* CategoryName(Category c) {
  switch (c) {
    case Category::kParamsSharded: return "params_sharded";
    case Category::kParamsUnsharded: return "params_unsharded";
    case Category::kGrads: return "grads";
    case Category::kOptimState: return "optim_state";
    case Category::kActivations: return "activations";
    case Category::kCommBuffers: return "comm_buffers";
    case Category::kOther: return "other";
    case Category::kCount: break;
  }
  return "?";
}

int64_t CategoryBytes::total() const {
  int64_t sum = 0;
  for (int64_t b : bytes) sum += b;
  return sum;
}

}  // namespace shardbench::memory
