// StartKernelTrace on CUPTI's activity API. CUPTI hands records back in buffers we lend it
// (BufferRequested) and return to us full (BufferCompleted, possibly on its own thread); the
// kernels are copied out there, under a lock, and the buffer freed.
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "engine/common/error.h"
#include "engine/profile/kernel_trace.h"

namespace shardbench::profile {
namespace {

constexpr size_t kBufferBytes = 8u << 20;  // CUPTI's guidance: a few MB per buffer
constexpr size_t kAlign = 8;               // records must start 8-byte aligned

struct Recorded {
  std::mutex mu;
  std::vector<KernelInterval> kernels;
  int64_t dropped = 0;
};
Recorded& State() {
  static Recorded state;
  return state;
}
std::atomic<bool> g_active{false};

void Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw InfraError(std::string("CUPTI ") + what + " failed: " + (text ? text : "unknown error") +
              " (profile.kernel_trace needs a GPU, its driver, and no other CUPTI client such as the torch profiler)");
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  std::vector<KernelInterval> found;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    // Newer CUPTI versions only append fields: the leading ones read the same in every version.
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    found.push_back({k->name ? k->name : "", static_cast<int64_t>(k->streamId), static_cast<int64_t>(k->start),
                     static_cast<int64_t>(k->end)});
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, stream, &dropped);
  std::free(buffer);
  std::lock_guard<std::mutex> lock(State().mu);
  auto& kernels = State().kernels;
  kernels.insert(kernels.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  State().dropped += static_cast<int64_t>(dropped);
}

class CuptiKernelTrace final : public KernelTrace {
 public:
  CuptiKernelTrace() {
    Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "cuptiActivityRegisterCallbacks");
    Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  }
  ~CuptiKernelTrace() override {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    std::lock_guard<std::mutex> lock(State().mu);
    State().kernels.clear();
    State().dropped = 0;
    g_active = false;
  }
  std::vector<KernelInterval> collect() override {
    if (cudaDeviceSynchronize() != cudaSuccess) throw InfraError("kernel trace: cudaDeviceSynchronize failed before collecting kernels");
    Check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    std::lock_guard<std::mutex> lock(State().mu);
    std::vector<KernelInterval> out;
    out.swap(State().kernels);
    return out;
  }
  int64_t dropped() const override {
    std::lock_guard<std::mutex> lock(State().mu);
    return State().dropped;
  }
};

}  // namespace

std::unique_ptr<KernelTrace> StartKernelTrace() {
  if (g_active.exchange(true)) throw InfraError("kernel trace: one trace at a time, and one is already running");
  try {
    return std::make_unique<CuptiKernelTrace>();
  } catch (...) {
    g_active = false;
    throw;
  }
}

}  // namespace shardbench::profile
