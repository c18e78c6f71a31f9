#include "cli/summary.h"

#include <cstdio>

namespace shardbench::cli {
namespace {

double Median(const nlohmann::json& result, const std::string& name) {
  for (const auto& m : result["metrics"]) {
    if (m["name"] == name) return m["median"].is_null() ? 0.0 : m["median"].get<double>();
  }
  return 0.0;
}

// The busiest rank against the typical one (suites/rank_record.cc): ranks wait for a straggler,
// so only busy time names it.
void PrintStragglers(const nlohmann::json& r) {
  for (const auto& m : r["metrics"]) {
    if (m["name"] != "straggler_ratio" || m["per_rank"].size() < 2) continue;
    const auto& per_rank = m["per_rank"];
    size_t slowest = 0;
    for (size_t i = 1; i < per_rank.size(); ++i) {
      if (per_rank[i].get<double>() > per_rank[slowest].get<double>()) slowest = i;
    }
    std::printf("  stragglers      busy time %.2fx the median rank's on rank %zu (straggler_ratio)\n",
                Median(r, "straggler_ratio"), slowest);
  }
}

// Whether the measured steps were still warming up: a fixed warmup shorter than the steady
// state the data shows is warned about; warmup auto says where its metrics started.
void PrintSteadyState(const nlohmann::json& r) {
  if (!r.contains("steady_state_step")) return;  // a peer's result, or one that did not train
  const int64_t steady = r["steady_state_step"].get<int64_t>();
  const nlohmann::json warmup = r["scenario"]["config"]["train"].value("warmup_steps", nlohmann::json());
  if (warmup.is_number_integer()) {
    const int64_t w = warmup.get<int64_t>();
    if (w < steady) {
      std::printf("  WARNING         warmup_steps %lld < steady state detected at step %lld: the first measured steps are "
                  "still warming up\n", static_cast<long long>(w), static_cast<long long>(steady));
    }
  } else {
    std::printf("  warmup          auto: steady state detected at step %lld, step metrics from step %lld\n",
                static_cast<long long>(steady), static_cast<long long>(r.value("measured_from_step", int64_t{0})));
  }
}

}  // namespace

std::function<void(const StepProgress&)> ProgressPrinter(bool terminal) {
  return [terminal](const StepProgress& p) {
    std::printf("%sstep %3lld/%lld%s loss %.4f  %8.0f tok/s  rss %5.0f MiB%s", terminal ? "\r" : "",
                static_cast<long long>(p.step), static_cast<long long>(p.total), p.warmup ? " (warmup)" : "         ",
                p.loss, p.tokens_per_s, p.rss_bytes / 1048576.0, terminal ? (p.step == p.total ? "\n" : "") : "\n");
    std::fflush(stdout);
  };
}

void PrintSummary(const nlohmann::json& r, const std::string& path) {
  const auto& loss = r["loss"];
  const double mib = 1048576.0;
  std::printf("  status          %s%s\n", r["status"].get<std::string>().c_str(),
              r["message"].get<std::string>().empty() ? "" : (" (" + r["message"].get<std::string>() + ")").c_str());
  std::printf("  loss            %.4f -> %.4f over %zu steps\n", loss.front().get<double>(), loss.back().get<double>(),
              loss.size());
  std::printf("  tokens/s        %.0f global, %.0f per rank (medians)\n", Median(r, "tokens_per_s"),
              Median(r, "tokens_per_s_per_rank"));
  std::printf("  step time       %.2f ms (p50); optimizer share %.1f%%\n", Median(r, "step_time") * 1e3,
              100 * Median(r, "optimizer_share"));
  PrintStragglers(r);
  PrintSteadyState(r);
  std::printf("  params          %.0f total, %.0f trainable\n", Median(r, "params_total"), Median(r, "params_trainable"));
  std::printf("  memory/rank     params %.2f MiB (unsharded peak %.2f), grads %.2f MiB, optimizer %.2f MiB, RSS %.0f MiB\n",
              Median(r, "param_bytes") / mib, Median(r, "params_unsharded_peak_bytes") / mib, Median(r, "grad_bytes") / mib,
              Median(r, "optim_state_bytes") / mib, Median(r, "host_rss_peak") / mib);
  for (const auto& c : r["checks"]) {
    std::printf("  check %-9s %s  %s\n", c["name"].get<std::string>().c_str(), c["passed"].get<bool>() ? "PASS" : "FAIL",
                c["detail"].get<std::string>().c_str());
  }
  std::printf("  results         %s\n", path.c_str());
}

void PrintIndex(const nlohmann::json& index, const std::string& out_dir) {
  std::printf("\n%-64s %-7s %-8s %s\n", "instance", "colour", "expected", "");
  for (const auto& e : index["instances"]) {
    std::printf("%-64s %-7s %-8s %s\n", e["name"].get<std::string>().c_str(), e["colour"].get<std::string>().c_str(),
                e["expect"].get<std::string>().c_str(), e["as_expected"].get<bool>() ? "ok" : "UNEXPECTED");
  }
  std::printf("index: %s/index.json\n", out_dir.c_str());
}

}  // namespace shardbench::cli
