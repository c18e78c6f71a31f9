// The GPU provenance's pure parts on CPU: the NVIDIA driver's version out of the kernel module's
// text, CUDA's version numbers as text, and NCCL's version where the GPU path is compiled (it is
// read from the library, no device needed). ReadGpuFacts itself runs in scripts/gpu-check.sh.
#include "engine/profile/gpu_facts.h"

#include <gtest/gtest.h>

#include <regex>

#include "engine/common/error.h"

namespace shardbench::profile {
namespace {

TEST(GpuFacts, DriverVersionFromTheKernelModulesText) {
  // As the H200 of docs/gpu-runs/2026-12-04-h200.md prints it, and the open kernel module's form.
  EXPECT_EQ(NvidiaDriverVersionIn("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Jul  8 2025\n"
                                  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "580.159.04");
  EXPECT_EQ(
      NvidiaDriverVersionIn("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n"),
      "570.86.15");
  EXPECT_EQ(NvidiaDriverVersionIn(""), "");
  EXPECT_EQ(NvidiaDriverVersionIn("no module here"), "");
}

TEST(GpuFacts, CudaVersionsAsText) {
  EXPECT_EQ(CudaVersionText(13000), "13.0");
  EXPECT_EQ(CudaVersionText(12080), "12.8");
  EXPECT_EQ(CudaVersionText(11040), "11.4");
}

TEST(GpuFacts, NcclVersionWhereTheGpuPathIsCompiled) {
#ifdef SHARDBENCH_WITH_CUDA
  const std::string v = NcclVersion();
  EXPECT_TRUE(std::regex_match(v, std::regex(R"([0-9]+\.[0-9]+\.[0-9]+.*)"))) << v;
#else
  EXPECT_EQ(NcclVersion(), "");
  EXPECT_THROW(ReadGpuFacts(0), InfraError);
#endif
}

}  // namespace
}  // namespace shardbench::profile
