#include "harness/check_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace shardbench {
namespace {

// suites/catalog.yaml case 1 (frozen and trainable parameters flattened together): the worst rank's
// gradient bytes over the trainable bytes it owns.
std::string GradMemoryWords(double blowup, double limit, const RunFacts& facts, int world_size) {
  const double owned = static_cast<double>(facts.trainable_bytes.value_or(0)) / world_size;
  char words[256];
  std::snprintf(words, sizeof(words),
                "a rank holds %.0f gradient bytes for %.0f trainable bytes it owns: %.2fx (limit %.2fx)",
                blowup * owned, owned, blowup, limit);
  return words;
}

Check JudgeThreshold(const CheckRow& row, double limit, const std::vector<Metric>& metrics,
                     const std::vector<NotMeasured>& not_measured, const RunFacts& facts, int world_size) {
  const std::string metric = row.metric;
  const auto m = std::find_if(metrics.begin(), metrics.end(), [&](const Metric& x) { return x.name == metric; });
  if (m == metrics.end()) {
    const auto n =
        std::find_if(not_measured.begin(), not_measured.end(), [&](const NotMeasured& x) { return x.name == metric; });
    return {row.name, false,
            "not judged: " + metric + " was not measured (" +
                (n != not_measured.end() ? n->why : "the run reported no " + metric) + ")"};
  }
  for (size_t r = 0; r < m->per_rank.size(); ++r) {
    if (std::isnan(m->per_rank[r]))
      return {row.name, false, "not judged: rank " + std::to_string(r) + "'s " + metric + " was not measured"};
  }
  if (m->samples.empty() || std::isnan(m->samples.front()))
    return {row.name, false, "not judged: " + metric + " has no value"};
  const double value = m->samples.front();
  return {row.name, value <= limit, row.words(value, limit, facts, world_size)};
}

}  // namespace

const std::vector<CheckRow>& CheckTable() {
  static const std::vector<CheckRow> table = {
      {"peer_accepts_scenario", "",
       "a peer engine's library accepted the scenario (its refusal, in its own words, is red)"},
      {"finite", "", "every step's loss finite on every rank (a diverging run is red, naming the step)"},
      {"learning", "checks.learning", "the loss dropped, every trainable parameter changed and no frozen one did"},
      {"loss_parity", "checks.loss_parity",
       "the loss per step equals the unsharded reference's within checks.loss_rtol"},
      {"frozen_dtype", "checks.frozen_dtype",
       "every frozen parameter is stored in the dtype it was loaded in, not wider"},
      {"checkpoint_save", "checkpoint.type",
       "the checkpoint asked for was saved (a peer's library failing to save is red, in its words)"},
      {"state_dict_roundtrip", "checks.state_dict_roundtrip",
       "save, load into a fresh model: parameters and optimizer state equal bit for bit"},
      {"resume", "checks.resume", "training resumed from the checkpoint equals the uninterrupted run exactly"},
      {"grad_memory", "checks.max_grad_blowup",
       "gradient bytes a rank holds over the trainable bytes it owns, at most the limit", "grad_blowup",
       &ChecksConfig::max_grad_blowup, GradMemoryWords},
  };
  return table;
}

std::vector<Check> JudgeThresholdChecks(const Scenario& s, const std::vector<Metric>& metrics,
                                        const std::vector<NotMeasured>& not_measured, const RunFacts& facts) {
  std::vector<Check> out;
  for (const CheckRow& row : CheckTable()) {
    if (row.metric && s.checks.*row.limit > 0) {
      out.push_back(JudgeThreshold(row, s.checks.*row.limit, metrics, not_measured, facts, s.world_size));
    }
  }
  return out;
}

std::vector<Check> InTableOrder(std::vector<Check> checks) {
  auto place = [](const Check& c) {
    const auto& table = CheckTable();
    const auto row = std::find_if(table.begin(), table.end(), [&](const CheckRow& r) { return c.name == r.name; });
    if (row == table.end()) throw std::logic_error("check '" + c.name + "' is not declared in harness/check_table.cc");
    return row - table.begin();
  };
  for (const auto& c : checks) place(c);  // every name declared, before sorting by them
  std::stable_sort(checks.begin(), checks.end(), [&](const Check& a, const Check& b) { return place(a) < place(b); });
  return checks;
}

}  // namespace shardbench
