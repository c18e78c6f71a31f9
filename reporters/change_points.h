// Change points in a metric's nightly series: E-divisive means (Matteson & James, 2014, the
// method behind MongoDB's and Otava's performance CI) with a deterministic permutation test.
//
// For a candidate split t of x[0..n), the statistic is
//   Q(t) = t (n - t) / n * (2 * mean|a - b| - mean|a - a'| - mean|b - b'|)
// over a in x[0..t), b in x[t..n) (the energy distance between the two sides). The best split
// is significant when fewer than `alpha` of `permutations` random reorderings of the series
// (a fixed-seed generator: the same series always gives the same answer) reach its Q; each
// side is then searched again (binary segmentation) until nothing significant is left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardbench {

struct ChangePoint {
  size_t index = 0;          // the first point after the shift
  double before = 0, after = 0;  // means of the segments on either side (within the enclosing segment)
  double p_value = 1;
  double statistic = 0;
};

struct ChangePointOptions {
  double alpha = 0.05;
  int permutations = 199;
  size_t min_segment = 3;    // points each side of a split must have
  uint64_t seed = 0xE1D1ULL;
};

// Sorted by index.
std::vector<ChangePoint> DetectChangePoints(const std::vector<double>& series, const ChangePointOptions& options = {});

}  // namespace shardbench
