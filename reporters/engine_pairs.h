// Side by side across engines: the same scenario run by two engines (ours and PyTorch's FSDP
// through peers/, or our two) paired and compared: loss parity step by step, and the ratios of
// tokens/s, peak memory and init time with bootstrap confidence intervals. Pure: result sets in,
// pairs out; the reporters render them (console, Markdown, the dashboard).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reporters/result_set.h"
#include "reporters/significance.h"

namespace shardbench {

struct RatioFigure {
  std::string metric;      // the metric both sides were read from
  RatioInterval interval;  // a / b: median ratio and its interval (equal bounds with one sample a side)
  size_t samples_a = 0, samples_b = 0;
  std::string samples;     // "repetitions" (one median per launch) | "steps" (one launch's measured steps)
};

// One exact figure on both sides (bytes or counts, the largest rank's): unset where a side did not
// measure it (its result lists it under not_measured) or never had it (no such collective).
struct ExactSide {
  std::string metric, unit;
  std::optional<double> a, b;
  bool a_not_measured = false, b_not_measured = false;
  bool equal() const { return a && b && *a == *b; }
};

struct EnginePair {
  std::string scenario;            // the instance name without its engine coordinate
  std::string engine_a, engine_b;  // a: the first of the pair (ours where one side is ours)
  std::string instance_a, instance_b;
  // Loss: the largest relative difference over the first `judged` steps (the scenario's
  // checks.loss_parity_steps), against its checks.loss_rtol.
  double loss_max_rel = 0;
  int64_t judged = 0;
  double loss_rtol = 0;
  bool loss_ok() const { return judged > 0 && loss_max_rel <= loss_rtol; }
  std::optional<RatioFigure> tokens, memory, init;
  // Memory by category and communication, side by side (exact figures, W3 1/7): held bytes,
  // unsharded peaks, gradient blowup, allocator peaks, every collective's count and bytes.
  std::vector<ExactSide> exact;
  std::vector<std::string> warnings_a, warnings_b;  // what each side's libraries warned (folded)
  std::string note;  // why something could not be compared
  // Like for like: every resolved scenario field (dotted, "mixed_precision.param_dtype") that
  // differs between the two sides, as "field: a vs b", and how many are equal. Left out: what
  // names the engine and how it is run (engine, name, peer.*, accelerate.*), the checks (they run
  // after the measured steps) and timeout_s.
  std::vector<std::string> differs;
  size_t fields_equal = 0;
  bool like_for_like() const { return differs.empty(); }
};

// Every pair of instances that ran the same scenario on two engines, in the order
// (per_param, torch_fsdp2), (flat, torch_fsdp1), (torch_fsdp1, torch_fsdp2), (flat, per_param).
// Instances from all sets are pooled; the scenario is the instance name with its engine=...
// matrix coordinate removed.
std::vector<EnginePair> PairEngines(const std::vector<const ResultSet*>& sets);

std::string EnginePairsConsole(const std::vector<EnginePair>& pairs);
std::string EnginePairsMarkdown(const std::vector<EnginePair>& pairs);
nlohmann::json EnginePairsJson(const std::vector<EnginePair>& pairs);

}  // namespace shardbench
