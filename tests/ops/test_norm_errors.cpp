// layer_norm and rms_norm refuse bad shapes and dtypes in their op's meta, with PyTorch's wording
// for normalized_shape, and the same on the meta device as on real tensors.

#include <gtest/gtest.h>

#include "expect_error.h"
#include "tally/tally.h"

namespace tally {
namespace {

using test::expect_error;

TEST(NormErrors, NormalizedShapeMustBeTheInputsTrailingShape) {
  for (Device d : {Device(kCPU), Device(kMeta)}) {
    const Tensor x = empty({2, 3}, TensorOptions().device(d));
    expect_error<ValueError>([&] { layer_norm(x, {4}); },
                             {"layer_norm: given normalized_shape=[4], expected input with shape [*, 4], but got input of size [2, 3]"});
    expect_error<ValueError>([&] { rms_norm(x, {2, 3, 1}); }, {"rms_norm: given normalized_shape=[2, 3, 1]"});
    expect_error<ValueError>([&] { layer_norm(x, {}); }, {"expected normalized_shape to be at least 1-dimensional"});
  }
}

TEST(NormErrors, AffineParametersMustHaveTheNormalizedShape) {
  const Tensor x = ones({2, 3});
  expect_error<ValueError>([&] { layer_norm(x, {3}, ones({2})); },
                           {"layer_norm: expected weight of the normalized shape [3], got weight of shape [2]"});
  expect_error<ValueError>([&] { layer_norm(x, {3}, Tensor(), ones({3, 1})); }, {"expected bias of the normalized shape [3]", "[3, 1]"});
  expect_error<ValueError>([&] { rms_norm(x, {3}, ones({1, 3})); }, {"rms_norm: expected weight of the normalized shape [3]"});
}

TEST(NormErrors, IntegerInputsAreRefused) {
  expect_error<TypeError>([&] { layer_norm(ones({2, 3}, TensorOptions(kInt64)), {3}); }, {"\"layer_norm\" not implemented for 'int64'"});
  expect_error<ValueError>([&] { nn::F::rms_norm(ones({2, 3}), 3); }, {"rms_norm: cannot normalise over the last 3 dims", "[2, 3]"});
}

}  // namespace
}  // namespace tally
