// Freeing and re-allocating a tensor's storage in place, keeping the TensorImpl (and every view
// and autograd-saved tensor that shares the storage) valid. This is how FSDP drops an unsharded
// buffer after forward and refills the same storage before backward: tensors saved for
// backward see the re-gathered data without being rebuilt.
#pragma once

#include <ATen/core/Tensor.h>

namespace shardbench::shard {

void FreeStorage(const at::Tensor& t);
// Allocates `nbytes` with the storage's own allocator (no-op if already that size).
void AllocStorage(const at::Tensor& t, size_t nbytes);
bool StorageAllocated(const at::Tensor& t);

}  // namespace shardbench::shard
