// Every error names the op, quotes the whole pattern and says what is wrong with which part.

#include "einops/common.h"

using namespace tally;
using einops_test::expect_value_error;

TEST(EinopsErrors, UnbalancedAndNestedBrackets) {
  Tensor x = randn({2, 6});
  expect_value_error([&] { einops::rearrange(x, "b (h w -> b h w"); },
                     {"rearrange pattern \"b (h w -> b h w\"", "unbalanced brackets", "'(' at position 2 is never closed"});
  expect_value_error([&] { einops::rearrange(x, "b h) -> b h"); },
                     {"rearrange pattern \"b h) -> b h\"", "unbalanced brackets", "')' at position 3 has no matching '('"});
  expect_value_error([&] { einops::rearrange(x, "b ((h w)) -> b h w"); }, {"nested brackets"});
  expect_value_error([&] { einops::einsum(x, x, "b (h), b h -> b"); }, {"einsum pattern", "brackets are not allowed in einsum"});
}

TEST(EinopsErrors, DuplicateNames) {
  Tensor x = randn({3, 3});
  expect_value_error([&] { einops::rearrange(x, "a a -> a"); },
                     {"rearrange pattern \"a a -> a\"", "duplicate name 'a' on the left side"});
  expect_value_error([&] { einops::rearrange(x, "a b -> (a a) b"); }, {"duplicate name 'a' on the right side"});
  expect_value_error([&] { einops::einsum(x, "i i -> i"); }, {"einsum pattern \"i i -> i\"", "duplicate name 'i' on operand 0"});
  expect_value_error([&] { einops::einsum(x, x, "i j, j k -> i i"); }, {"duplicate name 'i' on the output"});
}

TEST(EinopsErrors, UnknownNamesOnTheRight) {
  Tensor x = randn({2, 3});
  expect_value_error([&] { einops::rearrange(x, "a b -> a c"); },
                     {"rearrange pattern \"a b -> a c\"", "'c' is on the right side but not on the left"});
  expect_value_error([&] { einops::reduce(x, "a b -> a c", "sum"); }, {"'c' is on the right side but not on the left"});
  expect_value_error([&] { einops::einsum(x, x, "a b, a c -> a d"); }, {"'d' in the output does not appear in any operand"});
  expect_value_error([&] { einops::rearrange(x, "a b -> a"); }, {"'b' is on the left side but not on the right", "reduce"});
  expect_value_error([&] { einops::repeat(x, "a b -> a b c"); }, {"repeat pattern", "the length of new axis 'c' is not given"});
  expect_value_error([&] { einops::rearrange(x, "a b -> b a", {{"z", 2}}); }, {"a length is given for 'z', which is not in the pattern"});
  expect_value_error([&] { einops::rearrange(x, "a b -> b a", {{"a", 2}, {"a", 2}}); }, {"the length of 'a' is given twice"});
}

TEST(EinopsErrors, EllipsisMisuse) {
  Tensor x = randn({2, 3, 4});
  expect_value_error([&] { einops::rearrange(x, "... a ... -> a"); }, {"'...' appears twice on the left side"});
  expect_value_error([&] { einops::rearrange(x, ".. a -> a"); }, {"'..' at position 0 is not an ellipsis"});
  expect_value_error([&] { einops::rearrange(x, "a b c -> a b c ..."); }, {"'...' is on the right side but not on the left"});
  expect_value_error([&] { einops::rearrange(x, "... c -> c"); }, {"'...' is on the left side but not on the right"});
  expect_value_error([&] { einops::rearrange(x, "(a ...) -> a ..."); }, {"'...' inside brackets is only allowed on the right side"});
  expect_value_error([&] { einops::einsum(x, "a b c -> ... a"); }, {"'...' appears in the output but in no operand"});
  expect_value_error([&] { einops::rearrange(x, "a b c d ... -> a b c d ..."); },
                     {"names 4 or more dimensions but the input has shape [2, 3, 4]"});
}

TEST(EinopsErrors, LengthsThatDoNotDivide) {
  Tensor x = randn({2, 7});
  expect_value_error([&] { einops::rearrange(x, "b (heads d) -> b heads d", {{"heads", 2}}); },
                     {"rearrange pattern \"b (heads d) -> b heads d\"", "dimension 1", "size 7",
                      "(heads d) cannot split: 7 is not divisible by 2"});
  expect_value_error([&] { einops::reduce(x, "b (h 3) -> b h", "max"); }, {"not divisible by 3"});
  expect_value_error([&] { einops::rearrange(x, "b (h w) -> b h w"); },
                     {"cannot infer the lengths in (h w): give the lengths of all but one"});
}

TEST(EinopsErrors, ShapesThatDoNotMatch) {
  Tensor x = randn({2, 3, 4}), y = randn({2, 3, 5});
  expect_value_error([&] { einops::einsum(x, y, "batch seq hidden, batch seq2 hidden -> batch seq seq2"); },
                     {"einsum pattern", "'hidden' is 4 in operand 0 (shape [2, 3, 4]) but 5 in operand 1 (shape [2, 3, 5])"});
  expect_value_error([&] { einops::rearrange(x, "a b -> b a"); },
                     {"the left side names 2 dimensions but the input has shape [2, 3, 4]"});
  expect_value_error([&] { einops::einsum(x, "a b -> a"); }, {"operand 0 (\"a b\") names 2 dimensions but the tensor has shape [2, 3, 4]"});
  expect_value_error([&] { einops::rearrange(x, "a b c -> c b a", {{"b", 5}}); },
                     {"dimension 1 of the input (shape [2, 3, 4]) has size 3 but b has length 5"});
  expect_value_error([&] { einops::rearrange(x, "a 1 c -> a c"); }, {"dimension 1 of the input (shape [2, 3, 4]) has size 3 but the pattern writes 1, a unit axis, there"});
  expect_value_error([&] { einops::einsum(randn({2, 3}), randn({4, 3}), "... h, ... h -> ..."); },
                     {"the '...' dimensions of operand 0 (shape [2, 3]) and operand 1 (shape [4, 3]) do not broadcast"});
}

TEST(EinopsErrors, WrongOperandCount) {
  Tensor x = randn({2, 3});
  expect_value_error([&] { einops::einsum(x, "i j, j k -> i k"); },
                     {"einsum pattern \"i j, j k -> i k\"", "names 2 operands but 1 tensor was given"});
  expect_value_error([&] { einops::einsum(x, x, x, "i j, j k -> i k"); }, {"names 2 operands but 3 tensors were given"});
  expect_value_error([&] { einops::einsum(std::vector<Tensor>{}, "-> "); }, {"at least one operand"});
}

TEST(EinopsErrors, OtherMistakes) {
  Tensor x = randn({2, 3});
  expect_value_error([&] { einops::rearrange(x, "a b"); }, {"missing '->'"});
  expect_value_error([&] { einops::rearrange(x, "a b -> a -> b"); }, {"'->' appears more than once"});
  expect_value_error([&] { einops::reduce(x, "a b -> a", "median"); }, {"unknown reduction 'median'"});
  expect_value_error([&] { einops::rearrange(x, "a b -> a b 2"); }, {"anonymous axis '2' on the right side"});
  expect_value_error([&] { einops::rearrange(x, "a 2b -> a"); }, {"'2b' at position 2 is not a valid axis name"});
  expect_value_error([&] { einops::rearrange(x, "a b! -> a"); }, {"unexpected character '!' at position 3"});
  expect_value_error([&] { einops::einsum(x, x, "a 3, a b -> b"); }, {"anonymous axis '3' in operand 0"});
}

TEST(EinopsErrors, FailedPatternsAreNotCached) {
  Tensor x = randn({2, 7});
  for (int i = 0; i < 2; ++i)
    expect_value_error([&] { einops::rearrange(x, "a (b c) -> a b c"); }, {"cannot infer the lengths"});
  // The same pattern with a valid input still works after the failures.
  EXPECT_EQ(einops::rearrange(x, "a (b c) -> a b c", {{"b", 7}}).size(1), 7);
}
