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
