// The model config a scenario asks for: a named config or a checkpoint directory's config.json,
// reshaped by `model_shape` (named configs only); and the data source it trains on.
#pragma once

#include <memory>

#include "engine/model/data_source.h"
#include "engine/model/llama_config.h"
#include "harness/scenario/scenario.h"

namespace shardbench {

// InputError naming the scenario and the field for an unknown name, a reshaped checkpoint
// directory, or inconsistent shapes (e.g. hidden_size not a multiple of the heads).
model::LlamaConfig ScenarioModelConfig(const Scenario& s);

// The scenario's batches (data.source): synthetic, or cut from data.path.
std::unique_ptr<model::DataSource> ScenarioData(const Scenario& s, int64_t vocab_size);

}  // namespace shardbench
