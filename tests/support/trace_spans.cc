#include "tests/support/trace_spans.h"

#include <cmath>
#include <string>
#include <utility>

namespace shardbench::testing {

std::map<int, std::vector<profile::Span>> TraceSpans(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, std::vector<nlohmann::json>> open;
  std::map<int, std::vector<profile::Span>> spans;
  const auto ns = [](const nlohmann::json& e) {
    return static_cast<int64_t>(std::llround(e.at("ts").get<double>() * 1e3));
  };
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") {
      thread_names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
      continue;
    }
    if (ph != "B" && ph != "E") continue;
    const std::pair<int, int> thread{e.at("pid"), e.at("tid")};
    if (ph == "B") {
      open[thread].push_back(e);
      continue;
    }
    const nlohmann::json begin = open.at(thread).back();
    open[thread].pop_back();
    const std::string& track = thread_names.at(thread);
    if (track != "compute" && track != "communication") continue;
    spans[thread.first].push_back(
        {begin.at("name"), begin.at("cat"),
         track == "compute" ? profile::SpanTrack::kCompute : profile::SpanTrack::kCommunication, ns(begin), ns(e)});
  }
  return spans;
}

}  // namespace shardbench::testing
