// Learning-rate schedules as fine-tuning recipes use them: linear warmup from 0, then constant
// or cosine decay to min_lr_ratio * lr at the last step (transformers'
// get_cosine_schedule_with_warmup with a floor).
#pragma once

#include <cstdint>

namespace shardbench::optim {

enum class LrScheduleKind { kConstant, kCosine };
const char* LrScheduleKindName(LrScheduleKind kind);  // "constant" | "cosine"

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.0;
  // Multiplier of the base lr for optimizer step `step` (0-based).
  double factor(int64_t step) const;
};

}  // namespace shardbench::optim
