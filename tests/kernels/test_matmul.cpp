// Batched matmul kernel against a naive reference, over every dtype and the strided layouts views make.

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tally/dtype/dtype.h"
#include "tally/error/error.h"
#include "tally/kernels/cpu/matmul.h"

namespace tally::kernels {
namespace {

// Ways a strided view can lay out one operand of `batch` rows×cols matrices.
enum class Layout {
  kContiguous,   // a fresh tensor
  kTransposed,   // x.transpose(-1, -2) of a contiguous tensor
  kPaddedRows,   // x[..., :cols] of a wider tensor: unit columns, longer rows
  kStepped,      // x[:, ::2, ::2] of a larger tensor: no unit stride at all
  kBroadcast,    // x.expand(batch, rows, cols) of one matrix: batch stride 0
  kBroadcastT,   // the same, of a transposed matrix
  kFlippedRows,  // x.flip(-2): negative row stride
  kBatchInner,   // x.permute(2, 0, 1) of a (rows, cols, batch) tensor
  kExpandedRows, // a row expanded to every row: row stride 0
};

const char* layout_name(Layout l) {
  constexpr const char* names[] = {"contiguous", "transposed", "padded_rows", "stepped", "broadcast",
                                   "broadcast_t", "flipped_rows", "batch_inner", "expanded_rows"};
  return names[static_cast<int>(l)];
}

// Operand values in a storage buffer large enough for its strides, and the view onto it.
template <class T>
struct Operand {
  std::vector<T> storage;
  int64_t offset = 0, batch_stride = 0, row_stride = 0, col_stride = 0;
  MatrixRef ref() const { return {storage.data() + offset, batch_stride, row_stride, col_stride}; }
  T raw(int64_t b, int64_t r, int64_t c) const { return storage[offset + b * batch_stride + r * row_stride + c * col_stride]; }
  double at(int64_t b, int64_t r, int64_t c) const { return static_cast<double>(static_cast<compute_t<T>>(raw(b, r, c))); }
};

template <class T>
T random_value(std::mt19937_64& rng) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rng());  // full range: the sums wrap, which the reference must match
  } else {
    return T(static_cast<float>(std::uniform_real_distribution<double>(-1.0, 1.0)(rng)));
  }
}

template <class T>
Operand<T> make_operand(Layout layout, int64_t batch, int64_t rows, int64_t cols, std::mt19937_64& rng) {
  Operand<T> x;
  const int64_t n = rows * cols;
  switch (layout) {
    case Layout::kContiguous: x.batch_stride = n, x.row_stride = cols, x.col_stride = 1; break;
    case Layout::kTransposed: x.batch_stride = n, x.row_stride = 1, x.col_stride = rows; break;
    case Layout::kPaddedRows: x.batch_stride = rows * (cols + 5), x.row_stride = cols + 5, x.col_stride = 1; break;
    case Layout::kStepped: x.batch_stride = 4 * n + 7, x.row_stride = 4 * cols, x.col_stride = 2; break;
    case Layout::kBroadcast: x.batch_stride = 0, x.row_stride = cols, x.col_stride = 1; break;
    case Layout::kBroadcastT: x.batch_stride = 0, x.row_stride = 1, x.col_stride = rows; break;
    case Layout::kFlippedRows: x.batch_stride = n, x.row_stride = -cols, x.col_stride = 1; break;
    case Layout::kBatchInner: x.batch_stride = 1, x.row_stride = cols * batch, x.col_stride = batch; break;
    case Layout::kExpandedRows: x.batch_stride = cols, x.row_stride = 0, x.col_stride = 1; break;
  }
  // Negative strides start the view past the beginning of its storage.
  int64_t low = 0, high = 0;
  for (auto [size, stride] : {std::pair{batch, x.batch_stride}, {rows, x.row_stride}, {cols, x.col_stride}}) {
    if (size == 0) continue;
    (stride < 0 ? low : high) += (size - 1) * stride;
  }
  x.offset = -low;
  x.storage.resize(static_cast<size_t>(high - low + 1));
  for (T& v : x.storage) v = random_value<T>(rng);
  return x;
}

// C from the naive triple loop in double (floats) or wrapping 64-bit arithmetic (integers), with the
// per-element error bound `rtol * sum_k |a||b|` (0 for integers: they must match exactly).
template <class T>
::testing::AssertionResult matches_reference(int64_t batch, int64_t M, int64_t N, int64_t K, const Operand<T>& a,
                                             const Operand<T>& b, const std::vector<T>& c, double rtol) {
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = 0, scale = 0, got = 0;
        if constexpr (std::is_integral_v<T>) {
          uint64_t sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += static_cast<uint64_t>(a.raw(bi, i, k)) * static_cast<uint64_t>(b.raw(bi, k, j));
          const T expected = static_cast<T>(sum), actual = c[(bi * M + i) * N + j];
          if (actual != expected) {
            return ::testing::AssertionFailure() << "C[" << bi << "][" << i << "][" << j << "] = " << +actual
                                                 << ", reference " << +expected;
          }
          continue;
        } else {
          for (int64_t k = 0; k < K; ++k) {
            want += a.at(bi, i, k) * b.at(bi, k, j);
            scale += std::abs(a.at(bi, i, k) * b.at(bi, k, j));
          }
          got = static_cast<double>(static_cast<compute_t<T>>(c[(bi * M + i) * N + j]));
        }
        if (!(std::abs(got - want) <= rtol * scale)) {
          return ::testing::AssertionFailure() << "C[" << bi << "][" << i << "][" << j << "] = " << got
                                               << ", reference " << want << " (bound " << rtol * scale << ")";
        }
      }
  return ::testing::AssertionSuccess();
}

template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  if constexpr (std::is_same_v<T, double>) return 1e-12;
  if constexpr (std::is_same_v<T, BFloat16>) return 1e-2;  // output rounded to 8 mantissa bits
  if constexpr (std::is_same_v<T, Half>) return 2e-3;      // output rounded once to 11 bits
  return 0;
}

template <class T>
::testing::AssertionResult check(int64_t batch, int64_t M, int64_t N, int64_t K, Layout la, Layout lb) {
  std::mt19937_64 rng(static_cast<uint64_t>(batch * 1000003 + M * 10007 + N * 101 + K) * 31 +
                      static_cast<uint64_t>(la) * 7 + static_cast<uint64_t>(lb));
  const Operand<T> a = make_operand<T>(la, batch, M, K, rng);
  const Operand<T> b = make_operand<T>(lb, batch, K, N, rng);
  // Filled with a value no result has, so that an element the kernel forgets to write shows up.
  std::vector<T> c(static_cast<size_t>(batch * M * N), static_cast<T>(97.0f));
  matmul(dtype_of<T>(), batch, M, N, K, a.ref(), b.ref(), c.data());
  auto result = matches_reference(batch, M, N, K, a, b, c, tolerance<T>());
  if (!result) result << " for " << dtype_name(dtype_of<T>()) << " batch=" << batch << " M=" << M << " N=" << N
                      << " K=" << K << " A " << layout_name(la) << " B " << layout_name(lb);
  return result;
}

struct Shape { int64_t batch, M, N, K; };
const Shape kShapes[] = {{1, 1, 1, 1}, {1, 37, 53, 19}, {3, 37, 53, 19}, {2, 16, 16, 0}, {1, 5, 1, 7},
                         {2, 1, 9, 4},  {1, 64, 48, 300}, {5, 13, 2, 32}};
const Layout kLayouts[] = {Layout::kContiguous, Layout::kTransposed, Layout::kPaddedRows,
                           Layout::kStepped,    Layout::kBroadcast,  Layout::kBroadcastT,
                           Layout::kFlippedRows, Layout::kBatchInner, Layout::kExpandedRows};

template <class T>
class MatmulTyped : public ::testing::Test {};
using Dtypes = ::testing::Types<float, BFloat16, Half, double, int32_t, int64_t, uint8_t>;
TYPED_TEST_SUITE(MatmulTyped, Dtypes);

TYPED_TEST(MatmulTyped, ShapesContiguous) {
  for (const Shape& s : kShapes) EXPECT_TRUE(check<TypeParam>(s.batch, s.M, s.N, s.K, Layout::kContiguous, Layout::kContiguous));
}

TYPED_TEST(MatmulTyped, EveryLayoutPair) {
  for (Layout la : kLayouts)
    for (Layout lb : kLayouts) EXPECT_TRUE(check<TypeParam>(3, 11, 7, 9, la, lb));
}

TYPED_TEST(MatmulTyped, LayoutsOnLargerShape) {
  // Large enough for several cache blocks, oneDNN's blocked kernels and the parallel paths.
  for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kStepped})
    EXPECT_TRUE(check<TypeParam>(2, 200, 211, 300, l, Layout::kTransposed));
  EXPECT_TRUE(check<TypeParam>(1, 130, 400, 520, Layout::kContiguous, Layout::kContiguous));
}

TYPED_TEST(MatmulTyped, BroadcastAcrossBatch) {
  // (4,8,16,32) @ (32,2): folded into one 512×32 @ 32×2 product.
  EXPECT_TRUE(check<TypeParam>(32, 16, 2, 32, Layout::kContiguous, Layout::kBroadcast));
  EXPECT_TRUE(check<TypeParam>(32, 1, 20, 32, Layout::kTransposed, Layout::kBroadcastT));
  EXPECT_TRUE(check<TypeParam>(6, 10, 12, 8, Layout::kBroadcast, Layout::kContiguous));
  EXPECT_TRUE(check<TypeParam>(6, 10, 12, 8, Layout::kBroadcast, Layout::kBroadcast));
  EXPECT_TRUE(check<TypeParam>(6, 10, 12, 8, Layout::kPaddedRows, Layout::kBroadcast));
}

TYPED_TEST(MatmulTyped, EmptySizes) {
  EXPECT_TRUE(check<TypeParam>(2, 3, 4, 0, Layout::kContiguous, Layout::kContiguous));  // zeros
  EXPECT_TRUE(check<TypeParam>(0, 3, 4, 5, Layout::kContiguous, Layout::kContiguous));
  EXPECT_TRUE(check<TypeParam>(2, 0, 4, 5, Layout::kContiguous, Layout::kContiguous));
  EXPECT_TRUE(check<TypeParam>(2, 3, 0, 5, Layout::kContiguous, Layout::kContiguous));
}

TEST(Matmul, ReferenceCheckCatchesAWrongResult) {
  std::mt19937_64 rng(1);
  const auto a = make_operand<float>(Layout::kContiguous, 1, 4, 5, rng);
  const auto b = make_operand<float>(Layout::kContiguous, 1, 5, 3, rng);
  std::vector<float> c(12);
  matmul(kFloat32, 1, 4, 3, 5, a.ref(), b.ref(), c.data());
  ASSERT_TRUE(matches_reference(1, 4, 3, 5, a, b, c, 1e-5));
  c[7] += 1e-3f;
  EXPECT_FALSE(matches_reference(1, 4, 3, 5, a, b, c, 1e-5));
}

TEST(Matmul, HalfHandlesValuesBeyondBFloat16Precision) {
  // 1 + 2^-10 is exact in float16 but not in bfloat16: a float16 path that went through bf16 fails here.
  std::vector<Half> a(4, Half(1.0f + 1.0f / 1024)), b(4, Half(1.0f)), c(4);
  matmul(kFloat16, 1, 2, 2, 2, {a.data(), 4, 2, 1}, {b.data(), 4, 2, 1}, c.data());
  for (Half v : c) EXPECT_EQ(static_cast<float>(v), 2.0f + 2.0f / 1024);
}

TEST(Matmul, BFloat16RoundsOnceToNearestEven) {
  // Sums exact in float32 that fall halfway between two bfloat16 values: ties go to the even mantissa.
  const float e = 1.0f / 256;  // half a bfloat16 ulp at 1
  std::vector<BFloat16> a = {BFloat16(1.0f), BFloat16(e), BFloat16(1.0f), BFloat16(3 * e)};
  std::vector<BFloat16> b = {BFloat16(1.0f), BFloat16(1.0f)}, c(2);
  matmul(kBFloat16, 1, 2, 1, 2, {a.data(), 0, 2, 1}, {b.data(), 0, 1, 1}, c.data());
  EXPECT_EQ(static_cast<float>(c[0]), 1.0f);           // 1 + e: tie, down to the even 1
  EXPECT_EQ(static_cast<float>(c[1]), 1.0f + 4 * e);   // 1 + 3e: tie, up to the even 1 + 4e
  detail::matmul_onednn(kBFloat16, {1, 2, 1, 2, {a.data(), 0, 2, 1}, {b.data(), 0, 1, 1}}, c.data());
  EXPECT_EQ(static_cast<float>(c[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(c[1]), 1.0f + 4 * e);
}

TEST(Matmul, RepeatedProblemReusesItsPrimitive) {
  std::vector<float> a(23 * 29, 1.0f), b(29 * 31, 1.0f), c(23 * 31);
  const int64_t before = matmul_primitives_created();
  matmul(kFloat32, 1, 23, 31, 29, {a.data(), 0, 29, 1}, {b.data(), 0, 31, 1}, c.data());
  EXPECT_EQ(matmul_primitives_created(), before + 1);
  matmul(kFloat32, 1, 23, 31, 29, {a.data(), 0, 29, 1}, {b.data(), 0, 31, 1}, c.data());
  EXPECT_EQ(matmul_primitives_created(), before + 1);
  EXPECT_EQ(c[0], 29.0f);
  matmul(kFloat32, 1, 23, 31, 29, {a.data(), 0, 29, 1}, {b.data(), 0, 1, 29}, c.data());
  EXPECT_EQ(matmul_primitives_created(), before + 2);  // another layout is another primitive
}

TEST(Matmul, BFloat16ThroughOneDnnOnAnyCpu) {
  // matmul() picks one bfloat16 path per CPU (oneDNN where bf16 is native, widening elsewhere): the
  // oneDNN one is called directly so that both are tested on every machine.
  const int64_t batch = 3, M = 11, N = 7, K = 9;
  for (Layout la : kLayouts)
    for (Layout lb : {Layout::kContiguous, Layout::kTransposed, Layout::kStepped, Layout::kBroadcast}) {
      const bool both_broadcast = lb == Layout::kBroadcast && (la == Layout::kBroadcast || la == Layout::kBroadcastT);
      if (both_broadcast) continue;  // matmul() computes that case once and copies it: not a oneDNN problem
      SCOPED_TRACE(std::string("A ") + layout_name(la) + " B " + layout_name(lb));
      std::mt19937_64 rng(static_cast<uint64_t>(la) * 16 + static_cast<uint64_t>(lb));
      const auto a = make_operand<BFloat16>(la, batch, M, K, rng);
      const auto b = make_operand<BFloat16>(lb, batch, K, N, rng);
      std::vector<BFloat16> c(batch * M * N);
      detail::matmul_onednn(kBFloat16, {batch, M, N, K, a.ref(), b.ref()}, c.data());
      EXPECT_TRUE(matches_reference(batch, M, N, K, a, b, c, tolerance<BFloat16>()));
    }
}

TEST(Matmul, SmallFloat32LoopsOnEveryLayout) {
  // Tiny float32 products skip oneDNN (matmul_small.cpp); the loops are called directly here so
  // that every layout is checked whichever path matmul() picks for a shape.
  const int64_t batch = 3, M = 5, N = 7, K = 4;
  for (Layout la : kLayouts)
    for (Layout lb : kLayouts) {
      SCOPED_TRACE(std::string("A ") + layout_name(la) + " B " + layout_name(lb));
      std::mt19937_64 rng(static_cast<uint64_t>(la) * 16 + static_cast<uint64_t>(lb) + 7);
      const auto a = make_operand<float>(la, batch, M, K, rng);
      const auto b = make_operand<float>(lb, batch, K, N, rng);
      std::vector<float> c(batch * M * N, -1.0f);
      detail::matmul_small_f32({batch, M, N, K, a.ref(), b.ref()}, c.data());
      EXPECT_TRUE(matches_reference(batch, M, N, K, a, b, c, tolerance<float>()));
    }
  EXPECT_TRUE(detail::is_small_matmul({1, 2, 2, 2, {}, {}}));
  EXPECT_TRUE(detail::is_small_matmul({1, 16, 16, 16, {}, {}}));
  EXPECT_FALSE(detail::is_small_matmul({1, 1024, 2, 2, {}, {}}));  // many short rows: oneDNN is faster
  EXPECT_FALSE(detail::is_small_matmul({1, 32, 32, 32, {}, {}}));
  // The same tiny product through oneDNN agrees with the loops.
  std::mt19937_64 rng(3);
  const auto a = make_operand<float>(Layout::kTransposed, 2, 3, 5, rng);
  const auto b = make_operand<float>(Layout::kContiguous, 2, 5, 4, rng);
  std::vector<float> loops(2 * 3 * 4), onednn(2 * 3 * 4);
  detail::matmul_small_f32({2, 3, 4, 5, a.ref(), b.ref()}, loops.data());
  detail::matmul_onednn(kFloat32, {2, 3, 4, 5, a.ref(), b.ref()}, onednn.data());
  for (size_t i = 0; i < loops.size(); ++i) EXPECT_NEAR(loops[i], onednn[i], 1e-5f * (1 + std::abs(onednn[i])));
}

TEST(Matmul, FewRowsAgainstAWeightStoredAsRowsStreamIt) {
  // x·Wᵀ for 1 to 8 rows of x (decoding): every row count, output counts that leave a partial block
  // of 4, a bias or none; equal on 1 and 2 threads (each output summed by one thread in one order).
  for (int64_t M = 1; M <= detail::kRowsMatmulMaxRows; ++M)
    for (int64_t N : {1, 5, 130})
      for (int64_t K : {300, 1031}) {
        SCOPED_TRACE("M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K));
        std::mt19937_64 rng(static_cast<uint64_t>(M * 1000 + N + K));
        const auto a = make_operand<float>(Layout::kContiguous, 1, M, K, rng);
        const auto w = make_operand<float>(Layout::kTransposed, 1, K, N, rng);  // B = Wᵀ, W [N, K] as rows
        const detail::MatmulProblem p{1, M, N, K, a.ref(), w.ref()};
        ASSERT_TRUE(detail::is_rows_matmul(p));
        std::vector<float> c(M * N, -1.0f), two(M * N), bias(N), with_bias(M * N);
        detail::matmul_rows_f32(p, c.data());
        EXPECT_TRUE(matches_reference(1, M, N, K, a, w, c, tolerance<float>()));
        const int threads = omp_get_max_threads();
        omp_set_num_threads(threads == 1 ? 2 : 1);
        detail::matmul_rows_f32(p, two.data());
        omp_set_num_threads(threads);
        EXPECT_EQ(c, two);
        for (int64_t n = 0; n < N; ++n) bias[n] = static_cast<float>(n) - 2.5f;
        // Through the dispatch (N = 1 makes B one column, whose strides matmul() makes canonical: oneDNN's).
        if (N == 1) continue;
        matmul(kFloat32, 1, M, N, K, a.ref(), w.ref(), with_bias.data(), bias.data());
        for (int64_t i = 0; i < M * N; ++i) EXPECT_EQ(with_bias[i], c[i] + bias[i % N]);
      }
  // Not this path: rows of W not contiguous, more rows than 8, a batch.
  std::mt19937_64 rng(1);
  const auto a = make_operand<float>(Layout::kContiguous, 1, 9, 64, rng);
  const auto w = make_operand<float>(Layout::kTransposed, 1, 64, 32, rng);
  const auto b = make_operand<float>(Layout::kContiguous, 1, 64, 32, rng);
  EXPECT_FALSE(detail::is_rows_matmul({1, 9, 32, 64, a.ref(), w.ref()}));
  EXPECT_FALSE(detail::is_rows_matmul({1, 2, 32, 64, a.ref(), b.ref()}));
  EXPECT_FALSE(detail::is_rows_matmul({2, 2, 32, 64, a.ref(), w.ref()}));
}

TEST(Matmul, BroadcastBatchFoldsIntoOneProblem) {
  // A (4*8 batches of 16×32) @ B (32×2, shared) runs as one 512×32 @ 32×2 product: the same
  // primitive as an explicit 2-D call of that shape.
  std::vector<float> a(32 * 16 * 32, 0.5f), b(32 * 2, 2.0f), c(32 * 16 * 2);
  matmul(kFloat32, 32, 16, 2, 32, {a.data(), 16 * 32, 32, 1}, {b.data(), 0, 2, 1}, c.data());
  const int64_t before = matmul_primitives_created();
  matmul(kFloat32, 1, 512, 2, 32, {a.data(), 0, 32, 1}, {b.data(), 0, 2, 1}, c.data());
  EXPECT_EQ(matmul_primitives_created(), before);
  EXPECT_EQ(c.back(), 32.0f);
}

TEST(Matmul, SmallProductsRestoreTheThreadCount) {
  // Small products run on one thread by lowering the caller's OpenMP thread count for the call only.
  std::vector<float> x(4, 1.0f), c(4);
  const int threads = omp_get_max_threads();
  matmul(kFloat32, 1, 2, 2, 2, {x.data(), 0, 2, 1}, {x.data(), 0, 2, 1}, c.data());
  EXPECT_EQ(omp_get_max_threads(), threads);
  EXPECT_THROW(matmul(kBool, 1, 2, 2, 2, {x.data(), 0, 2, 1}, {x.data(), 0, 2, 1}, c.data()), TypeError);
  EXPECT_EQ(omp_get_max_threads(), threads);
}

TEST(Matmul, BoolAndFloat8AreTypeErrors) {
  std::vector<uint8_t> x(16);
  const MatrixRef m{x.data(), 4, 2, 1};
  for (Dtype d : {kBool, kFloat8_e4m3fn, kFloat8_e5m2}) {
    try {
      matmul(d, 1, 2, 2, 2, m, m, x.data());
      ADD_FAILURE() << "no error for " << dtype_name(d);
    } catch (const TypeError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + std::string(dtype_name(d)) + "'"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("addmm"), std::string::npos) << e.what();
    }
  }
}

TEST(Matmul, NegativeSizeIsAValueError) {
  std::vector<float> x(4);
  const MatrixRef m{x.data(), 4, 2, 1};
  EXPECT_THROW(matmul(kFloat32, 1, -1, 2, 2, m, m, x.data()), ValueError);
}

}  // namespace
}  // namespace tally::kernels

namespace tally::kernels {
namespace {

// Note [Long inner dimensions]: a product whose K oneDNN cannot take runs as slices of K summed
// in float32. Checked here with slices of 7, on the layouts a view gives and with a bias.
template <class T>
::testing::AssertionResult check_in_chunks(int64_t batch, int64_t M, int64_t N, int64_t K, Layout la, Layout lb) {
  std::mt19937_64 rng(static_cast<uint64_t>(M * 131 + N * 7 + K) + static_cast<uint64_t>(la) * 3 + static_cast<uint64_t>(lb));
  const Operand<T> a = make_operand<T>(la, batch, M, K, rng);
  const Operand<T> b = make_operand<T>(lb, batch, K, N, rng);
  std::vector<T> c(static_cast<size_t>(batch * M * N), static_cast<T>(97.0f));
  detail::matmul_onednn_in_chunks(dtype_of<T>(), {batch, M, N, K, a.ref(), b.ref()}, c.data(), 7);
  auto result = matches_reference(batch, M, N, K, a, b, c, tolerance<T>());
  if (!result) result << " in slices of 7, A " << layout_name(la) << " B " << layout_name(lb);
  return result;
}

template <class T>
class MatmulInChunks : public ::testing::Test {};
using OneDnnDtypes = ::testing::Types<float, BFloat16>;
TYPED_TEST_SUITE(MatmulInChunks, OneDnnDtypes);

TYPED_TEST(MatmulInChunks, SlicesOfTheInnerDimensionSumToTheProduct) {
  // The layouts that reach oneDNN (a broadcast operand is folded into one problem before it).
  for (Layout la : {Layout::kContiguous, Layout::kTransposed, Layout::kStepped})
    for (Layout lb : {Layout::kContiguous, Layout::kTransposed, Layout::kPaddedRows})
      EXPECT_TRUE(check_in_chunks<TypeParam>(3, 11, 5, 50, la, lb));
  EXPECT_TRUE(check_in_chunks<TypeParam>(1, 4, 3, 7, Layout::kContiguous, Layout::kContiguous));  // one whole slice
}

TEST(MatmulInChunks, TheBiasIsAddedOnce) {
  std::mt19937_64 rng(5);
  const auto a = make_operand<float>(Layout::kContiguous, 1, 6, 40, rng);
  const auto b = make_operand<float>(Layout::kTransposed, 1, 40, 4, rng);
  const std::vector<float> bias = {1.0f, -2.0f, 3.0f, 0.5f};
  std::vector<float> whole(24), sliced(24);
  detail::matmul_onednn(kFloat32, {1, 6, 4, 40, a.ref(), b.ref(), bias.data()}, whole.data());
  detail::matmul_onednn_in_chunks(kFloat32, {1, 6, 4, 40, a.ref(), b.ref(), bias.data()}, sliced.data(), 9);
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(sliced[i], whole[i], 1e-5) << i;
}

}  // namespace
}  // namespace tally::kernels
