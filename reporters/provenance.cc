#include "reporters/provenance.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <ATen/Parallel.h>

#include "reporters/build_info.h"

extern char** environ;

namespace shardbench {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string Hostname() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

int64_t HostRssPeakBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream ss(line.substr(6));
      int64_t kb = 0;
      ss >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

bool ResetHostRssPeak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::string NowIso8601Utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json CollectProvenance(int world_size, const std::string& backend) {
  const BuildInfo& b = GetBuildInfo();
  nlohmann::json env = nlohmann::json::object();
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME",
                           "NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "NCCL_SOCKET_IFNAME", "CUDA_VISIBLE_DEVICES",
                           "PYTORCH_CUDA_ALLOC_CONF", "SLURM_JOB_ID"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (kv.rfind("SHARDBENCH_", 0) == 0) env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  return {{"shardbench", b.version},
          {"git_sha", b.git_sha},
          {"git_dirty", b.git_dirty},
          {"build_type", b.build_type},
          {"compiler", b.compiler},
          {"torch", b.torch_version},
          {"cuda", b.torch_cuda},
          {"gpu_path_compiled", b.with_cuda},
          {"nccl", nullptr},  // filled by the runner when NCCL is used
          {"host", Hostname()},
          {"cpu", CpuModel()},
          {"cpu_count", std::thread::hardware_concurrency()},
          {"intra_op_threads", at::get_num_threads()},
          {"gpu", nullptr},
          {"world_size", world_size},
          {"backend", backend},
          {"env", env}};
}

std::string VersionText(const BuildInfo& b) {
  std::ostringstream s;
  s << "shardbench " << b.version << "\n"
    << "commit " << b.git_sha << (b.git_dirty ? " (with uncommitted changes)" : "") << "\n"
    << "built " << b.build_type << " with " << b.compiler << "\n"
    << "torch " << b.torch_version << (b.torch_cuda.empty() ? " (CPU build)" : " (CUDA " + b.torch_cuda + ")") << "\n"
    << "GPU path (CUDA memory statistics, NCCL through LibTorch's c10d) "
    << (b.with_cuda ? "compiled in" : "not compiled");
  return s.str();
}

}  // namespace shardbench
