// The order units run their forward in, recorded during the first iteration (as FSDP records
// it): prefetch asks it for the unit after this one (forward) or before it (backward). Every
// iteration starts at the root, so meeting the first recorded unit again completes the order.
#pragma once

#include <cstddef>
#include <vector>

namespace shardbench::shard {

template <typename Unit>
class ExecutionOrder {
 public:
  // Called at each unit's pre-forward; true once the order is complete.
  bool record(Unit* unit) {
    if (known_) return true;
    if (!order_.empty() && unit == order_.front()) {
      known_ = true;
      return true;
    }
    order_.push_back(unit);
    return false;
  }

  // The unit `direction` (+1 next, -1 previous) steps from `unit` in forward order; null when
  // there is none or the order is not known yet.
  Unit* neighbour(const Unit* unit, int direction) const {
    if (!known_) return nullptr;
    for (size_t i = 0; i < order_.size(); ++i) {
      if (order_[i] != unit) continue;
      if (direction < 0 && i == 0) return nullptr;
      const size_t j = direction < 0 ? i - 1 : i + 1;
      return j < order_.size() ? order_[j] : nullptr;
    }
    return nullptr;
  }

 private:
  std::vector<Unit*> order_;
  bool known_ = false;
};

}  // namespace shardbench::shard
