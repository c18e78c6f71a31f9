// Model FLOPs per trained token, counted from the shapes (the numerator of MFU). Conventions
// (PaLM appendix B, Megatron): a matmul with a weight of P elements costs 2P FLOPs per token
// forward; backward costs 2P for the input gradient plus 2P for the weight gradient, the latter
// only for trainable weights. So a trainable linear weight costs 6P, a frozen one 4P (LoRA's
// base weights still pass gradients through to the adapters below them). Attention's score
// and value products cost 4 * seq_len * hidden per layer forward and twice that backward
// (12 * seq_len * hidden per layer and token), counted over the full square as PaLM does, not
// halved for the causal mask. Embedding lookups and elementwise work (norms, activations,
// softmax) are not counted.
#pragma once

#include <cstdint>

#include "engine/model/llama.h"

namespace shardbench::profile {

struct ModelFlops {
  int64_t trainable_linear = 0;  // 6 x trainable linear weight elements
  int64_t frozen_linear = 0;     // 4 x frozen linear weight elements
  int64_t attention = 0;         // 12 x layers x seq_len x hidden
  int64_t per_token() const { return trainable_linear + frozen_linear + attention; }
};

ModelFlops ModelFlopsPerToken(const model::LlamaConfig& config, const model::LoraConfig& lora, int64_t seq_len);

}  // namespace shardbench::profile
