#include "harness/rank_trace.h"

#include <time.h>

#include <algorithm>
#include <climits>

#include <nlohmann/json.hpp>

#include "engine/comm/gather_strings.h"
#include "engine/common/durable_file.h"

namespace shardbench {
namespace {

int64_t WallMinusMonotonicNs() {
  timespec wall{};
  clock_gettime(CLOCK_REALTIME, &wall);
  const int64_t mono = profile::NowNs();
  return static_cast<int64_t>(wall.tv_sec) * 1'000'000'000 + wall.tv_nsec - mono;
}

}  // namespace

void RankTrace::start() { profile::SpanRecorder::Get().start(keep_); }

std::optional<profile::SpanOverlap> RankTrace::step_done() {
  profile::SpanRecorder& recorder = profile::SpanRecorder::Get();
  std::vector<profile::Span> spans = recorder.take_spans();
  std::optional<profile::SpanOverlap> summary;
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    if (it->category == "step") {
      summary = profile::SummarizeSpans(spans, it->begin_ns, it->end_ns);
      break;
    }
  }
  if (keep_) {
    spans_.insert(spans_.end(), std::make_move_iterator(spans.begin()), std::make_move_iterator(spans.end()));
    std::vector<profile::MemorySample> memory = recorder.take_memory();
    memory_.insert(memory_.end(), memory.begin(), memory.end());
  }
  return summary;
}

std::string RankTimelineJson(int rank, const std::vector<profile::Span>& spans,
                             const std::vector<profile::MemorySample>& memory, int64_t offset_ns) {
  nlohmann::json s = nlohmann::json::array(), m = nlohmann::json::array();
  for (const auto& span : spans) {
    s.push_back({span.name, span.category, span.track == profile::SpanTrack::kCommunication ? 1 : 0,
                 span.begin_ns + offset_ns, span.end_ns + offset_ns});
  }
  for (const auto& sample : memory) {
    nlohmann::json row = {sample.at_ns + offset_ns};
    for (int64_t b : sample.bytes) row.push_back(b);
    m.push_back(row);
  }
  return nlohmann::json{{"rank", rank}, {"spans", s}, {"memory", m}}.dump();
}

profile::RankSpans ParseRankTimeline(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  profile::RankSpans r;
  r.rank = j.at("rank");
  for (const auto& s : j.at("spans")) {
    r.spans.push_back({s[0], s[1], s[2] == 1 ? profile::SpanTrack::kCommunication : profile::SpanTrack::kCompute, s[3], s[4]});
  }
  for (const auto& row : j.at("memory")) {
    profile::MemorySample sample;
    sample.at_ns = row[0];
    for (size_t c = 0; c < sample.bytes.size() && c + 1 < row.size(); ++c) sample.bytes[c] = row[c + 1];
    r.memory.push_back(sample);
  }
  return r;
}

void RankTrace::finish() {
  step_done();
  profile::SpanRecorder::Get().stop();
}

void RankTrace::write(comm::Communicator* comm, int rank, const std::string& path) {
  profile::SpanRecorder::Get().stop();
  if (!keep_) return;
  const std::vector<std::string> all =
      comm::AllGatherStrings(comm, RankTimelineJson(rank, spans_, memory_, WallMinusMonotonicNs()));
  if (rank != 0) return;
  std::vector<profile::RankSpans> ranks;
  int64_t origin = INT64_MAX;
  for (const std::string& text : all) {
    ranks.push_back(ParseRankTimeline(text));
    for (const auto& s : ranks.back().spans) origin = std::min(origin, s.begin_ns);
  }
  if (origin == INT64_MAX) origin = 0;
  WriteFileAtomically(path, profile::TraceEventsJson(ranks, origin).dump() + "\n");
}

}  // namespace shardbench
