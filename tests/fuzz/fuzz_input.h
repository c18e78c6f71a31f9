// What every fuzz target holds a parser to: given any bytes it either accepts them or throws
// InputError (exit 2, naming the file and field). Anything else that escapes (another
// exception: the CLI's "internal error"), a crash, a hang, a leak or undefined behaviour is a
// bug, and libFuzzer with ASan/UBSan reports it with the input that caused it.
//
// The parsers read files, as the CLI gives them, so each input is handed over as an anonymous
// in-memory file (memfd): nothing is written to disk and the path is that of a regular file.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/common/error.h"

namespace shardbench::fuzz {

class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    for (size_t done = 0; done < size;) {
      const ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~InputFile() { close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

// Runs `parse`; InputError is the expected way to refuse bytes, everything else propagates.
template <class Parse>
void AcceptOrRefuse(Parse&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

}  // namespace shardbench::fuzz
