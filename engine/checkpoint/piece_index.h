// The index of a checkpoint whose tensors are stored as pieces spread over files: for every
// key, its global shape and dtype and which element range of its row-major flattening each
// file holds (a file stores a piece as a 1-D tensor under the key). A reader assembles any
// element range from whatever pieces overlap it, zero-copy from the mapped files, so a rank
// maps in only the bytes it needs, whatever world size or engine wrote the checkpoint.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"

namespace shardbench::checkpoint {

struct StoredPiece {
  std::string file;
  int64_t begin = 0, numel = 0;
};

struct IndexEntry {
  std::vector<int64_t> shape;
  std::string dtype;  // safetensors code
  std::vector<StoredPiece> pieces;
  int64_t numel() const;
};

// The safetensors metadata key under which a shard file records where each of its pieces begins
// ({key: begin}, JSON): the manifest's CRC-32 covers a file's bytes, not which range of a
// tensor they are, so an index edited to read a piece from another rank's file of the same size
// loaded it silently. Files without it (older saves, other writers) are read as the index says.
inline constexpr const char* kPieceBeginsMetadata = "shardbench.piece_begins";

class PieceIndex {
 public:
  // Records that `file` holds elements [begin, begin+numel) of `key`.
  void add(const std::string& key, const std::vector<int64_t>& shape, at::ScalarType dtype, const std::string& file,
           int64_t begin, int64_t numel);
  // Merges another rank's index (shapes and dtypes must agree).
  void merge(const PieceIndex& other);
  nlohmann::json to_json() const;
  // InputError naming `where` and the key for malformed entries.
  static PieceIndex FromJson(const nlohmann::json& j, const std::string& where);

  bool contains(const std::string& key) const { return entries_.count(key) != 0; }
  const IndexEntry& entry(const std::string& key) const { return entries_.at(key); }
  const std::map<std::string, IndexEntry>& entries() const { return entries_; }

 private:
  std::map<std::string, IndexEntry> entries_;
};

// Reads element ranges from a checkpoint directory through its index.
class PieceReader {
 public:
  PieceReader(std::string dir, PieceIndex index);
  const PieceIndex& index() const { return index_; }
  // Copies elements [begin, begin + dst.numel()) of `key` into `dst` (1-D, any device).
  // InputError naming the key if the range is not fully covered, or dtype/shape disagree
  // with `shape` (the caller's view of the tensor).
  void read(const std::string& key, const std::vector<int64_t>& shape, int64_t begin, const at::Tensor& dst);
  int64_t bytes_read() const { return bytes_read_; }

 private:
  const SafetensorsFile& file(const std::string& name);
  // InputError when file `name` records (kPieceBeginsMetadata) another begin for its piece of `key`.
  void CheckPieceBegin(const std::string& name, const std::string& key, int64_t begin) const;
  std::string dir_;
  PieceIndex index_;
  std::map<std::string, std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, nlohmann::json> begins_;  // per file, its kPieceBeginsMetadata parsed once (null: none)
  int64_t bytes_read_ = 0;
};

}  // namespace shardbench::checkpoint
