#include "engine/model/activation_checkpoint.h"

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

namespace shardbench::model {
namespace {

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, int64_t layer, int64_t body) {
    ctx->save_for_backward({x, cos, sin});
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["body"] = body;
    // Autograd is off inside a custom function's forward: nothing in the layer is saved.
    return (*reinterpret_cast<const LayerBody*>(body))(x, cos, sin);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto* layer = const_cast<Module*>(reinterpret_cast<const Module*>(ctx->saved_data["layer"].toInt()));
    const auto* body = reinterpret_cast<const LayerBody*>(ctx->saved_data["body"].toInt());
    at::Tensor x = saved[0].detach().requires_grad_(saved[0].requires_grad());
    at::Tensor out;
    {
      c10::AutoGradMode grad_on(true);
      if (layer->forward_hooks()) layer->forward_hooks()->before_recompute(*layer);
      out = (*body)(x, saved[1], saved[2]);
    }
    // Reentrant backward through the recomputed graph: parameter gradients reach their engine
    // (reduce-scatters included) from here, and the input's gradient comes back to us.
    torch::autograd::backward({out}, {grads[0]});
    return {x.requires_grad() ? x.grad() : at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor CheckpointedLayer(const Module& layer, const LayerBody* body, const at::Tensor& x, const at::Tensor& cos,
                             const at::Tensor& sin) {
  return CheckpointFunction::apply(x, cos, sin, reinterpret_cast<int64_t>(&layer), reinterpret_cast<int64_t>(body));
}

}  // namespace shardbench::model
