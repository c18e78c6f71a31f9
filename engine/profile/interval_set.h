// Time intervals as sets: a union of [begin, end) spans, its length, and the length two unions
// share. The arithmetic behind every overlap figure (GPU kernels, kernel_overlap.h; CPU spans,
// span_overlap.h), written once.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace shardbench::profile {

using Interval = std::pair<int64_t, int64_t>;  // [begin, end), any time unit

// Sorted, disjoint union of the intervals (empty and reversed ones dropped).
std::vector<Interval> Union(std::vector<Interval> intervals);
// Total length of a sorted disjoint union.
int64_t Length(const std::vector<Interval>& set);
// Total length of the intersection of two sorted disjoint unions.
int64_t Intersection(const std::vector<Interval>& a, const std::vector<Interval>& b);
// The parts of sorted disjoint union `a` outside sorted disjoint union `b` (sorted, disjoint).
std::vector<Interval> Difference(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace shardbench::profile
