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
Tensor mul(const Tensor& a, const Tensor& b);                    ///< a * b
Tensor div(const Tensor& a, const Tensor& b);                    ///< a / b (true division)
Tensor pow(const Tensor& a, const Tensor& b);                    ///< a ** b
Tensor pow(const Tensor& a, Scalar exponent);                    ///< a ** exponent
Tensor maximum(const Tensor& a, const Tensor& b);                ///< elementwise max (NaN propagates)
Tensor minimum(const Tensor& a, const Tensor& b);                ///< elementwise min (NaN propagates)
Tensor eq(const Tensor& a, const Tensor& b);                     ///< a == b (bool)
Tensor ne(const Tensor& a, const Tensor& b);                     ///< a != b (bool)
Tensor lt(const Tensor& a, const Tensor& b);                     ///< a < b (bool)
Tensor le(const Tensor& a, const Tensor& b);                     ///< a <= b (bool)
Tensor gt(const Tensor& a, const Tensor& b);                     ///< a > b (bool)
Tensor ge(const Tensor& a, const Tensor& b);                     ///< a >= b (bool)
/// cond ? a : b, broadcast together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
/// x with `value` where mask is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// Clamp into [min, max]; either bound may be absent.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);

Tensor neg(const Tensor& x);      ///< -x
Tensor abs(const Tensor& x);      ///< |x|
Tensor sqrt(const Tensor& x);     ///< √x
Tensor rsqrt(const Tensor& x);    ///< 1/√x
Tensor exp(const Tensor& x);      ///< eˣ
Tensor log(const Tensor& x);      ///< ln x
Tensor tanh(const Tensor& x);     ///< tanh x
Tensor sigmoid(const Tensor& x);  ///< 1/(1+e⁻ˣ)
Tensor relu(const Tensor& x);     ///< max(x, 0)
Tensor silu(const Tensor& x);     ///< x·sigmoid(x)
Tensor square(const Tensor& x);   ///< x²
Tensor erf(const Tensor& x);      ///< the error function
Tensor softplus(const Tensor& x); ///< log(1 + eˣ) (torch.nn.functional.softplus, beta 1, threshold 20)
Tensor log1p(const Tensor& x);    ///< ln(1 + x), accurate near 0
Tensor expm1(const Tensor& x);    ///< eˣ − 1, accurate near 0
Tensor log2(const Tensor& x);     ///< log₂ x
Tensor log10(const Tensor& x);    ///< log₁₀ x
Tensor reciprocal(const Tensor& x);  ///< 1/x (integers in float32)
Tensor sin(const Tensor& x);      ///< sin x
Tensor cos(const Tensor& x);      ///< cos x
Tensor floor(const Tensor& x);    ///< ⌊x⌋ (integers as they are; bool refused)
Tensor ceil(const Tensor& x);     ///< ⌈x⌉
Tensor round(const Tensor& x);    ///< the nearest whole number, halves to even
Tensor trunc(const Tensor& x);    ///< towards zero
Tensor sign(const Tensor& x);     ///< −1, 0 or 1 (0 for NaN, as PyTorch's); bool as it is
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
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor& pow_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor& maximum_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor& minimum_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor& addcmul_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = 1);
Tensor& addcdiv_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value = 1);
Tensor& lerp_out(Tensor& out, const Tensor& self, const Tensor& end, Scalar weight);
Tensor& neg_out(Tensor& out, const Tensor& x);
Tensor& abs_out(Tensor& out, const Tensor& x);
Tensor& sqrt_out(Tensor& out, const Tensor& x);
Tensor& rsqrt_out(Tensor& out, const Tensor& x);
Tensor& exp_out(Tensor& out, const Tensor& x);
Tensor& log_out(Tensor& out, const Tensor& x);
Tensor& tanh_out(Tensor& out, const Tensor& x);
Tensor& sigmoid_out(Tensor& out, const Tensor& x);
Tensor& erf_out(Tensor& out, const Tensor& x);
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
