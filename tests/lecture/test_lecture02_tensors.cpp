// CS336 lecture 2, "PyTorch, resource accounting": the assertions of the sections
// tensors_basics, tensors_memory, tensor_storage, tensor_slicing, tensor_elementwise and
// tensor_matmul, written against tally. Each test names its section.

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;
using namespace tally::indexing;

namespace {
/// The lecture's same_storage(x, y): both view the same bytes.
bool same_storage(const Tensor& x, const Tensor& y) { return x.storage()->data() == y.storage()->data(); }
}  // namespace

TEST(Lecture02, TensorsBasics) {
  Tensor x = tensor({{1., 2, 3}, {4, 5, 6}});
  EXPECT_EQ(x.sizes(), IntArrayRef({2, 3}));
  x = zeros({4, 8});
  EXPECT_EQ(x.sizes(), IntArrayRef({4, 8}));
  EXPECT_TRUE(x.equal(full({4, 8}, 0.0)));
  x = ones({4, 8});
  EXPECT_EQ(x.sum().item<double>(), 32.0);
  x = randn({4, 8});
  EXPECT_EQ(x.numel(), 32);
  x = empty({4, 8});  // uninitialised
  EXPECT_EQ(x.sizes(), IntArrayRef({4, 8}));
  // The lecture's initialisation: trunc_normal_ with absolute bounds.
  Tensor w = empty({64, 32});
  nn::init::trunc_normal_(w, 0.0, 1.0, -2.0, 2.0);
  EXPECT_LE(w.max().item<float>(), 2.0f);
  EXPECT_GE(w.min().item<float>(), -2.0f);
}

TEST(Lecture02, TensorsMemoryFloat32) {
  Tensor x = zeros({4, 8});
  EXPECT_EQ(x.dtype(), kFloat32);  // the default
  EXPECT_EQ(x.numel(), 4 * 8);
  EXPECT_EQ(x.element_size(), 4);
  EXPECT_EQ(memory_usage(x), 4 * 8 * 4);  // 128 bytes
  // One matrix in the feedforward layer of GPT-3: 2304 MiB, reported without touching its pages.
  accounting::MemoryTracker tracker;
  Tensor big = empty({12288 * 4, 12288});
  EXPECT_EQ(memory_usage(big), int64_t{2304} * 1024 * 1024);
  EXPECT_EQ(tracker.allocated_since_start(), int64_t{2304} * 1024 * 1024);
}

TEST(Lecture02, TensorsMemoryFloat16) {
  Tensor x = zeros({4, 8}, kFloat16);
  EXPECT_EQ(x.element_size(), 2);
  x = tensor({1e-8}, kFloat16);
  EXPECT_TRUE((x == 0).item<bool>());  // underflow
}

TEST(Lecture02, TensorsMemoryBFloat16) {
  Tensor x = tensor({1e-8}, kBFloat16);
  EXPECT_FALSE((x == 0).item<bool>());  // no underflow: float32's exponent range
  EXPECT_EQ(x.element_size(), 2);
}

TEST(Lecture02, TensorsMemoryFinfo) {
  // torch.finfo(torch.float32 / float16 / bfloat16 / float64) as PyTorch 1.13 prints them.
  FInfo f32 = finfo(kFloat32);
  EXPECT_EQ(f32.bits, 32);
  EXPECT_EQ(f32.max, 3.4028234663852886e+38);
  EXPECT_EQ(f32.eps, 1.1920928955078125e-07);
  EXPECT_EQ(f32.tiny, 1.1754943508222875e-38);
  FInfo f16 = finfo(kFloat16);
  EXPECT_EQ(f16.bits, 16);
  EXPECT_EQ(f16.max, 65504.0);
  EXPECT_EQ(f16.eps, 0.0009765625);
  EXPECT_EQ(f16.tiny, 6.103515625e-05);
  FInfo bf16 = finfo(kBFloat16);
  EXPECT_EQ(bf16.bits, 16);
  EXPECT_EQ(bf16.max, 3.3895313892515355e+38);
  EXPECT_EQ(bf16.eps, 0.0078125);
  EXPECT_EQ(bf16.tiny, 1.1754943508222875e-38);
  FInfo f64 = finfo(kFloat64);
  EXPECT_EQ(f64.bits, 64);
  EXPECT_EQ(f64.eps, 2.220446049250313e-16);
  // fp8: e4m3fn reaches ±448 with no infinity, e5m2 ±57344.
  EXPECT_EQ(finfo(kFloat8_e4m3fn).max, 448.0);
  EXPECT_EQ(finfo(kFloat8_e4m3fn).min, -448.0);
  EXPECT_EQ(finfo(kFloat8_e5m2).max, 57344.0);
  EXPECT_EQ(finfo(kFloat8_e5m2).min, -57344.0);
  Tensor big = tensor({448.0, 500.0, -448.0, 1e6}).to(kFloat8_e4m3fn).to(kFloat32);
  EXPECT_EQ(big.index({0}).item<float>(), 448.0f);
  EXPECT_TRUE(std::isnan(big.index({1}).item<float>()));  // past 448 and no infinity: NaN
  Tensor e5 = tensor({57344.0, 1e6}).to(kFloat8_e5m2).to(kFloat32);
  EXPECT_EQ(e5.index({0}).item<float>(), 57344.0f);
  EXPECT_TRUE(std::isinf(e5.index({1}).item<float>()));
  EXPECT_EQ(empty({4}, kFloat8_e4m3fn).element_size(), 1);
}

TEST(Lecture02, TensorStorage) {
  Tensor x = tensor({{0., 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}});
  EXPECT_EQ(x.stride(0), 4);  // next row: skip 4 elements
  EXPECT_EQ(x.stride(1), 1);  // next column: skip 1
  const int64_t r = 1, c = 2;
  const int64_t index = r * x.stride(0) + c * x.stride(1);
  EXPECT_EQ(index, 6);
  EXPECT_EQ(x.data_ptr<float>()[index], x.index({r, c}).item<float>());
  // x[2:9:2] on arange(10) views the same bytes with stride 2 and offset 2.
  Tensor a = arange(10);
  Tensor y = a.index({Slice(2, 9, 2)});
  EXPECT_TRUE(same_storage(a, y));
  EXPECT_EQ(y.stride(0), 2);
  EXPECT_EQ(y.storage_offset(), 2);
  EXPECT_EQ(static_cast<char*>(y.data_ptr()) - static_cast<char*>(a.data_ptr()), 2 * a.element_size());
  EXPECT_TRUE(y.equal(tensor({2, 4, 6, 8})));
}

TEST(Lecture02, TensorSlicing) {
  Tensor x = tensor({{1., 2, 3}, {4, 5, 6}});
  Tensor y = x.index({0});  // row 0
  EXPECT_TRUE(y.equal(tensor({1., 2, 3})));
  EXPECT_TRUE(same_storage(x, y));
  y = x.index({Slice(), 1});  // column 1
  EXPECT_TRUE(y.equal(tensor({2, 5})));
  EXPECT_TRUE(same_storage(x, y));
  y = x.view({3, 2});
  EXPECT_TRUE(y.equal(tensor({{1, 2}, {3, 4}, {5, 6}})));
  EXPECT_TRUE(same_storage(x, y));
  y = x.transpose(1, 0);
  EXPECT_TRUE(y.equal(tensor({{1, 4}, {2, 5}, {3, 6}})));
  EXPECT_TRUE(same_storage(x, y));
  // Mutating x mutates y.
  x.index_put_({0, 0}, 100);
  EXPECT_EQ(y.index({0, 0}).item<float>(), 100.0f);
  // Transposed views are not contiguous, so they cannot be viewed further...
  x = tensor({{1., 2, 3}, {4, 5, 6}});
  y = x.transpose(1, 0);
  EXPECT_FALSE(y.is_contiguous());
  try {
    y.view({2, 3});
    FAIL() << "view of a non-contiguous tensor should raise";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("view size is not compatible with input tensor's size and stride"), std::string::npos);
  }
  // ...until made contiguous, which copies.
  y = x.transpose(1, 0).contiguous().view({2, 3});
  EXPECT_FALSE(same_storage(x, y));
  // Views cost no memory; contiguous() of a non-contiguous tensor costs exactly its bytes.
  accounting::MemoryTracker tracker;
  Tensor v = x.transpose(1, 0);
  Tensor w = x.view({3, 2}).index({Slice(), 0});
  EXPECT_EQ(tracker.allocated_since_start(), 0);
  Tensor c = v.contiguous();
  EXPECT_EQ(tracker.allocated_since_start(), memory_usage(v));
}

TEST(Lecture02, TensorElementwise) {
  Tensor x = tensor({1, 4, 9});
  EXPECT_TRUE(x.pow(2).equal(tensor({1, 16, 81})));
  EXPECT_TRUE(x.sqrt().equal(tensor({1, 2, 3})));
  EXPECT_TRUE(x.rsqrt().equal(tensor({1.0, 1.0 / 2, 1.0 / 3})));
  EXPECT_TRUE((x + x).equal(tensor({2, 8, 18})));
  EXPECT_TRUE((x * 2).equal(tensor({2, 8, 18})));
  EXPECT_TRUE((x / 0.5).equal(tensor({2, 8, 18})));
  // triu: the causal-mask building block.
  Tensor t = ones({3, 3}).triu();
  EXPECT_TRUE(t.equal(tensor({{1, 1, 1}, {0, 1, 1}, {0, 0, 1}})));
}

TEST(Lecture02, TensorMatmul) {
  Tensor x = ones({16, 32});
  Tensor w = ones({32, 2});
  Tensor y = x.matmul(w);
  EXPECT_EQ(y.sizes(), IntArrayRef({16, 2}));
  // Batched: the matmul applies to every (batch, sequence) position.
  x = ones({4, 8, 16, 32});
  y = matmul(x, w);
  EXPECT_EQ(y.sizes(), IntArrayRef({4, 8, 16, 2}));
  EXPECT_TRUE(y.equal(full({4, 8, 16, 2}, 32.0)));
}
