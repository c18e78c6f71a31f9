// AdamW: the three implementations against torch's closed form and against each other.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "engine/common/error.h"
#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"

namespace shardbench {
namespace {

using optim::AdamWImpl;

class AdamWImpls : public ::testing::TestWithParam<AdamWImpl> {};

TEST_P(AdamWImpls, MatchesTorchUpdateByHand) {
  // Two steps on one element, against the closed form of torch.optim.AdamW.
  at::Tensor p = at::full({1}, 1.0, at::kDouble).requires_grad_(true);
  optim::AdamWOptions o;
  o.impl = GetParam();
  optim::AdamW opt({{"all", {p}, /*lr=*/0.1, /*weight_decay=*/0.01}}, o);
  double want = 1.0, m = 0, v = 0;
  for (int step = 1; step <= 2; ++step) {
    const double g = 0.5 * step;
    p.mutable_grad() = at::full({1}, g, at::kDouble);
    opt.step();
    want *= 1 - 0.1 * 0.01;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double mhat_scale = 1 - std::pow(0.9, step), vhat_scale = 1 - std::pow(0.999, step);
    want -= 0.1 / mhat_scale * m / (std::sqrt(v) / std::sqrt(vhat_scale) + 1e-8);
    EXPECT_NEAR(p.item<double>(), want, 1e-12) << optim::AdamWImplName(GetParam()) << " step " << step;
  }
  // exp_avg + exp_avg_sq (fused also keeps a float step tensor).
  EXPECT_EQ(opt.state_bytes(), GetParam() == AdamWImpl::kFused ? 20 : 16);
}

INSTANTIATE_TEST_SUITE_P(All, AdamWImpls, ::testing::Values(AdamWImpl::kForLoop, AdamWImpl::kForeach, AdamWImpl::kFused),
                         [](const auto& info) { return std::string(optim::AdamWImplName(info.param)); });

// The same gradients into each implementation for 10 steps: parameters agree within 1e-6
// relative (fp32), with two groups (no weight decay on norms).
TEST(AdamWAgreement, ForLoopForeachFusedSameParamsAfterTenSteps) {
  std::vector<std::vector<at::Tensor>> finals;
  for (AdamWImpl impl : {AdamWImpl::kForLoop, AdamWImpl::kForeach, AdamWImpl::kFused}) {
    auto m = model::BuildInitializedLlama(model::NamedLlamaConfig("tiny"), {}, 3, at::TensorOptions());
    optim::AdamWOptions o;
    o.impl = impl;
    optim::AdamW opt(optim::MakeParamGroups(*m, 1e-2, 0.05, true), o);
    ASSERT_EQ(opt.groups().size(), 2u);
    auto params = m->named_parameters();
    for (int step = 0; step < 10; ++step) {
      for (size_t i = 0; i < params.size(); ++i) {
        auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 * step + i);
        params[i].slot->mutable_grad() = at::empty_like(*params[i].slot).normal_(0, 1, gen);
      }
      opt.step();
    }
    std::vector<at::Tensor> out;
    for (auto& p : params) out.push_back(p.slot->detach().clone());
    finals.push_back(out);
  }
  for (size_t impl = 1; impl < finals.size(); ++impl) {
    for (size_t i = 0; i < finals[0].size(); ++i) {
      const double scale = finals[0][i].abs().max().item<double>();
      const double diff = (finals[impl][i] - finals[0][i]).abs().max().item<double>();
      EXPECT_LE(diff, 1e-6 * scale) << "impl " << impl << " param " << i << " diff " << diff;
    }
  }
}

TEST(AdamWImpl, NamesParseAndBadNameIsRefused) {
  EXPECT_EQ(optim::ParseAdamWImpl("foreach"), AdamWImpl::kForeach);
  EXPECT_THROW(optim::ParseAdamWImpl("sgd"), InputError);
}

}  // namespace
}  // namespace shardbench

#include "engine/optim/grad_clip.h"
#include "engine/optim/lr_schedule.h"

namespace shardbench {
namespace {

TEST(GradClip, ScalesToMaxNormLikeTorch) {
  std::vector<at::Tensor> grads{at::tensor({3.0}, at::kDouble), at::tensor({4.0}, at::kDouble)};
  EXPECT_DOUBLE_EQ(optim::ClipGradNorm(grads, 1.0, nullptr).item<double>(), 5.0);
  EXPECT_NEAR(grads[0].item<double>(), 3.0 / (5.0 + 1e-6), 1e-15);
  EXPECT_NEAR(grads[1].item<double>(), 4.0 / (5.0 + 1e-6), 1e-15);
  // Under the limit nothing changes.
  std::vector<at::Tensor> small{at::tensor({0.3}, at::kDouble)};
  optim::ClipGradNorm(small, 1.0, nullptr);
  EXPECT_DOUBLE_EQ(small[0].item<double>(), 0.3);
}

TEST(LrSchedule, LinearWarmupThenCosineToFloor) {
  optim::LrSchedule s{optim::LrScheduleKind::kCosine, 4, 14, 0.1};
  EXPECT_DOUBLE_EQ(s.factor(0), 0.25);
  EXPECT_DOUBLE_EQ(s.factor(3), 1.0);
  EXPECT_DOUBLE_EQ(s.factor(4), 1.0);                 // decay starts after warmup
  EXPECT_NEAR(s.factor(9), 0.1 + 0.9 * 0.5, 1e-12);   // halfway
  EXPECT_NEAR(s.factor(14), 0.1, 1e-12);              // the floor
  optim::LrSchedule constant{optim::LrScheduleKind::kConstant, 2, 10, 0.0};
  EXPECT_DOUBLE_EQ(constant.factor(0), 0.5);
  EXPECT_DOUBLE_EQ(constant.factor(7), 1.0);
}

}  // namespace
}  // namespace shardbench
