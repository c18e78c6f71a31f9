// What a comparison could have caught: the minimum detectable effect (MDE) of the gate's test,
// from the launch-to-launch spread both sides showed and the number of samples on each.
//
// A green light is only worth the changes it would have turned red. With one sample kind (by
// default one median per launch) and a spread s of the natural log of those samples (pooled over
// both sides, each around its own mean), a change of the median by a factor exp(d) is detected
// with probability `power` when
//
//   Mann-Whitney U:  d = (t[df, 1 - a/2] + t[df, power]) * s * sqrt(1/m + 1/n) * sqrt(pi/3)
//   bootstrap:       d = (z[1 - a/2] + z[power]) * s * sqrt(pi/2) * sqrt(1/m + 1/n)
//   signed rank:     d = (t[n-1, 1 - a/2] + t[n-1, power]) * s * sqrt(2/n) * sqrt(pi/3), n pairs and s
//                    the paired log differences' spread over sqrt(2) (reporters/signed_rank.h)
//
// The first is the two-sample t-test's power equation with Student quantiles (df = m + n - 2)
// scaled by the Mann-Whitney test's asymptotic relative efficiency against the t-test on normal
// data (3/pi); the second uses the sample median's standard error (sqrt(pi/2) s / sqrt(n)). Two
// more limits apply, whatever the spread:
//  - with few samples the exact Mann-Whitney test cannot reach `a` at all (its smallest
//    two-sided p-value is 2 / C(m + n, m): 0.1 at 3 vs 3): the MDE is then infinite;
//  - the gate also requires the observed change to reach `min_effect`, so the MDE is at least
//    log(1 + min_effect) plus `power`'s quantile of the observed median ratio's spread.
// The MDE is reported as a relative change, exp(d) - 1. With `samples: steps` the samples are
// steps of a few launches, not independent launches: their spread misses the launch-to-launch
// part, and the MDE is as optimistic as the test itself is then. tests/reporters/compare_test.cc checks these
// against simulation of the very test the gate runs; ci/gate-quality.sh against real launches.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace shardbench {

struct PowerTest {
  std::string test = "mann_whitney";  // mann_whitney | bootstrap | signed_rank (m == n pairs)
  double alpha = 0.05;                // two-sided, per test (after any multiple-testing correction)
  double min_effect = 0;              // the smallest relative change the gate flags
  double power = 0.8;
};

// Standard normal quantile (inverse CDF) for p in (0, 1).
double NormalQuantile(double p);
// Student's t quantile with `df` degrees of freedom (Cornish-Fisher expansion around the normal
// quantile: within 1e-3 of the exact value for df >= 4).
double StudentQuantile(double p, double df);

// Spread of log(samples) pooled over both sides, each around its own mean (0 when every value
// on a side is equal or a side has fewer than two samples and the other none to pool with).
double PooledLogSpread(const std::vector<double>& base, const std::vector<double>& current);

// The smallest relative change (0.14 = 14%) the test detects with `t.power` given the log spread
// and m, n samples per side; +infinity when no outcome can reach significance.
double MinimumDetectableEffect(double log_spread, size_t m, size_t n, const PowerTest& t);

// The samples per side (equal on both) at which the MDE reaches `target`, searching up to
// `limit`; nullopt when even `limit` does not.
std::optional<size_t> SamplesForMde(double log_spread, double target, const PowerTest& t, size_t limit = 1000);

}  // namespace shardbench
