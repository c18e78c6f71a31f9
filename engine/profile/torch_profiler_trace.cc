#include "engine/profile/torch_profiler_trace.h"

#include <cmath>
#include <optional>

#include "engine/common/error.h"

namespace shardbench::profile {
namespace {

// The peer's annotations of its own phases (peers/torch_fsdp/peer.py) and their categories.
std::optional<std::string> ComputeCategory(const std::string& name) {
  for (const char* phase : {"step", "forward", "backward", "optimizer"}) {
    if (name == phase) return std::string(phase);
  }
  if (name.rfind("wait", 0) == 0) return std::string("wait");
  return std::nullopt;
}

// c10d's record of a collective in flight on the backend's thread: "gloo:all_gather" -> all_gather.
std::optional<std::string> Collective(const std::string& name) {
  if (name.rfind("gloo:", 0) == 0) return name.substr(5);
  return std::nullopt;
}

}  // namespace

RankSpans ReadTorchProfilerTrace(const nlohmann::json& trace, int rank, const std::string& what) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    throw InputError(what + ": not a torch.profiler trace (no traceEvents array)");
  }
  RankSpans out;
  out.rank = rank;
  std::optional<int64_t> training_thread;  // the thread the "step" annotations are on
  size_t index = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string at = what + ": traceEvents[" + std::to_string(index++) + "]";
    if (!e.is_object() || e.value("ph", "") != "X" || e.value("cat", "") != "user_annotation") continue;
    const auto name = e.find("name"), ts = e.find("ts"), dur = e.find("dur"), tid = e.find("tid");
    if (name == e.end() || !name->is_string() || ts == e.end() || !ts->is_number() || dur == e.end() ||
        !dur->is_number() || tid == e.end() || !tid->is_number_integer()) {
      throw InputError(at + ": a complete event needs a string name, numbers ts and dur and an integer tid");
    }
    const double begin_us = ts->get<double>(), length_us = dur->get<double>();
    if (!std::isfinite(begin_us) || !std::isfinite(length_us) || std::fabs(begin_us) > 9.0e12 || length_us < 0 ||
        length_us > 9.0e12) {
      throw InputError(at + ": ts " + ts->dump() + " or dur " + dur->dump() + " is out of range");
    }
    Span s;
    s.name = name->get<std::string>();
    s.begin_ns = static_cast<int64_t>(std::llround(begin_us * 1000.0));
    s.end_ns = s.begin_ns + static_cast<int64_t>(std::llround(length_us * 1000.0));
    if (auto collective = Collective(s.name)) {
      s.category = *collective;
      s.track = SpanTrack::kCommunication;
      out.spans.push_back(s);
    } else if (auto category = ComputeCategory(s.name)) {
      if (*category == "step") {
        if (training_thread && *training_thread != tid->get<int64_t>()) {
          throw InputError(at + ": \"step\" annotations on two threads");
        }
        training_thread = tid->get<int64_t>();
      }
      s.category = *category;
      s.track = SpanTrack::kCompute;
      out.spans.push_back(s);
    }
  }
  if (!training_thread) throw InputError(what + ": no \"step\" annotation (a peer traces its measured steps)");
  return out;
}

}  // namespace shardbench::profile
