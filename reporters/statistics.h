// Summary statistics over repetition samples, kept apart from measurement (as in Google
// Benchmark's statistics.cc). Percentiles interpolate linearly between order statistics
// (numpy's default), so results compare with tools users already have.
#pragma once

#include <cstddef>
#include <vector>

namespace shardbench {

struct Summary {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0, mean = 0;
  size_t n = 0;
};

double Percentile(std::vector<double> samples, double q);  // q in [0, 100]
Summary Summarize(const std::vector<double>& samples);

}  // namespace shardbench
