#include "harness/job_rank.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "engine/common/error.h"
#include "engine/common/durable_file.h"
#include "harness/scenario/peer_scenario.h"
#include "harness/scenario/scenario_parser.h"
#include "harness/scenario/engine_registry.h"

namespace shardbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBeatEvery = std::chrono::seconds(1);
// A rank whose heartbeat has not moved for this long is gone (its process or its node).
constexpr auto kLostAfter = std::chrono::seconds(6);
const char* kJobKey = "shardbench/job";

std::string ToString(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> ToBytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// The job's store is served by rank 0: losing it means rank 0 (or its node) is gone.
[[noreturn]] void StoreLost(const comm::RankEnv& env, const std::string& during, const std::exception& e) {
  throw InfraError("job: rank " + std::to_string(env.rank) + " lost the job's store at " + env.master_addr + ":" +
                   std::to_string(env.master_port) + " " + during + ": rank 0 (which serves it) is gone (" + e.what() + ")");
}

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

}  // namespace

JobRank::JobRank(const comm::RankEnv& env, std::chrono::milliseconds timeout) : env_(env) {
  store_ = comm::Rendezvous(env_, timeout, kJobKey);
  // The heartbeat has its own connection: a blocking wait on the job's store (a communicator
  // joining, Gloo's rendezvous) must not hold it up.
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env_.master_port);
  opts.isServer = false;
  opts.timeout = timeout;
  auto beat_store = c10::make_intrusive<c10d::PrefixStore>(
      comm::StorePrefix(env_, kJobKey), c10::make_intrusive<c10d::TCPStore>(env_.master_addr, opts));
  heartbeat_ = std::thread([this, beat_store] {
    const std::string key = "heartbeat/" + std::to_string(env_.rank);
    while (!stop_) {
      try {
        beat_store->add(key, 1);
      } catch (const std::exception&) {
        return;  // the store is gone; the main thread finds out on its next call
      }
      std::this_thread::sleep_for(kBeatEvery);
    }
  });
}

JobRank::~JobRank() {
  // Rank 0 serves the store: it stays until every rank has made its last call on it (a rank
  // still reading an outcome or a decision would otherwise find the store gone).
  try {
    store_->set("left/" + std::to_string(env_.rank), ToBytes("1"));
    if (writer() && !lost_ranks_) WaitForAll("left/", std::chrono::seconds(60), "leaving the job");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardbench: rank %d leaving the job: %s\n", env_.rank, e.what());
  }
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
}

void JobRank::WaitForAll(const std::string& prefix, std::chrono::milliseconds bound, const std::string& what) {
  std::map<int, std::string> keys;
  for (int r = 0; r < env_.world_size; ++r) keys[r] = prefix + std::to_string(r);
  WaitForKeys(keys, bound, what);
}

void JobRank::WaitForKeys(const std::map<int, std::string>& keys, std::chrono::milliseconds bound, const std::string& what) {
  const auto start = Clock::now();
  std::map<int, std::pair<int64_t, Clock::time_point>> beats;  // rank -> last count, when it moved
  try {
    for (;;) {
      std::vector<int> waiting, lost;
      for (const auto& [r, key] : keys) {
        if (store_->check({key})) continue;
        waiting.push_back(r);
        const int64_t count = store_->add("heartbeat/" + std::to_string(r), 0);
        auto [it, fresh] = beats.try_emplace(r, count, Clock::now());
        if (!fresh && it->second.first != count) it->second = {count, Clock::now()};
        if (Clock::now() - it->second.second > kLostAfter) lost.push_back(r);
      }
      if (waiting.empty()) return;
      if (!lost.empty()) {
        lost_ranks_ = true;
        throw InfraError("job: rank(s) " + RankList(lost) + " of " + std::to_string(env_.world_size) +
                         " lost (no heartbeat for " + std::to_string(kLostAfter.count()) + " s) during " + what +
                         "; seen from rank " + std::to_string(env_.rank));
      }
      if (Clock::now() - start > bound) {
        throw InfraError("job: rank(s) " + RankList(waiting) + " alive but did not finish " + what + " within " +
                         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(bound).count()) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  } catch (const InfraError&) {
    throw;
  } catch (const std::exception& e) {
    StoreLost(env_, "during " + what, e);
  }
}

std::string JobRank::Broadcast(const std::string& name, const std::string& value) {
  const std::string key = "broadcast/" + name;
  if (writer()) {
    store_->set(key, ToBytes(value));
    return value;
  }
  // Only rank 0 sets it, whenever it gets there: wait as long as rank 0 is alive.
  WaitForKeys({{0, key}}, std::chrono::hours(24), "rank 0's " + name);
  try {
    return ToString(store_->get(key));
  } catch (const std::exception& e) {
    StoreLost(env_, "reading rank 0's " + name, e);
  }
}

void JobRank::AgreeOnPlan(const std::vector<std::string>& names, const std::vector<std::string>& resolved) {
  std::string mine;
  for (size_t i = 0; i < names.size(); ++i) mine += names[i] + "\x1f" + resolved[i] + "\x1e";
  const std::string rank0 = Broadcast("plan", mine);
  std::string differs;  // empty: the same as rank 0's
  if (rank0 != mine) {
    size_t i = 0;
    std::string theirs = rank0;
    for (; i < names.size(); ++i) {
      const std::string entry = names[i] + "\x1f" + resolved[i] + "\x1e";
      if (theirs.rfind(entry, 0) != 0) break;
      theirs.erase(0, entry.size());
    }
    differs = i < names.size() ? "instance '" + names[i] + "'" : "more instances on rank 0";
  }
  store_->set("plan_seen/" + std::to_string(env_.rank), ToBytes(differs));
  WaitForAll("plan_seen/", std::chrono::minutes(5), "agreeing on the instance list");
  std::vector<int> ranks;
  std::string first;
  for (int r = 0; r < env_.world_size; ++r) {
    const std::string d = ToString(store_->get("plan_seen/" + std::to_string(r)));
    if (d.empty()) continue;
    ranks.push_back(r);
    if (first.empty()) first = d;
  }
  if (!ranks.empty()) {
    throw InputError("rank(s) " + RankList(ranks) + " resolved the target differently from rank 0 (first: " + first +
                     "): every rank needs the same target, overrides and files");
  }
}

void JobRank::CheckSharedDirectory(const std::string& out_dir) {
  out_dir_ = out_dir;
  const std::string mark = out_dir + "/.shardbench-job-" + std::to_string(env_.master_port) + "-" + std::to_string(getpid());
  if (writer()) {
    std::filesystem::create_directories(out_dir);
    WriteFileAtomically(mark, "rank 0's files are here\n");
  }
  const std::string seen = Broadcast("mark", mark);
  store_->set("sees/" + std::to_string(env_.rank), ToBytes(std::filesystem::exists(seen) ? "1" : "0"));
  WaitForAll("sees/", std::chrono::minutes(5), "looking for rank 0's files");
  for (int r = 0; r < env_.world_size; ++r) {
    if (ToString(store_->get("sees/" + std::to_string(r))) != "1") blind_ranks_.push_back(r);
  }
  if (writer()) std::filesystem::remove(mark);
}

LaunchOutcome JobRank::RunRepetition(const Scenario& s, const std::string& rep_dir,
                                     const std::function<void(const StepProgress&)>& on_step) {
  const std::string key = "rep" + std::to_string(repetitions_++);
  // The same directory our own launcher leaves: what ran, then its result (or error.txt).
  if (writer()) WriteFileAtomically(rep_dir + "/scenario.yaml", YAML::Dump(ScenarioToYaml(s)) + "\n");
  const LaunchOutcome mine = OutcomeOf([&] {
    if (IsPeerEngine(s.engine)) {
      throw InputError(s.name + ": a peer engine (PyTorch FSDP) starts its own ranks: run it with shardbench's own "
                       "launcher (--nproc / --nnodes), not inside a torchrun or srun job");
    }
    if (s.checkpoint.type != CheckpointType::kNone && !blind_ranks_.empty()) {
      throw InputError(s.name + ": its " + std::string(CheckpointTypeName(s.checkpoint.type)) + " checkpoint is written by every rank and read back, but rank(s) " +
                       RankList(blind_ranks_) + " cannot see rank 0's files under " + out_dir_ +
                       ": put --out on a filesystem every node shares");
    }
    return LaunchOutcome{RunAsRank(s, env_, rep_dir, on_step, c10::make_intrusive<c10d::PrefixStore>(key, store_)), ""};
  });
  if (mine.exit_code > 1) {
    std::fprintf(stderr, "shardbench: rank %d: %s\n", env_.rank, mine.message.c_str());
    if (writer()) WriteFileAtomically(rep_dir + "/error.txt", mine.message + "\n");
  }
  // The order ranks report in: the first to fail is the cause, the others' failures (a peer's
  // collective broke) its consequence.
  const int64_t order = mine.exit_code > 1 ? store_->add(key + "/failures", 1) : 0;
  store_->set(key + "/outcome/" + std::to_string(env_.rank),
              ToBytes(std::to_string(mine.exit_code) + " " + std::to_string(order) + "\n" + mine.message));
  const auto bound = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000) * 2 + 60000);
  WaitForAll(key + "/outcome/", bound, "instance " + s.name);
  LaunchOutcome all;
  int64_t first = 0;
  for (int r = 0; r < env_.world_size; ++r) {
    std::istringstream v(ToString(store_->get(key + "/outcome/" + std::to_string(r))));
    int code = 0;
    int64_t at = 0;
    std::string message;
    v >> code >> at;
    v.ignore(1);
    std::getline(v, message, '\0');
    const bool cause = code > 1 && (first == 0 || at < first);
    if (cause || (first == 0 && code > all.exit_code)) all = {code, "rank " + std::to_string(r) + ": " + message};
    if (cause) first = at;
  }
  return all;
}

}  // namespace shardbench
