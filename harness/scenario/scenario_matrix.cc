#include "harness/scenario/scenario_matrix.h"

#include <algorithm>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "engine/common/error.h"
#include "engine/common/yaml_location.h"
#include "harness/scenario/scenario_fields.h"
#include "harness/scenario/scenario_parser.h"

namespace shardbench {
namespace {

struct Axis {
  std::string key;
  std::vector<YAML::Node> values;
};

std::string Leaf(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::string ScalarText(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : YAML::Dump(n); }

std::vector<Axis> ReadAxes(const YAML::Node& matrix, const std::string& path) {
  if (!matrix.IsMap()) throw InputError(YamlLocation(path, matrix) + ": 'matrix' must map scenario keys to lists of values");
  std::vector<Axis> axes;
  for (const auto& kv : matrix) {
    const std::string key = PlainKey(path, kv.first);
    if (!FindScenarioField(key)) {
      throw InputError(YamlLocation(path, kv.first) + ": matrix axis '" + key + "' is not a scenario key (did you mean '" +
                       NearestScenarioKey(key) + "'?)");
    }
    if (key == "name") throw InputError(YamlLocation(path, kv.first) + ": 'name' cannot be a matrix axis");
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      throw InputError(YamlLocation(path, kv.second) + ": matrix axis '" + key + "' must be a non-empty list of values");
    }
    Axis axis{key, {}};
    std::vector<std::pair<std::string, std::string>> read;  // each value as the field reads it, as written
    for (const auto& v : kv.second) {
      axis.values.push_back(v);
      // Two values written differently that read alike (0.01 and 1e-2) would make two instances
      // of one configuration. A value the field refuses is named later, at its instance.
      const ScenarioField& field = *FindScenarioField(key);
      Scenario probe;
      try {
        field.set(probe, v);
      } catch (const std::exception&) {
        continue;
      }
      const std::string as_read = YAML::Dump(field.get(probe));
      for (const auto& [other, written] : read) {
        if (other == as_read) {
          throw InputError(YamlLocation(path, v) + ": matrix axis '" + key + "': '" + ScalarText(v) + "' reads as '" +
                           written + "' does (" + as_read + "): two instances of one configuration");
        }
      }
      read.push_back({as_read, ScalarText(v)});
    }
    axes.push_back(axis);
  }
  return axes;
}

// An exclude entry matches a point when every key it names has the point's value.
bool Excluded(const YAML::Node& exclude, const std::vector<Axis>& axes, const std::vector<size_t>& point) {
  for (const auto& entry : exclude) {
    bool all = true;
    for (const auto& kv : entry) {
      const std::string key = kv.first.Scalar();  // CheckExclude refused any other key
      for (size_t a = 0; a < axes.size(); ++a) {
        if (axes[a].key == key && ScalarText(axes[a].values[point[a]]) != ScalarText(kv.second)) all = false;
      }
    }
    if (all) return true;
  }
  return false;
}

void CheckExclude(const YAML::Node& exclude, const std::vector<Axis>& axes, const std::string& path) {
  if (!exclude.IsSequence()) throw InputError(YamlLocation(path, exclude) + ": 'exclude' must be a list of {axis: value} maps");
  for (const auto& entry : exclude) {
    if (!entry.IsMap() || entry.size() == 0) throw InputError(YamlLocation(path, entry) + ": each 'exclude' entry must map axes to values");
    for (const auto& kv : entry) {
      const std::string key = PlainKey(path, kv.first);
      bool known = false;
      for (const auto& a : axes) known |= a.key == key;
      if (!known) throw InputError(YamlLocation(path, kv.first) + ": exclude names '" + key + "', which is not a matrix axis");
      // A value the axis does not take excludes nothing, silently: a typo or a stale entry.
      std::string taken;
      bool on_axis = false;
      for (const auto& a : axes) {
        if (a.key != key) continue;
        for (const auto& v : a.values) {
          on_axis |= kv.second.IsScalar() && ScalarText(v) == ScalarText(kv.second);
          taken += (taken.empty() ? "" : ", ") + ScalarText(v);
        }
      }
      if (!on_axis) {
        throw InputError(YamlLocation(path, kv.second) + ": exclude " + key + ": " +
                         (kv.second.IsScalar() ? "'" + kv.second.Scalar() + "'" : std::string("a list or mapping")) +
                         " is not one of the axis's values [" + taken + "]: it would exclude nothing");
      }
    }
  }
}

// A matrix whose exclude list removed every point: say so at the list (an empty target crashed
// `show` and `run` before).
std::vector<Scenario> NotEmpty(std::vector<Scenario> out, const YAML::Node& exclude, const std::string& path) {
  if (out.empty()) {
    throw InputError(YamlLocation(path, exclude) + ": 'exclude' removes every instance of the matrix: nothing is left to run");
  }
  return out;
}

}  // namespace

std::vector<Scenario> LoadScenarioInstances(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = LoadYamlFile(path);
  if (!root.IsMap()) throw InputError(path + ": expected a mapping of scenario keys at the top level");
  YAML::Node matrix = root["matrix"], exclude = root["exclude"];
  if (!matrix && exclude) throw InputError(YamlLocation(path, exclude) + ": 'exclude' without a 'matrix'");
  // The file's own nodes throughout (a clone would lose their lines for error messages).
  std::string renamed;  // a name override renames the base; matrix coordinates are still appended
  std::vector<std::string> rest;
  for (const auto& o : overrides) {
    if (o.rfind("name=", 0) == 0) {
      renamed = o.substr(5);
    } else {
      rest.push_back(o);
    }
  }
  if (!matrix) return {ParseScenario(root, path, rest, {}, renamed)};

  std::vector<Axis> axes = ReadAxes(matrix, path);
  if (exclude) CheckExclude(exclude, axes, path);
  // Counted before a single instance is built: a matrix of millions is a typo, not a plan.
  size_t points = 1;
  for (const auto& axis : axes) points = std::min(points * axis.values.size(), kMaxMatrixInstances + 1);
  if (points > kMaxMatrixInstances) {
    throw InputError(YamlLocation(path, matrix) + ": 'matrix' spans more than " + std::to_string(kMaxMatrixInstances) +
                     " instances (before exclude), the most one scenario may: split it into several scenarios or suites");
  }
  // An override of an axis pins it to that one value: the instances it would have repeated
  // under the other values' names collapse into one.
  for (const auto& o : rest) {
    const auto eq = o.find('=');
    for (auto& axis : axes) {
      if (eq == std::string::npos || axis.key != o.substr(0, eq)) continue;
      YAML::Node value;  // read as ApplyOverride reads it: engine="flat" pins flat, not "flat" in quotes
      try {
        value = YAML::Load(o.substr(eq + 1));
      } catch (const YAML::Exception&) {
        value = YAML::Node(o.substr(eq + 1));  // ApplyOverride names the bad value
      }
      axis.values = {value.IsNull() ? YAML::Node(o.substr(eq + 1)) : value};
    }
  }
  const std::string base_name = !renamed.empty() ? renamed
                                : root["name"] && root["name"].IsScalar() ? root["name"].Scalar()
                                                                          : std::filesystem::path(path).stem().string();
  std::vector<Scenario> out;
  std::vector<size_t> point(axes.size(), 0);
  while (true) {
    if (!exclude || !Excluded(exclude, axes, point)) {
      std::string name = base_name + "[";
      AxisValues values;
      std::vector<std::pair<std::string, std::string>> coords;
      for (size_t a = 0; a < axes.size(); ++a) {
        const YAML::Node& v = axes[a].values[point[a]];
        values.emplace_back(axes[a].key, v);
        const std::string value = ScalarText(v);
        name += (a ? "," : "") + Leaf(axes[a].key) + "=" + value;
        coords.push_back({axes[a].key, value});
      }
      Scenario s = ParseScenario(root, path, rest, values, name + "]");
      s.base_name = base_name;
      s.matrix = coords;
      out.push_back(s);
    }
    size_t a = axes.size();
    while (a > 0) {
      --a;
      if (++point[a] < axes[a].values.size()) break;
      point[a] = 0;
      if (a == 0) return NotEmpty(std::move(out), exclude, path);
    }
    if (axes.empty()) return out;
  }
}

}  // namespace shardbench
