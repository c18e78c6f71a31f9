#include "engine/shard/full_params.h"

#include <map>

namespace shardbench::shard {

std::vector<std::pair<std::string, at::Tensor>> GatherInModelOrder(
    model::LlamaForCausalLM& model, const std::function<void(const FullParamFn&)>& for_each_full_param) {
  std::map<std::string, at::Tensor> by_name;
  for_each_full_param([&](const std::string& name, const at::Tensor& t) { by_name[name] = t; });
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto& p : model.named_parameters()) out.push_back({p.name, by_name.at(p.name)});
  return out;
}

}  // namespace shardbench::shard
