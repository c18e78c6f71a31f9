// Shapes of a Llama-style decoder, named as in Hugging Face's LlamaConfig (config.json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardbench::model {

struct LlamaConfig {
  std::string name = "custom";
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;  // < num_attention_heads: grouped-query attention
  int64_t max_position_embeddings = 4096;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  double initializer_range = 0.02;  // std of HF's normal init for Linear and Embedding
  bool tie_word_embeddings = false;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Parameter count of the base model (no LoRA), computed from shapes alone.
  int64_t parameter_count() const;
  // Throws InputError naming `source` and the field when shapes are inconsistent.
  void validate(const std::string& source) const;
};

// tiny (trains in seconds on CPU), 125m, 1b, and the real shapes of llama2-7b, llama3-8b,
// llama2-70b (for memory planning without allocating).
LlamaConfig NamedLlamaConfig(const std::string& name);
std::vector<std::string> NamedLlamaConfigs();

// Reads a Hugging Face config.json (model_type llama). Unknown keys are ignored, as
// transformers does; missing required keys and non-Llama models are InputErrors.
LlamaConfig LoadHfLlamaConfig(const std::string& config_json_path);
// Writes config.json as transformers would read it back (architectures, model_type llama).
void WriteHfLlamaConfig(const LlamaConfig& config, const std::string& config_json_path);

}  // namespace shardbench::model
