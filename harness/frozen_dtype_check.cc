#include "harness/frozen_dtype_check.h"

#include <c10/util/Exception.h>

#include "engine/shard/mixed_precision.h"

namespace shardbench {

Check FrozenDtypeCheck(model::LlamaForCausalLM& model, const std::map<std::string, LoadedParam>& loaded) {
  int64_t frozen = 0, wider = 0, loaded_bytes = 0, held_bytes = 0;
  std::string example;
  for (auto& p : model.named_parameters()) {
    if (p.slot->requires_grad()) continue;
    const c10::ScalarType as_loaded = loaded.at(p.name).dtype, held = p.slot->scalar_type();
    // Whole-parameter bytes (not this rank's shard): the same figure on every rank.
    const int64_t numel = loaded.at(p.name).numel;
    ++frozen;
    loaded_bytes += numel * static_cast<int64_t>(c10::elementSize(as_loaded));
    held_bytes += numel * static_cast<int64_t>(c10::elementSize(held));
    if (held != as_loaded && wider++ == 0) {
      example = "'" + p.name + "' is " + shard::DtypeName(held) + ", loaded as " + shard::DtypeName(as_loaded);
    }
  }
  Check c{"frozen_dtype", wider == 0, ""};
  c.detail = std::to_string(frozen - wider) + " of " + std::to_string(frozen) + " frozen params held as loaded; " +
             "frozen bytes " + std::to_string(held_bytes) + " held vs " + std::to_string(loaded_bytes) + " as loaded" +
             (example.empty() ? "" : " (e.g. " + example + ")");
  return c;
}

}  // namespace shardbench
