// The optimizers' fused updates on the GPU (Adam, AdamW and SGD) (Note [Fused update] in tally/optim/fused.h): one pass
// that reads the parameter, its gradient and the state once and writes them once. Every product,
// sum, quotient and root is an explicitly rounded intrinsic (the compiler may not contract them),
// and the fused multiply-adds are the ones the CPU kernel writes as std::fma, so that a step on
// the GPU gives the CPU's values bit for bit.

#include <algorithm>

#include "tally/kernels/cuda/dtypes.cuh"
#include "tally/kernels/cuda/kernels.h"

namespace tally::kernels::cuda {

namespace {

using namespace dev;

constexpr int kThreads = 256;

/// Correctly rounded arithmetic, never contracted.
template <class T> struct Rn;
template <> struct Rn<float> {
  static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
  static __device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
};
template <> struct Rn<double> {
  static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
  static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
  static __device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
  static __device__ __forceinline__ double sqrt(double a) { return __dsqrt_rn(a); }
  static __device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
};

/// The step's scalars rounded to T, as the CPU kernel rounds them.
template <class T>
struct AdamConsts {
  T decay, wd, beta1, beta2, one_minus_beta1, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
  bool l2, decoupled;
};

template <class T, bool kAmsgrad>
__global__ void __launch_bounds__(kThreads)
adam_kernel(int64_t n, T* p, const T* g, T* m, T* v, T* v_max, AdamConsts<T> c) {
  using R = Rn<T>;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    T pi = p[i], gi = g[i];
    if (c.decoupled) pi = R::mul(pi, c.decay);
    if (c.l2) gi = R::fma(pi, c.wd, gi);
    const T mi = R::fma(gi, c.one_minus_beta1, R::mul(m[i], c.beta1));
    const T vi = R::fma(R::mul(c.one_minus_beta2, gi), gi, R::mul(v[i], c.beta2));
    T v_hat = vi;
    if constexpr (kAmsgrad) {
      const T old = v_max[i];
      v_hat = old < vi ? vi : old;  // std::max(old, vi)
      v_max[i] = v_hat;
    }
    p[i] = R::add(pi, R::div(R::mul(c.neg_step_size, mi), R::add(R::div(R::sqrt(v_hat), c.bc2_sqrt), c.eps)));
    m[i] = mi;
    v[i] = vi;
  }
}

/// The step's scalars rounded to T, as the CPU kernel rounds them.
template <class T>
struct SgdConsts {
  T wd, momentum, one_minus_dampening, neg_lr;
  bool decay, nesterov, first;
};

template <class T, bool kMomentum>
__global__ void __launch_bounds__(kThreads) sgd_kernel(int64_t n, T* p, const T* g, T* buf, SgdConsts<T> c) {
  using R = Rn<T>;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    const T pi = p[i];
    T d = c.decay ? R::fma(pi, c.wd, g[i]) : g[i];
    if constexpr (kMomentum) {
      const T b = c.first ? d : R::fma(d, c.one_minus_dampening, R::mul(buf[i], c.momentum));
      buf[i] = b;
      d = c.nesterov ? R::fma(b, c.momentum, d) : b;
    }
    p[i] = R::fma(d, c.neg_lr, pi);
  }
}

int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>(ceil_div(n, kThreads), int64_t{sm_count()} * 16)); }

}  // namespace

void adam_update(uint8_t dtype, int64_t n, void* p, const void* g, void* m, void* v, void* v_max, const optim::AdamScalars& h) {
  if (n <= 0) return;
  dispatch<bit(kFloat32) | bit(kFloat64)>(dtype, "adam_update", [&](auto t) {
    using T = typename decltype(t)::type;
    const AdamConsts<T> c{T(h.decay), T(h.weight_decay), T(h.beta1), T(h.beta2), T(1 - h.beta1), T(1 - h.beta2),
                          T(h.bias_correction2_sqrt), T(h.eps), T(h.neg_step_size), h.l2, h.decoupled};
    const int grid = grid_for(n);
    if (v_max)
      adam_kernel<T, true><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m),
                                                static_cast<T*>(v), static_cast<T*>(v_max), c);
    else
      adam_kernel<T, false><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m),
                                                 static_cast<T*>(v), nullptr, c);
    LAUNCH_CHECK();
  });
}

void sgd_update(uint8_t dtype, int64_t n, void* p, const void* g, void* buf, const optim::SgdScalars& h) {
  if (n <= 0) return;
  dispatch<bit(kFloat32) | bit(kFloat64)>(dtype, "sgd_update", [&](auto t) {
    using T = typename decltype(t)::type;
    const SgdConsts<T> c{T(h.weight_decay), T(h.momentum), T(1.0 - h.dampening), T(-h.lr), h.decay, h.nesterov, h.first};
    if (buf)
      sgd_kernel<T, true><<<grid_for(n), kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buf), c);
    else
      sgd_kernel<T, false><<<grid_for(n), kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), nullptr, c);
    LAUNCH_CHECK();
  });
}

}  // namespace tally::kernels::cuda
