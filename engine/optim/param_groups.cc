#include "engine/optim/param_groups.h"

namespace shardbench::optim {

std::vector<ParamGroup> MakeParamGroups(model::Module& model, double lr, double weight_decay,
                                        bool no_decay_on_norms) {
  ParamGroup decay{"decay", {}, lr, weight_decay};
  ParamGroup no_decay{"no_decay", {}, lr, 0.0};
  for (auto& p : model.named_parameters()) {
    if (!p.slot->requires_grad()) continue;
    const bool is_norm = p.slot->dim() <= 1;
    (no_decay_on_norms && is_norm ? no_decay : decay).params.push_back(*p.slot);
  }
  std::vector<ParamGroup> groups;
  if (!decay.params.empty()) groups.push_back(std::move(decay));
  if (!no_decay.params.empty()) groups.push_back(std::move(no_decay));
  return groups;
}

}  // namespace shardbench::optim
