// The release matrix's rules on fixed results: what each side recorded, what changed between
// neighbours, release order, and bisection on a planted transition (no environment is built).
#include "reporters/release_matrix.h"

#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "tests/reporters/compare_fixtures.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

nlohmann::json PeerResult(const std::string& name, const std::string& torch, const std::string& peft,
                          double grad_bytes) {
  nlohmann::json r =
      Result(name, {Exact("grad_bytes", {grad_bytes, grad_bytes - 64}), Sampled("tokens_per_s", "higher", {1, 2, 3})});
  r["provenance"] = {
      {"peer", {{"torch", torch}, {"transformers", "4.57.6"}, {"peft", peft}, {"accelerate", "1.16.0"}}}};
  return r;
}

TEST(ReleaseMatrix, RecordedReleasesAreWhatEachSideImported) {
  const ResultSet a = Set({PeerResult("i1", "2.10.0+cu128", "0.17.1", 100), PeerResult("i2", "2.10.0", "0.17.1", 100)});
  const ResultSet b =
      Set({PeerResult("i1", "2.11.0+cu130", "0.17.1", 100), PeerResult("i2", "2.11.0+cu130", "0.18.1", 100)});
  const auto ra = RecordedReleases(a), rb = RecordedReleases(b);
  EXPECT_EQ(ra.at("torch"), "2.10.0");        // local tags are the same release
  EXPECT_EQ(rb.at("peft"), "0.17.1|0.18.1");  // instances that disagree are shown, never one picked
  EXPECT_EQ(ReleaseChanges(ra, rb), "torch 2.10.0 -> 2.11.0, peft 0.17.1 -> 0.17.1|0.18.1");
  EXPECT_EQ(ReleaseChanges(ra, ra), "");  // the same releases: not a version comparison
}

TEST(ReleaseMatrix, FingerprintsHoldColourExactMetricsAndWarningsNotSampledOnes) {
  nlohmann::json failed = PeerResult("i1", "2.11.0", "0.18.1", 200);
  failed["status"] = "failed";
  failed["peer_warnings"] = {"FSDP will gather the full gradient"};
  const Fingerprint before = FingerprintOf(Set({PeerResult("i1", "2.10.0", "0.18.1", 100)}));
  const Fingerprint after = FingerprintOf(Set({failed}));
  EXPECT_EQ(before.at("i1").exact.at("grad_bytes"), 100);  // the largest rank's
  EXPECT_FALSE(before.at("i1").exact.count("tokens_per_s"));
  EXPECT_EQ(FingerprintChanges(before, after),
            (std::vector<std::string>{"i1: colour green -> red", "i1: grad_bytes 100 -> 200",
                                      "i1: warnings 0 -> 1 (first now: FSDP will gather the full gradient)"}));
  EXPECT_TRUE(FingerprintChanges(before, before).empty());
}

TEST(ReleaseMatrix, ReleasesOrderNumericallyAndRangesComeFromWhatIsThere) {
  EXPECT_TRUE(ReleaseLess("0.9.1", "0.10.0"));
  EXPECT_TRUE(ReleaseLess("2.10.0", "2.10.0.post1"));
  EXPECT_FALSE(ReleaseLess("2.10.0", "2.10.0"));
  EXPECT_TRUE(ReleaseLess("1.0.0rc1", "1.0.0rc2"));
  const std::vector<std::string> wheelhouse = {"0.18.1", "0.15.2", "0.17.1", "0.16.0", "0.17.0", "0.9.0"};
  EXPECT_EQ(ReleasesBetween(wheelhouse, "peft", "0.15.2", "0.18.1"),
            (std::vector<std::string>{"0.15.2", "0.16.0", "0.17.0", "0.17.1", "0.18.1"}));
  EXPECT_NE(testing::InputErrorOf([&] {
              ReleasesBetween(wheelhouse, "peft", "0.14.0", "0.18.1");
            }).find("release 0.14.0 is not in the wheelhouse (it has: 0.9.0, 0.15.2, 0.16.0, 0.17.0, 0.17.1, 0.18.1"),
            std::string::npos);
  EXPECT_NE(
      testing::InputErrorOf([&] { ReleasesBetween(wheelhouse, "peft", "0.18.1", "0.15.2"); }).find("is not older"),
      std::string::npos);
}

// A transition planted at 0.17.0 among 9 releases: found in about log2(9) + the two ends runs,
// with what changed; ends that agree end the search after two runs.
TEST(ReleaseMatrix, BisectFindsThePlantedTransitionInLogarithmicRuns) {
  const std::vector<std::string> releases = {"0.13.0", "0.13.2", "0.14.0", "0.15.0", "0.15.2",
                                             "0.16.0", "0.17.0", "0.17.1", "0.18.1"};
  auto run = [](const std::string& release) {
    const bool after = !ReleaseLess(release, "0.17.0");
    return FingerprintOf(
        Set({PeerResult("peers_tiny[engine=torch_fsdp1]", "2.11.0", release, after ? 261632 : 74752)}));
  };
  const BisectResult found = Bisect(releases, run);
  ASSERT_TRUE(found.first_changed);
  EXPECT_EQ(releases[*found.first_changed], "0.17.0");
  EXPECT_EQ(found.changes, (std::vector<std::string>{"peers_tiny[engine=torch_fsdp1]: grad_bytes 74752 -> 261632"}));
  EXPECT_LE(found.tried.size(), 2u + 3u);  // the ends, then ceil(log2(8))
  EXPECT_EQ(found.tried[0], "0.13.0");     // the ends are compared before anything else
  EXPECT_EQ(found.tried[1], "0.18.1");
  const BisectResult none = Bisect(releases, [](const std::string&) { return Fingerprint{}; });
  EXPECT_FALSE(none.first_changed);
  EXPECT_EQ(none.tried.size(), 2u);
}

}  // namespace
}  // namespace shardbench
