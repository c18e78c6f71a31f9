#include "engine/profile/model_flops.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace shardbench::profile {

ModelFlops ModelFlopsPerToken(const model::LlamaConfig& c, const model::LoraConfig& lora, int64_t seq_len) {
  const int64_t h = c.hidden_size, kv = c.num_key_value_heads * c.head_dim(), i = c.intermediate_size;
  // Each decoder layer's projections: (name, in, out).
  const std::vector<std::tuple<std::string, int64_t, int64_t>> projections = {
      {"q_proj", h, h}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", h, h},
      {"gate_proj", h, i}, {"up_proj", h, i}, {"down_proj", i, h}};
  auto targeted = [&](const std::string& name) {
    return lora.enabled && std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
  };
  ModelFlops f;
  const bool base_trainable = !lora.enabled;
  auto add = [&](int64_t elements, bool trainable) { (trainable ? f.trainable_linear : f.frozen_linear) += (trainable ? 6 : 4) * elements; };
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    for (const auto& [name, in, out] : projections) {
      add(in * out, base_trainable);
      if (targeted(name)) add(lora.r * (in + out), /*trainable=*/true);  // lora_A: in x r, lora_B: r x out
    }
  }
  add(h * c.vocab_size, base_trainable);  // lm_head
  f.attention = 12 * c.num_hidden_layers * seq_len * h;
  return f;
}

}  // namespace shardbench::profile
