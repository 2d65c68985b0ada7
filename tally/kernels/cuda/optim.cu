// The optimizers' fused updates on the GPU (Adam, AdamW, SGD, Adagrad and RMSprop) (Note [Fused update] in tally/optim/fused.h): one pass
// that reads the parameter, its gradient and the state once and writes them once. Every product,
// sum, quotient and root is an explicitly rounded intrinsic (the compiler may not contract them),
// and the fused multiply-adds are the ones the CPU kernel writes as std::fma, so that a step on
// the GPU gives the CPU's values bit for bit. The scalars come rounded by the same constructors as
// the CPU's (tally/kernels/update_scalars.h).

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

/// The gradient with PyTorch's L2 weight decay where `decay` asks for it: g + wd·p, one fma as the CPU's.
template <class T>
__device__ __forceinline__ T with_weight_decay(bool decay, T p, T g, T wd) {
  return decay ? Rn<T>::fma(p, wd, g) : g;
}

template <class T, bool kAmsgrad>
__global__ void __launch_bounds__(kThreads)
adam_kernel(int64_t n, T* p, const T* g, T* m, T* v, T* v_max, optim::AdamConstants<T> c) {
  using R = Rn<T>;
  grid_stride<kThreads>(n, [&](int64_t i) {
    const T pi = c.decoupled ? R::mul(p[i], c.decay) : p[i];
    const T gi = with_weight_decay(c.l2, pi, g[i], c.weight_decay);
    const T mi = R::fma(gi, c.one_minus_beta1, R::mul(m[i], c.beta1));
    const T vi = R::fma(R::mul(c.one_minus_beta2, gi), gi, R::mul(v[i], c.beta2));
    T v_hat = vi;
    if constexpr (kAmsgrad) {
      const T old = v_max[i];
      v_hat = vi != vi || old < vi ? vi : old;  // torch.maximum(old, vi): a NaN vi is kept, as the CPU's update does
      v_max[i] = v_hat;
    }
    p[i] = R::add(pi, R::div(R::mul(c.neg_step_size, mi), R::add(R::div(R::sqrt(v_hat), c.bias_correction2_sqrt), c.eps)));
    m[i] = mi;
    v[i] = vi;
  });
}

template <class T, bool kMomentum>
__global__ void __launch_bounds__(kThreads) sgd_kernel(int64_t n, T* p, const T* g, T* buf, optim::SgdConstants<T> c) {
  using R = Rn<T>;
  grid_stride<kThreads>(n, [&](int64_t i) {
    const T pi = p[i];
    T d = with_weight_decay(c.decay, pi, g[i], c.weight_decay);
    if constexpr (kMomentum) {
      const T b = c.first ? d : R::fma(d, c.one_minus_dampening, R::mul(buf[i], c.momentum));
      buf[i] = b;
      d = c.nesterov ? R::fma(b, c.momentum, d) : b;
    }
    p[i] = R::fma(d, c.neg_lr, pi);
  });
}

template <class T>
__global__ void __launch_bounds__(kThreads) adagrad_kernel(int64_t n, T* p, const T* g, T* sum, optim::AdagradConstants<T> c) {
  using R = Rn<T>;
  grid_stride<kThreads>(n, [&](int64_t i) {
    const T pi = p[i], gi = with_weight_decay(c.decay, pi, g[i], c.weight_decay);
    const T si = R::fma(gi, gi, sum[i]);
    sum[i] = si;
    p[i] = R::add(pi, R::div(R::mul(c.neg_clr, gi), R::add(R::sqrt(si), c.eps)));
  });
}

/// kMomentum: buf (momentum_buffer) is used; kCentered: ga (grad_avg) is.
template <class T, bool kMomentum, bool kCentered>
__global__ void __launch_bounds__(kThreads)
rmsprop_kernel(int64_t n, T* p, const T* g, T* sq, T* buf, T* ga, optim::RmspropConstants<T> c) {
  using R = Rn<T>;
  grid_stride<kThreads>(n, [&](int64_t i) {
    const T pi = p[i], gi = with_weight_decay(c.decay, pi, g[i], c.weight_decay);
    const T si = R::fma(R::mul(c.one_minus_alpha, gi), gi, R::mul(sq[i], c.alpha));
    sq[i] = si;
    T avg;
    if constexpr (kCentered) {
      const T gai = R::fma(gi, c.one_minus_alpha, R::mul(ga[i], c.alpha));
      ga[i] = gai;
      avg = R::add(R::sqrt(R::fma(-gai, gai, si)), c.eps);
    } else {
      avg = R::add(R::sqrt(si), c.eps);
    }
    if constexpr (kMomentum) {
      const T b = R::add(R::mul(buf[i], c.momentum), R::div(gi, avg));
      buf[i] = b;
      p[i] = R::fma(b, c.neg_lr, pi);
    } else {
      p[i] = R::add(pi, R::div(R::mul(c.neg_lr, gi), avg));
    }
  });
}

/// fn(Tag<T>{}, grid) for an update over n elements of float32 or float64 (`dtype`), then the
/// launch's check; nothing for no elements.
template <class Fn>
void launch_update(uint8_t dtype, int64_t n, const char* what, Fn&& fn) {
  if (n <= 0) return;
  dispatch<bit(kFloat32) | bit(kFloat64)>(dtype, what, [&](auto t) {
    fn(t, grid_stride_blocks(n, kThreads));
    LAUNCH_CHECK();
  });
}

}  // namespace

void adam_update(uint8_t dtype, int64_t n, void* p, const void* g, void* m, void* v, void* v_max, const optim::AdamScalars& h) {
  launch_update(dtype, n, "adam_update", [&](auto t, unsigned grid) {
    using T = typename decltype(t)::type;
    const optim::AdamConstants<T> c(h);
    if (v_max)
      adam_kernel<T, true><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m),
                                                static_cast<T*>(v), static_cast<T*>(v_max), c);
    else
      adam_kernel<T, false><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m),
                                                 static_cast<T*>(v), nullptr, c);
  });
}

void sgd_update(uint8_t dtype, int64_t n, void* p, const void* g, void* buf, const optim::SgdScalars& h) {
  launch_update(dtype, n, "sgd_update", [&](auto t, unsigned grid) {
    using T = typename decltype(t)::type;
    const optim::SgdConstants<T> c(h);
    if (buf)
      sgd_kernel<T, true><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buf), c);
    else
      sgd_kernel<T, false><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), nullptr, c);
  });
}

void adagrad_update(uint8_t dtype, int64_t n, void* p, const void* g, void* sum, const optim::AdagradScalars& h) {
  launch_update(dtype, n, "adagrad_update", [&](auto t, unsigned grid) {
    using T = typename decltype(t)::type;
    adagrad_kernel<T><<<grid, kThreads>>>(n, static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(sum),
                                          optim::AdagradConstants<T>(h));
  });
}

void rmsprop_update(uint8_t dtype, int64_t n, void* p, const void* g, void* square_avg, void* buf, void* grad_avg,
                    const optim::RmspropScalars& h) {
  launch_update(dtype, n, "rmsprop_update", [&](auto t, unsigned grid) {
    using T = typename decltype(t)::type;
    const optim::RmspropConstants<T> c(h);
    T *pp = static_cast<T*>(p), *sq = static_cast<T*>(square_avg), *b = static_cast<T*>(buf), *ga = static_cast<T*>(grad_avg);
    const T* gg = static_cast<const T*>(g);
    if (b && ga) rmsprop_kernel<T, true, true><<<grid, kThreads>>>(n, pp, gg, sq, b, ga, c);
    else if (b) rmsprop_kernel<T, true, false><<<grid, kThreads>>>(n, pp, gg, sq, b, nullptr, c);
    else if (ga) rmsprop_kernel<T, false, true><<<grid, kThreads>>>(n, pp, gg, sq, nullptr, ga, c);
    else rmsprop_kernel<T, false, false><<<grid, kThreads>>>(n, pp, gg, sq, nullptr, nullptr, c);
  });
}

}  // namespace tally::kernels::cuda
