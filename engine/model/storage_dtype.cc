#include "engine/model/storage_dtype.h"

#include <ATen/ATen.h>

#include "engine/common/error.h"
#include "engine/shard/mixed_precision.h"

namespace shardbench::model {

c10::ScalarType LoadedDtype(const StoragePolicy& policy, std::optional<c10::ScalarType> checkpoint_dtype) {
  if (policy.model_dtype) return *policy.model_dtype;
  return checkpoint_dtype.value_or(at::kFloat);
}

c10::ScalarType StorageDtype(const StoragePolicy& policy, bool trainable, std::optional<c10::ScalarType> checkpoint_dtype) {
  if (trainable || policy.upcast_all) return at::kFloat;
  return LoadedDtype(policy, checkpoint_dtype);
}

void ApplyStorageDtypes(Module& meta_model, const StoragePolicy& policy, const checkpoint::HfCheckpoint* ckpt) {
  for (auto& p : meta_model.named_parameters()) {
    if (!p.slot->is_meta()) throw InfraError("storage dtypes are chosen on the meta device; '" + p.name + "' is not");
    std::optional<c10::ScalarType> from_file;
    if (ckpt && ckpt->contains(p.name)) from_file = ckpt->info(p.name).dtype;
    const bool trainable = p.slot->requires_grad();
    const c10::ScalarType dtype = StorageDtype(policy, trainable, from_file);
    if (dtype != p.slot->scalar_type()) *p.slot = at::empty(p.slot->sizes(), p.slot->options().dtype(dtype)).requires_grad_(trainable);
  }
}

}  // namespace shardbench::model
