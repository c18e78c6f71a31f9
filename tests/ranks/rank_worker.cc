// A rank program for the multi-process tests: the tests launch N copies of it through the same
// launcher `shardbench run --nproc N` uses. Each command checks exact results on its rank and
// exits 0, or prints what differed and exits 1; infrastructure errors exit 3.
#include <functional>
#include <iostream>
#include <map>
#include <string>

#include "engine/common/error.h"
#include "engine/common/fast_exit.h"
#include "tests/ranks/worker_checks.h"

using namespace shardbench;
using namespace shardbench::worker;

static int RunWorker(int argc, char** argv) {
  const std::map<std::string, std::function<int()>> commands = {
      {"collectives", Collectives},
      {"stall-on-rank1", StallOnRank1},
      {"die-on-rank1", DieOnRank1},
      {"join-only", JoinOnly},
      {"dp-parity", [&] { return DataParallelParity(argc > 2 && std::string(argv[2]) == "lora"); }},
      {"flat-parity", [&] {
         // flat-parity POLICY [keep|accumulate|clip]
         const std::string mode = argc > 3 ? argv[3] : "";
         return FlatParity(argc > 2 ? argv[2] : "transformer_block", mode != "keep", mode == "accumulate" ? 2 : 1,
                           mode == "clip" ? 0.5 : 0.0);
       }},
      {"per-param-parity", [&] {
         // per-param-parity POLICY [keep|accumulate|clip]
         const std::string mode = argc > 3 ? argv[3] : "";
         return PerParamParity(argc > 2 ? argv[2] : "transformer_block", mode != "keep", mode == "accumulate" ? 2 : 1,
                               mode == "clip" ? 0.5 : 0.0);
       }},
      {"activation-checkpointing", [&] {
         // activation-checkpointing ENGINE [lora|full] [WRAP_POLICY]
         return ActivationCheckpointingCheck(argc > 2 ? argv[2] : "per_param", argc > 3 && std::string(argv[3]) == "lora",
                                             argc > 4 ? argv[4] : "transformer_block");
       }},
      {"meta-init", [&] { return MetaInitCheck(argc > 2 ? argv[2] : "per_param", argc > 3 ? argv[3] : ""); }},
      {"prefetch", [&] { return PrefetchCheck(argc > 2 ? argv[2] : "per_param"); }},
      {"evaluate", [&] { return EvaluateCheck(argc > 2 ? argv[2] : "per_param", !(argc > 3 && std::string(argv[3]) == "keep")); }},
      {"frozen-bf16", [&] { return FrozenBf16Check(argc > 2 ? argv[2] : "per_param"); }},
      {"per-param-comm-bytes", [&] { return PerParamCommBytes(argc > 2 ? argv[2] : "transformer_block"); }},
      {"flat-optimizer-before-wrap", [&] { return FlatOptimizerBeforeWrap(argc > 2 && std::string(argv[2]) == "orig"); }},
      {"state-dict-roundtrip", [&] {
         // state-dict-roundtrip KIND ENGINE lora|full DIR
         if (argc < 6) throw InputError("state-dict-roundtrip KIND ENGINE lora|full DIR");
         return StateDictRoundtrip(argv[2], argv[3], std::string(argv[4]) == "lora", argv[5]);
       }},
      {"state-dict-load", [&] { return StateDictLoad(std::vector<std::string>(argv + 2, argv + argc)); }},
      {"sharded-reshard", [&] { return ShardedReshard(std::vector<std::string>(argv + 2, argv + argc)); }},
      {"flat-unsharded-peak", [&] { return FlatUnshardedPeak(argc > 2 ? argv[2] : "lora_separate"); }},
      {"flat-grad-bytes", [&] { return FlatGradBytes(argc > 2 ? argv[2] : "transformer_block"); }},
  };
  if (argc < 2 || !commands.count(argv[1])) {
    std::cerr << "usage: rank_worker COMMAND [ARG]; commands:";
    for (const auto& [name, fn] : commands) std::cerr << " " << name;
    std::cerr << "\n";
    return 2;
  }
  try {
    return commands.at(argv[1])();
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  }
}

int main(int argc, char** argv) { ExitWithoutStaticDestructors(RunWorker(argc, argv)); }
