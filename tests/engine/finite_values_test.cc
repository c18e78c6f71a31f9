// A checkpoint's non-finite value is named at load: its tensor and element, whatever slice of
// the tensor a rank reads, and an overflow in the model's dtype told apart from a stored NaN.
#include "engine/checkpoint/finite_values.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "engine/common/error.h"

namespace shardbench::checkpoint {
namespace {

std::string Refusal(const at::Tensor& loaded, const at::Tensor& stored, std::vector<int64_t> shape, int64_t begin) {
  try {
    RequireFiniteLoaded(loaded, stored, "m/model.safetensors", "w", shape, begin);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FiniteValues, FiniteValuesAndIntegerTensorsPass) {
  EXPECT_EQ(Refusal(at::randn({4, 5}), {}, {4, 5}, 0), "");
  EXPECT_EQ(Refusal(at::arange(10), {}, {10}, 0), "");  // integers have no NaN
  EXPECT_EQ(Refusal(at::empty({0}), {}, {0}, 0), "");
}

TEST(FiniteValues, NamesTheFirstNonFiniteElementInTheWholeTensorsIndex) {
  at::Tensor t = at::zeros({4, 6});
  t[2][5] = std::numeric_limits<float>::quiet_NaN();
  t[3][1] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Refusal(t, t, {4, 6}, 0),
            "m/model.safetensors: tensor 'w' holds nan at element [2, 5] (1 more non-finite in the values read "
            "there): a checkpoint's values must be finite (training from it would diverge at step 0)");
  // A rank's slice: elements [12, 24) of the same tensor, read as a flat piece.
  const at::Tensor slice = t.reshape({-1}).narrow(0, 12, 12);
  EXPECT_NE(Refusal(slice, slice, {4, 6}, 12).find("holds nan at element [2, 5] (1 more"), std::string::npos);
  const at::Tensor tail = t.reshape({-1}).narrow(0, 18, 6);
  EXPECT_NE(Refusal(tail, tail, {4, 6}, 18).find("holds inf at element [3, 1]:"), std::string::npos);
}

TEST(FiniteValues, AFiniteStoredValueThatOverflowsTheModelsDtypeSaysSo) {
  const at::Tensor stored = at::full({3}, 70000.0f);
  const at::Tensor loaded = stored.to(at::kHalf);  // fp16 tops out at 65504
  EXPECT_NE(Refusal(loaded, stored, {3}, 0)
                .find("tensor 'w' holds 70000, which is inf in the model's dtype Half at "
                      "element [0] (2 more"),
            std::string::npos)
      << Refusal(loaded, stored, {3}, 0);
}

}  // namespace
}  // namespace shardbench::checkpoint
