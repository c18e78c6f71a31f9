// Token files: windows cut where the documented offset says (the Python rebuild in
// tests/end_to_end/peer_data_check.py checks the same independently), and every malformed file or token
// named with what was expected.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>

#include "engine/common/error.h"
#include "engine/model/token_file_data.h"
#include "harness/scenario/scenario_parser.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

std::string WriteTokens(const std::string& name, const std::vector<uint32_t>& ids, int width) {
  const std::string path = testing::MakeTempDir("tokens") + "/" + name;
  std::ofstream out(path, std::ios::binary);
  for (uint32_t id : ids) {
    for (int b = 0; b < width; ++b) out.put(static_cast<char>((id >> (8 * b)) & 0xff));
  }
  return path;
}

using testing::InputErrorOf;
const auto& ErrorOf = InputErrorOf;

TEST(TokenFileData, WindowsStartAtTheDocumentedOffsetsForBothWidths) {
  std::vector<uint32_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>((i * 7919) % 300);  // position-coded
  for (const auto& [dtype, width] : std::vector<std::pair<std::string, int>>{{"uint16", 2}, {"uint32", 4}}) {
    model::TokenFileData data(WriteTokens("t." + dtype, ids, width), dtype, 5, 300, 8);
    EXPECT_EQ(data.tokens(), 1000);
    const model::Batch b = data.batch(4, 10, 3);
    for (int64_t s = 0; s < 3; ++s) {
      const int64_t offset = static_cast<int64_t>(model::SampleHash(5, 4, 10 + s) % (1000 - 8));
      for (int64_t t = 0; t < 8; ++t) {
        EXPECT_EQ(b.input_ids[s][t].item<int64_t>(), ids[offset + t]) << dtype;
        EXPECT_EQ(b.labels[s][t].item<int64_t>(), ids[offset + t + 1]) << dtype;
      }
    }
    // Splitting the batch changes nothing (ranks and micro-batches cut the same global batch).
    EXPECT_TRUE(at::equal(data.batch(4, 10, 3).input_ids.narrow(0, 1, 2), data.batch(4, 11, 2).input_ids));
  }
}

TEST(TokenFileData, MalformedFilesAndTokensAreNamed) {
  const std::string odd = WriteTokens("odd.bin", {1, 2, 3}, 1);  // 3 bytes
  EXPECT_NE(ErrorOf([&] { model::TokenFileData(odd, "uint16", 1, 10, 1); }).find("3 bytes is not a whole number of uint16"),
            std::string::npos);
  const std::string short_file = WriteTokens("short.bin", {1, 2, 3}, 2);
  EXPECT_NE(ErrorOf([&] { model::TokenFileData(short_file, "uint16", 1, 10, 8); }).find("3 tokens, but a sample needs seq_len + 1 = 9"),
            std::string::npos);
  const std::string big = WriteTokens("big.bin", std::vector<uint32_t>(64, 70000), 4);
  const std::string e = ErrorOf([&] { model::TokenFileData(big, "uint32", 1, 32000, 4).batch(0, 0, 1); });
  EXPECT_NE(e.find("big.bin: token 70000 at index"), std::string::npos) << e;
  EXPECT_NE(e.find("vocab_size 32000"), std::string::npos) << e;
  EXPECT_NE(ErrorOf([] { model::TokenFileData("/no/such/tokens.bin", "uint16", 1, 10, 1); }).find("/no/such/tokens.bin: cannot open"),
            std::string::npos);
}

TEST(TokenFileData, ScenarioFieldsAreChecked) {
  const std::string scenario = testing::MakeTempDir("token_scenario") + "/s.yaml";
  std::ofstream(scenario) << "model: tiny\n";
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(scenario, {"data.source=tokens"}); }).find("data.source=tokens needs data.path"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(scenario, {"data.source=tokens", "data.path=/no/such.bin"}); })
                .find("data.path '/no/such.bin' cannot be read"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(scenario, {"data.path=x.bin"}); }).find("data.path is read only with data.source=tokens"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadScenarioFile(scenario, {"data.token_dtype=int8"}); }).find("uint16, uint32"), std::string::npos);
}

}  // namespace
}  // namespace shardbench
