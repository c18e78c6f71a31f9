// State dicts across engines and world sizes, through real multi-process runs: roundtrips
// bit for bit, resharding 2 -> 3 -> 1 across engines, and bad checkpoints refused clearly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/common/durable_file.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

struct RoundtripCase {
  const char* kind;
  const char* engine;
  int world;
};

std::string Name(const ::testing::TestParamInfo<RoundtripCase>& info) {
  std::string engine = info.param.engine;
  for (auto& c : engine) c = c == '-' ? '_' : c;
  return std::string(info.param.kind) + "_" + engine + "_ws" + std::to_string(info.param.world);
}

class StateDictRoundtrip : public ::testing::TestWithParam<RoundtripCase> {};

TEST_P(StateDictRoundtrip, FreshModelLoadsBitExactParamsAndOptimizerState) {
  const auto& c = GetParam();
  const std::string dir = testing::MakeTempDir(std::string("roundtrip_") + Name({c, 0})) + "/ckpt";
  auto run = testing::RunRankWorker(c.world, {"state-dict-roundtrip", c.kind, c.engine, "lora", dir});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

std::vector<RoundtripCase> AllCases() {
  std::vector<RoundtripCase> out;
  for (const char* kind : {"full", "sharded", "local", "adapter"}) {
    for (const char* engine : {"reference", "flat-orig", "flat-noorig", "per-param"}) {
      for (int world : {1, 2, 3}) out.push_back({kind, engine, world});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(KindsEnginesWorlds, StateDictRoundtrip, ::testing::ValuesIn(AllCases()), Name);

TEST(StateDictRoundtripFullFineTune, ShardedFlatWithoutOrigParams) {
  const std::string dir = testing::MakeTempDir("roundtrip_full_ft") + "/ckpt";
  auto run = testing::RunRankWorker(2, {"state-dict-roundtrip", "sharded", "flat-noorig", "full", dir});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
}

// Saved by the flat engine at 2 ranks; loaded by the reference at 3 and resaved; loaded by the
// flat engine at 1; by the per-parameter engine at 3, resaved, and back into the flat engine at
// 2. Each load must reproduce the saved state exactly (checked as FULL files).
TEST(ShardedReshard, TwoToThreeToOneAcrossEngines) {
  const std::string root = testing::MakeTempDir("reshard");
  auto step = [&](int world, std::vector<std::string> args) {
    args.insert(args.begin(), "sharded-reshard");
    auto run = testing::RunRankWorker(world, args);
    EXPECT_TRUE(run.result.ok) << testing::Describe(run);
  };
  step(2, {"save", "flat-orig", root + "/s2", root + "/truth"});
  step(3, {"load", "reference", root + "/s2", root + "/truth", root + "/check3", root + "/s3"});
  step(1, {"load", "flat-orig", root + "/s3", root + "/truth", root + "/check1"});
  step(3, {"load", "flat-orig", root + "/s2", root + "/truth", root + "/check3b"});
  step(3, {"load", "per-param", root + "/s2", root + "/truth", root + "/check3c", root + "/s3pp"});
  step(2, {"load", "flat-orig", root + "/s3pp", root + "/truth", root + "/check2"});
}

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

// Each failpoint reproduces its real-world bug, and the roundtrip catches it: the run fails
// and names what differs. (Without the failpoint the same case passes, above.)
struct FailpointCase {
  const char* failpoint;
  const char* kind;
  const char* engine;
  const char* expect;  // in the failing rank's log
};

class FailpointTurnsRoundtripRed : public ::testing::TestWithParam<FailpointCase> {};

TEST_P(FailpointTurnsRoundtripRed, AndSaysWhat) {
  const auto& c = GetParam();
  const std::string dir = testing::MakeTempDir(std::string("failpoint_") + c.failpoint) + "/ckpt";
  comm::LaunchSpec spec;
  spec.env["SHARDBENCH_FAILPOINTS"] = c.failpoint;
  auto run = testing::RunRankWorker(2, {"state-dict-roundtrip", c.kind, c.engine, "lora", dir}, spec);
  EXPECT_FALSE(run.result.ok) << testing::Describe(run);
  EXPECT_NE(testing::Describe(run).find(c.expect), std::string::npos) << testing::Describe(run);
}

INSTANTIATE_TEST_SUITE_P(
    Known, FailpointTurnsRoundtripRed,
    ::testing::Values(FailpointCase{"local_load_shift", "local", "flat-orig", "differs after load"},
                      // PEFT's wrap policy (adapters in their own units) spreads each adapter over both ranks.
                      FailpointCase{"adapter_rank0_only", "adapter", "flat-noorig", "lora_B.weight' differs after load"},
                      FailpointCase{"optim_load_drop_step", "sharded", "flat-orig", "missing (state."},
                      FailpointCase{"optim_load_drop_step", "full", "reference", "missing (state."}),
    [](const auto& info) { return std::string(info.param.failpoint) + "_" + info.param.kind; });

}  // namespace
}  // namespace shardbench

namespace shardbench {
namespace {

// Saves a LoRA checkpoint of `kind` with `engine` at `world` ranks into <root>/ckpt.
std::string SaveOne(const std::string& root, const char* kind, const char* engine, int world) {
  const std::string dir = root + "/ckpt";
  auto run = testing::RunRankWorker(world, {"state-dict-roundtrip", kind, engine, "lora", dir});
  EXPECT_TRUE(run.result.ok) << testing::Describe(run);
  return dir;
}

// A strict load that must fail with exit code 2 on every rank, naming `expect`.
void ExpectRefused(int world, std::vector<std::string> args, const std::string& expect) {
  args.insert(args.begin(), "state-dict-load");
  auto run = testing::RunRankWorker(world, args);
  EXPECT_FALSE(run.result.ok);
  // The first rank to finish exits 2 (bad input); the launcher may stop the rest.
  ASSERT_GE(run.result.failed_rank, 0) << testing::Describe(run);
  EXPECT_EQ(run.result.ranks[run.result.failed_rank].exit_code, 2) << testing::Describe(run);
  EXPECT_NE(testing::Describe(run).find(expect), std::string::npos) << "expected '" << expect << "' in\n"
                                                                     << testing::Describe(run);
}

TEST(StateDictRefusal, LocalAtAnotherWorldSizeEngineOrLayout) {
  const std::string dir = SaveOne(testing::MakeTempDir("refuse_local"), "local", "flat-orig", 2);
  ExpectRefused(3, {"local", "flat-orig", dir}, "saved at world size 2, this job has 3");
  ExpectRefused(2, {"local", "flat-noorig", dir}, "saved with use_orig_params=true, this model has false");
  ExpectRefused(2, {"local", "reference", dir}, "saved by engine \"flat\", loading into \"reference\"");
  ExpectRefused(2, {"local", "flat-orig", dir, "4"}, "units[0] differs (wrapping or layout)");
  ExpectRefused(2, {"sharded", "flat-orig", dir}, "is a local checkpoint, expected sharded");
}

TEST(StateDictRefusal, ShapeMismatchNamesTheTensor) {
  const std::string root = testing::MakeTempDir("refuse_shape");
  const std::string sharded = SaveOne(root + "/s", "sharded", "flat-orig", 2);
  ExpectRefused(2, {"sharded", "flat-orig", sharded, "4"}, "lora_A.weight' has shape [8, 64], the model expects [4, 64]");
  const std::string full = SaveOne(root + "/f", "full", "flat-orig", 2);
  ExpectRefused(3, {"full", "reference", full, "4"}, "lora_A.weight' is F32 [8, 64], the model holds F32 [4, 64]");
  const std::string adapter = SaveOne(root + "/a", "adapter", "flat-orig", 1);
  ExpectRefused(1, {"adapter", "flat-orig", adapter, "4"}, "do not match this model's LoRA");
}

TEST(StateDictRefusal, CorruptAndTruncatedFilesAreNamed) {
  namespace fs = std::filesystem;
  const std::string dir = SaveOne(testing::MakeTempDir("refuse_corrupt"), "sharded", "flat-orig", 2);
  const std::string shard = dir + "/shard-00001-of-00002.safetensors";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(shard) - 3));
    f.put('\x7f');
  }
  ExpectRefused(2, {"sharded", "flat-orig", dir}, "file 'shard-00001-of-00002.safetensors' fails its CRC-32 check");
  fs::resize_file(shard, 100);
  ExpectRefused(3, {"sharded", "reference", dir}, "is 100 bytes, the manifest says");
  fs::remove(dir + "/manifest.json");
  ExpectRefused(1, {"sharded", "flat-orig", dir}, "no manifest.json (an interrupted save");
}

// A NaN in a saved checkpoint (edited, with its manifest's CRC-32 made to match, or saved by a
// job that had diverged) is named at load, tensor and element, not trained from.
TEST(StateDictRefusal, NonFiniteValueIsNamedAtLoad) {
  const std::string dir = SaveOne(testing::MakeTempDir("refuse_nan"), "sharded", "flat-orig", 2);
  const std::string name = "shard-00000-of-00002.safetensors", shard = dir + "/" + name;
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header_bytes = 0;
  f.read(reinterpret_cast<char*>(&header_bytes), sizeof(header_bytes));
  std::string header(header_bytes, '\0');
  f.read(header.data(), static_cast<std::streamsize>(header_bytes));
  std::string poisoned;
  const nlohmann::json tensors = nlohmann::json::parse(header);
  for (const auto& [key, info] : tensors.items()) {
    if (key == "__metadata__" || info.at("dtype") != "F32" || info.at("shape").size() != 1 ||
        info.at("shape")[0].get<int64_t>() < 6) {
      continue;
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();  // the piece's sixth element
    f.seekp(static_cast<std::streamoff>(8 + header_bytes + info.at("data_offsets")[0].get<uint64_t>() + 5 * sizeof(float)));
    f.write(reinterpret_cast<const char*>(&nan), sizeof(nan));
    poisoned = key;
    break;
  }
  f.close();
  ASSERT_FALSE(poisoned.empty()) << header;
  nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
  manifest["files"][name]["crc32"] = DigestFile(shard).crc32;
  std::ofstream(dir + "/manifest.json") << manifest.dump(1);
  ExpectRefused(2, {"sharded", "flat-orig", dir}, name + ": tensor '" + poisoned + "' holds nan at element [");
}

// Each shard file records where its pieces begin: an index edited to read a piece from another
// rank's file of the same size (the CRC-32s still hold) is refused, not loaded as the wrong half.
TEST(StateDictRefusal, APieceReadFromAnotherRanksFileIsRefused) {
  const std::string dir = SaveOne(testing::MakeTempDir("refuse_swapped"), "sharded", "flat-orig", 2);
  nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
  std::string key;
  int64_t second_begin = 0;
  for (auto& [name, entry] : manifest["content"]["tensors"].items()) {
    auto& pieces = entry["pieces"];
    if (pieces.size() == 2 && pieces[0]["numel"] == pieces[1]["numel"] && pieces[0]["file"] != pieces[1]["file"]) {
      pieces[1]["file"] = pieces[0]["file"];
      key = name, second_begin = pieces[1]["begin"].get<int64_t>();
      break;
    }
  }
  ASSERT_FALSE(key.empty()) << "no tensor split in two equal pieces";
  std::ofstream(dir + "/manifest.json") << manifest.dump(1);
  ExpectRefused(2, {"sharded", "flat-orig", dir}, "holds '" + key + "' from element 0, the index reads it as from element " +
                                                      std::to_string(second_begin));
}

}  // namespace
}  // namespace shardbench
