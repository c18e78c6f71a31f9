// A Llama decoder numerically equal to Hugging Face transformers' LlamaForCausalLM, with HF
// parameter names (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight, ...,
// lm_head.weight) and optional PEFT-style LoRA on chosen projections.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/model/activation_checkpoint.h"
#include "engine/model/layers.h"
#include "engine/model/llama_config.h"

namespace shardbench::model {

struct LoraConfig {
  bool enabled = false;
  int64_t r = 8;
  double alpha = 16.0;
  // Projection names as PEFT's target_modules: q_proj k_proj v_proj o_proj gate_proj up_proj
  // down_proj (lm_head is not a valid target here).
  std::vector<std::string> targets = {"q_proj", "v_proj"};
};
// Throws InputError for an unknown target or r/alpha out of range.
void ValidateLora(const LoraConfig& lora, const std::string& source);
// A projection's (in_features, out_features) under `c`; `name` one of the LoRA targets.
std::pair<int64_t, int64_t> ProjectionShape(const LlamaConfig& c, const std::string& name);
// Throws InputError when lora.r exceeds a targeted projection's min(in, out): the rank of A*B
// cannot, so the extra rank adds r * (in + out) parameters per layer and nothing else (r=100000
// on a 64-wide model allocated ~4 GB and crawled before).
void ValidateLoraFits(const LoraConfig& lora, const LlamaConfig& c, const std::string& source);
// The largest lora.r ValidateLoraFits accepts: the smallest min(in, out) over the targets.
int64_t MaxLoraRank(const LlamaConfig& c, const LoraConfig& lora);
// The adapters' parameters over all layers (0 when LoRA is off).
int64_t LoraParameterCount(const LlamaConfig& c, const LoraConfig& lora);

class LlamaAttention : public Module {
 public:
  LlamaAttention(const LlamaConfig& c, const at::TensorOptions& o);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const;
  std::string type_name() const override { return "LlamaAttention"; }
  bool can_be_unit() const override { return true; }
  Linear q_proj, k_proj, v_proj, o_proj;

 private:
  int64_t heads_, kv_heads_, head_dim_;
};

class LlamaMLP : public Module {
 public:
  LlamaMLP(const LlamaConfig& c, const at::TensorOptions& o);
  at::Tensor forward(const at::Tensor& x) const;  // down(silu(gate(x)) * up(x))
  std::string type_name() const override { return "LlamaMLP"; }
  bool can_be_unit() const override { return true; }
  Linear gate_proj, up_proj, down_proj;
};

class LlamaDecoderLayer : public Module {
 public:
  LlamaDecoderLayer(const LlamaConfig& c, const at::TensorOptions& o);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const;
  std::string type_name() const override { return "LlamaDecoderLayer"; }
  // Activation checkpointing: keep only the layer's input, recompute the rest in backward.
  void set_checkpointing(bool on) { checkpointing_ = on; }
  bool checkpointing() const { return checkpointing_; }
  bool can_be_unit() const override { return true; }
  RMSNorm input_layernorm;
  LlamaAttention self_attn;
  RMSNorm post_attention_layernorm;
  LlamaMLP mlp;

 private:
  at::Tensor body(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const;
  bool checkpointing_ = false;
  LayerBody body_fn_;  // body(), as the checkpoint function calls it
};

class LlamaModel : public Module {
 public:
  LlamaModel(const LlamaConfig& c, const at::TensorOptions& o);
  std::string type_name() const override { return "LlamaModel"; }
  Embedding embed_tokens;
  std::vector<std::unique_ptr<LlamaDecoderLayer>> layers;
  RMSNorm norm;
  RotaryEmbedding rotary_emb;
};

class LlamaForCausalLM : public Module {
 public:
  // Tensors are allocated with `options` (kMeta for deferred init) but not initialised:
  // call InitializeParameters/InitializeBuffers, or load a checkpoint.
  LlamaForCausalLM(const LlamaConfig& config, const LoraConfig& lora, const at::TensorOptions& options);
  std::string type_name() const override { return "LlamaForCausalLM"; }
  bool can_be_unit() const override { return true; }

  // input_ids [B, T] int64 -> logits [B, T, vocab].
  at::Tensor forward(const at::Tensor& input_ids) const;
  // Mean token cross-entropy of logits against labels [B, T] (labels already shifted: label t
  // is the token after input t), computed in fp32.
  at::Tensor loss(const at::Tensor& input_ids, const at::Tensor& labels) const;

  const LlamaConfig& config() const { return config_; }
  const LoraConfig& lora() const { return lora_; }
  // The decoder layers as modules (wrap policies and activation checkpointing use these).
  std::vector<LlamaDecoderLayer*> decoder_layers() const;

  LlamaModel model;
  Linear lm_head;

 private:
  LlamaConfig config_;
  LoraConfig lora_;
};

// Builds the model and initialises it the way HF does for a fresh model (seeded per name).
std::unique_ptr<LlamaForCausalLM> BuildInitializedLlama(const LlamaConfig& config, const LoraConfig& lora,
                                                        uint64_t seed, const at::TensorOptions& options);

}  // namespace shardbench::model
