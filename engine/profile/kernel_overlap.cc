#include "engine/profile/kernel_overlap.h"

#include <algorithm>
#include <utility>

namespace shardbench::profile {
namespace {

using Span = std::pair<int64_t, int64_t>;

// Sorted, disjoint union of the spans.
std::vector<Span> Union(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Span> out;
  for (const auto& s : spans) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

int64_t Length(const std::vector<Span>& spans) {
  int64_t n = 0;
  for (const auto& s : spans) n += s.second - s.first;
  return n;
}

// Total length of the intersection of two sorted disjoint unions.
int64_t Intersection(const std::vector<Span>& a, const std::vector<Span>& b) {
  int64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return n;
}

}  // namespace

bool IsCommunicationKernel(const std::string& name) {
  return name.rfind("nccl", 0) == 0 || name.rfind("Nccl", 0) == 0 || name.find("ncclDevKernel") != std::string::npos ||
         name.find("ncclKernel") != std::string::npos;
}

OverlapSummary SummarizeOverlap(const std::vector<KernelInterval>& kernels) {
  std::vector<Span> comm, compute;
  for (const auto& k : kernels) (IsCommunicationKernel(k.name) ? comm : compute).push_back({k.start_ns, k.end_ns});
  const auto c = Union(std::move(comm)), x = Union(std::move(compute));
  OverlapSummary s;
  s.communication_ns = Length(c);
  s.compute_ns = Length(x);
  s.exposed_ns = s.communication_ns - Intersection(c, x);
  return s;
}

}  // namespace shardbench::profile
