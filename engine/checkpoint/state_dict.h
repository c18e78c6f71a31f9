// Saving and loading a sharded model's state, PyTorch FSDP's four ways:
//   full     every parameter gathered to rank 0 and written as a Hugging Face directory
//            (config.json + model.safetensors, loadable by transformers) plus
//            optimizer.safetensors; on load rank 0 reads and each rank receives its shard
//   sharded  each rank writes what it holds, with global shapes and element offsets in an
//            index; loadable at another world size and into another engine
//   local    each rank writes its engine's tensors exactly as held (flat shards), with the
//            layout; loadable only by the same engine, world size and wrapping
//   adapter  the LoRA weights only, gathered, in PEFT's layout (adapter_model.safetensors +
//            adapter_config.json); parameters only, no optimizer state
// Keys: parameters by original name; optimizer state as state.<name>.exp_avg / .exp_avg_sq /
// .step (PyTorch's optimizer state dict, flattened). All are collective, atomic and verified
// (engine/checkpoint/checkpoint_dir.h).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "engine/checkpoint/param_pieces.h"
#include "engine/comm/communicator.h"
#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/shard/sharded_model.h"

namespace shardbench::checkpoint {

enum class StateDictKind { kFull, kSharded, kLocal, kAdapter };
StateDictKind ParseStateDictKind(const std::string& name);  // InputError for anything else

// What is saved or loaded: an engine (which knows its own pieces and LOCAL layout) and its optimizer.
struct StateDictTarget {
  shard::ShardedModel* sharded_model = nullptr;
  optim::AdamW* optimizer = nullptr;   // null: parameters only
  comm::Communicator* comm = nullptr;  // null: one rank
  model::LlamaForCausalLM& model() const { return sharded_model->model(); }
  // "reference" | "flat" | "per_param": recorded in every checkpoint, checked by LOCAL.
  std::string engine_name() const { return shard::EngineKindName(sharded_model->kind()); }
  std::vector<ParamPiece> pieces() const { return sharded_model->pieces(); }
  int rank() const { return comm ? comm->rank() : 0; }
  int world_size() const { return comm ? comm->world_size() : 1; }
};

struct SaveReport {
  int64_t bytes_total = 0;      // every file of the checkpoint
  int64_t bytes_this_rank = 0;  // the files this rank wrote
  double seconds = 0;
};

struct LoadOptions {
  // strict: a missing or unexpected key is an InputError naming them (torch's strict=True).
  // Otherwise they are only counted, for checks that report them.
  bool strict = true;
};
struct LoadReport {
  std::vector<std::string> missing, unexpected;
  int64_t bytes_read = 0;  // tensor bytes this rank read from the files
  double seconds = 0;
};

// Collective.
SaveReport SaveStateDict(StateDictKind kind, const StateDictTarget& target, const std::string& dir);
LoadReport LoadStateDict(StateDictKind kind, const StateDictTarget& target, const std::string& dir,
                         LoadOptions options = {});

// ---- shared by the kinds (state_dict.cc) ----
// Runs `fn` on every rank and makes a failure on any rank a failure on all (the first failing
// rank's message, naming it), so no rank is left waiting in a later collective. Collective.
void AgreeOnErrors(comm::Communicator* comm, const std::function<void()>& fn);
std::string StateKey(const std::string& param, const char* what);  // "state.<param>.<what>"
// The optimizer's groups and step count, for the manifest; Restore checks and applies them.
nlohmann::json OptimizerMeta(const optim::AdamW& optimizer);
void RestoreOptimizerMeta(optim::AdamW& optimizer, const nlohmann::json& meta, const std::string& dir,
                          LoadOptions options);
// The keys a target expects: every parameter, and for trainable ones their state keys when
// the checkpoint holds optimizer state (`with_state`).
std::vector<std::string> ExpectedKeys(const std::vector<ParamPiece>& pieces, bool with_state);
// Fills report.missing/unexpected from the expected and present key sets; throws when strict.
void ReconcileKeys(const std::vector<std::string>& expected, const std::vector<std::string>& present,
                   const std::string& dir, LoadOptions options, LoadReport& report);

}  // namespace shardbench::checkpoint
