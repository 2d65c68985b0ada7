#pragma once
// The CUDA kernels the ops call. This header is the whole boundary between the C++20 library
// and the CUDA sources: plain structs and enums only, so nvcc compiles the .cu files without
// seeing the library's headers. Without CUDA (TALLY_CUDA off) the same functions exist and raise
// DeviceError; no CUDA tensor can exist in such a build, so ops never reach them.
//
// Dtypes travel as the numeric value of tally::Dtype, whose order both sides take from one list
// (tally/table/dtypes.h).

#include <cstdint>
#include <string>

#include "tally/kernels/update_scalars.h"
#include "tally/table/binary_ops.h"
#include "tally/table/unary_ops.h"

namespace tally::kernels::cuda {

/// Every failure of the CUDA side (a CUDA or cuBLASLt call, an argument a kernel cannot take)
/// but a missing dtype (raise_not_implemented, below) ends here. Defined by the library
/// (tally/cuda/runtime.cpp): it throws tally::DeviceError, so the user gets the library's typed
/// error, whichever layer failed.
[[noreturn]] void raise_error(const std::string& message);
/// A kernel with no code for an argument's dtype ends here instead: it throws
/// tally::NotImplementedError, as an op with no CUDA kernel at all does, and as PyTorch's CUDA
/// ops answer a dtype they lack ("not implemented for 'Long'").
[[noreturn]] void raise_not_implemented(const std::string& message);

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxOperands = 4;

/// One operand of an elementwise launch: its data, its byte strides over the launch's dims, and
/// (for a number or a 0-d CPU tensor joining a CUDA op, as PyTorch allows) its value inline.
struct Operand {
  char* data = nullptr;               ///< device address; null when `inline_value` holds it
  int64_t strides[kMaxDims] = {};     ///< in bytes, per dim of the launch, innermost last
  uint8_t dtype = 0;
  bool is_inline = false;
  alignas(8) unsigned char inline_value[8] = {};
};

/// An elementwise launch: operand 0 is the output, the rest inputs, all of one shape.
struct Launch {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};       ///< innermost last
  int64_t numel = 0;
  int noperands = 0;
  bool dense = false;                 ///< every operand contiguous in the same order: index = element number
  Operand op[kMaxOperands];
};

/// add, sub and one per row of tally/table/binary_ops.h.
#define TALLY_BINARY_ENUMERATOR_(fn, Name, what) , Name
enum class BinaryOp : uint8_t { Add, Sub TALLY_FORALL_BINARY_OPS(TALLY_BINARY_ENUMERATOR_) };
#undef TALLY_BINARY_ENUMERATOR_
/// One per row of tally/table/unary_ops.h, and gelu's two forms.
#define TALLY_UNARY_ENUMERATOR_(fn, Name, what) Name,
enum class UnaryOp : uint8_t { TALLY_FORALL_UNARY_OPS(TALLY_UNARY_ENUMERATOR_) GeluErf, GeluTanh };
#undef TALLY_UNARY_ENUMERATOR_

/// out = op(a, b): operands 1 and 2 in `compute` dtype; out in `compute`, or bool for comparisons.
void binary(BinaryOp op, const Launch& l);
/// out = op(x).
void unary(UnaryOp op, const Launch& l);
/// out = x ** e (e a number), out = clamp(x, lo, hi) with either bound optional.
void pow_scalar(const Launch& l, double e);
void clamp(const Launch& l, bool has_lo, double lo, bool has_hi, double hi);
/// The optimizers' pointwise ops, out = self + value·t1·t2 (addcmul) or self + value·(t1 / t2)
/// (addcdiv) over operands 1–3 of out's dtype (addcdiv: floating dtypes only).
enum class PointwiseOp : uint8_t { Addcmul, Addcdiv };
void pointwise(PointwiseOp op, const Launch& l, double value);
/// out = a + w·(b − a) for |w| < 0.5, else b − (b − a)·(1 − w) (PyTorch's lerp; floating dtypes).
void lerp(const Launch& l, double weight);
/// out = cond ? a : b (operands 1, 2, 3; cond bool).
void where(const Launch& l);
/// out = in, converted from in's dtype to out's with the library's rounding (round to nearest even;
/// float8 overflow gives NaN for e4m3fn and infinity for e5m2, as PyTorch).
void copy(const Launch& l);
/// out[...] = value (operand 0 only), value already in out's dtype as raw bytes.
void fill(const Launch& l, const unsigned char value[8]);

/// Reductions over the innermost `inner` elements of `outer` contiguous rows.
enum class ReduceOp : uint8_t { Sum, Prod, Amax, Amin, Argmax, Argmin, Any, All };
/// `scratch` is device memory of reduce_rows_scratch_bytes() for the partial results of rows split
/// into chunks; the caller takes it from the library's allocator, so it is on the books.
void reduce_rows(ReduceOp op, uint8_t in_dtype, const void* in, int64_t outer, int64_t inner, uint8_t out_dtype,
                 void* out, void* scratch);
int64_t reduce_rows_scratch_bytes();

/// Softmax or log-softmax of `rows` contiguous rows of length n (floating dtypes, computed in float32
/// or float64).
void softmax_rows(uint8_t dtype, const void* x, void* y, int64_t rows, int64_t n, bool log);

/// Rows along a dim of a contiguous tensor seen as [outer, n, inner], `index` k device int64s in
/// [0, n) (checked and wrapped by the caller). index_select: out [outer, k, inner] gathers rows
/// index[i] of src [outer, n, inner], any dtype. index_add: out [outer, n, inner] gets row i of
/// src [outer, k, inner] added at row index[i], atomically (floating dtypes, int32 and int64).
void index_select_rows(uint8_t dtype, const void* src, void* out, const int64_t* index, int64_t outer, int64_t n, int64_t k,
                       int64_t inner);
void index_add_rows(uint8_t dtype, void* out, const int64_t* index, const void* src, int64_t outer, int64_t n, int64_t k,
                    int64_t inner);
/// One Adam or AdamW step over n contiguous elements of float32 or float64 (`dtype`): the
/// parameter p, its gradient g, the moments m and v, and with AMSGrad v_max (else null), in
/// tally/optim/adam.cpp's order and rounding, so that a GPU step equals the CPU's bit for bit.
void adam_update(uint8_t dtype, int64_t n, void* p, const void* g, void* m, void* v, void* v_max, const optim::AdamScalars& h);
/// One SGD step likewise (tally/optim/sgd.cpp): p, g and, with momentum, its buffer (else null).
void sgd_update(uint8_t dtype, int64_t n, void* p, const void* g, void* buf, const optim::SgdScalars& h);
/// One Adagrad step likewise (tally/optim/adagrad.cpp): p, g and the running sum of squares.
void adagrad_update(uint8_t dtype, int64_t n, void* p, const void* g, void* sum, const optim::AdagradScalars& h);
/// One RMSprop step likewise (tally/optim/rmsprop.cpp): p, g, square_avg, and the momentum
/// buffer and grad_avg where momentum and centering ask for them (else null).
void rmsprop_update(uint8_t dtype, int64_t n, void* p, const void* g, void* square_avg, void* buf, void* grad_avg,
                    const optim::RmspropScalars& h);
/// A row-major matrix operand: element (i, j) of batch b at data + b·batch_stride + i·row_stride
/// + j·col_stride (in elements). One of row_stride, col_stride must be 1.
struct Matrix {
  const void* data;
  int64_t batch_stride, row_stride, col_stride;
};
/// C[b] = A[b] · B[b] (M×K times K×N), C dense row-major in `out_dtype`, through cuBLASLt. For
/// float8 operands `scale_a` and `scale_b` (device float scalars, may be null for 1) multiply
/// the product, as torch._scaled_mm does. float32 runs on TF32 tensor cores when `tf32`.
void matmul(uint8_t in_dtype, uint8_t out_dtype, int64_t batch, int64_t M, int64_t N, int64_t K, Matrix A, Matrix B,
            void* C, const float* scale_a, const float* scale_b, bool tf32);

}  // namespace tally::kernels::cuda
