#pragma once
// Numerical gradient checking (torch.autograd.gradcheck): analytic gradients from backward()
// against central differences, in float64.

#include <functional>
#include <string>

#include "tally/core/tensor.h"

namespace tally::autograd {

/// What gradcheck found.
struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;  ///< largest |analytic - numeric| over all checked elements
  std::string message;       ///< the first mismatch: input, element, both values
};

/// Check fn's gradients at `inputs` (float64 tensors; those requiring grad are checked; they may
/// be non-contiguous views of a leaf's storage). The output is reduced with fixed random weights,
/// so every output element contributes. Passes when |analytic - numeric| <= atol + rtol·|numeric|.
GradcheckResult gradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs,
                          double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

/// The second-order check (torch.autograd.gradgradcheck): fn's gradients, taken with
/// create_graph against fixed random weights of its output, are a function of the inputs whose
/// own gradients (a double backward through every node) gradcheck compares with central
/// differences of the first gradients.
GradcheckResult gradgradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs,
                              double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

}  // namespace tally::autograd
