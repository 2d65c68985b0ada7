#pragma once
// Batched matrix multiply on the CPU. float32 goes through oneDNN (tiny products through plain
// loops, a few rows against a weight stored as rows by streaming it), and bfloat16 too where the
// CPU has native bf16 instructions; float16 (and bfloat16 elsewhere) is computed by the float32
// path and rounded once; float64 and the integer dtypes use tally's own blocked kernel.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tally/dtype/dtype.h"
#include "tally/machine/cpu_info.h"

namespace tally::kernels {

/// One operand of a batched matmul: element strides for batch, row and column.
struct MatrixRef {
  const void* data;
  int64_t batch_stride;
  int64_t row_stride;
  int64_t col_stride;
};

/// C[b] = A[b] @ B[b] (+ bias) for b < batch, with A[b] M×K, B[b] K×N, C contiguous row-major (batch
/// stride M*N, row stride N). A, B and C all have dtype `dtype`; strides are in elements and may be
/// transposed, stepped, negative or 0. `bias`, when given, is N contiguous elements of that dtype
/// added to every row of C: in oneDNN's epilogue (and on the widened path) before C is rounded to
/// its dtype, so C is written once. Raises TypeError for bool and float8.
void matmul(Dtype dtype, int64_t batch, int64_t M, int64_t N, int64_t K, MatrixRef A, MatrixRef B, void* C,
            const void* bias = nullptr);

/// Which path a matmul of each dtype takes on this CPU, chosen at run time ("bfloat16" →
/// "oneDNN with AVX512_BF16 (vdpbf16ps)"), in the order float32, bfloat16, float16, float8,
/// float64 and integers: what `tally info` prints.
std::vector<std::pair<std::string, std::string>> matmul_paths();

/// How many oneDNN matmul primitives this process has created: a repeated problem must reuse its own.
int64_t matmul_primitives_created();

namespace detail {
// Shared between matmul*.cpp only; not part of the public API.

/// A matmul after checks: all sizes ≥ 1, the stride of every size-1 dimension canonical, and at most one
/// operand broadcast across the batch (batch_stride 0).
struct MatmulProblem {
  int64_t batch, M, N, K;
  MatrixRef A, B;
  const void* bias = nullptr;  // N elements added to every row of C, or none
};
/// float32 and bfloat16 through a cached oneDNN primitive, the bias in its epilogue.
void matmul_onednn(Dtype dtype, const MatmulProblem& p, void* C);
/// The same as products over slices of K of at most `chunk`, summed in float32 and rounded once:
/// what matmul_onednn does for a very long K (Note [Long inner dimensions]); a parameter for tests.
void matmul_onednn_in_chunks(Dtype dtype, const MatmulProblem& p, void* C, int64_t chunk);
/// float64 and the integer dtypes through the cache-blocked OpenMP kernel (p.bias ignored: the
/// caller adds it).
void matmul_blocked(Dtype dtype, const MatmulProblem& p, void* C);
/// float16 or bfloat16 widened to float32, multiplied by oneDNN (with the bias) and rounded back once.
void matmul_widened(Dtype dtype, const MatmulProblem& p, void* C);
/// Multiply-adds (batch·M·N·K) up to which a float32 product skips oneDNN (matmul_small.cpp).
inline constexpr int64_t kSmallMatmulMacs = 16 * 16 * 16;
/// Whether `p` is that small.
bool is_small_matmul(const MatmulProblem& p);
/// float32 by plain loops on the calling thread, for products where a oneDNN call costs more than the work.
void matmul_small_f32(const MatmulProblem& p, float* C);
/// Rows of A up to which a float32 product with B stored as rows of a weight (x·Wᵀ) streams the
/// weight itself (matmul_rows.cpp) instead of calling oneDNN.
inline constexpr int64_t kRowsMatmulMaxRows = 8;
/// Whether `p` is such a product: one matrix, at most kRowsMatmulMaxRows rows of A, A's rows and
/// B's columns (W's rows) contiguous.
bool is_rows_matmul(const MatmulProblem& p);
/// float32 by streaming W's rows over the threads, the bias added.
void matmul_rows_f32(const MatmulProblem& p, float* C);
/// True when oneDNN runs bfloat16 on native instructions (AVX512_BF16 or AMX) rather than emulating them.
bool onednn_native_bf16();
/// True when oneDNN runs bfloat16 matmuls on AMX tiles (its effective ISA includes AMX).
bool onednn_amx_bf16();
/// The CPU's features as tally's matmul uses them: oneDNN may run below what the CPU has (a capped
/// ONEDNN_MAX_CPU_ISA, or an AMX it was refused), and bfloat16 is widened where it runs nothing
/// native. What machine::peak_for_dtype takes to pick the peak a product is measured against.
machine::CpuInfo matmul_cpu_features();

}  // namespace detail
}  // namespace tally::kernels
