#include "tests/ranks/worker_checks.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <iostream>

namespace shardbench::worker {
namespace {
int g_failures = 0;
}  // namespace

void Expect(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::cerr << "MISMATCH: " << what << "\n";
  }
}

void ExpectEqual(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  Expect(got.sizes() == want.sizes() && at::equal(got, want),
         what + "\n  got:  " + at::toString(got.scalar_type()) + " " + c10::str(got) + "\n  want: " + c10::str(want));
}

int ExitCode() { return g_failures ? 1 : 0; }

std::chrono::milliseconds TimeoutFromEnv(int default_ms) {
  const char* v = std::getenv("SHARDBENCH_TEST_TIMEOUT_MS");
  return std::chrono::milliseconds(v ? std::atoi(v) : default_ms);
}

}  // namespace shardbench::worker
