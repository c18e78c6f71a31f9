// Synthetic samples, results files and policies for the gate's tests (compare_test.cc,
// gate_power_test.cc): the fields compare reads, nothing more.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reporters/result_set.h"
#include "tests/support/multi_rank.h"

namespace shardbench::fixtures {

// Deterministic pseudo-normal samples around `mean` (relative spread `cv`).
inline std::vector<double> Samples(double mean, double cv, int n, uint64_t seed) {
  std::vector<double> out;
  uint64_t s = seed;
  auto next = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  };
  for (int i = 0; i < n; ++i) {
    const double z = std::sqrt(-2 * std::log(next())) * std::cos(2 * M_PI * next());
    out.push_back(mean * (1 + cv * z));
  }
  return out;
}

// A results file with the given metrics and checks (the fields compare reads).
// (std::vector parameters: a one-element braced list would otherwise become the element itself.)
inline nlohmann::json Result(const std::string& name, const std::vector<nlohmann::json>& metrics,
                      const std::vector<nlohmann::json>& checks = {}, int steps = 10) {
  return {{"schema_version", 1}, {"run_id", "r"}, {"started_at", "2026-12-01T00:00:00Z"}, {"status", "ok"}, {"message", ""},
          {"scenario", {{"name", name}, {"config", {{"train", {{"steps", steps}}}}}}}, {"metrics", nlohmann::json(metrics)},
          {"checks", nlohmann::json(checks)}, {"loss", nlohmann::json::array()}};
}

inline nlohmann::json Sampled(const std::string& name, const std::string& better, const std::vector<double>& reps) {
  std::vector<double> sorted(reps);
  std::sort(sorted.begin(), sorted.end());
  return {{"name", name}, {"unit", "tokens/s"}, {"better", better}, {"kind", "sampled"}, {"samples", reps},
          {"repetition_medians", reps}, {"median", sorted[sorted.size() / 2]}, {"per_rank", nlohmann::json::array()}};
}

inline nlohmann::json Exact(const std::string& name, std::vector<double> per_rank) {
  return {{"name", name}, {"unit", "bytes"}, {"better", "lower"}, {"kind", "exact"},
          {"samples", {*std::max_element(per_rank.begin(), per_rank.end())}},
          {"median", *std::max_element(per_rank.begin(), per_rank.end())}, {"per_rank", per_rank}};
}

inline ResultSet Set(std::vector<nlohmann::json> results) {
  ResultSet s;
  s.source = "fixture";
  for (auto& r : results) {
    InstanceResult i;
    i.name = r["scenario"]["name"];
    i.status = r["status"];
    i.result = r;
    s.instances.push_back(i);
  }
  return s;
}

inline std::string WritePolicy(const std::string& name, const std::string& text) {
  const std::string path = testing::MakeTempDir("policy") + "/" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

}  // namespace shardbench::fixtures
