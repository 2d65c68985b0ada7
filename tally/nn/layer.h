#pragma once
// Layer: a module whose forward maps one tensor to one tensor — what Sequential chains.

#include "tally/nn/module.h"

namespace tally::nn {

class Layer : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  /// Calling a layer runs its forward hooks around forward (Module::call_with_hooks).
  Tensor operator()(const Tensor& x) {
    return call_with_hooks(x, [this](const Tensor& in) { return forward(in); });
  }
};

}  // namespace tally::nn
