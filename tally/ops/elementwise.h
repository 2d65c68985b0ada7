#pragma once
// Elementwise operators with broadcasting and PyTorch's type promotion.

#include <initializer_list>
#include <optional>

#include "tally/core/tensor.h"

namespace tally {

/// The dtype of an op on a and b (torch.result_type): dimensioned tensors outrank 0-d ones.
Dtype result_type(const Tensor& a, const Tensor& b);
/// The dtype of an op on several tensors, by the same rule.
Dtype result_type(std::initializer_list<const Tensor*> tensors);
/// The dtype of an op on a tensor and a number: the number only lifts the category.
Dtype result_type(const Tensor& a, Scalar b);
/// The dtype of an op on a tensor of dtype `a` and a number.
Dtype result_type(Dtype a, Scalar b);

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);  ///< a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = 1);  ///< a - alpha * b
/// The binary ops of tally/table/binary_ops.h (where each row says what it computes), each with
/// its out= form: `tally::maximum(a, b)`, `tally::maximum_out(out, a, b)`.
#define TALLY_BINARY_FUNCTIONS_(fn, Name, summary) \
  Tensor fn(const Tensor& a, const Tensor& b);     \
  Tensor& fn##_out(Tensor& out, const Tensor& a, const Tensor& b);
TALLY_FORALL_BINARY_OPS(TALLY_BINARY_FUNCTIONS_)
#undef TALLY_BINARY_FUNCTIONS_
Tensor pow(const Tensor& a, Scalar exponent);                    ///< a ** exponent
/// cond ? a : b, broadcast together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
/// x with `value` where mask is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// Clamp into [min, max]; either bound may be absent.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);

/// The unary ops of tally/table/unary_ops.h (where each row says what it computes), each with its
/// out= form: `tally::exp(x)`, `tally::exp_out(out, x)`.
#define TALLY_UNARY_FUNCTIONS_(fn, Name, summary) \
  Tensor fn(const Tensor& x);                     \
  Tensor& fn##_out(Tensor& out, const Tensor& x);
TALLY_FORALL_UNARY_OPS(TALLY_UNARY_FUNCTIONS_)
#undef TALLY_UNARY_FUNCTIONS_

/// GELU: "none" is x·Φ(x) with erf, "tanh" the tanh approximation (torch.nn.functional.gelu).
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
/// Upper triangle (elements with col - row >= diagonal), zeros elsewhere, over the last two dims.
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// Lower triangle (col - row <= diagonal).
Tensor tril(const Tensor& x, int64_t diagonal = 0);
/// self + value·t1·t2 (torch.addcmul).
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/// self + value·t1/t2 (torch.addcdiv).
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/// self + weight·(end − self) (torch.lerp).
Tensor lerp(const Tensor& self, const Tensor& end, Scalar weight);

// out= forms (libtorch's at::add_out(out, self, other)): the result is written into `out`,
// which is resized if its shape differs; its dtype must take the result (Note [Forms] in ops/apply.h).
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor& addcmul_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = 1);
Tensor& addcdiv_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = 1);
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, Scalar weight);
Tensor& clamp_out(Tensor& out, const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor& where_out(Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b);

/// Whether sizes and values are equal (torch.equal).
bool equal(const Tensor& a, const Tensor& b);
/// |a - b| <= atol + rtol·|b| everywhere, a and b broadcast against each other (torch.allclose);
/// rtol and atol must not be negative. Unlike torch, which raises, a and b may differ in dtype:
/// they are compared by value.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, Scalar b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, Scalar b);

}  // namespace tally
