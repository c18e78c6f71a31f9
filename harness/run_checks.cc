#include "harness/run_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace shardbench {

// Each rank's own loss names the ones that diverged (the global loss is their mean, so all see
// it). A non-finite gradient shows one step later, in the loss of the weights it updated.
Check FiniteCheck(const std::vector<RankRecord>& all, int64_t planned_steps) {
  const std::vector<double>& loss = all[0].loss;
  for (size_t step = 0; step < loss.size(); ++step) {
    std::string ranks;
    for (size_t r = 0; r < all.size(); ++r) {
      if (!std::isfinite(all[r].local_loss[step])) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    }
    if (std::isfinite(loss[step]) && ranks.empty()) continue;
    char value[32];
    std::snprintf(value, sizeof(value), "%g", loss[step]);
    return {"finite", false,
            "the loss became " + std::string(value) + " at step " + std::to_string(step) + " of " +
                std::to_string(planned_steps) + " (counting from 0; " +
                (ranks.empty() ? "every rank's own loss finite" : "rank(s) " + ranks + " diverged") +
                "): the run diverged (learning rate, data or a numerics bug); training stopped there"};
  }
  return {"finite", true, "every step's loss finite on every rank (" + std::to_string(loss.size()) + " steps)"};
}

// The check that turns a silently broken setup (an optimizer holding orphaned parameters) red.
// Its loss part compares a batch with itself: the first step's loss against the last step's
// compares two batches, and on a short run whose update moves the loss less than batches differ
// it was a coin flip (the ~1B LoRA baseline at lr 1e-4, docs/architecture.md "Did it learn").
namespace {

// NaN equals NaN here: a parameter that held a NaN before and after did not change (comparing
// with != would call every NaN-holding frozen weight "changed").
bool SameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool Changed(const Fingerprint& before, const Fingerprint& after) {
  return !SameValue(before.first, after.first) || !SameValue(before.second, after.second);
}

}  // namespace

Check LearningCheck(double first_loss, double first_batch_after, const std::vector<std::pair<std::string, bool>>& trainable,
                    const Fingerprints& before, const Fingerprints& after) {
  int64_t unchanged_trainable = 0, changed_frozen = 0;
  std::string example;
  for (size_t i = 0; i < trainable.size(); ++i) {
    const bool changed = Changed(before[i].second, after[i].second);
    if (trainable[i].second && !changed) {
      if (unchanged_trainable++ == 0) example = "trainable '" + trainable[i].first + "' did not change";
    } else if (!trainable[i].second && changed) {
      if (changed_frozen++ == 0 && example.empty()) example = "frozen '" + trainable[i].first + "' changed";
    }
  }
  const bool dropped = first_batch_after < first_loss;  // false for NaN
  Check c{"learning", dropped && unchanged_trainable == 0 && changed_frozen == 0, ""};
  c.detail = "step 0's batch: loss " + std::to_string(first_loss) + " -> " + std::to_string(first_batch_after) +
             " trained" + (dropped ? " (dropped)" : " (did not drop)") + "; trainable unchanged: " +
             std::to_string(unchanged_trainable) + ", frozen changed: " + std::to_string(changed_frozen) +
             (example.empty() ? "" : " (e.g. " + example + ")");
  return c;
}

}  // namespace shardbench
