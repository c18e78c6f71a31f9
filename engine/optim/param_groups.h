// Parameter groups the way fine-tuning recipes build them: weight decay on matrices, none on
// norms (1-D tensors) when asked. Only trainable parameters are included.
#pragma once

#include "engine/model/module.h"
#include "engine/optim/adamw.h"

namespace shardbench::optim {

std::vector<ParamGroup> MakeParamGroups(model::Module& model, double lr, double weight_decay,
                                        bool no_decay_on_norms);

}  // namespace shardbench::optim
