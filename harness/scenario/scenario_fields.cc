#include "harness/scenario/scenario_fields.h"

#include <algorithm>
#include <filesystem>
#include <charconv>
#include <limits>
#include <stdexcept>

#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/common/path_checks.h"
#include "engine/model/llama_config.h"
#include "engine/shard/mixed_precision.h"
#include "harness/scenario/engine_registry.h"
#include "harness/scenario/peer_env_spec.h"

namespace shardbench {
namespace {

std::vector<Engine> RegisteredEngines() {
  std::vector<Engine> engines;
  for (const auto& spec : EngineRegistry()) engines.push_back(spec.engine);
  return engines;
}

// Readers turn a YAML node into a typed value or say what was wrong.
template <typename T>
T ReadScalar(const YAML::Node& n, const std::string& expected) {
  if (!n.IsScalar()) throw std::invalid_argument("expected " + expected);
  // yaml-cpp reads `!!str 2` and `!foo 2` by their text: a tag that says otherwise is ignored.
  if (n.Tag() != "?" && n.Tag() != "!" && !n.Tag().empty()) {
    throw std::invalid_argument("expected " + expected + ", got '" + n.Scalar() + "' tagged '" + n.Tag() +
                                "' (tags are not read: write the plain value)");
  }
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw std::invalid_argument("expected " + expected + ", got '" + n.Scalar() + "'");
  }
}

int64_t ReadInt(const YAML::Node& n, int64_t min, int64_t max, const std::string& expected) {
  auto v = ReadScalar<int64_t>(n, expected);
  if (v < min || v > max) throw std::invalid_argument("expected " + expected + ", got " + std::to_string(v));
  return v;
}

// Finite numbers only: no field means anything by infinity or NaN.
double ReadDouble(const YAML::Node& n, double min_exclusive, double max, const std::string& expected) {
  auto v = ReadScalar<double>(n, expected);
  if (!(v > min_exclusive) || !(v <= max)) throw std::invalid_argument("expected " + expected + ", got " + n.Scalar());
  return v;
}

std::string ReadChoice(const YAML::Node& n, const std::vector<std::string>& choices) {
  std::string expected = "one of";
  for (size_t i = 0; i < choices.size(); ++i) expected += (i ? ", " : " ") + choices[i];
  auto v = ReadScalar<std::string>(n, expected);
  if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
    throw std::invalid_argument("expected " + expected + ", got '" + v + "'");
  }
  return v;
}

std::vector<std::string> ReadStringList(const YAML::Node& n, const std::string& expected) {
  if (!n.IsSequence()) throw std::invalid_argument("expected " + expected);
  std::vector<std::string> out;
  for (const auto& item : n) out.push_back(ReadScalar<std::string>(item, expected));
  return out;
}

template <typename T>
YAML::Node Node(const T& v) {
  return YAML::Node(v);
}

// The shortest text that reads back as the same double (yaml-cpp writes 17 digits: `show` printed
// loss_rtol 1e-5 as 1.0000000000000001e-05). An exponent keeps a '.' in its mantissa: PyYAML
// (the peers read scenario.yaml) takes "1e-05" for a string.
template <>
YAML::Node Node(const double& v) {
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof(text), v);
  std::string out(text, error == std::errc() ? end : text);
  const size_t e = out.find_first_of("eE");
  if (e != std::string::npos && out.find('.') == std::string::npos) out.insert(e, ".0");
  return YAML::Node(out);
}

// Field constructors: key, what is expected, and a reference accessor.
template <typename Access>
ScenarioField IntField(std::string key, int64_t min, Access access,
                       int64_t max = std::numeric_limits<int32_t>::max()) {
  // Counts and sizes beyond 2^31 mean a typo, not a scenario (and would overflow the products
  // of shapes); a field that needs more says so.
  using T = std::decay_t<decltype(access(std::declval<Scenario&>()))>;
  max = std::min<int64_t>(max, static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<T>::max(), INT64_MAX)));
  std::string expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  return {key, expected,
          [=](Scenario& s, const YAML::Node& n) { access(s) = static_cast<T>(ReadInt(n, min, max, expected)); },
          [=](const Scenario& s) { return Node(access(const_cast<Scenario&>(s))); }};
}

template <typename Access>
ScenarioField DoubleField(std::string key, double min_exclusive, Access access,
                          double max = std::numeric_limits<double>::max()) {
  std::string expected = "a finite number > " + YAML::Node(min_exclusive).Scalar() +
                         (max < std::numeric_limits<double>::max() ? " and <= " + YAML::Node(max).Scalar() : "");
  return {key, expected, [=](Scenario& s, const YAML::Node& n) { access(s) = ReadDouble(n, min_exclusive, max, expected); },
          [=](const Scenario& s) { return Node(access(const_cast<Scenario&>(s))); }};
}

template <typename Access>
ScenarioField BoolField(std::string key, Access access) {
  return {key, "true or false", [=](Scenario& s, const YAML::Node& n) { access(s) = ReadScalar<bool>(n, "true or false"); },
          [=](const Scenario& s) { return Node(access(const_cast<Scenario&>(s))); }};
}

template <typename Access>
ScenarioField StringField(std::string key, Access access) {
  return {key, "a string", [=](Scenario& s, const YAML::Node& n) { access(s) = ReadScalar<std::string>(n, "a string"); },
          [=](const Scenario& s) { return Node(access(const_cast<Scenario&>(s))); }};
}

template <typename Access>
ScenarioField ChoiceField(std::string key, std::vector<std::string> choices, Access access) {
  std::string expected = "one of";
  for (size_t i = 0; i < choices.size(); ++i) expected += (i ? ", " : " ") + choices[i];
  return {key, expected, [=](Scenario& s, const YAML::Node& n) { access(s) = ReadChoice(n, choices); },
          [=](const Scenario& s) { return Node(access(const_cast<Scenario&>(s))); }};
}

// A choice parsed into its type once, here, and written back by the same names: `values` in
// the order the error message lists them, `name` giving each one's spelling in a scenario file.
template <typename T, typename NameOf, typename Access>
ScenarioField TypedChoiceField(std::string key, std::vector<T> values, NameOf name, Access access) {
  std::vector<std::string> names;
  for (const T& v : values) names.push_back(name(v));
  std::string expected = "one of";
  for (size_t i = 0; i < names.size(); ++i) expected += (i ? ", " : " ") + names[i];
  return {key, expected,
          [=](Scenario& s, const YAML::Node& n) {
            const std::string chosen = ReadChoice(n, names);
            access(s) = values[std::find(names.begin(), names.end(), chosen) - names.begin()];
          },
          [=](const Scenario& s) { return Node(std::string(name(access(const_cast<Scenario&>(s))))); }};
}

const std::vector<c10::ScalarType> kComputeDtypes = {c10::ScalarType::Float, c10::ScalarType::BFloat16,
                                                     c10::ScalarType::Half};

std::vector<ScenarioField> BuildFields() {
  return {
      StringField("name", [](Scenario& s) -> std::string& { return s.name; }),
      {"model", "a named config or a Hugging Face checkpoint directory",
       [](Scenario& s, const YAML::Node& n) {
         s.model = ReadScalar<std::string>(n, "a named config or a Hugging Face checkpoint directory");
         // Named here, at its line: a directory is read (and checked) when the model is built.
         if (!IsDirectory(s.model)) model::NamedLlamaConfig(s.model);
       },
       [](const Scenario& s) { return Node(s.model); }},
      IntField("model_shape.num_hidden_layers", 0, [](Scenario& s) -> int64_t& { return s.model_shape.num_hidden_layers; }),
      IntField("model_shape.hidden_size", 0, [](Scenario& s) -> int64_t& { return s.model_shape.hidden_size; }),
      IntField("model_shape.intermediate_size", 0, [](Scenario& s) -> int64_t& { return s.model_shape.intermediate_size; }),
      IntField("model_shape.num_attention_heads", 0, [](Scenario& s) -> int64_t& { return s.model_shape.num_attention_heads; }),
      IntField("model_shape.num_key_value_heads", 0, [](Scenario& s) -> int64_t& { return s.model_shape.num_key_value_heads; }),
      IntField("model_shape.vocab_size", 0, [](Scenario& s) -> int64_t& { return s.model_shape.vocab_size; }),
      BoolField("lora.enabled", [](Scenario& s) -> bool& { return s.lora.enabled; }),
      IntField("lora.r", 1, [](Scenario& s) -> int64_t& { return s.lora.r; }),
      DoubleField("lora.alpha", 0.0, [](Scenario& s) -> double& { return s.lora.alpha; }),
      {"lora.targets", "a list of projection names",
       [](Scenario& s, const YAML::Node& n) { s.lora.targets = ReadStringList(n, "a list of projection names"); },
       [](const Scenario& s) { return Node(s.lora.targets); }},
      TypedChoiceField("engine", RegisteredEngines(), EngineName, [](Scenario& s) -> Engine& { return s.engine; }),
      BoolField("sharding.use_orig_params", [](Scenario& s) -> bool& { return s.sharding.use_orig_params; }),
      TypedChoiceField("sharding.wrap_policy",
                       std::vector<shard::WrapPolicyKind>{shard::WrapPolicyKind::kTransformerBlock, shard::WrapPolicyKind::kLoraSeparate,
                        shard::WrapPolicyKind::kPeft, shard::WrapPolicyKind::kSize, shard::WrapPolicyKind::kNone},
                       shard::WrapPolicyKindName, [](Scenario& s) -> shard::WrapPolicyKind& { return s.sharding.wrap_policy; }),
      IntField("sharding.min_params", 1, [](Scenario& s) -> int64_t& { return s.sharding.min_params; }),
      BoolField("sharding.forward_prefetch", [](Scenario& s) -> bool& { return s.sharding.forward_prefetch; }),
      BoolField("sharding.backward_prefetch", [](Scenario& s) -> bool& { return s.sharding.backward_prefetch; }),
      BoolField("sharding.reshard_after_forward", [](Scenario& s) -> bool& { return s.sharding.reshard_after_forward; }),
      TypedChoiceField("mixed_precision.param_dtype", kComputeDtypes, shard::DtypeName,
                       [](Scenario& s) -> c10::ScalarType& { return s.mixed_precision.param_dtype; }),
      TypedChoiceField("mixed_precision.reduce_dtype", kComputeDtypes, shard::DtypeName,
                       [](Scenario& s) -> c10::ScalarType& { return s.mixed_precision.reduce_dtype; }),
      BoolField("mixed_precision.allow_tf32", [](Scenario& s) -> bool& { return s.mixed_precision.allow_tf32; }),
      TypedChoiceField("model_dtype",
                       std::vector<std::optional<c10::ScalarType>>{std::nullopt, c10::ScalarType::Float,
                                                                   c10::ScalarType::BFloat16, c10::ScalarType::Half},
                       ModelDtypeName, [](Scenario& s) -> std::optional<c10::ScalarType>& { return s.model_dtype; }),
      TypedChoiceField("upcast", std::vector<Upcast>{Upcast::kTrainable, Upcast::kAll}, UpcastName,
                       [](Scenario& s) -> Upcast& { return s.upcast; }),
      TypedChoiceField("init", std::vector<Init>{Init::kEager, Init::kMeta}, InitName, [](Scenario& s) -> Init& { return s.init; }),
      BoolField("activation_checkpointing", [](Scenario& s) -> bool& { return s.activation_checkpointing; }),
      TypedChoiceField("optimizer.impl", std::vector<optim::AdamWImpl>{optim::AdamWImpl::kForLoop, optim::AdamWImpl::kForeach, optim::AdamWImpl::kFused},
                       optim::AdamWImplName, [](Scenario& s) -> optim::AdamWImpl& { return s.optimizer.impl; }),
      TypedChoiceField("optimizer.build", std::vector<OptimizerBuild>{OptimizerBuild::kAfterWrap, OptimizerBuild::kBeforeWrap},
                       OptimizerBuildName, [](Scenario& s) -> OptimizerBuild& { return s.optimizer.build; }),
      IntField("train.batch_size", 1, [](Scenario& s) -> int64_t& { return s.train.batch_size; }),
      IntField("train.seq_len", 1, [](Scenario& s) -> int64_t& { return s.train.seq_len; }),
      IntField("train.grad_accumulation", 1, [](Scenario& s) -> int64_t& { return s.train.grad_accumulation; }),
      IntField("train.steps", 1, [](Scenario& s) -> int64_t& { return s.train.steps; }),
      {"train.warmup_steps", "an integer >= 0 or auto",
       [](Scenario& s, const YAML::Node& n) {
         s.train.warmup_auto = n.IsScalar() && n.Scalar() == "auto";
         s.train.warmup_steps = s.train.warmup_auto ? kAutoWarmupSteps : ReadInt(n, 0, std::numeric_limits<int32_t>::max(), "an integer >= 0 or auto");
       },
       [](const Scenario& s) { return s.train.warmup_auto ? Node(std::string("auto")) : Node(s.train.warmup_steps); }},
      DoubleField("train.lr", 0.0, [](Scenario& s) -> double& { return s.train.lr; }),
      DoubleField("train.weight_decay", -1e-300, [](Scenario& s) -> double& { return s.train.weight_decay; }),
      DoubleField("train.max_grad_norm", -1e-300, [](Scenario& s) -> double& { return s.train.max_grad_norm; }),
      TypedChoiceField("train.lr_schedule",
                       std::vector<optim::LrScheduleKind>{optim::LrScheduleKind::kConstant, optim::LrScheduleKind::kCosine},
                       optim::LrScheduleKindName, [](Scenario& s) -> optim::LrScheduleKind& { return s.train.lr_schedule; }),
      IntField("train.lr_warmup_steps", 0, [](Scenario& s) -> int64_t& { return s.train.lr_warmup_steps; }),
      DoubleField("train.min_lr_ratio", -1e-300, [](Scenario& s) -> double& { return s.train.min_lr_ratio; }),
      BoolField("train.no_decay_on_norms", [](Scenario& s) -> bool& { return s.train.no_decay_on_norms; }),
      IntField("train.seed", 0, [](Scenario& s) -> uint64_t& { return s.train.seed; }, INT64_MAX),
      TypedChoiceField("data.source", std::vector<DataSource>{DataSource::kSynthetic, DataSource::kTokens}, DataSourceName,
                       [](Scenario& s) -> DataSource& { return s.data.source; }),
      StringField("data.path", [](Scenario& s) -> std::string& { return s.data.path; }),
      ChoiceField("data.token_dtype", {"uint16", "uint32"}, [](Scenario& s) -> std::string& { return s.data.token_dtype; }),
      TypedChoiceField("checkpoint.type",
                       std::vector<CheckpointType>{CheckpointType::kNone, CheckpointType::kFull, CheckpointType::kSharded,
                                                   CheckpointType::kLocal, CheckpointType::kAdapter},
                       CheckpointTypeName, [](Scenario& s) -> CheckpointType& { return s.checkpoint.type; }),
      IntField("checkpoint.save_step", 0, [](Scenario& s) -> int64_t& { return s.checkpoint.save_step; }),
      BoolField("checkpoint.keep", [](Scenario& s) -> bool& { return s.checkpoint.keep; }),
      // A directory, checked here so the error names the line; what it must hold depends on the
      // engine (scenario_parser.cc's ValidateLoadFrom).
      {"checkpoint.load_from", "a checkpoint directory",
       [](Scenario& s, const YAML::Node& n) {
         s.checkpoint.load_from = ReadScalar<std::string>(n, "a checkpoint directory");
         if (!s.checkpoint.load_from.empty() && !IsDirectory(s.checkpoint.load_from)) {
           throw InputError("'" + s.checkpoint.load_from +
                            "' is not a directory (relative paths are from the working directory)");
         }
       },
       [](const Scenario& s) { return Node(s.checkpoint.load_from); }},
      BoolField("checks.loss_parity", [](Scenario& s) -> bool& { return s.checks.loss_parity; }),
      DoubleField("checks.loss_rtol", 0.0, [](Scenario& s) -> double& { return s.checks.loss_rtol; }),
      IntField("checks.loss_parity_steps", 1, [](Scenario& s) -> int64_t& { return s.checks.loss_parity_steps; }),
      BoolField("checks.learning", [](Scenario& s) -> bool& { return s.checks.learning; }),
      DoubleField("checks.max_grad_blowup", -1e-300, [](Scenario& s) -> double& { return s.checks.max_grad_blowup; }),
      BoolField("checks.frozen_dtype", [](Scenario& s) -> bool& { return s.checks.frozen_dtype; }),
      BoolField("checks.state_dict_roundtrip", [](Scenario& s) -> bool& { return s.checks.state_dict_roundtrip; }),
      BoolField("checks.resume", [](Scenario& s) -> bool& { return s.checks.resume; }),
      StringField("peer.python", [](Scenario& s) -> std::string& { return s.peer.python; }),
      {"peer.env", "PACKAGE=VERSION,... (torch, transformers, peft, accelerate)",
       [](Scenario& s, const YAML::Node& n) {
         s.peer.env = CanonicalPeerEnv(ParsePeerEnv(ReadScalar<std::string>(n, "PACKAGE=VERSION,...")));
       },
       [](const Scenario& s) { return Node(s.peer.env); }},
      IntField("accelerate.fsdp_version", 1, [](Scenario& s) -> int& { return s.accelerate.fsdp_version; }, 2),
      BoolField("profile.kernel_trace", [](Scenario& s) -> bool& { return s.profile.kernel_trace; }),
      BoolField("profile.trace", [](Scenario& s) -> bool& { return s.profile.trace; }),
      BoolField("profile.instructions", [](Scenario& s) -> bool& { return s.profile.instructions; }),
      BoolField("timing.pin_cores", [](Scenario& s) -> bool& { return s.timing.pin_cores; }),
      BoolField("timing.calibrate", [](Scenario& s) -> bool& { return s.timing.calibrate; }),
      {"failpoints", "a list of failpoint names",
       [](Scenario& s, const YAML::Node& n) {
         s.failpoints = ReadStringList(n, "a list of failpoint names");
         ValidateFailpoints(s.failpoints, "failpoints");
       },
       [](const Scenario& s) { return Node(s.failpoints); }},
      IntField("world_size", 1, [](Scenario& s) -> int& { return s.world_size; }, kMaxWorldSize),
      TypedChoiceField("backend", std::vector<Backend>{Backend::kGloo, Backend::kNccl}, BackendName, [](Scenario& s) -> Backend& { return s.backend; }),
      DoubleField("timeout_s", 0.0, [](Scenario& s) -> double& { return s.timeout_s; }, kMaxTimeoutS),
  };
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const std::vector<ScenarioField>& ScenarioFields() {
  static const std::vector<ScenarioField> fields = BuildFields();
  return fields;
}

const ScenarioField* FindScenarioField(const std::string& key) {
  for (const auto& f : ScenarioFields()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::string NearestScenarioKey(const std::string& key) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& f : ScenarioFields()) {
    // Compare against the full key and its last component, so "stpes" finds train.steps.
    const auto dot = f.key.rfind('.');
    const std::string leaf = dot == std::string::npos ? f.key : f.key.substr(dot + 1);
    const size_t d = std::min(EditDistance(key, f.key), EditDistance(key.substr(key.rfind('.') + 1), leaf) + 1);
    if (d < best_d) {
      best_d = d;
      best = f.key;
    }
  }
  return best;
}

}  // namespace shardbench
