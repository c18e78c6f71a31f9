#include "harness/checkpoint_harness.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/memory/tracking_allocator.h"
#include "engine/profile/span_recorder.h"
#include "engine/train/trainer.h"
#include "harness/resume_point.h"

namespace shardbench {
namespace {

// Sums `values` over ranks (a no-op on one rank).
std::vector<double> SumOverRanks(comm::Communicator* comm, std::vector<double> values) {
  if (!comm) return values;
  at::Tensor t = at::tensor(values, at::kDouble).to(comm->device());
  comm->all_reduce(t);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

// How many digests differ, and the first differing name on this rank.
std::pair<int64_t, std::string> Compare(const std::vector<checkpoint::PieceDigest>& want,
                                        const std::vector<checkpoint::PieceDigest>& got) {
  int64_t differ = 0;
  std::string first;
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    if (i < want.size() && i < got.size() && want[i] == got[i]) continue;
    if (differ++ == 0) {
      const auto& w = want[std::min(i, want.size() - 1)];
      const auto& g = got[std::min(i, got.size() - 1)];
      first = "'" + w.name + "'" + (w.param != g.param ? " (values)" : "") +
              (w.exp_avg != g.exp_avg || w.exp_avg_sq != g.exp_avg_sq || w.has_state != g.has_state ? " (optimizer state)" : "") +
              (w.step != g.step ? " (step " + std::to_string(w.step) + " -> " + std::to_string(g.step) + ")" : "");
    }
  }
  return {differ, first};
}

}  // namespace

CheckpointHarness::CheckpointHarness(const Scenario& s, std::string dir, comm::Communicator* comm)
    : s_(s), dir_(std::move(dir)), comm_(comm), kind_name_(CheckpointTypeName(s.checkpoint.type)) {
  save_after_ = s.checkpoint.save_step > 0 ? s.checkpoint.save_step : s.total_steps();
}

void CheckpointHarness::save(EngineUnderTest& engine) {
  const auto kind = checkpoint::ParseStateDictKind(kind_name_);
  checkpoint::StateDictTarget target = engine.state_dict_target();
  if (kind == checkpoint::StateDictKind::kAdapter) target.optimizer = nullptr;
  if (s_.checks.state_dict_roundtrip) at_save_ = checkpoint::DigestPieces(target.pieces(), target.optimizer);
  // The save's traffic and memory are its own, not the training steps'.
  if (comm_) comm_->set_stats_paused(true);
  const memory::MemoryStats before = memory::Snapshot();
  stats_before_save_ = before;
  memory::ResetPeaks();
  const checkpoint::SaveReport r = [&] {
    profile::ScopedSpan span("checkpoint", "checkpoint save", kind_name_);
    return checkpoint::SaveStateDict(kind, target, dir_);
  }();
  measures_.save_peak_bytes = static_cast<double>(memory::Snapshot().peak - before.current);
  memory::ResetPeaks();
  if (comm_) comm_->set_stats_paused(false);
  measures_.save_seconds = r.seconds;
  measures_.bytes_this_rank = static_cast<double>(r.bytes_this_rank);
  measures_.bytes_total = static_cast<double>(r.bytes_total);
}

void CheckpointHarness::resume_from(EngineUnderTest& engine, const CheckpointMeasures& saved,
                                    std::vector<checkpoint::PieceDigest> digests_at_save) {
  const auto kind = checkpoint::ParseStateDictKind(kind_name_);
  checkpoint::StateDictTarget target = engine.state_dict_target();
  if (kind == checkpoint::StateDictKind::kAdapter) target.optimizer = nullptr;
  if (comm_) comm_->set_stats_paused(true);  // the load's traffic is no step's
  checkpoint::LoadStateDict(kind, target, dir_);
  if (comm_) comm_->set_stats_paused(false);
  measures_ = saved;
  at_save_ = std::move(digests_at_save);
}

void LoadCheckpointAtInit(EngineUnderTest& engine, const std::string& dir, comm::Communicator* comm) {
  if (comm) comm->set_stats_paused(true);
  checkpoint::LoadStateDict(checkpoint::StateDictKind::kSharded, engine.state_dict_target(), dir);
  if (comm) comm->set_stats_paused(false);
}

void CheckpointHarness::remember_final(EngineUnderTest& engine) {
  if (!s_.checks.resume) return;
  const checkpoint::StateDictTarget target = engine.state_dict_target();
  at_end_ = checkpoint::DigestPieces(target.pieces(), target.optimizer);
}

std::vector<Check> CheckpointHarness::run_checks(const std::vector<double>& run_losses, const RunRecipe& recipe) {
  std::vector<Check> out;
  if (!s_.checks.state_dict_roundtrip && !s_.checks.resume) return out;
  const auto kind = checkpoint::ParseStateDictKind(kind_name_);
  const bool adapter = kind == checkpoint::StateDictKind::kAdapter;
  // A fresh model with other weights, so nothing matches by accident; an adapter is loaded over
  // the same base it was trained on (it holds nothing else).
  BuiltModel built = recipe.build_model(adapter ? s_.train.seed : s_.train.seed + 1);
  auto& model = built.model;
  EngineUnderTest fresh(s_, *model, comm_, built.materialize);
  checkpoint::StateDictTarget target = fresh.state_dict_target();
  if (adapter) target.optimizer = nullptr;
  checkpoint::LoadOptions lenient;
  lenient.strict = false;  // count missing/unexpected keys for the check instead of refusing
  const checkpoint::LoadReport loaded = checkpoint::LoadStateDict(kind, target, dir_, lenient);
  measures_.load_seconds = loaded.seconds;

  if (s_.checks.state_dict_roundtrip) {
    const auto [differ, first] = Compare(at_save_, checkpoint::DigestPieces(target.pieces(), target.optimizer));
    const auto sums = SumOverRanks(comm_, {static_cast<double>(differ), static_cast<double>(loaded.missing.size()),
                                           static_cast<double>(loaded.unexpected.size()),
                                           static_cast<double>(at_save_.size())});
    const bool ok = sums[0] == 0 && sums[1] == 0 && sums[2] == 0;
    char detail[512];
    std::snprintf(detail, sizeof(detail),
                  "%s checkpoint saved after step %lld: %.0f tensors compared bit for bit (params%s) over %d ranks, "
                  "%.0f differ%s; %.0f missing, %.0f unexpected keys",
                  kind_name_.c_str(), static_cast<long long>(save_after_), sums[3],
                  adapter ? "" : " and optimizer state", comm_ ? comm_->world_size() : 1, sums[0],
                  first.empty() ? (sums[0] > 0 ? " (on another rank)" : "") : (" (first on rank 0: " + first + ")").c_str(),
                  sums[1], sums[2]);
    out.push_back({"state_dict_roundtrip", ok, detail});
  }

  if (s_.checks.resume) {
    train::TrainerOptions options = TrainerOptionsFor(s_);
    options.first_step = save_after_;
    train::Trainer trainer(*model, fresh.optimizer(), comm_, fresh.sync(), options);
    double worst = 0;
    int64_t unequal = 0;
    for (int64_t step = save_after_; step < s_.total_steps(); ++step) {
      const double loss = trainer.step(recipe.batches(step)).loss;
      worst = std::max(worst, std::abs(loss - run_losses[step]));
      unequal += loss != run_losses[step];
    }
    const auto [differ, first] = Compare(at_end_, checkpoint::DigestPieces(target.pieces(), target.optimizer));
    const auto sums = SumOverRanks(comm_, {static_cast<double>(differ)});
    const int64_t resumed = s_.total_steps() - save_after_;
    char detail[512];
    std::snprintf(detail, sizeof(detail),
                  "resumed after step %lld from the %s checkpoint and trained %lld steps: %lld of %lld losses differ "
                  "from the uninterrupted run (largest difference %.3g); final state: %.0f tensors differ%s",
                  static_cast<long long>(save_after_), kind_name_.c_str(), static_cast<long long>(resumed),
                  static_cast<long long>(unequal), static_cast<long long>(resumed), worst, sums[0],
                  first.empty() ? "" : (" (first on rank 0: " + first + ")").c_str());
    out.push_back({"resume", unequal == 0 && sums[0] == 0, detail});
  }
  return out;
}

void CheckpointHarness::finish() {
  if (!enabled()) return;
  if (comm_) comm_->barrier();  // every rank is done reading
  if (!comm_ || comm_->rank() == 0) {
    if (!s_.checkpoint.keep) std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(ResumeDir(dir_));
  }
}

}  // namespace shardbench
