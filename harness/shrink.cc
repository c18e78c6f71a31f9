#include "harness/shrink.h"

#include <map>

#include "engine/common/error.h"
#include "harness/scenario/scenario_model.h"

namespace shardbench {
namespace {

using Overrides = std::map<std::string, std::string>;  // key -> value (ordered: deterministic)

std::vector<std::string> AsList(const Overrides& o) {
  std::vector<std::string> out;
  for (const auto& [k, v] : o) out.push_back(k + "=" + v);
  return out;
}

// Smaller settings of one dimension, smallest first (the first that holds is kept).
std::vector<Overrides> Candidates(const Scenario& s, const std::string& dim) {
  std::vector<Overrides> out;
  const model::LlamaConfig c = ScenarioModelConfig(s);
  auto smaller_ints = [&](const std::string& key, int64_t current, int64_t lowest) {
    for (int64_t v = lowest; v < current; v = v < 2 ? v + 1 : v * 2) out.push_back({{key, std::to_string(v)}});
  };
  if (dim == "world_size") smaller_ints("world_size", s.world_size, 1);
  if (dim == "layers") smaller_ints("model_shape.num_hidden_layers", c.num_hidden_layers, 1);
  if (dim == "hidden") {
    // Halve hidden and MLP width together, keeping the heads, while head_dim stays even.
    std::vector<Overrides> halvings;
    for (int64_t h = c.hidden_size / 2, m = c.intermediate_size / 2;
         h >= c.num_attention_heads * 2 && (h / c.num_attention_heads) % 2 == 0 && h % c.num_attention_heads == 0 && m >= 1;
         h /= 2, m /= 2) {
      halvings.push_back({{"model_shape.hidden_size", std::to_string(h)}, {"model_shape.intermediate_size", std::to_string(m)}});
      // A narrower model takes a LoRA rank no larger than its projections (ValidateLoraFits).
      model::LlamaConfig narrower = c;
      narrower.hidden_size = h, narrower.intermediate_size = m;
      const int64_t most = model::MaxLoraRank(narrower, s.lora);
      if (s.lora.enabled && s.lora.r > most) halvings.back()["lora.r"] = std::to_string(most);
    }
    out.assign(halvings.rbegin(), halvings.rend());  // smallest first
  }
  if (dim == "seq_len") smaller_ints("train.seq_len", s.train.seq_len, 2);
  if (dim == "batch") smaller_ints("train.batch_size", s.train.batch_size, 1);
  return out;
}

}  // namespace

ShrinkResult Shrink(const std::function<Scenario(const std::vector<std::string>&)>& resolve,
                    const std::function<std::optional<double>(const std::vector<std::string>&)>& evaluate, double at_least,
                    int max_runs) {
  ShrinkResult result;
  Overrides kept;
  const std::optional<double> start = evaluate({});
  result.attempts.push_back({{}, start, start && *start >= at_least});
  if (!start || *start < at_least) {
    throw InputError("shrink: the scenario as given does not hold the property (metric " +
                     (start ? std::to_string(*start) : std::string("unavailable: the run failed")) + ", asked at least " +
                     std::to_string(at_least) + ")");
  }
  result.value = *start;
  int runs = 1;
  for (bool changed = true; changed && runs < max_runs;) {
    changed = false;
    for (const std::string dim : {"world_size", "layers", "hidden", "seq_len", "batch"}) {
      for (const Overrides& candidate : Candidates(resolve(AsList(kept)), dim)) {
        if (runs >= max_runs) break;
        Overrides trial = kept;
        for (const auto& [k, v] : candidate) trial[k] = v;
        const std::optional<double> value = evaluate(AsList(trial));
        ++runs;
        const bool holds = value && *value >= at_least;
        result.attempts.push_back({AsList(trial), value, holds});
        if (holds) {
          kept = trial;
          result.value = *value;
          changed = true;
          break;  // the smallest that holds; the next dimension
        }
      }
    }
  }
  result.overrides = AsList(kept);
  return result;
}

}  // namespace shardbench
