// Copies whose source is dense along another dimension than the destination's innermost (x.t()
// .contiguous(), a permute's copy, a transposed cast) run in tiles (Note [Loops in tiles] in
// tally/kernels/cpu/strided_loop.h). Each is checked element by element against the source's
// bytes read at its own strides, at sizes that leave partial tiles on every edge, with outer
// dimensions around the tiled pair, for every dtype; converting copies against the dense cast of
// the same values; elementwise ops on transposed inputs against the same op on dense copies.

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "tally/tally.h"

using namespace tally;

namespace {

const Dtype kEveryDtype[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};

/// Values that every dtype holds in range (0 to 120), as `dtype`.
Tensor values(IntArrayRef sizes, Dtype dtype, uint64_t seed) {
  Generator gen(seed);
  return (rand(sizes, {}, &gen) * 120).to(dtype);
}

/// `out` (contiguous) holds, at each index, the bytes of `src` at that index, read at src's strides.
::testing::AssertionResult holds_each_element_of(const Tensor& out, const Tensor& src) {
  if (!out.is_contiguous() || out.sizes() != src.sizes() || out.dtype() != src.dtype())
    return ::testing::AssertionFailure() << "not a contiguous copy of the same shape and dtype";
  const int64_t es = src.element_size(), nd = src.dim();
  const auto* o = static_cast<const char*>(out.data_ptr());
  const auto* s = static_cast<const char*>(src.data_ptr());
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t offset = 0;
    for (int64_t d = 0; d < nd; ++d) offset += idx[size_t(d)] * src.stride(d);
    if (std::memcmp(o + flat * es, s + offset * es, size_t(es)) != 0) {
      std::string where;
      for (int64_t i : idx) where += std::to_string(i) + ",";
      return ::testing::AssertionFailure() << "element [" << where << "] differs";
    }
    for (int64_t d = nd - 1; d >= 0 && ++idx[size_t(d)] == src.size(d); --d) idx[size_t(d)] = 0;
  }
  return ::testing::AssertionSuccess();
}

struct Layout {
  std::vector<int64_t> sizes, permutation;
};

// Transposes with partial tiles on both edges, exact tiles, a long thin one, outer dimensions
// beside the tiled pair (before it, between it), and one whose dense dimension is too short to tile.
const Layout kLayouts[] = {
    {{37, 53}, {1, 0}},        {{16, 16}, {1, 0}},       {{17, 300}, {1, 0}},       {{300, 17}, {1, 0}},
    {{5, 40, 33}, {0, 2, 1}},  {{20, 3, 18}, {2, 1, 0}}, {{19, 4, 21}, {2, 0, 1}},  {{3, 2, 24, 35}, {1, 3, 0, 2}},
    {{2, 17, 19, 4}, {0, 3, 2, 1}},
};

TEST(TiledCopies, PermutedCopiesOfEveryDtypeKeepEveryElement) {
  uint64_t seed = 1;
  for (Dtype dtype : kEveryDtype) {
    for (const Layout& l : kLayouts) {
      const Tensor src = values(l.sizes, dtype, seed++).permute(l.permutation);
      EXPECT_TRUE(holds_each_element_of(src.contiguous(), src)) << dtype_name(dtype) << " permuted " << src.sizes();
      // Into a destination that is itself a transposed view: its innermost dimension is dense.
      Tensor dst = empty({src.size(-1), src.size(-2)}, dtype).t();
      if (src.dim() == 2) {
        dst.copy_(src);
        EXPECT_TRUE(holds_each_element_of(dst.contiguous(), src)) << dtype_name(dtype) << " into a transposed view";
      }
    }
  }
}

TEST(TiledCopies, TransposedCastsEqualTheDenseCast) {
  const std::pair<Dtype, Dtype> kCasts[] = {{kFloat32, kBFloat16}, {kBFloat16, kFloat32}, {kFloat32, kFloat16}, {kFloat16, kFloat32},
                                            {kFloat64, kFloat32},  {kFloat32, kInt64},    {kUInt8, kFloat32},   {kFloat32, kFloat8_e4m3fn},
                                            {kFloat8_e5m2, kBFloat16}, {kInt32, kBool}};
  uint64_t seed = 100;
  for (const auto& [from, to] : kCasts) {
    for (const Layout& l : kLayouts) {
      const Tensor src = values(l.sizes, from, seed++).permute(l.permutation);
      const Tensor tiled = src.to(to);                 // converts while re-striding
      const Tensor dense = src.contiguous().to(to);    // re-strides, then converts densely
      EXPECT_TRUE(holds_each_element_of(tiled.contiguous(), dense)) << dtype_name(from) << " -> " << dtype_name(to) << " " << src.sizes();
    }
  }
}

// Unary, binary and ternary ops with inputs read across the output's rows: one transposed, both,
// one broadcast beside a transposed one, in a 3-d permute; each equal to the op on dense copies.
TEST(TiledCopies, ElementwiseOpsOnTransposedInputs) {
  Generator gen(7);
  for (const Layout& l : kLayouts) {
    const Tensor a = randn(l.sizes, {}, &gen).permute(l.permutation), b = randn(l.sizes, {}, &gen).permute(l.permutation);
    const Tensor ad = a.contiguous(), bd = b.contiguous(), row = randn({a.size(-1)}, {}, &gen);
    const Tensor dense_b = randn(a.sizes(), {}, &gen);
    EXPECT_TRUE(equal(a + b, ad + bd)) << a.sizes();
    EXPECT_TRUE(equal(a * dense_b, ad * dense_b)) << a.sizes();
    EXPECT_TRUE(equal(a - row, ad - row)) << a.sizes();
    // exp runs lane by lane on strided input and 16 lanes on dense, each within 1 ulp.
    EXPECT_TRUE(allclose(exp(a), exp(ad), 3e-7, 0)) << a.sizes();
    EXPECT_TRUE(equal(where(a > 0, a, b), where(ad > 0, ad, bd))) << a.sizes();
    EXPECT_TRUE(equal(a.to(kBFloat16) + b.to(kBFloat16), ad.to(kBFloat16) + bd.to(kBFloat16))) << a.sizes();
  }
}

TEST(TiledCopies, NanPayloadsAndNegativeZeroMoveAsBits) {
  Tensor x = empty({40, 24}, kFloat32);
  std::vector<uint32_t> bits(size_t(x.numel()));
  std::iota(bits.begin(), bits.end(), 0x7fc00001u);  // quiet NaNs with distinct payloads
  bits[5] = 0x80000000u;                             // -0.0
  std::memcpy(x.data_ptr(), bits.data(), bits.size() * 4);
  EXPECT_TRUE(holds_each_element_of(x.t().contiguous(), x.t()));
}

}  // namespace
