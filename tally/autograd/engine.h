#pragma once
// Running backward passes (torch.autograd.backward and torch.autograd.grad). Tensor::backward
// is the one-root form of backward().
//
// Note [Higher-order gradients]
// With create_graph the engine runs each node's rule with grad mode on: the rules are made of
// tally ops, so they record a graph of their own, and the gradients they return can be
// differentiated again (a Hessian-vector product, a gradient penalty). A rule that reads its
// op's output reads it with the node itself as grad_fn, as PyTorch's saved outputs do, so a
// derivative through that output reaches the op's rule again. create_graph keeps the graph
// (retain_graph defaults to it), and a leaf's grad() then carries history.

#include <optional>

#include "tally/core/tensor.h"

namespace tally::autograd {

/// The gradients of `outputs` with respect to `inputs`, returned rather than accumulated into
/// any grad() (torch.autograd.grad). `grad_outputs` (one per output; empty, or an undefined
/// entry, means ones for a one-element output) weight the outputs. An input the outputs do not
/// depend on is an error unless `allow_unused`, which returns an undefined tensor for it. The
/// graph is freed unless retain_graph, which defaults to create_graph.
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                std::optional<bool> retain_graph = std::nullopt, bool create_graph = false, bool allow_unused = false);

/// Accumulate the gradients of `tensors` (weighted by `grad_tensors`, as grad's grad_outputs)
/// into the grad() of the leaves, or of `inputs` only when given (torch.autograd.backward).
void backward(const TensorList& tensors, const TensorList& grad_tensors = {}, std::optional<bool> retain_graph = std::nullopt,
              bool create_graph = false, const TensorList& inputs = {});

}  // namespace tally::autograd
