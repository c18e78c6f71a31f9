// safetensors reader/writer and the Hugging Face checkpoint directory: roundtrips, layout,
// zero-copy row slices, rejection of malformed files, atomic overwrite.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"

namespace shardbench::checkpoint {
namespace {

namespace fs = std::filesystem;

// std::filesystem::remove_all must not be called: libtorch.so (pip wheel) exports its own copy
// of the std::filesystem functions, the dynamic linker binds ours to it, and its remove_all
// crashes on a non-empty directory. nftw does the same job.
void RemoveTree(const fs::path& dir) {
  nftw(
      dir.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

// A fresh directory per test process (ctest runs each test in its own process).
class SafetensorsTestDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sb_st_" + std::to_string(::getpid()));
    RemoveTree(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { RemoveTree(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes a safetensors file by hand: 8-byte little-endian header length, header, data.
void WriteRaw(const std::string& path, const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = char(uint64_t(header.size()) >> (8 * i));
  std::ofstream(path, std::ios::binary) << bytes << header << data;
}

// Runs `fn`, expects an InputError, returns its message ("" and a test failure otherwise).
std::string InputErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

using SafetensorsRoundtrip = SafetensorsTestDir;

TEST_F(SafetensorsRoundtrip, DtypesShapesNonContiguousAndMetadataAreBitExact) {
  at::manual_seed(0);
  std::vector<std::pair<std::string, at::Tensor>> tensors = {
      {"w.f32", at::randn({3, 5})},
      {"w.bf16", at::randn({4, 2}).to(at::kBFloat16)},
      {"w.f16", at::randn({7}).to(at::kHalf)},
      {"i.i64", at::arange(-6, 6, at::kLong).reshape({2, 2, 3})},
      {"m.bool", at::rand({5, 3}) > 0.5},
      {"scalar", at::scalar_tensor(3.5)},
      {"empty", at::empty({0, 4})},
      {"transposed", at::arange(12, at::kFloat).reshape({3, 4}).t()},
  };
  ASSERT_FALSE(tensors.back().second.is_contiguous());
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"step", "42"}};
  WriteSafetensors(Path("a.safetensors"), tensors, metadata);

  auto file = SafetensorsFile::Open(Path("a.safetensors"));
  EXPECT_EQ(file->metadata(), metadata);
  const std::vector<std::string> names = file->names();
  EXPECT_EQ(names.size(), tensors.size());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(file->file_bytes(), fs::file_size(Path("a.safetensors")));
  for (const auto& [name, expected] : tensors) {
    at::Tensor got = file->tensor(name);
    EXPECT_EQ(got.scalar_type(), expected.scalar_type()) << name;
    EXPECT_EQ(got.sizes(), expected.sizes()) << name;
    EXPECT_TRUE(at::equal(got, expected)) << name;
    EXPECT_EQ(file->info(name).numel(), expected.numel()) << name;
  }
  EXPECT_EQ(file->info("scalar").shape, std::vector<int64_t>{});
  EXPECT_FALSE(file->contains("missing"));
  std::string msg = InputErrorOf([&] { file->info("missing"); });
  EXPECT_CONTAINS(msg, "a.safetensors");
  EXPECT_CONTAINS(msg, "'missing'");
}

TEST_F(SafetensorsRoundtrip, TensorsOutliveTheFileObject) {
  WriteSafetensors(Path("a.safetensors"), {{"x", at::arange(10, at::kFloat)}});
  at::Tensor x = SafetensorsFile::Open(Path("a.safetensors"))->tensor("x");  // file object gone
  EXPECT_TRUE(at::equal(x, at::arange(10, at::kFloat)));
}

using SafetensorsLayout = SafetensorsTestDir;

TEST_F(SafetensorsLayout, HeaderPaddedToEightAndDataInGivenOrder) {
  // Names deliberately out of alphabetical order: the header sorts them, the data must not.
  WriteSafetensors(Path("a.safetensors"), {{"zeta", at::ones({3}, at::kByte)},
                                           {"alpha", at::ones({2, 2})},
                                           {"mid", at::ones({5}, at::kHalf)}});
  const std::string bytes = ReadBytes(Path("a.safetensors"));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | uint8_t(bytes[i]);
  EXPECT_EQ(header_len % 8, 0u);
  const std::string header = bytes.substr(8, header_len);
  EXPECT_LT(header.find("\"alpha\""), header.find("\"mid\""));
  EXPECT_LT(header.find("\"mid\""), header.find("\"zeta\""));
  const size_t last = header.find_last_not_of(' ');
  EXPECT_EQ(header[last], '}');
  EXPECT_LT(header.size() - last - 1, 8u);  // only padding after the JSON

  auto file = SafetensorsFile::Open(Path("a.safetensors"));
  EXPECT_EQ(file->info("zeta").begin, 0u);
  EXPECT_EQ(file->info("zeta").end, 3u);
  EXPECT_EQ(file->info("alpha").begin, 3u);
  EXPECT_EQ(file->info("alpha").end, 19u);
  EXPECT_EQ(file->info("mid").begin, 19u);
  EXPECT_EQ(file->info("mid").end, 29u);
  EXPECT_EQ(bytes.size(), 8 + header_len + 29);
}

using SafetensorsRows = SafetensorsTestDir;

TEST_F(SafetensorsRows, SliceIsExactAndZeroCopy) {
  at::Tensor w = at::arange(6 * 4, at::kFloat).reshape({6, 4});
  WriteSafetensors(Path("a.safetensors"), {{"w", w}, {"v", at::arange(5, at::kLong)}, {"s", at::scalar_tensor(1.0)}});
  auto file = SafetensorsFile::Open(Path("a.safetensors"));
  at::Tensor whole = file->tensor("w");
  at::Tensor part = file->rows("w", 2, 5);
  EXPECT_EQ(part.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(at::equal(part, w.narrow(0, 2, 3)));
  // Same mapping, offset by two rows of 4 floats: no copy was made.
  EXPECT_EQ(static_cast<char*>(part.data_ptr()), static_cast<char*>(whole.data_ptr()) + 2 * 4 * sizeof(float));
  EXPECT_EQ(part.storage().nbytes(), 3 * 4 * sizeof(float));  // storage covers only the shard

  EXPECT_TRUE(at::equal(file->rows("v", 4, 5), at::arange(4, 5, at::kLong)));
  EXPECT_EQ(file->rows("v", 3, 3).numel(), 0);
  EXPECT_EQ(file->rows("w", 0, 6).sizes(), w.sizes());

  EXPECT_CONTAINS(InputErrorOf([&] { file->rows("w", 4, 7); }), "rows [4, 7) are not within [0, 6]");
  EXPECT_CONTAINS(InputErrorOf([&] { file->rows("w", 3, 2); }), "'w'");
  EXPECT_CONTAINS(InputErrorOf([&] { file->rows("w", -1, 2); }), "'w'");
  EXPECT_CONTAINS(InputErrorOf([&] { file->rows("s", 0, 0); }), "0-d");
}

using SafetensorsMalformed = SafetensorsTestDir;

TEST_F(SafetensorsMalformed, TooShort) {
  std::ofstream(Path("a.safetensors"), std::ios::binary) << "abc";
  std::string msg = InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); });
  EXPECT_CONTAINS(msg, Path("a.safetensors"));
  EXPECT_CONTAINS(msg, "too short");
}

TEST_F(SafetensorsMalformed, HeaderLengthBeyondFile) {
  std::string bytes(8, '\0');
  bytes[0] = char(200);  // claims a 200-byte header; only 2 bytes follow
  std::ofstream(Path("a.safetensors"), std::ios::binary) << bytes << "{}";
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); }),
                  "header length 200 is beyond the file (only 2 bytes");
}

TEST_F(SafetensorsMalformed, HeaderNotJsonOrNotAnObject) {
  WriteRaw(Path("a.safetensors"), "{\"x\": [1, ", "");
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); }), "not valid JSON");
  WriteRaw(Path("b.safetensors"), "[1, 2]  ", "");
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("b.safetensors")); }), "must be a JSON object");
  WriteRaw(Path("c.safetensors"), "{\"\xff\": 1}", "");
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("c.safetensors")); }), "not valid JSON");
}

TEST_F(SafetensorsMalformed, UnknownDtype) {
  WriteRaw(Path("a.safetensors"), R"({"x": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})", std::string(8, '\0'));
  std::string msg = InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); });
  EXPECT_CONTAINS(msg, "tensor 'x'");
  EXPECT_CONTAINS(msg, "unsupported dtype 'C64'");
}

TEST_F(SafetensorsMalformed, OffsetsSizeMismatch) {
  WriteRaw(Path("model.safetensors"),
           R"({"model.norm.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}})", std::string(16, '\0'));
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("model.safetensors")); }),
                  "model.safetensors: tensor 'model.norm.weight': data_offsets [0, 12] hold 12 bytes, expected 16 "
                  "for F32 shape [4]");
}

TEST_F(SafetensorsMalformed, TruncatedFile) {
  WriteSafetensors(Path("a.safetensors"), {{"a", at::ones({4})}, {"b", at::ones({8})}});
  fs::resize_file(Path("a.safetensors"), fs::file_size(Path("a.safetensors")) - 5);
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); }),
                  "file is truncated: tensor 'b' ends at byte 48 of the data section but it holds only 43");
}

TEST_F(SafetensorsMalformed, OverlappingOffsets) {
  WriteRaw(Path("a.safetensors"),
           R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
               "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
               "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})",
           std::string(16, '\0'));
  EXPECT_CONTAINS(InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); }),
                  "tensors 'a' [0, 16] and 'b' [8, 16] overlap");
}

TEST_F(SafetensorsMalformed, BadEntriesAndMetadata) {
  struct Case {
    const char* header;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"x": {"shape": [1], "data_offsets": [0, 4]}})", "tensor 'x': entry has no \"dtype\""},
      {R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "non-negative integers"},
      {R"({"x": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", "non-negative integers"},
      {R"({"x": {"dtype": "F32", "shape": 4, "data_offsets": [0, 4]}})", "\"shape\" must be an array"},
      {R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", "0 <= begin <= end"},
      {R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "0 <= begin <= end"},
      {R"({"x": {"dtype": 7, "shape": [1], "data_offsets": [0, 4]}})", "\"dtype\" must be a string"},
      {R"({"x": [1, 2]})", "tensor 'x': expected a JSON object"},
      {R"({"__metadata__": {"a": 1}})", "\"__metadata__\" value 'a' must be a string"},
      {R"({"__metadata__": []})", "\"__metadata__\" must be an object of strings"},
  };
  for (const Case& c : cases) {
    WriteRaw(Path("a.safetensors"), c.header, std::string(4, '\0'));
    std::string msg = InputErrorOf([&] { SafetensorsFile::Open(Path("a.safetensors")); });
    EXPECT_CONTAINS(msg, Path("a.safetensors"));
    EXPECT_CONTAINS(msg, c.expected);
  }
}

TEST_F(SafetensorsMalformed, EmptyTensorsAndHeaderOnlyFilesAreLegal) {
  WriteRaw(Path("a.safetensors"), R"({"e": {"dtype": "BF16", "shape": [0, 3], "data_offsets": [0, 0]}})", "");
  auto file = SafetensorsFile::Open(Path("a.safetensors"));
  EXPECT_EQ(file->tensor("e").sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(file->rows("e", 0, 0).numel(), 0);
}

using SafetensorsAtomicWrite = SafetensorsTestDir;

// No "<name>.tmp.<pid>" may be left in the directory, whichever process wrote it.
bool HasTempFiles(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

TEST_F(SafetensorsAtomicWrite, InvalidTensorLeavesOldFileIntact) {
  WriteSafetensors(Path("a.safetensors"), {{"x", at::arange(8, at::kFloat)}});
  const std::string before = ReadBytes(Path("a.safetensors"));
  std::string msg = InputErrorOf(
      [&] { WriteSafetensors(Path("a.safetensors"), {{"x", at::ones({2})}, {"broken", at::Tensor()}}); });
  EXPECT_CONTAINS(msg, "tensor 'broken'");
  EXPECT_CONTAINS(msg, "undefined");
  EXPECT_CONTAINS(InputErrorOf([&] { WriteSafetensors(Path("a.safetensors"), {{"c", at::ones({2}, at::kComplexFloat)}}); }),
                  "tensor 'c': dtype ComplexFloat cannot be stored");
  EXPECT_CONTAINS(InputErrorOf([&] { WriteSafetensors(Path("a.safetensors"), {{"d", at::ones({2})}, {"d", at::ones({2})}}); }),
                  "name given twice");
  EXPECT_EQ(ReadBytes(Path("a.safetensors")), before);
  EXPECT_FALSE(HasTempFiles(dir_));
}

TEST_F(SafetensorsAtomicWrite, IoFailureMidWriteLeavesOldFileIntact) {
  WriteSafetensors(Path("a.safetensors"), {{"x", at::arange(8, at::kFloat)}});
  const std::string before = ReadBytes(Path("a.safetensors"));
  // A file-size limit makes write() fail with EFBIG after the temp file holds 64 KiB: a real
  // I/O error halfway through the data, like a full disk, and like it infrastructure (exit 3).
  struct rlimit old_limit {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    WriteSafetensors(Path("a.safetensors"), {{"big", at::ones({1 << 20})}});
    ADD_FAILURE() << "a write past the file-size limit succeeded";
  } catch (const InfraError& e) {
    msg = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InfraError, got: " << e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, old_handler);
  EXPECT_CONTAINS(msg, "writing tensor 'big' failed");
  EXPECT_EQ(ReadBytes(Path("a.safetensors")), before);
  EXPECT_FALSE(HasTempFiles(dir_));
}

using HfCheckpointDir = SafetensorsTestDir;

TEST_F(HfCheckpointDir, SingleFile) {
  WriteSafetensors(Path("model.safetensors"), {{"b", at::ones({2, 3})}, {"a", at::arange(4, at::kLong)}});
  HfCheckpoint ckpt = HfCheckpoint::Open(dir_.string());
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(at::equal(ckpt.tensor("a"), at::arange(4, at::kLong)));
  EXPECT_TRUE(at::equal(ckpt.rows("b", 1, 2), at::ones({1, 3})));
  EXPECT_EQ(ckpt.info("b").dtype, at::kFloat);
  EXPECT_EQ(ckpt.total_bytes(), 2u * 3 * 4 + 4 * 8);
  EXPECT_CONTAINS(InputErrorOf([&] { ckpt.tensor("zzz"); }), "no tensor 'zzz'");
}

void WriteIndex(const std::string& path, const std::string& weight_map) {
  std::ofstream(path) << R"({"metadata": {"total_size": 0}, "weight_map": )" << weight_map << "}";
}

TEST_F(HfCheckpointDir, ShardedIndexAcrossTwoFiles) {
  WriteSafetensors(Path("model-00001-of-00002.safetensors"),
                   {{"model.embed_tokens.weight", at::arange(12, at::kFloat).reshape({4, 3})},
                    {"model.layers.0.mlp.up_proj.weight", at::ones({2, 2}, at::kBFloat16)}});
  WriteSafetensors(Path("model-00002-of-00002.safetensors"), {{"lm_head.weight", at::full({4, 3}, 2.0)}});
  WriteIndex(Path("model.safetensors.index.json"), R"({
      "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
      "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
      "lm_head.weight": "model-00002-of-00002.safetensors"})");
  HfCheckpoint ckpt = HfCheckpoint::Open(dir_.string());
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight",
                                                    "model.layers.0.mlp.up_proj.weight"}));
  EXPECT_TRUE(at::equal(ckpt.tensor("lm_head.weight"), at::full({4, 3}, 2.0)));
  EXPECT_TRUE(at::equal(ckpt.rows("model.embed_tokens.weight", 2, 4), at::arange(6, 12, at::kFloat).reshape({2, 3})));
  EXPECT_EQ(ckpt.info("model.layers.0.mlp.up_proj.weight").dtype, at::kBFloat16);
  EXPECT_EQ(ckpt.total_bytes(), 48u + 8 + 48);
}

TEST_F(HfCheckpointDir, MissingShardIsNamed) {
  WriteSafetensors(Path("model-00001-of-00002.safetensors"), {{"a", at::ones({2})}});
  WriteIndex(Path("model.safetensors.index.json"),
             R"({"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"})");
  std::string msg = InputErrorOf([&] { HfCheckpoint::Open(dir_.string()); });
  EXPECT_CONTAINS(msg, "model.safetensors.index.json");
  EXPECT_CONTAINS(msg, "shard file 'model-00002-of-00002.safetensors'");
  EXPECT_CONTAINS(msg, "does not exist");
}

TEST_F(HfCheckpointDir, NameAbsentFromItsShard) {
  WriteSafetensors(Path("s1.safetensors"), {{"a", at::ones({2})}});
  WriteSafetensors(Path("s2.safetensors"), {{"b", at::ones({2})}});
  WriteIndex(Path("model.safetensors.index.json"), R"({"a": "s1.safetensors", "b": "s1.safetensors"})");
  std::string msg = InputErrorOf([&] { HfCheckpoint::Open(dir_.string()); });
  EXPECT_CONTAINS(msg, "tensor 'b' is mapped to shard 's1.safetensors'");
  EXPECT_CONTAINS(msg, "does not contain it");
}

TEST_F(HfCheckpointDir, NeitherFileOrMalformedIndex) {
  EXPECT_CONTAINS(InputErrorOf([&] { HfCheckpoint::Open(dir_.string()); }), "found neither");
  std::ofstream(Path("model.safetensors.index.json")) << R"({"weight_map": ["a"]})";
  EXPECT_CONTAINS(InputErrorOf([&] { HfCheckpoint::Open(dir_.string()); }), "\"weight_map\" object");
  std::ofstream(Path("model.safetensors.index.json")) << R"({"weight_map": {"a": 3}})";
  EXPECT_CONTAINS(InputErrorOf([&] { HfCheckpoint::Open(dir_.string()); }), "weight_map entry 'a' must name a shard file");
  std::ofstream(Path("model.safetensors.index.json")) << "{nope";
  EXPECT_CONTAINS(InputErrorOf([&] { HfCheckpoint::Open(dir_.string()); }), "not valid JSON");
}

}  // namespace
}  // namespace shardbench::checkpoint
