#include "harness/resume_point.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/common/durable_file.h"
#include "engine/common/error.h"

namespace shardbench {
namespace {

// Doubles by their bit patterns: losses may be NaN and timings must come back unrounded, which
// JSON numbers cannot promise.
std::string DoublesAsHex(const std::vector<double>& values) {
  std::string out;
  char buf[17];
  for (double v : values) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(bits));
    out += buf;
  }
  return out;
}

std::vector<double> HexAsDoubles(const std::string& hex) {
  if (hex.size() % 16 != 0) throw std::runtime_error("record length " + std::to_string(hex.size()) + " is not a multiple of 16");
  std::vector<double> out(hex.size() / 16);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t bits = std::stoull(hex.substr(i * 16, 16), nullptr, 16);
    std::memcpy(&out[i], &bits, sizeof(bits));
  }
  return out;
}

std::string PathFor(const std::string& checkpoint_dir, int rank) {
  return ResumeDir(checkpoint_dir) + "/rank-" + std::to_string(rank) + ".json";
}

}  // namespace

std::string ResumeDir(const std::string& checkpoint_dir) { return checkpoint_dir + ".resume"; }

void WriteResumePoint(const std::string& checkpoint_dir, int rank, const ResumePoint& point) {
  nlohmann::json digests = nlohmann::json::array();
  for (const auto& d : point.digests) {
    digests.push_back({d.name, d.param, d.exp_avg, d.exp_avg_sq, d.step, d.has_state});
  }
  const nlohmann::json j = {{"scenario", point.scenario},
                            {"steps_done", point.steps_done},
                            {"record", DoublesAsHex(point.record)},
                            {"save", DoublesAsHex({point.save.save_seconds, point.save.bytes_this_rank,
                                                   point.save.bytes_total, point.save.save_peak_bytes})},
                            {"digests", digests}};
  std::filesystem::create_directories(ResumeDir(checkpoint_dir));
  WriteFileAtomically(PathFor(checkpoint_dir, rank), j.dump() + "\n");
}

std::optional<ResumePoint> ReadResumePoint(const std::string& checkpoint_dir, int rank) {
  const std::string path = PathFor(checkpoint_dir, rank);
  if (!std::filesystem::is_regular_file(path)) return std::nullopt;
  try {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(text.str());
    ResumePoint p;
    p.scenario = j.at("scenario").get<std::string>();
    p.steps_done = j.at("steps_done").get<int64_t>();
    p.record = HexAsDoubles(j.at("record").get<std::string>());
    const std::vector<double> save = HexAsDoubles(j.at("save").get<std::string>());
    if (save.size() != 4) throw std::runtime_error("'save' holds " + std::to_string(save.size()) + " values, not 4");
    p.save.save_seconds = save[0];
    p.save.bytes_this_rank = save[1];
    p.save.bytes_total = save[2];
    p.save.save_peak_bytes = save[3];
    for (const auto& d : j.at("digests")) {
      p.digests.push_back({d.at(0).get<std::string>(), d.at(1).get<uint32_t>(), d.at(2).get<uint32_t>(),
                           d.at(3).get<uint32_t>(), d.at(4).get<int64_t>(), d.at(5).get<bool>()});
    }
    return p;
  } catch (const std::exception& e) {
    throw InfraError("resume point " + path + " is damaged (" + e.what() + "): remove " + ResumeDir(checkpoint_dir) +
                     " to run the instance from step 1");
  }
}

}  // namespace shardbench
