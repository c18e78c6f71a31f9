// Parameter groups the way fine-tuning recipes build them: weight decay on weights, none on
// norms and biases when asked. Norms are recognised by name (HF's "...norm.weight"), not by
// shape, because a sharded parameter is 1-D whatever it was. Only trainable tensors count.
#pragma once

#include "engine/model/module.h"
#include "engine/optim/adamw.h"

namespace shardbench::optim {

bool IsNormOrBias(const std::string& name);

std::vector<ParamGroup> MakeParamGroups(const std::vector<model::NamedTensor>& params, double lr,
                                        double weight_decay, bool no_decay_on_norms);
inline std::vector<ParamGroup> MakeParamGroups(model::Module& model, double lr, double weight_decay,
                                               bool no_decay_on_norms) {
  return MakeParamGroups(model.named_parameters(), lr, weight_decay, no_decay_on_norms);
}

}  // namespace shardbench::optim
