// The scenario's model as the runner builds it: eagerly (every rank allocates and initialises
// or loads the whole model, then the engine shards it) or on the meta device (nothing
// allocated; the engine materialises only each rank's shard, from the modules' init or the
// checkpoint's rows), the torchtune/FSDP2 recipe. Either way each parameter is stored in the
// dtype engine/model/storage_dtype.h gives it (scenario model_dtype and upcast).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/model/hf_weights.h"
#include "engine/model/llama.h"
#include "engine/model/param_init.h"
#include "engine/model/storage_dtype.h"
#include "harness/scenario/scenario.h"

namespace shardbench {

struct LoadedParam {
  c10::ScalarType dtype;  // as loaded, before any upcast
  int64_t numel;          // whole parameter
};

struct BuiltModel {
  std::unique_ptr<model::LlamaForCausalLM> model;
  model::Materialization materialize;  // meta init: how the engine fills its shard
  std::shared_ptr<model::LoadReport> load = std::make_shared<model::LoadReport>();  // checkpoint reads
  std::map<std::string, LoadedParam> loaded;  // each parameter, by name
};

model::StoragePolicy StoragePolicyFor(const Scenario& s);

BuiltModel BuildScenarioModel(const Scenario& s, uint64_t seed, const at::Device& device);

}  // namespace shardbench
