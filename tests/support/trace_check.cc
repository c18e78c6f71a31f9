#include "tests/support/trace_check.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace shardbench::testing {

size_t CheckTraceValid(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::vector<std::string>> open;  // (pid, tid) -> names of open B
  std::map<std::pair<int, int>, double> last_ts;
  std::set<int> named_pids;
  std::set<std::pair<int, int>> named_tids;
  size_t pairs = 0;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const int pid = e.at("pid");
    if (ph == "M") {
      if (e.at("name") == "process_name") named_pids.insert(pid);
      if (e.at("name") == "thread_name") named_tids.insert({pid, e.at("tid").get<int>()});
      continue;
    }
    if (ph == "C") {  // a counter: named, numbers only, on a named thread of its own
      EXPECT_TRUE(named_tids.count({pid, e.at("tid").get<int>()})) << e.dump();
      for (const auto& [key, value] : e.at("args").items()) EXPECT_TRUE(value.is_number()) << key;
    }
    const std::pair<int, int> thread{pid, e.at("tid").get<int>()};
    EXPECT_TRUE(named_pids.count(pid)) << "pid " << pid << " used before it was named";
    EXPECT_TRUE(named_tids.count(thread)) << "tid " << thread.second << " used before it was named";
    const double ts = e.at("ts");
    if (last_ts.count(thread)) {
      EXPECT_GE(ts, last_ts[thread]) << e.dump();
    }
    last_ts[thread] = ts;
    if (ph == "B") {
      open[thread].push_back(e.at("name"));
    } else if (ph != "C") {
      EXPECT_EQ(ph, "E");
      EXPECT_FALSE(open[thread].empty()) << "an E without its B: " << e.dump();
      if (!open[thread].empty()) open[thread].pop_back(), ++pairs;
    }
  }
  for (const auto& [thread, names] : open) EXPECT_TRUE(names.empty()) << names.size() << " B without E on tid " << thread.second;
  return pairs;
}

}  // namespace shardbench::testing
