// softmax / log_softmax along one dim, fused: each row is read from memory once and written
// once (max, exp-sum and scale passes run on the row while it sits in cache). Declared cost:
// 5 FLOPs per element (max, subtract, exp, sum, divide or log-subtract), input read once,
// output written once.

#include "tally/ops/softmax.h"

#include <cmath>
#include <limits>
#include <vector>

#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/kernels/cpu/vec_math.h"
#include "tally/kernels/cuda/kernels.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/reduce.h"

namespace tally {

namespace {

/// Outputs above this size are written with streaming stores (bigger than this CPU's caches).
constexpr int64_t kStreamingBytes = int64_t{64} << 20;

/// One contiguous float32 row, three passes while the row sits in cache: max; exp(x - max) into
/// a per-thread scratch row with its sum; then y = scratch / sum (or x - max - log sum). y is
/// written once and never read, so with `stream` set its stores bypass the cache and save the
/// read-for-ownership of every output line.
/// A thread's scratch row. A type of this file's own, not std::vector<float>: a kernel pass must
/// not emit code under a name the other passes share (Note [CPU kernel dispatch]).
struct Scratch {
  float* data = nullptr;
  int64_t size = 0;
  float* reserve(int64_t n) {
    if (size < n) {
      delete[] data;
      data = new float[static_cast<size_t>(n)];
      size = n;
    }
    return data;
  }
  ~Scratch() { delete[] data; }
};

void softmax_row_f32(const float* x, float* y, int64_t n, bool log, bool stream) {
  using namespace kernels;
  thread_local Scratch scratch;
  float* e = scratch.reserve(n);
  int64_t i = 0;
  Vec16f vmax = splat(-std::numeric_limits<float>::infinity());
  for (; i + 16 <= n; i += 16) vmax = kernels::max(vmax, load(x + i));
  float m = reduce_max(vmax);
  for (; i < n; ++i) m = std::max(m, x[i]);
  if (std::isinf(m) && m < 0) m = 0;  // an all -inf row gives NaN as in PyTorch (0/0), not a crash
  const Vec16f vm = splat(m);
  Vec16f vsum = splat(0.0f);
  for (i = 0; i + 16 <= n; i += 16) {
    // Fetch the next row while this one is computed, so its max pass does not wait on memory.
    // (rw 0, locality 3: the prefetcht0 of _mm_prefetch(p, _MM_HINT_T0), without needing x86 headers.)
    __builtin_prefetch(x + n + i, 0, 3);
    const Vec16f v = kernels::exp(sub(load(x + i), vm));
    store(e + i, v);
    vsum = add(vsum, v);
  }
  double s = reduce_add(vsum);
  for (; i < n; ++i) s += (e[i] = std::exp(x[i] - m));
  const float shift = m + static_cast<float>(std::log(s));
  const float inv = static_cast<float>(1.0 / s);
  const Vec16f vshift = splat(shift), vinv = splat(inv);
  auto value = [&](int64_t k) { return log ? sub(load(x + k), vshift) : mul(load(e + k), vinv); };
  i = 0;
  // Streaming stores need 64-byte aligned addresses: do the unaligned head with plain stores.
  const int64_t head = stream ? std::min<int64_t>(n, ((64 - reinterpret_cast<uintptr_t>(y) % 64) % 64) / 4) : 0;
  for (; i < head; ++i) y[i] = log ? x[i] - shift : e[i] * inv;
  if (stream && reinterpret_cast<uintptr_t>(y + i) % 64 == 0) {
    for (; i + 16 <= n; i += 16) kernels::stream(y + i, value(i));
  } else {
    for (; i + 16 <= n; i += 16) store(y + i, value(i));
  }
  for (; i < n; ++i) y[i] = log ? x[i] - shift : e[i] * inv;
}

/// One contiguous row of any floating type, computed in double.
template <class T>
void softmax_row(const T* x, T* y, int64_t n, bool log) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max<double>(m, static_cast<double>(static_cast<compute_t<T>>(x[i])));
  if (std::isinf(m) && m < 0) m = 0;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(static_cast<compute_t<T>>(x[i])) - m);
  const double shift = m + std::log(s);
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(static_cast<compute_t<T>>(x[i]));
    y[i] = cast_to<T>(log ? v - shift : std::exp(v - m) / s);
  }
}

struct Softmax {
  static constexpr std::string_view name = "softmax";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, bool log) {
    TALLY_CHECK_TYPE_ERROR(x.is_floating_point() && !is_float8(x.dtype()), log ? "\"log_softmax_lastdim_kernel_impl\"" : "\"softmax_lastdim_kernel_impl\"",
                           " not implemented for '", dtype_name(x.dtype()), "'");
    maybe_wrap_dim(dim, x.dim() == 0 ? 1 : x.dim());
    return {DimVector(x.sizes()), x.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
    // Bring `dim` last and make rows contiguous (a view when it already is).
    if (x.dim() > 0) dim = maybe_wrap_dim(dim, x.dim());
    Tensor src = x.dim() == 0 ? x.reshape({1}) : x.transpose(dim, -1).contiguous();
    Tensor dst = x.dim() == 0 ? out.view({1}) : out.transpose(dim, -1);
    Tensor rows_out = dst.is_contiguous() ? dst : empty(src.sizes(), TensorOptions(out.dtype()).device(out.device()));
    const int64_t n = src.size(-1);
    const int64_t rows = n == 0 ? 0 : src.numel() / n;
    if (out.is_cuda()) {
      if (rows > 0) kernels::cuda::softmax_rows(static_cast<uint8_t>(x.dtype()), src.data_ptr(), rows_out.data_ptr(), rows, n, log);
    } else {
      // Outputs larger than the last-level cache go straight to memory (Note in softmax_row_f32).
      const bool stream = rows_out.nbytes() > kStreamingBytes;
      cpu_kernels().run<&Softmax::kernel>(src.data_ptr(), rows_out.data_ptr(), rows, n, x.dtype(), log, stream);
    }
    if (!rows_out.is_same(dst)) dst.copy_(rows_out);
  }
  /// `rows` contiguous rows of n elements from x into y; built once per target (Note [CPU kernel dispatch]).
  static void kernel(const void* x, void* y, int64_t rows, int64_t n, Dtype dt, bool log, bool stream) {
    dispatch(dt, "softmax", [&]<class T>() {
      const T* px = static_cast<const T*>(x);
      T* py = static_cast<T*>(y);
      kernels::parallel_for(rows, std::max<int64_t>(1, kernels::kElementwiseGrain / std::max<int64_t>(n, 1)),
                            [&](int64_t b, int64_t e) {
                              for (int64_t r = b; r < e; ++r) {
                                if constexpr (std::is_same_v<T, float>) softmax_row_f32(px + r * n, py + r * n, n, log, stream);
                                else softmax_row(px + r * n, py + r * n, n, log);
                              }
                              if (stream) kernels::stream_fence();  // streamed stores visible before the op returns
                            });
    });
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t, bool) { return {5 * x.numel(), x.nbytes(), out.nbytes()}; }
  // softmax: dx = y·(g - Σ g·y); log_softmax: dx = g - softmax(x)·Σ g = g - exp(y)·Σ g: both read
  // the output only.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{false}, true}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& x, int64_t dim, bool log) {
    if (log) return {c.grad - exp(c.out) * sum(c.grad, {dim}, true)};
    return {c.out * (c.grad - sum(c.grad * c.out, {dim}, true))};
  }
};

}  // namespace

#if TALLY_PRIMARY_PASS
Tensor softmax(const Tensor& x, int64_t dim) { return ops::apply<Softmax>(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return ops::apply<Softmax>(x, dim, true); }
Tensor Tensor::softmax(int64_t dim) const { return tally::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return tally::log_softmax(*this, dim); }

#endif  // TALLY_PRIMARY_PASS

}  // namespace tally

TALLY_CPU_KERNELS(softmax, &Softmax::kernel)
