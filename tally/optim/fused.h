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
// float32 and float64 only; a parameter or gradient that is not contiguous is updated through a
// contiguous copy, which the ledger row does not count.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "tally/core/tensor.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/cost.h"

namespace tally::optim::detail {

/// One fused update's arrays, their dtype erased, as the primary pass hands them to a kernel built
/// for each CPU target (Note [CPU kernel dispatch]): the parameter, its gradient and up to three
/// state tensors, all contiguous, n elements each.
struct FusedArrays {
  Dtype dtype;
  int64_t n;
  void* p;
  const void* g;
  std::array<void*, 3> state;
};

inline namespace TALLY_CPU_TARGET {  // Note [CPU kernel dispatch]: one copy per target

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
  if (a.dtype == kFloat32) run.template operator()<float>();
  else run.template operator()<double>();
}

}  // namespace TALLY_CPU_TARGET

/// Raises unless `param` and `grad` can go through the fused update of optimizer `op`.
void check_fusable(std::string_view op, const Tensor& param, const Tensor& grad);

/// Writes `updated` back into `param` when the update ran on a copy.
void finish_update(const Tensor& param, const Tensor& updated);

/// Checks `param` and `grad`, then calls `kernel(arrays)` once over them and `states` (contiguous,
/// as the optimizer made them), on a contiguous copy of the parameter where it is not (Note
/// [Fused update]). `kernel` runs the optimizer's kernel through its file's cpu_kernels().
template <class Kernel>
void fused_update(std::string_view op, const Tensor& param, const Tensor& grad, std::initializer_list<Tensor> states,
                  const Kernel& kernel) {
  check_fusable(op, param, grad);
  if (param.device().is_meta() || param.numel() == 0) return;  // a meta run counts, computes nothing
  const Tensor p = param.contiguous(), g = grad.contiguous();
  FusedArrays arrays{param.dtype(), p.numel(), p.data_ptr(), g.data_ptr(), {}};
  size_t i = 0;
  for (const Tensor& s : states) arrays.state.at(i++) = s.data_ptr();
  kernel(arrays);
  finish_update(param, p);
}

/// The ledger cost of one fused update over `numel` elements of `element_size` bytes: `flops`
/// per element, `reads` and `writes` whole-tensor passes.
inline ops::Cost fused_cost(int64_t numel, int64_t element_size, int64_t flops, int64_t reads, int64_t writes) {
  return {flops * numel, reads * numel * element_size, writes * numel * element_size};
}

}  // namespace tally::optim::detail
