#include "harness/rank_record.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "engine/memory/tracking_allocator.h"
#include "engine/shard/mixed_precision.h"
#include "reporters/statistics.h"

namespace shardbench {
namespace {
constexpr size_t kCollectives = static_cast<size_t>(comm::Collective::kCount);
constexpr size_t kScalars = 25;
constexpr size_t kCategories = memory::kCategories;

double Max(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }
double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

Metric Exact(std::string name, std::string unit, std::vector<double> per_rank) {
  Metric m{std::move(name), std::move(unit), "lower", "exact", {Max(per_rank)}, per_rank};
  return m;
}
// From the kernel trace, per measured step: the slowest rank's communication, exposed and
// compute time, and the overlap ratio over all ranks' communication (1 - exposed / total).
void AddKernelMetrics(const std::vector<RankRecord>& ranks, int64_t warmup, std::vector<Metric>& out) {
  const int64_t steps = static_cast<int64_t>(ranks[0].step_seconds.size());
  Metric comm{"kernel_comm_time", "s", "lower", "sampled", {}, {}};
  Metric exposed{"kernel_exposed_comm_time", "s", "lower", "sampled", {}, {}};
  Metric compute{"kernel_compute_time", "s", "lower", "sampled", {}, {}};
  Metric ratio{"kernel_overlap_ratio", "ratio", "higher", "sampled", {}, {}};
  for (int64_t s = warmup; s < steps; ++s) {
    std::vector<double> c, e, k;
    for (const auto& r : ranks) {
      c.push_back(r.kernel_comm_seconds[s]);
      e.push_back(r.kernel_exposed_seconds[s]);
      k.push_back(r.kernel_compute_seconds[s]);
    }
    comm.samples.push_back(Max(c));
    exposed.samples.push_back(Max(e));
    compute.samples.push_back(Max(k));
    const double total = std::accumulate(c.begin(), c.end(), 0.0);
    ratio.samples.push_back(total > 0 ? 1.0 - std::accumulate(e.begin(), e.end(), 0.0) / total : 1.0);
  }
  for (const auto& r : ranks) {
    auto median_of = [&](const std::vector<double>& v) { return Median(std::vector<double>(v.begin() + warmup, v.end())); };
    comm.per_rank.push_back(median_of(r.kernel_comm_seconds));
    exposed.per_rank.push_back(median_of(r.kernel_exposed_seconds));
    compute.per_rank.push_back(median_of(r.kernel_compute_seconds));
    const double c = std::accumulate(r.kernel_comm_seconds.begin() + warmup, r.kernel_comm_seconds.end(), 0.0);
    const double e = std::accumulate(r.kernel_exposed_seconds.begin() + warmup, r.kernel_exposed_seconds.end(), 0.0);
    ratio.per_rank.push_back(c > 0 ? 1.0 - e / c : 1.0);
  }
  out.insert(out.end(), {comm, exposed, compute, ratio});
}

// Ranks step in lockstep, so a straggler lengthens every rank's step: its peers wait for it in
// their collectives. Busy time (step time minus time blocked in collectives) tells it apart.
// straggler_ratio: the busiest rank's median busy time over the median rank's (1 when all are
// alike; 2 when one rank works twice as long as the typical one).
void AddStragglerMetrics(const std::vector<RankRecord>& ranks, int64_t from, std::vector<Metric>& out) {
  const int64_t steps = static_cast<int64_t>(ranks[0].step_seconds.size());
  auto busy = [](const RankRecord& r, int64_t s) { return r.step_seconds[s] - r.comm_wait_seconds[s]; };
  Metric busy_time{"step_time_busy", "s", "lower", "sampled", {}, {}};
  for (int64_t s = from; s < steps; ++s) {
    std::vector<double> at_step;
    for (const auto& r : ranks) at_step.push_back(busy(r, s));
    busy_time.samples.push_back(Max(at_step));
  }
  for (const auto& r : ranks) {
    std::vector<double> v;
    for (int64_t s = from; s < steps; ++s) v.push_back(busy(r, s));
    busy_time.per_rank.push_back(Percentile(v, 50));
  }
  Metric ratio{"straggler_ratio", "ratio", "lower", "sampled", {}, {}};
  const double typical = Percentile(busy_time.per_rank, 50);
  for (double b : busy_time.per_rank) ratio.per_rank.push_back(b / typical);
  // max/median of one rank is exactly 1 (not a rounding of b/b twice).
  ratio.samples = {ranks.size() == 1 ? 1.0 : Max(busy_time.per_rank) / typical};
  out.insert(out.end(), {busy_time, ratio});
}

}  // namespace

std::vector<double> SlowestRankStepSeconds(const std::vector<RankRecord>& ranks) {
  std::vector<double> out(ranks[0].step_seconds.size(), 0.0);
  for (const auto& r : ranks) {
    for (size_t s = 0; s < out.size(); ++s) out[s] = std::max(out[s], r.step_seconds[s]);
  }
  return out;
}

void RankRecord::set_comm(const comm::CommStats& stats) {
  comm_counts.assign(kCollectives, 0);
  comm_bytes.assign(kCollectives, 0);
  comm_seconds.assign(kCollectives, 0);
  for (size_t i = 0; i < kCollectives; ++i) {
    comm_counts[i] = static_cast<double>(stats[i].count);
    comm_bytes[i] = static_cast<double>(stats[i].bytes);
    comm_seconds[i] = stats[i].seconds;
  }
}

std::vector<double> RankRecord::pack() const {
  std::vector<double> out;
  for (const auto* v : {&step_seconds, &optimizer_seconds, &grad_sync_seconds, &loss, &comm_wait_seconds, &kernel_comm_seconds,
                        &kernel_exposed_seconds, &kernel_compute_seconds}) out.insert(out.end(), v->begin(), v->end());
  for (double x : {init_seconds, construct_seconds, load_seconds, shard_seconds, time_to_first_step, param_bytes, params_sharded_bytes,
                   params_unsharded_peak_bytes, grad_bytes, grads_unsharded_peak_bytes, optim_state_bytes, rss_peak_bytes, checkpoint_bytes_read,
                   tracked_peak, device_allocated_peak, device_reserved_peak, checkpoint_save_seconds,
                   checkpoint_load_seconds, checkpoint_bytes, checkpoint_bytes_total, checkpoint_save_peak_bytes,
                   init_peak_bytes, device_active_peak, device_alloc_retries, device_ooms}) {
    out.push_back(x);
  }
  for (const auto* v : {&comm_counts, &comm_bytes, &comm_seconds}) {
    std::vector<double> padded(*v);
    padded.resize(kCollectives, 0.0);
    out.insert(out.end(), padded.begin(), padded.end());
  }
  for (const auto* v : {&tracked_at_peak, &tracked_peak_by, &param_bytes_by_dtype}) {
    std::vector<double> padded(*v);
    padded.resize(v == &param_bytes_by_dtype ? kStorageDtypes.size() : kCategories, 0.0);
    out.insert(out.end(), padded.begin(), padded.end());
  }
  return out;
}

RankRecord RankRecord::Unpack(const std::vector<double>& p, int64_t steps) {
  RankRecord r(steps);
  size_t i = 0;
  for (auto* v : {&r.step_seconds, &r.optimizer_seconds, &r.grad_sync_seconds, &r.loss, &r.comm_wait_seconds, &r.kernel_comm_seconds,
                  &r.kernel_exposed_seconds, &r.kernel_compute_seconds}) {
    for (auto& x : *v) x = p[i++];
  }
  for (double* x : {&r.init_seconds, &r.construct_seconds, &r.load_seconds, &r.shard_seconds, &r.time_to_first_step, &r.param_bytes,
                    &r.params_sharded_bytes, &r.params_unsharded_peak_bytes, &r.grad_bytes,
                    &r.grads_unsharded_peak_bytes, &r.optim_state_bytes,
                    &r.rss_peak_bytes, &r.checkpoint_bytes_read, &r.tracked_peak, &r.device_allocated_peak,
                    &r.device_reserved_peak, &r.checkpoint_save_seconds, &r.checkpoint_load_seconds,
                    &r.checkpoint_bytes, &r.checkpoint_bytes_total, &r.checkpoint_save_peak_bytes,
                    &r.init_peak_bytes, &r.device_active_peak, &r.device_alloc_retries, &r.device_ooms}) {
    *x = p[i++];
  }
  for (auto* v : {&r.comm_counts, &r.comm_bytes, &r.comm_seconds}) {
    v->assign(p.begin() + i, p.begin() + i + kCollectives);
    i += kCollectives;
  }
  for (auto* v : {&r.tracked_at_peak, &r.tracked_peak_by}) {
    v->assign(p.begin() + i, p.begin() + i + kCategories);
    i += kCategories;
  }
  r.param_bytes_by_dtype.assign(p.begin() + i, p.begin() + i + kStorageDtypes.size());
  static_assert(kScalars == 25, "keep pack/unpack in step");
  return r;
}

std::vector<RankRecord> GatherRankRecords(const RankRecord& local, comm::Communicator* comm) {
  const int64_t steps = static_cast<int64_t>(local.step_seconds.size());
  if (!comm) return {local};
  std::vector<double> packed = local.pack();
  at::Tensor in = at::tensor(packed, at::kDouble).to(comm->device());
  at::Tensor out = at::empty({in.numel() * comm->world_size()}, in.options());
  comm->all_gather(out, in);
  out = out.cpu();
  std::vector<RankRecord> all;
  for (int r = 0; r < comm->world_size(); ++r) {
    at::Tensor part = out.narrow(0, r * in.numel(), in.numel()).contiguous();
    all.push_back(RankRecord::Unpack(std::vector<double>(part.data_ptr<double>(), part.data_ptr<double>() + part.numel()), steps));
  }
  return all;
}

std::vector<Metric> BuildMetrics(const std::vector<RankRecord>& ranks, int64_t warmup, int64_t global_tokens,
                                 int64_t params_total, int64_t params_trainable, std::optional<int64_t> step_metrics_from) {
  const int64_t steps = static_cast<int64_t>(ranks[0].step_seconds.size());
  const int64_t from = step_metrics_from.value_or(warmup);
  const double world = static_cast<double>(ranks.size());
  Metric step_time{"step_time", "s", "lower", "sampled", {}, {}};
  Metric tokens{"tokens_per_s", "tokens/s", "higher", "sampled", {}, {}};
  Metric tokens_rank{"tokens_per_s_per_rank", "tokens/s", "higher", "sampled", {}, {}};
  Metric opt_share{"optimizer_share", "ratio", "lower", "sampled", {}, {}};
  Metric sync{"grad_sync_time", "s", "lower", "sampled", {}, {}};
  for (int64_t s = from; s < steps; ++s) {
    // Ranks step in lockstep (the gradient all-reduce), so a step lasts as long as its slowest rank.
    std::vector<double> at_step, shares, syncs;
    for (const auto& r : ranks) {
      at_step.push_back(r.step_seconds[s]);
      shares.push_back(r.optimizer_seconds[s] / r.step_seconds[s]);
      syncs.push_back(r.grad_sync_seconds[s]);
    }
    step_time.samples.push_back(Max(at_step));
    tokens.samples.push_back(static_cast<double>(global_tokens) / Max(at_step));
    tokens_rank.samples.push_back(static_cast<double>(global_tokens) / world / Max(at_step));
    opt_share.samples.push_back(std::accumulate(shares.begin(), shares.end(), 0.0) / world);
    sync.samples.push_back(Max(syncs));
  }
  for (const auto& r : ranks) {
    std::vector<double> measured(r.step_seconds.begin() + from, r.step_seconds.end());
    std::vector<double> opt(r.optimizer_seconds.begin() + from, r.optimizer_seconds.end());
    std::vector<double> gs(r.grad_sync_seconds.begin() + from, r.grad_sync_seconds.end());
    step_time.per_rank.push_back(Median(measured));
    tokens_rank.per_rank.push_back(static_cast<double>(global_tokens) / world / Median(measured));
    double share = 0;
    for (size_t i = 0; i < opt.size(); ++i) share += opt[i] / measured[i];
    opt_share.per_rank.push_back(share / static_cast<double>(opt.size()));
    sync.per_rank.push_back(Median(gs));
  }
  tokens.per_rank = tokens_rank.per_rank;
  std::vector<Metric> out{step_time, tokens, tokens_rank, opt_share, sync};
  if (from < steps) AddStragglerMetrics(ranks, from, out);
  if (warmup < steps && ranks[0].kernel_comm_seconds[warmup] >= 0) AddKernelMetrics(ranks, warmup, out);

  auto per_rank = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : ranks) v.push_back(field(r));
    return v;
  };
  for (auto [name, field] : std::vector<std::pair<std::string, double RankRecord::*>>{
           {"init_time", &RankRecord::init_seconds},
           {"init_time_construct", &RankRecord::construct_seconds},
           {"init_time_load", &RankRecord::load_seconds},
           {"init_time_shard", &RankRecord::shard_seconds},
           {"time_to_first_step", &RankRecord::time_to_first_step}}) {
    auto v = per_rank([f = field](const RankRecord& r) { return r.*f; });
    out.push_back({name, "s", "lower", "sampled", {Max(v)}, v});
  }
  out.push_back({"params_total", "count", "lower", "exact", {static_cast<double>(params_total)}, {}});
  out.push_back({"params_trainable", "count", "lower", "exact", {static_cast<double>(params_trainable)}, {}});
  out.push_back(Exact("param_bytes", "bytes", per_rank([](const RankRecord& r) { return r.param_bytes; })));
  for (size_t d = 0; d < kStorageDtypes.size(); ++d) {  // the dtypes some rank holds
    auto bytes = per_rank([d](const RankRecord& r) { return r.param_bytes_by_dtype[d]; });
    if (Max(bytes) > 0) out.push_back(Exact(std::string("param_bytes_") + shard::DtypeName(kStorageDtypes[d]), "bytes", bytes));
  }
  out.push_back(Exact("params_unsharded_peak_bytes", "bytes",
                      per_rank([](const RankRecord& r) { return r.params_unsharded_peak_bytes; })));
  out.push_back(Exact("grad_bytes", "bytes", per_rank([](const RankRecord& r) { return r.grad_bytes; })));
  out.push_back(Exact("grads_unsharded_peak_bytes", "bytes",
                      per_rank([](const RankRecord& r) { return r.grads_unsharded_peak_bytes; })));
  out.push_back(Exact("optim_state_bytes", "bytes", per_rank([](const RankRecord& r) { return r.optim_state_bytes; })));
  out.push_back(Exact("peak_allocated", "bytes", per_rank([](const RankRecord& r) { return r.tracked_peak; })));
  out.push_back(Exact("init_peak_bytes", "bytes", per_rank([](const RankRecord& r) { return r.init_peak_bytes; })));
  out.push_back(Exact("checkpoint_bytes_read", "bytes", per_rank([](const RankRecord& r) { return r.checkpoint_bytes_read; })));
  {
    auto v = per_rank([](const RankRecord& r) { return r.rss_peak_bytes; });
    out.push_back({"host_rss_peak", "bytes", "lower", "sampled", {Max(v)}, v});
  }
  if (ranks[0].device_allocated_peak >= 0) {
    // The CUDA caching allocator: allocated and active bytes and the retry/OOM counts follow
    // the program's allocations (exact); reserved bytes and fragmentation (reserved -
    // allocated at the peaks) depend on how the cache happened to split blocks (sampled).
    auto device = [&](double RankRecord::*f) { return per_rank([f](const RankRecord& r) { return r.*f; }); };
    out.push_back(Exact("device_allocated_peak", "bytes", device(&RankRecord::device_allocated_peak)));
    out.push_back(Exact("device_active_peak", "bytes", device(&RankRecord::device_active_peak)));
    auto reserved = device(&RankRecord::device_reserved_peak);
    out.push_back({"device_reserved_peak", "bytes", "lower", "sampled", {Max(reserved)}, reserved});
    auto fragmentation = per_rank([](const RankRecord& r) { return r.device_reserved_peak - r.device_allocated_peak; });
    out.push_back({"device_fragmentation_peak", "bytes", "lower", "sampled", {Max(fragmentation)}, fragmentation});
    out.push_back(Exact("device_alloc_retries", "count", device(&RankRecord::device_alloc_retries)));
    out.push_back(Exact("device_ooms", "count", device(&RankRecord::device_ooms)));
  }
  if (ranks[0].checkpoint_save_seconds >= 0) {
    auto save = per_rank([](const RankRecord& r) { return r.checkpoint_save_seconds; });
    out.push_back({"checkpoint_save_time", "s", "lower", "sampled", {Max(save)}, save});
    // The whole checkpoint's bytes; per rank, what each rank wrote.
    out.push_back({"checkpoint_bytes", "bytes", "lower", "exact", {ranks[0].checkpoint_bytes_total},
                   per_rank([](const RankRecord& r) { return r.checkpoint_bytes; })});
    out.push_back(Exact("checkpoint_save_peak_bytes", "bytes",
                        per_rank([](const RankRecord& r) { return r.checkpoint_save_peak_bytes; })));
  }
  if (ranks[0].checkpoint_load_seconds >= 0) {
    auto load = per_rank([](const RankRecord& r) { return r.checkpoint_load_seconds; });
    out.push_back({"checkpoint_load_time", "s", "lower", "sampled", {Max(load)}, load});
  }
  if (!ranks[0].comm_counts.empty()) {
    for (size_t c = 0; c < kCollectives; ++c) {
      const std::string name = comm::CollectiveName(static_cast<comm::Collective>(c));
      auto counts = per_rank([c](const RankRecord& r) { return r.comm_counts[c]; });
      if (Max(counts) == 0) continue;
      out.push_back(Exact("comm_" + name + "_count", "count", counts));
      out.push_back(Exact("comm_" + name + "_bytes", "bytes", per_rank([c](const RankRecord& r) { return r.comm_bytes[c]; })));
      auto secs = per_rank([c](const RankRecord& r) { return r.comm_seconds[c]; });
      out.push_back({"comm_" + name + "_time", "s", "lower", "sampled", {Max(secs)}, secs});
    }
  }
  return out;
}

std::vector<RankMemory> BuildMemory(const std::vector<RankRecord>& ranks) {
  std::vector<RankMemory> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankMemory m;
    m.rank = static_cast<int>(i);
    // What the tracking allocator saw at this rank's peak, by category.
    for (size_t c = 0; c < kCategories; ++c) {
      const auto cat = memory::CategoryName(static_cast<memory::Category>(c));
      m.categories[cat] = static_cast<int64_t>(ranks[i].tracked_at_peak[c]);
      m.peak_by_category[cat] = static_cast<int64_t>(ranks[i].tracked_peak_by[c]);
    }
    m.peak_allocated = static_cast<int64_t>(ranks[i].tracked_peak);
    if (ranks[i].device_allocated_peak >= 0) {  // a GPU run: the device allocator's own peaks
      m.peak_allocated = static_cast<int64_t>(ranks[i].device_allocated_peak);
      m.peak_reserved = static_cast<int64_t>(ranks[i].device_reserved_peak);
    }
    // What the engine holds between steps, exactly, from its tensors.
    m.held = {{"params_sharded", static_cast<int64_t>(ranks[i].params_sharded_bytes)},
              {"params_unsharded", static_cast<int64_t>(ranks[i].param_bytes - ranks[i].params_sharded_bytes)},
              {"grads", static_cast<int64_t>(ranks[i].grad_bytes)},
              {"optim_state", static_cast<int64_t>(ranks[i].optim_state_bytes)}};
    m.host_rss_peak = static_cast<int64_t>(ranks[i].rss_peak_bytes);
    out.push_back(m);
  }
  return out;
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : node) j[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& item : node) j.push_back(YamlToJson(item));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = node.Scalar();
      if (s == "true" || s == "false") return s == "true";
      try {
        size_t used = 0;
        long long i = std::stoll(s, &used);
        if (used == s.size()) return i;
        double d = std::stod(s, &used);
        if (used == s.size()) return d;
      } catch (const std::exception&) {
      }
      return s;
    }
    default:
      return nullptr;
  }
}

}  // namespace shardbench
