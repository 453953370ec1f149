// The key/row All2All bookkeeping of NestPipe's real executor
// (real/nestpipe/exchange.h), the measured key statistics and the state
// dump format: the parts that need no ranks.

#include <gtest/gtest.h>

#include <numeric>

#include "common/state_dump.h"
#include "real/nestpipe/exchange.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Batch;
namespace {

using V = std::vector<int64_t>;

// 4 samples x 2 keys, W = 2: owner 0 holds even keys, owner 1 odd ones.
const Batch kBatch = {{9, 2}, {4, 7}, {2, 2}, {7, 5}};

TEST(RequesterExchangeTest, SortsByOwnerThenKeyAndSplitsMicroBatches) {
  auto r = plan_requester(kBatch, {}, 2, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  // Unique {2, 4, 5, 7, 9}: owner 0 gets 2 4, owner 1 gets 5 7 9.
  EXPECT_EQ(r->batch.keys, (V{2, 4, 5, 7, 9}));
  EXPECT_EQ(r->batch.per_owner, (V{2, 3}));
  // Micro-batch 0 = samples 0, 1: keys 9 2 4 7 -> 2 4 | 7 9.
  EXPECT_EQ(r->micro[0].keys, (V{2, 4, 7, 9}));
  EXPECT_EQ(r->micro[0].per_owner, (V{2, 2}));
  EXPECT_EQ(r->samples[0], (V{0, 1}));
  // Lookups in sample order (9, 2, 4, 7) as indices into 2 4 7 9.
  EXPECT_EQ(r->inverse[0], (V{3, 0, 1, 2}));
  EXPECT_EQ(r->micro_in_batch[0], (V{0, 1, 3, 4}));
  // Micro-batch 1 = samples 2, 3: keys 2 2 7 5 -> 2 | 5 7.
  EXPECT_EQ(r->micro[1].keys, (V{2, 5, 7}));
  EXPECT_EQ(r->inverse[1], (V{0, 0, 2, 1}));
  EXPECT_EQ(r->micro_in_batch[1], (V{0, 2, 3}));
}

TEST(RequesterExchangeTest, FollowsTheGivenSampleOrder) {
  const std::vector<int> order = {2, 0, 3, 1};
  auto r = plan_requester(kBatch, order, 2, 2);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->samples[0], (V{2, 0}));
  EXPECT_EQ(r->micro[0].keys, (V{2, 9}));  // samples 2 and 0: 2 2 9 2
  EXPECT_EQ(r->samples[1], (V{3, 1}));
  EXPECT_EQ(r->micro[1].keys, (V{4, 5, 7}));  // samples 3 and 1: 7 5 4 7
}

TEST(RequesterExchangeTest, RejectsBadSplitsAndOrders) {
  EXPECT_EQ(plan_requester(kBatch, {}, 3, 2).status().message(),
            "key exchange: 3 micro-batches do not divide a batch of 4");
  const std::vector<int> twice = {0, 0, 1, 2};
  EXPECT_EQ(plan_requester(kBatch, twice, 2, 2).status().message(),
            "key exchange: the sample order is not a permutation (entry 0)");
  EXPECT_EQ(plan_requester({{1, 2}, {3}}, {}, 1, 2).status().message(),
            "key exchange: sample 1 has 1 keys, sample 0 has 2");
}

TEST(KeyMessageTest, OneListPerOwnerOrOnePerMicroBatch) {
  auto r = plan_requester(kBatch, {}, 2, 2);
  ASSERT_TRUE(r.is_ok());
  const KeyMessage batch = key_message(*r, 1);
  EXPECT_EQ(batch.counts, (V{2, 3}));
  EXPECT_EQ(batch.keys, (V{2, 4, 5, 7, 9}));
  EXPECT_EQ(batch.keys_per_owner, (V{2, 3}));
  // counts[owner * 2 + m]: owner 0 gets {2 4} and {2}; owner 1 {7 9} and {5 7}.
  const KeyMessage micro = key_message(*r, 2);
  EXPECT_EQ(micro.counts, (V{2, 1, 2, 2}));
  EXPECT_EQ(micro.keys, (V{2, 4, 2, 7, 9, 5, 7}));
  EXPECT_EQ(micro.keys_per_owner, (V{3, 4}));
}

TEST(OwnerExchangeTest, DedupsPerRequesterAndOverTheUnion) {
  // Owner 1 of 2, two lists per requester. Requester 0 sent {7 9} {5 7},
  // requester 1 sent {3} {3 9}.
  const V counts = {2, 2, 1, 2};
  const V keys = {7, 9, 5, 7, 3, 3, 9};
  auto o = plan_owner(counts, keys, 2, 2, 1);
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o->requester_keys[0], (V{5, 7, 9}));
  EXPECT_EQ(o->requester_keys[1], (V{3, 9}));
  EXPECT_EQ(o->union_keys, (V{3, 5, 7, 9}));
  EXPECT_EQ(o->requester_in_union[0], (V{1, 2, 3}));
  EXPECT_EQ(o->requester_in_union[1], (V{0, 3}));
  EXPECT_EQ(o->list_in_requester[0][0], (V{1, 2}));  // 7 9 in 5 7 9
  EXPECT_EQ(o->list_in_requester[0][1], (V{0, 1}));  // 5 7
  EXPECT_EQ(o->list_in_requester[1][1], (V{0, 1}));  // 3 9 in 3 9
}

TEST(OwnerExchangeTest, RoundTripsWhatRequestersSend) {
  // Two requesters' messages, cut per owner as the All2All does, decoded by
  // each owner: every requester's unique keys of that owner come back.
  const Batch other = {{1, 8}, {8, 3}, {6, 6}, {0, 11}};
  std::vector<KeyMessage> sent;
  std::vector<RequesterExchange> requesters;
  for (const Batch* b : {&kBatch, &other}) {
    auto r = plan_requester(*b, {}, 2, 2);
    ASSERT_TRUE(r.is_ok());
    sent.push_back(key_message(*r, 2));
    requesters.push_back(std::move(*r));
  }
  for (int owner = 0; owner < 2; ++owner) {
    V counts, keys;
    for (const KeyMessage& m : sent) {
      counts.insert(counts.end(), m.counts.begin() + owner * 2, m.counts.begin() + owner * 2 + 2);
      const int64_t start = owner == 0 ? 0 : m.keys_per_owner[0];
      keys.insert(keys.end(), m.keys.begin() + start, m.keys.begin() + start + m.keys_per_owner[owner]);
    }
    auto o = plan_owner(counts, keys, 2, 2, owner);
    ASSERT_TRUE(o.is_ok()) << o.status().message();
    for (int r = 0; r < 2; ++r) {
      V expected;
      for (int64_t k : requesters[r].batch.keys)
        if (k % 2 == owner) expected.push_back(k);
      EXPECT_EQ(o->requester_keys[r], expected) << "owner " << owner << ", requester " << r;
    }
  }
}

TEST(OwnerExchangeTest, ProtocolErrorsAreInternal) {
  auto wrong_owner = plan_owner(V{1, 0}, V{4}, 1, 2, 1);
  EXPECT_EQ(wrong_owner.status().code(), Status::Code::kInternal);
  EXPECT_EQ(wrong_owner.status().message(),
            "key exchange: owner 1 of 2: requester 0 list 0: key 4 is not this owner's or not ascending");
  EXPECT_EQ(plan_owner(V{2, 0}, V{1}, 1, 2, 1).status().message(),
            "key exchange: owner 1 of 2: counts sum to 2, received 1 keys");
}

TEST(StateDumpTest, RoundTripsAndNamesCorruption) {
  StateDump d;
  d.rank = 2;
  d.world = 4;
  DumpTensor f;
  f.name = "w";
  f.shape = {2};
  const float values[2] = {1.5f, -2.f};
  f.bytes.assign(reinterpret_cast<const char*>(values), sizeof(values));
  DumpTensor i;
  i.name = "v";
  i.type = DumpTensor::Type::kInt64;
  i.shape = {1};
  const int64_t version = 7;
  i.bytes.assign(reinterpret_cast<const char*>(&version), sizeof(version));
  DumpTensor g;
  g.name = "p";
  g.type = DumpTensor::Type::kFloat64;
  g.shape = {1};
  const double weight = 0.1 + 1e-17;
  g.bytes.assign(reinterpret_cast<const char*>(&weight), sizeof(weight));
  d.tensors = {f, i, g};
  const std::string bytes = encode_state_dump(d);
  // 8 magic + 4 x 4 header + (4 + 1 + 1 + 4 + 8 + 8 + 8) + (4 + 1 + 1 + 4 + 8 + 8 + 8) x 2
  EXPECT_EQ(bytes.size(), 24u + 34u + 34u + 34u);
  auto back = decode_state_dump(bytes, "x.bin");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->rank, 2);
  EXPECT_EQ(back->tensors[0].values(), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(back->tensors[1].values(), (std::vector<double>{7}));
  EXPECT_EQ(back->tensors[2].values(), (std::vector<double>{weight})) << "float64 exactly";
  // 24 header bytes, then 2 of the first name length's 4.
  EXPECT_EQ(decode_state_dump(bytes.substr(0, 26), "x.bin").status().message(),
            "x.bin: truncated at byte 24 (reading a name length)");
  EXPECT_EQ(decode_state_dump("nonsense", "x.bin").status().message(), "x.bin: not a state dump");
}

}  // namespace
}  // namespace clustertwin::real::nestpipe
