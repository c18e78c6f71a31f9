#include "harness/reference_parity.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "harness/scenario/scenario_model.h"
#include "engine/optim/param_groups.h"
#include "engine/train/trainer.h"
#include "harness/engine_setup.h"
#include "harness/model_source.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {

bool LossParityApplies(const Scenario& s) {
  return s.checks.loss_parity && !(s.engine == Engine::kReference && s.world_size == 1);
}

Check LossParityCheck(const Scenario& s, const std::vector<double>& engine_loss) {
  // The same weights in the same stored dtypes (model_dtype, upcast), built whole on this process.
  Scenario whole = s;
  whole.init = Init::kEager;
  auto m = std::move(BuildScenarioModel(whole, s.train.seed, at::Device(at::kCPU)).model);
  // use_orig_params=false exposes one flat parameter per unit, so the engine's optimizer
  // cannot exempt norms from weight decay: neither does the reference then.
  const bool flat_params = EngineKindLike(s) == shard::EngineKind::kFlat && !s.sharding.use_orig_params &&
                           s.optimizer.build == OptimizerBuild::kAfterWrap;
  optim::AdamW opt(optim::MakeParamGroups(*m, s.train.lr, s.train.weight_decay,
                                          s.train.no_decay_on_norms && !flat_params));
  train::Trainer trainer(*m, opt, nullptr, nullptr, TrainerOptionsFor(s));
  const std::unique_ptr<model::DataSource> data = ScenarioData(s, m->config().vocab_size);
  const int64_t global_batch = s.train.batch_size * s.train.grad_accumulation * s.world_size;
  const int64_t judged = std::min<int64_t>(s.checks.loss_parity_steps, static_cast<int64_t>(engine_loss.size()));
  double worst = 0, worst_all = 0;
  int64_t worst_step = 0, both_diverged_from = -1;
  for (int64_t step = 0; step < static_cast<int64_t>(engine_loss.size()); ++step) {
    const double ref = trainer.step(data->batch(step, 0, global_batch)).loss;
    const double e = engine_loss[step];
    // A step where one side diverged is as far apart as can be; where both did alike, they agree.
    const bool finite = std::isfinite(e) && std::isfinite(ref);
    const bool same_divergence = (std::isnan(e) && std::isnan(ref)) || e == ref;
    const double rel = finite ? std::abs(e - ref) / std::max(std::abs(ref), 1e-12)
                              : (same_divergence ? 0.0 : std::numeric_limits<double>::infinity());
    if (!finite && same_divergence && both_diverged_from < 0) both_diverged_from = step;
    worst_all = std::max(worst_all, rel);
    if (step < judged && rel > worst) {
      worst = rel;
      worst_step = step;
    }
  }
  std::ostringstream detail;
  detail << "max relative loss difference " << worst << " at step " << worst_step << " over the first " << judged
         << " steps (tolerance " << s.checks.loss_rtol << "); " << worst_all << " over all " << engine_loss.size()
         << " (reference: one process, global batch " << global_batch << ")";
  if (both_diverged_from >= 0) detail << "; both diverged alike from step " << both_diverged_from;
  return {"loss_parity", worst <= s.checks.loss_rtol, detail.str()};
}

}  // namespace shardbench
