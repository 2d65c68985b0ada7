#pragma once
// The one-pass update every optimizer here runs (internal to tally/optim).
//
// Note [Fused update]
// PyTorch's single-tensor optimizers update a parameter with a chain of in-place ops (AdamW:
// mul_, mul_, add_, mul_, addcmul_, sqrt, div, add_, addcdiv_), each one a pass over memory. Here
// one loop reads p, g and each state element once, does the whole formula in registers, and
// writes p and the state once: an optimizer step is memory-bound, so passes, not FLOPs, set its
// time. The loop is split over the cores (parallel_for) and its body is plain arithmetic on
// contiguous arrays, which the compiler vectorises. The arithmetic follows PyTorch's op order
// and rounding (each hyper-parameter term is computed in double on the host and rounded to the
// parameter's dtype, as PyTorch's scalar arguments are), and so does its rounding: where PyTorch
// rounds a product before adding (a mul_ pass, then an add_ pass) the kernel files forbid the
// compiler to contract the two into one fused multiply-add (#pragma GCC optimize
// "fp-contract=off" at their top: no -ffp-contract per file without touching the build), and
// where PyTorch's vector kernels do fuse (add with alpha, addcmul) they call std::fma. The float32
// results then equal PyTorch 1.13's bit for bit in the tests, up to the ulp its scalar tail loops
// may differ by.
// float32, float64 and bfloat16; a parameter or gradient that is not contiguous is updated through
// a contiguous copy, which the ledger row does not count.
//
// Note [Stochastic rounding]
// A bfloat16 parameter (low-precision training without float32 master weights) keeps its state
// in float32; the update runs in float32 and is written back rounded stochastically: up with
// probability equal to the fraction of the way to the next bfloat16, so that the rounding is
// unbiased and updates smaller than half a bfloat16 step still move the parameter on average
// (rounding to nearest would drop them every time). The random bits are a hash of a key (the
// parameter's index in the optimizer and its step count) and the element's index: a step is
// reproducible, the same on any thread count, and a resumed run continues bit for bit.

#include <array>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tally/core/tensor.h"
#include "tally/dtype/half.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/cost.h"
#include "tally/optim/optimizer.h"

namespace tally::optim::detail {

/// One fused update's arrays, their dtype erased, as the primary pass hands them to a kernel built
/// for each CPU target (Note [CPU kernel dispatch]): the parameter, its gradient and up to three
/// state tensors, all contiguous, n elements each.
struct FusedArrays {
  Dtype dtype;  ///< of p and g; the state is float32 for a bfloat16 parameter
  int64_t n;
  void* p;
  const void* g;
  std::array<void*, 3> state;
  uint64_t rounding_key = 0;  ///< bfloat16: seeds the stochastic rounding (Note [Stochastic rounding])
};

/// The key of one parameter's update: its index among the optimizer's parameters and its step.
inline uint64_t rounding_key(uint64_t param_index, int64_t step) {
  uint64_t z = param_index * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step) * 0xD1B54A32D192ED03ull + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target
/// `x` rounded to bfloat16 bits stochastically with 16 random bits from (key, i): the bits below
/// bfloat16's mantissa decide, with their weight, whether it rounds up; a NaN stays a quiet NaN.
inline uint16_t stochastic_round_bf16(float x, uint64_t key, int64_t i) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint64_t h = key ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
  h = (h ^ (h >> 33)) * 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  // Adding r in [0, 2^16) carries into the kept bits with probability (low bits) / 2^16; an
  // infinity's low bits are 0, so it stays an infinity.
  bits += static_cast<uint32_t>(h & 0xFFFFu);
  return static_cast<uint16_t>(bits >> 16);
}

/// Calls f(p[i], g[i], s[i]...) for every i in [0, n), split over the cores.
template <class T, class F, class... S>
void for_each_element(int64_t n, const F& f, T* p, const T* g, S*... s) {
  kernels::parallel_for(n, kernels::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const F update = f;  // a local copy: its hyper-parameters provably stay put while p and s are written
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) update(p[i], g[i], s[i]...);
  });
}

/// The body of an optimizer's kernel: runs the update `make.template operator()<T>()` returns (a
/// callable on (p, g, states...) elements of type T) over the first kStates state arrays, with T
/// float or double as the arrays are.
template <size_t kStates, class Make>
void run_fused(const Make& make, const FusedArrays& a) {
  auto run = [&]<class T>() {
    [&]<size_t... I>(std::index_sequence<I...>) {
      for_each_element<T>(a.n, make.template operator()<T>(), static_cast<T*>(a.p), static_cast<const T*>(a.g),
                          static_cast<T*>(a.state[I])...);
    }(std::make_index_sequence<kStates>{});
  };
  if (a.dtype == kBFloat16) {
    // Note [Stochastic rounding]: the update in float32 on the widened parameter and gradient,
    // against float32 state.
    const auto update = make.template operator()<float>();
    auto* p = static_cast<uint16_t*>(a.p);
    const auto* g = static_cast<const uint16_t*>(a.g);
    [&]<size_t... I>(std::index_sequence<I...>) {
      kernels::parallel_for(a.n, kernels::kElementwiseGrain, [&](int64_t begin, int64_t end) {
        const auto u = update;
        for (int64_t i = begin; i < end; ++i) {
          float pv = ::tally::detail::bfloat16_bits_to_float(p[i]);
          u(pv, ::tally::detail::bfloat16_bits_to_float(g[i]), static_cast<float*>(a.state[I])[i]...);
          p[i] = stochastic_round_bf16(pv, a.rounding_key, i);
        }
      });
    }(std::make_index_sequence<kStates>{});
  } else if (a.dtype == kFloat32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

}  // namespace TALLY_CPU_TARGET

/// The dtype of an optimizer's state for a parameter of `param` dtype: float32 for bfloat16
/// (Note [Stochastic rounding]), else the parameter's.
inline Dtype state_dtype(Dtype param) { return param == kBFloat16 ? kFloat32 : param; }
/// Raises unless `param` and `grad` can go through the fused update of optimizer `op`; on a GPU
/// only where the optimizer has a CUDA kernel.
void check_fusable(std::string_view op, const Tensor& param, const Tensor& grad, bool has_cuda_kernel);

/// Writes `updated` back into `param` when the update ran on a copy.
void finish_update(const Tensor& param, const Tensor& updated);

/// fused_update's CUDA kernel for an optimizer that has none: a parameter on a GPU is refused.
struct NoCudaKernel {};

/// Checks `param` and `grad`, then runs the optimizer's kernel once over them and the state
/// tensors `names` of `state` (contiguous, as the optimizer made them), with its rounding key,
/// on a contiguous copy of the parameter where it is not (Note [Fused update]): `kernel(arrays)`
/// on the CPU (through its file's cpu_kernels()), `cuda_kernel(arrays)` for a parameter on a GPU.
template <class Kernel, class CudaKernel = NoCudaKernel>
void fused_update(std::string_view op, const Tensor& param, const Tensor& grad, const OptimizerParamState& state,
                  std::initializer_list<const char*> names, const Kernel& kernel, const CudaKernel& cuda_kernel = {}) {
  constexpr bool has_cuda_kernel = !std::is_same_v<CudaKernel, NoCudaKernel>;
  check_fusable(op, param, grad, has_cuda_kernel);
  if (param.device().is_meta() || param.numel() == 0) return;  // a meta run counts, computes nothing
  const Tensor p = param.contiguous(), g = grad.contiguous();
  FusedArrays arrays{param.dtype(), p.numel(), p.data_ptr(), g.data_ptr(), {}, state.rounding_key};
  size_t i = 0;
  for (const char* name : names) arrays.state.at(i++) = state.tensors.at(name).data_ptr();
  if constexpr (has_cuda_kernel) {
    if (param.is_cuda()) cuda_kernel(arrays);
    else kernel(arrays);
  } else {
    kernel(arrays);
  }
  finish_update(param, p);
}

/// The ledger cost of one fused update of `param`: `flops` per element; `reads` whole-tensor
/// passes read (the parameter, its gradient, then state tensors) and `writes` written (the
/// parameter, then state tensors), the state in state_dtype's size.
inline ops::Cost fused_cost(const Tensor& param, int64_t flops, int64_t reads, int64_t writes) {
  const int64_t n = param.numel(), p = param.element_size(), s = element_size(state_dtype(param.dtype()));
  return {flops * n, n * (2 * p + (reads - 2) * s), n * (p + (writes - 1) * s)};
}

}  // namespace tally::optim::detail
