// A result's provenance as our ranks write it (harness/run_provenance.h): with NCCL the version
// LibTorch loads (no device needed to read it), on a CPU no GPU fields; the schema names every
// field it may add. The GPU's own fields (name, memory, driver, CUDA) are read on a device only
// (scripts/gpu-check.sh).
#include "harness/run_provenance.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "engine/profile/gpu_facts.h"

namespace shardbench {
namespace {

TEST(RunProvenance, NcclVersionWithNcclNoGpuFieldsOnACpu) {
  Scenario s;
  s.backend = Backend::kGloo;
  const nlohmann::json gloo = RunProvenance(s, 2, at::Device(at::kCPU));
  EXPECT_TRUE(gloo["nccl"].is_null());
  EXPECT_TRUE(gloo["gpu"].is_null());
  EXPECT_FALSE(gloo.contains("gpu_driver"));
  s.backend = Backend::kNccl;
  const nlohmann::json nccl = RunProvenance(s, 2, at::Device(at::kCPU));
  EXPECT_EQ(nccl["nccl"], profile::NcclVersion());
#ifdef SHARDBENCH_WITH_CUDA
  EXPECT_TRUE(std::regex_match(nccl["nccl"].get<std::string>(), std::regex(R"([0-9]+\.[0-9]+\.[0-9]+.*)")))
      << nccl["nccl"];
#endif
  EXPECT_TRUE(nccl["gpu"].is_null());  // the device was the CPU
  const auto schema =
      nlohmann::json::parse(std::ifstream(std::string(SHARDBENCH_SOURCE_DIR) + "/reporters/results.schema.json"));
  const auto& fields = schema["properties"]["provenance"]["properties"];
  for (const char* field : {"gpu", "gpu_memory_bytes", "gpu_driver", "cuda_runtime", "cuda_driver", "nccl"}) {
    EXPECT_TRUE(fields.contains(field)) << field;
  }
}

}  // namespace
}  // namespace shardbench
