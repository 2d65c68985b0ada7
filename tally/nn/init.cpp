#include "tally/nn/init.h"

#include <cctype>
#include <cmath>
#include <string>

#include "tally/core/autograd_meta.h"

namespace tally::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  TALLY_CHECK(t.dim() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got shape ",
              t.sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  for (std::string_view identity : {"linear", "sigmoid", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"})
    if (nonlinearity == identity) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  throw ValueError(detail::str_cat("Unsupported nonlinearity ", nonlinearity));
}

Tensor& constant_(Tensor& t, double value) {
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

namespace {
/// fan_in + fan_out, which Xavier's bounds divide by: torch divides by zero there.
double xavier_fans(const Tensor& t, const char* op) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  TALLY_CHECK(fan_in + fan_out > 0, op, ": fan_in + fan_out is 0 for a tensor of shape ", t.sizes(), ", so there is no bound to draw within");
  return static_cast<double>(fan_in + fan_out);
}
}  // namespace

Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  const double a = gain * std::sqrt(6.0 / xavier_fans(t, "xavier_uniform_"));
  return uniform_(t, -a, a, gen);
}

Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  return normal_(t, 0.0, gain * std::sqrt(2.0 / xavier_fans(t, "xavier_normal_")), gen);
}

namespace {
double kaiming_std(const Tensor& t, double a, std::string_view mode_name, std::string_view nonlinearity) {
  std::string mode(mode_name);  // any case, as torch lowers it
  for (char& c : mode) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  TALLY_CHECK(mode == "fan_in" || mode == "fan_out", "Mode ", mode_name, " not supported, please use one of fan_in, fan_out");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  TALLY_CHECK(fan > 0, "Initializing zero-element tensors is a no-op");
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

// A tensor of no elements has nothing to initialise: PyTorch returns it as it is (with a warning).
Tensor& kaiming_uniform_(Tensor& t, double a, std::string_view mode, std::string_view nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& t, double a, std::string_view mode, std::string_view nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;
  return normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), gen);
}

}  // namespace tally::nn::init
