// AdamW with decoupled weight decay, matching torch.optim.AdamW (amsgrad=False,
// maximize=False) in three implementations, as torch has them:
//   for_loop - one parameter at a time (_single_tensor_adamw)
//   foreach  - each update step over all of a group's tensors at once (at::_foreach_*,
//              _multi_tensor_adamw): fewer kernel launches, more temporary memory
//   fused    - one kernel for the whole update (at::_fused_adamw_), where the device and dtype
//              support it; elsewhere a clear error
// Parameter groups carry their own lr and weight decay. The optimizer holds the parameter
// tensors themselves, so an engine that keeps parameter identity (use_orig_params) keeps an
// optimizer built before wrapping working. State exists only for parameters that got a
// gradient (with a sharded engine: this rank's shard).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace shardbench::optim {

enum class AdamWImpl { kForLoop, kForeach, kFused };
AdamWImpl ParseAdamWImpl(const std::string& name);  // InputError for anything else
const char* AdamWImplName(AdamWImpl impl);

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
  AdamWImpl impl = AdamWImpl::kForLoop;
};

// One parameter's state, as torch keeps it: exp_avg, exp_avg_sq (shaped like the parameter)
// and the step count (fused also reads it from a float tensor). Undefined until the first
// step that saw a gradient for the parameter.
struct AdamWState {
  at::Tensor exp_avg, exp_avg_sq;
  at::Tensor step_tensor;  // fused only
  int64_t step = 0;
  bool defined() const { return exp_avg.defined(); }
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
  const AdamWOptions& options() const { return options_; }
  // Bytes of optimizer state (exp_avg + exp_avg_sq, and fused's step tensors) allocated.
  int64_t state_bytes() const;
  int64_t steps_taken() const { return step_; }

  // State access for checkpoints. `param` is matched by identity (the tensor the optimizer
  // holds). find_state: nullptr when the optimizer does not hold `param`.
  AdamWState* find_state(const at::Tensor& param);
  // Allocates zero state for `param` if it has none (bytes tagged optim_state); InputError
  // when the optimizer does not hold it. After writing `step`, call sync_step_tensor.
  AdamWState& materialize_state(const at::Tensor& param);
  void sync_step_tensor(AdamWState& state);
  void set_steps_taken(int64_t steps) { step_ = steps; }

 private:
  using State = AdamWState;
  void allocate(State& s, const at::Tensor& p);
  // The group's parameters that have a gradient, with their (created if new) state.
  struct Active {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    std::vector<State*> states;
  };
  Active collect(size_t group);
  void step_for_loop(const ParamGroup& g, Active& a);
  void step_foreach(const ParamGroup& g, Active& a);
  void step_fused(const ParamGroup& g, Active& a);

  std::vector<ParamGroup> groups_;
  std::vector<std::vector<State>> state_;  // [group][param]
  AdamWOptions options_;
  int64_t step_ = 0;
};

}  // namespace shardbench::optim
