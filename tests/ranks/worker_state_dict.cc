// Rank-worker commands for state dicts: save -> fresh model -> load roundtrips on every rank,
// bit for bit (parameters and optimizer state), and SHARDED resharding across world sizes and
// engines, judged against a FULL checkpoint of the state that was saved.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <filesystem>

#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/state_dict.h"
#include "engine/comm/create_communicator.h"
#include "engine/common/error.h"
#include "engine/model/hf_weights.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/sharded_model.h"
#include "engine/train/trainer.h"
#include "tests/ranks/worker_checks.h"

namespace shardbench::worker {
namespace {

constexpr int64_t kBatch = 2, kSeqLen = 16;

std::unique_ptr<comm::Communicator> Connect() {
  auto env = comm::RankEnv::FromEnvironment();
  if (env.world_size == 1) return nullptr;
  return comm::Connect("gloo", env, comm::CommOptions{std::chrono::seconds(60)});
}

// A model under one engine ("reference", "flat-orig": use_orig_params with one unit per
// decoder layer, "flat-noorig": flat params with adapters in their own units, "per-param":
// FSDP2 with one unit per decoder layer) and its AdamW.
struct Setup {
  std::unique_ptr<model::LlamaForCausalLM> model;
  std::unique_ptr<shard::ShardedModel> engine;
  std::unique_ptr<optim::AdamW> opt;
  checkpoint::StateDictTarget target;
  comm::Communicator* comm = nullptr;

  Setup(const std::string& engine_name, bool lora, uint64_t seed, comm::Communicator* c, int64_t lora_r = 8) : comm(c) {
    model::LoraConfig l;
    l.enabled = lora;
    l.r = lora_r;
    model = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), l, seed, at::TensorOptions());
    shard::EngineOptions o;
    o.policy = shard::ParseWrapPolicy("transformer_block", 20000);
    if (engine_name == "reference") {
      o.kind = shard::EngineKind::kReference;
    } else if (engine_name == "flat-orig" || engine_name == "flat-noorig") {
      o.kind = shard::EngineKind::kFlat;
      o.use_orig_params = engine_name == "flat-orig";
      if (!o.use_orig_params) o.policy = shard::ParseWrapPolicy("lora_separate", 20000);
    } else if (engine_name == "per-param") {
      o.kind = shard::EngineKind::kPerParam;
    } else {
      throw InputError("engine '" + engine_name + "': expected reference, flat-orig, flat-noorig or per-param");
    }
    engine = shard::MakeShardedModel(*model, comm, o);
    opt = std::make_unique<optim::AdamW>(optim::MakeParamGroups(engine->named_parameters(), 1e-2, 0.01, true));
    target = {engine.get(), opt.get(), comm};
  }
  train::GradientSync* sync() { return engine.get(); }
  // Steps [first, first + n) of the same global batches at any world size; the losses.
  std::vector<double> train(int64_t first, int64_t n) {
    train::Trainer trainer(*model, *opt, comm, sync());
    model::SyntheticData data(5, model->config().vocab_size, kSeqLen);
    const int rank = comm ? comm->rank() : 0, ws = comm ? comm->world_size() : 1;
    const int64_t per_rank = 6 / ws;  // global batch 6: every world size in {1, 2, 3} splits it evenly
    std::vector<double> losses;
    for (int64_t s = first; s < first + n; ++s) losses.push_back(trainer.step(data.batch(s, rank * per_rank, per_rank)).loss);
    return losses;
  }
};

struct PieceSnapshot {
  at::Tensor param, exp_avg, exp_avg_sq;
  int64_t step = 0;
};

std::vector<PieceSnapshot> Snapshot(Setup& s) {
  std::vector<PieceSnapshot> out;
  for (const auto& p : s.target.pieces()) {
    PieceSnapshot snap{p.param.clone()};
    const auto st = checkpoint::StateOf(p, *s.opt);
    if (st.defined()) snap = {p.param.clone(), st.exp_avg.clone(), st.exp_avg_sq.clone(), st.step};
    out.push_back(snap);
  }
  return out;
}

void ExpectSameState(Setup& s, const std::vector<PieceSnapshot>& want, bool params_only, const std::string& tag) {
  const auto pieces = s.target.pieces();
  Expect(pieces.size() == want.size(), tag + " piece count");
  for (size_t i = 0; i < pieces.size() && i < want.size(); ++i) {
    const auto& p = pieces[i];
    Expect(at::equal(p.param, want[i].param), tag + " parameter '" + p.name + "' differs after load");
    if (params_only) continue;
    const auto st = checkpoint::StateOf(p, *s.opt);
    Expect(st.defined() == want[i].exp_avg.defined(), tag + " optimizer state of '" + p.name + "' present/absent");
    if (!st.defined() || !want[i].exp_avg.defined()) continue;
    Expect(at::equal(st.exp_avg, want[i].exp_avg) && at::equal(st.exp_avg_sq, want[i].exp_avg_sq),
           tag + " optimizer state of '" + p.name + "' differs after load");
    Expect(st.step == want[i].step, tag + " step of '" + p.name + "': " + std::to_string(st.step) + " vs " +
                                        std::to_string(want[i].step));
  }
}

// The files this rank wrote for a LOCAL checkpoint hold no original parameter name: each
// tensor is stored once, as part of its flat shard (pytorch#102667's duplicate keys).
void ExpectLocalKeysOnce(Setup& s, const std::string& dir, const std::string& tag) {
  if (s.engine->kind() != shard::EngineKind::kFlat) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("local-", 0) != 0) continue;
    const auto file = checkpoint::SafetensorsFile::Open(entry.path().string());
    for (const auto& p : s.model->named_parameters()) {
      Expect(!file->contains(p.name), tag + " LOCAL file holds original key '" + p.name + "' besides its flat shard");
    }
  }
}

}  // namespace

int StateDictRoundtrip(const std::string& kind_name, const std::string& engine, bool lora, const std::string& dir) {
  auto comm = Connect();
  const auto kind = checkpoint::ParseStateDictKind(kind_name);
  const bool adapter = kind == checkpoint::StateDictKind::kAdapter;
  const std::string tag = "[" + kind_name + " " + engine + (lora ? " lora" : " full") + " ws=" +
                          std::to_string(comm ? comm->world_size() : 1) + "]";
  Setup trained(engine, lora, 17, comm.get());
  trained.train(0, 3);
  const auto want = Snapshot(trained);
  const auto saved = checkpoint::SaveStateDict(kind, trained.target, dir);
  Expect(saved.bytes_total > 0, tag + " bytes written");
  if (kind == checkpoint::StateDictKind::kFull) {
    // A FULL checkpoint is a Hugging Face directory: the HF loader reads exactly the trained weights.
    const std::vector<std::pair<std::string, at::Tensor>> full = trained.engine->gather_full_params();
    if (!comm || comm->rank() == 0) {
      auto hf = model::BuildLlamaFromSource(dir, trained.model->lora(), 3, at::TensorOptions());
      const auto loaded = hf->named_parameters();
      Expect(loaded.size() == full.size(), tag + " HF load parameter count");
      for (size_t i = 0; i < loaded.size() && i < full.size(); ++i) {
        Expect(loaded[i].name == full[i].first && at::equal(*loaded[i].slot, full[i].second),
               tag + " HF load of '" + loaded[i].name + "' differs from the trained weights");
      }
    }
  }
  // A fresh model: other weights (the adapter is loaded over the same base it was trained on).
  Setup fresh(engine, lora, adapter ? 17 : 999, comm.get());
  if (adapter) fresh.target.optimizer = nullptr;
  checkpoint::LoadOptions lenient;
  lenient.strict = false;
  const auto loaded = checkpoint::LoadStateDict(kind, fresh.target, dir, lenient);
  Expect(loaded.missing.empty() && loaded.unexpected.empty(),
         tag + " keys: " + std::to_string(loaded.missing.size()) + " missing (" +
             (loaded.missing.empty() ? "" : loaded.missing[0]) + "), " + std::to_string(loaded.unexpected.size()) +
             " unexpected (" + (loaded.unexpected.empty() ? "" : loaded.unexpected[0]) + ")");
  ExpectSameState(fresh, want, adapter, tag);
  if (kind == checkpoint::StateDictKind::kLocal) ExpectLocalKeysOnce(trained, dir, tag);
  if (!adapter) {
    // Loaded state trains on exactly as the saved one does.
    Expect(trained.train(3, 1) == fresh.train(3, 1), tag + " the next step's loss differs after load");
    Expect(fresh.opt->steps_taken() == trained.opt->steps_taken(), tag + " optimizer steps taken");
  }
  if (comm) comm->barrier();
  return ExitCode();
}

namespace {

// Every tensor of `file` in `check_dir` equals the one in `truth_dir`, and the names match.
void ExpectSameFile(const std::string& truth_dir, const std::string& check_dir, const std::string& file,
                    const std::string& tag) {
  const auto truth = checkpoint::SafetensorsFile::Open(truth_dir + "/" + file);
  const auto check = checkpoint::SafetensorsFile::Open(check_dir + "/" + file);
  Expect(truth->names() == check->names(), tag + " " + file + ": tensor names differ");
  for (const auto& name : truth->names()) {
    if (!check->contains(name)) continue;
    Expect(at::equal(truth->tensor(name), check->tensor(name)), tag + " " + file + ": '" + name + "' differs");
  }
}

}  // namespace

// state-dict-load KIND ENGINE DIR [LORA_R]: a strict load into a fresh model; a bad
// checkpoint ends the worker with its InputError (exit 2) on every rank.
int StateDictLoad(const std::vector<std::string>& args) {
  if (args.size() < 3) throw InputError("state-dict-load KIND ENGINE DIR [LORA_R]");
  auto comm = Connect();
  Setup s(args[1], /*lora=*/true, 999, comm.get(), args.size() > 3 ? std::stoll(args[3]) : 8);
  checkpoint::LoadStateDict(checkpoint::ParseStateDictKind(args[0]), s.target, args[2]);
  if (comm) comm->barrier();
  return ExitCode();
}

// sharded-reshard save ENGINE SHARDED_DIR TRUTH_DIR
// sharded-reshard load ENGINE SHARDED_DIR TRUTH_DIR CHECK_DIR [NEXT_SHARDED_DIR]
// The saved state, gathered as a FULL checkpoint, is the truth every later load is held to.
int ShardedReshard(const std::vector<std::string>& args) {
  if (args.size() < 4) throw InputError("sharded-reshard save|load ENGINE SHARDED_DIR TRUTH_DIR [CHECK_DIR [NEXT]]");
  auto comm = Connect();
  const std::string tag = "[" + args[0] + " " + args[1] + " ws=" + std::to_string(comm ? comm->world_size() : 1) + "]";
  if (args[0] == "save") {
    Setup s(args[1], /*lora=*/true, 17, comm.get());
    s.train(0, 3);
    checkpoint::SaveStateDict(checkpoint::StateDictKind::kSharded, s.target, args[2]);
    checkpoint::SaveStateDict(checkpoint::StateDictKind::kFull, s.target, args[3]);
  } else {
    if (args.size() < 5) throw InputError("sharded-reshard load needs CHECK_DIR");
    Setup s(args[1], /*lora=*/true, 999, comm.get());
    const auto report = checkpoint::LoadStateDict(checkpoint::StateDictKind::kSharded, s.target, args[2]);
    Expect(report.bytes_read > 0, tag + " read nothing");
    checkpoint::SaveStateDict(checkpoint::StateDictKind::kFull, s.target, args[4]);
    if (!comm || comm->rank() == 0) {
      ExpectSameFile(args[3], args[4], "model.safetensors", tag);
      ExpectSameFile(args[3], args[4], "optimizer.safetensors", tag);
    }
    if (args.size() > 5) checkpoint::SaveStateDict(checkpoint::StateDictKind::kSharded, s.target, args[5]);
  }
  if (comm) comm->barrier();
  return ExitCode();
}

}  // namespace shardbench::worker
