// Sums down the columns (a bias gradient's sum over the tokens): float32, bfloat16 and float16
// fold blocks of 64 rows in float lanes, 16 such blocks' sums in float, over chunks of 1024 columns, each block's sums added
// into doubles. Checked against double sums on shapes that cross both block edges and leave a
// tail of columns narrower than a vector, dense and strided.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tally/tally.h"

namespace tally {
namespace {

/// Values in [-2, 2) from a fixed sequence, exact in every 16-bit float type after rounding.
Tensor values(int64_t rows, int64_t cols, Dtype dt) {
  Tensor x = empty({rows, cols});
  float* p = static_cast<float*>(x.data_ptr());
  uint32_t state = 12345;
  for (int64_t i = 0; i < rows * cols; ++i) {
    state = state * 1664525u + 1013904223u;
    p[i] = static_cast<float>(static_cast<int32_t>(state >> 8)) * (1.0f / (1 << 22)) - 2.0f;
  }
  return x.to(dt);
}

/// Column sums of x [rows, cols] in double, and each column's sum of magnitudes.
void reference(const Tensor& x, std::vector<double>& sums, std::vector<double>& magnitudes) {
  const Tensor x64 = x.to(kFloat64).contiguous();
  const double* p = static_cast<const double*>(x64.data_ptr());
  const int64_t rows = x.size(0), cols = x.size(1);
  sums.assign(static_cast<size_t>(cols), 0.0);
  magnitudes.assign(static_cast<size_t>(cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      sums[static_cast<size_t>(j)] += p[i * cols + j];
      magnitudes[static_cast<size_t>(j)] += std::fabs(p[i * cols + j]);
    }
}

/// The error a column sum may have: float32 sums of at most 64 terms, then of 16 such sums, round
/// each step by at most 2^-24 of the running magnitude, under (64 + 16) · 2^-24 ≈ 4.8e-6 of the
/// column's sum of magnitudes; then the result is rounded once to its dtype (half its epsilon).
double tolerance(double sum, double magnitude, Dtype dt) {
  const double half_epsilon = dt == kBFloat16 ? 0x1p-8 : dt == kFloat16 ? 0x1p-11 : 0x1p-24;
  return 4.8e-6 * magnitude + half_epsilon * std::fabs(sum) + 1e-12;
}

/// Checks sum(x, dims) of x whose rows (after flattening the summed dims) are `rows2d`.
void expect_column_sums(const Tensor& x, IntArrayRef dims, const Tensor& rows2d, const std::string& what) {
  std::vector<double> sums, magnitudes;
  reference(rows2d, sums, magnitudes);
  const Tensor got = sum(x, dims).to(kFloat64).contiguous();
  ASSERT_EQ(got.numel(), rows2d.size(1)) << what;
  const double* g = static_cast<const double*>(got.data_ptr());
  for (size_t j = 0; j < sums.size(); ++j)
    ASSERT_NEAR(g[j], sums[j], tolerance(sums[j], magnitudes[j], x.dtype())) << what << ", column " << j;
}

void expect_column_sums(const Tensor& x, const std::string& what) { expect_column_sums(x, {0}, x, what); }

TEST(ColumnSums, MatchDoubleSumsAcrossBlocksAndChunks) {
  for (Dtype dt : {kFloat32, kBFloat16, kFloat16}) {
    const std::string name(dtype_name(dt));
    // 3000 rows: 46 whole blocks of 64 and a part; 1100 columns: a whole chunk and 76 more,
    // 12 of them past the last whole vector.
    const Tensor x = values(3000, 1100, dt);
    expect_column_sums(x, name + " [3000, 1100]");
    // Rows further apart than they are long, and starting mid-row.
    expect_column_sums(x.slice(1, 3, 1033), name + " columns 3..1033 of [3000, 1100]");
    // Fewer rows than a block, fewer columns than a vector.
    expect_column_sums(values(5, 7, dt), name + " [5, 7]");
  }
}

TEST(ColumnSums, SumOverTheLeadingDimsOfABatch) {
  // A Linear's bias gradient: [b, T, n] summed over b and T, as one column sum over b·T rows.
  const Tensor rows = values(2 * 700, 300, kBFloat16);
  expect_column_sums(rows.view({2, 700, 300}), {0, 1}, rows, "bfloat16 [2, 700, 300] over dims 0 and 1");
}

TEST(ColumnSums, FiveMillionRowsAreAsCloseAsTorchs) {
  // full({5000000, 2}, 0.1).sum(0): exactly 5e6 · float(0.1) = 500000.0075; torch 1.13 gives
  // 499999.5625 (8.9e-7 off), blocks of 1024 rows gave 499995.16 (9.7e-6).
  const Tensor s = sum(full({5000000, 2}, 0.1), {0});
  for (int64_t j = 0; j < 2; ++j) EXPECT_NEAR(s.select(0, j).item<float>(), 500000.0075, 500000.0 * 1e-6) << j;
}

}  // namespace
}  // namespace tally
