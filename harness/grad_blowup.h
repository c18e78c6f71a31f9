// Gradient bytes a rank holds over the trainable bytes it owns (trainable bytes / world size):
// catalog case 1's measure, computed once for the grad_blowup metric (harness/metric_table.cc)
// and the grad_memory check (harness/run_checks.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "harness/rank_record.h"

namespace shardbench {

struct GradBlowup {
  double owned = 0;        // trainable bytes a rank owns
  double worst_bytes = 0;  // the most gradient bytes any rank holds
  double blowup = 0;       // worst_bytes / owned (0 when nothing is owned)
  std::vector<double> per_rank;  // each rank's gradient bytes / owned
};

GradBlowup MeasureGradBlowup(const std::vector<RankRecord>& ranks, int64_t trainable_bytes, int world_size);

}  // namespace shardbench
