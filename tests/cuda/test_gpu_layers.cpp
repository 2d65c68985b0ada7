// The ops a transformer is made of, on the GPU against the CPU, forward and backward: addmm (a
// Linear with a bias), layer_norm, rms_norm, scaled_dot_product_attention (plain and packed, on
// heads views), and a whole TransformerBlock with the CPU's weights.

#include <string>
#include <vector>

#include "gpu_test.h"

using namespace tally;
using namespace tally::testing_gpu;

namespace {

/// Standard normals as `d`.
Tensor unit_normal(IntArrayRef sizes, Dtype d, uint64_t seed) { return sample(sizes, d, seed, false, 1); }

/// Tolerance for a layer's result in `d` on two devices: looser than one op's tolerance(), since a
/// layer composes many ops and long sums.
double layer_tolerance(Dtype d) { return d == kFloat64 ? 1e-10 : d == kFloat32 ? 2e-5 : 3e-2; }

const std::vector<Dtype> kFloats = {kFloat64, kFloat32, kBFloat16};

}  // namespace

TEST(CudaLayers, AddmmWithEveryKindOfSelf) {
  TALLY_REQUIRE_GPU();
  for (Dtype d : kFloats) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const double t = layer_tolerance(d);
    Tensor x = unit_normal({24, 40}, d, 1), w = unit_normal({40, 16}, d, 2);
    for (const std::vector<int64_t>& self_shape : std::vector<std::vector<int64_t>>{{16}, {1, 16}, {24, 16}, {24, 1}}) {
      SCOPED_TRACE("self " + std::to_string(self_shape.size()) + "-d, last " + std::to_string(self_shape.back()));
      Tensor self = unit_normal(self_shape, d, 3);
      expect_same_on_both([](const std::vector<Tensor>& v) { return addmm(v[0], v[1], v[2]); }, {self, x, w}, t, t);
      expect_same_on_both([](const std::vector<Tensor>& v) { return addmm(v[0], v[1], v[2], 0.5, -2); }, {self, x, w}, t,
                          t * 4);
    }
    // A Linear layer's bias and a transposed weight, as nn::F::linear passes them.
    Tensor wt = unit_normal({16, 40}, d, 4), b = unit_normal({16}, d, 5);
    expect_same_on_both([](const std::vector<Tensor>& v) { return addmm(v[0], v[1], v[2].t()); }, {b, x, wt}, t, t);
  }
}

TEST(CudaLayers, NormsForwardAndBackward) {
  TALLY_REQUIRE_GPU();
  for (Dtype d : kFloats) {
    for (int64_t n : {1, 7, 768, 5000}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " n=" + std::to_string(n));
      const double t = 4 * layer_tolerance(d);
      Tensor x = unit_normal({3, 5, n}, d, 6), g = unit_normal({n}, d, 7), b = unit_normal({n}, d, 8);
      expect_same_on_both([n](const std::vector<Tensor>& v) { return layer_norm(v[0], {n}, v[1], v[2]); }, {x, g, b}, t, t);
      expect_same_on_both([n](const std::vector<Tensor>& v) { return layer_norm(v[0], {n}); }, {x}, t, t);
      expect_same_on_both([n](const std::vector<Tensor>& v) { return rms_norm(v[0], {n}, v[1]); }, {x, g}, t, t);
      // A strided input: every other row.
      Tensor rows = unit_normal({6, 5, n}, d, 9);
      expect_same_on_both(
          [n](const std::vector<Tensor>& v) { return layer_norm(v[0].slice(0, 0, 6, 2), {n}, v[1], v[2]); },
          {rows, g, b}, t, t);
    }
  }
}

TEST(CudaLayers, AttentionForwardAndBackward) {
  TALLY_REQUIRE_GPU();
  const int64_t b = 2, T = 37, h = 3, E = 16;
  for (Dtype d : kFloats) {
    const double t = 4 * layer_tolerance(d);
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + (causal ? " causal" : " full"));
      // [b, h, T, E] operands, and the same read as heads views of [b, T, h, E].
      Tensor q = unit_normal({b, h, T, E}, d, 10), k = unit_normal({b, h, T, E}, d, 11), v = unit_normal({b, h, T, E}, d, 12);
      expect_same_on_both(
          [causal](const std::vector<Tensor>& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); },
          {q, k, v}, t, t);
      Tensor qh = unit_normal({b, T, h, E}, d, 13), kh = unit_normal({b, T, h, E}, d, 14), vh = unit_normal({b, T, h, E}, d, 15);
      expect_same_on_both(
          [causal](const std::vector<Tensor>& x) {
            return scaled_dot_product_attention(x[0].transpose(1, 2), x[1].transpose(1, 2), x[2].transpose(1, 2), causal);
          },
          {qh, kh, vh}, t, t);
      // The packed form the GPT uses: qkv [b, T, 3, h, E] → [b, T, h, E].
      Tensor qkv = unit_normal({b, T, 3, h, E}, d, 16);
      expect_same_on_both(
          [causal](const std::vector<Tensor>& x) { return scaled_dot_product_attention_packed(x[0], causal); }, {qkv}, t,
          t);
    }
  }
}

TEST(CudaLayers, TransformerBlockMatchesTheCpu) {
  TALLY_REQUIRE_GPU();
  nn::TransformerConfig config;
  config.d_model = 64;
  config.num_heads = 4;
  config.context_length = 32;
  const auto [cpu_block, gpu_block] = cpu_and_gpu<nn::TransformerBlock>(config, 21);
  for (const Tensor& p : gpu_block->parameters()) ASSERT_TRUE(p.is_cuda());
  Tensor x = unit_normal({2, 32, 64}, kFloat64, 22);
  Tensor yc = cpu_block->forward(x);
  Tensor yg = gpu_block->forward(x.to(kGpu));
  EXPECT_TRUE(same_as_cpu(yg, yc, 1e-10));
  Tensor weights = unit_normal({2, 32, 64}, kFloat64, 23);
  (yc * weights).sum().backward();
  (yg * weights.to(kGpu)).sum().backward();
  expect_same_parameters(*gpu_block, *cpu_block, /*grads=*/true, 1e-9, 1e-10);
}
