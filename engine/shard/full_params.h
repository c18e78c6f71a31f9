// Both sharding engines gather full parameters unit by unit (post-order); callers want them in
// the model's order. One place puts them there.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/llama.h"

namespace shardbench::shard {

using FullParamFn = std::function<void(const std::string&, const at::Tensor&)>;

// Collective when `for_each_full_param` is: every full parameter, with its name, in the model's order.
std::vector<std::pair<std::string, at::Tensor>> GatherInModelOrder(
    model::LlamaForCausalLM& model, const std::function<void(const FullParamFn&)>& for_each_full_param);

}  // namespace shardbench::shard
