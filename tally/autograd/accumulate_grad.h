#pragma once
// The node at the end of every path to a leaf: it adds the arriving gradient into leaf.grad().

#include "tally/core/autograd_meta.h"

namespace tally::autograd {

/// Accumulates into one leaf's AutogradMeta::grad.
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(std::shared_ptr<AutogradMeta> leaf) : leaf_(std::move(leaf)) {}
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(const Tensor& grad_output) override;

 private:
  std::shared_ptr<AutogradMeta> leaf_;
};

}  // namespace tally::autograd
