#include "engine/checkpoint/full_state_dict.h"

#include <unistd.h>

#include <filesystem>

#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"

namespace shardbench::checkpoint {
namespace fs = std::filesystem;

SaveReport SaveFullStateDict(model::LlamaForCausalLM& model, shard::FlatShardedModel* flat, comm::Communicator* comm,
                             const std::string& dir) {
  const int rank = comm ? comm->rank() : 0;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  if (flat) {
    // Collective on every rank; only rank 0 keeps the gathered tensors.
    flat->for_each_full_param([&](const std::string& name, const at::Tensor& t) {
      if (rank == 0) tensors.push_back({name, t.detach().cpu()});
    });
  } else if (rank == 0) {
    for (auto& p : model.named_parameters()) tensors.push_back({p.name, p.slot->detach().cpu()});
  }
  SaveReport report;
  if (rank == 0) {
    // HF order (the model's), not the units' post-order.
    std::vector<std::pair<std::string, at::Tensor>> ordered;
    for (auto& p : model.named_parameters()) {
      for (auto& t : tensors) {
        if (t.first == p.name) ordered.push_back(t);
      }
    }
    if (ordered.size() != tensors.size()) throw InfraError("full state dict: gathered names do not match the model's");
    const fs::path target(dir);
    const fs::path tmp = target.string() + ".tmp." + std::to_string(getpid());
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    model::WriteHfLlamaConfig(model.config(), (tmp / "config.json").string());
    WriteSafetensors((tmp / "model.safetensors").string(), ordered, {{"format", "pt"}});
    std::error_code ec;
    if (fs::exists(target)) fs::rename(target, target.string() + ".old." + std::to_string(getpid()), ec);
    fs::rename(tmp, target, ec);
    if (ec) throw InfraError("full state dict: cannot move " + tmp.string() + " to " + dir + ": " + ec.message());
    fs::remove_all(target.string() + ".old." + std::to_string(getpid()));
    for (auto& t : ordered) {
      report.tensors += 1;
      report.bytes += t.second.nbytes();
    }
  }
  if (comm) comm->barrier();  // the directory exists for everyone once this returns
  return report;
}

}  // namespace shardbench::checkpoint
