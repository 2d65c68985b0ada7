#pragma once
// Adam and AdamW: PyTorch 1.13's torch.optim.Adam (L2 weight decay added to the gradient) and
// torch.optim.AdamW (weight decay applied to the parameter, decoupled from the gradient), with
// AMSGrad, run as one fused pass per parameter (Note [Fused update]). They differ in that one
// line and in AdamW's default weight decay, so they are one template: Adam = AdamFamily<false>,
// AdamW = AdamFamily<true>.

#include <tuple>

#include "tally/optim/optimizer.h"

namespace tally::optim {

/// Adam's (kDecoupled false) or AdamW's (true) hyper-parameters, PyTorch's defaults (AdamW's
/// weight decay 1e-2, Adam's 0): `AdamWOptions(3e-4).betas({0.9, 0.95}).weight_decay(0.1)`.
template <bool kDecoupled>
class AdamFamilyOptions : public OptimizerCloneableOptions<AdamFamilyOptions<kDecoupled>> {
 public:
  /// (β1, β2): the decay rates of the first and second moment averages.
  using Betas = std::tuple<double, double>;
  explicit AdamFamilyOptions(double lr = 1e-3) : lr_(lr) {}
  TALLY_OPTIM_ARG(double, lr);
  TALLY_OPTIM_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  TALLY_OPTIM_ARG(double, eps) = 1e-8;
  TALLY_OPTIM_ARG(double, weight_decay) = kDecoupled ? 1e-2 : 0.0;
  TALLY_OPTIM_ARG(bool, amsgrad) = false;

 public:
  Hypers hypers() override;
  void validate() const override;
};

/// torch.optim.Adam's options.
using AdamOptions = AdamFamilyOptions<false>;
/// torch.optim.AdamW's options.
using AdamWOptions = AdamFamilyOptions<true>;

/// Adam or AdamW; state `exp_avg`, `exp_avg_sq`, and `max_exp_avg_sq` with AMSGrad: 2 (or 3)
/// tensors of the parameter's size, the lecture's 4 + 4 bytes per float32 parameter. Ledger row
/// `adam_step` or `adamw_step`.
template <bool kDecoupled>
class AdamFamily : public OptimizerOf<AdamFamilyOptions<kDecoupled>> {
 public:
  using OptimizerOf<AdamFamilyOptions<kDecoupled>>::OptimizerOf;

 protected:
  std::string_view step_name() const override { return kDecoupled ? "adamw_step" : "adam_step"; }
  std::vector<std::pair<std::string, double>> state_init(const OptimizerOptions& options) const override;
  ops::Cost update(Tensor& param, const Tensor& grad, OptimizerParamState& state, const OptimizerOptions& options) override;
};

/// torch.optim.Adam.
using Adam = AdamFamily<false>;
/// torch.optim.AdamW.
using AdamW = AdamFamily<true>;

extern template class AdamFamilyOptions<false>;
extern template class AdamFamilyOptions<true>;
extern template class AdamFamily<false>;
extern template class AdamFamily<true>;

}  // namespace tally::optim
