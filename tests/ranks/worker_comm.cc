// Rank-worker commands for the collectives and launcher tests.
#include <ATen/ATen.h>

#include <thread>

#include "engine/comm/create_communicator.h"
#include "tests/ranks/worker_checks.h"

namespace shardbench::worker {

using namespace shardbench::comm;

// Rank r contributes counts[r] elements valued 1000*(r+1) + i: any misplaced element shows.
at::Tensor Chunk(int r, int64_t n, at::ScalarType t) {
  return (at::arange(n, at::kDouble) + 1000.0 * (r + 1)).to(t);
}

void CheckCollectives(Communicator& comm, at::ScalarType dtype, bool reducible) {
  const int ws = comm.world_size(), me = comm.rank();
  const std::string tag = std::string(" [") + at::toString(dtype) + ", ws=" + std::to_string(ws) + "]";
  // Equal chunks.
  {
    const int64_t n = 5;
    at::Tensor out = at::full({n * ws}, -1, dtype);
    comm.all_gather(out, Chunk(me, n, dtype));
    std::vector<at::Tensor> parts;
    for (int r = 0; r < ws; ++r) parts.push_back(Chunk(r, n, dtype));
    ExpectEqual(out, at::cat(parts), "all_gather equal chunks" + tag);
  }
  // Uneven chunks; the last rank holds an empty one.
  std::vector<int64_t> counts;
  for (int r = 0; r < ws; ++r) counts.push_back(r == ws - 1 ? 0 : r + 2);
  int64_t total = 0;
  for (auto c : counts) total += c;
  {
    at::Tensor out = at::full({total}, -1, dtype);
    comm.all_gather(out, Chunk(me, counts[me], dtype), counts);
    std::vector<at::Tensor> parts;
    for (int r = 0; r < ws; ++r) parts.push_back(Chunk(r, counts[r], dtype));
    ExpectEqual(out, at::cat(parts), "all_gather uneven chunks with an empty one" + tag);
  }
  {
    at::Tensor t = me == ws - 1 ? Chunk(42, 7, dtype) : at::zeros({7}, dtype);
    comm.broadcast(t, ws - 1);
    ExpectEqual(t, Chunk(42, 7, dtype), "broadcast from the last rank" + tag);
  }
  {
    const int64_t n = 6;
    std::vector<at::Tensor> parts;
    for (int r = 0; r < ws; ++r) parts.push_back(Chunk(r, n, dtype));
    at::Tensor in = me == 0 ? at::cat(parts) : at::Tensor();
    at::Tensor out = at::full({n}, -1, dtype);
    comm.scatter(out, in, 0);
    ExpectEqual(out, Chunk(me, n, dtype), "scatter from rank 0" + tag);
  }
  if (!reducible) return;
  const double rank_sum = ws * (ws + 1) / 2.0;
  {
    // input[j] = (rank+1)*(j+1): the sum is (j+1)*ws(ws+1)/2, exact in every dtype here.
    at::Tensor in = ((at::arange(total, at::kDouble) + 1) * (me + 1)).to(dtype);
    at::Tensor before = in.clone();
    at::Tensor out = at::full({counts[me]}, -1, dtype);
    comm.reduce_scatter(out, in, counts);
    int64_t offset = 0;
    for (int r = 0; r < me; ++r) offset += counts[r];
    at::Tensor want = ((at::arange(offset, offset + counts[me], at::kDouble) + 1) * rank_sum).to(dtype);
    ExpectEqual(out, want, "reduce_scatter uneven chunks with an empty one" + tag);
    ExpectEqual(in, before, "reduce_scatter leaves its input unchanged" + tag);
  }
  {
    const int64_t n = 4;
    at::Tensor in = ((at::arange(n * ws, at::kDouble) + 1) * (me + 1)).to(dtype);
    at::Tensor out = at::empty({n}, dtype);
    comm.reduce_scatter(out, in);
    at::Tensor want = ((at::arange(me * n, (me + 1) * n, at::kDouble) + 1) * rank_sum).to(dtype);
    ExpectEqual(out, want, "reduce_scatter equal chunks" + tag);
  }
  {
    at::Tensor t = ((at::arange(9, at::kDouble) + 1) * (me + 1)).to(dtype);
    comm.all_reduce(t);
    ExpectEqual(t, ((at::arange(9, at::kDouble) + 1) * rank_sum).to(dtype), "all_reduce" + tag);
  }
}

int Collectives() {
  auto env = RankEnv::FromEnvironment();
  auto comm = Connect("gloo", env, CommOptions{TimeoutFromEnv(30000)});
  for (auto t : {at::kFloat, at::kDouble, at::kHalf, at::kInt, at::kLong}) CheckCollectives(*comm, t, true);
  CheckCollectives(*comm, at::kBFloat16, false);  // byte-moving collectives only

  // Async: several in flight, completed in issue order, results as if synchronous.
  comm->reset_stats();
  const int ws = comm->world_size();
  at::Tensor a = at::ones({3}), b = at::full({2}, static_cast<double>(comm->rank()));
  at::Tensor gathered = at::empty({2 * ws});
  auto w1 = comm->all_reduce_async(a);
  auto w2 = comm->all_gather_async(gathered, b);
  auto w3 = comm->barrier_async();
  w3->wait();
  w2->wait();
  w1->wait();
  ExpectEqual(a, at::full({3}, static_cast<double>(ws)), "async all_reduce");
  std::vector<at::Tensor> parts;
  for (int r = 0; r < ws; ++r) parts.push_back(at::full({2}, static_cast<double>(r)));
  ExpectEqual(gathered, at::cat(parts), "async all_gather");
  // Exact accounting: counts and payload bytes per collective.
  auto s = comm->stats();
  Expect(s[size_t(Collective::kAllReduce)].count == 1 && s[size_t(Collective::kAllReduce)].bytes == 12,
         "stats all_reduce count/bytes");
  Expect(s[size_t(Collective::kAllGather)].count == 1 && s[size_t(Collective::kAllGather)].bytes == 8 * ws,
         "stats all_gather count/bytes");
  Expect(s[size_t(Collective::kBarrier)].count == 1, "stats barrier count");
  comm->barrier();
  return ExitCode();
}

// Joins, then never calls the collective its peer waits in.
int StallOnRank1() {
  auto env = RankEnv::FromEnvironment();
  auto comm = Connect("gloo", env, CommOptions{TimeoutFromEnv(1000)});
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(20));
    return 0;
  }
  at::Tensor t = at::ones({4});
  comm->all_reduce(t);  // must time out with an InfraError
  return 0;
}

// Rank 1 exits right after joining; the others wait in a long barrier the launcher must end.
int DieOnRank1() {
  auto env = RankEnv::FromEnvironment();
  auto comm = Connect("gloo", env, CommOptions{std::chrono::seconds(60)});
  if (comm->rank() == 1) std::_Exit(7);
  comm->barrier();
  return 0;
}

// Just rendezvous (used with fewer ranks started than WORLD_SIZE says).
int JoinOnly() {
  auto env = RankEnv::FromEnvironment();
  // Rank 0 serves the store and can name who never joined; the others wait three times as
  // long, so on a loaded machine rank 0's report still comes first (rather than a peer's
  // "lost the store" and the launcher stopping rank 0).
  const auto timeout = TimeoutFromEnv(2000) * (env.rank == 0 ? 1 : 3);
  auto comm = Connect("gloo", env, CommOptions{timeout});
  comm->barrier();
  return 0;
}

}  // namespace shardbench::worker
