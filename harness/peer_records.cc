#include "harness/peer_records.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/common/error.h"
#include "engine/shard/mixed_precision.h"
#include "harness/metric_table.h"
#include "reporters/json_field.h"

namespace shardbench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Per-step series the peer may record, by RankRecord's own names; the rest stay as the record's
// constructor leaves them (-1: not traced).
constexpr std::pair<const char*, std::vector<double> RankRecord::*> kPeerSeries[] = {
    {"step_seconds", &RankRecord::step_seconds},          {"loss", &RankRecord::loss},
    {"local_loss", &RankRecord::local_loss},              {"optimizer_seconds", &RankRecord::optimizer_seconds},
    {"grad_sync_seconds", &RankRecord::grad_sync_seconds}, {"comm_wait_seconds", &RankRecord::comm_wait_seconds}};
constexpr const char* kRequiredSeries[] = {"step_seconds", "loss", "local_loss"};

// Bytes per name of a closed set (memory categories, collectives, dtypes) into `out` by index.
template <typename NameOf>
void ByName(const JsonField& f, std::vector<double>& out, size_t n, NameOf name_of) {
  for (const auto& [key, value] : f.Members()) {
    size_t i = 0;
    while (i < n && key != name_of(i)) ++i;
    if (i == n) value.Fail("a known name (not '" + key + "')");
    out[i] = value.Number();
  }
}

RankRecord ReadRank(const JsonField& f, int64_t steps) {
  RankRecord r(steps);
  // Everything the peer does not record is not measured.
  for (auto series : {&RankRecord::optimizer_seconds, &RankRecord::grad_sync_seconds, &RankRecord::comm_wait_seconds}) {
    (r.*series).assign(steps, kNaN);
  }
  for (const MetricRow& row : MetricTable()) {
    if (row.field) r.*row.field = kNaN;
  }
  r.checkpoint_bytes_total = kNaN;
  r.tracked_peak = kNaN;
  r.tracked_at_peak.assign(memory::kCategories, kNaN);
  r.tracked_peak_by.assign(memory::kCategories, kNaN);
  r.engine_held.assign(memory::kCategories, kNaN);
  r.engine_peak.assign(memory::kCategories, kNaN);
  r.param_bytes_by_dtype.assign(kStorageDtypes.size(), 0.0);

  const JsonField series = f.Required("series");
  for (const char* name : kRequiredSeries) series.Required(name);
  for (const auto& [name, member] : kPeerSeries) {
    if (auto v = series.Optional(name)) {
      r.*member = v->NumbersOrNaN();
      if (static_cast<int64_t>((r.*member).size()) != steps) v->Fail(std::to_string(steps) + " steps (as loss)");
    }
  }
  for (const auto& [name, value] : f.Required("figures").Members()) {
    if (name == "checkpoint_bytes_total") {
      r.checkpoint_bytes_total = value.Number();
      continue;
    }
    bool known = false;
    for (const MetricRow& row : MetricTable()) {
      if (row.field && name == row.name) {
        r.*row.field = value.NumberOrNaN();
        known = true;
      }
    }
    if (!known) value.Fail("a metric of harness/metric_table.cc measured per rank (not '" + name + "')");
  }
  auto category = [](size_t i) { return std::string(memory::CategoryName(memory::CategoryAt(i))); };
  if (auto v = f.Optional("held")) ByName(*v, r.engine_held, memory::kCategories, category);
  if (auto v = f.Optional("peak")) ByName(*v, r.engine_peak, memory::kCategories, category);
  if (auto v = f.Optional("param_bytes_by_dtype")) {
    ByName(*v, r.param_bytes_by_dtype, kStorageDtypes.size(),
           [](size_t i) { return std::string(shard::DtypeName(kStorageDtypes[i])); });
  }
  if (auto v = f.Optional("tracked_peak")) r.tracked_peak = v->Number();
  if (auto v = f.Optional("comm")) {
    constexpr size_t n = static_cast<size_t>(comm::Collective::kCount);
    r.comm_counts.assign(n, 0.0);
    r.comm_bytes.assign(n, 0.0);
    r.comm_seconds.assign(n, 0.0);
    for (const auto& [key, value] : v->Members()) {
      size_t i = 0;
      while (i < n && key != comm::CollectiveName(static_cast<comm::Collective>(i))) ++i;
      if (i == n) value.Fail("a collective of engine/comm/communicator.h (not '" + key + "')");
      r.comm_counts[i] = value.Required("count").Number();
      r.comm_bytes[i] = value.Required("bytes").Number();
      r.comm_seconds[i] = value.Required("seconds").NumberOrNaN();
    }
  }
  return r;
}

PeerRun Read(const JsonField& root) {
  if (root.Required("format").String() != kPeerRecordsFormat) root.Required("format").Fail(kPeerRecordsFormat);
  PeerRun run;
  run.started_at = root.Required("started_at").String();
  if (auto v = root.OptionalNonNull("refusal")) run.refusal = v->String();
  run.versions = root.Required("versions").Object();
  for (const auto& w : root.Required("peer_warnings").Elements()) run.warnings.push_back(w.String());
  if (run.refusal) return run;
  run.params_total = root.Required("params_total").NonNegativeInteger();
  run.params_trainable = root.Required("params_trainable").NonNegativeInteger();
  run.trainable_bytes = root.Required("trainable_bytes").NonNegativeInteger();
  for (const auto& c : root.Required("checks").Elements()) {
    run.checks.push_back({c.Required("name").String(), c.Required("passed").Bool(), c.Required("detail").String()});
  }
  if (auto v = root.OptionalNonNull("matmul_peak_flops_per_s")) run.matmul_peak = v->Number();
  if (auto v = root.OptionalNonNull("gpu_name")) run.gpu_name = v->String();
  // The peer names metrics by the table's names, never its own (a typo would hide a figure).
  for (const char* list : {"not_measured", "sampled"}) {
    for (const auto& [name, why] : root.Required(list).Members()) {
      if (!IsTableMetric(name)) why.Fail("a metric of harness/metric_table.cc (not '" + name + "')");
      (std::string(list) == "not_measured" ? run.not_measured : run.sampled)[name] = why.String();
    }
  }
  const auto ranks = root.Required("ranks").Elements();
  if (ranks.empty()) root.Required("ranks").Fail("one record per rank");
  const int64_t steps = static_cast<int64_t>(ranks[0].Required("series").Required("loss").Elements().size());
  for (const auto& rank : ranks) run.ranks.push_back(ReadRank(rank, steps));
  return run;
}

}  // namespace

void AddTraceSpans(std::vector<RankRecord>& ranks, const std::vector<profile::RankSpans>& timelines, int64_t first_step) {
  for (size_t r = 0; r < ranks.size() && r < timelines.size(); ++r) {
    RankRecord& rec = ranks[r];
    const int64_t steps = static_cast<int64_t>(rec.step_seconds.size());
    for (auto series : {&RankRecord::span_comm_seconds, &RankRecord::span_exposed_seconds, &RankRecord::span_idle_seconds}) {
      for (int64_t s = first_step; s < steps; ++s) (rec.*series)[s] = kNaN;  // a step without its span: not measured
    }
    std::vector<profile::Span> step_spans;
    for (const profile::Span& s : timelines[r].spans) {
      if (s.category == "step") step_spans.push_back(s);
    }
    std::sort(step_spans.begin(), step_spans.end(),
              [](const profile::Span& a, const profile::Span& b) { return a.begin_ns < b.begin_ns; });
    int64_t step = first_step;
    for (const profile::Span& s : step_spans) {
      if (step >= steps) break;
      const profile::SpanOverlap o = profile::SummarizeSpans(timelines[r].spans, s.begin_ns, s.end_ns);
      rec.span_comm_seconds[step] = 1e-9 * static_cast<double>(o.communication_ns);
      rec.span_exposed_seconds[step] = 1e-9 * static_cast<double>(o.exposed_ns);
      rec.span_idle_seconds[step] = 1e-9 * static_cast<double>(o.idle_ns);
      ++step;
    }
  }
}

PeerRun ReadPeerRecords(const nlohmann::json& document, const std::string& file) {
  try {
    return Read(JsonField(document, file));
  } catch (const InputError& e) {
    throw std::logic_error(std::string("the peer wrote a malformed records file (a bug of peers/torch_fsdp or of its "
                                       "reader, harness/peer_records.cc): ") + e.what());
  }
}

}  // namespace shardbench
