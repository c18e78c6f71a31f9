// The building blocks of a Llama decoder, each with its forward beside its parameters.
// Parameter names follow Hugging Face (`weight`), LoRA follows PEFT (`lora_A.weight`).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <memory>

#include "engine/model/module.h"

namespace shardbench::model {

// How a Linear initialises its weight (HF's _init_weights for the base model; PEFT's
// reset_lora_parameters for the adapters).
enum class LinearInit { kNormal, kKaimingUniform, kZeros };

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, const at::TensorOptions& options,
         LinearInit init = LinearInit::kNormal, double init_std = 0.02);

  // PEFT LoRA: y = x W^T + (x A^T) B^T * alpha/r, with A random and B zero so the wrapped
  // layer starts out equal to the base layer. Freezes the base weight.
  void add_lora(int64_t r, double alpha);
  bool has_lora() const { return lora_A != nullptr; }

  at::Tensor forward(const at::Tensor& x) const;
  ParamInit param_init(const std::string& local_name) const override;
  std::string type_name() const override { return has_lora() ? "LoraLinear" : "Linear"; }
  bool can_be_unit() const override { return true; }

  int64_t in_features, out_features;
  at::Tensor weight;  // [out, in]
  std::unique_ptr<Linear> lora_A, lora_B;
  double lora_scaling = 0.0;

 private:
  LinearInit init_;
  double init_std_;
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, const at::TensorOptions& options, double init_std);
  at::Tensor forward(const at::Tensor& ids) const;
  ParamInit param_init(const std::string& local_name) const override;
  std::string type_name() const override { return "Embedding"; }
  bool can_be_unit() const override { return true; }
  at::Tensor weight;  // [num_embeddings, dim]

 private:
  double init_std_;
};

// HF LlamaRMSNorm: normalise in fp32, cast back, then scale.
class RMSNorm : public Module {
 public:
  RMSNorm(int64_t dim, double eps, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x) const;
  ParamInit param_init(const std::string& local_name) const override;
  std::string type_name() const override { return "RMSNorm"; }
  bool can_be_unit() const override { return true; }
  at::Tensor weight;

 private:
  double eps_;
};

// HF LlamaRotaryEmbedding (default rope type): inv_freq is a buffer no checkpoint holds, so
// it must be recomputed after meta-device materialisation.
class RotaryEmbedding : public Module {
 public:
  RotaryEmbedding(int64_t head_dim, double theta, const at::TensorOptions& options);
  // cos, sin of shape [T, head_dim] for positions 0..T-1, in `dtype`.
  std::pair<at::Tensor, at::Tensor> forward(int64_t seq_len, at::ScalarType dtype) const;
  void reset_buffers() override;
  std::string type_name() const override { return "RotaryEmbedding"; }
  at::Tensor inv_freq;  // [head_dim / 2], fp32

 private:
  int64_t head_dim_;
  double theta_;
};

// q * cos + rotate_half(q) * sin, rotate_half(x) = cat(-x2, x1) (HF's layout, not interleaved).
at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace shardbench::model
