// Gate policy files (`compare --policy`): rules per metric glob, suppressions with expiry. A
// rule's YAML is read when a metric asks for it, so every kind of metric asks.
#include "reporters/gate_policy.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardbench::fuzz::InputFile file(data, size);
  shardbench::fuzz::AcceptOrRefuse([&] {
    const shardbench::GatePolicy policy = shardbench::LoadGatePolicy(file.path());
    for (const char* metric : {"tokens_per_s", "step_time", "comm_allgather_bytes", "peak_memory"}) {
      for (const char* kind : {"sampled", "exact"}) policy.rule_for(metric, kind);
      policy.suppression_for("instance", metric, "2026-12-04");
    }
  });
  return 0;
}
