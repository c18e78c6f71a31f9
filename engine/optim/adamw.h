// AdamW with decoupled weight decay, matching torch.optim.AdamW's update (amsgrad=False,
// maximize=False). Parameter groups carry their own lr and weight decay. The optimizer holds
// the parameter tensors themselves (not copies), so an engine that keeps parameter identity
// (use_orig_params) keeps an optimizer built before wrapping working.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace shardbench::optim {

struct ParamGroup {
  std::string name;  // "decay", "no_decay": shown in results
  std::vector<at::Tensor> params;
  double lr = 1e-3;
  double weight_decay = 0.01;  // torch.optim.AdamW's default
};

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class AdamW {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});

  // One update of every parameter that has a gradient (a parameter without one is skipped
  // and its state is not created, as in torch).
  void step();
  // Gradients to undefined (torch's zero_grad(set_to_none=True)).
  void zero_grad();

  std::vector<ParamGroup>& groups() { return groups_; }
  // Bytes of optimizer state (exp_avg + exp_avg_sq) currently allocated.
  int64_t state_bytes() const;
  int64_t steps_taken() const { return step_; }

 private:
  struct State {
    at::Tensor exp_avg, exp_avg_sq;
    int64_t step = 0;
  };
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<State>> state_;  // [group][param]
  AdamWOptions options_;
  int64_t step_ = 0;
};

}  // namespace shardbench::optim
