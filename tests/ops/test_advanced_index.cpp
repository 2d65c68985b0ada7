// Indexing with tensors: PyTorch's errors word for word, writes that land in the tensor (and its
// views) in place without a copy of it, the ledger's rows, the refusals (in place in a graph, a
// mask on the meta device). Values in every dtype and layout, broadcasting, the adjacency rule
// and gradients are compared with torch 1.13 in the differential suite (family Indexing).

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;
using namespace tally::indexing;
using accounting::Phase;
using tally::test::expect_error;
using tally::test::message_of;

Tensor longs(const NestedList& values) { return tensor(values, TensorOptions(kInt64)); }

TEST(AdvancedIndex, LibtorchSpellings) {
  const Tensor x = arange(24, TensorOptions(kFloat32)).view({2, 3, 4});
  // torch: x[[1, 0], :, [3, 0]] = [x[1, :, 3], x[0, :, 0]]: apart, so the index dim comes first.
  EXPECT_TRUE(x.index({longs({1, 0}), Slice(), longs({3, 0})}).equal(tensor({{15.0, 19.0, 23.0}, {0.0, 4.0, 8.0}})));
  // Together, in place: x[:, [[2], [0]], [1, 3]] is [2, 2, 2].
  EXPECT_EQ(x.index({Slice(), longs({{2}, {0}}), longs({1, 3})}).sizes(), IntArrayRef({2, 2, 2}));
  // A mask over two dims; with "..." before it; ATen's list form with a whole dim.
  const Tensor mask = x.select(2, 0) > 10;
  EXPECT_TRUE(x.index({mask}).equal(tensor({{12.0, 13.0, 14.0, 15.0}, {16.0, 17.0, 18.0, 19.0}, {20.0, 21.0, 22.0, 23.0}})));
  EXPECT_TRUE(x.index({"...", x.select(0, 0).select(0, 0) > 1}).equal(x.narrow(2, 2, 2)));
  EXPECT_TRUE(x.index(TensorList{Tensor(), longs({2})}).equal(x.narrow(1, 2, 1)));
  // A 0-d int64 tensor is an integer (a view); a 0-d bool adds a dim of size 1 or 0.
  EXPECT_TRUE(x.index({scalar_tensor(1, TensorOptions(kInt64))}).is_alias_of(x));
  EXPECT_EQ(x.index({scalar_tensor(true, TensorOptions(kBool))}).sizes(), IntArrayRef({1, 2, 3, 4}));
  EXPECT_EQ(x.index({scalar_tensor(false, TensorOptions(kBool))}).sizes(), IntArrayRef({0, 2, 3, 4}));
  // Advanced indexing copies: writing the result leaves x alone.
  Tensor picked = x.index({longs({0})});
  picked.fill_(-1);
  EXPECT_EQ(x.min().item<float>(), 0.0f);
  EXPECT_TRUE(x.take(longs({-1, 5})).equal(tensor({23.0, 5.0})));
  EXPECT_TRUE(nonzero(tensor({{0.0, NAN}, {-0.0, 2.0}})).equal(longs({{0, 1}, {1, 1}})));
}

TEST(AdvancedIndex, WritesLandInPlaceThroughViews) {
  Tensor x = zeros({4, 5});
  const uint64_t version = x.storage()->version();
  // x.t()[[1, 3]] = 7 writes columns 1 and 3 of x: through strides, not a contiguous copy.
  Tensor xt = x.t();
  xt.index_put_({longs({1, 3})}, 7.0);
  EXPECT_EQ(x.sum().item<float>(), 7.0f * 8);
  EXPECT_EQ(x.select(1, 3).sum().item<float>(), 28.0f);
  EXPECT_GT(x.storage()->version(), version);
  // Basic entries pick a view, the tensor entries write into it: x[1:, [0]] = 1.
  x.index_put_({Slice(1, None), longs({0})}, ones({3, 1}));
  EXPECT_TRUE(x.select(1, 0).equal(tensor({0.0f, 1.0f, 1.0f, 1.0f})));
  // Accumulating, a repeated position adds each time: x[:, [0, 0]] += [1, 2].
  x.index_put_(TensorList{Tensor(), longs({0, 0})}, tensor({1.0f, 2.0f}), /*accumulate=*/true);
  EXPECT_TRUE(x.select(1, 0).equal(tensor({3.0f, 4.0f, 4.0f, 4.0f})));
  // A mask and a scalar; masked_scatter_ fills in row-major order.
  x.index_put_({x > 6}, 0.5);
  EXPECT_EQ(x.max().item<float>(), 4.0f);
  Tensor y = zeros({2, 3});
  y.masked_scatter_(tensor({true, false, true}), arange(10, TensorOptions(kFloat32)));
  EXPECT_TRUE(y.equal(tensor({{0.0f, 0.0f, 1.0f}, {2.0f, 0.0f, 3.0f}})));
}

TEST(AdvancedIndex, ErrorsAsTorchs) {
  const Tensor x = zeros({5, 6, 7});
  EXPECT_EQ(message_of([&] { x.index({longs({7})}); }), "index 7 is out of bounds for dimension 0 with size 5");
  EXPECT_EQ(message_of([&] { x.index({Slice(), Slice(), longs({-8})}); }), "index -8 is out of bounds for dimension 2 with size 7");
  expect_error<IndexError>([&] { x.index({tensor({1.0})}); }, {"tensors used as indices must be long, byte or bool tensors"});
  expect_error<IndexError>([&] { x.index({longs({1}).to(kInt32)}); }, {"tensors used as indices must be long, byte or bool tensors"});
  EXPECT_EQ(message_of([&] { x.index({zeros({4}, TensorOptions(kBool))}); }),
            "The shape of the mask [4] at index 0 does not match the shape of the indexed tensor [5, 6, 7] at index 0");
  EXPECT_EQ(message_of([&] { x.index({longs({1, 2}), longs({1, 2, 3})}); }),
            "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
  expect_error<IndexError>([&] { x.index({0, 0, 0, longs({0})}); }, {"too many indices for tensor of dimension 3"});
  Tensor y = zeros({5, 6, 7});
  EXPECT_EQ(message_of([&] { y.index_put_({longs({0})}, ones({6, 7}, TensorOptions(kFloat64))); }),
            "Index put requires the source and destination dtypes match, got float32 for the destination and float64 for the source.");
  EXPECT_EQ(message_of([&] { y.index_put_({longs({0, 0})}, ones({3, 7})); }),
            "shape mismatch: value tensor of shape [3, 7] cannot be broadcast to indexing result of shape [2, 6, 7]");
  EXPECT_EQ(message_of([&] { take(x, longs({300})); }), "out of range: tried to access index 300 on a tensor of 210 elements.");
  expect_error<ValueError>([&] { y.masked_scatter_(ones({5, 6, 7}, TensorOptions(kBool)), ones({3})); },
                           {"Number of elements of source < number of ones in mask"});
  expect_error<TypeError>([&] { masked_select(x, ones({7}, TensorOptions(kUInt8))); }, {"expected BoolTensor for mask"});
  // Nothing was written by the refused calls.
  EXPECT_EQ(y.abs().sum().item<float>(), 0.0f);
}

TEST(AdvancedIndex, GradientsAndRefusals) {
  Tensor w = arange(6, TensorOptions(kFloat32)).view({2, 3}).requires_grad_();
  // Repeats add up: w[[1, 1, 0], [2, 2, 0]].sum() gives 2 at (1, 2) and 1 at (0, 0).
  w.index({longs({1, 1, 0}), longs({2, 2, 0})}).sum().backward();
  EXPECT_TRUE(w.grad().equal(tensor({{1.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 2.0f}})));
  // In place on a tensor in a graph is refused, as every in-place op here is.
  expect_error<ValueError>([&] { w.index_put_({longs({0})}, 1.0); }, {"index_put_"});
  // The functional form is differentiable in both x and values.
  Tensor v = ones({3}).requires_grad_();
  Tensor out = index_put(w, {longs({0})}, v * 2);
  (out * out).sum().backward();
  EXPECT_TRUE(v.grad().equal(tensor({8.0f, 8.0f, 8.0f})));
}

TEST(AdvancedIndex, LedgerRowsAndMetaDevice) {
  const Tensor x = randn({64, 32});
  accounting::FlopCounter counter;
  Tensor rows = x.index({longs({1, 2, 3})});
  Tensor y = x.clone();
  y.index_put_(TensorList{longs({0, 0})}, ones({32}), /*accumulate=*/true);
  // index reads what it picks (3 rows) and the index, writes its result; index_put_ in place
  // reads the values and the rows it adds into, writes those rows (2 × 32 additions), not x.
  EXPECT_EQ(counter.op("index", Phase::Forward).bytes_read, 3 * 32 * 4 + 3 * 8);
  EXPECT_EQ(counter.op("index", Phase::Forward).bytes_written, 3 * 32 * 4);
  EXPECT_EQ(counter.op("index_put", Phase::Forward).flops, 2 * 32);
  EXPECT_EQ(counter.op("index_put", Phase::Forward).bytes_written, 2 * 32 * 4);
  // On the meta device int64 indices give the shape; a mask needs its values (nonzero).
  const Tensor m = empty({64, 32}, TensorOptions().device(kMeta));
  EXPECT_EQ(m.index({Slice(), empty({5, 2}, TensorOptions(kInt64).device(kMeta))}).sizes(), IntArrayRef({64, 5, 2}));
  expect_error<NotImplementedError>([&] { m.index({empty({64}, TensorOptions(kBool).device(kMeta))}); }, {"nonzero"});
}

}  // namespace
