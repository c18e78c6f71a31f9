#include "harness/scenario/yaml_to_json.h"

#include <stdexcept>
#include <string>

namespace shardbench {

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : node) j[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& item : node) j.push_back(YamlToJson(item));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = node.Scalar();
      if (s == "true" || s == "false") return s == "true";
      try {
        size_t used = 0;
        long long i = std::stoll(s, &used);
        if (used == s.size()) return i;
        double d = std::stod(s, &used);
        if (used == s.size()) return d;
      } catch (const std::exception&) {
      }
      return s;
    }
    default:
      return nullptr;
  }
}

}  // namespace shardbench
