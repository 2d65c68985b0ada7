// Warnings (tally/error/warning.h): given where PyTorch warns, once per call site, to a handler a
// program can replace, and silenced when warnings are off.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tally/tally.h"

namespace tally {
namespace {

/// Collects the warnings given during its life instead of printing them.
class CapturedWarnings {
 public:
  CapturedWarnings() : previous_(set_warning_handler([this](const std::string& m) { messages.push_back(m); })) {}
  ~CapturedWarnings() { set_warning_handler(previous_); }
  std::vector<std::string> messages;

 private:
  WarningHandler previous_;
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Warnings, MseLossOfShapesThatBroadcastWarnsOnce) {
  CapturedWarnings warnings;
  const Tensor input = zeros({3}), target = ones({3, 1});
  const Tensor loss = mse_loss(input, target);
  EXPECT_EQ(loss.item<float>(), 1.0f);  // computed as PyTorch computes it, over the [3, 3] broadcast
  (void)mse_loss(input, target);
  (void)mse_loss(input, ones({3}));  // equal shapes: nothing to say
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_TRUE(contains(warnings.messages[0], "Using a target size ([3, 1]) that is different to the input size ([3])"))
      << warnings.messages[0];
}

TEST(Warnings, SilencedWarningsAreNotSpentAndComeBack) {
  CapturedWarnings warnings;
  set_warnings_enabled(false);
  (void)ones({1}).var({0}, 1);  // one value, correction 1: no degrees of freedom
  EXPECT_TRUE(warnings.messages.empty());
  set_warnings_enabled(true);
  (void)ones({1}).var({0}, 1);
  (void)ones({1}).var({0}, 1);
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_TRUE(contains(warnings.messages[0], "degrees of freedom is <= 0")) << warnings.messages[0];
  EXPECT_TRUE(contains(warnings.messages[0], "correction 1, reduction factor 1")) << warnings.messages[0];
}

TEST(Warnings, AnOutTensorWithElementsResizedWarns) {
  CapturedWarnings warnings;
  Tensor empty_out = empty({0});
  add_out(empty_out, ones({2, 2}), ones({2, 2}));  // no elements: resized without a word, as torch's
  EXPECT_TRUE(warnings.messages.empty());
  Tensor out = empty({3});
  add_out(out, ones({2, 2}), ones({2, 2}));
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 2}));
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_TRUE(contains(warnings.messages[0], "had shape [3], which does not match the required output shape [2, 2]"))
      << warnings.messages[0];
}

TEST(Warnings, TheGradOfANonLeafWarnsUnlessRetained) {
  CapturedWarnings warnings;
  Tensor w = ones({2}).requires_grad_();
  Tensor kept = w * 2.0;
  kept.retain_grad();
  (void)kept.grad();
  (void)w.grad();
  EXPECT_TRUE(warnings.messages.empty());
  Tensor h = w * 3.0;
  EXPECT_FALSE(h.grad().defined());
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_TRUE(contains(warnings.messages[0], "not a leaf Tensor is being accessed")) << warnings.messages[0];
  EXPECT_TRUE(contains(warnings.messages[0], "MulBackward0")) << warnings.messages[0];
}

TEST(Warnings, TheDefaultHandlerWritesToStderr) {
  testing::internal::CaptureStderr();
  warn("a message for the reader");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "tally warning: a message for the reader\n");
}

}  // namespace
}  // namespace tally
