#pragma once
// The lecture's model: `num_layers` square linear layers and a final layer to one output, with
// the lecture's own Linear (x·W, W [in, out], N(0, 1/in) at the start, no bias) so that its
// state_dict is the lecture's: layers.0.weight ... final.weight.

#include <memory>

#include "tally/core/generator.h"
#include "tally/core/tensor_options.h"
#include "tally/nn/container.h"

namespace tally::nn {

/// The lecture's linear layer: y = x·W with W [input_dim, output_dim] drawn N(0, 1) / √input_dim,
/// which keeps the output O(1) whatever the width (Xavier's point).
class LectureLinear : public Layer {
 public:
  LectureLinear(int64_t input_dim, int64_t output_dim, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  Tensor weight;
};

/// [B, D] → [B]: the layers, the final head, then the last dim squeezed.
class Cruncher : public Layer {
 public:
  Cruncher(int64_t dim, int64_t num_layers, TensorOptions options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LectureLinear> final;
};

}  // namespace tally::nn
