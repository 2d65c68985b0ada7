#include "tally/amp/autocast.h"

#include <array>
#include <utility>

#include "tally/accounting/memory_tracker.h"
#include "tally/core/autograd_meta.h"
#include "tally/error/error.h"

namespace tally::amp {

namespace {

// The table (Note in autocast.h). Names are those the ledger shows: ops, and the composites that
// ask for themselves with ops::AutocastRegion.
constexpr std::array<std::pair<std::string_view, CastPolicy>, 19> kTable{{
    {"matmul", CastPolicy::LowerPrecision},   // mm, bmm
    {"addmm", CastPolicy::LowerPrecision},
    {"linear", CastPolicy::LowerPrecision},   // x·Wᵀ + b: the bias joins in the low precision
    {"einsum", CastPolicy::LowerPrecision},
    // Attention as one operation, as in PyTorch 2's lists: its products in the low precision and
    // its softmax computed in float32 inside the row pass, its probabilities rounded once.
    {"scaled_dot_product_attention", CastPolicy::LowerPrecision},
    {"softmax", CastPolicy::Float32},
    {"layer_norm", CastPolicy::Float32},
    {"rms_norm", CastPolicy::Float32},
    {"cross_entropy", CastPolicy::Float32},
    {"mse_loss", CastPolicy::Float32},
    {"nll_loss", CastPolicy::Float32},
    {"binary_cross_entropy", CastPolicy::Float32},
    {"binary_cross_entropy_with_logits", CastPolicy::Float32},
    {"sum", CastPolicy::Float32},              // and mean, which is a sum scaled
    {"prod", CastPolicy::Float32},
    {"exp", CastPolicy::Float32},
    {"log", CastPolicy::Float32},
    {"pow", CastPolicy::Float32},
    {"softplus", CastPolicy::Float32},
}};

/// The dtypes autocast converts; float64 and the float8 formats are left as they are, as in PyTorch.
bool castable(Dtype d) { return d == kFloat32 || d == kBFloat16 || d == kFloat16; }

}  // namespace

std::optional<CastPolicy> autocast_policy(std::string_view op) {
  for (const auto& [name, policy] : kTable)
    if (name == op) return policy;
  return std::nullopt;
}

std::vector<std::string_view> autocast_ops(CastPolicy policy) {
  std::vector<std::string_view> names;
  for (const auto& [name, p] : kTable)
    if (p == policy) names.push_back(name);
  return names;
}

std::optional<Dtype> autocast_dtype() {
  // The hook in place is the innermost guard's (a disabled one removes it).
  if (const auto* guard = dynamic_cast<const AutocastGuard*>(ops::detail::tls_autocast)) return guard->dtype();
  return std::nullopt;
}

AutocastGuard::AutocastGuard(Dtype dtype, bool enabled) : dtype_(dtype) {
  TALLY_CHECK_TYPE_ERROR(dtype == kBFloat16 || dtype == kFloat16, "AutocastGuard: the low precision must be bfloat16 or float16, got ",
                         dtype_name(dtype));
  previous_ = ops::set_autocast_hook(enabled ? this : nullptr);
}

AutocastGuard::~AutocastGuard() { ops::set_autocast_hook(previous_); }

std::optional<Dtype> AutocastGuard::input_dtype(std::string_view op, std::span<const Tensor* const>) {
  if (autograd::in_backward()) return std::nullopt;  // gradients stay in their tensors' dtypes
  const std::optional<CastPolicy> policy = autocast_policy(op);
  if (!policy) return std::nullopt;
  return *policy == CastPolicy::LowerPrecision ? dtype_ : kFloat32;
}

Tensor AutocastGuard::cast(const Tensor& t, Dtype dtype) {
  if (!castable(t.dtype())) return t;
  const bool weight = dtype == dtype_ && t.dtype() == kFloat32 && t.is_leaf() && t.requires_grad();
  if (!weight) return t.to(dtype);
  auto [it, fresh] = cache_.try_emplace(&t.impl());
  const uint64_t version = ops::detail::version_of(t);
  const bool grad_mode = GradMode::is_enabled();
  const Cached& c = it->second;
  const bool moved = c.storage != t.storage().get() || c.storage_offset != t.storage_offset() || IntArrayRef(c.sizes) != t.sizes() ||
                     IntArrayRef(c.strides) != t.strides();
  const bool stale = !fresh && (c.version != version || moved || (grad_mode && !c.with_grad));
  if (fresh || stale) {
    it->second = {t, t.to(dtype), version, grad_mode, t.storage().get(), t.storage_offset(), DimVector(t.sizes()), DimVector(t.strides())};
    if (it->second.cast.storage()) accounting::set_memory_category(it->second.cast, MemoryCategory::WorkingCopies);
  }
  return it->second.cast;
}

}  // namespace tally::amp
