// amp::DelayedScaling: Transformer Engine's delayed-scaling update on a scripted amax sequence,
// worked by hand below; saturating casts; the state a checkpoint stores.

#include <gtest/gtest.h>

#include <cmath>

#include "tally/amp/fp8_scaling.h"
#include "tally/tally.h"

namespace tally::amp {
namespace {

TEST(DelayedScaling, ScaleUpdateFollowsTheRecipeOnAScriptedAmaxSequence) {
  // E4M3 (max 448), history of 3, margin 1, max algorithm: scale = 448 / amax / 2.
  DelayedScaling s(kFloat8_e4m3fn, {.amax_history_len = 3, .margin = 1});
  EXPECT_EQ(s.fp8_max(), 448.0);
  EXPECT_EQ(s.scale(), 1.0);
  struct Step {
    double amax;
    double scale;  // after update()
    std::vector<double> history;  // after update(), newest slot first
  };
  const Step steps[] = {
      {2.0, 112.0, {0, 0, 2}},       // [2,0,0]: max 2 -> 448/2/2; rolled
      {4.0, 56.0, {0, 2, 4}},        // [4,0,2]: max 4
      {1.0, 56.0, {0, 4, 1}},        // [1,2,4]: max 4 still
      {0.0, 56.0, {0, 1, 0}},        // [0,4,1]: max 4
      {0.0, 224.0, {0, 0, 0}},       // [0,1,0]: max 1 -> 448/1/2
      {0.0, 224.0, {0, 0, 0}},       // all zero: the scale stays
      {INFINITY, 224.0, {0, 0, INFINITY}},  // an overflow: the scale stays
      {3.0, 224.0, {0, INFINITY, 3}},       // inf still in the window
      {3.0, 224.0, {0, 3, 3}},              // [3,inf,3]: still inf
      {8.0, 28.0, {0, 3, 8}},               // [8,3,3]: max 8 -> 448/8/2
  };
  for (const Step& st : steps) {
    s.record_amax(st.amax);
    s.update();
    EXPECT_EQ(s.scale(), st.scale) << "amax " << st.amax;
    EXPECT_EQ(s.amax_history(), st.history) << "amax " << st.amax;
  }
  // A NaN amax keeps the scale too.
  s.record_amax(NAN);
  s.update();
  EXPECT_EQ(s.scale(), 28.0);
}

TEST(DelayedScaling, MostRecentAlgorithmAndE5M2) {
  DelayedScaling s(kFloat8_e5m2, {.amax_history_len = 4, .algorithm = AmaxAlgorithm::MostRecent});
  EXPECT_EQ(s.fp8_max(), 57344.0);
  s.record_amax(1024.0);
  s.update();
  EXPECT_EQ(s.scale(), 56.0);
  s.record_amax(7.0);
  s.record_amax(4.0);  // two casts in one step: the slot keeps the larger
  s.update();
  EXPECT_EQ(s.scale(), 57344.0 / 7.0);
}

TEST(DelayedScaling, QuantizeSaturatesAndRecordsTheAmax) {
  DelayedScaling s(kFloat8_e4m3fn, {.amax_history_len = 2});
  Tensor x = tensor({1.0, -2.0, 1000.0});
  Tensor q = s.quantize(x);  // scale 1: 1000 saturates to 448, not NaN
  EXPECT_EQ(q.dtype(), kFloat8_e4m3fn);
  Tensor back = q.to(kFloat32).contiguous();
  EXPECT_EQ(back.data_ptr<float>()[0], 1.0f);
  EXPECT_EQ(back.data_ptr<float>()[1], -2.0f);
  EXPECT_EQ(back.data_ptr<float>()[2], 448.0f);
  EXPECT_EQ(s.amax_history()[0], 1000.0);
  s.update();
  EXPECT_EQ(s.scale(), 448.0 / 1000.0);
  EXPECT_THROW(DelayedScaling{kFloat32}, TypeError);
  EXPECT_THROW((DelayedScaling{kFloat8_e4m3fn, {.amax_history_len = 0}}), ValueError);
}

// Transformer Engine scales in float32 and casts once, and its amax skips NaN elements (fmaxf).
// tally rounded a bfloat16 input's product to bfloat16 first (1 × 1.0634765625 became the tie
// 1.0625, then E4M3 1.0 where TE gives 1.125), and a NaN held the scale for the whole history.
TEST(DelayedScaling, QuantizeRoundsOnceSkipsNaNAndTakesAnEmptyTensor) {
  DelayedScaling s(kFloat8_e4m3fn, {.amax_history_len = 4});
  StateDict state = s.state_dict();
  state.at("scale") = scalar_tensor(1.0634765625, TensorOptions(kFloat64));  // 1 + 2^-4 + 2^-10
  s.load_state_dict(state);
  for (Dtype dt : {kFloat32, kBFloat16, kFloat16})
    EXPECT_EQ(s.quantize(tensor({1.0, 3.0}).to(dt)).to(kFloat32).contiguous().data_ptr<float>()[0], 1.125f) << dtype_name(dt);
  s.update();
  s.quantize(tensor({1.0, NAN, -6.0}));
  EXPECT_EQ(s.amax_history()[0], 6.0);
  s.update();
  EXPECT_DOUBLE_EQ(s.scale(), 448.0 / 6.0);
  s.quantize(tensor({1.0, INFINITY}));  // an inf is an overflow: it keeps the scale, as in TE
  s.update();
  EXPECT_DOUBLE_EQ(s.scale(), 448.0 / 6.0);
  const Tensor none = s.quantize(zeros({0, 16}));
  EXPECT_EQ(none.sizes(), IntArrayRef({0, 16}));
  EXPECT_EQ(s.amax_history()[0], 0.0);
}

TEST(DelayedScaling, StateRoundTripsExactly) {
  DelayedScaling a(kFloat8_e4m3fn, {.amax_history_len = 3});
  for (double amax : {3.0, 5.0, 0.5}) {
    a.record_amax(amax);
    a.update();
  }
  a.record_amax(2.0);
  DelayedScaling b(kFloat8_e4m3fn, {.amax_history_len = 3});
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.amax_history(), a.amax_history());
  a.update();
  b.update();
  EXPECT_EQ(b.scale(), a.scale());
  DelayedScaling c(kFloat8_e4m3fn, {.amax_history_len = 5});
  EXPECT_THROW(c.load_state_dict(a.state_dict()), ValueError);
}

}  // namespace
}  // namespace tally::amp
