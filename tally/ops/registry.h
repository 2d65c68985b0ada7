#pragma once
// The typed op registry: what the tests need to know of an op, declared by the op itself. An op
// listed here is covered by gradcheck, the ledger-cost test and the differential tests against
// PyTorch the moment it exists, without an entry in any test table.

#include <cstdint>
#include <string_view>
#include <vector>

#include "tally/core/tensor.h"

namespace tally::ops {

/// One unary elementwise op (tally/ops/unary.cpp).
struct UnaryOpInfo {
  std::string_view name;       ///< tally's and the ledger's name
  std::string_view reference;  ///< the PyTorch function it matches, e.g. "torch.erf", "torch.nn.functional.softplus"
  std::string_view domain;     ///< where test inputs are drawn: "normal" (around 0) or "positive"
  int64_t flops;               ///< arithmetic steps per element, its declared cost
  bool floating_only;          ///< refuses integer and bool inputs (PyTorch has no such kernels)
  bool differentiable;         ///< has a backward rule
  Tensor (*fn)(const Tensor&);  ///< the function users call
};

/// Every registered unary op, in a fixed order.
const std::vector<UnaryOpInfo>& unary_ops();

}  // namespace tally::ops
