#include "engine/comm/gather_strings.h"

#include <ATen/ATen.h>

namespace shardbench::comm {

std::vector<std::string> AllGatherStrings(Communicator* comm, const std::string& local) {
  if (!comm) return {local};
  const int ws = comm->world_size();
  const auto on = at::TensorOptions().device(comm->device());
  at::Tensor lengths = at::empty({ws}, on.dtype(at::kLong));
  comm->all_gather(lengths, at::full({1}, static_cast<int64_t>(local.size()), on.dtype(at::kLong)));
  lengths = lengths.cpu();
  std::vector<int64_t> counts(lengths.data_ptr<int64_t>(), lengths.data_ptr<int64_t>() + ws);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  at::Tensor mine = at::empty({static_cast<int64_t>(local.size())}, at::kByte);
  if (!local.empty()) std::memcpy(mine.data_ptr(), local.data(), local.size());
  at::Tensor all = at::empty({total}, on.dtype(at::kByte));
  comm->all_gather(all, mine.to(comm->device()), counts);
  all = all.cpu();
  std::vector<std::string> out;
  const char* p = static_cast<const char*>(all.data_ptr());
  for (int64_t c : counts) {
    out.emplace_back(p, static_cast<size_t>(c));
    p += c;
  }
  return out;
}

}  // namespace shardbench::comm
