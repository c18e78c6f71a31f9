// Launching a repetition on a peer implementation (harness/scenario/peer_scenario.h): shardbench
// exports the scenario's initial weights (engine/checkpoint/hf_export.h) and its provenance
// into the repetition's directory, launches peers/torch_fsdp/peer.py as every rank, and then
// adds the loss_parity check to the peer's result exactly as for its own engines (the same
// one-process reference, the same tolerance).
#pragma once

#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace shardbench {

// The Python that runs the peer. peer.python: a path; "project" (<project>/.venv); or an
// environment's name, "torch-2.10.0" -> <project>/.venv-peer-torch-2.10.0 (scripts/setup-peer-env.sh),
// which keeps instance names of a version matrix short and portable. Empty: the engine's own
// environment where its spec names one (torchtune: <project>/.venv-peer-torchtune), else
// $SHARDBENCH_PYTHON, else <project>/.venv.
std::string PeerPython(const Scenario& s);
// PYTHONPATH for a peer's process: the project's peers/ (its packages) before any outer one.
std::string PeerPythonPath();

// Writes <rep_dir>/init (model, adapter) and provenance.json; returns the
// argv every rank runs. InputError when the Python or the peer script is missing.
std::vector<std::string> PreparePeerRepetition(const Scenario& s, const std::string& resolved_yaml,
                                               const std::string& rep_dir);

// After the peer's ranks ended with `exit_code` (0 or 1): <rep_dir>/result.json built from the
// records the peer wrote (harness/peer_records.h) by harness/run_assembly.h, as our engines'
// results are (the metric table, the memory model beside, finite, loss_parity and grad_memory
// checks beside the peer's own), and the init weights removed. Returns the repetition's exit
// code (1 when a check failed); without records, `exit_code`.
int FinishPeerRepetition(const Scenario& s, const std::string& rep_dir, int exit_code);

}  // namespace shardbench
