// Scenario files: YAML with a matrix, through the same loader `shardbench run FILE` uses
// (duplicate keys, matrix expansion and its cap, every field's bounds, cross-field checks).
#include "harness/scenario/scenario_matrix.h"
#include "harness/scenario/scenario_parser.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardbench::fuzz::InputFile file(data, size);
  shardbench::fuzz::AcceptOrRefuse([&] {
    for (const auto& scenario : shardbench::LoadScenarioInstances(file.path())) shardbench::ScenarioToYaml(scenario);
  });
  return 0;
}
