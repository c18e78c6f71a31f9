#include "harness/peer_launch.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/hf_export.h"
#include "engine/common/durable_file.h"
#include "engine/common/error.h"
#include "reporters/provenance.h"
#include "harness/model_source.h"
#include "harness/reference_parity.h"
#include "harness/suite.h"

namespace shardbench {
namespace fs = std::filesystem;

std::string PeerPython(const Scenario& s) {
  const std::string& p = s.peer.python;
  if (p == "project") return ProjectDir() + "/.venv/bin/python";
  if (!p.empty() && p.find('/') == std::string::npos) return ProjectDir() + "/.venv-peer-" + p + "/bin/python";
  if (!p.empty()) return p;
  if (const char* env = std::getenv("SHARDBENCH_PYTHON"); env && *env) return env;
  return ProjectDir() + "/.venv/bin/python";
}

std::vector<std::string> PreparePeerRepetition(const Scenario& s, const std::string& resolved_yaml,
                                               const std::string& rep_dir) {
  const std::string python = PeerPython(s), script = ProjectDir() + "/peers/torch_fsdp/peer.py";
  std::error_code ignored;
  fs::remove(rep_dir + "/result.json", ignored);  // a reused directory's old result is not this run's
  if (!fs::exists(python)) {
    throw InputError(std::string("engine=") + EngineName(s.engine) + ": peer Python '" + python + "' does not exist (peer.python '" + s.peer.python +
                     "': a name like torch-2.10.0 needs scripts/setup-peer-env.sh 2.10.0; empty or 'project' needs "
                     "scripts/setup.sh)");
  }
  if (!fs::is_regular_file(script)) throw InputError(std::string("engine=") + EngineName(s.engine) + ": peer script " + script + " is missing");
  // The weights the engines would start from, built whole on this process (init=eager).
  Scenario whole = s;
  whole.init = Init::kEager;
  BuiltModel built = BuildScenarioModel(whole, s.train.seed, at::Device(at::kCPU));
  checkpoint::ExportHfModel(*built.model, rep_dir + "/init");
  WriteFileAtomically(rep_dir + "/provenance.json", CollectProvenance(s.world_size, BackendName(s.backend)).dump(2) + "\n");
  const nlohmann::json header = {{"name", s.name}, {"source", s.source}, {"overrides", s.overrides},
                                 {"matrix", nlohmann::json::object()}};
  WriteFileAtomically(rep_dir + "/scenario_header.json", header.dump(2) + "\n");
  return {python, script, resolved_yaml, "--out", rep_dir, "--init", rep_dir + "/init", "--provenance",
          rep_dir + "/provenance.json"};
}

int FinishPeerRepetition(const Scenario& s, const std::string& rep_dir, int exit_code) {
  std::error_code ignored;
  fs::remove_all(rep_dir + "/init", ignored);  // a copy of the model: not a result
  const std::string path = rep_dir + "/result.json";
  if (!fs::is_regular_file(path)) return exit_code;
  nlohmann::json r;
  {
    std::ifstream in(path);
    r = nlohmann::json::parse(in);
  }
  std::vector<double> loss;  // null (a non-finite loss) reads as NaN, which fails parity
  for (const auto& v : r.value("loss", nlohmann::json::array())) loss.push_back(v.is_number() ? v.get<double>() : std::nan(""));
  if (loss.empty() || !LossParityApplies(s)) return exit_code;  // refused: nothing trained
  const Check c = LossParityCheck(s, loss);
  r["checks"].push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  if (!c.passed) {
    r["status"] = "failed";
    const std::string m = r["message"].get<std::string>();
    r["message"] = m + (m.empty() ? "" : "; ") + "check 'loss_parity' failed: " + c.detail;
  }
  WriteFileAtomically(path, r.dump(2) + "\n");
  return r["status"] == "ok" ? 0 : 1;
}

}  // namespace shardbench
