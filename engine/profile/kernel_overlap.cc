#include "engine/profile/kernel_overlap.h"

#include <utility>

#include "engine/profile/interval_set.h"

namespace shardbench::profile {

bool IsCommunicationKernel(const std::string& name) {
  return name.rfind("nccl", 0) == 0 || name.rfind("Nccl", 0) == 0 || name.find("ncclDevKernel") != std::string::npos ||
         name.find("ncclKernel") != std::string::npos;
}

OverlapSummary SummarizeOverlap(const std::vector<KernelInterval>& kernels) {
  std::vector<Interval> comm, compute;
  for (const auto& k : kernels) (IsCommunicationKernel(k.name) ? comm : compute).push_back({k.start_ns, k.end_ns});
  const auto c = Union(std::move(comm)), x = Union(std::move(compute));
  OverlapSummary s;
  s.communication_ns = Length(c);
  s.compute_ns = Length(x);
  s.exposed_ns = s.communication_ns - Intersection(c, x);
  return s;
}

}  // namespace shardbench::profile
