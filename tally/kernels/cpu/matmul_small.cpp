// Float32 products too small for oneDNN to pay off: a oneDNN call costs ~1.4 µs of primitive-cache
// lookup and execution set-up, more than these loops take for a product of up to 16³ multiply-adds
// (measured: 16³ in 1.1 µs against oneDNN's 1.8; at 32³ oneDNN is twice as fast again).
// Plain loops on the calling thread, the j loop innermost so it vectorises on unit-stride rows.

#include <algorithm>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"

namespace tally::kernels::detail {

namespace {
/// The loops, built once per target (Note [CPU kernel dispatch]).
void small_f32(const MatmulProblem& p, float* C) {
  const auto* A = static_cast<const float*>(p.A.data);
  const auto* B = static_cast<const float*>(p.B.data);
  for (int64_t b = 0; b < p.batch; ++b) {
    const float* a_mat = A + b * p.A.batch_stride;
    const float* b_mat = B + b * p.B.batch_stride;
    for (int64_t i = 0; i < p.M; ++i) {
      float* __restrict c = C + (b * p.M + i) * p.N;
      std::fill_n(c, p.N, 0.0f);
      for (int64_t k = 0; k < p.K; ++k) {
        const float a = a_mat[i * p.A.row_stride + k * p.A.col_stride];
        const float* __restrict row = b_mat + k * p.B.row_stride;
        if (p.B.col_stride == 1) {
          for (int64_t j = 0; j < p.N; ++j) c[j] += a * row[j];
        } else {
          for (int64_t j = 0; j < p.N; ++j) c[j] += a * row[j * p.B.col_stride];
        }
      }
    }
  }
}

}  // namespace

#if TALLY_PRIMARY_PASS
// Each (row of A, k) pair costs a few ns of loop overhead whatever N is, so skinny products with many
// pairs and short rows (1024×2 @ 2×2: 13.6 µs here against oneDNN's 2.8) stay with oneDNN.
bool is_small_matmul(const MatmulProblem& p) {
  return p.batch * p.M * p.K <= 256 && p.batch * p.M * p.N * p.K <= kSmallMatmulMacs;
}

void matmul_small_f32(const MatmulProblem& p, float* C) { cpu_kernels().run<&small_f32>(p, C); }
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::kernels::detail

TALLY_CPU_KERNELS(matmul_small, &detail::small_f32)
