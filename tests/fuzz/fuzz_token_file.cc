// Token files (data.path): flat uint16/uint32 ids. The first byte picks the width, the vocab
// size and the sequence length, so the checks on each are reached; the rest is the file.
#include "engine/model/token_file_data.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t knobs = data[0];
  shardbench::fuzz::InputFile file(data + 1, size - 1);
  shardbench::fuzz::AcceptOrRefuse([&] {
    const shardbench::model::TokenFileData tokens(file.path(), knobs & 1 ? "uint32" : "uint16", /*seed=*/knobs,
                                                  /*vocab_size=*/1 + (knobs >> 1) * 512, /*seq_len=*/1 + (knobs >> 4));
    tokens.batch(/*step=*/0, /*first_sample=*/0, /*count=*/2);
    tokens.batch(/*step=*/3, /*first_sample=*/5, /*count=*/1);
  });
  return 0;
}
