#include "tally/nn/sampling.h"

#include <cmath>
#include <limits>

#include "tally/core/autograd_meta.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/gather.h"
#include "tally/ops/reduce.h"
#include "tally/ops/softmax.h"
#include "tally/ops/sort.h"

namespace tally::nn {

void SamplingOptions::validate() const {
  TALLY_CHECK(std::isfinite(temperature) && temperature >= 0, "sampling: temperature must be 0 (greedy) or positive, got ", temperature);
  TALLY_CHECK(top_k >= 0, "sampling: top_k must be 0 (all tokens) or positive, got ", top_k);
  TALLY_CHECK(top_p > 0 && top_p <= 1, "sampling: top_p must be in (0, 1], got ", top_p);
}

Tensor sample_next_token(const Tensor& logits, const SamplingOptions& options, Generator* gen) {
  options.validate();
  TALLY_CHECK(logits.dim() == 2 && logits.size(1) > 0, "sample_next_token: expected logits [b, V], got ", logits.sizes());
  NoGradGuard no_grad;
  if (options.temperature == 0) return logits.argmax(-1, /*keepdim=*/true);
  const double minus_inf = -std::numeric_limits<double>::infinity();
  Tensor l = logits.to(kFloat32) / options.temperature;
  const int64_t V = l.size(1);
  if (options.top_k > 0 && options.top_k < V) {
    // Below the k-th largest logit: out. Ties with it stay, as in nanoGPT.
    const Tensor kth = std::get<0>(l.topk(options.top_k)).narrow(1, options.top_k - 1, 1);
    l = l.masked_fill(l < kth, minus_inf);
  }
  if (options.top_p < 1) {
    // In descending order, a token is out when the tokens before it already reach top_p.
    auto [sorted, order] = l.sort(-1, /*descending=*/true);
    Tensor probs = softmax(sorted, -1).contiguous();
    Tensor out = zeros(probs.sizes(), TensorOptions(kBool));
    const float* p = probs.data_ptr<float>();
    bool* o = out.data_ptr<bool>();
    for (int64_t r = 0; r < probs.size(0); ++r) {
      double before = 0;
      for (int64_t i = 0; i < V; ++i) {
        o[r * V + i] = i > 0 && before >= options.top_p;
        before += p[r * V + i];
      }
    }
    l = l.scatter(1, order, sorted.masked_fill(out, minus_inf));
  }
  return multinomial(softmax(l, -1), 1, /*replacement=*/true, gen);
}

}  // namespace tally::nn
