#include "tally/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "tally/autograd/engine.h"
#include "tally/core/autograd_meta.h"
#include "tally/ops/creation.h"
#include "tally/ops/join.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/random.h"
#include "tally/ops/reduce.h"

namespace tally::autograd {

namespace {

/// Storage offsets (in elements) of every element of t, in row-major order of its indices.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offsets;
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.stride(d);
    offsets.push_back(off);
    for (int64_t d = t.dim() - 1; d >= 0 && ++idx[d] == t.size(d); --d) idx[d] = 0;
  }
  return offsets;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs, double eps,
                          double atol, double rtol) {
  for (const Tensor& x : inputs) {
    TALLY_CHECK_TYPE_ERROR(!x.requires_grad() || x.dtype() == kFloat64, "gradcheck: inputs requiring grad must be float64, got ",
                           dtype_name(x.dtype()));
  }
  Generator gen(1234);
  Tensor probe = fn(inputs);
  const Tensor weights = randn(probe.sizes(), kFloat64, &gen);
  auto loss_of = [&](const TensorList& in) { return sum(fn(in).to(kFloat64) * weights); };

  // Analytic: one backward of the weighted sum.
  for (const Tensor& x : inputs) {
    if (x.requires_grad()) Tensor(x).set_grad(Tensor());
  }
  // An output that does not depend on the inputs (a linear op's gradient, in gradgradcheck) has
  // a gradient of zero, which the numeric side must show too.
  if (Tensor loss = loss_of(inputs); loss.requires_grad()) loss.backward();

  GradcheckResult result;
  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    const Tensor analytic = x.grad().defined() ? x.grad().contiguous() : Tensor();
    double* storage = static_cast<double*>(x.storage()->data());
    const auto offsets = element_offsets(x);
    for (size_t i = 0; i < offsets.size(); ++i) {
      double& v = storage[offsets[i]];
      const double saved = v;
      v = saved + eps;
      const double up = loss_of(inputs).item<double>();
      v = saved - eps;
      const double down = loss_of(inputs).item<double>();
      v = saved;
      const double numeric = (up - down) / (2 * eps);
      const double got = analytic.defined() ? analytic.data_ptr<double>()[i] : 0.0;
      const double err = std::abs(got - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= atol + rtol * std::abs(numeric)) && result.ok) {
        result.ok = false;
        std::ostringstream os;
        os << "input " << k << " (sizes " << x.sizes() << ", strides " << x.strides() << ") element " << i
           << ": analytic " << got << " vs numeric " << numeric;
        result.message = os.str();
      }
    }
  }
  return result;
}

GradcheckResult gradgradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs, double eps, double atol,
                              double rtol) {
  Generator gen(4321);
  const Tensor weights = randn(fn(inputs).sizes(), kFloat64, &gen);
  // The first gradients, flattened into one tensor; built with grad mode on, since gradcheck's
  // numeric side runs under no_grad.
  auto first_gradients = [&](const TensorList& in) {
    AutoGradMode on(true);
    TensorList wrt;
    for (const Tensor& x : in)
      if (x.requires_grad()) wrt.push_back(x);
    const Tensor y = fn(in);
    TensorList parts;
    if (y.requires_grad()) {
      const TensorList g = grad({y}, wrt, {weights.to(y.dtype())}, std::nullopt, /*create_graph=*/true, /*allow_unused=*/true);
      for (size_t i = 0; i < wrt.size(); ++i) parts.push_back(g[i].defined() ? g[i].reshape({-1}) : zeros({wrt[i].numel()}, kFloat64));
    }
    return parts.empty() ? zeros({0}, kFloat64) : cat(parts);
  };
  return gradcheck(first_gradients, inputs, eps, atol, rtol);
}

}  // namespace tally::autograd
