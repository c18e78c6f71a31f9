// `shardbench matrix TARGET --env SPEC --env SPEC ...`: a release matrix. The target's peer
// instances run once per side, each side a peer environment named by what it holds (peer.env,
// harness/peer_env.h; `project` is the project's .venv), into OUT/<side>/; then every pair of
// neighbours is judged by the gate (exact metrics at zero tolerance, sampled ones by their test)
// and what changed between them is listed: the releases each side recorded, and every exact
// metric, colour and library warning that moved. OUT/matrix.md is the report.
//
// `--bisect PACKAGE OLD NEW`: the releases of PACKAGE from OLD to NEW in the wheelhouse, run one
// launch each in binary search order, to the first whose colours, exact metrics or warnings
// differ from OLD's (reporters/release_matrix.h), in about log2(n) environment builds.
//
// Loud: two neighbours that ask for the same releases are bad input (not a version
// comparison); a side that cannot be built or imported other releases stops the matrix (exit 3).
#pragma once

#include <string>
#include <vector>

namespace shardbench::cli {

struct MatrixArgs {
  std::string target;
  std::vector<std::string> envs;       // "torch=2.10.0", "project", ...
  std::vector<std::string> overrides;  // key=value, every side
  std::vector<std::string> only;       // --only globs
  std::string out_dir;                 // default results/matrix-<timestamp>
  std::string policy;                  // gate policy for neighbours (default: the defaults)
  int repetitions = 0;                 // 0: the target's
  std::vector<std::string> bisect;     // PACKAGE OLD NEW
  // An earlier matrix directory: a side already run there (<reuse>/<side>/index.json) is read
  // from it instead of run again; the reports are written anew under --out.
  std::string reuse;
};

int MatrixCommand(const MatrixArgs& args, const std::string& self_exe);

}  // namespace shardbench::cli
