// tally::dist in one process: the collectives' results, their costs on the ledger, their errors,
// and the gradient reducer's buckets. Under mpirun the same code is tested by data_parallel.py.

#include <gtest/gtest.h>

#include "tally/dist/comm_cost.h"
#include "tally/dist/grad_reducer.h"
#include "tally/dist/process_group.h"
#include "tally/dist/zero.h"
#include "tally/tally.h"

namespace tally::dist {
namespace {

TEST(CommCost, AnAllReduceMovesTwiceThePMinusOneSlicesEachWay) {
  // S = 1 MiB of float32 over 4 ranks: 2·3/4·S each way, and 3/4 of the elements' additions.
  const ops::Cost c = allreduce_cost(262144, 4, 4);
  EXPECT_EQ(c.bytes_sent, 2 * 3 * (1 << 20) / 4);
  EXPECT_EQ(c.bytes_received, c.bytes_sent);
  EXPECT_EQ(c.flops, 3 * 262144 / 4);
  // An element count that does not divide: slices of ⌈n/p⌉, the last padded.
  EXPECT_EQ(allreduce_cost(10, 4, 4).bytes_sent, 2 * 3 * 3 * 4);
  EXPECT_EQ(allreduce_cost(10, 4, 1).bytes_sent, 0);
  EXPECT_EQ(gather_cost(12, 2, 3).bytes_sent, 2 * 4 * 2);
  EXPECT_EQ(broadcast_cost(100, 1).bytes_sent, 0);
}

TEST(SingleProcessGroup, CollectivesLeaveAOneRankJobsResult) {
  auto g = make_single_process_group();
  EXPECT_EQ(g->rank(), 0);
  EXPECT_EQ(g->size(), 1);
  EXPECT_EQ(g->backend(), "single");
  Tensor t = arange(6, TensorOptions().dtype(kFloat32));
  const Tensor before = t.clone();
  g->allreduce(t)->wait();
  g->allreduce_ordered(t)->wait();
  g->broadcast(t)->wait();
  g->barrier()->wait();
  EXPECT_TRUE(t.equal(before));
  Tensor out = zeros({6});
  g->allgather(out, t)->wait();
  EXPECT_TRUE(out.equal(before));
  Tensor acc = ones({6});
  g->reduce_scatter(acc, t, /*accumulate=*/true)->wait();
  EXPECT_TRUE(acc.equal(before + 1.0));
}

TEST(SingleProcessGroup, ACollectiveIsARowOnTheWaitingThreadsLedger) {
  auto g = make_single_process_group();
  accounting::FlopCounter ledger;
  Tensor acc = zeros({4}), t = ones({4});
  auto work = g->reduce_scatter(acc, t);
  work->wait();
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(ledger.op("reduce_scatter", accounting::Phase::Forward).calls, 1);
  EXPECT_EQ(ledger.op("copy_", accounting::Phase::Forward).calls, 0) << "the collective's own ops are its row, not rows of their own";
}

TEST(SingleProcessGroup, BadBuffersAreRefusedNamingTheShapes) {
  auto g = make_single_process_group();
  Tensor t = ones({4, 4});
  try {
    g->allreduce(t.transpose(0, 1));
    FAIL() << "a non-contiguous tensor was taken";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("not contiguous"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g->allgather(zeros({3}), ones({4})), ValueError);
  EXPECT_THROW(g->allgather(zeros({4}), ones({4}, TensorOptions().dtype(kFloat64))), TypeError);
  EXPECT_THROW(g->broadcast(t, 1), ValueError);
  EXPECT_THROW(g->allreduce(Tensor()), ValueError);
}

TEST(GradReducer, OneRankLeavesTheGradientsAsBackwardMadeThem) {
  auto g = make_single_process_group();
  Generator gen(3);
  nn::Linear layer(8, 4, true, {}, &gen);
  const Tensor x = randn({5, 8}, {}, &gen);
  layer.forward(x).pow(2).sum().backward();
  std::vector<Tensor> expected;
  for (const Tensor& w : layer.parameters()) expected.push_back(w.grad().clone()), Tensor(w).set_grad(Tensor());
  for (ReduceMode mode : {ReduceMode::Fast, ReduceMode::Ordered}) {
    GradReducer reducer(layer.parameters(), *g, {.bucket_cap_bytes = 64, .mode = mode});
    EXPECT_EQ(reducer.buckets().size(), 2u) << "a 128-byte weight and a 16-byte bias under a 64-byte cap";
    // Two micro-steps of half the batch each: their sum is the whole batch's gradient.
    for (int k = 0; k < 2; ++k) {
      reducer.prepare_for_backward(k == 0, k == 1);
      layer.forward(x.narrow(0, k * 3, k == 0 ? 3 : 2)).pow(2).sum().backward();
      reducer.finalize_backward();
    }
    const auto params = layer.parameters();
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].grad().allclose(expected[i], 1e-5, 1e-6)) << i;
    EXPECT_EQ(reducer.step_stats().bytes_sent, 0);
    for (const Tensor& w : params) Tensor(w).set_grad(Tensor());
  }
}

TEST(ZeroShards, StateGoesToShardsAndBackWhole) {
  auto g = make_single_process_group();
  Generator gen(5);
  nn::Linear layer(6, 3, true, {}, &gen);
  const std::vector<Tensor> params = layer.parameters();
  GradReducer reducer(params, *g, {.bucket_cap_bytes = 40, .mode = ReduceMode::Ordered});
  ZeroShards zero(params, reducer, *g);
  ASSERT_EQ(zero.shards().size(), reducer.buckets().size());
  // A state dict over every parameter, as AdamW's would be after a step.
  StateDict full("optimizer state key");
  for (size_t i = 0; i < params.size(); ++i) {
    full.insert("state." + std::to_string(i) + ".step", scalar_tensor(3, TensorOptions().dtype(kInt64)));
    full.insert("state." + std::to_string(i) + ".exp_avg", randn(params[i].sizes(), {}, &gen));
  }
  full.insert("param_groups.0.lr", scalar_tensor(0.1, TensorOptions().dtype(kFloat64)));
  full.insert("param_groups.0.params", arange(static_cast<int64_t>(params.size()), TensorOptions().dtype(kInt64)));
  const StateDict sharded = zero.shard(full);
  EXPECT_EQ(sharded.at("param_groups.0.params").numel(), static_cast<int64_t>(zero.shards().size()));
  const StateDict back = zero.consolidate(sharded);
  ASSERT_EQ(back.keys().size(), full.keys().size());
  for (const auto& [key, t] : full) EXPECT_TRUE(back.at(key).equal(t)) << key;
  // The shards take the parameters' values, and give them back.
  zero.before_step();
  Tensor moved = params[0].detach().clone();
  for (const Tensor& s : zero.shards()) s.detach().add_(1.0);
  zero.after_step();
  EXPECT_TRUE(params[0].equal(moved + 1.0));
}

}  // namespace
}  // namespace tally::dist
