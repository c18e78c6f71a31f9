// Suite files, resolved as `shardbench run SUITE` resolves them: the suite's keys, then each
// run's scenario file with the run's overrides and name, then the instances' file names.
// scripts/fuzz.sh runs from the repository root, so the seeds name shipped scenarios as
// /proc/self/cwd/scenarios/*.yaml.
#include "harness/suite.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardbench::fuzz::InputFile file(data, size);
  shardbench::fuzz::AcceptOrRefuse([&] {
    std::string title;
    shardbench::ResolveTarget(file.path(), {}, &title);
  });
  return 0;
}
