// The vectorised normal kernel (engine/model/normal_kernel.h): every build this CPU runs equals
// the scalar definition bit for bit, and its log and cos are as accurate as the exactness
// argument assumes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/counter_rng.h"
#include "engine/model/normal_kernel.h"
#include "engine/model/param_init.h"

namespace shardbench {
namespace {

std::vector<std::pair<std::string, model::NormalBlockFn>> Builds() {
  std::vector<std::pair<std::string, model::NormalBlockFn>> builds = {{"portable", &model::NormalBlockPortable}};
  if (model::NormalBlockAvx2()) builds.emplace_back("avx2", model::NormalBlockAvx2());
  return builds;
}

// Elements [first, first + n) the way FillInitRange takes them: the kernel, then the undecided
// ones by the definition. Returns how many were undecided.
int64_t Fill(model::NormalBlockFn block, const model::ParamInit& init, uint64_t key, uint64_t first, int64_t n,
             float* out) {
  int32_t undecided[model::kNormalBlock];
  int64_t total = 0;
  for (int64_t lo = 0; lo < n; lo += model::kNormalBlock) {
    const int64_t m = std::min(model::kNormalBlock, n - lo);
    const int64_t count = block(out + lo, m, key, first + lo, init.a, init.b, undecided);
    for (int64_t k = 0; k < count; ++k) {
      EXPECT_LT(undecided[k], m);
      out[lo + undecided[k]] = model::NormalElement(init, key, first + lo + undecided[k]);
    }
    total += count;
  }
  return total;
}

TEST(NormalKernel, EveryBuildEqualsTheScalarDefinitionBitForBit) {
  // Mean 0 (the kernel's cheaper check) and not; std 1 has the most float ties.
  const model::ParamInit inits[] = {{model::ParamInit::Kind::kNormal, 0.0, 0.02},
                                    {model::ParamInit::Kind::kNormal, 0.0, 1.0},
                                    {model::ParamInit::Kind::kNormal, 0.5, 1.0},
                                    {model::ParamInit::Kind::kNormal, -1.0, 1e-3}};
  for (const auto& [name, block] : Builds()) {
    for (const model::ParamInit& init : inits) {
      for (const uint64_t first : {uint64_t{0}, uint64_t{12345}, (uint64_t{1} << 33) + 7}) {
        // Whole blocks, and lengths that end inside a vector.
        for (const int64_t n : {int64_t{1} << 18, int64_t{1}, int64_t{3}, int64_t{5}, int64_t{511}}) {
          std::vector<float> got(static_cast<size_t>(n));
          const int64_t undecided = Fill(block, init, 0x5eed, first, n, got.data());
          int64_t differ = 0;
          for (int64_t j = 0; j < n; ++j) {
            const float want = model::NormalElement(init, 0x5eed, first + static_cast<uint64_t>(j));
            differ += std::memcmp(&want, &got[static_cast<size_t>(j)], sizeof(float)) != 0;
          }
          EXPECT_EQ(differ, 0) << name << ": normal(" << init.a << ", " << init.b << ") from " << first << ", "
                               << n << " elements";
          // The check sends few elements to the slow path (about 1 in 10^5 measured), but some.
          if (n == (int64_t{1} << 18)) {
            EXPECT_LT(undecided, n / 1000) << name;
            EXPECT_GT(undecided, 0) << name;
          }
        }
      }
    }
  }
}

TEST(NormalKernel, ElementsWhereTheMeanCancelsAreLeftToTheDefinition) {
  // b chosen per element so that a + b r c cancels to about 2^-36: d is then a float itself, and
  // an error of an ulp in the kernel's term makes it another float. The check must leave every
  // such element to NormalElement (it once let them through: d's low bits all zero).
  using model::counter_rng::kGolden;
  using model::counter_rng::Mix;
  using model::counter_rng::Open01;
  const uint64_t key = 0x5eed;
  for (const auto& [name, block] : Builds()) {
    int64_t tried = 0, differ = 0;
    for (uint64_t i = 0; i < 2000; ++i) {
      const double u1 = Open01(Mix(key + (2 * i + 1) * kGolden)), u2 = Open01(Mix(key + (2 * i + 2) * kGolden));
      const double rc = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      if (std::fabs(rc) < 1e-3) continue;
      const model::ParamInit init{model::ParamInit::Kind::kNormal, 0.5, -0.5 / rc * (1 + 0x1p-35)};
      float got;
      Fill(block, init, key, i, 1, &got);
      const float want = model::NormalElement(init, key, i);
      ASSERT_LT(std::fabs(want), 1e-8) << "the mean did not cancel";
      differ += std::memcmp(&want, &got, sizeof(float)) != 0;
      ++tried;
    }
    EXPECT_EQ(differ, 0) << name << ", of " << tried;
  }
}

TEST(NormalKernel, LogAndCosAreWithin2ToTheMinus48OfTheCLibrary) {
  // The exactness argument allows 2^-40 of |a| + |b r c| in all; the kernel's log and cos are
  // each measured here against the C library's (itself within an ulp, 2^-52).
  using model::counter_rng::Mix;
  using model::counter_rng::Open01;
  std::vector<double> u, w;
  for (uint64_t i = 0; i < (uint64_t{1} << 20); ++i) {
    u.push_back(Open01(Mix(i)));
    w.push_back(0x1.921fb54442d18p+2 * Open01(Mix(~i)));
  }
  // The ends of the ranges, the kernel's sqrt(2) split, and arguments next to cos's zeros.
  for (const double x : {0x1p-54, 0x1p-53, 1.0 - 0x1p-53, 0x1.6a09e667f3bcdp-1, 0x1.6a09e667f3bcdp-1 * 2 - 1,
                         0.5, 0.25}) {
    u.push_back(x), w.push_back(1.0);
  }
  for (const double zero : {M_PI / 2, 3 * M_PI / 2}) {
    for (double x = zero - 0x1p-20; x < zero + 0x1p-20; x += 0x1p-30) u.push_back(0.5), w.push_back(x);
  }
  for (const double x : {0x1p-52, M_PI, M_PI + 0x1p-51, 2 * M_PI - 0x1p-50, 2 * M_PI}) u.push_back(0.5), w.push_back(x);
  while (u.size() % 4 != 0) u.push_back(0.5), w.push_back(1.0);

  std::vector<std::pair<std::string, model::NormalPartsFn>> builds = {{"portable", &model::NormalPartsPortable}};
  if (model::NormalPartsAvx2()) builds.emplace_back("avx2", model::NormalPartsAvx2());
  for (const auto& [name, parts] : builds) {
    std::vector<double> log_u(u.size()), cos_w(u.size());
    parts(u.data(), w.data(), static_cast<int64_t>(u.size()), log_u.data(), cos_w.data());
    double log_error = 0, cos_error = 0;
    int64_t near_zero = 0;
    for (size_t j = 0; j < u.size(); ++j) {
      const double want_log = std::log(u[j]), want_cos = std::cos(w[j]);
      if (want_log != 0) log_error = std::max(log_error, std::fabs(log_u[j] - want_log) / std::fabs(want_log));
      EXPECT_EQ(want_log == 0, log_u[j] == 0) << u[j];
      // Within 2^-24 of a zero of cos the kernel reports the element undecided.
      if (std::fabs(cos_w[j]) < 0x1p-24) {
        ++near_zero;
        continue;
      }
      cos_error = std::max(cos_error, std::fabs(cos_w[j] - want_cos) / std::fabs(want_cos));
    }
    EXPECT_LE(log_error, 0x1p-48) << name;
    EXPECT_LE(cos_error, 0x1p-48) << name;
    EXPECT_GT(near_zero, 0) << name;  // the arguments next to the zeros did reach them
    RecordProperty(name + "_log_max_relative_error_log2", std::to_string(std::log2(log_error)));
    RecordProperty(name + "_cos_max_relative_error_log2", std::to_string(std::log2(cos_error)));
  }
}

}  // namespace
}  // namespace shardbench
