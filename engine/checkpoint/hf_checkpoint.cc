#include "engine/checkpoint/hf_checkpoint.h"

#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/checkpoint/checkpoint_dir.h"
#include "engine/common/error.h"
#include "engine/common/path_checks.h"

namespace shardbench::checkpoint {
namespace {

using nlohmann::json;

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// weight_map of the index: tensor name -> shard file name (relative to the directory).
std::map<std::string, std::string> ReadWeightMap(const std::string& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  if (!in) throw InputError(index_path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  json index;
  try {
    index = json::parse(buffer.str());
  } catch (const json::exception& e) {
    throw InputError(index_path + ": not valid JSON: " + e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw InputError(index_path + ": expected a JSON object with a \"weight_map\" object {tensor name: shard file}");
  }
  std::map<std::string, std::string> out;
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      throw InputError(index_path + ": weight_map entry '" + it.key() + "' must name a shard file, found " +
                       it->dump());
    }
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

}  // namespace

HfCheckpoint HfCheckpoint::Open(const std::string& dir) {
  HfCheckpoint ckpt;
  ckpt.dir_ = dir;
  // Our own checkpoints (a FULL save given as `model:`) list every file's size and CRC-32 in
  // their manifest: verified before a byte is used, as when a run resumes from one. Each rank
  // verifies for itself (no communicator here): a read of the files, from the page cache on
  // one node.
  if (IsRegularFile(Join(dir, kManifestFile))) OpenVerifiedCheckpoint(dir, /*kind=*/"", /*comm=*/nullptr);
  const std::string single = Join(dir, kSingleFile);
  const std::string index = Join(dir, kIndexFile);
  if (IsRegularFile(single)) {
    auto file = SafetensorsFile::Open(single);
    for (const std::string& name : file->names()) ckpt.files_by_name_[name] = file;
    return ckpt;
  }
  if (!IsRegularFile(index)) {
    throw InputError(dir + ": not a Hugging Face checkpoint directory: expected " + kSingleFile + " or " +
                     kIndexFile + ", found neither");
  }
  std::map<std::string, std::shared_ptr<SafetensorsFile>> shards;  // each shard opened once
  for (const auto& [name, shard] : ReadWeightMap(index)) {
    std::shared_ptr<SafetensorsFile>& file = shards[shard];
    if (!file) {
      const std::string shard_path = Join(dir, shard);
      if (!IsRegularFile(shard_path)) {
        throw InputError(index + ": shard file '" + shard + "' (holding tensor '" + name + "') does not exist at " +
                         shard_path);
      }
      file = SafetensorsFile::Open(shard_path);
    }
    if (!file->contains(name)) {
      throw InputError(index + ": tensor '" + name + "' is mapped to shard '" + shard + "' but " +
                       file->path() + " does not contain it");
    }
    ckpt.files_by_name_[name] = file;
  }
  return ckpt;
}

std::vector<std::string> HfCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(files_by_name_.size());
  for (const auto& kv : files_by_name_) out.push_back(kv.first);
  return out;
}

const SafetensorsFile& HfCheckpoint::file(const std::string& name) const {
  auto it = files_by_name_.find(name);
  if (it == files_by_name_.end()) throw InputError(dir_ + ": checkpoint has no tensor '" + name + "'");
  return *it->second;
}

const TensorInfo& HfCheckpoint::info(const std::string& name) const { return file(name).info(name); }

const std::string& HfCheckpoint::path_of(const std::string& name) const { return file(name).path(); }

at::Tensor HfCheckpoint::tensor(const std::string& name) const { return file(name).tensor(name); }

at::Tensor HfCheckpoint::rows(const std::string& name, int64_t row_begin, int64_t row_end) const {
  return file(name).rows(name, row_begin, row_end);
}

uint64_t HfCheckpoint::total_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, file] : files_by_name_) {
    const TensorInfo& i = file->info(name);
    total += i.end - i.begin;
  }
  return total;
}

}  // namespace shardbench::checkpoint
