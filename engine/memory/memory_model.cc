#include "engine/memory/memory_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

#include "engine/shard/dim0_layout.h"
#include "engine/shard/flat_layout.h"

namespace shardbench::memory {
namespace {

// Saved-for-backward activations of our Llama in fp32, per sample-token, counted from the
// forward: per decoder layer about 12 hidden-sized tensors (norm inputs and outputs, q/k/v
// before and after rotary, repeated k/v, attention output, o_proj input) and 4
// intermediate-sized ones (gate, up, silu, product); the head keeps 2 hidden-sized tensors and
// 3 vocab-sized ones (logits, log-softmax, its gradient). An estimate, not a count of every
// temporary: results show it beside the allocator's measured activations peak. With activation
// checkpointing every layer keeps only its input, and one layer's activations exist again
// while its backward recomputes them.
int64_t ActivationBytes(const MemoryModelInput& in, int64_t compute_element_size) {
  const auto& c = in.config;
  const int64_t tokens = in.batch_size * in.seq_len;
  const int64_t per_layer = 12 * c.hidden_size + 4 * c.intermediate_size;
  const int64_t head = 2 * c.hidden_size + 3 * c.vocab_size;
  const int64_t layers = in.activation_checkpointing ? c.num_hidden_layers * c.hidden_size + per_layer
                                                     : c.num_hidden_layers * per_layer;
  return tokens * (layers + head) * compute_element_size;
}

int64_t StoredSize(const at::Tensor& t) { return static_cast<int64_t>(t.element_size()); }
// Bytes per element of a param once gathered: param_dtype's under mixed precision, else its own.
int64_t GatheredSize(const MemoryModelInput& in, const at::Tensor& t) {
  return in.param_dtype ? static_cast<int64_t>(c10::elementSize(*in.param_dtype)) : StoredSize(t);
}

// The top-level unit a unit nests in (itself if none): units nested in a layer (adapters under
// lora_separate) are gathered while their layer is.
std::string TopUnit(const std::vector<shard::UnitPlan>& units, const std::string& path) {
  std::string top = path;
  for (const auto& other : units) {
    if (!other.path.empty() && other.path != path && path.rfind(other.path + ".", 0) == 0 && other.path.size() < top.size()) {
      top = other.path;
    }
  }
  return top;
}

// The root stays gathered from its forward to its backward; other units one group at a time
// (reshard_after_forward) or all of them by the end of forward.
int64_t UnshardedPeak(int64_t root_full, const std::map<std::string, int64_t>& group_full, bool reshard_after_forward) {
  int64_t largest = 0, all = 0;
  for (const auto& [path, bytes] : group_full) {
    largest = std::max(largest, bytes);
    all += bytes;
  }
  return root_full + (reshard_after_forward ? largest : all);
}

void ListUnits(const std::vector<shard::UnitPlan>& units, MemoryPrediction& p) {
  p.units = static_cast<int64_t>(units.size());
  for (const auto& u : units) {
    std::vector<std::string> names;
    for (const auto& t : u.params) names.push_back(t.name);
    p.unit_params.emplace_back(u.path, std::move(names));
  }
}

// Per-parameter engine: every param sharded on dim 0 in padded chunks; only trainable params
// get (padded) gradients; the unsharded params hold real rows only.
MemoryPrediction PredictPerParam(const MemoryModelInput& in, model::LlamaForCausalLM& m, MemoryPrediction p) {
  CategoryBytes& held = p.bytes.held;
  const auto units = shard::PlanUnits(m, in.policy);
  ListUnits(units, p);
  int64_t root_full = 0;
  std::map<std::string, int64_t> group_full;
  for (const auto& u : units) {
    int64_t full = 0;
    for (const auto& t : u.params) {
      const auto l = shard::ComputeDim0Layout(t.slot->sizes().vec(), in.world_size);
      const int64_t stored = StoredSize(*t.slot);
      held[Category::kParamsSharded] += l.padded_numel() * stored;
      full += t.slot->numel() * GatheredSize(in, *t.slot);
      if (!t.slot->requires_grad()) continue;
      // One rank: the shard's gradient is the full gradient itself (no padding to hold).
      held[Category::kGrads] += (in.world_size == 1 ? t.slot->numel() : l.padded_numel()) * stored;
      held[Category::kOptimState] += 2 * l.local_rows(in.rank) * l.row_numel * stored;
    }
    if (u.path.empty()) {
      root_full = full;
    } else {
      group_full[TopUnit(units, u.path)] += full;
    }
  }
  p.bytes.peak[Category::kParamsUnsharded] = UnshardedPeak(root_full, group_full, in.reshard_after_forward);
  return p;
}

}  // namespace

int64_t MemoryPrediction::total() const {
  return bytes.held[Category::kParamsSharded] + bytes.peak[Category::kParamsUnsharded] + bytes.held[Category::kGrads] +
         bytes.held[Category::kOptimState] + bytes.peak[Category::kActivations];
}

MemoryPrediction PredictMemory(const MemoryModelInput& in) {
  MemoryPrediction p;
  CategoryBytes& held = p.bytes.held;
  CategoryBytes& peak = p.bytes.peak;
  // Shapes and dtypes only: the meta device allocates nothing.
  model::LlamaForCausalLM m(in.config, in.lora, at::TensorOptions().device(at::kMeta));
  model::ApplyStorageDtypes(m, in.storage, in.checkpoint.get());
  // Activations follow the hidden states' dtype: the embedding's (or param_dtype).
  peak[Category::kActivations] = ActivationBytes(in, GatheredSize(in, m.model.embed_tokens.weight));
  switch (in.engine) {
    case shard::EngineKind::kPerParam: return PredictPerParam(in, m, p);
    case shard::EngineKind::kReference: {  // every parameter whole on every rank
      for (auto& t : m.named_parameters()) {
        const int64_t bytes = t.slot->numel() * StoredSize(*t.slot);
        peak[Category::kParamsUnsharded] += bytes;
        if (t.slot->requires_grad()) {
          held[Category::kGrads] += bytes;
          held[Category::kOptimState] += 2 * bytes;
        }
      }
      return p;
    }
    case shard::EngineKind::kFlat: break;  // below
    // No default: a new engine kind fails to compile here (-Wswitch) until it is predicted.
  }
  // Flat engine: per unit, the same layout the engine builds.
  const auto units = shard::PlanUnits(m, in.policy);
  ListUnits(units, p);
  int64_t root_full = 0;
  std::map<std::string, int64_t> group_full;  // top-level unit path -> its and nested units' full bytes
  for (const auto& u : units) {
    std::vector<int64_t> numels;
    bool trainable = false;
    for (const auto& t : u.params) {
      numels.push_back(t.slot->numel());
      trainable |= t.slot->requires_grad();
    }
    // A flat unit holds one dtype (the engine refuses others); an empty root holds fp32.
    const int64_t stored = u.params.empty() ? 4 : StoredSize(*u.params.front().slot);
    const int64_t gathered = u.params.empty() ? 4 : GatheredSize(in, *u.params.front().slot);
    const shard::FlatLayout layout = shard::ComputeFlatLayout(numels, stored, in.use_orig_params, in.world_size);
    const int64_t shard_bytes = layout.shard_numel * stored;
    held[Category::kParamsSharded] += shard_bytes;
    if (trainable) {
      held[Category::kGrads] += shard_bytes;
      if (in.use_orig_params) {
        for (size_t i = 0; i < u.params.size(); ++i) {
          if (u.params[i].slot->requires_grad()) {
            held[Category::kOptimState] += 2 * layout.overlap(layout.offsets[i], numels[i], in.rank) * stored;
          }
        }
      } else {
        held[Category::kOptimState] += 2 * shard_bytes;
      }
    }
    const int64_t full = layout.padded_numel(in.world_size) * gathered;
    if (u.path.empty()) {
      root_full = full;
      continue;
    }
    group_full[TopUnit(units, u.path)] += full;
  }
  if (in.world_size == 1) return p;  // NO_SHARD: the shard is the full buffer, nothing gathered
  peak[Category::kParamsUnsharded] = UnshardedPeak(root_full, group_full, in.reshard_after_forward);
  return p;
}

}  // namespace shardbench::memory
