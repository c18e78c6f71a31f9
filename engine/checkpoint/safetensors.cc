#include "engine/checkpoint/safetensors.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/ScalarType.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace shardbench::checkpoint {
namespace {

using nlohmann::json;

// The reference implementation's limit; a larger header means a corrupt length field, and
// refusing it early avoids parsing (or allocating for) garbage.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DtypeEntry {
  const char* code;
  at::ScalarType dtype;
};
constexpr DtypeEntry kDtypes[] = {
    {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf}, {"BF16", at::kBFloat16}, {"I64", at::kLong},
    {"I32", at::kInt},    {"I16", at::kShort}, {"I8", at::kChar},  {"U8", at::kByte},       {"BOOL", at::kBool},
};

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Errno() { return std::strerror(errno); }

// Parses one header entry; `where` is "<path>: tensor '<name>'".
TensorInfo ParseEntry(const std::string& where, const std::string& name, const json& entry) {
  if (!entry.is_object()) throw InputError(where + ": expected a JSON object, found " + entry.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) throw InputError(where + ": entry has no \"" + key + "\"");
  }
  TensorInfo info;
  info.name = name;
  const json& dtype = entry["dtype"];
  if (!dtype.is_string()) throw InputError(where + ": \"dtype\" must be a string, found " + dtype.dump());
  const std::string code = dtype.get<std::string>();
  auto it = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeEntry& e) { return code == e.code; });
  if (it == std::end(kDtypes)) {
    throw InputError(where + ": unsupported dtype '" + code + "' (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
  }
  info.dtype = it->dtype;

  const json& shape = entry["shape"];
  if (!shape.is_array()) throw InputError(where + ": \"shape\" must be an array, found " + shape.dump());
  uint64_t numel = 1;
  for (const json& d : shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX)) {
      throw InputError(where + ": \"shape\" must hold non-negative integers, found " + shape.dump());
    }
    info.shape.push_back(d.get<int64_t>());
    if (__builtin_mul_overflow(numel, d.get<uint64_t>(), &numel)) {
      throw InputError(where + ": shape " + shape.dump() + " has more elements than fit in 64 bits");
    }
  }

  const json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned() || offsets[0].get<uint64_t>() > offsets[1].get<uint64_t>()) {
    throw InputError(where + ": \"data_offsets\" must be [begin, end] with 0 <= begin <= end, found " +
                     offsets.dump());
  }
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  uint64_t expected = 0;
  if (__builtin_mul_overflow(numel, uint64_t(c10::elementSize(info.dtype)), &expected) ||
      info.end - info.begin != expected) {
    throw InputError(where + ": data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                     "] hold " + std::to_string(info.end - info.begin) + " bytes, expected " +
                     std::to_string(expected) + " for " + code + " shape " + ShapeString(info.shape));
  }
  return info;
}

// Validates the whole header against a data section of `data_bytes` bytes.
void ParseHeader(const std::string& path, const char* text, size_t len, uint64_t data_bytes,
                 std::map<std::string, TensorInfo>* infos, std::map<std::string, std::string>* metadata) {
  json header;
  try {
    // nlohmann rejects ill-formed UTF-8 inside strings, which covers the "valid UTF-8" rule:
    // outside strings any non-ASCII byte is already a syntax error.
    header = json::parse(text, text + len);
  } catch (const json::exception& e) {
    throw InputError(path + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw InputError(path + ": header must be a JSON object, found a " + header.type_name());

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw InputError(path + ": \"__metadata__\" must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) {
          throw InputError(path + ": \"__metadata__\" value '" + m.key() + "' must be a string, found " + m->dump());
        }
        (*metadata)[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + it.key() + "'";
    TensorInfo info = ParseEntry(where, it.key(), *it);
    if (info.end > data_bytes) {
      throw InputError(path + ": file is truncated: tensor '" + it.key() + "' ends at byte " +
                       std::to_string(info.end) + " of the data section but it holds only " +
                       std::to_string(data_bytes));
    }
    (*infos)[it.key()] = std::move(info);
  }

  // Overlap check: sort non-empty ranges by begin; each must start at or after the furthest end
  // so far. Gaps are allowed (the reference writer never leaves them, but they are harmless).
  std::vector<const TensorInfo*> ranges;
  for (const auto& [name, info] : *infos) {
    if (info.end > info.begin) ranges.push_back(&info);
  }
  std::sort(ranges.begin(), ranges.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  const TensorInfo* furthest = nullptr;
  for (const TensorInfo* r : ranges) {
    if (furthest && r->begin < furthest->end) {
      throw InputError(path + ": tensors '" + furthest->name + "' [" + std::to_string(furthest->begin) + ", " +
                       std::to_string(furthest->end) + "] and '" + r->name + "' [" + std::to_string(r->begin) +
                       ", " + std::to_string(r->end) + "] overlap in the data section");
    }
    if (!furthest || r->end > furthest->end) furthest = r;
  }
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const char* DtypeCode(at::ScalarType dtype, const std::string& what) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.dtype == dtype) return e.code;
  }
  throw InputError(what + ": dtype " + std::string(c10::toString(dtype)) +
                   " cannot be stored (safetensors dtypes supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
}

// Owns the mmap; shared by the file object and every tensor handed out, so tensors outlive
// the SafetensorsFile that produced them.
struct SafetensorsFile::Mapping {
  void* addr = nullptr;
  size_t length = 0;
  ~Mapping() {
    if (addr) munmap(addr, length);
  }
  const char* bytes() const { return static_cast<const char*>(addr); }
};

SafetensorsFile::~SafetensorsFile() = default;

std::shared_ptr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open safetensors file: " + Errno());
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path + ": not a regular file");
  }
  file->file_bytes_ = uint64_t(st.st_size);
  if (file->file_bytes_ < 8) {
    ::close(fd);
    throw InputError(path + ": file is " + std::to_string(file->file_bytes_) +
                     " bytes, too short for a safetensors file (expected at least the 8-byte header length)");
  }
  auto mapping = std::make_shared<Mapping>();
  void* addr = mmap(nullptr, file->file_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  int mmap_errno = errno;
  ::close(fd);  // the mapping holds its own reference to the file
  if (addr == MAP_FAILED) throw InputError(path + ": cannot mmap " + std::to_string(file->file_bytes_) +
                                           " bytes: " + std::strerror(mmap_errno));
  mapping->addr = addr;
  mapping->length = file->file_bytes_;
  file->mapping_ = mapping;

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | uint8_t(mapping->bytes()[i]);  // little-endian
  const uint64_t remaining = file->file_bytes_ - 8;
  if (header_len > remaining) {
    throw InputError(path + ": header length " + std::to_string(header_len) + " is beyond the file (only " +
                     std::to_string(remaining) + " bytes follow the length field)");
  }
  if (header_len > kMaxHeaderBytes) {
    throw InputError(path + ": header length " + std::to_string(header_len) + " exceeds the 100 MiB limit");
  }
  file->data_start_ = 8 + header_len;
  ParseHeader(path, mapping->bytes() + 8, header_len, file->file_bytes_ - file->data_start_, &file->infos_,
              &file->metadata_);
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(infos_.size());
  for (const auto& kv : infos_) out.push_back(kv.first);
  return out;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = infos_.find(name);
  if (it == infos_.end()) throw InputError(path_ + ": no tensor '" + name + "' in this file");
  return it->second;
}

at::Tensor SafetensorsFile::View(const TensorInfo& info, uint64_t byte_offset, std::vector<int64_t> shape) const {
  auto options = at::TensorOptions().dtype(info.dtype).device(at::kCPU);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel == 0) return at::empty(shape, options);  // nothing to view; avoids a pointer at the map's end
  const char* ptr = mapping_->bytes() + data_start_ + byte_offset;
  if (reinterpret_cast<uintptr_t>(ptr) % c10::elementSize(info.dtype) != 0) {
    // Misaligned element access is undefined behaviour for ATen kernels; pay for a copy instead.
    at::Tensor out = at::empty(shape, options);
    std::memcpy(out.data_ptr(), ptr, size_t(numel) * c10::elementSize(info.dtype));
    return out;
  }
  std::shared_ptr<Mapping> keep_alive = mapping_;
  return at::from_blob(const_cast<char*>(ptr), shape, [keep_alive](void*) {}, options);
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const TensorInfo& i = info(name);
  return View(i, i.begin, i.shape);
}

at::Tensor SafetensorsFile::rows(const std::string& name, int64_t row_begin, int64_t row_end) const {
  const TensorInfo& i = info(name);
  if (i.shape.empty()) {
    throw InputError(path_ + ": tensor '" + name + "': rows() needs at least 1 dimension, found a 0-d scalar");
  }
  if (row_begin < 0 || row_begin > row_end || row_end > i.shape[0]) {
    throw InputError(path_ + ": tensor '" + name + "': rows [" + std::to_string(row_begin) + ", " +
                     std::to_string(row_end) + ") are not within [0, " + std::to_string(i.shape[0]) +
                     "] of shape " + ShapeString(i.shape));
  }
  std::vector<int64_t> shape = i.shape;
  shape[0] = row_end - row_begin;
  // Row size from the byte range, not numel/shape[0], so a 0-row tensor needs no division.
  const uint64_t row_bytes = i.shape[0] == 0 ? 0 : (i.end - i.begin) / uint64_t(i.shape[0]);
  return View(i, i.begin + uint64_t(row_begin) * row_bytes, std::move(shape));
}

// ---------------------------------------------------------------------------------------------
// Writing.

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; so must the host be");

// A temp file beside the target, removed on destruction unless it was renamed into place: an
// exception anywhere between creation and commit leaves the old checkpoint as it was.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {
    // A leftover of an interrupted write goes first (unlink removes a planted link, not its
    // target); O_EXCL | O_NOFOLLOW then create only a new file, never write through a link.
    ::unlink(path_.c_str());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) ThrowFileError(path_ + ": cannot create", errno);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void Write(const void* data, size_t n, const std::string& what) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);  // may be partial (signals, >2 GiB, file size limits)
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) ThrowFileError(path_ + ": writing " + what + " failed", errno);
      p += w;
      n -= size_t(w);
    }
  }

  // fsync before rename so the name never points at data still in the page cache only; fsync
  // the directory after so the rename itself survives a power loss (best effort there).
  void CommitTo(const std::string& final_path) {
    if (::fsync(fd_) != 0) ThrowFileError(path_ + ": fsync failed", errno);
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) ThrowFileError(path_ + ": close failed", errno);
    if (::rename(path_.c_str(), final_path.c_str()) != 0) {
      ThrowFileError(final_path + ": cannot rename " + path_ + " into place", errno);
    }
    committed_ = true;
    const size_t slash = final_path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : final_path.substr(0, slash);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void WriteSafetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Header first, from metadata only (dtype, shape, byte size): every bad input is reported
  // before a byte is written, and device tensors are copied to the host only one at a time.
  json header = json::object();  // std::map-backed: keys come out sorted
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::string where = path + ": tensor '" + name + "'";
    if (name == "__metadata__") throw InputError(where + ": the name is reserved for the metadata block");
    if (header.contains(name)) throw InputError(where + ": name given twice");
    if (!t.defined()) throw InputError(where + ": tensor is undefined, expected a tensor with data");
    if (t.layout() != at::kStrided) throw InputError(where + ": only dense (strided) tensors can be stored");
    if (t.is_meta()) throw InputError(where + ": tensor is on the meta device and holds no data");
    const uint64_t bytes = uint64_t(t.numel()) * t.element_size();
    json entry = json::object();
    entry["dtype"] = DtypeCode(t.scalar_type(), where);
    entry["shape"] = t.sizes().vec();
    entry["data_offsets"] = json::array({offset, offset + bytes});
    header[name] = std::move(entry);
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Pad so the data section starts 8-aligned in the file (and in a page-aligned mapping).
  text.append((8 - text.size() % 8) % 8, ' ');

  TempFile tmp(path + ".tmp." + std::to_string(::getpid()));
  uint8_t len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  tmp.Write(len_bytes, 8, "the header length");
  tmp.Write(text.data(), text.size(), "the header");
  for (const auto& [name, t] : tensors) {
    if (t.numel() == 0) continue;
    // resolve_conj/neg: lazy-negation views would otherwise be written with the wrong sign.
    at::Tensor cpu = t.to(at::kCPU).resolve_conj().resolve_neg().contiguous();
    tmp.Write(cpu.data_ptr(), size_t(cpu.numel()) * cpu.element_size(), "tensor '" + name + "'");
  }
  tmp.CommitTo(path);
}

}  // namespace shardbench::checkpoint
