#include "engine/optim/param_groups.h"

namespace shardbench::optim {
namespace {
bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool IsNormOrBias(const std::string& name) { return EndsWith(name, "norm.weight") || EndsWith(name, ".bias"); }

std::vector<ParamGroup> MakeParamGroups(const std::vector<model::NamedTensor>& params, double lr,
                                        double weight_decay, bool no_decay_on_norms) {
  ParamGroup decay{"decay", {}, lr, weight_decay};
  ParamGroup no_decay{"no_decay", {}, lr, 0.0};
  for (const auto& p : params) {
    if (!p.slot->requires_grad()) continue;
    (no_decay_on_norms && IsNormOrBias(p.name) ? no_decay : decay).params.push_back(*p.slot);
  }
  std::vector<ParamGroup> groups;
  if (!decay.params.empty()) groups.push_back(std::move(decay));
  if (!no_decay.params.empty()) groups.push_back(std::move(no_decay));
  return groups;
}

}  // namespace shardbench::optim
