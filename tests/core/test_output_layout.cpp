// Note [Output layout]: a new output of an elementwise op is laid out as its inputs are, as in
// PyTorch; a copy (clone, the *_like factories, a move to another device) as its source is. The
// expected strides are torch 1.13's for the same expressions (the differential families check the
// same against a live torch on every layout they draw).

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;

namespace {

// Strides over the dims of more than one element: a dim of size 1 may have any stride.
std::vector<int64_t> strides_that_matter(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < t.dim(); ++d) out.push_back(t.size(d) > 1 ? t.stride(d) : -1);
  return out;
}

using V = std::vector<int64_t>;

}  // namespace

TEST(OutputLayout, TransposedInputsGiveATransposedResult) {
  Tensor x = randn({2, 3}), y = randn({2, 3});
  Tensor sum = x.t() + y.t();
  EXPECT_EQ(sum.strides(), IntArrayRef({1, 3}));
  EXPECT_FALSE(sum.is_contiguous());
  EXPECT_TRUE(sum.t().is_contiguous());
  EXPECT_TRUE(equal(sum, (x + y).t()));
  EXPECT_EQ(strides_that_matter(relu(x.t())), V({1, 3}));
  EXPECT_EQ(strides_that_matter(x.t() * 2), V({1, 3}));
  EXPECT_EQ(strides_that_matter(x.t() > 0), V({1, 3}));
  EXPECT_EQ(strides_that_matter(x.t().to(kBFloat16)), V({1, 3}));
}

TEST(OutputLayout, TheFirstInputThatOrdersTwoDimsDecides) {
  Tensor x = randn({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});  // [4, 2, 3], strides (1, 12, 4)
  EXPECT_EQ(strides_that_matter(p + 1), V({1, 12, 4}));
  EXPECT_EQ(strides_that_matter(p + randn({4, 2, 3})), V({1, 12, 4}));
  EXPECT_EQ(strides_that_matter(randn({4, 2, 3}) + p), V({6, 3, 1}));
  Tensor t = randn({2, 3}).t();  // [3, 2], strides (1, 3)
  EXPECT_EQ(strides_that_matter(t + randn({2})), V({1, 3}));
  EXPECT_EQ(strides_that_matter(randn({2}) + t), V({1, 3}));  // a broadcast dim decides nothing
  EXPECT_EQ(strides_that_matter(randn({3, 1}) + t), V({1, 3}));
  EXPECT_EQ(strides_that_matter(randn({1, 2}).expand({3, 2}) + t), V({1, 3}));
  EXPECT_EQ(strides_that_matter(where(ones({3, 2}, kBool), t, randn({3, 2}))), V({2, 1}));  // the condition first
}

TEST(OutputLayout, SlicedAndUnsqueezedInputs) {
  Tensor s = randn({3, 8}).slice(1, 0, 8, 2).t();  // [4, 3], strides (2, 8): not dense
  EXPECT_EQ(strides_that_matter(s * 1), V({1, 4}));
  Tensor u = randn({3, 4}).t().unsqueeze(1);  // [4, 1, 3], dense
  EXPECT_EQ(strides_that_matter(u * 1), V({1, -1, 4}));
  EXPECT_TRUE((randn({3, 8}).slice(1, 0, 8, 2) * 1).is_contiguous());
}

TEST(OutputLayout, CopiesThatPromiseContiguityKeepIt) {
  Tensor t = randn({2, 3}).t();
  EXPECT_TRUE(t.contiguous().is_contiguous());
  EXPECT_TRUE(t.clone(MemoryFormat::Contiguous).is_contiguous());
  EXPECT_TRUE(triu(t).is_contiguous());  // as torch.triu
  EXPECT_TRUE(zeros_like(t, {}, MemoryFormat::Contiguous).is_contiguous());
  // A result PyTorch cannot view flat either: reshape copies it, view refuses.
  EXPECT_TRUE(equal((t * 2).reshape({6}), t.contiguous().view({6}) * 2));
  EXPECT_THROW((t * 2).view({6}), Error);
}

TEST(OutputLayout, ContiguousInputsGiveAContiguousResult) {
  Tensor x = randn({4, 5}), row = randn({5}), col = randn({4, 1});
  EXPECT_TRUE((x + row).is_contiguous());
  EXPECT_TRUE((x + col).is_contiguous());
  EXPECT_TRUE((row + col).is_contiguous());
  EXPECT_TRUE(exp(x).is_contiguous());
}

TEST(OutputLayout, GradientsOfTransposedInputsAreRight) {
  Tensor a = randn({3, 4}, TensorOptions(kFloat64)).requires_grad_(), b = randn({4, 3}, TensorOptions(kFloat64)).requires_grad_();
  Tensor y = a.t() * b + b.exp();
  y.sum().backward();
  EXPECT_TRUE(allclose(a.grad(), b.detach().t()));
  EXPECT_TRUE(allclose(b.grad(), a.detach().t() + b.detach().exp()));
  EXPECT_EQ(a.grad().strides(), a.strides());  // a leaf's gradient is laid out as the leaf
}

TEST(OutputLayout, MetaTensorsGetTheSameLayout) {
  Tensor x = empty({2, 3}, TensorOptions(kFloat32).device(kMeta));
  EXPECT_EQ((x.t() + x.t()).strides(), IntArrayRef({1, 3}));
}

// A copy to another device keeps the layout as a copy on one device does (torch 1.13's strides
// for the same moves to 'meta').
TEST(OutputLayout, ACopyToAnotherDeviceKeepsTheLayout) {
  Tensor x = randn({3, 4});
  EXPECT_EQ(x.t().to(Device(kMeta)).strides(), IntArrayRef({1, 4}));
  EXPECT_EQ(x.t().to(Device(kMeta), kFloat64).strides(), IntArrayRef({1, 4}));
  EXPECT_EQ(x.slice(1, 0, 4, 2).to(Device(kMeta)).strides(), IntArrayRef({2, 1}));
}

// PyTorch's preserve_format, the default of clone() and the *_like factories: a dense tensor's
// strides exactly, else its dims' order made dense (the strides below are torch 1.13's).
TEST(OutputLayout, CloneAndLikeFactoriesPreserveTheLayout) {
  Tensor x = randn({6, 8, 10});
  Tensor perm = x.permute({2, 0, 1});  // dense, strides (1, 80, 10)
  for (const Tensor& copy : {perm.clone(), empty_like(perm), zeros_like(perm), ones_like(perm), full_like(perm, 2.5)})
    EXPECT_EQ(copy.strides(), IntArrayRef({1, 80, 10}));
  Tensor sliced = x.transpose(0, 2).slice(0, 0, 10, 2);  // [5, 8, 6], strides (2, 10, 80): not dense
  EXPECT_EQ(sliced.clone().strides(), IntArrayRef({1, 5, 40}));
  EXPECT_EQ(zeros_like(sliced, kBFloat16).strides(), IntArrayRef({1, 5, 40}));
  Tensor expanded = randn({3, 1, 5}).expand({3, 4, 5});  // overlapping: row-major
  EXPECT_TRUE(expanded.clone().is_contiguous());
  EXPECT_TRUE(equal(sliced.clone(), sliced) && equal(perm.clone(), perm) && equal(expanded.clone(), expanded));
  EXPECT_TRUE(equal(full_like(sliced, 2.5), full({5, 8, 6}, 2.5)));
  EXPECT_EQ(zeros_like(perm).storage()->version(), 0u);  // a new tensor, not an in-place write
  // The copy is its own: writing to it leaves the source alone.
  Tensor c = perm.clone();
  c.fill_(0);
  EXPECT_FALSE(equal(perm, c));
}

TEST(OutputLayout, ALeafsGradientIsLaidOutAsTheLeafWhateverLayoutArrives) {
  // A dense, permuted leaf: PyTorch's gradient layout contract gives its gradient the leaf's strides.
  Tensor w = randn({4, 3}).t().detach().requires_grad_();  // [3, 4], strides (1, 3)
  Tensor y = (w.contiguous() * 2).sum();                    // the gradient arrives row-major
  y.backward();
  EXPECT_EQ(w.grad().strides(), w.strides());
  EXPECT_TRUE(equal(w.grad(), full({3, 4}, 2.0)));
  // A contiguous leaf used transposed: its gradient is row-major, as the leaf.
  Tensor v = randn({3, 4}).requires_grad_();
  (v.t() * v.t()).sum().backward();
  EXPECT_TRUE(v.grad().is_contiguous());
  // A leaf that is not dense (a detached slice): row-major.
  Tensor sliced = randn({3, 8}).slice(1, 0, 8, 2).detach().requires_grad_();
  (sliced.t() * 3).sum().backward();
  EXPECT_TRUE(sliced.grad().is_contiguous());
  EXPECT_TRUE(equal(sliced.grad(), full({3, 4}, 3.0)));
  // A retained gradient is row-major whatever layout arrives, as torch 1.13's retain_grad.
  Tensor doubled = v * 2;
  doubled.retain_grad();
  (doubled.t() * randn({4, 3})).sum().backward();
  EXPECT_EQ(doubled.grad().strides(), IntArrayRef({4, 1}));
}

// to(dtype, non_blocking, copy, memory_format) in libtorch's order: a copy in Preserve by default
// or row-major when asked; self when the dtype and device do not change and no copy is asked,
// whatever the format (torch 1.13: t.to(torch.float32, memory_format=torch.contiguous_format) is t).
TEST(OutputLayout, ToTakesAMemoryFormat) {
  Tensor x = randn({3, 4});
  Tensor t = x.t();
  EXPECT_TRUE(t.to(kFloat32).is_same(t));
  EXPECT_TRUE(t.to(kFloat32, false, false, MemoryFormat::Contiguous).is_same(t));
  Tensor row_major = t.to(kFloat32, false, /*copy=*/true, MemoryFormat::Contiguous);
  EXPECT_FALSE(row_major.is_same_storage(t));
  EXPECT_EQ(row_major.strides(), IntArrayRef({3, 1}));
  EXPECT_TRUE(equal(row_major, t));
  EXPECT_EQ(t.to(kFloat64, false, false, MemoryFormat::Contiguous).strides(), IntArrayRef({3, 1}));
  EXPECT_EQ(t.to(kFloat32, false, /*copy=*/true).strides(), IntArrayRef({1, 4}));  // torch 1.13's strides
  EXPECT_FALSE(t.to(kFloat32, false, /*copy=*/true).is_same_storage(t));
}
