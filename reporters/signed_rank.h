// Wilcoxon's signed-rank test over paired differences: the gate's test when both sides' launches
// ran side by side, round by round (ci/ab.sh interleaves them; `compare --paired`, or a policy
// rule's `test: signed_rank`). Pairing cancels what the runner's speed does between rounds: on
// the CI VM it cut the spread a test faces by about a quarter and caught a 10% slowdown of smoke
// at world size 2 19/20 with 20 launches a side where the unpaired test caught it 10/20 (README
// "Gate quality"). Deterministic, as reporters/significance.h.
#pragma once

#include <vector>

namespace shardbench {

struct SignedRankResult {
  double w_plus = 0;   // the sum of the ranks of the positive differences
  size_t pairs = 0;    // differences that were not 0 (zeros are dropped, Wilcoxon's way)
  double p_value = 1;  // two-sided
  bool exact = false;  // exact null distribution (no ties, at most 25 pairs) or normal approximation
};

// Two-sided test that `differences` centre on 0. Exact when no two |differences| tie and at
// most 25 remain; otherwise the normal approximation with tie and continuity corrections
// (scipy.stats.wilcoxon's "approx" method with zero_method="wilcox", correction=True).
SignedRankResult WilcoxonSignedRank(const std::vector<double>& differences);

// The Hodges-Lehmann estimate of the differences' centre: the median of every pairwise mean
// (x_i + x_j) / 2, i <= j. The signed-rank test's own estimator: its sign agrees with the test's
// direction where the plain median of the differences may not (many small gains, fewer large losses).
double HodgesLehmann(const std::vector<double>& differences);

// The smallest two-sided p-value the exact test can give with n pairs: 2 / 2^n.
double SmallestSignedRankP(size_t n);

}  // namespace shardbench
