#include "tally/kernels/cpu/matmul.h"

#include <cstring>
#include <type_traits>

#include "tally/error/error.h"

namespace tally::kernels {
namespace {

// The stride of a size-1 dimension is never used to address memory, so a strided view may carry any
// value there. Rewriting it to the value a packed layout would have lets oneDNN see a plain layout
// and keeps equivalent problems on one cached primitive.
MatrixRef canonical(MatrixRef x, int64_t batch, int64_t rows, int64_t cols) {
  if (batch == 1) x.batch_stride = 0;
  if (cols == 1) x.col_stride = 1;
  if (rows == 1) x.row_stride = x.col_stride == 1 ? cols : 1;
  return x;
}

// B shared by the whole batch while A's rows follow each other with one stride across batches
// (the `(4,8,16,32) @ (32,2)` case): one (batch*M)×K @ K×N product replaces `batch` small ones,
// and C's layout already matches the folded result.
detail::MatmulProblem fold_broadcast_b(detail::MatmulProblem p) {
  if (p.batch == 1 || p.B.batch_stride != 0 || p.A.batch_stride == 0) return p;
  if (p.M == 1) {
    p.A.row_stride = p.A.batch_stride;
  } else if (p.A.batch_stride != p.M * p.A.row_stride) {
    return p;
  }
  p.M *= p.batch;
  p.batch = 1;
  p.A.batch_stride = 0;
  p.A = canonical(p.A, 1, p.M, p.K);
  return p;
}

// The bias on the paths whose kernels take none (float32's tiny products, float64, integers):
// added to C's rows afterwards, in C's dtype.
void add_bias_rows(Dtype dtype, void* C, int64_t rows, int64_t N, const void* bias) {
  dispatch(dtype, "addmm", [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      auto* c = static_cast<T*>(C);
      const auto* b = static_cast<const T*>(bias);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < N; ++j) c[r * N + j] = static_cast<T>(c[r * N + j] + b[j]);
    } else {
      TALLY_INTERNAL_ASSERT(false, "add_bias_rows: ", dtype_name(dtype), " takes its bias in the product");
    }
  });
}

}  // namespace

void matmul(Dtype dtype, int64_t batch, int64_t M, int64_t N, int64_t K, MatrixRef A, MatrixRef B, void* C, const void* bias) {
  TALLY_CHECK_TYPE_ERROR(dtype != Dtype::Bool && !is_float8(dtype), "matmul: \"addmm\" not implemented for '",
                         dtype_name(dtype), "'");
  TALLY_CHECK(batch >= 0 && M >= 0 && N >= 0 && K >= 0, "matmul: sizes must be non-negative, got batch=", batch,
              " M=", M, " N=", N, " K=", K);
  if (batch == 0 || M == 0 || N == 0) return;
  const int64_t c_bytes = batch * M * N * element_size(dtype);
  if (K == 0) {  // an empty sum: every row is the bias, or all-zero bytes (0 in every supported dtype)
    if (!bias) {
      std::memset(C, 0, static_cast<size_t>(c_bytes));
      return;
    }
    const auto row_bytes = static_cast<size_t>(N * element_size(dtype));
    for (int64_t r = 0; r < batch * M; ++r) std::memcpy(static_cast<char*>(C) + r * row_bytes, bias, row_bytes);
    return;
  }
  detail::MatmulProblem p{batch, M, N, K, canonical(A, batch, M, K), canonical(B, batch, K, N), bias};
  // Both operands shared by the batch: every C[b] is the same product, computed once and copied.
  const int64_t copies = p.batch > 1 && p.A.batch_stride == 0 && p.B.batch_stride == 0 ? p.batch : 1;
  if (copies > 1) p.batch = 1;
  p = fold_broadcast_b(p);

  bool bias_added = true;  // by the path's own kernel
  switch (dtype) {
    case Dtype::Float32:
      if (detail::is_small_matmul(p)) {
        detail::matmul_small_f32(p, static_cast<float*>(C));
        bias_added = false;
      } else if (detail::is_rows_matmul(p)) {
        detail::matmul_rows_f32(p, static_cast<float*>(C));
      } else {
        detail::matmul_onednn(dtype, p, C);
      }
      break;
    case Dtype::BFloat16:
      if (detail::onednn_native_bf16()) {
        detail::matmul_onednn(dtype, p, C);
      } else {
        detail::matmul_widened(dtype, p, C);
      }
      break;
    case Dtype::Float16: detail::matmul_widened(dtype, p, C); break;
    default:
      detail::matmul_blocked(dtype, p, C);
      bias_added = false;
      break;
  }
  if (bias && !bias_added) add_bias_rows(dtype, C, p.batch * p.M, N, bias);
  auto* bytes = static_cast<std::byte*>(C);
  const int64_t one_bytes = c_bytes / copies;
  for (int64_t b = 1; b < copies; ++b) std::memcpy(bytes + b * one_bytes, bytes, static_cast<size_t>(one_bytes));
}

std::vector<std::pair<std::string, std::string>> matmul_paths() {
  // The same tests as the dispatch in matmul() above.
  const std::string widened = "widened to float32, multiplied by oneDNN, rounded once";
  const std::string bf16 = detail::onednn_amx_bf16()      ? "oneDNN on AMX tiles (tdpbf16ps)"
                           : detail::onednn_native_bf16() ? "oneDNN with AVX512_BF16 (vdpbf16ps)"
                                                          : widened + " (no native bfloat16 on this CPU)";
  return {{"float32", "oneDNN (float32 FMA); products under 16x16x16 multiply-adds by plain loops; up to 8 rows against a "
                      "weight stored as rows (x·Wᵀ, decoding) by streaming the weight"},
          {"bfloat16", bf16},
          {"float16", widened + " (Debian 12's oneDNN 2.6 has no AVX512_FP16 kernels)"},
          {"float8", "scaled_mm only: widened exactly to bfloat16, then bfloat16's path, scales applied to the product"},
          {"float64, integers", "tally's cache-blocked kernel"}};
}

}  // namespace tally::kernels
