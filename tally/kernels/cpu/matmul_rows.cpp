// Float32 products of a few rows against a weight stored as rows, x·Wᵀ with W [N, K] row-major:
// a layer applied to one token (decoding with a KV cache). Each output is a dot product of one
// contiguous weight row with one input row, so the kernel streams the weights once, front to
// back, split by rows over the threads; the work is the weights' bytes, and oneDNN's set-up for
// a product of so few rows cost more than it (GPT-2 small at batch 1: 18 GB/s through oneDNN;
// streamed, the read bandwidth). Each output is summed by one thread in one order, so the result
// does not depend on the thread count.

#include <algorithm>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/kernels/cpu/parallel.h"

namespace tally::kernels::detail {

namespace {

/// Output rows a block computes together, sharing each input element it loads.
constexpr int64_t kRowsPerBlock = 4;

/// The loops, built once per target (Note [CPU kernel dispatch]): C[i, n] = Σ_k A[i, k] W[n, k] (+ bias[n]).
void rows_f32(const MatmulProblem& p, float* C) {
  const auto* A = static_cast<const float*>(p.A.data);
  const auto* W = static_cast<const float*>(p.B.data);  // B = Wᵀ: column n of B is row n of W
  const auto* bias = static_cast<const float*>(p.bias);
  const int64_t K = p.K, N = p.N, w_row = p.B.col_stride;
  const int64_t blocks = (N + kRowsPerBlock - 1) / kRowsPerBlock;
  // A chunk of at least 64 KiB of weights per thread: below that, starting a thread costs more.
  const int64_t grain = std::max<int64_t>(1, (int64_t{16} << 10) / (K * kRowsPerBlock));
  parallel_for(blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t n0 = blk * kRowsPerBlock;
      if (n0 + kRowsPerBlock <= N) {
        const float* __restrict w0 = W + n0 * w_row;
        const float* __restrict w1 = w0 + w_row;
        const float* __restrict w2 = w1 + w_row;
        const float* __restrict w3 = w2 + w_row;
        for (int64_t i = 0; i < p.M; ++i) {
          const float* __restrict a = A + i * p.A.row_stride;
          float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
          for (int64_t k = 0; k < K; ++k) {
            s0 += a[k] * w0[k];
            s1 += a[k] * w1[k];
            s2 += a[k] * w2[k];
            s3 += a[k] * w3[k];
          }
          float* c = C + i * N + n0;
          c[0] = s0 + (bias ? bias[n0] : 0.0f);
          c[1] = s1 + (bias ? bias[n0 + 1] : 0.0f);
          c[2] = s2 + (bias ? bias[n0 + 2] : 0.0f);
          c[3] = s3 + (bias ? bias[n0 + 3] : 0.0f);
        }
      } else {
        for (int64_t n = n0; n < N; ++n) {
          const float* __restrict w = W + n * w_row;
          for (int64_t i = 0; i < p.M; ++i) {
            const float* __restrict a = A + i * p.A.row_stride;
            float s = 0;
#pragma omp simd reduction(+ : s)
            for (int64_t k = 0; k < K; ++k) s += a[k] * w[k];
            C[i * N + n] = s + (bias ? bias[n] : 0.0f);
          }
        }
      }
    }
  });
}

}  // namespace

#if TALLY_PRIMARY_PASS
bool is_rows_matmul(const MatmulProblem& p) {
  return p.batch == 1 && p.M <= kRowsMatmulMaxRows && p.A.col_stride == 1 && p.B.row_stride == 1 && p.B.col_stride >= p.K;
}

void matmul_rows_f32(const MatmulProblem& p, float* C) { cpu_kernels().run<&rows_f32>(p, C); }
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::kernels::detail

TALLY_CPU_KERNELS(matmul_rows, &detail::rows_f32)
