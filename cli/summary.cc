#include "cli/summary.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "reporters/peer_warnings.h"
#include "reporters/results_reader.h"

namespace shardbench::cli {
namespace {

double Median(const StoredResult& r, const std::string& name) {
  const StoredMetric* m = r.metric(name);
  return m && m->median ? *m->median : 0.0;
}

// The busiest rank against the typical one (suites/rank_record.cc): ranks wait for a straggler,
// so only busy time names it.
void PrintStragglers(const StoredResult& r) {
  for (const auto& m : r.metrics) {
    if (m.name != "straggler_ratio" || m.per_rank.size() < 2) continue;
    size_t slowest = 0;
    for (size_t i = 1; i < m.per_rank.size(); ++i) {
      if (m.per_rank[i] > m.per_rank[slowest]) slowest = i;
    }
    std::printf("  stragglers      busy time %.2fx the median rank's on rank %zu (straggler_ratio)\n",
                Median(r, "straggler_ratio"), slowest);
  }
}

// Whether the measured steps were still warming up: a fixed warmup shorter than the steady
// state the data shows is warned about; warmup auto says where its metrics started.
void PrintSteadyState(const StoredResult& r) {
  if (!r.steady_state_step) return;  // a peer's result, or one that did not train
  const int64_t steady = *r.steady_state_step;
  if (const auto w = r.config_fields.warmup_steps) {
    if (*w < steady) {
      std::printf("  WARNING         warmup_steps %lld < steady state detected at step %lld: the first measured steps are "
                  "still warming up\n", static_cast<long long>(*w), static_cast<long long>(steady));
    }
  } else {
    std::printf("  warmup          auto: steady state detected at step %lld, step metrics from step %lld\n",
                static_cast<long long>(steady), static_cast<long long>(r.measured_from_step.value_or(0)));
  }
}

// "0.31 MiB", or "not measured" where the engine did not measure the metric (a peer's figures
// PyTorch does not expose): a figure nobody measured is never printed as 0.
std::string MiB(const StoredResult& r, const std::string& name) {
  const StoredMetric* m = r.metric(name);
  if (!m || !m->median) return r.not_measured_metric(name) ? "not measured" : "n/a";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", *m->median / 1048576.0);
  return text;
}

// The peer's own warnings: PyTorch's gradient-memory warning is often the first sign of the
// regression the run measures.
void PrintPeerWarnings(const StoredResult& r) {
  for (const auto& w : FoldPeerWarnings(r.peer_warnings)) std::printf("  peer warned     %s\n", w.c_str());
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

void PrintSummary(const nlohmann::json& result, const std::string& path) {
  const StoredResult r = ReadResult(result, path);
  std::printf("  status          %s%s\n", r.status.c_str(), r.message.empty() ? "" : (" (" + r.message + ")").c_str());
  const double nan = std::nan("");  // a run that recorded no loss
  std::printf("  loss            %.4f -> %.4f over %zu steps\n", r.loss.empty() ? nan : r.loss.front(),
              r.loss.empty() ? nan : r.loss.back(), r.loss.size());
  std::printf("  tokens/s        %.0f global, %.0f per rank (medians)\n", Median(r, "tokens_per_s"),
              Median(r, "tokens_per_s_per_rank"));
  std::printf("  step time       %.2f ms (p50); optimizer share %.1f%%\n", Median(r, "step_time") * 1e3,
              100 * Median(r, "optimizer_share"));
  PrintStragglers(r);
  PrintSteadyState(r);
  std::printf("  params          %.0f total, %.0f trainable\n", Median(r, "params_total"), Median(r, "params_trainable"));
  std::printf("  memory/rank     params %s (unsharded peak %s), grads %s, optimizer %s, RSS %s\n",
              MiB(r, "param_bytes").c_str(), MiB(r, "params_unsharded_peak_bytes").c_str(), MiB(r, "grad_bytes").c_str(),
              MiB(r, "optim_state_bytes").c_str(), MiB(r, "host_rss_peak").c_str());
  if (!r.not_measured.empty()) {
    std::string names;
    for (const auto& n : r.not_measured) names += (names.empty() ? "" : ", ") + n.name;
    std::printf("  not measured    %s (why: in the result's not_measured)\n", names.c_str());
  }
  PrintPeerWarnings(r);
  for (const auto& c : r.checks) {
    std::printf("  check %-9s %s  %s\n", c.name.c_str(), c.passed ? "PASS" : "FAIL", c.detail.c_str());
  }
  std::printf("  results         %s\n", path.c_str());
}

void PrintIndex(const nlohmann::json& index, const std::string& out_dir) {
  std::printf("\n%-64s %-7s %-8s %s\n", "instance", "colour", "expected", "");
  for (const auto& e : ReadIndex(index, out_dir + "/index.json")) {
    std::printf("%-64s %-7s %-8s %s\n", e.name.value_or("").c_str(), e.colour.value_or("").c_str(), e.expect.value_or("").c_str(),
                e.as_expected.value_or(false) ? "ok" : "UNEXPECTED");
  }
  std::printf("index: %s/index.json\n", out_dir.c_str());
}

void PrintUnexpected(const nlohmann::json& index, const std::string& out_dir) {
  for (const auto& e : ReadIndex(index, out_dir + "/index.json")) {
    if (e.as_expected.value_or(false)) continue;
    // A green run expected red has no message of its own: say why it was expected red.
    std::string why = e.message.value_or("");
    if (why.empty()) why = e.why && !e.why->empty() ? "it was expected " + e.expect.value_or("") + " because: " + *e.why : "no check failed";
    std::printf("%s: %s, expected %s: %s\n", e.name.value_or("").c_str(), e.colour.value_or("").c_str(),
                e.expect.value_or("").c_str(), why.c_str());
  }
}

}  // namespace shardbench::cli
