// Every engine a scenario can name, one spec each: adding an engine is its implementation (a
// ShardedModel in engine/shard/ for ours, a recipe in peers/ for a peer) plus its spec in
// engine_registry.cc. Everything that differs by engine above the engine layer reads the spec:
// its name, whether a peer runs it and where, which of our models predicts its memory and
// communication, and which scenario fields it refuses. An engine without a spec is our bug
// (std::logic_error), never a silent fallback; tests/harness/engine_registry_test.cc checks
// that every Engine value has exactly one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/shard/engine_kind.h"
#include "harness/scenario/scenario_choices.h"

namespace shardbench {

struct Scenario;

struct EngineSpec {
  Engine engine;
  const char* name;  // the scenario's `engine:` value
  // Ours: the ShardedModel MakeShardedModel builds. A peer: none (PyTorch runs it in Python).
  std::optional<shard::EngineKind> ours;
  // The model of ours whose memory and communication predictions it follows (a peer shares
  // the semantics of one of ours: torch_fsdp1 flat parameters, torch_fsdp2 per-parameter;
  // accelerate the one of its accelerate.fsdp_version).
  shard::EngineKind (*predicted_by)(const Scenario& s);
  // A peer's Python module under the project's peers/ (run as `python -m`); nullptr for ours.
  const char* peer_module;
  // Refuses what this engine does not map: InputError naming `src` and the field.
  void (*validate)(const Scenario& s, const std::string& src);
  // The peer's own Python environment when the scenario names none (peer.python empty):
  // <project>/.venv-peer-<name>, made by scripts/setup-peer-env.sh <name>; nullptr: the project's.
  const char* default_peer_env = nullptr;

  bool is_peer() const { return peer_module != nullptr; }
};

// In the order `list` and error messages name them.
const std::vector<EngineSpec>& EngineRegistry();
const EngineSpec& SpecOf(Engine engine);

// The spec's facts by engine, for the callers that need one.
const char* EngineName(Engine engine);
bool IsPeerEngine(Engine engine);
// Ours: the engine kind MakeShardedModel builds. Peer engines have none (nullopt).
std::optional<shard::EngineKind> OurEngineKind(Engine engine);
// The engine of ours whose memory and communication models predict the scenario's engine (flat
// for torch_fsdp1 and accelerate.fsdp_version 1, per_param for torch_fsdp2 and version 2).
shard::EngineKind EngineKindLike(const Scenario& s);

}  // namespace shardbench
