// The checkpoint directory contract: complete or absent, verified on load, never replacing
// what is not ours, and a crash mid-save leaving the previous checkpoint loadable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <ATen/ops/arange.h>

#include "engine/checkpoint/checkpoint_dir.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "tests/support/multi_rank.h"

namespace shardbench::checkpoint {
namespace {
namespace fs = std::filesystem;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A single-process save of two files with the given contents.
int64_t Save(const std::string& dir, const std::string& a, const std::string& b) {
  CheckpointWriter writer(dir, nullptr);
  WriteText(writer.staging_path("a.bin"), a);
  WriteText(writer.staging_path("b.bin"), b);
  Manifest m;
  m.kind = "sharded";
  m.content = {{"note", a}};
  return writer.commit(m, {"a.bin", "b.bin"});
}

std::string ErrorOf(const std::string& dir, const std::string& kind = "") {
  try {
    OpenVerifiedCheckpoint(dir, kind, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointDir, CommitsAllFilesWithDigestsAndVerifies) {
  const std::string dir = testing::MakeTempDir("ckpt_commit") + "/ckpt";
  EXPECT_EQ(Save(dir, "first", "12345678"), 13);
  const Manifest m = OpenVerifiedCheckpoint(dir, "sharded", nullptr);
  EXPECT_EQ(m.kind, "sharded");
  EXPECT_EQ(m.content["note"], "first");
  EXPECT_EQ(m.files["b.bin"]["bytes"], 8);
  EXPECT_FALSE(fs::exists(dir + ".saving"));
  // A second save replaces the first as a whole.
  Save(dir, "second", "x");
  EXPECT_EQ(OpenVerifiedCheckpoint(dir, "", nullptr).content["note"], "second");
  EXPECT_EQ(testing::ReadFile(dir + "/b.bin"), "x");
}

TEST(CheckpointDir, LoadNamesWhatIsWrong) {
  const std::string dir = testing::MakeTempDir("ckpt_errors") + "/ckpt";
  Save(dir, "payload", "more payload");
  EXPECT_NE(ErrorOf(dir, "local").find("is a sharded checkpoint, expected local"), std::string::npos);

  fs::resize_file(dir + "/b.bin", 5);
  std::string e = ErrorOf(dir);
  EXPECT_NE(e.find("file 'b.bin' is 5 bytes, the manifest says 12 (truncated"), std::string::npos) << e;

  Save(dir, "payload", "more payload");
  WriteText(dir + "/a.bin", "paYload");  // same size, one byte flipped
  e = ErrorOf(dir);
  EXPECT_NE(e.find("file 'a.bin' fails its CRC-32 check (corrupt)"), std::string::npos) << e;

  Save(dir, "payload", "more payload");
  fs::remove(dir + "/a.bin");
  e = ErrorOf(dir);
  EXPECT_NE(e.find("file 'a.bin' listed in the manifest is missing"), std::string::npos) << e;

  fs::remove(dir + "/manifest.json");
  e = ErrorOf(dir);
  EXPECT_NE(e.find("no manifest.json (an interrupted save"), std::string::npos) << e;
  WriteText(dir + "/manifest.json", "{\"format\": ");
  e = ErrorOf(dir);
  EXPECT_NE(e.find("manifest.json: not valid JSON"), std::string::npos) << e;
  EXPECT_NE(ErrorOf(dir + "/nope").find("no such directory"), std::string::npos);
}

TEST(CheckpointDir, RefusesToReplaceADirectoryThatIsNotACheckpoint) {
  const std::string dir = testing::MakeTempDir("ckpt_refuse") + "/model";
  fs::create_directories(dir);
  WriteText(dir + "/config.json", "{}");
  try {
    Save(dir, "a", "b");
    FAIL() << "saved over a directory that is not a checkpoint";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a shardbench checkpoint"), std::string::npos) << e.what();
  }
  EXPECT_EQ(testing::ReadFile(dir + "/config.json"), "{}");
}

// A FULL checkpoint given as `model:` is read as a Hugging Face directory; its manifest is
// still checked, so a flipped byte in the weights is refused instead of trained on.
TEST(CheckpointDir, AModelDirectoryWithAManifestIsVerifiedWhenOpened) {
  const std::string dir = testing::MakeTempDir("ckpt_as_model") + "/ckpt";
  CheckpointWriter writer(dir, nullptr);
  WriteSafetensors(writer.staging_path("model.safetensors"), {{"w", at::arange(16, at::kFloat)}}, {});
  Manifest m;
  m.kind = "full";
  writer.commit(m, {"model.safetensors"});
  EXPECT_EQ(HfCheckpoint::Open(dir).names(), std::vector<std::string>{"w"});

  std::string bytes = testing::ReadFile(dir + "/model.safetensors");
  bytes[bytes.size() - 3] ^= 0x01;  // a weight's byte, same size
  WriteText(dir + "/model.safetensors", bytes);
  try {
    HfCheckpoint::Open(dir);
    FAIL() << "a corrupt model.safetensors was opened";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("file 'model.safetensors' fails its CRC-32 check (corrupt)"), std::string::npos)
        << e.what();
  }
  fs::remove(dir + "/manifest.json");  // a plain Hugging Face directory has no manifest to check
  EXPECT_EQ(HfCheckpoint::Open(dir).names(), std::vector<std::string>{"w"});
}

TEST(CheckpointDir, KilledBeforeTheManifestLeavesThePreviousCheckpoint) {
  const std::string dir = testing::MakeTempDir("ckpt_crash") + "/ckpt";
  Save(dir, "good", "old");
  EXPECT_EXIT(
      {
        setenv("SHARDBENCH_CRASH_BEFORE_MANIFEST", "1", 1);
        Save(dir, "new", "half");
      },
      ::testing::ExitedWithCode(137), "");
  EXPECT_TRUE(fs::exists(dir + ".saving/a.bin"));  // the killed save's leftovers
  EXPECT_EQ(OpenVerifiedCheckpoint(dir, "sharded", nullptr).content["note"], "good");
  EXPECT_EQ(testing::ReadFile(dir + "/b.bin"), "old");
  Save(dir, "after", "ok");  // the next save clears the leftovers
  EXPECT_EQ(OpenVerifiedCheckpoint(dir, "", nullptr).content["note"], "after");
  EXPECT_FALSE(fs::exists(dir + ".saving"));
}

}  // namespace
}  // namespace shardbench::checkpoint
