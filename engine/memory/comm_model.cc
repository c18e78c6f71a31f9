#include "engine/memory/comm_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "engine/shard/dim0_layout.h"
#include "engine/shard/flat_layout.h"

namespace shardbench::memory {
namespace {

using comm::Collective;

void Add(CommPrediction& p, Collective c, int64_t count, int64_t bytes_each) {
  auto& v = p.per_step[static_cast<size_t>(c)];
  v.count += count;
  v.bytes += count * bytes_each;
}

int64_t Size(c10::ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

// The layer a unit sits in ("model.layers.3..." -> 3), -1 for none; `top`: the layer itself.
int LayerOf(const std::string& path, bool* top) {
  const std::string prefix = "model.layers.";
  *top = false;
  if (path.rfind(prefix, 0) != 0) return -1;
  size_t end = prefix.size();
  while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
  *top = end == path.size();
  return std::stoi(path.substr(prefix.size(), end - prefix.size()));
}

struct UnitTraffic {
  bool root = false, trainable = false;
  // Some trainable parameter runs before this unit in forward, so its inputs need gradients
  // and it learns in backward when it is done; if not, it stays gathered until the step ends.
  bool inputs_need_grad = true;
  int64_t gathered = 0, reduced = 0;  // bytes of one all-gather / one reduce-scatter
  bool nested = false;                // inside a layer's unit (lora_separate's adapters)
};

// Per step, with `mb` micro-batches (docs in engine/shard: flat_param_unit.cc, per_param_unit.cc).
void AddUnit(CommPrediction& p, const CommModelInput& in, const UnitTraffic& u, bool flat) {
  const int64_t mb = in.micro_batches;
  const bool reshard = in.layout.reshard_after_forward;
  int64_t gathers = reshard ? 2 * mb : mb, reduces = mb;
  if (u.root) {
    // Never resharded during a step; a flat root that trains reshards after each reduce.
    gathers = flat && u.trainable ? mb : 1;
    reduces = flat ? mb : 1;
  } else if (!u.inputs_need_grad && !(flat && u.trainable)) {
    // Its backward's end is learned only when the step ends: gathered once more per extra
    // micro-batch's backward (or never again without reshard_after_forward), reduced once.
    gathers = reshard ? mb + 1 : 1;
    reduces = 1;
  }
  Add(p, Collective::kAllGather, gathers, u.gathered);
  if (u.trainable && u.reduced > 0) Add(p, Collective::kReduceScatter, reduces, u.reduced);
}

// Every unit's bytes and where it runs, from the engine's own layout of it.
std::vector<UnitTraffic> UnitsOf(const CommModelInput& in, model::LlamaForCausalLM& m, bool flat) {
  const MemoryModelInput& l = in.layout;
  const auto plans = shard::PlanUnits(m, l.policy);
  std::map<int, bool> layer_trains;  // layer -> some unit in it trains
  std::vector<UnitTraffic> out;
  for (const auto& u : plans) {
    UnitTraffic t;
    t.root = u.path.empty();
    std::vector<int64_t> numels;
    for (const auto& n : u.params) {
      numels.push_back(n.slot->numel());
      t.trainable |= n.slot->requires_grad();
      if (flat) continue;
      const auto layout = shard::ComputeDim0Layout(n.slot->sizes().vec(), l.world_size);
      const c10::ScalarType stored = n.slot->scalar_type();
      t.gathered += layout.padded_numel() * l.world_size * Size(l.param_dtype.value_or(stored));
      if (n.slot->requires_grad()) t.reduced += layout.padded_numel() * l.world_size * Size(in.reduce_dtype.value_or(stored));
    }
    if (flat && !u.params.empty()) {
      const c10::ScalarType stored = u.params.front().slot->scalar_type();
      const int64_t padded = shard::ComputeFlatLayout(numels, Size(stored), l.use_orig_params, l.world_size).padded_numel(l.world_size);
      t.gathered = padded * Size(l.param_dtype.value_or(stored));
      t.reduced = padded * Size(in.reduce_dtype.value_or(stored));
    }
    bool top = false;
    const int layer = LayerOf(u.path, &top);
    if (layer >= 0 && t.trainable) layer_trains[layer] = true;
    t.nested = layer >= 0 && !top;
    if (!u.params.empty()) out.push_back(t);
  }
  // Forward runs the embedding, then the layers in order: a layer's inputs need gradients when
  // the embedding or an earlier layer trains. (A unit nested inside a layer is taken as its
  // layer's: exact for one micro-batch, where it makes no difference.)
  const bool embedding_trains = m.model.embed_tokens.weight.requires_grad();
  size_t i = 0;
  for (const auto& u : plans) {
    if (u.params.empty()) continue;
    bool top = false;
    const int layer = LayerOf(u.path, &top);
    bool before = embedding_trains;
    for (const auto& [k, trains] : layer_trains) before |= k < layer && trains;
    out[i++].inputs_need_grad = !u.path.empty() && before;
  }
  return out;
}

}  // namespace

double CommPrediction::wire_bytes(int world_size) const {
  if (world_size < 2) return 0;
  const double share = static_cast<double>(world_size - 1) / world_size;
  return share * ((*this)[Collective::kAllGather].bytes + (*this)[Collective::kReduceScatter].bytes +
                  2.0 * (*this)[Collective::kAllReduce].bytes + (*this)[Collective::kBroadcast].bytes);
}

CommPrediction PredictComm(const CommModelInput& in) {
  CommPrediction p;
  const MemoryModelInput& l = in.layout;
  if (l.world_size < 2) return p;  // one CPU rank talks to nobody
  model::LlamaForCausalLM m(l.config, l.lora, at::TensorOptions().device(at::kMeta));
  model::ApplyStorageDtypes(m, l.storage, l.checkpoint.get());
  switch (l.engine) {
    case shard::EngineKind::kFlat:
    case shard::EngineKind::kPerParam: {
      const bool flat = l.engine == shard::EngineKind::kFlat;
      for (const UnitTraffic& u : UnitsOf(in, m, flat)) {
        AddUnit(p, in, u, flat);
        if (!flat && u.nested && in.micro_batches > 1) p.exact = false;
      }
      break;
    }
    case shard::EngineKind::kReference: {  // one all-reduce of every trainable gradient, after the last micro-batch
      int64_t bytes = 0;
      for (auto& t : m.named_parameters()) {
        if (t.slot->requires_grad()) bytes += t.slot->numel() * Size(t.slot->scalar_type());
      }
      if (bytes > 0) Add(p, Collective::kAllReduce, 1, bytes);
      break;
    }
    // No default: a new engine kind fails to compile here (-Wswitch) until it is predicted.
  }
  Add(p, Collective::kAllReduce, 1, 4);  // the step's loss (fp32), averaged over ranks
  const bool sharded = l.engine == shard::EngineKind::kFlat || l.engine == shard::EngineKind::kPerParam;
  if (in.clip_grad_norm && sharded) Add(p, Collective::kAllReduce, 1, 8);  // the squared norm (fp64)
  return p;
}

Roofline EstimateStep(const CommPrediction& comm, int world_size, double flops_per_step_per_rank, const Links& links) {
  Roofline r;
  const double gbps = world_size > links.gpus_per_node ? std::min(links.inter_node_gbps, links.intra_node_gbps)
                                                       : links.intra_node_gbps;
  r.comm_seconds = comm.wire_bytes(world_size) * 8 / (gbps * 1e9);
  r.compute_seconds = flops_per_step_per_rank / (links.achieved_tflops * 1e12);
  r.exposed_seconds = std::max(0.0, r.comm_seconds - r.compute_seconds);
  return r;
}

}  // namespace shardbench::memory
