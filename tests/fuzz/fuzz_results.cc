// What `compare`, `history`, `merge` and `report` read: result files, a run's index.json and
// Google Benchmark JSON (reporters/gbench_import.h).
// One document is read as each kind, since every reader must refuse what is not its kind.
#include "reporters/gbench_import.h"
#include "reporters/results_reader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shardbench::fuzz::AcceptOrRefuse;
  shardbench::fuzz::InputFile file(data, size);
  nlohmann::json document;
  try {
    document = shardbench::ReadJsonFile(file.path());
  } catch (const shardbench::InputError&) {
    return 0;
  }
  AcceptOrRefuse([&] {
    const shardbench::StoredResult result = shardbench::ReadResultFile(document, file.path());
    for (const auto& metric : result.metrics) result.metric(metric.name);
  });
  AcceptOrRefuse([&] { shardbench::ReadIndex(document, file.path()); });
  AcceptOrRefuse([&] {
    for (const auto& instance : shardbench::ImportGoogleBenchmark(document, file.path()).instances) {
      if (!instance.result.is_null()) shardbench::ReadInstance(instance);
    }
  });
  return 0;
}
