#pragma once
// The typed op registry: what the tests need to know of an op, declared by the op itself. An op
// listed here is covered by gradcheck, the ledger-cost test and the differential tests against
// PyTorch the moment it exists, without an entry in any test table.

#include <cstdint>
#include <string_view>
#include <vector>

#include "tally/core/tensor.h"

namespace tally::ops {

/// One unary elementwise op: a row of tally/table/unary_ops.h, with its definition's facts.
struct UnaryOpInfo {
  std::string_view name;       ///< tally's and the ledger's name
  std::string_view summary;    ///< what it computes, as the table says
  std::string_view reference;  ///< the PyTorch function it matches, e.g. "torch.erf", "torch.nn.functional.softplus"
  std::string_view domain;     ///< where test inputs are drawn: "normal" (around 0), "positive" or "unit" (0 to 1)
  int64_t flops;               ///< arithmetic steps per element, its declared cost
  bool floating_only;          ///< refuses integer and bool inputs (PyTorch has no such kernels)
  bool differentiable;         ///< has a backward rule
  Tensor (*fn)(const Tensor&);                 ///< the function users call, `tally::exp(x)`
  Tensor& (*out)(Tensor& out, const Tensor&);  ///< its out= form, `tally::exp_out(out, x)`
  Tensor (*method)(const Tensor&);             ///< the method, `x.exp()`
  Tensor& (*inplace)(const Tensor&);           ///< in place, `x.exp_()`, which returns x
};

/// Every registered unary op, in a fixed order.
const std::vector<UnaryOpInfo>& unary_ops();

/// One binary elementwise op: a row of tally/table/binary_ops.h.
struct BinaryOpInfo {
  std::string_view name;     ///< tally's and the ledger's name, and torch's
  std::string_view summary;  ///< what it computes, as the table says
  Tensor (*fn)(const Tensor&, const Tensor&);                 ///< `tally::maximum(a, b)`
  Tensor& (*out)(Tensor& out, const Tensor&, const Tensor&);  ///< `tally::maximum_out(out, a, b)`
  Tensor (*method)(const Tensor&, const Tensor&);             ///< `a.maximum(b)`
  Tensor& (*inplace)(const Tensor&, const Tensor&);           ///< `a.maximum_(b)`, which returns a
};

/// Every registered binary op, in the table's order.
const std::vector<BinaryOpInfo>& binary_ops();

}  // namespace tally::ops
