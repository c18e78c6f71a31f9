// The failpoints that act inside a training step (engine/train/step_hooks.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/failpoints.h"
#include "engine/profile/span_recorder.h"
#include "engine/train/step_hooks.h"

namespace shardbench::train {
namespace {

using Clock = std::chrono::steady_clock;

class Failpoints : public StepHooks {
 public:
  // rank1_fails and rank1_lost_once: rank 1 stops in its second step, after the first step's
  // collectives (a rank lost mid-instance); its peers find out in their next collective.
  // rank1_fails throws; rank1_lost_once ends the process as if killed, in a job's first attempt
  // only (torchrun's TORCHELASTIC_RESTART_COUNT unset or 0), so a restart succeeds.
  void before_step(comm::Communicator* comm, bool past_first_step) override {
    if (!comm || comm->rank() != 1 || !past_first_step) return;
    if (FailpointActive("rank1_fails")) throw InfraError("failpoint rank1_fails: rank 1 stopped in its second step");
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    if (FailpointActive("rank1_lost_once") && (!attempt || std::string(attempt) == "0")) {
      std::fflush(nullptr);
      std::_Exit(137);
    }
  }

  void after_optimizer(comm::Communicator* comm, double elapsed, double blocked) override {
    // straggler_rank1: rank 1 alone stays away twice as long as it was busy so far this step,
    // so its busy time triples while its peers wait for it in their next collective (their
    // step times grow too: only busy time tells the straggler apart). Three times, not two: on
    // a host with fewer cores than ranks the peers' busy time includes waiting for a core, which
    // pulled a doubled rank's ratio down to 1.2-1.9 here, too close to an even job's 0.8-1.1.
    // It sleeps where slow_step_*pct (below) spins: a real straggler is slow on its own hardware,
    // and a spinning rank on a host with fewer cores than ranks would take its peers' cores,
    // lengthening their busy time too (measured on 2 cores, 3 ranks: ratio ~1.25 spinning
    // against ~1.4-1.9 sleeping).
    if (FailpointActive("straggler_rank1") && comm && comm->rank() == 1) {
      std::this_thread::sleep_for(std::chrono::duration<double>(2 * (elapsed - blocked)));
    }
  }

  void before_step_ends(double elapsed) override {
    // slow_step_5pct / 10pct / 20pct: a known slowdown for measuring the gate, the step X% longer
    // than it was. It spins rather than sleeps: extra work holds the core as real compute would
    // (a sleeping rank hands its core to the other ranks' threads, which hides most of the delay
    // on a small host). It spins after the loss read, every rank past the step's last
    // collective: spun before it (as until 2026-12-07), part of the spin hid in a peer's wait and
    // in Gloo's thread waiting for the pinned core, and "10%" slowed smoke at world size 2 by about 5%.
    const double slow = FailpointActive("slow_step_20pct")   ? 0.20
                        : FailpointActive("slow_step_10pct") ? 0.10
                        : FailpointActive("slow_step_5pct")  ? 0.05
                                                             : 0.0;
    const double spin = slow * elapsed;
    if (spin > 0) {
      profile::ScopedSpan span("failpoint", "failpoint spin");  // stands in for compute
      const auto until =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spin));
      while (Clock::now() < until) {
      }
    }
  }
};

}  // namespace

StepHooks* FailpointHooks() {
  static Failpoints hooks;
  return &hooks;
}

}  // namespace shardbench::train
