#include "engine/checkpoint/piece_index.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>

#include "engine/common/error.h"
#include "engine/checkpoint/finite_values.h"

namespace shardbench::checkpoint {

int64_t IndexEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void PieceIndex::add(const std::string& key, const std::vector<int64_t>& shape, at::ScalarType dtype,
                     const std::string& file, int64_t begin, int64_t numel) {
  IndexEntry& e = entries_[key];
  e.shape = shape;
  e.dtype = DtypeCode(dtype, key);
  e.pieces.push_back({file, begin, numel});
}

void PieceIndex::merge(const PieceIndex& other) {
  for (const auto& [key, theirs] : other.entries_) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      entries_[key] = theirs;
      continue;
    }
    if (it->second.shape != theirs.shape || it->second.dtype != theirs.dtype) {
      throw InfraError("checkpoint index: ranks disagree on the shape or dtype of '" + key + "'");
    }
    it->second.pieces.insert(it->second.pieces.end(), theirs.pieces.begin(), theirs.pieces.end());
  }
  for (auto& [key, e] : entries_) {
    std::sort(e.pieces.begin(), e.pieces.end(), [](const StoredPiece& a, const StoredPiece& b) { return a.begin < b.begin; });
  }
}

nlohmann::json PieceIndex::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, e] : entries_) {
    nlohmann::json pieces = nlohmann::json::array();
    for (const auto& p : e.pieces) pieces.push_back({{"file", p.file}, {"begin", p.begin}, {"numel", p.numel}});
    j[key] = {{"shape", e.shape}, {"dtype", e.dtype}, {"pieces", pieces}};
  }
  return j;
}

PieceIndex PieceIndex::FromJson(const nlohmann::json& j, const std::string& where) {
  PieceIndex index;
  if (!j.is_object()) throw InputError(where + ": the tensor index must be an object");
  for (const auto& [key, e] : j.items()) {
    try {
      IndexEntry entry;
      entry.shape = e.at("shape").get<std::vector<int64_t>>();
      entry.dtype = e.at("dtype").get<std::string>();
      for (const auto& p : e.at("pieces")) {
        entry.pieces.push_back({p.at("file").get<std::string>(), p.at("begin").get<int64_t>(), p.at("numel").get<int64_t>()});
        if (entry.pieces.back().begin < 0 || entry.pieces.back().numel < 0 ||
            entry.pieces.back().begin + entry.pieces.back().numel > entry.numel()) {
          throw InputError(where + ": tensor '" + key + "' has a piece outside its shape");
        }
      }
      index.entries_[key] = std::move(entry);
    } catch (const nlohmann::json::exception& ex) {
      throw InputError(where + ": tensor '" + key + "' is malformed in the index: " + ex.what());
    }
  }
  return index;
}

void PieceReader::CheckPieceBegin(const std::string& name, const std::string& key, int64_t begin) const {
  const nlohmann::json& begins = begins_.at(name);
  if (begins.is_null()) return;  // a file that does not record them (older saves, other writers)
  if (!begins.is_object() || !begins.contains(key) || !begins[key].is_number_integer()) {
    throw InputError("checkpoint " + dir_ + ": " + name + " does not record where its piece of '" + key + "' begins");
  }
  if (begins[key].get<int64_t>() != begin) {
    throw InputError("checkpoint " + dir_ + ": " + name + " holds '" + key + "' from element " +
                     std::to_string(begins[key].get<int64_t>()) + ", the index reads it as from element " +
                     std::to_string(begin) + " (an edited manifest)");
  }
}

PieceReader::PieceReader(std::string dir, PieceIndex index) : dir_(std::move(dir)), index_(std::move(index)) {}

const SafetensorsFile& PieceReader::file(const std::string& name) {
  auto it = files_.find(name);
  if (it == files_.end()) {
    it = files_.emplace(name, SafetensorsFile::Open((std::filesystem::path(dir_) / name).string())).first;
    const auto recorded = it->second->metadata().find(kPieceBeginsMetadata);
    begins_[name] = recorded == it->second->metadata().end()
                        ? nlohmann::json()
                        : nlohmann::json::parse(recorded->second, nullptr, /*allow_exceptions=*/false);
  }
  return *it->second;
}

void PieceReader::read(const std::string& key, const std::vector<int64_t>& shape, int64_t begin, const at::Tensor& dst) {
  if (!index_.contains(key)) throw InputError("checkpoint " + dir_ + ": has no tensor '" + key + "'");
  const IndexEntry& e = index_.entry(key);
  if (e.shape != shape) {
    throw InputError("checkpoint " + dir_ + ": tensor '" + key + "' has shape " + c10::str(c10::IntArrayRef(e.shape)) +
                     ", the model expects " + c10::str(c10::IntArrayRef(shape)));
  }
  if (e.dtype != DtypeCode(dst.scalar_type(), key)) {
    throw InputError("checkpoint " + dir_ + ": tensor '" + key + "' is " + e.dtype + ", the model holds " +
                     DtypeCode(dst.scalar_type(), key));
  }
  const int64_t end = begin + dst.numel();
  int64_t covered = begin;  // everything before this is filled (pieces are sorted by begin)
  for (const auto& p : e.pieces) {
    const int64_t lo = std::max(covered, p.begin), hi = std::min(end, p.begin + p.numel);
    if (hi <= lo) continue;
    if (lo > covered) break;  // a gap
    const SafetensorsFile& f = file(p.file);
    CheckPieceBegin(p.file, key, p.begin);
    at::Tensor stored = f.tensor(key).view({-1});
    if (stored.numel() != p.numel) {
      throw InputError("checkpoint " + dir_ + ": " + p.file + " holds " + std::to_string(stored.numel()) +
                       " elements of '" + key + "', the index says " + std::to_string(p.numel));
    }
    at::Tensor src = stored.narrow(0, lo - p.begin, hi - lo);
    dst.narrow(0, lo - begin, hi - lo).copy_(src);
    RequireFiniteLoaded(dst.narrow(0, lo - begin, hi - lo), src, "checkpoint " + dir_ + ": " + p.file, key, e.shape, lo);
    bytes_read_ += (hi - lo) * static_cast<int64_t>(src.element_size());
    covered = hi;
    if (covered == end) break;
  }
  if (covered < end) {
    throw InputError("checkpoint " + dir_ + ": tensor '" + key + "' elements [" + std::to_string(covered) + ", " +
                     std::to_string(end) + ") are in no file");
  }
}

}  // namespace shardbench::checkpoint
