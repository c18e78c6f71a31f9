// Engine overhead at world size 1: the flat (FSDP1) engine's step time over the plain
// unsharded step, measured side by side in one process (steps alternate between the two
// models, so drift in machine speed affects both alike). Not a test: it prints measurements.
//
//   build/shardbench_engine_overhead [model=tiny] [lora=0|1] [steps=20] [batch=4] [seq=64]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "engine/model/llama.h"
#include "engine/model/synthetic_data.h"
#include "engine/optim/param_groups.h"
#include "engine/shard/flat_sharded_model.h"
#include "engine/train/trainer.h"
#include "reporters/statistics.h"

using namespace shardbench;

int main(int argc, char** argv) {
  std::map<std::string, std::string> args{{"model", "tiny"}, {"lora", "0"}, {"steps", "20"}, {"batch", "4"},
                                          {"seq", "64"}, {"policy", "transformer_block"}};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string::npos || !args.count(a.substr(0, eq))) {
      std::fprintf(stderr, "usage: %s [model=tiny] [lora=0|1] [steps=20] [batch=4] [seq=64] [policy=transformer_block]\n", argv[0]);
      return 2;
    }
    args[a.substr(0, eq)] = a.substr(eq + 1);
  }
  const auto config = model::NamedLlamaConfig(args["model"]);
  model::LoraConfig lora;
  lora.enabled = args["lora"] == "1";
  const int steps = std::stoi(args["steps"]);
  const int64_t batch = std::stoll(args["batch"]), seq = std::stoll(args["seq"]);

  auto plain = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  auto wrapped = model::BuildInitializedLlama(config, lora, 1, at::TensorOptions());
  shard::FlatShardedModel flat(*wrapped, nullptr, {shard::ParseWrapPolicy(args["policy"]), true, true});
  optim::AdamW plain_opt(optim::MakeParamGroups(*plain, 1e-3, 0.0, true));
  optim::AdamW flat_opt(optim::MakeParamGroups(flat.named_parameters(), 1e-3, 0.0, true));
  train::Trainer plain_trainer(*plain, plain_opt, nullptr, nullptr);
  train::Trainer flat_trainer(*wrapped, flat_opt, nullptr, &flat);
  model::SyntheticData data(1, config.vocab_size, seq);

  std::vector<double> plain_s, flat_s, ratios;
  for (int s = 0; s < steps + 2; ++s) {
    auto b = data.batch(s, 0, batch);
    // Alternate which goes first so neither always runs on a warmer cache.
    double tp, tf;
    if (s % 2 == 0) {
      tp = plain_trainer.step(b).seconds;
      tf = flat_trainer.step(b).seconds;
    } else {
      tf = flat_trainer.step(b).seconds;
      tp = plain_trainer.step(b).seconds;
    }
    if (s < 2) continue;  // warmup
    plain_s.push_back(tp);
    flat_s.push_back(tf);
    ratios.push_back(tf / tp);
  }
  const Summary p = Summarize(plain_s), f = Summarize(flat_s), r = Summarize(ratios);
  std::printf("model=%s lora=%s policy=%s batch=%lld seq=%lld steps=%d threads=%d\n", args["model"].c_str(),
              args["lora"].c_str(), args["policy"].c_str(), (long long)batch, (long long)seq, steps, at::get_num_threads());
  std::printf("  plain step  median %.2f ms  (p10 %.2f, p90 %.2f)\n", p.median * 1e3, p.p10 * 1e3, p.p90 * 1e3);
  std::printf("  flat  step  median %.2f ms  (p10 %.2f, p90 %.2f)\n", f.median * 1e3, f.p10 * 1e3, f.p90 * 1e3);
  std::printf("  flat/plain  median %.3f  (p10 %.3f, p90 %.3f)\n", r.median, r.p10, r.p90);
  return 0;
}
