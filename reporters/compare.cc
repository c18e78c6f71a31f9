#include "reporters/compare.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <sstream>

#include "reporters/config_diff.h"
#include "reporters/format.h"
#include "reporters/multiple_testing.h"
#include "reporters/peer_warnings.h"
#include "reporters/power.h"
#include "reporters/sampled_verdict.h"
#include "reporters/statistics.h"

namespace shardbench {
namespace {


std::string Signed(double v) { return (v > 0 ? "+" : "") + ExactNumber(v); }

// Metrics a run omits when their value is zero (no collective of that kind, no parameter of
// that dtype): absent on one side means 0 there, a real change.
bool OmittedWhenZero(const std::string& name) { return name.rfind("comm_", 0) == 0 || name.rfind("param_bytes_", 0) == 0; }

double ExactValue(const StoredMetric* m) { return m && m->median ? *m->median : 0; }

void JudgeExact(MetricComparison& c, const StoredMetric* base, const StoredMetric* current, const MetricRule& rule) {
  c.base = ExactValue(base);
  c.current = ExactValue(current);
  c.base_samples = c.current_samples = 1;
  c.ratio = ChangeRatio(c.base, c.current);
  const double delta = c.current - c.base;
  std::string where;
  if (base && current && base->per_rank.size() == current->per_rank.size()) {
    for (size_t r = 0; r < base->per_rank.size(); ++r) {
      const double b = base->per_rank[r], k = current->per_rank[r];
      if (b != k) {
        where = "; rank " + std::to_string(r) + ": " + ExactNumber(b) + " -> " + ExactNumber(k);
        break;
      }
    }
  }
  if (delta == 0) {  // the gate reads the largest rank; a change between ranks is only reported
    c.verdict = Verdict::kNoChange;
    c.detail = where.empty() ? "exact, unchanged" : "exact: largest rank unchanged" + where;
    return;
  }
  const double relative = c.base != 0 ? std::abs(delta / c.base) : std::numeric_limits<double>::infinity();
  c.detail = "exact: " + Signed(delta) + " " + c.unit + (c.base != 0 ? " (" + Fixed(100 * delta / std::abs(c.base), 2) + "%)" : "") + where;
  // A tolerance is the figure's known jitter (instructions_per_step: callgrind's A/A spread):
  // inside it neither direction is a change.
  if (relative <= rule.tolerance) {
    c.verdict = Verdict::kNoChange;
    c.detail += ", within tolerance " + Fixed(100 * rule.tolerance, 2) + "%";
  } else if (!IsWorse(c.better, delta)) {
    c.verdict = Verdict::kImprovement;
  } else {
    c.verdict = Verdict::kRegression;
    c.detail += "; tolerance " + Fixed(100 * rule.tolerance, 2) + "%";
  }
}

// The policy's absolute holds on the current value (after the relative judgement, which they
// can only make stricter).
void ApplyHolds(MetricComparison& c, const MetricRule& rule, bool has_current) {
  if (!has_current) return;
  auto violated = [&](const char* what, double bound) {
    c.verdict = Verdict::kRegression;
    c.detail += std::string("; the policy holds it ") + what + " " + Fixed(bound, 4) + ", current " + Fixed(c.current, 4);
  };
  if (rule.at_least && c.current < *rule.at_least) violated("at least", *rule.at_least);
  if (rule.at_most && c.current > *rule.at_most) violated("at most", *rule.at_most);
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kRegression: return "regression";
    case Verdict::kImprovement: return "improvement";
    case Verdict::kNoChange: return "no change";
    case Verdict::kUnjudged: return "unjudged";
    case Verdict::kUnderpowered: return "underpowered";
  }
  return "?";
}

const std::vector<std::string>* Comparison::scenario_change(const std::string& instance) const {
  for (const auto& [name, diffs] : scenario_changes) {
    if (name == instance) return &diffs;
  }
  return nullptr;
}

int Comparison::regressions() const {
  int n = 0;
  for (const auto& m : metrics) n += m.red();
  return n;
}

int Comparison::failed_checks() const {
  int n = 0;
  for (const auto& c : checks) n += !c.passed && !c.expected_red;
  return n;
}

int Comparison::unjudged() const {
  int n = 0;
  for (const auto& m : metrics) n += m.gated && m.verdict == Verdict::kUnjudged && !m.warn_only;
  return n;
}

int Comparison::warned() const {
  int n = 0;
  for (const auto& m : metrics) n += m.verdict == Verdict::kUnjudged && (m.warn_only || !m.gated);
  return n;
}

int Comparison::underpowered() const {
  int n = 0;
  for (const auto& m : metrics) n += m.gated && m.verdict == Verdict::kUnderpowered;
  return n;
}

std::string Comparison::colour() const {
  if (red()) return "RED";
  // Nothing compared (the base could not run, an empty index, results without metrics) is no
  // evidence of anything: never green.
  if (unjudged() > 0 || metrics.empty()) return "UNJUDGED";
  if (underpowered() > 0) return "UNDERPOWERED";
  return "GREEN";
}

std::string TodayUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

namespace {

// What the second phase needs beside each of out.metrics.
struct PendingRule {
  MetricRule rule;
  bool has_current = false;
};

// What says the two sides did not run the same thing: the scenario and library versions.
void NoteDifferences(const std::string& instance, const StoredResult& br, const StoredResult& cr, Comparison& out) {
  std::vector<std::string> diffs;
  for (const auto& c : DiffConfig(br.config, cr.config)) diffs.push_back(c.text());
  if (!diffs.empty()) out.scenario_changes.emplace_back(instance, diffs);
  // A version matrix: the libraries each side ran (the peer's torch, transformers, peft, or
  // our own build's torch), so a regression reads as one between versions.
  std::vector<std::string> versions;
  for (const auto& c : DiffConfig(br.peer, cr.peer, "peer")) versions.push_back(c.text());
  if (br.torch.value_or("") != cr.torch.value_or("")) {
    versions.push_back("torch \"" + br.torch.value_or("") + "\" -> \"" + cr.torch.value_or("") + "\"");
  }
  for (const auto& v : versions) {
    if (v.find("peer.python") == std::string::npos) out.notes.push_back("instance '" + instance + "': versions differ: " + v);
  }
}

// Phase one for one instance on both sides: every metric either side has, exact ones judged,
// sampled ones measured (their verdict waits for the family's correction).
void MeasureInstance(const std::string& instance, const StoredResult& br, const StoredResult& cr, const GatePolicy& policy,
                     Comparison& out, std::vector<PendingRule>& pending) {
  std::vector<std::string> names;
  for (const auto& m : br.metrics) names.push_back(m.name);
  for (const auto& m : cr.metrics) {
    if (!br.metric(m.name)) names.push_back(m.name);
  }
  for (const auto& name : names) {
    const StoredMetric* bm = br.metric(name);
    const StoredMetric* cm = cr.metric(name);
    const StoredMetric& any = bm ? *bm : *cm;
    // An exact metric omitted when zero is 0 on the side that lacks it; a sampled one (a time)
    // has no samples there to test: it is missing or new, as any other.
    if ((!bm || !cm) && (!OmittedWhenZero(name) || any.kind != "exact")) {
      // A gated metric the current run did not report, with the scenario unchanged, is a run
      // problem (a crash mid-write, a stripped file), never a pass by omission.
      if (bm && policy.rule_for(name, bm->kind).gate && br.config == cr.config) {
        out.failures.push_back("instance '" + instance + "': run problem: gated metric " + name +
                               " is missing from the current results (the scenario is unchanged)");
      } else {
        out.notes.push_back("instance '" + instance + "': metric " + name + (bm ? " missing from the current" : " new in the current") + " results");
      }
      continue;
    }
    MetricComparison mc;
    mc.instance = instance;
    mc.metric = name;
    mc.unit = any.unit;
    mc.kind = any.kind;
    const MetricRule rule = policy.rule_for(name, mc.kind);
    mc.better = rule.better.value_or(any.better);
    mc.gated = rule.gate;
    if (mc.kind == "exact") {
      JudgeExact(mc, bm, cm, rule);
    } else {
      const std::vector<double> base_samples = SamplesFor(*bm, rule), current_samples = SamplesFor(*cm, rule);
      MeasureSampled(mc, base_samples, current_samples, rule,
                     UnpairableLaunches(name, rule, br, base_samples.size(), cr, current_samples.size()));
      // (Counts of values, not places: a current side of nulls has no samples, paired or not.)
      if (mc.gated && mc.base_samples > 0 && mc.current_samples == 0) {
        out.failures.push_back("instance '" + instance + "': run problem: gated metric " + name +
                               " has no samples in the current results (the base has " +
                               std::to_string(mc.base_samples) + ")");
      }
    }
    out.metrics.push_back(mc);
    pending.push_back({rule, cm != nullptr && (mc.kind == "exact" || mc.current_samples > 0)});
  }
}

// Phase one over the base's instances; an instance missing or unable to run on one side is a
// failure or a note, not a comparison.
void MeasureAll(const ResultSet& base, const ResultSet& current, const GatePolicy& policy, Comparison& out,
                std::vector<PendingRule>& pending) {
  for (const auto& b : base.instances) {
    const InstanceResult* c = current.find(b.name);
    if (!c) {
      out.failures.push_back("instance '" + b.name + "' is in the base but missing from the current results");
      continue;
    }
    if (c->result.is_null()) {
      const std::string what = "instance '" + b.name + "' could not run: " + c->message;
      if (c->expect == "error" && c->as_expected) {
        out.notes.push_back(what + " (expected)");
      } else {
        out.failures.push_back(what);
      }
      continue;
    }
    if (b.result.is_null()) {
      out.notes.push_back("instance '" + b.name + "' has no base result (it could not run there): nothing to compare");
      continue;
    }
    const StoredResult br = ReadInstance(b), cr = ReadInstance(*c);
    NoteDifferences(b.name, br, cr, out);
    MeasureInstance(b.name, br, cr, policy, out, pending);
  }
}

// Phase two: every gated sampled metric the test could judge is one family, corrected together.
void DecideFamily(const GatePolicy& policy, const std::vector<PendingRule>& pending, Comparison& out) {
  out.correction = policy.correction;
  std::vector<size_t> family;
  std::vector<double> raw;
  for (size_t i = 0; i < out.metrics.size(); ++i) {
    if (out.metrics[i].kind != "exact" && out.metrics[i].gated && out.metrics[i].p_value) {
      family.push_back(i);
      raw.push_back(*out.metrics[i].p_value);
    }
  }
  out.family_size = family.size();
  const std::vector<double> adjusted = AdjustPValues(raw, policy.correction);
  for (size_t f = 0; f < family.size(); ++f) {
    MetricComparison& mc = out.metrics[family[f]];
    const MetricRule& rule = pending[family[f]].rule;
    DecideSampled(mc, rule, adjusted[f], LoneEffectAlpha(TestLevel(rule), family.size(), policy.correction));
  }
}

// Ungated sampled metrics judged alone; then the policy's holds and suppressions.
void ApplyPolicy(const GatePolicy& policy, const std::vector<PendingRule>& pending, const std::string& today,
                 Comparison& out) {
  std::map<std::string, bool> expired_noted;
  for (size_t i = 0; i < out.metrics.size(); ++i) {
    MetricComparison& mc = out.metrics[i];
    const MetricRule& rule = pending[i].rule;
    if (mc.kind != "exact" && !mc.gated && mc.p_value) DecideSampled(mc, rule, *mc.p_value, TestLevel(rule));
    ApplyHolds(mc, rule, pending[i].has_current);
    const Suppression* expired = nullptr;
    if (const Suppression* s = policy.suppression_for(mc.instance, mc.metric, today, &expired)) {
      if (mc.verdict == Verdict::kRegression) mc.suppressed = s->reason + " (until " + s->expires + ")";
    } else if (expired && mc.verdict == Verdict::kRegression && !expired_noted[expired->metric + expired->instance]) {
      expired_noted[expired->metric + expired->instance] = true;
      out.notes.push_back("suppression of " + expired->metric + " on " + expired->instance + " expired on " + expired->expires +
                          " (" + expired->reason + "): not applied");
    }
  }
}

// The current side's own facts: new instances, ones that could not run, and every check.
void CollectCurrentChecks(const ResultSet& base, const ResultSet& current, Comparison& out) {
  for (const auto& c : current.instances) {
    if (!base.find(c.name)) out.notes.push_back("instance '" + c.name + "' is new (no base to compare with)");
    if (c.result.is_null()) {
      if (!base.find(c.name) && !(c.expect == "error" && c.as_expected)) {
        out.failures.push_back("instance '" + c.name + "' could not run: " + c.message);
      }
      continue;
    }
    const StoredResult result = ReadInstance(c);
    for (const auto& check : result.checks) {
      out.checks.push_back({c.name, check.name, check.detail, check.passed, c.expect == "red" && c.as_expected});
    }
    if (!result.peer_warnings.empty()) out.peer_warnings.push_back({c.name, FoldPeerWarnings(result.peer_warnings)});
  }
}

}  // namespace

Comparison Compare(const ResultSet& base, const ResultSet& current, const GatePolicy& policy, const std::string& today) {
  const auto started = std::chrono::steady_clock::now();
  Comparison out;
  out.base_source = base.source;
  out.current_source = current.source;
  out.policy_source = policy.source;
  out.today = today;
  std::vector<PendingRule> pending;
  MeasureAll(base, current, policy, out, pending);
  DecideFamily(policy, pending, out);
  ApplyPolicy(policy, pending, today, out);
  CollectCurrentChecks(base, current, out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace shardbench
