// Safetensors checkpoints (`model:` an HF directory, our FULL checkpoints): the bounded JSON
// header, then every tensor and a dim-0 row range viewed from the mapping.
#include <ATen/core/Tensor.h>

#include "engine/checkpoint/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardbench::fuzz::InputFile file(data, size);
  shardbench::fuzz::AcceptOrRefuse([&] {
    const auto st = shardbench::checkpoint::SafetensorsFile::Open(file.path());
    for (const std::string& name : st->names()) {
      const at::Tensor whole = st->tensor(name);
      if (whole.dim() > 0 && whole.size(0) > 0) st->rows(name, 0, 1).sum();
      if (whole.numel() > 0) whole.sum();  // reads every byte the header promised
    }
  });
  return 0;
}
