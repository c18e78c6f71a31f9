// A restarted job continues an instance from what its earlier attempt left beside the
// checkpoint: the resume point comes back bit for bit (NaN losses and unrounded timings
// included), a damaged one is an infrastructure error naming its file, and the earlier
// attempt's part of the measured window joins the resumed one's (counts add, peaks take the
// larger).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/common/error.h"
#include "harness/resume_point.h"

namespace shardbench {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/resume_point_test/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir + "/checkpoint";
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

TEST(ResumePoint, ComesBackBitForBit) {
  const std::string dir = FreshDir("roundtrip");
  EXPECT_FALSE(ReadResumePoint(dir, 1).has_value());
  RankRecord rec(3);
  rec.loss = {5.5, std::nan(""), 0.1 + 0.2};
  rec.step_seconds = {1e-9, 0.123456789012345678, 3};
  ResumePoint point{"name: x\n", 2, rec.pack(), {}, {{"w", 1, 2, 3, 4, true}}};
  point.save.save_seconds = 0.5;
  point.save.bytes_total = 4096;
  WriteResumePoint(dir, 1, point);
  const auto back = ReadResumePoint(dir, 1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->scenario, "name: x\n");
  EXPECT_EQ(back->steps_done, 2);
  ASSERT_EQ(back->record.size(), point.record.size());
  for (size_t i = 0; i < point.record.size(); ++i) EXPECT_TRUE(SameBits(back->record[i], point.record[i])) << i;
  EXPECT_EQ(back->save.save_seconds, 0.5);
  EXPECT_EQ(back->save.bytes_total, 4096);
  EXPECT_EQ(back->save.load_seconds, -1);
  ASSERT_EQ(back->digests.size(), 1u);
  EXPECT_EQ(back->digests[0], point.digests[0]);
  EXPECT_FALSE(ReadResumePoint(dir, 0).has_value());  // another rank's is not this one's
}

TEST(ResumePoint, DamagedFileIsAnInfrastructureErrorNamingIt) {
  const std::string dir = FreshDir("damaged");
  WriteResumePoint(dir, 0, {"s", 1, {1.0, 2.0}, {}, {}});
  std::ofstream(ResumeDir(dir) + "/rank-0.json") << "{\"scenario\": \"s\", \"steps_done\": 1, \"record\": \"abc\"";
  try {
    ReadResumePoint(dir, 0);
    FAIL() << "a truncated resume point was read";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find(ResumeDir(dir) + "/rank-0.json"), std::string::npos) << e.what();
  }
}

TEST(ResumePoint, EarlierWindowJoinsTheResumedOne) {
  RankRecord before(4), now(4);
  const size_t collectives = static_cast<size_t>(comm::Collective::kCount);
  before.comm_counts = now.comm_counts = std::vector<double>(collectives, 0);
  before.comm_counts[0] = 3;
  before.comm_counts[2] = 1;
  now.comm_counts[0] = 6;
  now.comm_counts[2] = 2;
  before.comm_bytes = now.comm_bytes = std::vector<double>(collectives, 10);
  before.comm_seconds = now.comm_seconds = std::vector<double>(collectives, 0.5);
  before.tracked_peak = 900;
  before.tracked_at_peak = std::vector<double>(memory::kCategories, 9);
  now.tracked_peak = 700;
  now.tracked_at_peak = std::vector<double>(memory::kCategories, 7);
  before.tracked_peak_by = std::vector<double>(memory::kCategories, 1);
  now.tracked_peak_by = std::vector<double>(memory::kCategories, 2);
  before.engine_peak[0] = 50;
  now.engine_peak[0] = 40;
  JoinEarlierWindow(now, before);
  EXPECT_EQ(now.comm_counts[0], 9);
  EXPECT_EQ(now.comm_counts[2], 3);
  EXPECT_EQ(now.comm_bytes[0], 20);
  EXPECT_EQ(now.comm_seconds[0], 1.0);
  EXPECT_EQ(now.tracked_peak, 900);
  EXPECT_EQ(now.tracked_at_peak[0], 9);  // the breakdown at the larger peak
  EXPECT_EQ(now.tracked_peak_by[0], 2);
  EXPECT_EQ(now.engine_peak[0], 50);
  EXPECT_EQ(now.device_allocated_peak, -1);  // not a GPU run in either attempt
  EXPECT_EQ(now.device_ooms, -1);
}

}  // namespace
}  // namespace shardbench
