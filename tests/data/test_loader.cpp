// get_batch, the Sequential loader, resumable states and the prefetcher, on files whose token i
// is i, so a batch row tells where its window started.

#include <omp.h>

#include <chrono>

#include "data/data_test_util.h"
#include "tally/cuda/runtime.h"
#include "tally/ops/random.h"

namespace tally::data::test {
namespace {

using Batch = std::pair<Tensor, Tensor>;

std::vector<int64_t> values(const Tensor& t) {
  const int64_t* p = t.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

void expect_same(const Batch& a, const Batch& b, const std::string& what) {
  EXPECT_EQ(values(a.first), values(b.first)) << what;
  EXPECT_EQ(values(a.second), values(b.second)) << what;
}

/// The next n batches of a TokenLoader or a Prefetcher.
template <class Source>
std::vector<Batch> take(Source& source, int n) {
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i) out.push_back(source.next());
  return out;
}

TEST(GetBatch, ShapesShiftAndStartsInRange) {
  TempDir dir;
  const int64_t n = 20, T = 4, B = 8;
  const TokenFile data = arange_file(dir, n);
  Generator gen(1);
  std::vector<bool> seen(n - T, false);
  for (int step = 0; step < 50; ++step) {
    const auto [x, y] = get_batch(data, B, T, &gen);
    ASSERT_EQ(x.dim(), 2);
    EXPECT_EQ(x.size(0), B);
    EXPECT_EQ(x.size(1), T);
    EXPECT_EQ(y.size(0), B);
    EXPECT_EQ(y.size(1), T);
    EXPECT_EQ(x.dtype(), kInt64);
    const std::vector<int64_t> xs = values(x), ys = values(y);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t start = xs[size_t(b * T)];
      ASSERT_GE(start, 0);
      ASSERT_LT(start, n - T);  // randint(len(data) - context_length): y's last token is in the file
      seen[size_t(start)] = true;
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(xs[size_t(b * T + t)], start + t);
        EXPECT_EQ(ys[size_t(b * T + t)], start + t + 1);
      }
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), n - T) << "400 draws reach every start";
}

TEST(GetBatch, StartsAreTheLecturesRandint) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 1000);
  Generator a(42), b(42);
  const auto [x, y] = get_batch(data, 16, 32, &a);
  const std::vector<int64_t> starts = values(randint(1000 - 32, {16}, {}, &b));
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(values(x)[i * 32], starts[i]);
  EXPECT_EQ(a.get_state().offset, b.get_state().offset);
}

TEST(GetBatch, SameSeedSameBatchesWhateverTheThreads) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 100000);
  const int threads = omp_get_max_threads();
  std::vector<Batch> runs[2];
  for (int r = 0; r < 2; ++r) {
    omp_set_num_threads(r == 0 ? 1 : 4);
    Generator gen(7);
    for (int i = 0; i < 3; ++i) runs[r].push_back(get_batch(data, 9000, 3, &gen));  // big enough to run parallel
  }
  omp_set_num_threads(threads);
  for (int i = 0; i < 3; ++i) expect_same(runs[0][size_t(i)], runs[1][size_t(i)], "batch " + std::to_string(i));
  Generator other(8);
  EXPECT_NE(values(get_batch(data, 9000, 3, &other).first), values(runs[0][0].first));
}

TEST(GetBatch, ContextMustFit) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 10);
  EXPECT_NO_THROW(get_batch(data, 2, 9));
  expect_error<ValueError>([&] { get_batch(data, 2, 10); }, {"context_length + 1 = 11", "holds 10 tokens", "arange.bin"});
  expect_error<ValueError>([&] { get_batch(data, 0, 3); }, {"batch_size", "got 0"});
}

TEST(GetBatch, TokenIdsMustBeInTheVocabulary) {
  TempDir dir;
  std::vector<int64_t> tokens(50, 3);
  tokens[37] = 1000;
  write_raw<uint16_t>(dir.file("t.bin"), tokens);
  const TokenFile data = TokenFile::open_raw(dir.file("t.bin"), TokenDtype::UInt16);
  Generator gen(0);
  for (int i = 0; i < 20; ++i) get_batch(data, 4, 5, &gen, 1001);  // 1000 is a valid id of 1001
  try {
    for (int i = 0; i < 100; ++i) get_batch(data, 4, 5, &gen, 1000);
    ADD_FAILURE() << "400 windows of 6 tokens never read token 37";
  } catch (const ValueError& e) {
    for (const std::string part : {"token id 1000", "position 37", "t.bin", "vocabulary of size 1000"})
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
  // Sequential reads every token in order, so it meets position 37 in its second batch.
  TokenLoader seq(data, {.batch_size = 1, .context_length = 20, .sampling = Sampling::Sequential, .vocab_size = 1000});
  seq.next();
  expect_error<ValueError>([&] { seq.next(); }, {"token id 1000", "position 37", "size 1000"});
}

TEST(Sequential, CoversTheDataOncePerEpochInOrder) {
  TempDir dir;
  const int64_t n = 103, T = 5, B = 3;  // 20 windows: 7 batches, the last of 2 rows
  const TokenFile data = arange_file(dir, n);
  TokenLoader loader(data, {.batch_size = B, .context_length = T, .sampling = Sampling::Sequential});
  EXPECT_EQ(loader.windows_per_epoch(), 20);
  EXPECT_EQ(loader.batches_per_epoch(), 7);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> xs, ys;
    for (int64_t i = 0; i < 7; ++i) {
      EXPECT_EQ(loader.state().epoch, epoch);
      EXPECT_EQ(loader.state().index, i * B);
      const auto [x, y] = loader.next();
      EXPECT_EQ(x.size(0), i < 6 ? B : 2);
      for (int64_t v : values(x)) xs.push_back(v);
      for (int64_t v : values(y)) ys.push_back(v);
    }
    ASSERT_EQ(xs.size(), 100u);
    for (int64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(xs[size_t(i)], i);
      EXPECT_EQ(ys[size_t(i)], i + 1);
    }
  }
  EXPECT_EQ(loader.state(), (LoaderState{2, 0, {0, 0}}));
}

TEST(Sequential, DropLastSkipsTheShortBatch) {
  TempDir dir;
  TokenLoader loader(arange_file(dir, 103),
                     {.batch_size = 3, .context_length = 5, .sampling = Sampling::Sequential, .drop_last = true});
  EXPECT_EQ(loader.batches_per_epoch(), 6);
  const std::vector<Batch> batches = take(loader, 7);
  EXPECT_EQ(batches[5].first.size(0), 3);
  EXPECT_EQ(values(batches[6].first), values(batches[0].first)) << "the 7th batch starts epoch 1";
  EXPECT_EQ(loader.state(), (LoaderState{1, 3, {0, 0}}));
  expect_error<ValueError>(
      [&] { TokenLoader(arange_file(dir, 10), {.batch_size = 4, .context_length = 3, .sampling = Sampling::Sequential, .drop_last = true}); },
      {"drop_last", "13 tokens", "holds 10"});
}

/// A loader resumed from the state saved after batch k makes batch k + 1 onwards as the
/// uninterrupted one does.
void check_resume(const TokenFile& data, LoaderOptions options) {
  TokenLoader straight(data, options), first(data, options);
  const std::vector<Batch> all = take(straight, 12);
  take(first, 5);
  const LoaderState saved = first.state();
  TokenLoader resumed(data, options);
  resumed.set_state(saved);
  for (int i = 5; i < 12; ++i) expect_same(resumed.next(), all[size_t(i)], "batch " + std::to_string(i));
}

TEST(TokenLoader, ResumesExactly) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 200);
  check_resume(data, {.batch_size = 4, .context_length = 8, .sampling = Sampling::Random, .seed = 3});
  check_resume(data, {.batch_size = 4, .context_length = 8, .sampling = Sampling::Sequential});  // crosses epochs
  TokenLoader loader(data, {.batch_size = 4, .context_length = 8, .sampling = Sampling::Sequential});
  expect_error<ValueError>([&] { loader.set_state({0, 24, {}}); }, {"index 24", "24 windows"});
  expect_error<ValueError>([&] { loader.set_state({-1, 0, {}}); }, {"negative"});
}

TEST(TokenLoader, RandomUsesItsSeed) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 500);
  TokenLoader loader(data, {.batch_size = 4, .context_length = 8, .seed = 11});
  Generator gen(11);
  const Batch expected = get_batch(data, 4, 8, &gen);
  expect_same(loader.next(), expected, "first batch");
  EXPECT_EQ(loader.state(), (LoaderState{0, 1, gen.get_state()}));
}

TEST(Prefetcher, GivesTheLoadersSequence) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 300);
  for (Sampling sampling : {Sampling::Random, Sampling::Sequential}) {
    const LoaderOptions options{.batch_size = 3, .context_length = 7, .sampling = sampling, .seed = 5};
    TokenLoader loader(data, options);
    Prefetcher prefetcher(TokenLoader(data, options), 3);
    for (int i = 0; i < 40; ++i) {  // 14 batches per Sequential epoch: several epochs
      expect_same(prefetcher.next(), loader.next(), "batch " + std::to_string(i));
      EXPECT_EQ(prefetcher.state(), loader.state());
    }
  }
}

TEST(Prefetcher, AGpuWithoutCudaIsADeviceError) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a GPU (tests/cuda covers the prefetcher there)";
  TempDir dir;
  const TokenFile data = arange_file(dir, 50);
  const LoaderOptions options{.batch_size = 2, .context_length = 4};
  expect_error<DeviceError>([&] { Prefetcher(TokenLoader(data, options), 2, Device("cuda:0")); },
                            {"Prefetcher: batches for cuda:0 but CUDA is not available"});
}

TEST(Prefetcher, StateResumesAfterTheLastBatchTaken) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 300);
  for (Sampling sampling : {Sampling::Random, Sampling::Sequential}) {
    const LoaderOptions options{.batch_size = 3, .context_length = 7, .sampling = sampling, .seed = 9};
    Prefetcher straight(TokenLoader(data, options), 2);
    const std::vector<Batch> all = take(straight, 20);
    LoaderState saved;
    {
      Prefetcher first(TokenLoader(data, options), 4);
      take(first, 6);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the worker draw ahead
      saved = first.state();
    }
    TokenLoader resumed_loader(data, options);
    resumed_loader.set_state(saved);
    Prefetcher resumed(std::move(resumed_loader));
    for (int i = 6; i < 20; ++i) expect_same(resumed.next(), all[size_t(i)], "batch " + std::to_string(i));
  }
}

TEST(Prefetcher, ShutsDownMidEpoch) {
  TempDir dir;
  const TokenFile data = arange_file(dir, 100000);
  const LoaderOptions options{.batch_size = 64, .context_length = 256, .sampling = Sampling::Sequential};
  { Prefetcher unused(TokenLoader(data, options), 1); }  // never asked: the worker waits on a full queue
  {
    Prefetcher p(TokenLoader(data, options), 8);
    p.next();
  }  // the worker is mid-batch or waiting; the destructor joins it
  expect_error<ValueError>([&] { Prefetcher(TokenLoader(data, options), 0); }, {"depth", "got 0"});
}

TEST(Prefetcher, RethrowsTheWorkersError) {
  TempDir dir;
  std::vector<int64_t> tokens(100, 1);
  tokens[57] = 50;  // in x of the 4th batch of 1 x 16 windows (tokens 48..63)
  write_raw<int32_t>(dir.file("bad.bin"), tokens);
  const TokenFile data = TokenFile::open_raw(dir.file("bad.bin"), TokenDtype::Int32);
  Prefetcher p(TokenLoader(data, {.batch_size = 1, .context_length = 16, .sampling = Sampling::Sequential, .vocab_size = 50}));
  take(p, 3);
  expect_error<ValueError>([&] { p.next(); }, {"token id 50", "position 57", "size 50"});
  expect_error<ValueError>([&] { p.next(); }, {"token id 50"});  // and again: the worker has stopped
  EXPECT_EQ(p.state(), (LoaderState{0, 3, {0, 0}}));
}

}  // namespace
}  // namespace tally::data::test
