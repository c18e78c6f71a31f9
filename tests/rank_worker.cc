// A rank program for the multi-process tests: the tests launch N copies of it through the same
// launcher `shardbench run --nproc N` uses. Each subcommand checks exact results on its rank and
// exits 0, or prints what differed and exits 1; infrastructure errors exit 3.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "engine/comm/create_communicator.h"
#include "engine/common/error.h"
#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/train/data_parallel.h"

using namespace shardbench;
using namespace shardbench::comm;

namespace {

int g_failures = 0;

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

std::chrono::milliseconds TimeoutFromEnv(int default_ms) {
  const char* v = std::getenv("SHARDBENCH_TEST_TIMEOUT_MS");
  return std::chrono::milliseconds(v ? std::atoi(v) : default_ms);
}

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
  return g_failures ? 1 : 0;
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
  auto comm = Connect("gloo", env, CommOptions{TimeoutFromEnv(2000)});
  comm->barrier();
  return 0;
}

// Data parallel over ranks vs one process with the whole global batch, checked on every rank.
// Only the order of the gradient sums differs, so:
//  - the first step's averaged gradients agree to fp32 rounding (relative 1e-6 of the largest);
//  - the loss trajectory agrees within 1e-5 relative (the parity criterion the engines use);
//  - parameters agree within 1e-2 * lr * steps: Adam divides by sqrt(v), so an element whose
//    gradient is near zero (|g| ~ eps) turns rounding noise into an update of up to lr. Most
//    elements agree to ~1e-7; the bound catches any real difference (a wrong average is lr-sized
//    on every element).
int DataParallelParity(bool lora) {
  auto env = RankEnv::FromEnvironment();
  auto comm = Connect("gloo", env, CommOptions{std::chrono::seconds(60)});
  const auto config = model::NamedLlamaConfig("tiny");
  model::LoraConfig lora_config;
  lora_config.enabled = lora;
  const int64_t b = 2, steps = 5;
  const double lr = 1e-2;
  model::SyntheticData data(3, config.vocab_size, 24);
  struct Run {
    std::unique_ptr<model::LlamaForCausalLM> model;
    std::vector<at::Tensor> first_grads;
    std::vector<double> losses;
  };
  auto train = [&](Communicator* c, int64_t first, int64_t count) {
    Run run;
    run.model = model::BuildInitializedLlama(config, lora_config, 17, at::TensorOptions());
    optim::AdamW opt(optim::MakeParamGroups(*run.model, lr, 0.01, true));
    train::DataParallelTrainer trainer(*run.model, opt, c);
    for (int64_t s = 0; s < steps; ++s) {
      run.losses.push_back(trainer.step(data.batch(s, first, count)).loss);
      if (s == 0) {
        for (auto& p : run.model->named_parameters()) {
          if (p.slot->grad().defined()) run.first_grads.push_back(p.slot->grad().clone());
        }
      }
    }
    return run;
  };
  Run dp = train(comm.get(), env.rank * b, b);
  Run single = train(nullptr, 0, b * env.world_size);
  Expect(dp.first_grads.size() == single.first_grads.size() && !dp.first_grads.empty(), "gradient count");
  for (size_t i = 0; i < dp.first_grads.size() && i < single.first_grads.size(); ++i) {
    const double scale = single.first_grads[i].abs().max().item<double>();
    const double diff = (dp.first_grads[i] - single.first_grads[i]).abs().max().item<double>();
    Expect(diff <= 1e-6 * scale + 1e-12, "first-step gradient " + std::to_string(i) + ": max diff " +
                                             std::to_string(diff) + " of max " + std::to_string(scale));
  }
  for (int64_t s = 0; s < steps; ++s) {
    Expect(std::abs(dp.losses[s] - single.losses[s]) <= 1e-5 * std::abs(single.losses[s]),
           "loss step " + std::to_string(s) + ": dp " + std::to_string(dp.losses[s]) + " vs single " +
               std::to_string(single.losses[s]));
  }
  auto pd = dp.model->named_parameters(), ps = single.model->named_parameters();
  for (size_t i = 0; i < pd.size(); ++i) {
    const double diff = (*pd[i].slot - *ps[i].slot).abs().max().item<double>();
    Expect(diff <= 1e-2 * lr * steps, pd[i].name + ": max |dp - single| = " + std::to_string(diff));
  }
  Expect(single.losses.back() < single.losses.front(), "loss did not drop");
  comm->barrier();
  return g_failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<int()>> commands = {
      {"collectives", Collectives},
      {"stall-on-rank1", StallOnRank1},
      {"die-on-rank1", DieOnRank1},
      {"join-only", JoinOnly},
      {"dp-parity", [&] { return DataParallelParity(argc > 2 && std::string(argv[2]) == "lora"); }},
  };
  if (argc < 2 || !commands.count(argv[1])) {
    std::cerr << "usage: rank_worker <collectives|stall-on-rank1|die-on-rank1|join-only|dp-parity [lora]>\n";
    return 2;
  }
  try {
    return commands.at(argv[1])();
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  }
}
