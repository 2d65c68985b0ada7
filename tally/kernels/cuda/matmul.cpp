// Batched matrix products through cuBLASLt.
//
// tally's matrices are row-major; cuBLASLt's are column-major. A row-major C (M x N) is a
// column-major C^T (N x M), and C^T = B^T A^T, so cuBLASLt computes with our B as its first
// operand and our A as its second, and no operand is copied: a row-major X is, read column-major,
// X^T (used as is), and a column-major X (X = W.t() of a row-major W) is X read column-major
// (used transposed).
//
// One handle and a 32 MiB workspace per device, made on first use and kept. The descriptors and
// the algorithm cuBLASLt's heuristic picks are cached per problem (dtypes, sizes, layouts,
// batch, pointer alignment), so a repeated product pays no heuristic query. Everything is
// enqueued on the legacy default stream; nothing synchronises.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tally/kernels/cuda/check.h"
#include "tally/kernels/cuda/kernels.h"

namespace tally::kernels::cuda {

namespace {

// tally::Dtype ids (kernels.h).
constexpr uint8_t kFloat32 = 0, kFloat64 = 1, kFloat16 = 2, kBFloat16 = 3, kFloat8_e4m3fn = 4, kFloat8_e5m2 = 5;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr int kMaxDevices = 64;
constexpr size_t kMaxCachedPlans = 1024;

const char* dtype_name(uint8_t d) {
  static constexpr const char* kNames[] = {"Float32", "Float64", "Float16", "BFloat16", "Float8_e4m3fn",
                                           "Float8_e5m2", "Int32", "Int64", "UInt8", "Bool"};
  return d < 10 ? kNames[d] : "unknown dtype";
}

int64_t element_size(uint8_t d) {
  switch (d) {
    case kFloat32: return 4;
    case kFloat64: return 8;
    case kFloat16:
    case kBFloat16: return 2;
    default: return 1;
  }
}

cudaDataType_t data_type(uint8_t d) {
  switch (d) {
    case kFloat32: return CUDA_R_32F;
    case kFloat64: return CUDA_R_64F;
    case kFloat16: return CUDA_R_16F;
    case kBFloat16: return CUDA_R_16BF;
    case kFloat8_e4m3fn: return CUDA_R_8F_E4M3;
    case kFloat8_e5m2: return CUDA_R_8F_E5M2;
    default: raise_error(std::string("matmul (CUDA): dtype ") + dtype_name(d) + " not supported");
  }
}

bool is_float8(uint8_t d) { return d == kFloat8_e4m3fn || d == kFloat8_e5m2; }

[[noreturn]] void fail(const std::string& what) { raise_error("matmul (CUDA): " + what); }

/// The transpose of a row-major R x S operand as cuBLASLt takes it: column-major storage
/// (rows x cols, leading dimension ld) and whether cuBLASLt must transpose it.
struct LtOperand {
  bool trans;
  int64_t rows, cols, ld, batch_stride;
};

LtOperand transposed(const char* name, int64_t R, int64_t S, const Matrix& m) {
  // Contiguous rows (ld = row_stride): read column-major this is X^T already. A stride along a
  // dim of size 1 is never used, so any valid ld stands in for it.
  if ((m.col_stride == 1 || S == 1) && (R == 1 || m.row_stride >= S))
    return {false, S, R, R == 1 ? std::max<int64_t>(S, 1) : m.row_stride, m.batch_stride};
  // Contiguous columns (ld = col_stride): read column-major this is X, to be transposed.
  if ((m.row_stride == 1 || R == 1) && (S == 1 || m.col_stride >= R))
    return {true, R, S, S == 1 ? std::max<int64_t>(R, 1) : m.col_stride, m.batch_stride};
  fail(std::string(name) + " (" + std::to_string(R) + " x " + std::to_string(S) + ", strides " +
       std::to_string(m.row_stride) + ", " + std::to_string(m.col_stride) +
       ") needs contiguous rows or columns with a leading dimension covering them; make it contiguous first");
}

/// The largest power of two up to 256 dividing every batch's address (cuBLASLt picks kernels by it).
int alignment(const void* p, int64_t batch_stride_bytes, int64_t batch) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(p);
  if (batch > 1) bits |= static_cast<uintptr_t>(batch_stride_bytes);
  int a = 256;
  while (a > 1 && bits % a != 0) a /= 2;
  return a;
}

struct Key {
  int device;
  uint8_t in_dtype, out_dtype;
  bool tf32;
  int64_t m, n, k, batch;
  bool trans_a, trans_b;
  int64_t lda, ldb, stride_a, stride_b;
  int align_a, align_b, align_d;
  auto operator<=>(const Key&) const = default;
};

/// Descriptors and algorithm for one problem, in cuBLASLt's terms (its A is our B).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    // Destruction cannot report errors; the statuses are dropped.
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

struct DeviceState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

std::mutex g_mutex;  // guards everything below, and a plan while its scale pointers are set and used
DeviceState g_devices[kMaxDevices];
std::map<Key, std::unique_ptr<Plan>> g_plans;

DeviceState& device_state(int device) {
  if (device < 0 || device >= kMaxDevices) fail("device " + std::to_string(device) + " out of range");
  DeviceState& s = g_devices[device];
  if (!s.handle) {
    CUBLAS_CHECK(cublasLtCreate(&s.handle));
    CUDA_CHECK(cudaMalloc(&s.workspace, kWorkspaceBytes));
  }
  return s;
}

template <class T>
void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T value) {
  CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, attr, &value, sizeof(value)));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t batch_stride) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    set_layout(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(batch));
    set_layout(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, batch_stride);
  }
  return l;
}

std::string describe(const Key& k) {
  return std::string(dtype_name(k.in_dtype)) + " -> " + dtype_name(k.out_dtype) + ", M=" + std::to_string(k.n) +
         " N=" + std::to_string(k.m) + " K=" + std::to_string(k.k) + ", batch " + std::to_string(k.batch) +
         ", A " + (k.trans_b ? "column" : "row") + "-major (ld " + std::to_string(k.ldb) + ", align " +
         std::to_string(k.align_b) + "), B " + (k.trans_a ? "column" : "row") + "-major (ld " +
         std::to_string(k.lda) + ", align " + std::to_string(k.align_a) + ")";
}

std::unique_ptr<Plan> make_plan(const Key& k, cublasLtHandle_t handle) {
  auto plan = std::make_unique<Plan>();
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (k.in_dtype == kFloat64) compute = CUBLAS_COMPUTE_64F, scale = CUDA_R_64F;
  else if (k.in_dtype == kFloat32 && k.tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, scale));
  const cublasOperation_t op_a = k.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = k.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));

  const cudaDataType_t in = data_type(k.in_dtype), out = data_type(k.out_dtype);
  // cuBLASLt's A is op_a(m x k), B is op_b(k x n), D is m x n.
  plan->a = k.trans_a ? make_layout(in, k.k, k.m, k.lda, k.batch, k.stride_a)
                      : make_layout(in, k.m, k.k, k.lda, k.batch, k.stride_a);
  plan->b = k.trans_b ? make_layout(in, k.n, k.k, k.ldb, k.batch, k.stride_b)
                      : make_layout(in, k.k, k.n, k.ldb, k.batch, k.stride_b);
  plan->d = make_layout(out, k.m, k.n, k.m, k.batch, k.m * k.n);

  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    const cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value));
    if (st != CUBLAS_STATUS_SUCCESS) {
      cublasLtMatmulPreferenceDestroy(pref);
      CUBLAS_CHECK(st);
    }
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(kWorkspaceBytes));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(k.align_a));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(k.align_b));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(k.align_d));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(k.align_d));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                                           pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0))
    fail("cuBLASLt has no algorithm for " + describe(k) +
         (is_float8(k.in_dtype) ? " (float8 needs K, the leading dimensions and N of the output to be multiples of "
                                  "16 and 16-byte aligned operands)"
                                : ""));
  CUBLAS_CHECK(st);
  plan->algo = result.algo;
  plan->workspace = result.workspaceSize;
  return plan;
}

}  // namespace

void matmul(uint8_t in_dtype, uint8_t out_dtype, int64_t batch, int64_t M, int64_t N, int64_t K, Matrix A, Matrix B,
            void* C, const float* scale_a, const float* scale_b, bool tf32) {
  // The dtypes cuBLASLt takes for these inputs (C is never read: beta is 0).
  switch (in_dtype) {
    case kFloat32:
    case kFloat64:
      if (out_dtype != in_dtype) fail(std::string(dtype_name(in_dtype)) + " inputs need a " + dtype_name(in_dtype) + " output");
      break;
    case kFloat16:
    case kBFloat16:
      if (out_dtype != in_dtype && out_dtype != kFloat32)
        fail(std::string(dtype_name(in_dtype)) + " inputs give " + dtype_name(in_dtype) + " or Float32, not " +
             dtype_name(out_dtype));
      break;
    case kFloat8_e4m3fn:
    case kFloat8_e5m2:
      if (out_dtype != kBFloat16 && out_dtype != kFloat16 && out_dtype != kFloat32)
        fail(std::string("float8 inputs give BFloat16, Float16 or Float32, not ") + dtype_name(out_dtype));
      if (in_dtype == kFloat8_e5m2) fail("cuBLASLt has no Float8_e5m2 x Float8_e5m2 product; use Float8_e4m3fn for one operand");
      break;
    default:
      raise_not_implemented(std::string("matmul (CUDA): no kernel for dtype ") + dtype_name(in_dtype) +
                            ": cuBLASLt multiplies floating-point matrices only, as PyTorch's CUDA matmul does; move the "
                            "tensors to the CPU with .cpu() first");
  }
  if (batch <= 0 || M <= 0 || N <= 0) return;
  if (batch > INT32_MAX) fail("batch of " + std::to_string(batch) + " exceeds cuBLASLt's limit");
  const int64_t out_bytes = batch * M * N * element_size(out_dtype);
  if (K == 0) {  // an empty sum: zeros (all-zero bits in every float format)
    CUDA_CHECK(cudaMemsetAsync(C, 0, static_cast<size_t>(out_bytes), 0));
    return;
  }

  // cuBLASLt computes D (m x n) = op_a(its A) op_b(its B) with m = N, n = M, its A = our B.
  const LtOperand ta = transposed("B", K, N, B);  // B^T: N x K
  const LtOperand tb = transposed("A", M, K, A);  // A^T: K x M
  if (is_float8(in_dtype) && !(ta.trans && !tb.trans))
    fail("float8 operands need A (M x K) with contiguous rows and B (K x N) with contiguous columns, i.e. B = W.t() "
         "for a row-major N x K tensor W (the torch._scaled_mm layout); got A " +
         std::string(tb.trans ? "column" : "row") + "-major and B " + (ta.trans ? "column" : "row") + "-major");

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const int64_t esize = element_size(in_dtype);
  Key key{device, in_dtype, out_dtype, in_dtype == kFloat32 && tf32, N, M, K, batch, ta.trans,
          tb.trans, ta.ld, tb.ld, B.batch_stride, A.batch_stride,
          alignment(B.data, B.batch_stride * esize, batch), alignment(A.data, A.batch_stride * esize, batch),
          alignment(C, M * N * element_size(out_dtype), batch)};

  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceState& state = device_state(device);
  auto it = g_plans.find(key);
  if (it == g_plans.end()) {
    auto plan = make_plan(key, state.handle);
    if (g_plans.size() >= kMaxCachedPlans) g_plans.clear();  // a workload of ever-new shapes: start over
    it = g_plans.emplace(key, std::move(plan)).first;
  }
  Plan& plan = *it->second;
  if (is_float8(in_dtype)) {
    // Set on every call (null means 1): the cached descriptor may hold the last call's pointers.
    // cuBLASLt's A is our B, so our B's scale is its A scale.
    const void* sa = scale_b;
    const void* sb = scale_a;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb)));
  }
  const double alpha64 = 1.0, beta64 = 0.0;
  const float alpha32 = 1.0f, beta32 = 0.0f;
  const void* alpha = in_dtype == kFloat64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = in_dtype == kFloat64 ? static_cast<const void*>(&beta64) : &beta32;
  CUBLAS_CHECK(cublasLtMatmul(state.handle, plan.desc, alpha, B.data, plan.a, A.data, plan.b, beta, C, plan.d, C,
                              plan.d, &plan.algo, state.workspace, plan.workspace, 0));
}

}  // namespace tally::kernels::cuda
