// NestPipe's owner-side embedding store and dual buffer (CPU tensors, one process).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "real/nestpipe/dual_buffer.h"
#include "real/nestpipe/embedding_store.h"

namespace clustertwin::real::nestpipe {
namespace {

constexpr uint64_t kSeed = 7;

EmbeddingStore make_store(int64_t rows, int64_t dim, int rank, int world, EmbeddingOptimizer opt) {
  auto store = EmbeddingStore::create({rows, dim, rank, world, kSeed, opt});
  EXPECT_TRUE(store.is_ok()) << store.status().message();
  return std::move(store).value();
}

at::Tensor keys_of(std::vector<int64_t> keys) {
  return at::tensor(keys, at::kLong);
}

at::Tensor rows_of(int64_t dim, std::vector<float> values) {
  return at::tensor(values, at::kFloat).view({-1, dim});
}

// Bitwise equality of two float tensors (at::equal would call -0 and +0 equal).
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && at::equal(a.contiguous().view(at::kInt), b.contiguous().view(at::kInt));
}

TEST(EmbeddingStoreTest, InitDependsOnlyOnSeedAndGlobalKey) {
  constexpr int64_t kRows = 11, kDim = 4;
  const auto sgd = EmbeddingOptimizer::sgd(0.1f);
  std::vector<EmbeddingStore> two, four;
  for (int r = 0; r < 2; ++r)
    two.push_back(make_store(kRows, kDim, r, 2, sgd));
  for (int r = 0; r < 4; ++r)
    four.push_back(make_store(kRows, kDim, r, 4, sgd));
  // Rank r of W holds ceil((11 - r) / W) rows: 6 + 5 in a 2-rank layout, 3 + 3 + 3 + 2 in a 4-rank one.
  EXPECT_EQ(two[0].local_rows(), 6);
  EXPECT_EQ(two[1].local_rows(), 5);
  EXPECT_EQ(four[3].local_rows(), 2);
  const float bound = 1.f / std::sqrt(static_cast<float>(kDim));  // 0.5
  for (int64_t key = 0; key < kRows; ++key) {
    auto a = two[key % 2].gather(keys_of({key}));
    auto b = four[key % 4].gather(keys_of({key}));
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_TRUE(bitwise_equal(*a, *b)) << "key " << key << ": " << *a << " vs " << *b;
    EXPECT_LE(a->abs().max().item<float>(), bound) << "key " << key;
    EXPECT_EQ((*a)[0][1].item<float>(), EmbeddingStore::initial_value(kSeed, key, 1, kDim));
  }
  // Another seed gives other rows.
  auto other = EmbeddingStore::create({kRows, kDim, 0, 2, kSeed + 1, sgd});
  ASSERT_TRUE(other.is_ok());
  EXPECT_FALSE(other->equal(two[0]));
}

// A table of many row blocks fills them in parallel (embedding_store.cpp):
// every row is still the value of its key, whichever thread wrote it.
TEST(EmbeddingStoreTest, AParallelFillGivesEachKeyItsValue) {
  constexpr int64_t kRows = 400'000, kDim = 2;  // 200,000 local rows: 13 blocks of 16,384
  EmbeddingStore store = make_store(kRows, kDim, 1, 2, EmbeddingOptimizer::sgd(0.1f));
  for (int64_t key : {1LL, 32'769LL, 199'999LL, 399'999LL}) {
    auto row = store.gather(keys_of({key}));
    ASSERT_TRUE(row.is_ok());
    for (int64_t j = 0; j < kDim; ++j)
      EXPECT_EQ((*row)[0][j].item<float>(), EmbeddingStore::initial_value(kSeed, key, j, kDim)) << "key " << key;
  }
}

// The GPU's update (whole-tensor operations, store.device() not the CPU) run
// in host memory gives the host path's rows up to summation order, the same
// accumulators and the same versions, repeated keys included.
TEST(EmbeddingStoreTest, TheWholeTensorUpdateMatchesTheHostPath) {
  for (const EmbeddingOptimizer& opt :
       {EmbeddingOptimizer::sgd(0.5f), EmbeddingOptimizer::rowwise_adagrad(0.75f, 1e-8f, 0.1f)}) {
    EmbeddingStoreOptions o{64, 8, 0, 2, kSeed, opt};
    auto host = EmbeddingStore::create(o);
    o.whole_tensor_update = true;
    auto whole = EmbeddingStore::create(o);
    ASSERT_TRUE(host.is_ok() && whole.is_ok());
    const at::Tensor keys = keys_of({6, 0, 6, 62, 10, 0, 6});
    at::Generator gen = at::detail::createCPUGenerator(3);
    for (int step = 0; step < 3; ++step) {
      const at::Tensor grads = at::randn({keys.numel(), 8}, gen);
      ASSERT_TRUE(host->apply_gradients(keys, grads).is_ok());
      ASSERT_TRUE(whole->apply_gradients(keys, grads).is_ok());
    }
    EXPECT_TRUE(at::allclose(host->weights(), whole->weights(), 1e-6, 1e-6));
    EXPECT_TRUE(at::allclose(host->accumulators(), whole->accumulators(), 1e-6, 1e-6));
    auto a = host->versions(keys_of({0, 6, 10, 62, 2}));
    auto b = whole->versions(keys_of({0, 6, 10, 62, 2}));
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    // Three steps, each touching 0, 6, 10 and 62 once (repeats summed first); 2 never.
    EXPECT_TRUE(at::equal(*a, keys_of({3, 3, 3, 3, 0})));
    EXPECT_TRUE(at::equal(*a, *b));
  }
}

TEST(EmbeddingStoreTest, SgdMatchesAHandComputation) {
  // Rank 1 of 2, key 3 -> local row 1. SGD with lr 0.5 and g = [1, -2]:
  // w = w0 - 0.5 * g = w0 - [0.5, -1] (both products exact in float).
  EmbeddingStore store = make_store(6, 2, 1, 2, EmbeddingOptimizer::sgd(0.5f));
  const at::Tensor w0 = *store.gather(keys_of({3}));
  ASSERT_TRUE(store.apply_gradients(keys_of({3}), rows_of(2, {1.f, -2.f})).is_ok());
  const at::Tensor expected = w0 - rows_of(2, {0.5f, -1.f});
  EXPECT_TRUE(bitwise_equal(*store.gather(keys_of({3})), expected));
  // Rows not in the batch do not move.
  EXPECT_TRUE(at::equal(*store.versions(keys_of({1, 3, 5})), keys_of({0, 1, 0})));
}

TEST(EmbeddingStoreTest, RowWiseAdagradMatchesAHandComputation) {
  // lr 0.75, eps 0, initial accumulator 4, dim 4; one row (key 0 of world 1).
  // Step 1, g = [1, -1, 3, -3]: mean(g^2) = (1 + 1 + 9 + 9) / 4 = 5, a = 4 + 5 = 9,
  //   multiplier = 0.75 / sqrt(9) = 0.25, w -= [0.25, -0.25, 0.75, -0.75].
  // Step 2, g = [1, 1, 1, 5]: mean(g^2) = (1 + 1 + 1 + 25) / 4 = 7, a = 9 + 7 = 16,
  //   multiplier = 0.75 / 4 = 0.1875, w -= [0.1875, 0.1875, 0.1875, 0.9375].
  // Every step is exact in float, so the expected rows are bitwise.
  EmbeddingStore store = make_store(3, 4, 0, 1, EmbeddingOptimizer::rowwise_adagrad(0.75f, 0.f, 4.f));
  const at::Tensor w0 = *store.gather(keys_of({0}));
  ASSERT_TRUE(store.apply_gradients(keys_of({0}), rows_of(4, {1, -1, 3, -3})).is_ok());
  EXPECT_EQ(store.accumulators()[0].item<float>(), 9.f);
  const at::Tensor w1 = w0 - rows_of(4, {0.25f, -0.25f, 0.75f, -0.75f});
  EXPECT_TRUE(bitwise_equal(*store.gather(keys_of({0})), w1));
  ASSERT_TRUE(store.apply_gradients(keys_of({0}), rows_of(4, {1, 1, 1, 5})).is_ok());
  EXPECT_EQ(store.accumulators()[0].item<float>(), 16.f);
  const at::Tensor w2 = w1 - rows_of(4, {0.1875f, 0.1875f, 0.1875f, 0.9375f});
  EXPECT_TRUE(bitwise_equal(*store.gather(keys_of({0})), w2));
  // Untouched rows keep the initial accumulator.
  EXPECT_EQ(store.accumulators()[1].item<float>(), 4.f);
  EXPECT_EQ(store.versions(keys_of({0}))->item<int64_t>(), 2);
}

TEST(EmbeddingStoreTest, RepeatedKeysAreSummedIntoOneUpdate) {
  const auto adagrad = EmbeddingOptimizer::rowwise_adagrad(0.5f, 1e-8f, 0.1f);
  EmbeddingStore repeated = make_store(4, 2, 0, 1, adagrad);
  EmbeddingStore summed = repeated.clone();
  EmbeddingStore twice = repeated.clone();
  // Key 1 twice with [1, 0] and [1, 2] is key 1 once with their sum [2, 2].
  ASSERT_TRUE(repeated.apply_gradients(keys_of({1, 2, 1}), rows_of(2, {1, 0, 5, 5, 1, 2})).is_ok());
  ASSERT_TRUE(summed.apply_gradients(keys_of({1, 2}), rows_of(2, {2, 2, 5, 5})).is_ok());
  EXPECT_TRUE(repeated.equal(summed));
  // One update per call: key 1 is at version 1, not 2.
  EXPECT_TRUE(at::equal(*repeated.versions(keys_of({0, 1, 2, 3})), keys_of({0, 1, 1, 0})));
  // Two calls are two Adagrad steps (two accumulations, two versions): not the same.
  ASSERT_TRUE(twice.apply_gradients(keys_of({1, 2}), rows_of(2, {1, 0, 5, 5})).is_ok());
  ASSERT_TRUE(twice.apply_gradients(keys_of({1}), rows_of(2, {1, 2})).is_ok());
  EXPECT_FALSE(twice.equal(summed));
  EXPECT_EQ(twice.versions(keys_of({1}))->item<int64_t>(), 2);
}

TEST(EmbeddingStoreTest, VersionsCountTheUpdatesOfEachRow) {
  EmbeddingStore store = make_store(8, 2, 0, 2, EmbeddingOptimizer::sgd(0.1f));
  const std::vector<std::vector<int64_t>> batches = {{0, 2}, {2, 4, 2}, {2, 6}};
  for (const auto& b : batches) {
    const at::Tensor k = keys_of(b);
    ASSERT_TRUE(store.apply_gradients(k, at::ones({k.numel(), 2})).is_ok());
  }
  // key 0: batch 0; key 2: all three; key 4: batch 1; key 6: batch 2.
  EXPECT_TRUE(at::equal(*store.versions(keys_of({0, 2, 4, 6})), keys_of({1, 3, 1, 1})));
}

// DBP on one owner: batch t = {0, 2, 4, 6} trains while batch t+1 =
// {4, 6, 8, 10} is prefetched; keys 4 and 6 are shared, so t's update makes
// them stale in the prefetched buffer.
struct DbpRun {
  EmbeddingStore store;
  DualBuffer buffer;
  at::Tensor keys_next;
  Status oracle;
  int64_t patched = -1;
};

DbpRun run_dbp(bool patch_enabled) {
  DbpRun run{make_store(20, 4, 0, 2, EmbeddingOptimizer::sgd(0.1f)), DualBuffer(4, {at::kCPU, patch_enabled}),
             keys_of({4, 6, 8, 10}), Status::ok()};
  const at::Tensor keys_t = keys_of({0, 2, 4, 6});
  EXPECT_TRUE(run.buffer.prefetch(run.store, keys_t).is_ok());
  run.buffer.swap();
  EXPECT_TRUE(run.buffer.check_versions(run.store).is_ok());  // nothing updated yet
  EXPECT_TRUE(run.buffer.prefetch(run.store, run.keys_next).is_ok());
  EXPECT_TRUE(run.store.apply_gradients(keys_t, at::ones({4, 4})).is_ok());  // batch t's update
  run.buffer.swap();
  auto patched = run.buffer.patch(run.store, keys_t);
  EXPECT_TRUE(patched.is_ok()) << patched.status().message();
  if (patched.is_ok()) run.patched = *patched;
  run.oracle = run.buffer.check_versions(run.store);
  return run;
}

TEST(DualBufferTest, WithoutThePatchTheOracleNamesASharedKey) {
  DbpRun run = run_dbp(/*patch_enabled=*/false);
  EXPECT_EQ(run.patched, 0);
  EXPECT_EQ(run.oracle.message(),
            "dual buffer: version oracle: stale row: key 4 was read at version 0, the store (rank 0) is at version 1 "
            "(2 of 4 active rows stale)");
  EXPECT_FALSE(bitwise_equal(run.buffer.active_rows(), *run.store.gather(run.keys_next)));
}

TEST(DualBufferTest, WithThePatchActiveRowsAreTheStoresCurrentRows) {
  DbpRun run = run_dbp(/*patch_enabled=*/true);
  EXPECT_EQ(run.patched, 2);  // keys 4 and 6
  EXPECT_TRUE(run.oracle.is_ok()) << run.oracle.message();
  EXPECT_TRUE(at::equal(run.buffer.active_keys(), run.keys_next));
  EXPECT_TRUE(bitwise_equal(run.buffer.active_rows(), *run.store.gather(run.keys_next)));
  EXPECT_TRUE(at::equal(run.buffer.active_versions(), keys_of({1, 1, 0, 0})));
}

// The split of prefetch into a gather (lookup stream) and a copy (copy
// stream) that the real executor uses: the same buffer as prefetch, in a
// tensor of its own.
TEST(DualBufferTest, LoadPrefetchIsPrefetchInTwoHalves) {
  EmbeddingStore store = make_store(20, 4, 0, 2, EmbeddingOptimizer::sgd(0.1f));
  const at::Tensor keys = keys_of({4, 6, 8});
  DualBuffer whole(4), halves(4);
  ASSERT_TRUE(whole.prefetch(store, keys).is_ok());
  at::Tensor rows = *store.gather(keys);
  ASSERT_TRUE(halves.load_prefetch(keys, rows, *store.versions(keys)).is_ok());
  rows.fill_(0);  // the buffer holds a copy, not the gathered tensor
  whole.swap();
  halves.swap();
  EXPECT_TRUE(bitwise_equal(whole.active_rows(), halves.active_rows()));
  EXPECT_TRUE(at::equal(whole.active_keys(), halves.active_keys()));
  EXPECT_TRUE(at::equal(whole.active_versions(), halves.active_versions()));
  EXPECT_EQ(halves.load_prefetch(keys, at::ones({2, 4}), *store.versions(keys)).message(),
            "dual buffer: load_prefetch: keys [3] (Long), rows [2, 4] (Float), versions [3] (Long): want int64 [n], "
            "float [n, 4], int64 [n]");
}

TEST(EmbeddingStoreErrorTest, ForeignAndOutOfRangeKeysNameKeyRankAndWorld) {
  EmbeddingStore store = make_store(10, 4, 1, 4, EmbeddingOptimizer::sgd(0.1f));
  EXPECT_EQ(store.gather(keys_of({1, 6})).status().message(),
            "embedding store (rank 1 of world 4, 10 rows): keys[1] = key 6 is owned by rank 2 (key mod 4), not rank 1");
  // 13 mod 4 = 1 would be rank 1's, but the table has 10 rows.
  EXPECT_EQ(store.versions(keys_of({13})).status().message(),
            "embedding store (rank 1 of world 4, 10 rows): keys[0] = key 13 is out of range [0, 10)");
  EXPECT_EQ(store.gather(keys_of({-3})).status().message(),
            "embedding store (rank 1 of world 4, 10 rows): keys[0] = key -3 is out of range [0, 10)");
  // A failed update changes nothing.
  EmbeddingStore before = store.clone();
  Status s = store.apply_gradients(keys_of({5, 4}), at::ones({2, 4}));
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(store.equal(before));
  DualBuffer buffer(4);
  EXPECT_EQ(buffer.prefetch(store, keys_of({0})).message(),
            "dual buffer: prefetch: embedding store (rank 1 of world 4, 10 rows): keys[0] = key 0 is owned by rank 0 "
            "(key mod 4), not rank 1");
}

TEST(EmbeddingStoreErrorTest, BadShapesNameTheTensorAndShapes) {
  EmbeddingStore store = make_store(10, 4, 1, 4, EmbeddingOptimizer::sgd(0.1f));
  EXPECT_EQ(store.apply_gradients(keys_of({1, 5}), at::ones({3, 8})).message(),
            "embedding store (rank 1 of world 4, 10 rows): grads has shape [3, 8], expected [2, 4] (keys has 2 "
            "elements, dim 4)");
  EXPECT_EQ(store.apply_gradients(keys_of({1}), at::ones({4})).message(),
            "embedding store (rank 1 of world 4, 10 rows): grads has shape [4], expected [1, 4] (keys has 1 "
            "elements, dim 4)");
  EXPECT_EQ(store.gather(at::tensor({1, 5}, at::kInt)).status().message(),
            "embedding store (rank 1 of world 4, 10 rows): keys must be a 1-D int64 tensor, got Int of shape [2]");
  EXPECT_EQ(store.gather(keys_of({1, 5}).view({1, 2})).status().message(),
            "embedding store (rank 1 of world 4, 10 rows): keys must be a 1-D int64 tensor, got Long of shape [1, 2]");
  DualBuffer wide(8);
  EXPECT_EQ(wide.prefetch(store, keys_of({1})).message(),
            "dual buffer: store of rank 1 has dim 4, the buffer has dim 8");
}

TEST(EmbeddingStoreErrorTest, CreateRejectsBadOptions) {
  const auto sgd = EmbeddingOptimizer::sgd(0.1f);
  EXPECT_EQ(EmbeddingStore::create({10, 4, 4, 4, kSeed, sgd}).status().message(),
            "embedding store: rank 4 must be in [0, 4)");
  EXPECT_EQ(EmbeddingStore::create({10, 0, 0, 4, kSeed, sgd}).status().message(),
            "embedding store: dim 0 must be >= 1");
  EXPECT_EQ(EmbeddingStore::create({10, 4, 0, 1, kSeed, EmbeddingOptimizer::sgd(-1.f)}).status().message(),
            "embedding store: lr -1 must be > 0");
}

}  // namespace
}  // namespace clustertwin::real::nestpipe
