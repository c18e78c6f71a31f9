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

namespace {

// With model_dtype auto every frozen weight keeps its file's dtype, and two of them that differ
// meet in one matmul or attention call (an "internal error" from SDPA before). Norms (1-D) may
// differ: they are applied elementwise. A model directory of mixed weights is refused by name.
void RefuseMixedFrozenWeights(Module& meta_model, const StoragePolicy& policy, const checkpoint::HfCheckpoint& ckpt) {
  if (policy.model_dtype) return;  // one dtype for all, whatever the files hold
  std::string first_name;
  c10::ScalarType first = c10::ScalarType::Undefined;
  for (auto& p : meta_model.named_parameters()) {
    if (p.slot->requires_grad() || p.slot->dim() < 2 || !ckpt.contains(p.name)) continue;
    const c10::ScalarType dtype = ckpt.info(p.name).dtype;
    if (first_name.empty()) {
      first_name = p.name, first = dtype;
    } else if (dtype != first) {
      throw InputError(ckpt.dir() + ": weights are stored in different dtypes ('" + first_name + "' " +
                       c10::toString(first) + ", '" + p.name + "' " + c10::toString(dtype) +
                       "): with model_dtype auto each keeps its own and they would meet in one matmul; set model_dtype "
                       "to load them all in one");
    }
  }
}

}  // namespace

void ApplyStorageDtypes(Module& meta_model, const StoragePolicy& policy, const checkpoint::HfCheckpoint* ckpt) {
  if (ckpt) RefuseMixedFrozenWeights(meta_model, policy, *ckpt);
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
