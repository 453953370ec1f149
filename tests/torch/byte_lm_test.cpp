#include "models/torch/byte_lm.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

namespace clustertwin::models::nets {
namespace {

ByteLmOptions tiny() {
  ByteLmOptions o;
  o.context = 16;
  o.d_model = 32;
  o.layers = 2;
  o.heads = 4;
  o.d_ff = 64;
  return o;
}

ByteLm make(const ByteLmOptions& o, uint64_t seed) {
  auto m = make_byte_lm(o, seed);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return *m;
}

int64_t count(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const torch::Tensor& p : m.parameters())
    n += p.numel();
  return n;
}

TEST(ByteLmTest, ParameterCountAndShapes) {
  ByteLm m = make(tiny(), 1);
  EXPECT_EQ(count(*m), byte_lm_params(tiny()));
  const torch::Tensor bytes = torch::randint(0, 256, {3, 16}, torch::TensorOptions().dtype(torch::kLong));
  EXPECT_EQ(m->forward(bytes).sizes(), (std::vector<int64_t>{3, 16, 256}));
  ByteLmOptions shipped;  // the defaults
  EXPECT_EQ(count(*make(shipped, 1)), byte_lm_params(shipped));
}

TEST(ByteLmTest, SameSeedSameParametersWhateverRanBefore) {
  ByteLm a = make(tiny(), 7);
  torch::manual_seed(123);
  (void)torch::rand({1000});
  ByteLm b = make(tiny(), 7);
  ByteLm c = make(tiny(), 8);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  bool all_equal = true, any_differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    all_equal &= torch::equal(pa[i], pb[i]);
    any_differs |= !torch::equal(pa[i], pc[i]);
  }
  EXPECT_TRUE(all_equal);
  EXPECT_TRUE(any_differs);
}

// Changing byte t changes no logit before t.
TEST(ByteLmTest, Causal) {
  ByteLm m = make(tiny(), 3);
  torch::NoGradGuard no_grad;
  torch::Tensor bytes = torch::randint(0, 256, {1, 16}, torch::TensorOptions().dtype(torch::kLong));
  const torch::Tensor before = m->forward(bytes);
  bytes[0][10] = (bytes[0][10].item<int64_t>() + 1) % 256;
  const torch::Tensor after = m->forward(bytes);
  EXPECT_TRUE(torch::allclose(before.slice(1, 0, 10), after.slice(1, 0, 10), 0, 0));
  EXPECT_FALSE(torch::allclose(before.slice(1, 10, 16), after.slice(1, 10, 16)));
}

// Decoding a prefix, then one byte at a time, then two, gives the logits of one forward on the whole sequence.
TEST(ByteLmTest, IncrementalDecodingMatchesTheFullForward) {
  ByteLm m = make(tiny(), 5);
  torch::NoGradGuard no_grad;
  const torch::Tensor bytes = torch::randint(0, 256, {3, 16}, torch::TensorOptions().dtype(torch::kLong));
  const torch::Tensor full = m->forward(bytes);
  ByteLmImpl::DecodeState state;
  std::vector<torch::Tensor> parts = {m->decode(bytes.slice(1, 0, 5), state)};
  for (int64_t t = 5; t < 14; ++t)
    parts.push_back(m->decode(bytes.slice(1, t, t + 1), state));
  parts.push_back(m->decode(bytes.slice(1, 14, 16), state));
  EXPECT_EQ(state.length, 16);
  EXPECT_TRUE(torch::allclose(torch::cat(parts, 1), full, 1e-5, 1e-5));
  // Past the context is refused, as forward refuses it.
  EXPECT_THROW(m->decode(bytes.slice(1, 0, 1), state), c10::Error);
}

// The tap sees every Linear of a block, in forward order, with its input width.
TEST(ByteLmTest, TapReportsEachLinearsInput) {
  ByteLm m = make(tiny(), 3);
  torch::NoGradGuard no_grad;
  const torch::Tensor x = m->embed(torch::zeros({2, 5}, torch::TensorOptions().dtype(torch::kLong)));
  std::vector<std::string> seen;
  const torch::Tensor y = m->blocks()[0]->forward(x, [&](const std::string& name, const torch::Tensor& input) {
    seen.push_back(name + ":" + std::to_string(input.size(-1)));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"q:32", "k:32", "v:32", "out:32", "fc1:32", "fc2:64"}));
  EXPECT_TRUE(torch::allclose(y, m->blocks()[0]->forward(x)));
  EXPECT_EQ(m->blocks()[0]->linears().size(), 6u);
}

TEST(ByteLmTest, SavesAndLoadsExactly) {
  ByteLm m = make(tiny(), 5);
  const std::string path = ::testing::TempDir() + "ct_byte_lm.pt";
  ASSERT_TRUE(save_byte_lm(m, "{\"seed\": 5}", path).is_ok());
  auto back = load_byte_lm(path);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->meta_json, "{\"seed\": 5}");
  EXPECT_EQ(back->model->options().d_ff, 64);
  const auto pa = m->parameters(), pb = back->model->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(torch::equal(pa[i], pb[i]));
}

TEST(ByteLmTest, BadCheckpointsAndOptionsAreOneLine) {
  const std::string junk = ::testing::TempDir() + "ct_not_a_checkpoint.pt";
  std::ofstream(junk) << "hello";
  auto r = load_byte_lm(junk);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), junk + ": not a clustertwin byte-LM checkpoint: not a torch archive");
  // A torch archive that is not ours.
  const std::string other = ::testing::TempDir() + "ct_other_archive.pt";
  {
    torch::serialize::OutputArchive a;
    a.write("x", torch::ones({2}));
    a.save_to(other);
  }
  auto o = load_byte_lm(other);
  ASSERT_FALSE(o.is_ok());
  EXPECT_NE(o.status().message().find("field 'clustertwin_byte_lm_options' missing"), std::string::npos);
  EXPECT_EQ(load_byte_lm(::testing::TempDir() + "nowhere.pt").status().code(), Status::Code::kNotFound);
  ByteLmOptions bad = tiny();
  bad.heads = 3;
  EXPECT_EQ(check_byte_lm_options(bad).message(), "heads 3 must divide d_model 32");
  bad = tiny();
  bad.layers = 0;
  EXPECT_EQ(make_byte_lm(bad, 1).status().message(), "layers 0 must be in [1, 2^24]");
}

}  // namespace
}  // namespace clustertwin::models::nets
