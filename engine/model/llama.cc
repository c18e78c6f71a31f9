#include "engine/model/llama.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <limits>

#include "engine/common/error.h"

namespace shardbench::model {
namespace {
const std::vector<std::string> kProjections = {"q_proj", "k_proj", "v_proj", "o_proj",
                                               "gate_proj", "up_proj", "down_proj"};
const LlamaConfig& Validated(const LlamaConfig& c, const LoraConfig& lora) {
  c.validate("model '" + c.name + "'");
  ValidateLora(lora, "lora");
  return c;
}
bool Targets(const LoraConfig& lora, const std::string& proj) {
  return lora.enabled && std::find(lora.targets.begin(), lora.targets.end(), proj) != lora.targets.end();
}
}  // namespace

void ValidateLora(const LoraConfig& lora, const std::string& source) {
  if (!lora.enabled) return;
  if (lora.r < 1) throw InputError(source + ": lora.r must be >= 1, got " + std::to_string(lora.r));
  if (lora.alpha <= 0) throw InputError(source + ": lora.alpha must be > 0");
  if (lora.targets.empty()) throw InputError(source + ": lora.targets is empty");
  for (const auto& t : lora.targets) {
    if (std::find(kProjections.begin(), kProjections.end(), t) == kProjections.end()) {
      std::string known;
      for (const auto& p : kProjections) known += (known.empty() ? "" : ", ") + p;
      throw InputError(source + ": lora.targets: '" + t + "' is not a projection (expected one of " + known + ")");
    }
  }
}

std::pair<int64_t, int64_t> ProjectionShape(const LlamaConfig& c, const std::string& name) {
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim(), kv = c.num_key_value_heads * c.head_dim();
  if (name == "q_proj") return {h, q};
  if (name == "k_proj" || name == "v_proj") return {h, kv};
  if (name == "o_proj") return {q, h};
  if (name == "gate_proj" || name == "up_proj") return {h, c.intermediate_size};
  if (name == "down_proj") return {c.intermediate_size, h};
  throw std::logic_error("ProjectionShape: not a projection: " + name);
}

void ValidateLoraFits(const LoraConfig& lora, const LlamaConfig& c, const std::string& source) {
  if (!lora.enabled) return;
  for (const auto& t : lora.targets) {
    const auto [in, out] = ProjectionShape(c, t);
    if (lora.r > std::min(in, out)) {
      throw InputError(source + ": lora.r " + std::to_string(lora.r) + " is above what " + t + " (" + std::to_string(in) +
                       " -> " + std::to_string(out) + ") can use: the update A*B has rank at most " +
                       std::to_string(std::min(in, out)) + ", so a larger r only adds parameters (set lora.r <= " +
                       std::to_string(std::min(in, out)) + " or a wider model)");
    }
  }
}

int64_t MaxLoraRank(const LlamaConfig& c, const LoraConfig& lora) {
  int64_t most = std::numeric_limits<int64_t>::max();
  for (const auto& t : lora.targets) {
    const auto [in, out] = ProjectionShape(c, t);
    most = std::min({most, in, out});
  }
  return most;
}

int64_t LoraParameterCount(const LlamaConfig& c, const LoraConfig& lora) {
  if (!lora.enabled) return 0;
  int64_t per_layer = 0;
  for (const auto& t : lora.targets) {
    const auto [in, out] = ProjectionShape(c, t);
    per_layer += lora.r * (in + out);
  }
  return per_layer * c.num_hidden_layers;
}

LlamaAttention::LlamaAttention(const LlamaConfig& c, const at::TensorOptions& o)
    : q_proj(c.hidden_size, c.num_attention_heads * c.head_dim(), o, LinearInit::kNormal, c.initializer_range),
      k_proj(c.hidden_size, c.num_key_value_heads * c.head_dim(), o, LinearInit::kNormal, c.initializer_range),
      v_proj(c.hidden_size, c.num_key_value_heads * c.head_dim(), o, LinearInit::kNormal, c.initializer_range),
      o_proj(c.num_attention_heads * c.head_dim(), c.hidden_size, o, LinearInit::kNormal, c.initializer_range),
      heads_(c.num_attention_heads),
      kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim()) {
  register_module("q_proj", &q_proj);
  register_module("k_proj", &k_proj);
  register_module("v_proj", &v_proj);
  register_module("o_proj", &o_proj);
}

at::Tensor LlamaAttention::forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
  return hooked({x, cos, sin}, [&] {
    const int64_t B = x.size(0), T = x.size(1);
    at::Tensor q = q_proj.forward(x).view({B, T, heads_, head_dim_}).transpose(1, 2);
    at::Tensor k = k_proj.forward(x).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
    at::Tensor v = v_proj.forward(x).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
    q = ApplyRotary(q, cos, sin);
    k = ApplyRotary(k, cos, sin);
    if (kv_heads_ != heads_) {  // grouped-query attention: HF's repeat_kv
      k = k.repeat_interleave(heads_ / kv_heads_, 1);
      v = v.repeat_interleave(heads_ / kv_heads_, 1);
    }
    at::Tensor attn = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                       /*is_causal=*/true);
    return o_proj.forward(attn.transpose(1, 2).reshape({B, T, heads_ * head_dim_}));
  });
}

LlamaMLP::LlamaMLP(const LlamaConfig& c, const at::TensorOptions& o)
    : gate_proj(c.hidden_size, c.intermediate_size, o, LinearInit::kNormal, c.initializer_range),
      up_proj(c.hidden_size, c.intermediate_size, o, LinearInit::kNormal, c.initializer_range),
      down_proj(c.intermediate_size, c.hidden_size, o, LinearInit::kNormal, c.initializer_range) {
  register_module("gate_proj", &gate_proj);
  register_module("up_proj", &up_proj);
  register_module("down_proj", &down_proj);
}

at::Tensor LlamaMLP::forward(const at::Tensor& x) const {
  return hooked({x}, [&] { return down_proj.forward(at::silu(gate_proj.forward(x)) * up_proj.forward(x)); });
}

LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& c, const at::TensorOptions& o)
    : input_layernorm(c.hidden_size, c.rms_norm_eps, o),
      self_attn(c, o),
      post_attention_layernorm(c.hidden_size, c.rms_norm_eps, o),
      mlp(c, o) {
  register_module("self_attn", &self_attn);
  register_module("mlp", &mlp);
  register_module("input_layernorm", &input_layernorm);
  register_module("post_attention_layernorm", &post_attention_layernorm);
  body_fn_ = [this](const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) { return body(x, cos, sin); };
}

at::Tensor LlamaDecoderLayer::body(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
  at::Tensor h = x + self_attn.forward(input_layernorm.forward(x), cos, sin);
  return h + mlp.forward(post_attention_layernorm.forward(h));
}

at::Tensor LlamaDecoderLayer::forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
  // Checkpointing sits inside the sharding hooks, as FSDP(checkpoint_wrapper(layer)) does.
  return hooked({x, cos, sin}, [&] {
    if (!checkpointing_ || !c10::GradMode::is_enabled()) return body(x, cos, sin);
    // Reentrant checkpointing only records a node when an input needs a gradient; below frozen
    // embeddings (LoRA) none does, and the layer's adapters would never get one ("element 0 of
    // tensors does not require grad"). Like PEFT's enable_input_require_grads, the input is made
    // to require one; its gradient is discarded.
    const at::Tensor in = x.requires_grad() ? x : x.detach().requires_grad_(true);
    return CheckpointedLayer(*this, &body_fn_, in, cos, sin);
  });
}

LlamaModel::LlamaModel(const LlamaConfig& c, const at::TensorOptions& o)
    : embed_tokens(c.vocab_size, c.hidden_size, o, c.initializer_range),
      norm(c.hidden_size, c.rms_norm_eps, o),
      rotary_emb(c.head_dim(), c.rope_theta, o) {
  register_module("embed_tokens", &embed_tokens);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back(std::make_unique<LlamaDecoderLayer>(c, o));
    register_module("layers." + std::to_string(i), layers.back().get());
  }
  register_module("norm", &norm);
  register_module("rotary_emb", &rotary_emb);
}

LlamaForCausalLM::LlamaForCausalLM(const LlamaConfig& config, const LoraConfig& lora,
                                   const at::TensorOptions& options)
    : model(Validated(config, lora), options),
      lm_head(config.hidden_size, config.vocab_size, options, LinearInit::kNormal, config.initializer_range),
      config_(config),
      lora_(lora) {
  register_module("model", &model);
  register_module("lm_head", &lm_head);
  if (lora.enabled) {
    // PEFT freezes every base parameter, then adds trainable adapters to the targets.
    for (auto& p : named_parameters()) p.slot->requires_grad_(false);
    for (auto* layer : decoder_layers()) {
      Linear* projections[] = {&layer->self_attn.q_proj, &layer->self_attn.k_proj, &layer->self_attn.v_proj,
                               &layer->self_attn.o_proj, &layer->mlp.gate_proj,    &layer->mlp.up_proj,
                               &layer->mlp.down_proj};
      for (size_t i = 0; i < kProjections.size(); ++i) {
        if (Targets(lora, kProjections[i])) {
          projections[i]->add_lora(lora.r, lora.alpha);
          projections[i]->lora_A->weight.requires_grad_(true);
          projections[i]->lora_B->weight.requires_grad_(true);
        }
      }
    }
  }
}

std::vector<LlamaDecoderLayer*> LlamaForCausalLM::decoder_layers() const {
  std::vector<LlamaDecoderLayer*> out;
  for (const auto& l : model.layers) out.push_back(l.get());
  return out;
}

at::Tensor LlamaForCausalLM::forward(const at::Tensor& input_ids) const {
  return hooked({input_ids}, [&] {
    at::Tensor h = model.embed_tokens.forward(input_ids);
    auto [cos, sin] = model.rotary_emb.forward(input_ids.size(1), h.scalar_type());
    for (const auto& layer : model.layers) h = layer->forward(h, cos, sin);
    return lm_head.forward(model.norm.forward(h));
  });
}

at::Tensor LlamaForCausalLM::loss(const at::Tensor& input_ids, const at::Tensor& labels) const {
  at::Tensor logits = forward(input_ids);
  return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kFloat), labels.reshape({-1}));
}

std::unique_ptr<LlamaForCausalLM> BuildInitializedLlama(const LlamaConfig& config, const LoraConfig& lora,
                                                        uint64_t seed, const at::TensorOptions& options) {
  auto m = std::make_unique<LlamaForCausalLM>(config, lora, options);
  InitializeParameters(*m, seed);
  InitializeBuffers(*m);
  return m;
}

}  // namespace shardbench::model
