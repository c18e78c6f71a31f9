#include "harness/scenario/scenario_parser.h"

#include "harness/scenario/scenario_model.h"
#include "engine/common/path_checks.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "engine/common/error.h"
#include "engine/comm/create_communicator.h"
#include "engine/common/yaml_location.h"
#include "harness/scenario/engine_registry.h"
#include "harness/scenario/scenario_fields.h"

namespace shardbench {
namespace {

bool IsSection(const std::string& path) {
  for (const auto& f : ScenarioFields()) {
    if (f.key.rfind(path + ".", 0) == 0) return true;
  }
  return false;
}

void SetField(Scenario& s, const ScenarioField& field, const YAML::Node& value, const std::string& where) {
  try {
    field.set(s, value);
  } catch (const std::invalid_argument& e) {
    throw InputError(where + ": key '" + field.key + "': " + e.what());
  } catch (const InputError& e) {  // a setter's own check (failpoint names): still at this line
    throw InputError(where + ": key '" + field.key + "': " + e.what());
  }
}

void Walk(Scenario& s, const YAML::Node& map, const std::string& prefix, const std::string& source) {
  for (const auto& kv : map) {
    const std::string where = YamlLocation(source, kv.first);
    const std::string key = PlainKey(source, kv.first);
    if (prefix.empty() && (key == "matrix" || key == "exclude")) continue;  // harness/scenario/scenario_matrix.cc
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (const ScenarioField* field = FindScenarioField(path)) {
      SetField(s, *field, kv.second, where);
    } else if (IsSection(path)) {
      if (!kv.second.IsMap()) throw InputError(where + ": key '" + path + "': expected a mapping of " + path + ".* keys");
      Walk(s, kv.second, path, source);
    } else {
      throw InputError(where + ": unknown key '" + path + "' (did you mean '" + NearestScenarioKey(path) + "'?)");
    }
  }
}

}  // namespace

void RefuseRepeatedOverrides(const std::vector<std::string>& overrides, const std::string& where) {
  std::map<std::string, std::string> first;
  for (const auto& kv : overrides) {
    const std::string key = kv.substr(0, kv.find('='));
    const auto [it, fresh] = first.emplace(key, kv);
    if (!fresh) throw InputError(where + "overrides '" + it->second + "' and '" + kv + "' both set " + key + ": give it once");
  }
}

void ApplyOverride(Scenario& s, const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("override '" + kv + "': expected key=value (e.g. train.steps=5)");
  }
  const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  const ScenarioField* field = FindScenarioField(key);
  if (!field) throw InputError("override '" + kv + "': unknown key '" + key + "' (did you mean '" + NearestScenarioKey(key) + "'?)");
  YAML::Node node;
  try {
    node = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError("override '" + kv + "': value is not valid YAML: " + e.msg);
  }
  if (node.IsNull()) node = YAML::Node(value);
  SetField(s, *field, node, "override '" + kv + "'");
  s.overrides.push_back(kv);
}

Scenario ParseScenario(const YAML::Node& root, const std::string& source, const std::vector<std::string>& overrides,
                       const AxisValues& point, const std::string& name) {
  Scenario s;
  s.source = source;
  if (!root.IsMap()) throw InputError(source + ": expected a mapping of scenario keys at the top level");
  for (const auto& kv : root) {  // before "unknown key 'runs'": say what the file is
    if (kv.first.IsScalar() && kv.first.Scalar() == "runs") {
      throw InputError(YamlLocation(source, kv.first) + ": this file is a suite ('runs'), not a scenario: a suite's "
                       "runs name scenario files (suites do not nest); run the suite itself as the target");
    }
  }
  Walk(s, root, "", source);
  if (!root["name"] && !source.empty()) s.name = std::filesystem::path(source).stem().string();
  for (const auto& [key, value] : point) {
    SetField(s, *FindScenarioField(key), value, YamlLocation(source, value) + " (matrix)");
  }
  if (!name.empty()) s.name = name;
  for (const auto& o : overrides) ApplyOverride(s, o);
  ValidateScenario(s);
  return s;
}

namespace {

// YAML says a mapping's keys are unique; yaml-cpp keeps both and lookups see one. A second
// `engine:` is a mistake whichever one wins, so it is refused with both lines. A collection met
// again through an alias (the same position in the file) is not walked twice, so an alias bomb
// costs its size in the file, not its expansion.
void RefuseDuplicateKeys(const YAML::Node& node, const std::string& path, std::set<int>& seen, int depth) {
  if (depth > 64) throw InputError(YamlLocation(path, node) + ": nested more than 64 levels deep");
  if ((node.IsMap() || node.IsSequence()) && !seen.insert(node.Mark().pos).second) return;
  if (node.IsMap()) {
    std::map<std::string, YAML::Node> keys;
    for (const auto& kv : node) {
      if (kv.first.IsScalar()) {
        auto [it, fresh] = keys.emplace(kv.first.Scalar(), kv.first);
        if (!fresh) {
          throw InputError(YamlLocation(path, kv.first) + ": key '" + kv.first.Scalar() + "' given twice (also at line " +
                           std::to_string(it->second.Mark().line + 1) + ")");
        }
      }
      RefuseDuplicateKeys(kv.second, path, seen, depth + 1);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) RefuseDuplicateKeys(item, path, seen, depth + 1);
  }
}

// checkpoint.load_from (a directory: its field checks that, with the line) names a SHARDED
// checkpoint in the engine's own format: shardbench's
// (manifest.json) on our engines, torch.distributed.checkpoint's (.metadata) on the peers. The
// other side's is named with the command that converts it. The checkpoint's content is verified
// when it loads (engine/checkpoint/checkpoint_dir.h; the peer's dcp.load).
void ValidateLoadFrom(const Scenario& s, const std::string& src) {
  namespace fs = std::filesystem;
  const fs::path dir(s.checkpoint.load_from);
  const std::string field = src + ": checkpoint.load_from '" + s.checkpoint.load_from + "'";
  const bool peer = IsPeerEngine(s.engine);
  const std::string needed = peer ? ".metadata" : "manifest.json", other = peer ? "manifest.json" : ".metadata";
  if (!fs::exists(dir / needed)) {
    const std::string want = peer ? "a torch.distributed.checkpoint (DCP) directory" : "a shardbench SHARDED checkpoint";
    const std::string convert = fs::exists(dir / other)
                                    ? std::string("; it is ") + (peer ? "shardbench's" : "DCP's") +
                                          ": convert it with shardbench convert-checkpoint " +
                                          (peer ? "to-dcp" : "to-shardbench") + " SRC OUT"
                                    : "";
    throw InputError(field + " has no " + needed + ": engine=" + EngineName(s.engine) + " starts from " + want + convert);
  }
  if (s.checks.loss_parity) {
    throw InputError(field + ": checks.loss_parity trains the one-process reference from the scenario's own weights, "
                     "not from this checkpoint; set checks.loss_parity=false (compare engines' losses with `compare`)");
  }
}

}  // namespace

YAML::Node LoadYamlFile(const std::string& path, const std::string& what) {
  if (!IsRegularFile(path)) throw InputError(path + ": no such " + what + " file");
  YAML::Node root;
  try {
    // Every document: a second one ('---') was read as nothing, silently.
    const std::vector<YAML::Node> documents = YAML::LoadAllFromFile(path);
    if (documents.size() > 1) {
      throw InputError(YamlLocation(path, documents[1]) + ": a second YAML document: a " + what +
                       " file holds one (remove the '---' and what follows, or make it its own file)");
    }
    if (!documents.empty()) root = documents[0];
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  std::set<int> seen;
  RefuseDuplicateKeys(root, path, seen, 0);
  return root;
}

Scenario LoadScenarioFile(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseScenario(LoadYamlFile(path), path, overrides);
}

void ValidateScenario(const Scenario& s) {
  const std::string src = s.source.empty() ? "scenario '" + s.name + "'" : s.source;
  const model::LlamaConfig config = ScenarioModelConfig(s);  // InputError: an unknown name, shapes that do not fit
  SpecOf(s.engine).validate(s, src);
  model::ValidateLora(s.lora, src);
  model::ValidateLoraFits(s.lora, config, src);
  const bool fp32_only = s.mixed_precision.param_dtype == c10::ScalarType::Float &&
                         s.mixed_precision.reduce_dtype == c10::ScalarType::Float;
  if (s.engine == Engine::kReference && !fp32_only) {
    throw InputError(src + ": mixed_precision applies to the sharding engines (engine: flat or per_param); the "
                     "reference engine is the fp32 baseline");
  }
  // accelerate's init=meta (cpu_ram_efficient_loading) builds the model with tensors on every rank
  // (rank 0's read, the others' empty): its optimizer may come first, as its FSDP2 requires.
  if (s.init == Init::kMeta && s.optimizer.build == OptimizerBuild::kBeforeWrap && s.engine != Engine::kAccelerate) {
    throw InputError(src + ": init=meta builds parameters only when the engine materialises them: "
                     "optimizer.build must be after_wrap");
  }
  if ((s.sharding.forward_prefetch || s.sharding.backward_prefetch) && s.engine == Engine::kReference) {
    throw InputError(src + ": sharding.forward_prefetch/backward_prefetch prefetch a sharding unit's all-gather; "
                     "the reference engine gathers nothing (use engine=flat or per_param)");
  }
  const auto& ck = s.checkpoint;
  if ((s.checks.state_dict_roundtrip || s.checks.resume) && ck.type == CheckpointType::kNone) {
    throw InputError(src + ": checks.state_dict_roundtrip and checks.resume need a checkpoint: set checkpoint.type to "
                     "full, sharded, local or adapter");
  }
  if (ck.type == CheckpointType::kAdapter && !s.lora.enabled) {
    throw InputError(src + ": checkpoint.type=adapter exports LoRA weights, but lora.enabled is false");
  }
  if (ck.save_step > s.total_steps()) {
    throw InputError(src + ": checkpoint.save_step " + std::to_string(ck.save_step) + " is beyond the run's " +
                     std::to_string(s.total_steps()) + " steps (train.warmup_steps + train.steps)");
  }
  if (s.checks.resume) {
    if (ck.type == CheckpointType::kAdapter) {
      throw InputError(src + ": checks.resume needs optimizer state; an adapter export has none (use full, sharded or local)");
    }
    if (ck.save_step < 1 || ck.save_step >= s.total_steps()) {
      throw InputError(src + ": checks.resume needs checkpoint.save_step between 1 and " +
                       std::to_string(s.total_steps() - 1) + " (steps remain to resume)");
    }
  }
  if (s.data.source == DataSource::kTokens) {
    if (s.data.path.empty()) throw InputError(src + ": data.source=tokens needs data.path (a flat binary file of token ids)");
    if (::access(s.data.path.c_str(), R_OK) != 0) {
      throw InputError(src + ": data.path '" + s.data.path + "' cannot be read (relative paths are from the working directory)");
    }
    if (!IsRegularFile(s.data.path)) {
      throw InputError(src + ": data.path '" + s.data.path + "' is not a regular file (a directory, FIFO or device " +
                       "would never read as a fixed list of token ids)");
    }
  } else if (!s.data.path.empty()) {
    throw InputError(src + ": data.path is read only with data.source=tokens (data.source is " + DataSourceName(s.data.source) + ")");
  }
  if (!ck.load_from.empty()) ValidateLoadFrom(s, src);
  if (s.profile.kernel_trace && s.backend != Backend::kNccl) {
    throw InputError(src + ": profile.kernel_trace records GPU kernels with CUPTI: it needs backend nccl (one GPU per "
                     "rank), not " + BackendName(s.backend));
  }
  const auto backends = comm::AvailableBackends();
  if (std::find(backends.begin(), backends.end(), BackendName(s.backend)) == backends.end()) {
    throw InputError(src + ": backend '" + BackendName(s.backend) + "' is not compiled into this build");
  }
}

YAML::Node ScenarioToYaml(const Scenario& s, bool only_changed) {
  YAML::Node root;
  const Scenario defaults;
  for (const auto& f : ScenarioFields()) {
    if (only_changed && f.key != "name" && YAML::Dump(f.get(s)) == YAML::Dump(f.get(defaults))) continue;
    // Rebuild the nesting from the dotted key.
    std::string key = f.key;
    size_t dot;
    std::vector<std::string> parts;
    while ((dot = key.find('.')) != std::string::npos) {
      parts.push_back(key.substr(0, dot));
      key = key.substr(dot + 1);
    }
    if (parts.empty()) {
      root[key] = f.get(s);
    } else {
      YAML::Node section = root[parts[0]];
      for (size_t i = 1; i < parts.size(); ++i) {
        YAML::Node next = section[parts[i]];
        section.reset(next);  // rebind; plain assignment would write through
      }
      section[key] = f.get(s);
    }
  }
  return root;
}

}  // namespace shardbench
