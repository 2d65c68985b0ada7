#pragma once
// The node at the end of every path to a leaf: it adds the arriving gradient into leaf.grad().

#include "tally/core/autograd_meta.h"
#include "tally/ops/elementwise.h"

namespace tally::autograd {

/// sum += g, where an undefined sum is none yet. Out of place: under create_graph the sum is
/// recorded (Note [Higher-order gradients] in autograd/engine.h).
inline void add_into(Tensor& sum, const Tensor& g) { sum = sum.defined() ? sum + g : g; }

/// Accumulates into one leaf's AutogradMeta::grad.
struct AccumulateGrad final : Node {
  /// `leaf` is the tensor whose meta this is. Its gradient's layout follows from the leaf's
  /// (PyTorch's gradient layout contract): the leaf's strides where the leaf is dense, else
  /// row-major. A first gradient in that layout is kept as it is; any other is copied into it.
  explicit AccumulateGrad(const Tensor& leaf);
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(const Tensor& grad_output) override;

 private:
  /// Whether a first gradient can be kept as it is (PyTorch's AccumulateGrad steals it too): no
  /// other handle, view or graph node shares its bytes, and it has the gradient's layout, in a
  /// buffer of exactly its size.
  bool can_steal(const Tensor& grad) const;
  /// A private copy of a first gradient in the gradient's layout.
  Tensor copy_in_grad_layout(const Tensor& grad) const;

  // Weak, as the leaf itself: under create_graph a leaf's grad() holds a graph that reaches this
  // accumulator, and a strong reference back would be a cycle that leaks both (PyTorch warns of
  // that leak; here there is none). A leaf nobody holds any more takes no gradient.
  std::weak_ptr<AutogradMeta> leaf_;
  std::weak_ptr<TensorImpl> leaf_impl_;  // for the post-accumulate hooks' argument; weak: the graph must not keep the leaf alive
  DimVector sizes_, grad_strides_;
  Dtype dtype_;
  Device device_;
};

}  // namespace tally::autograd
