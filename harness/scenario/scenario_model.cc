#include "harness/scenario/scenario_model.h"

#include "engine/model/synthetic_data.h"
#include "engine/common/path_checks.h"
#include "engine/model/token_file_data.h"

#include <filesystem>

#include "engine/common/error.h"

namespace shardbench {

model::LlamaConfig ScenarioModelConfig(const Scenario& s) {
  const std::string src = s.source.empty() ? "scenario '" + s.name + "'" : s.source;
  if (IsDirectory(s.model)) {
    if (s.model_shape.any()) {
      throw InputError(src + ": model_shape reshapes a named config; '" + s.model +
                       "' is a checkpoint directory whose weights fix the shapes");
    }
    const std::filesystem::path dir(s.model);
    if (std::filesystem::exists(dir / ".metadata") && !std::filesystem::exists(dir / "config.json")) {
      // A torch.distributed.checkpoint (DCP) directory, e.g. the peer's SHARDED checkpoint: its
      // index is a pickled Python object, which shardbench does not unpickle.
      throw InputError(src + ": model '" + s.model + "' is a torch.distributed.checkpoint (DCP) directory, not a "
                       "Hugging Face one (config.json + safetensors): shardbench does not read DCP's pickled "
                       ".metadata; save checkpoint.type=full to share weights between engines, or convert with "
                       "torch.distributed.checkpoint.format_utils");
    }
    return model::LoadHfLlamaConfig((dir / "config.json").string());
  }
  model::LlamaConfig c = model::NamedLlamaConfig(s.model);
  const ModelShape& m = s.model_shape;
  if (!m.any()) return c;
  if (m.num_hidden_layers) c.num_hidden_layers = m.num_hidden_layers;
  if (m.hidden_size) c.hidden_size = m.hidden_size;
  if (m.intermediate_size) c.intermediate_size = m.intermediate_size;
  if (m.num_attention_heads) c.num_attention_heads = m.num_attention_heads;
  if (m.num_key_value_heads) c.num_key_value_heads = m.num_key_value_heads;
  if (m.vocab_size) c.vocab_size = m.vocab_size;
  c.name = s.model + " (reshaped)";
  c.validate(src + ": model_shape");
  return c;
}

std::unique_ptr<model::DataSource> ScenarioData(const Scenario& s, int64_t vocab_size) {
  if (s.data.source == DataSource::kTokens) {
    return std::make_unique<model::TokenFileData>(s.data.path, s.data.token_dtype, s.train.seed, vocab_size, s.train.seq_len);
  }
  return std::make_unique<model::SyntheticData>(s.train.seed, vocab_size, s.train.seq_len);
}

}  // namespace shardbench
