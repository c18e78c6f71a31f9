#include "reporters/engine_pairs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <regex>

#include "reporters/format.h"
#include "reporters/peer_warnings.h"

namespace shardbench {
namespace {

const std::vector<std::pair<std::string, std::string>> kPairs = {
    {"per_param", "torch_fsdp2"}, {"flat", "torch_fsdp1"}, {"torch_fsdp1", "torch_fsdp2"}, {"flat", "per_param"}};

std::string WithoutEngine(const std::string& name) {
  std::string s = std::regex_replace(name, std::regex(R"((\[|,)engine=[^,\]]*,?)"), "$1");
  s = std::regex_replace(s, std::regex(R"(,\])"), "]");
  return std::regex_replace(s, std::regex(R"(\[\])"), "");
}

std::vector<double> Finite(const std::vector<double>& values) {  // nulls as written (non-finite values) skipped
  std::vector<double> out;
  for (double v : values) {
    if (!std::isnan(v)) out.push_back(v);
  }
  return out;
}

bool HasRepetitions(const StoredMetric& m) { return m.repetition_medians && m.repetition_medians->size() >= 3; }

std::optional<RatioFigure> Ratio(const StoredResult& a, const StoredResult& b, const std::vector<std::string>& metrics) {
  for (const auto& name : metrics) {  // the first metric both sides have
    const StoredMetric *ma = a.metric(name), *mb = b.metric(name);
    if (!ma || !mb) continue;
    // Repetition medians when both sides have enough launches to speak for launch-to-launch
    // noise, else both sides' measured steps: never one kind against the other.
    const bool repetitions = HasRepetitions(*ma) && HasRepetitions(*mb);
    const std::vector<double> sa = Finite(repetitions ? *ma->repetition_medians : ma->samples);
    const std::vector<double> sb = Finite(repetitions ? *mb->repetition_medians : mb->samples);
    if (sa.empty() || sb.empty()) continue;
    return RatioFigure{name, BootstrapMedianRatio(sb, sa), sa.size(), sb.size(), repetitions ? "repetitions" : "steps"};
  }
  return std::nullopt;
}

std::string Sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2e", v);
  return buf;
}

std::string RatioText(const std::optional<RatioFigure>& f) {
  if (!f) return "-";
  std::string s = Fixed(f->interval.ratio, 3);
  if (f->samples_a > 1 && f->samples_b > 1) s += " [" + Fixed(f->interval.low, 3) + ", " + Fixed(f->interval.high, 3) + "]";
  return s;
}

std::string LossText(const EnginePair& p) {
  if (p.judged == 0) return "-";
  return Sci(p.loss_max_rel) + (p.loss_ok() ? " ok" : " OVER") + " (tol " + Sci(p.loss_rtol) + ", " + std::to_string(p.judged) + " steps)";
}

// The exact figures shown side by side, in this order; then every collective either side ran.
const std::vector<std::string> kExactFigures = {"param_bytes", "params_unsharded_peak_bytes", "grad_bytes",
                                                "grads_unsharded_peak_bytes", "grad_blowup", "optim_state_bytes",
                                                "peak_allocated", "device_allocated_peak"};

std::vector<ExactSide> ExactSideBySide(const StoredResult& a, const StoredResult& b) {
  std::vector<std::string> names = kExactFigures;
  for (const StoredResult* r : {&a, &b}) {
    for (const auto& m : r->metrics) {
      const bool comm = m.name.rfind("comm_", 0) == 0 && m.kind == "exact";
      if (comm && std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    }
  }
  std::vector<ExactSide> out;
  for (const auto& name : names) {
    const StoredMetric *ma = a.metric(name), *mb = b.metric(name);
    ExactSide e{name, ma ? ma->unit : mb ? mb->unit : "", std::nullopt, std::nullopt,
                a.not_measured_metric(name) != nullptr, b.not_measured_metric(name) != nullptr};
    if (ma && ma->median) e.a = *ma->median;
    if (mb && mb->median) e.b = *mb->median;
    if (e.a || e.b || e.a_not_measured != e.b_not_measured) out.push_back(e);
  }
  return out;
}

std::string SideText(const std::optional<double>& v, bool not_measured, const std::string& unit) {
  if (v) return unit == "bytes" || unit == "count" ? std::to_string(static_cast<int64_t>(*v)) : Fixed(*v, 3);
  return not_measured ? "not measured" : "-";
}

// Scalars and arrays by dotted path (arrays whole: lora.targets).
void Flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (!j.is_object()) {
    out[prefix] = j.dump();
    return;
  }
  for (const auto& [key, value] : j.items()) Flatten(value, prefix.empty() ? key : prefix + "." + key, out);
}

bool NamesOrRunsTheEngine(const std::string& field) {
  for (const char* prefix : {"peer.", "accelerate.", "checks."}) {
    if (field.rfind(prefix, 0) == 0) return true;
  }
  return field == "engine" || field == "name" || field == "timeout_s";
}

void CompareConfigs(const nlohmann::json& a, const nlohmann::json& b, EnginePair& p) {
  std::map<std::string, std::string> fa, fb;
  Flatten(a.value("scenario", nlohmann::json::object()).value("config", nlohmann::json::object()), "", fa);
  Flatten(b.value("scenario", nlohmann::json::object()).value("config", nlohmann::json::object()), "", fb);
  for (const auto& [field, value] : fb) fa.emplace(field, "(none)");
  for (const auto& [field, value_a] : fa) {
    if (NamesOrRunsTheEngine(field)) continue;
    const auto in_b = fb.find(field);
    const std::string value_b = in_b == fb.end() ? "(none)" : in_b->second;
    if (value_a == value_b) {
      ++p.fields_equal;
    } else {
      p.differs.push_back(field + ": " + value_a + " vs " + value_b);
    }
  }
}

std::string LikeForLikeText(const EnginePair& p) {
  if (p.like_for_like()) return "yes (" + std::to_string(p.fields_equal) + " fields equal)";
  std::string s = "**no**: ";
  for (size_t i = 0; i < p.differs.size(); ++i) s += (i ? "; " : "") + EscapeMarkdown(p.differs[i]);
  return s;
}

}  // namespace

std::vector<EnginePair> PairEngines(const std::vector<const ResultSet*>& sets) {
  // scenario -> engine -> instance (the first found).
  std::map<std::string, std::map<std::string, const InstanceResult*>> by_scenario;
  std::map<const InstanceResult*, StoredResult> results;
  std::vector<std::string> order;
  for (const ResultSet* set : sets) {
    for (const auto& inst : set->instances) {
      if (inst.result.is_null()) continue;
      const StoredResult& result = results.emplace(&inst, ReadInstance(inst)).first->second;
      const std::string engine = result.config_fields.engine.value_or("");
      const std::string key = WithoutEngine(inst.name);
      if (!by_scenario.count(key)) order.push_back(key);
      by_scenario[key].emplace(engine, &inst);
    }
  }
  std::vector<EnginePair> out;
  for (const auto& key : order) {
    const auto& engines = by_scenario[key];
    for (const auto& [a_engine, b_engine] : kPairs) {
      if (!engines.count(a_engine) || !engines.count(b_engine)) continue;
      const InstanceResult &a = *engines.at(a_engine), &b = *engines.at(b_engine);
      const StoredResult &ra = results.at(&a), &rb = results.at(&b);
      EnginePair p{key, a_engine, b_engine, a.name, b.name};
      p.loss_rtol = ra.config_fields.loss_rtol.value_or(1e-5);
      const std::vector<double>& la = ra.loss;  // null (non-finite) reads as NaN: never "equal"
      const std::vector<double>& lb = rb.loss;
      p.judged = std::min<int64_t>({ra.config_fields.loss_parity_steps.value_or(8), static_cast<int64_t>(la.size()),
                                    static_cast<int64_t>(lb.size())});
      if (la.size() != lb.size()) p.note = "loss curves of different lengths (" + std::to_string(la.size()) + " vs " + std::to_string(lb.size()) + ")";
      for (int64_t s = 0; s < p.judged; ++s) {
        const double rel = std::abs(la[s] - lb[s]) / std::max(std::abs(lb[s]), 1e-12);
        p.loss_max_rel = std::isnan(rel) ? std::numeric_limits<double>::infinity() : std::max(p.loss_max_rel, rel);
      }
      p.tokens = Ratio(ra, rb, {"tokens_per_s"});
      p.memory = Ratio(ra, rb, {"device_reserved_peak", "host_rss_peak"});
      p.init = Ratio(ra, rb, {"init_time"});
      p.exact = ExactSideBySide(ra, rb);
      CompareConfigs(a.result, b.result, p);
      p.warnings_a = FoldPeerWarnings(ra.peer_warnings);
      p.warnings_b = FoldPeerWarnings(rb.peer_warnings);
      out.push_back(p);
    }
  }
  return out;
}

std::string EnginePairsConsole(const std::vector<EnginePair>& pairs) {
  if (pairs.empty()) return "no scenario was run by two engines\n";
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-40s %-28s %-40s %-24s %-18s %-18s\n", "scenario", "a vs b",
                "loss max rel. diff", "tokens/s a/b [95% CI]", "peak memory a/b", "init time a/b");
  out += line;
  for (const auto& p : pairs) {
    std::snprintf(line, sizeof(line), "%-40s %-28s %-40s %-24s %-18s %-18s\n", p.scenario.c_str(),
                  (p.engine_a + " vs " + p.engine_b).c_str(), LossText(p).c_str(), RatioText(p.tokens).c_str(),
                  RatioText(p.memory).c_str(), RatioText(p.init).c_str());
    out += line;
    if (!p.note.empty()) out += "    note: " + p.note + "\n";
    for (const auto& d : p.differs) out += "    not like for like: " + d + "\n";
  }
  for (const auto& p : pairs) {
    if (p.exact.empty()) continue;
    out += "\n" + p.scenario + ": " + p.engine_a + " vs " + p.engine_b + ", exact figures (the largest rank's)\n";
    for (const auto& e : p.exact) {
      std::snprintf(line, sizeof(line), "  %-32s %16s %16s  %s\n", e.metric.c_str(), SideText(e.a, e.a_not_measured, e.unit).c_str(),
                    SideText(e.b, e.b_not_measured, e.unit).c_str(), e.equal() ? "equal" : (e.a && e.b) ? "DIFFER" : "");
      out += line;
    }
    for (const auto& w : p.warnings_a) out += "  " + p.engine_a + " warned: " + w + "\n";
    for (const auto& w : p.warnings_b) out += "  " + p.engine_b + " warned: " + w + "\n";
  }
  out += "Ratios are a / b of medians; intervals: percentile bootstrap over ";
  out += pairs[0].tokens && pairs[0].tokens->samples == "repetitions" ? "repetitions (one median per launch).\n"
                                                                     : "one launch's measured steps (launch-to-launch noise not included; use --repetitions 3 or more).\n";
  return out;
}

std::string EnginePairsMarkdown(const std::vector<EnginePair>& pairs) {
  std::string out = "## Engines side by side\n\n";
  if (pairs.empty()) return out + "No scenario was run by two engines.\n";
  out += "| scenario | a | b | loss max rel. diff | tokens/s a/b | peak memory a/b | init time a/b | like for like |\n"
         "|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : pairs) {
    out += "| " + EscapeMarkdown(p.scenario) + " | " + EscapeMarkdown(p.engine_a) + " | " + EscapeMarkdown(p.engine_b) + " | " +
           LossText(p) + " | " + RatioText(p.tokens) + " | " + RatioText(p.memory) + (p.memory ? " (" + EscapeMarkdown(p.memory->metric) + ")" : "") +
           " | " + RatioText(p.init) + " | " + LikeForLikeText(p) + " |\n";
  }
  out += "\nRatios are a / b of medians with 95% percentile-bootstrap intervals (over repetitions when there are 3 or more, "
         "else over one launch's measured steps). Loss: the largest relative difference of the global loss over the first "
         "checks.loss_parity_steps steps, against checks.loss_rtol. Like for like: every resolved scenario field but the "
         "engine's own (engine, peer.*, accelerate.*), the checks and timeout_s is equal on both sides, or what differs.\n";
  for (const auto& p : pairs) {
    if (p.exact.empty() && p.warnings_a.empty() && p.warnings_b.empty()) continue;
    out += "\n<details><summary>" + EscapeMarkdown(p.scenario) + ": " + EscapeMarkdown(p.engine_a) + " vs " +
           EscapeMarkdown(p.engine_b) + ", memory and communication (exact, the largest rank's)</summary>\n\n";
    out += "| metric | " + EscapeMarkdown(p.engine_a) + " | " + EscapeMarkdown(p.engine_b) + " | |\n|---|---|---|---|\n";
    for (const auto& e : p.exact) {
      out += "| " + EscapeMarkdown(e.metric) + " | " + SideText(e.a, e.a_not_measured, e.unit) + " | " +
             SideText(e.b, e.b_not_measured, e.unit) + " | " + (e.equal() ? "equal" : (e.a && e.b) ? "**differ**" : "") + " |\n";
    }
    for (const auto& w : p.warnings_a) out += "\n> " + EscapeMarkdown(p.engine_a) + " warned: " + EscapeMarkdown(w) + "\n";
    for (const auto& w : p.warnings_b) out += "\n> " + EscapeMarkdown(p.engine_b) + " warned: " + EscapeMarkdown(w) + "\n";
    out += "\n</details>\n";
  }
  return out;
}

nlohmann::json EnginePairsJson(const std::vector<EnginePair>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  auto ratio = [](const std::optional<RatioFigure>& f) -> nlohmann::json {
    if (!f) return nullptr;
    return {{"metric", f->metric}, {"ratio", f->interval.ratio}, {"low", f->interval.low}, {"high", f->interval.high},
            {"samples", f->samples}, {"n_a", f->samples_a}, {"n_b", f->samples_b}};
  };
  auto exact = [](const std::vector<ExactSide>& figures) {
    nlohmann::json rows = nlohmann::json::array();
    auto side = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    for (const auto& e : figures) {
      rows.push_back({{"metric", e.metric}, {"unit", e.unit}, {"a", side(e.a)}, {"b", side(e.b)},
                      {"a_not_measured", e.a_not_measured}, {"b_not_measured", e.b_not_measured}});
    }
    return rows;
  };
  for (const auto& p : pairs) {
    out.push_back({{"scenario", p.scenario}, {"engine_a", p.engine_a}, {"engine_b", p.engine_b}, {"instance_a", p.instance_a},
                   {"instance_b", p.instance_b}, {"loss_max_rel", p.loss_max_rel}, {"loss_judged_steps", p.judged},
                   {"loss_rtol", p.loss_rtol}, {"loss_ok", p.loss_ok()}, {"tokens_per_s", ratio(p.tokens)},
                   {"memory", ratio(p.memory)}, {"init_time", ratio(p.init)}, {"note", p.note},
                   {"exact", exact(p.exact)}, {"warnings_a", p.warnings_a}, {"warnings_b", p.warnings_b},
                   {"like_for_like", p.like_for_like()}, {"differs", p.differs}, {"fields_equal", p.fields_equal}});
  }
  return out;
}

}  // namespace shardbench
