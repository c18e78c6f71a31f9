#include "engine/model/llama_config.h"

#include <algorithm>

#include "engine/common/durable_file.h"

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace shardbench::model {

int64_t LlamaConfig::parameter_count() const {
  const int64_t h = hidden_size, kv = num_key_value_heads * head_dim();
  const int64_t attn = h * h /*q*/ + 2 * h * kv /*k,v*/ + h * h /*o*/;
  const int64_t mlp = 3 * h * intermediate_size;
  const int64_t layer = attn + mlp + 2 * h /*norms*/;
  const int64_t embed = vocab_size * h;
  return embed + num_hidden_layers * layer + h /*final norm*/ + (tie_word_embeddings ? 0 : embed);
}

void LlamaConfig::validate(const std::string& source) const {
  auto fail = [&](const std::string& what) { throw InputError(source + ": " + what); };
  if (vocab_size < 1 || hidden_size < 1 || intermediate_size < 1 || num_hidden_layers < 1 ||
      num_attention_heads < 1 || num_key_value_heads < 1) {
    fail("vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads and "
         "num_key_value_heads must all be positive");
  }
  if (hidden_size % num_attention_heads != 0) {
    fail("hidden_size " + std::to_string(hidden_size) + " is not divisible by num_attention_heads " +
         std::to_string(num_attention_heads));
  }
  if (num_attention_heads % num_key_value_heads != 0) {
    fail("num_attention_heads " + std::to_string(num_attention_heads) + " is not a multiple of num_key_value_heads " +
         std::to_string(num_key_value_heads));
  }
  if (head_dim() % 2 != 0) fail("head_dim " + std::to_string(head_dim()) + " must be even for rotary embeddings");
  if (tie_word_embeddings) {
    fail("tie_word_embeddings=true is not supported (shardbench models an untied lm_head)");
  }
}

LlamaConfig NamedLlamaConfig(const std::string& name) {
  LlamaConfig c;
  c.name = name;
  if (name == "tiny") {
    c.vocab_size = 256;
    c.hidden_size = 64;
    c.intermediate_size = 176;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 512;
  } else if (name == "125m") {  // GPT-2-small-sized Llama (~134M with untied embeddings)
    c.vocab_size = 32000;
    c.hidden_size = 768;
    c.intermediate_size = 2048;
    c.num_hidden_layers = 12;
    c.num_attention_heads = 12;
    c.num_key_value_heads = 12;
    c.max_position_embeddings = 2048;
  } else if (name == "1b") {  // TinyLlama-1.1B shapes
    c.vocab_size = 32000;
    c.hidden_size = 2048;
    c.intermediate_size = 5632;
    c.num_hidden_layers = 22;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 4;
    c.max_position_embeddings = 2048;
  } else if (name == "llama2-7b") {
    c.vocab_size = 32000;
    c.hidden_size = 4096;
    c.intermediate_size = 11008;
    c.num_hidden_layers = 32;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 32;
    c.max_position_embeddings = 4096;
  } else if (name == "llama3-8b") {
    c.vocab_size = 128256;
    c.hidden_size = 4096;
    c.intermediate_size = 14336;
    c.num_hidden_layers = 32;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 8;
    c.max_position_embeddings = 8192;
    c.rope_theta = 500000.0;
  } else if (name == "llama2-70b") {
    c.vocab_size = 32000;
    c.hidden_size = 8192;
    c.intermediate_size = 28672;
    c.num_hidden_layers = 80;
    c.num_attention_heads = 64;
    c.num_key_value_heads = 8;
    c.max_position_embeddings = 4096;
  } else {
    std::string known;
    for (const auto& n : NamedLlamaConfigs()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("model '" + name + "': not a named config (expected one of " + known +
                     ", or a Hugging Face checkpoint directory)");
  }
  return c;
}

std::vector<std::string> NamedLlamaConfigs() {
  return {"tiny", "125m", "1b", "llama2-7b", "llama3-8b", "llama2-70b"};
}

LlamaConfig LoadHfLlamaConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open (a Hugging Face checkpoint directory needs config.json)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw InputError(path + ": expected a JSON object");
  const std::string model_type = j.value("model_type", std::string());
  if (model_type != "llama") {
    throw InputError(path + ": model_type '" + model_type + "' is not supported (expected 'llama')");
  }
  LlamaConfig c;
  c.name = path;
  auto get_int = [&](const char* key, int64_t* out, bool required) {
    if (!j.contains(key) || j[key].is_null()) {
      if (required) throw InputError(path + ": missing required key '" + key + "'");
      return;
    }
    if (!j[key].is_number_integer()) throw InputError(path + ": '" + key + "' must be an integer");
    *out = j[key].get<int64_t>();
  };
  auto get_double = [&](const char* key, double* out) {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_number()) throw InputError(path + ": '" + key + "' must be a number");
    *out = j[key].get<double>();
  };
  get_int("vocab_size", &c.vocab_size, true);
  get_int("hidden_size", &c.hidden_size, true);
  get_int("intermediate_size", &c.intermediate_size, true);
  get_int("num_hidden_layers", &c.num_hidden_layers, true);
  get_int("num_attention_heads", &c.num_attention_heads, true);
  c.num_key_value_heads = c.num_attention_heads;
  get_int("num_key_value_heads", &c.num_key_value_heads, false);
  get_int("max_position_embeddings", &c.max_position_embeddings, false);
  get_double("rms_norm_eps", &c.rms_norm_eps);
  get_double("rope_theta", &c.rope_theta);
  get_double("initializer_range", &c.initializer_range);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    throw InputError(path + ": rope_scaling is not supported yet (plain rotary embeddings only)");
  }
  if (j.contains("head_dim") && j["head_dim"].is_number_integer() &&
      j["head_dim"].get<int64_t>() != c.hidden_size / c.num_attention_heads) {
    throw InputError(path + ": head_dim differs from hidden_size / num_attention_heads (not supported)");
  }
  // What changes the model's arithmetic and is not modelled is refused by name, as rope_scaling
  // is: a run that ignored it would report another model's numbers.
  auto refuse_unless = [&](const char* key, const nlohmann::json& modelled, const std::string& what) {
    if (j.contains(key) && !j[key].is_null() && j[key] != modelled) {
      throw InputError(path + ": '" + key + "' " + j[key].dump() + " is not supported (" + what + ")");
    }
  };
  refuse_unless("hidden_act", "silu", "shardbench's Llama MLP is SiLU-gated");
  refuse_unless("attention_bias", false, "the projections have no bias");
  refuse_unless("mlp_bias", false, "the projections have no bias");
  if (j.contains("torch_dtype") && !j["torch_dtype"].is_null()) {
    static const std::vector<std::string> dtypes = {"float32", "float16", "bfloat16", "float64", "auto"};
    const nlohmann::json& d = j["torch_dtype"];
    if (!d.is_string() || std::find(dtypes.begin(), dtypes.end(), d.get<std::string>()) == dtypes.end()) {
      throw InputError(path + ": 'torch_dtype' " + d.dump() + " is not a dtype (expected float32, float16, bfloat16, "
                       "float64 or auto)");
    }
  }
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean()) {
    c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  c.validate(path);
  return c;
}

void WriteHfLlamaConfig(const LlamaConfig& c, const std::string& path) {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.hidden_size},
                      {"intermediate_size", c.intermediate_size},
                      {"num_hidden_layers", c.num_hidden_layers},
                      {"num_attention_heads", c.num_attention_heads},
                      {"num_key_value_heads", c.num_key_value_heads},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_theta", c.rope_theta},
                      {"initializer_range", c.initializer_range},
                      {"tie_word_embeddings", c.tie_word_embeddings},
                      {"hidden_act", "silu"},
                      {"attention_bias", false},
                      {"mlp_bias", false},
                      {"torch_dtype", "float32"}};
  WriteFileAtomically(path, j.dump(2) + "\n");
}

}  // namespace shardbench::model
