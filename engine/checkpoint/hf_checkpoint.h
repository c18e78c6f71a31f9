// A Hugging Face checkpoint directory: either one `model.safetensors`, or
// `model.safetensors.index.json` ({"weight_map": {tensor name: shard file}}) pointing at several
// shard files. Every shard is opened (mapped and header-validated) once, eagerly, so a bad
// checkpoint fails at Open and not halfway through loading a model.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"

namespace shardbench::checkpoint {

class HfCheckpoint {
 public:
  // InputError if neither file exists, the index is malformed, a shard is missing or invalid,
  // or a name in the index is not present in its shard, or (a directory with our manifest.json)
  // a file is truncated or fails its CRC-32. As in transformers, a single
  // model.safetensors wins when both it and an index exist.
  static HfCheckpoint Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return files_by_name_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // InputError naming dir+tensor if absent
  // Zero-copy, read-only views; see SafetensorsFile::tensor / rows.
  at::Tensor tensor(const std::string& name) const;
  at::Tensor rows(const std::string& name, int64_t row_begin, int64_t row_end) const;
  uint64_t total_bytes() const;  // sum of the tensors' data bytes (headers not counted)
  const std::string& path_of(const std::string& name) const;  // the file holding it

 private:
  const SafetensorsFile& file(const std::string& name) const;

  std::string dir_;
  // Only the index's names: a shard may hold tensors the index does not list (transformers
  // ignores those too).
  std::map<std::string, std::shared_ptr<SafetensorsFile>> files_by_name_;
};

}  // namespace shardbench::checkpoint
