#include "engine/profile/interval_set.h"

#include <algorithm>

namespace shardbench::profile {

std::vector<Interval> Union(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> out;
  for (const auto& s : intervals) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

int64_t Length(const std::vector<Interval>& set) {
  int64_t n = 0;
  for (const auto& s : set) n += s.second - s.first;
  return n;
}

int64_t Intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return n;
}

std::vector<Interval> Difference(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval rest : a) {
    while (j < b.size() && b[j].second <= rest.first) ++j;  // removals wholly before it
    for (size_t k = j; k < b.size() && b[k].first < rest.second; ++k) {
      if (b[k].first > rest.first) out.push_back({rest.first, b[k].first});
      rest.first = std::max(rest.first, b[k].second);
    }
    if (rest.second > rest.first) out.push_back(rest);
  }
  return out;
}

}  // namespace shardbench::profile
