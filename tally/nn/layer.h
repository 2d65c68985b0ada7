#pragma once
// Layer: a module whose forward maps one tensor to one tensor — what Sequential chains.

#include "tally/nn/module.h"

namespace tally::nn {

class Layer : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

}  // namespace tally::nn
