// The small GPT's activations — the tensors its graph keeps for backward — written out from its
// shapes, against the memory tracker byte for byte.

#include <gtest/gtest.h>

#include "tally/tally.h"

namespace tally {
namespace {

TEST(TransformerActivations, EqualTheFormulaFromTheShapes) {
  // GPT-2 style by default: learned positions, LayerNorm, a GELU MLP of 4·d, biases, a tied head.
  const nn::TransformerConfig c{.vocab_size = 64, .context_length = 16, .d_model = 32, .num_layers = 2, .num_heads = 4};
  const int64_t b = 3, T = 16, d = 32, L = 2, V = 64, N = b * T;
  Generator gen(1);
  nn::TransformerLM model(c, {}, &gen);
  Tensor ids = randint(V, {b, T}, TensorOptions(kInt64), &gen), targets = randint(V, {b, T}, TensorOptions(kInt64), &gen);
  accounting::MemoryTracker tracker;
  Tensor loss = model.loss(ids, targets);

  // What each rule reads (Note [Saved tensors] in ops/apply.h), in float32 elements:
  // LayerNorm (one op): its input [N, d], from which backward recomputes mean and 1/σ.
  const int64_t layer_norm = N * d;
  // A block: LayerNorm; the qkv input [N, d]; the packed q, k, v [N, 3d] (attention is one op
  // whose backward recomputes its probabilities from them, so no [b, h, T, T] is kept); the
  // heads' output re-laid as [N, d] (the projection's input); LayerNorm; the MLP input [N, d],
  // the GELU input [N, 4d] and the GELU output [N, 4d] (the second layer's input).
  const int64_t block = layer_norm + N * d + 3 * N * d + N * d + layer_norm + N * d + 4 * N * d + 4 * N * d;
  // The head: the final LayerNorm, the lm_head matmul's input [N, d] (the tied embedding needs its
  // gradient) and the logits [N, V] cross-entropy recomputes its softmax from.
  const int64_t head = layer_norm + N * d + N * V;
  // Besides the floats: the token ids and targets (int64, read by the embedding's and the loss's rules).
  const int64_t bytes = 4 * (L * block + head) + 8 * N + 8 * N;
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::Activations), bytes);
  EXPECT_EQ(tracker.peak_allocated_bytes(MemoryCategory::Activations), bytes);
  loss.backward();
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::Activations), 0);
}

}  // namespace
}  // namespace tally
