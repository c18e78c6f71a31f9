#include "engine/shard/storage.h"

#include <c10/core/StorageImpl.h>

namespace shardbench::shard {

void FreeStorage(const at::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  if (s->nbytes() == 0) return;
  s->set_data_ptr_noswap(at::DataPtr(nullptr, t.device()));
  s->set_nbytes(0);
}

void AllocStorage(const at::Tensor& t, size_t nbytes) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  if (s->nbytes() == nbytes && (nbytes == 0 || s->data() != nullptr)) return;
  s->set_data_ptr_noswap(s->allocator()->allocate(nbytes));
  s->set_nbytes(nbytes);
}

bool StorageAllocated(const at::Tensor& t) { return t.storage().nbytes() > 0; }

}  // namespace shardbench::shard
