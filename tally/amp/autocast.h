#pragma once
// Automatic mixed precision, torch.autocast for tally:
//
//   {
//     amp::AutocastGuard autocast(kBFloat16);   // forward only, as in PyTorch
//     loss = model.loss(x, y);
//   }
//   loss.backward();                            // gradients come back in each parameter's float32
//
// While a guard lives on a thread, each top-level op (or composite: linear, einsum, mse_loss,
// scaled_dot_product_attention) named in the table below runs with its floating inputs cast
// first: matmul-class ops to the guard's low precision, the numerically touchy ones (softmax,
// norms, losses, reductions) to float32. Ops not in the table run on what they are given, with the usual type promotion.
// Each cast is an ordinary op (on the ledger, differentiable: its backward casts the gradient
// back), so parameters stay float32 master weights and receive float32 gradients. The cast of a
// float32 leaf that requires grad (a weight) is cached for the guard's life, so a weight used
// twice in a forward is converted once; those copies count as working copies in the memory
// tracker. A cached copy is made again when its weight has been written since (an optimizer step
// inside the guard), and when it was made without gradient mode and is asked for with it (a
// metric under NoGradGuard would otherwise take the weights' gradients away from the next
// forward). Backward runs without casts (its rules keep each gradient in its tensor's dtype).
//
// The table follows PyTorch's autocast lists: the lower-precision list is PyTorch 1.13's CPU one
// (matmul, mm, bmm, linear, einsum via matmul), with scaled_dot_product_attention from PyTorch
// 2's (whose softmax runs in float32 inside the op, as tally's does); the float32 list is the
// issue's plan — softmax, norms, losses and reductions in float32 — which is PyTorch's CUDA list,
// where PyTorch 1.13's CPU autocast leaves softmax, layer_norm and sum in their input's dtype.

#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tally/core/tensor.h"
#include "tally/ops/apply.h"

namespace tally::amp {

/// What autocast does to an op's floating inputs (PyTorch's cast policies).
enum class CastPolicy : uint8_t {
  LowerPrecision,  ///< cast float32 inputs to the guard's dtype
  Float32,         ///< cast bfloat16 and float16 inputs to float32
};

/// The table's policy for an op or composite, by its ledger name; nullopt: not in the table.
std::optional<CastPolicy> autocast_policy(std::string_view op);
/// The table's names with `policy`, in the table's order.
std::vector<std::string_view> autocast_ops(CastPolicy policy);

/// The low precision of the calling thread's innermost enabled AutocastGuard, if any.
std::optional<Dtype> autocast_dtype();

/// Turns autocast on for the calling thread for the guard's life (nested guards stack; a guard
/// with enabled = false turns it off inside another's region, as torch.autocast(enabled=False)).
class AutocastGuard final : public ops::AutocastHook {
 public:
  /// TypeError unless `dtype` is bfloat16 or float16.
  explicit AutocastGuard(Dtype dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard() override;
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

  Dtype dtype() const { return dtype_; }
  /// Weights whose low-precision copy the guard holds.
  int64_t cached_casts() const { return static_cast<int64_t>(cache_.size()); }

  std::optional<Dtype> input_dtype(std::string_view op, std::span<const Tensor* const> inputs) override;
  Tensor cast(const Tensor& t, Dtype dtype) override;

 private:
  Dtype dtype_;
  ops::AutocastHook* previous_;
  struct Cached {
    Tensor source;  ///< held so that its address cannot be reused by another tensor while cached
    Tensor cast;
    uint64_t version = 0;    ///< the source's storage version when cast
    bool with_grad = false;  ///< made in gradient mode, so the copy carries the weight's history
    const StorageImpl* storage = nullptr;  ///< and its storage and layout: set_data swaps them, keeping the version
    int64_t storage_offset = 0;
    DimVector sizes, strides;
  };
  std::unordered_map<const void*, Cached> cache_;
};

}  // namespace tally::amp
