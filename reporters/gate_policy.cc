#include "reporters/gate_policy.h"

#include <fnmatch.h>

#include <regex>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "engine/common/error.h"
#include "engine/common/yaml_location.h"

namespace shardbench {
namespace {

template <typename T>
T Read(const YAML::Node& n, const std::string& where, const std::string& expected) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(where + ": expected " + expected + (n.IsScalar() ? ", got '" + n.Scalar() + "'" : ""));
  }
}

double ReadFraction(const YAML::Node& n, const std::string& where, double lo, double hi) {
  const double v = Read<double>(n, where, "a number");
  if (!(v >= lo && v <= hi)) {
    throw InputError(where + ": expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + n.Scalar());
  }
  return v;
}

std::string ReadChoice(const YAML::Node& n, const std::string& where, const std::vector<std::string>& choices) {
  const auto v = Read<std::string>(n, where, "a string");
  for (const auto& c : choices) {
    if (v == c) return v;
  }
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw InputError(where + ": expected one of " + list + ", got '" + v + "'");
}

// Applies the fields present in `node` to `rule`; `field` is the rule's place in the file
// ("defaults.sampled", "metrics.tokens_per_s"), errors say "FILE:LINE: field.key: ...".
void ApplyRule(const YAML::Node& node, const std::string& path, const std::string& field, MetricRule& rule) {
  if (!node.IsMap()) throw InputError(YamlLocation(path, node) + ": " + field + ": expected a mapping of rule fields");
  for (const auto& kv : node) {
    const auto key = PlainKey(path, kv.first);
    const std::string at = YamlLocation(path, kv.first) + ": " + field + "." + key;
    const YAML::Node& v = kv.second;
    if (key == "test") {
      rule.test = ReadChoice(v, at, {"mann_whitney", "bootstrap", "signed_rank"});
    } else if (key == "alpha") {
      rule.alpha = ReadFraction(v, at, 0, 1);
    } else if (key == "confidence") {
      rule.confidence = ReadFraction(v, at, 0.5, 0.999);
    } else if (key == "min_effect") {
      rule.min_effect = ReadFraction(v, at, 0, 10);
    } else if (key == "min_samples") {
      const int n = Read<int>(v, at, "an integer >= 2");
      if (n < 2) throw InputError(at + ": expected an integer >= 2, got " + v.Scalar());
      rule.min_samples = n;
    } else if (key == "samples") {
      rule.samples = ReadChoice(v, at, {"repetitions", "steps"});
    } else if (key == "insufficient_data") {
      rule.insufficient_data = ReadChoice(v, at, {"unjudged", "warn"});
    } else if (key == "max_mde") {
      rule.max_mde = CheckRelativeChange(Read<double>(v, at, "a relative change > 0 (0.05 = 5%)"), at);
    } else if (key == "tolerance") {
      rule.tolerance = ReadFraction(v, at, 0, 10);
    } else if (key == "gate") {
      rule.gate = Read<bool>(v, at, "true or false");
    } else if (key == "at_least" || key == "at_most") {
      (key == "at_least" ? rule.at_least : rule.at_most) = Read<double>(v, at, "a number");
    } else if (key == "better") {
      rule.better = ReadChoice(v, at, {"lower", "higher"});
    } else {
      throw InputError(at + ": unknown rule field (known: test, alpha, confidence, min_effect, min_samples, samples, "
                       "insufficient_data, max_mde, tolerance, gate, better, at_least, at_most)");
    }
  }
  if (rule.test == "signed_rank" && rule.samples == "steps") {
    throw InputError(YamlLocation(path, node) + ": " + field +
                     ": test signed_rank pairs launches round by round; samples: steps has no rounds to pair");
  }
}

}  // namespace

bool IsCalendarDate(const std::string& s) {
  if (!std::regex_match(s, std::regex(R"(\d{4}-\d{2}-\d{2})"))) return false;
  const int year = std::stoi(s.substr(0, 4)), month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= days[month - 1] + (month == 2 && leap ? 1 : 0);
}

bool GlobMatch(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

GatePolicy DefaultGatePolicy() { return GatePolicy{}; }

double CheckRelativeChange(double value, const std::string& where) {
  if (!(value > 0 && value <= 10)) {
    std::ostringstream shown;
    shown << value;
    throw InputError(where + ": expected a relative change in (0, 10] (0.05 = 5%), got " + shown.str());
  }
  return value;
}

MetricRule GatePolicy::rule_for(const std::string& metric, const std::string& kind) const {
  MetricRule rule = kind == "exact" ? exact_defaults : sampled_defaults;
  for (const auto& [glob, text] : metric_rules) {
    if (GlobMatch(glob, metric)) ApplyRule(YAML::Load(text), source, "metrics." + glob, rule);
  }
  if (paired && kind == "sampled" && rule.test == "mann_whitney" && rule.samples == "repetitions") rule.test = "signed_rank";
  return rule;
}

const Suppression* GatePolicy::suppression_for(const std::string& instance, const std::string& metric,
                                               const std::string& today, const Suppression** expired) const {
  for (const auto& s : suppressions) {
    if (!GlobMatch(s.metric, metric) || !GlobMatch(s.instance, instance)) continue;
    if (today <= s.expires) return &s;  // ISO dates compare as strings
    if (expired) *expired = &s;
  }
  return nullptr;
}

GatePolicy LoadGatePolicy(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(path + ": no such policy file");
  } catch (const YAML::ParserException& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": not valid YAML: " + e.what());
  }
  GatePolicy p;
  p.source = path;
  if (root.IsNull()) return p;
  if (!root.IsMap()) throw InputError(path + ": expected a mapping with correction, insufficient_data, defaults, metrics, suppressions");
  // The top-level insufficient_data is the sampled default; defaults.sampled may still set its own.
  if (root["insufficient_data"]) {
    p.sampled_defaults.insufficient_data =
        ReadChoice(root["insufficient_data"], YamlLocation(path, root["insufficient_data"]) + ": insufficient_data", {"unjudged", "warn"});
  }
  for (const auto& kv : root) {
    const auto key = PlainKey(path, kv.first);
    const std::string at = YamlLocation(path, kv.first) + ": " + key;
    const YAML::Node& v = kv.second;
    if (key == "insufficient_data") {
      continue;  // read above
    } else if (key == "correction") {
      p.correction = ReadChoice(v, at, {"bh", "bonferroni", "none"});
    } else if (key == "defaults") {
      if (!v.IsMap()) throw InputError(at + ": expected a mapping with sampled and/or exact");
      for (const auto& d : v) {
        const auto kind = PlainKey(path, d.first);
        if (kind != "sampled" && kind != "exact") {
          throw InputError(YamlLocation(path, d.first) + ": defaults." + kind + ": expected sampled or exact");
        }
        ApplyRule(d.second, path, "defaults." + kind, kind == "exact" ? p.exact_defaults : p.sampled_defaults);
      }
    } else if (key == "metrics") {
      if (!v.IsMap()) throw InputError(at + ": expected a mapping of metric name (or glob) to rule");
      for (const auto& m : v) {
        const auto glob = PlainKey(path, m.first);
        MetricRule probe;
        ApplyRule(m.second, path, "metrics." + glob, probe);  // validate now, not at first use
        YAML::Emitter e;
        e << YAML::Flow << m.second;
        p.metric_rules.push_back({glob, e.c_str()});
      }
    } else if (key == "suppressions") {
      if (!v.IsSequence()) throw InputError(at + ": expected a list");
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string item = "suppressions[" + std::to_string(i) + "]";
        if (!v[i].IsMap()) throw InputError(YamlLocation(path, v[i]) + ": " + item + ": expected a mapping with metric, reason, expires");
        Suppression s;
        for (const auto& f : v[i]) {
          const auto field = PlainKey(path, f.first);
          const std::string fat = YamlLocation(path, f.first) + ": " + item + "." + field;
          const auto value = Read<std::string>(f.second, fat, "a string");
          if (field == "metric") {
            s.metric = value;
          } else if (field == "instance") {
            s.instance = value;
          } else if (field == "reason") {
            s.reason = value;
          } else if (field == "expires") {
            s.expires = value;
          } else {
            throw InputError(fat + ": unknown field (known: metric, instance, reason, expires)");
          }
        }
        const std::string where = YamlLocation(path, v[i]) + ": " + item;
        if (s.reason.empty()) throw InputError(where + ".reason: a suppression needs a reason");
        if (!IsCalendarDate(s.expires)) throw InputError(where + ".expires: expected a date YYYY-MM-DD, got '" + s.expires + "'");
        p.suppressions.push_back(s);
      }
    } else {
      throw InputError(at + ": unknown section (known: correction, insufficient_data, defaults, metrics, suppressions)");
    }
  }
  return p;
}

}  // namespace shardbench
