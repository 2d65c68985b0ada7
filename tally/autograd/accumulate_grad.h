#pragma once
// The node at the end of every path to a leaf: it adds the arriving gradient into leaf.grad().

#include "tally/core/autograd_meta.h"

namespace tally::autograd {

/// Accumulates into one leaf's AutogradMeta::grad.
struct AccumulateGrad final : Node {
  /// `leaf` is the tensor whose meta this is: its layout is what a first gradient must have to be
  /// kept as it is rather than copied.
  explicit AccumulateGrad(const Tensor& leaf)
      : leaf_(leaf.impl().autograd), sizes_(leaf.sizes()), strides_(leaf.strides()), dtype_(leaf.dtype()), device_(leaf.device()) {}
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(const Tensor& grad_output) override;

 private:
  /// Whether a first gradient can be kept as it is (PyTorch's AccumulateGrad steals it too): no
  /// other handle, view or graph node shares its bytes, and it is laid out as the leaf, in a
  /// buffer of exactly its size.
  bool can_steal(const Tensor& grad) const;
  /// A private copy of a first gradient, laid out as PyTorch's gradient layout contract says: with
  /// the leaf's strides where the leaf is dense, else row-major.
  Tensor copy_in_leaf_layout(const Tensor& grad) const;

  std::shared_ptr<AutogradMeta> leaf_;
  DimVector sizes_, strides_;
  Dtype dtype_;
  Device device_;
};

}  // namespace tally::autograd
