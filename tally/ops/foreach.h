#pragma once
// The _foreach ops (torch._foreach_add_ and friends): one call over a list of tensors, as an
// optimizer updates every parameter. Each element runs the ordinary in-place op, with its checks
// and version counter; the ledger gets one row for the whole call, named as PyTorch names it,
// with the elements' costs summed, instead of one row per parameter.

#include "tally/core/tensor.h"

namespace tally {

/// self[i] += alpha · other[i]
void _foreach_add_(TensorList& self, const TensorList& other, Scalar alpha = 1);
/// self[i] += value
void _foreach_add_(TensorList& self, Scalar value);
/// self[i] *= value
void _foreach_mul_(TensorList& self, Scalar value);
/// self[i] *= other[i]
void _foreach_mul_(TensorList& self, const TensorList& other);
/// self[i] += value · t1[i] · t2[i]
void _foreach_addcmul_(TensorList& self, const TensorList& t1, const TensorList& t2, Scalar value = 1);
/// self[i] += value · t1[i] / t2[i]
void _foreach_addcdiv_(TensorList& self, const TensorList& t1, const TensorList& t2, Scalar value = 1);
/// self[i] += weight · (end[i] − self[i])
void _foreach_lerp_(TensorList& self, const TensorList& end, Scalar weight);
/// self[i] = 0
void _foreach_zero_(TensorList& self);
/// Clear the gradients of `params` (Module::zero_grad, Optimizer::zero_grad): release them
/// (set_to_none, PyTorch's default), or zero them in place with one _foreach_zero_.
void zero_grads(const TensorList& params, bool set_to_none);
/// √x[i], new tensors
TensorList _foreach_sqrt(const TensorList& x);

}  // namespace tally
