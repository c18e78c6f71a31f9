// What both sharding engines do around their units, written once (FSDP2's FSDPParamGroup
// driver over FSDPParams has the same split): plan the units from the wrap policy, hook each
// unit's module, record the forward execution order and prefetch along it, keep the byte
// gauges, finish every unit after backward, and gather full parameters a unit at a time.
// `Unit` (FlatParamUnit or PerParamUnit) holds what truly differs: how its parameters are laid
// out, gathered and reduced.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/model/module.h"
#include "engine/profile/span_recorder.h"
#include "engine/shard/byte_gauge.h"
#include "engine/shard/execution_order.h"
#include "engine/shard/sharded_model.h"
#include "engine/shard/unit_options.h"
#include "engine/shard/wrap_policy.h"

namespace shardbench::shard {

template <typename Unit, EngineKind kKind>
class UnitDriver : public ShardedModel, public model::ForwardHooks {
 public:
  using Options = typename Unit::Options;

  ~UnitDriver() override {
    for (auto& u : units_) u->module().set_forward_hooks(nullptr);
  }
  UnitDriver(const UnitDriver&) = delete;
  UnitDriver& operator=(const UnitDriver&) = delete;

  EngineKind kind() const override { return kKind; }
  const std::vector<std::unique_ptr<Unit>>& units() const { return units_; }

  // ForwardHooks.
  // Each unit's forward is a span from its pre-forward (unshard included) to its post-forward.
  void pre_forward(model::Module& module, at::ArrayRef<at::Tensor> inputs) override {
    Unit* unit = by_module_.at(&module);
    if (profile::SpanRecorder::Get().on()) forward_begin_ns_[unit] = profile::NowNs();
    {
      profile::ScopedSpan span("unshard", "unshard", UnitLabel(unit->path()));
      unit->pre_forward(inputs);
    }
    if (order_.record(unit) && forward_prefetch_) {
      if (Unit* next = order_.neighbour(unit, +1)) {
        profile::ScopedSpan span("unshard", "all_gather issue", UnitLabel(next->path()));
        next->prefetch_for_forward();
      }
    }
  }
  at::Tensor post_forward(model::Module& module, at::Tensor output) override {
    Unit* unit = by_module_.at(&module);
    at::Tensor out = unit->post_forward(std::move(output));
    profile::SpanRecorder& recorder = profile::SpanRecorder::Get();
    if (auto begin = forward_begin_ns_.find(unit); begin != forward_begin_ns_.end()) {
      if (recorder.on()) {
        recorder.add({"forward " + std::string(UnitLabel(unit->path())), "forward", profile::SpanTrack::kCompute,
                      begin->second, profile::NowNs()});
      }
      forward_begin_ns_.erase(begin);
    }
    return out;
  }
  void before_recompute(model::Module& module) override { by_module_.at(&module)->prepare_recompute(); }

  // GradientSync.
  void zero_grad() override {
    for (auto& u : units_) u->zero_grad();
  }
  // Units whose inputs needed no gradient (the first layers of a LoRA model, the root) learn
  // here that backward is over; nothing is left unsharded.
  void after_backward() override {
    for (auto& u : units_) u->finish_backward();
  }
  bool grads_sharded() const override { return true; }
  // A forward under no_grad left the root (and, without reshard_after_forward, every unit)
  // unsharded with no backward to come: finish_backward reshards them (no gradient is pending).
  void after_evaluation() override {
    for (auto& u : units_) u->finish_backward();
  }

  void for_each_full_param(const FullParamFn& fn) override {
    for (auto& u : units_) {
      for (auto& [name, t] : u->gather_full_params()) fn(name, t);
    }
  }

  memory::MemoryRecord memory() const override {
    using memory::Category;
    memory::MemoryRecord m;
    for (const auto& u : units_) {
      m.held[Category::kParamsSharded] += u->sharded_param_bytes();
      for (const auto& [dtype, bytes] : u->sharded_param_bytes_by_dtype()) m.params_by_dtype[dtype] += bytes;
      m.held[Category::kParamsUnsharded] += u->unsharded_param_bytes();
      m.held[Category::kGrads] += u->sharded_grad_bytes();
    }
    m.peak[Category::kParamsUnsharded] = unsharded_bytes_.peak;
    m.peak[Category::kGrads] = unsharded_grad_bytes_.peak;
    return m;
  }
  void reset_peaks() override {
    unsharded_bytes_.reset_peak();
    unsharded_grad_bytes_.reset_peak();
  }

 protected:
  // Builds one unit per module the policy picks, each told `unit_options` (what only that kind
  // of unit has), the engine options every unit shares, and what the driver owns (root flag,
  // gauges, backward prefetch).
  UnitDriver(model::LlamaForCausalLM& model, comm::Communicator* comm, const EngineOptions& options,
             Options unit_options)
      : ShardedModel(model), forward_prefetch_(options.forward_prefetch) {
    const bool backward_prefetch = options.backward_prefetch;
    unit_options.reshard_after_forward = options.reshard_after_forward;
    unit_options.mixed_precision = options.mixed_precision;
    unit_options.materialize = options.materialize;
    for (auto& plan : PlanUnits(model, options.policy)) {
      Options o = unit_options;
      o.is_root = plan.module == &model;
      o.unsharded_bytes = &unsharded_bytes_;
      o.unsharded_grad_bytes = &unsharded_grad_bytes_;
      if (backward_prefetch) {
        o.after_backward_unshard = [this](Unit& unit) {
          if (Unit* next = order_.neighbour(&unit, -1)) {
            profile::ScopedSpan span("unshard", "all_gather issue", UnitLabel(next->path()));
            next->prefetch_for_backward();
          }
        };
      }
      units_.push_back(std::make_unique<Unit>(std::move(plan), comm, std::move(o)));
      by_module_[&units_.back()->module()] = units_.back().get();
      units_.back()->module().set_forward_hooks(this);
    }
  }

 private:
  bool forward_prefetch_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::map<model::Module*, Unit*> by_module_;
  ExecutionOrder<Unit> order_;  // for prefetch
  std::map<Unit*, int64_t> forward_begin_ns_;  // units inside their forward, while recording spans
  ByteGauge unsharded_bytes_;
  ByteGauge unsharded_grad_bytes_;
};

}  // namespace shardbench::shard
