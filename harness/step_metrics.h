// The step-time builders of the metric table (harness/metric_table.cc): per measured step, what
// the slowest rank took (ranks step in lockstep), tokens/s and its faster half, the optimizer's
// share, busy time and the straggler ratio, and the overlap figures from kernels or spans.
#pragma once

#include <vector>

#include "harness/metric_table.h"

namespace shardbench::step_metrics {

void StepTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void StepTimeCalibrated(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void GradSyncTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void TokensPerS(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void TokensPerSFastHalf(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void TokensPerSPerRank(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void OptimizerShare(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void StepTimeBusy(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void StragglerRatio(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void KernelCommTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void KernelExposedCommTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void KernelComputeTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void KernelOverlapRatio(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void CommExposedTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void CommOverlapRatio(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);
void RankIdleTime(const MetricRow& row, const MetricInputs& in, std::vector<Metric>& out);

}  // namespace shardbench::step_metrics
