#include "engine/model/layers.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>

namespace shardbench::model {

Linear::Linear(int64_t in, int64_t out, const at::TensorOptions& options, LinearInit init, double init_std)
    : in_features(in), out_features(out), init_(init), init_std_(init_std) {
  weight = at::empty({out, in}, options).requires_grad_(true);
  register_parameter("weight", &weight);
}

void Linear::add_lora(int64_t r, double alpha) {
  const auto options = weight.options().requires_grad(false);
  lora_A = std::make_unique<Linear>(in_features, r, options, LinearInit::kKaimingUniform);
  lora_B = std::make_unique<Linear>(r, out_features, options, LinearInit::kZeros);
  lora_scaling = alpha / static_cast<double>(r);
  register_module("lora_A", lora_A.get());
  register_module("lora_B", lora_B.get());
  weight.requires_grad_(false);
}

at::Tensor Linear::forward(const at::Tensor& x) const {
  return hooked({x}, [&] {
    // Stored dtypes may differ (frozen bf16 base weights, fp32 adapters): as PEFT does, each
    // linear computes in its weight's dtype and the sum keeps the base layer's output dtype.
    at::Tensor y = at::linear(x.to(weight.scalar_type()), weight);
    if (lora_A) y = (y + lora_B->forward(lora_A->forward(x)) * lora_scaling).to(y.scalar_type());
    return y;
  });
}

ParamInit Linear::param_init(const std::string&) const {
  switch (init_) {
    case LinearInit::kNormal:
      return {ParamInit::Kind::kNormal, 0.0, init_std_};
    case LinearInit::kKaimingUniform: {
      // nn.init.kaiming_uniform_(w, a=sqrt(5)): bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)).
      const double bound = std::sqrt(1.0 / 3.0) * std::sqrt(3.0 / static_cast<double>(in_features));
      return {ParamInit::Kind::kUniform, -bound, bound};
    }
    case LinearInit::kZeros:
      break;
  }
  return {ParamInit::Kind::kConstant, 0.0, 0.0};
}

Embedding::Embedding(int64_t n, int64_t dim, const at::TensorOptions& options, double init_std) : init_std_(init_std) {
  weight = at::empty({n, dim}, options).requires_grad_(true);
  register_parameter("weight", &weight);
}

at::Tensor Embedding::forward(const at::Tensor& ids) const {
  return hooked({ids}, [&] { return at::embedding(weight, ids); });
}

ParamInit Embedding::param_init(const std::string&) const { return {ParamInit::Kind::kNormal, 0.0, init_std_}; }

RMSNorm::RMSNorm(int64_t dim, double eps, const at::TensorOptions& options) : eps_(eps) {
  weight = at::empty({dim}, options).requires_grad_(true);
  register_parameter("weight", &weight);
}

at::Tensor RMSNorm::forward(const at::Tensor& x) const {
  return hooked({x}, [&] {
    at::Tensor h = x.to(at::kFloat);
    at::Tensor var = h.pow(2).mean(-1, /*keepdim=*/true);
    h = h * at::rsqrt(var + eps_);
    return weight * h.to(x.scalar_type());
  });
}

ParamInit RMSNorm::param_init(const std::string&) const { return {ParamInit::Kind::kConstant, 1.0, 0.0}; }

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, double theta, const at::TensorOptions& options)
    : head_dim_(head_dim), theta_(theta) {
  inv_freq = at::empty({head_dim / 2}, options.dtype(at::kFloat).requires_grad(false));
  register_buffer("inv_freq", &inv_freq);
}

void RotaryEmbedding::reset_buffers() {
  if (inv_freq.is_meta()) return;
  // HF: 1 / theta^(arange(0, dim, 2) / dim), computed in int64 then float as transformers does.
  at::Tensor exponents = at::arange(0, head_dim_, 2, at::kLong).to(at::kFloat) / static_cast<double>(head_dim_);
  at::Tensor v = 1.0 / at::pow(theta_, exponents);
  c10::NoGradGuard no_grad;
  inv_freq.copy_(v);
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::forward(int64_t seq_len, at::ScalarType dtype) const {
  at::Tensor pos = at::arange(seq_len, inv_freq.options().dtype(at::kFloat));
  at::Tensor freqs = at::outer(pos, inv_freq);
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  at::Tensor rotated = at::cat({-x2, x1}, -1);
  return x * cos + rotated * sin;
}

}  // namespace shardbench::model
