// A minimal module tree: named parameters, buffers and children, like torch.nn.Module but
// without LibTorch's C++ frontend (whose headers dominate compile time). Modules own their
// tensors as plain members and register pointers to them, so a sharding engine can swap a
// parameter for a view of its flat buffer in place (`*slot = view`) and later restore it.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/param_init.h"

namespace shardbench::model {

class Module;

// Hooks a sharding engine installs on the modules it wraps: unshard before the module's
// forward, reshard after it, and attach backward hooks to its output (FSDP's pre/post-forward).
class ForwardHooks {
 public:
  virtual ~ForwardHooks() = default;
  // `inputs`: the forward's tensor arguments (an engine hooks those that require grad to learn
  // when the module's backward is over).
  virtual void pre_forward(Module& module, at::ArrayRef<at::Tensor> inputs) = 0;
  // Returns the output (possibly the same tensor with hooks registered on it).
  virtual at::Tensor post_forward(Module& module, at::Tensor output) = 0;
  // Activation checkpointing re-runs a unit's forward inside backward (without these hooks):
  // before it, the module's parameters must be the gathered ones, connected to autograd (grad
  // mode is on). The unit's own post-backward puts them back to shards.
  virtual void before_recompute(Module& module) {}
};

struct NamedTensor {
  std::string name;   // fully qualified: "model.layers.0.self_attn.q_proj.weight"
  at::Tensor* slot;   // the member that holds it
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Depth-first, in registration order; names joined with '.' (Hugging Face convention).
  std::vector<NamedTensor> named_parameters(const std::string& prefix = "");
  std::vector<NamedTensor> named_buffers(const std::string& prefix = "");
  // Pre-order, self first with name `prefix`.
  std::vector<std::pair<std::string, Module*>> named_modules(const std::string& prefix = "");
  const std::vector<std::pair<std::string, Module*>>& children() const { return children_; }

  // How this module initialises its own parameter `local_name` (not its children's), as HF's
  // _init_weights does per module; element values come from engine/model/param_init.h.
  virtual ParamInit param_init(const std::string& local_name) const { return {}; }
  // This module's own parameters (local names), children excluded.
  const std::vector<std::pair<std::string, at::Tensor*>>& own_parameters() const { return params_; }
  // Recompute buffers that no checkpoint holds (rotary inv_freq).
  virtual void reset_buffers() {}

  virtual std::string type_name() const = 0;

  // Whether this module's forward runs through hooked(), i.e. whether it can be a unit of a
  // sharding engine. Containers without a forward of their own (LlamaModel) cannot.
  virtual bool can_be_unit() const { return false; }

  // Installed by an engine; null when the module is not a unit of its own.
  void set_forward_hooks(ForwardHooks* hooks) { hooks_ = hooks; }
  ForwardHooks* forward_hooks() const { return hooks_; }

 protected:
  void register_parameter(std::string name, at::Tensor* slot) { params_.emplace_back(std::move(name), slot); }
  void register_buffer(std::string name, at::Tensor* slot) { buffers_.emplace_back(std::move(name), slot); }
  void register_module(std::string name, Module* child) { children_.emplace_back(std::move(name), child); }

  // Runs `body` (the module's own forward) between its hooks, if any. Modules that can be
  // units call their forward through this.
  template <typename Body>
  at::Tensor hooked(std::initializer_list<at::Tensor> inputs, Body&& body) const {
    if (!hooks_) return body();
    Module& self = const_cast<Module&>(*this);
    hooks_->pre_forward(self, at::ArrayRef<at::Tensor>(inputs.begin(), inputs.size()));
    return hooks_->post_forward(self, body());
  }

 private:
  std::vector<std::pair<std::string, at::Tensor*>> params_;
  std::vector<std::pair<std::string, at::Tensor*>> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  ForwardHooks* hooks_ = nullptr;
};

// Parameters in a module tree that require grad / do not.
int64_t CountParameters(Module& m, bool trainable_only);

// Initialises every materialised parameter from its module's param_init, element i of
// parameter `name` being a function of (seed, name, i) only: independent of construction order,
// device and world size, and reproducible slice by slice (meta-device init).
void InitializeParameters(Module& root, uint64_t seed);
void InitializeBuffers(Module& root);
// Meta-device buffers (no checkpoint holds them: rotary inv_freq) allocated on `device`, filled
// with NaN, then computed by each module's reset_buffers, so a buffer a module forgets stays
// NaN and is caught (transformers#34234).
void MaterializeBuffers(Module& root, const at::Device& device);

// Stable 64-bit hash (FNV-1a then splitmix64 mix) used to derive per-name seeds.
uint64_t SeedFor(uint64_t seed, const std::string& name);

}  // namespace shardbench::model
