#include "harness/peer_launch.h"

#include <ATen/ATen.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/hf_export.h"
#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "reporters/provenance.h"
#include "harness/model_source.h"
#include "engine/profile/matmul_peak.h"
#include "engine/profile/model_flops.h"
#include "engine/profile/torch_profiler_trace.h"
#include "harness/check_table.h"
#include "harness/peer_env.h"
#include "harness/peer_records.h"
#include "harness/reference_parity.h"
#include "harness/repetition_launch.h"
#include "harness/run_assembly.h"
#include "harness/scenario/engine_registry.h"
#include "harness/scenario/scenario_model.h"
#include "harness/suite.h"
#include "reporters/results_reader.h"

namespace shardbench {
namespace fs = std::filesystem;

std::string PeerPython(const Scenario& s) {
  const std::string& p = s.peer.python;
  if (!s.peer.env.empty()) return PeerEnvDir(ParsePeerEnv(s.peer.env)) + "/bin/python";
  if (p == "project") return ProjectDir() + "/.venv/bin/python";
  if (!p.empty() && p.find('/') == std::string::npos) return ProjectDir() + "/.venv-peer-" + p + "/bin/python";
  if (!p.empty()) return p;
  if (const char* own = SpecOf(s.engine).default_peer_env) return ProjectDir() + "/.venv-peer-" + own + "/bin/python";
  if (const char* env = std::getenv("SHARDBENCH_PYTHON"); env && *env) return env;
  return ProjectDir() + "/.venv/bin/python";
}

std::string PeerPythonPath() {
  const char* outer = std::getenv("PYTHONPATH");
  return ProjectDir() + "/peers" + (outer && *outer ? std::string(":") + outer : std::string());
}

std::vector<std::string> PreparePeerRepetition(const Scenario& s, const std::string& resolved_yaml,
                                               const std::string& rep_dir) {
  const std::string module = SpecOf(s.engine).peer_module, python = PeerPython(s);
  std::string script = module;
  std::replace(script.begin(), script.end(), '.', '/');
  script = ProjectDir() + "/peers/" + script + ".py";
  std::error_code ignored;
  fs::remove(rep_dir + "/result.json", ignored);  // a reused directory's old result is not this run's
  fs::remove(rep_dir + "/records.json", ignored);
  for (int r = 0; r < s.world_size; ++r) fs::remove(rep_dir + "/trace.rank" + std::to_string(r) + ".json", ignored);
  if (!s.peer.env.empty()) EnsurePeerEnv(ParsePeerEnv(s.peer.env));  // InfraError naming the package
  if (!fs::exists(python)) {
    const char* own = SpecOf(s.engine).default_peer_env;
    throw InputError(std::string("engine=") + EngineName(s.engine) + ": peer Python '" + python + "' does not exist (peer.python '" + s.peer.python +
                     "': a name like torch-2.10.0 needs scripts/setup-peer-env.sh 2.10.0; " +
                     (own && s.peer.python.empty() ? std::string("empty needs scripts/setup-peer-env.sh ") + own
                                                   : std::string("empty or 'project' needs scripts/setup.sh")) + ")");
  }
  if (!fs::is_regular_file(script)) throw InputError(std::string("engine=") + EngineName(s.engine) + ": peer script " + script + " is missing");
  // The weights the engines would start from, built whole on this process (init=eager).
  Scenario whole = s;
  whole.init = Init::kEager;
  BuiltModel built = BuildScenarioModel(whole, s.train.seed, at::Device(at::kCPU));
  checkpoint::ExportHfModel(*built.model, rep_dir + "/init");
  WriteFileAtomically(rep_dir + "/provenance.json", CollectProvenance(s.world_size, BackendName(s.backend)).dump(2) + "\n");
  std::vector<std::string> argv = {python, "-m", module, resolved_yaml, "--out", rep_dir, "--init", rep_dir + "/init"};
  // Our tracking allocator for PyTorch's CPU tensors, built beside this binary (engine/CMakeLists.txt).
  std::error_code ec;
  const fs::path allocator = fs::read_symlink("/proc/self/exe", ec).parent_path() / "libshardbench_peer_allocator.so";
  if (!ec && fs::is_regular_file(allocator, ec)) {
    argv.push_back("--allocator");
    argv.push_back(allocator.string());
  }
  return argv;
}

namespace {

// A file the peer wrote: unreadable or not JSON is our bug ("internal error"), not the user's input.
nlohmann::json ReadPeerJsonFile(const std::string& path) {
  try {
    return ReadJsonFile(path);
  } catch (const InputError& e) {
    throw std::logic_error(std::string("the peer's output: ") + e.what());
  }
}

// Each rank's torch.profiler trace (peers/torch_fsdp/peer.py writes trace.rank<N>.json).
std::vector<profile::RankSpans> ReadPeerTimelines(const std::string& rep_dir, const Scenario& s) {
  std::vector<profile::RankSpans> out;
  for (int r = 0; r < s.world_size; ++r) {
    const std::string path = rep_dir + "/trace.rank" + std::to_string(r) + ".json";
    try {
      out.push_back(profile::ReadTorchProfilerTrace(ReadPeerJsonFile(path), r, path));
    } catch (const InputError& e) {  // the peer's own output: our bug, not the user's input
      throw std::logic_error(std::string("the peer's trace: ") + e.what());
    }
  }
  return out;
}

// Our build's provenance with the versions the peer actually imported (its torch, not ours).
nlohmann::json PeerProvenance(const std::string& rep_dir, const nlohmann::json& versions) {
  nlohmann::json p = ReadJsonFile(rep_dir + "/provenance.json");
  for (const auto& [key, value] : versions.items()) p[key] = value;
  return p;
}

}  // namespace

int FinishPeerRepetition(const Scenario& s, const std::string& rep_dir, int exit_code) {
  std::error_code ignored;
  fs::remove_all(rep_dir + "/init", ignored);  // a copy of the model: not a result
  const std::string records_file = rep_dir + "/records.json";
  if (!fs::is_regular_file(records_file)) return exit_code;
  const PeerRun peer = ReadPeerRecords(ReadPeerJsonFile(records_file), records_file);
  // A run of other releases than the scenario names is not that release's result: refused.
  CheckImportedVersions(AskedPeerVersions(s.peer.env, s.peer.python), peer.versions.value("peer", nlohmann::json::object()),
                        PeerPython(s));
  if (!peer.refusal && static_cast<int>(peer.ranks.size()) != s.world_size) {
    throw std::logic_error(records_file + ": " + std::to_string(peer.ranks.size()) + " rank records for world_size " +
                           std::to_string(s.world_size) + " (a bug of peers/torch_fsdp)");
  }
  const std::string run_id = s.name + "-" + Timestamp() + "-" + std::to_string(::getpid());
  RunResult r;
  if (peer.refusal) {  // PyTorch refused the combination: a finding, with its own words
    r.run_id = run_id;
    r.started_at = peer.started_at;
    r.provenance = PeerProvenance(rep_dir, peer.versions);
    r.scenario = ScenarioBlock(s);
    r.checks = InTableOrder({{"peer_accepts_scenario", false, *peer.refusal}});
    JudgeChecks(r);
    r.peer_warnings = peer.warnings;
  } else {
    std::optional<Check> parity;
    if (LossParityApplies(s)) parity = LossParityCheck(s, peer.ranks[0].loss);
    RunFrame frame;
    frame.run_id = run_id;
    frame.started_at = peer.started_at;
    frame.provenance = PeerProvenance(rep_dir, peer.versions);
    frame.facts.params_total = peer.params_total;
    frame.facts.params_trainable = peer.params_trainable;
    frame.facts.flops_per_token =
        static_cast<double>(profile::ModelFlopsPerToken(ScenarioModelConfig(s), s.lora, s.train.seq_len).per_token());
    frame.facts.matmul_peak = peer.matmul_peak;
    if (peer.gpu_name) frame.facts.datasheet_peak = profile::DatasheetBf16Peak(*peer.gpu_name);
    frame.trainable_bytes = peer.trainable_bytes;
    frame.checks = peer.checks;
    if (parity) frame.checks.push_back(*parity);
    frame.peer = true;
    frame.not_measured = peer.not_measured;
    frame.sampled_here = peer.sampled;
    frame.peer_warnings = peer.warnings;
    std::vector<RankRecord> ranks = peer.ranks;
    if (s.profile.trace && s.backend == Backend::kGloo) {
      if (static_cast<int64_t>(ranks[0].loss.size()) > s.train.warmup_steps) {
        AddTraceSpans(ranks, ReadPeerTimelines(rep_dir, s), s.train.warmup_steps);
      } else {
        for (const char* name : {"comm_exposed_time", "comm_overlap_ratio", "rank_idle_time"}) {
          frame.not_measured[name] = "training stopped before the measured window opened: nothing was traced";
        }
      }
    }
    r = AssembleRunResult(s, ranks, std::move(frame));
  }
  WriteFileAtomically(rep_dir + "/result.json", ToJson(r).dump(2) + "\n");
  return r.status == "ok" ? 0 : 1;
}

}  // namespace shardbench
