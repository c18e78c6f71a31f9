// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON ({name: {dtype, shape, data_offsets}, "__metadata__": {...}}),
// then the data section, which data_offsets index. Tensors are C-contiguous, little-endian.
//
// Reading maps the file and hands out zero-copy views, so loading a rank's dim-0 shard touches
// only that shard's pages. Writing is atomic: a crash mid-save never leaves a half-written
// checkpoint where a good one was.
//
// Every error is a shardbench::InputError whose message starts with the file path and names
// the tensor and what was expected vs found.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardbench::checkpoint {

// One header entry, validated against the file (offsets in range, size matches dtype x shape).
struct TensorInfo {
  std::string name;
  at::ScalarType dtype = at::ScalarType::Float;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets within the data section (after the header)
  int64_t numel() const;
};

// Safetensors dtype code ("F32", "BF16", ...) <-> ATen dtype. Supported: F64, F32, F16, BF16,
// I64, I32, I16, I8, U8, BOOL. DtypeCode throws InputError naming `what` for any other dtype.
const char* DtypeCode(at::ScalarType dtype, const std::string& what);

// Read-only, memory-mapped (MAP_PRIVATE, PROT_READ) safetensors file. The header is validated
// fully on Open, so every later accessor only fails on a caller's mistake (unknown name, bad
// row range). Immutable after Open, hence safe to share between threads.
class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return infos_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // InputError naming file+tensor if absent

  // Zero-copy CPU tensor viewing the mapping; the tensor keeps the mapping alive. The pages are
  // PROT_READ, so writing into it faults: callers clone before writing. (A tensor whose offset
  // is not aligned to its element size, possible only in files from other writers, is copied.)
  at::Tensor tensor(const std::string& name) const;
  // Rows [row_begin, row_end) along dim 0, zero-copy; the storage covers only those rows, so
  // a rank loading its shard maps in (and accounts for) only its own bytes.
  at::Tensor rows(const std::string& name, int64_t row_begin, int64_t row_end) const;

  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  struct Mapping;
  SafetensorsFile() = default;
  at::Tensor View(const TensorInfo& info, uint64_t byte_offset, std::vector<int64_t> shape) const;

  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  uint64_t file_bytes_ = 0;
  uint64_t data_start_ = 0;  // 8 + header length
  std::map<std::string, TensorInfo> infos_;
  std::map<std::string, std::string> metadata_;
};

// Writes atomically: <path>.tmp.<pid>, fsync, rename over `path`, fsync the directory. If
// anything fails the previous file at `path` is untouched and the temp file is removed.
// Non-contiguous tensors are made contiguous and any device is copied to CPU, one tensor at a
// time (so saving from GPU never holds a second full copy of the model on the host). Header
// keys are sorted; data is laid out in the given order; the header is padded with spaces to a
// multiple of 8 bytes (as the reference implementation does) so every tensor is 8-aligned.
void WriteSafetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace shardbench::checkpoint
