#include "engine/model/token_file_data.h"

#include <ATen/ops/from_blob.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/common/error.h"

namespace shardbench::model {

TokenFileData::TokenFileData(const std::string& path, const std::string& token_dtype, uint64_t seed, int64_t vocab_size,
                             int64_t seq_len)
    : path_(path), seed_(seed), vocab_(vocab_size), seq_len_(seq_len) {
  if (token_dtype != "uint16" && token_dtype != "uint32") {
    throw InputError("token file " + path + ": token dtype '" + token_dtype + "': expected uint16 or uint32");
  }
  width_ = token_dtype == "uint16" ? 2 : 4;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("token file " + path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw InputError("token file " + path + ": cannot stat: " + std::strerror(errno));
  }
  bytes_ = static_cast<size_t>(st.st_size);
  if (bytes_ % width_ != 0) {
    ::close(fd);
    throw InputError("token file " + path + ": " + std::to_string(bytes_) + " bytes is not a whole number of " + token_dtype +
                     " tokens (is data.token_dtype right?)");
  }
  tokens_ = static_cast<int64_t>(bytes_ / width_);
  if (tokens_ < seq_len + 1) {
    ::close(fd);
    throw InputError("token file " + path + ": " + std::to_string(tokens_) + " tokens, but a sample needs seq_len + 1 = " +
                     std::to_string(seq_len + 1));
  }
  void* addr = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (addr == MAP_FAILED) throw InputError("token file " + path + ": cannot map: " + std::strerror(errno));
  data_ = static_cast<const unsigned char*>(addr);
}

TokenFileData::~TokenFileData() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), bytes_);
}

int64_t TokenFileData::token(int64_t index) const {
  const unsigned char* p = data_ + index * width_;
  uint32_t v = 0;
  for (int b = width_ - 1; b >= 0; --b) v = (v << 8) | p[b];  // little-endian, whatever the host
  return static_cast<int64_t>(v);
}

Batch TokenFileData::batch(int64_t step, int64_t first_sample, int64_t count) const {
  std::vector<int64_t> seq(static_cast<size_t>(count * (seq_len_ + 1)));
  const uint64_t starts = static_cast<uint64_t>(tokens_ - seq_len_);
  for (int64_t s = 0; s < count; ++s) {
    const int64_t offset = static_cast<int64_t>(SampleHash(seed_, step, first_sample + s) % starts);
    for (int64_t t = 0; t <= seq_len_; ++t) {
      const int64_t id = token(offset + t);
      if (id >= vocab_) {
        throw InputError("token file " + path_ + ": token " + std::to_string(id) + " at index " + std::to_string(offset + t) +
                         " is not below the model's vocab_size " + std::to_string(vocab_));
      }
      seq[s * (seq_len_ + 1) + t] = id;
    }
  }
  at::Tensor all = at::from_blob(seq.data(), {count, seq_len_ + 1}, at::kLong).clone();
  return Batch{all.narrow(1, 0, seq_len_).contiguous(), all.narrow(1, 1, seq_len_).contiguous()};
}

}  // namespace shardbench::model
