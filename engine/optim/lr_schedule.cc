#include "engine/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace shardbench::optim {

const char* LrScheduleKindName(LrScheduleKind kind) { return kind == LrScheduleKind::kCosine ? "cosine" : "constant"; }

double LrSchedule::factor(int64_t step) const {
  if (warmup_steps > 0 && step < warmup_steps) return static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (kind != LrScheduleKind::kCosine) return 1.0;
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return min_lr_ratio + (1.0 - min_lr_ratio) * cosine;
}

}  // namespace shardbench::optim
