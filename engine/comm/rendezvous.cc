#include "engine/comm/rendezvous.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "engine/common/error.h"

namespace shardbench::comm {
namespace {

std::string Lookup(const std::map<std::string, std::string>* env, const char* name) {
  if (env) {
    auto it = env->find(name);
    return it == env->end() ? std::string() : it->second;
  }
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

int ParseInt(const std::string& value, const char* name, int min_value) {
  try {
    size_t used = 0;
    int v = std::stoi(value, &used);
    if (used == value.size() && v >= min_value) return v;
  } catch (const std::exception&) {
  }
  throw InputError(std::string("environment variable ") + name + "='" + value + "': expected an integer >= " +
                   std::to_string(min_value));
}

// Rank 0's listening socket for the store, bound to MASTER_ADDR itself: the store is reachable
// only where the job said it would be (0.0.0.0 or :: binds every address, when asked for).
int ListenOn(const std::string& addr, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(addr == "localhost" ? "127.0.0.1" : addr.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw InfraError("rendezvous: MASTER_ADDR " + addr + " does not resolve: " + gai_strerror(rc));
  }
  std::string why;
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  throw InfraError("rendezvous: rank 0 cannot listen on " + addr + ":" + service + " (" + why +
                   "): MASTER_ADDR must be an address of rank 0's node and the port free");
}

}  // namespace

RankEnv RankEnv::FromEnvironment(const std::map<std::string, std::string>* env) {
  RankEnv out;
  std::string rank = Lookup(env, "RANK"), world = Lookup(env, "WORLD_SIZE");
  std::string local = Lookup(env, "LOCAL_RANK");
  std::string node = Lookup(env, "GROUP_RANK"), local_world = Lookup(env, "LOCAL_WORLD_SIZE");
  const char* node_name = "GROUP_RANK";
  const char* rank_name = "RANK";
  const char* world_name = "WORLD_SIZE";
  const char* local_name = "LOCAL_RANK";
  if (rank.empty() && world.empty()) {
    rank = Lookup(env, "SLURM_PROCID");
    world = Lookup(env, "SLURM_NTASKS");
    local = Lookup(env, "SLURM_LOCALID");
    node = Lookup(env, "SLURM_NODEID");
    node_name = "SLURM_NODEID";
    rank_name = "SLURM_PROCID";
    world_name = "SLURM_NTASKS";
    local_name = "SLURM_LOCALID";
  }
  if (!rank.empty() || !world.empty()) {
    if (rank.empty() || world.empty()) {
      throw InputError(std::string(rank_name) + " and " + world_name + " must be set together");
    }
    out.rank = ParseInt(rank, rank_name, 0);
    out.world_size = ParseInt(world, world_name, 1);
    if (out.rank >= out.world_size) {
      throw InputError(std::string(rank_name) + "=" + rank + " is not below " + world_name + "=" + world);
    }
    out.local_rank = local.empty() ? out.rank : ParseInt(local, local_name, 0);
    if (!node.empty()) out.node_rank = ParseInt(node, node_name, 0);
    if (!local_world.empty()) out.local_world_size = ParseInt(local_world, "LOCAL_WORLD_SIZE", 1);
    out.from_launcher = true;
    out.agent_store = Lookup(env, "TORCHELASTIC_USE_AGENT_STORE") == "True";
    if (std::string n = Lookup(env, "TORCHELASTIC_RESTART_COUNT"); !n.empty()) {
      out.restart_count = ParseInt(n, "TORCHELASTIC_RESTART_COUNT", 0);
    }
  }
  std::string addr = Lookup(env, "MASTER_ADDR");
  if (!addr.empty()) out.master_addr = addr;
  std::string port = Lookup(env, "MASTER_PORT");
  if (!port.empty()) {
    out.master_port = ParseInt(port, "MASTER_PORT", 1);
    if (out.master_port > 65535) throw InputError("MASTER_PORT=" + port + ": expected a port in 1..65535");
  }
  return out;
}

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

std::string StorePrefix(const RankEnv& env, const std::string& job_key) {
  return env.agent_store ? job_key + "/attempt" + std::to_string(env.restart_count) : job_key;
}

void JoinBarrier(c10d::Store& store, const RankEnv& env, std::chrono::milliseconds timeout) {
  const auto wait_for = env.rank == 0 ? timeout : timeout + std::chrono::seconds(2);
  store.set("joined/" + std::to_string(env.rank), std::vector<uint8_t>{1});
  std::vector<std::string> keys;
  for (int r = 0; r < env.world_size; ++r) keys.push_back("joined/" + std::to_string(r));
  try {
    store.wait(keys, wait_for);
  } catch (const std::exception& e) {
    std::ostringstream missing;
    int n = 0;
    try {
      for (int r = 0; r < env.world_size; ++r) {
        if (!store.check({keys[r]})) missing << (n++ ? ", " : "") << r;
      }
    } catch (const std::exception&) {
      // The store itself is gone: rank 0 (its server) gave up or died first. Its own error is
      // the root cause, so let its process finish exiting before ours does: the launcher then
      // reports rank 0 rather than this consequence.
      std::this_thread::sleep_for(std::chrono::seconds(2));
      throw InfraError("rendezvous: rank " + std::to_string(env.rank) + " lost the store at " + env.master_addr + ":" +
                       std::to_string(env.master_port) + " (served by rank 0) while waiting for all " +
                       std::to_string(env.world_size) + " ranks to join");
    }
    std::ostringstream msg;
    msg << "rendezvous at " << env.master_addr << ":" << env.master_port << ": rank(s) " << missing.str()
        << " of world size " << env.world_size << " did not join within " << timeout.count()
        << " ms (seen from rank " << env.rank << ")";
    throw InfraError(msg.str());
  }
}

c10::intrusive_ptr<c10d::Store> Rendezvous(const RankEnv& env, std::chrono::milliseconds timeout,
                                        const std::string& job_key) {
  // A lone rank nobody launched (an in-process run) has no one to meet: an in-memory store,
  // and no port that could already be taken.
  if (env.world_size == 1 && !env.from_launcher) {
    return c10::make_intrusive<c10d::PrefixStore>(job_key, c10::make_intrusive<c10d::HashStore>());
  }
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env.master_port);
  opts.isServer = env.rank == 0 && !env.agent_store;
  opts.numWorkers = env.world_size;
  opts.waitWorkers = false;  // our own join barrier below names the missing ranks
  if (opts.isServer) opts.masterListenFd = ListenOn(env.master_addr, env.master_port);
  // Rank 0 serves the store and can name who is missing, so the others wait a little longer
  // (connecting and joining) to let its message be the one the launcher reports.
  const auto wait_for = env.rank == 0 ? timeout : timeout + std::chrono::seconds(2);
  opts.timeout = wait_for;
  c10::intrusive_ptr<c10d::Store> tcp;
  try {
    tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  } catch (const std::exception& e) {
    std::ostringstream msg;
    msg << "rendezvous: rank " << env.rank << " could not " << (opts.isServer ? "serve" : "reach")
        << " the store at " << env.master_addr << ":" << env.master_port << " within " << timeout.count()
        << " ms: " << e.what();
    throw InfraError(msg.str());
  }
  auto store = c10::make_intrusive<c10d::PrefixStore>(StorePrefix(env, job_key), tcp);
  JoinBarrier(*store, env, timeout);
  return store;
}

}  // namespace shardbench::comm
