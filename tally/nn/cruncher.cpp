#include "tally/nn/cruncher.h"

#include <cmath>

#include "tally/ops/elementwise.h"
#include "tally/ops/matmul.h"
#include "tally/ops/random.h"

namespace tally::nn {

LectureLinear::LectureLinear(int64_t input_dim, int64_t output_dim, TensorOptions options, Generator* gen) : Layer("Linear") {
  TALLY_CHECK(input_dim > 0 && output_dim > 0, "Linear: input_dim (", input_dim, ") and output_dim (", output_dim,
              ") must be positive");
  weight = register_parameter("weight", randn({input_dim, output_dim}, options, gen) / std::sqrt(static_cast<double>(input_dim)));
}

Tensor LectureLinear::forward(const Tensor& x) {
  auto s = scope();
  return matmul(x, weight);
}

Cruncher::Cruncher(int64_t dim, int64_t num_layers, TensorOptions options, Generator* gen) : Layer("Cruncher") {
  TALLY_CHECK(num_layers >= 0, "Cruncher: num_layers must be >= 0, got ", num_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(std::make_shared<LectureLinear>(dim, dim, options, gen));
  final = register_module("final", std::make_shared<LectureLinear>(dim, 1, options, gen));
}

Tensor Cruncher::forward(const Tensor& x) {
  auto s = scope();
  TALLY_CHECK(x.dim() == 2, "Cruncher: expected input [B, D], got ", x.sizes());
  Tensor y = x;
  for (const auto& layer : *layers) y = std::static_pointer_cast<LectureLinear>(layer)->forward(y);
  return final->forward(y).squeeze(-1);
}

}  // namespace tally::nn
