// Training the ByteLm on the four domains: the loss falls, a run stopped and
// resumed ends bitwise where an uninterrupted one does, the checkpoint
// carries the manifest, and bad options are one line.

#include "real/igsp/train.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/igsp/tiny_training.h"

namespace clustertwin::real::igsp {
namespace {

using testing::tiny_corpus_root;

TrainOptions tiny(const std::string& dir, const std::string& out) {
  return testing::tiny_train_options(dir, out);
}

std::string root(const std::string& name) {
  return tiny_corpus_root(name);
}

std::vector<at::Tensor> params(const std::string& path) {
  auto c = torch_models::load_byte_lm(path);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return c.is_ok() ? c->model->parameters() : std::vector<at::Tensor>{};
}

TEST(TrainTest, LossFallsAndResumingEndsWhereAnUninterruptedRunEnds) {
  const std::string dir = root("ct_train_root");
  const std::string a = ::testing::TempDir() + "ct_train_a.pt", b = ::testing::TempDir() + "ct_train_b.pt";
  std::vector<double> losses;
  TrainOptions o = tiny(dir, a);
  o.max_steps = 60;
  auto full = train_byte_lm(
      o, [&](const TrainProgress& p) { losses.push_back(p.loss); }, 10);
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_EQ(full->steps, 60);
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.back(), losses.front() - 1.0) << losses.front() << " -> " << losses.back();

  // The same 60-step schedule, stopped at step 25 and resumed: bitwise the uninterrupted run.
  TrainOptions part = tiny(dir, b);
  part.max_steps = 60;
  part.stop_at = 25;
  auto first = train_byte_lm(part, nullptr);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(first->steps, 25);
  part.stop_at = 0;
  part.resume = true;
  auto rest = train_byte_lm(part, nullptr);
  ASSERT_TRUE(rest.is_ok()) << rest.status().message();
  EXPECT_EQ(rest->first_step, 25);
  EXPECT_EQ(rest->steps, 60);
  const auto pa = params(a), pb = params(b);
  ASSERT_EQ(pa.size(), pb.size());
  ASSERT_FALSE(pa.empty());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(at::equal(pa[i], pb[i])) << "parameter " << i;

  // The checkpoint's manifest names the corpus.
  auto c = torch_models::load_byte_lm(a);
  ASSERT_TRUE(c.is_ok());
  const auto manifest = nlohmann::json::parse(c->meta_json);
  EXPECT_EQ(manifest.at("step"), 60);
  EXPECT_EQ(manifest.at("seed"), 4);
  ASSERT_EQ(manifest.at("corpus").size(), 4u);
  EXPECT_EQ(manifest.at("corpus")[0].at("domain"), "general");
  EXPECT_EQ(manifest.at("corpus")[0].at("files")[0].at("path"), dir + "/doc/p10/README");
  EXPECT_EQ(manifest.at("corpus")[2].at("generated_from_seed"), 4);
}

TEST(TrainTest, BadOptionsAreOneLine) {
  const std::string dir = root("ct_train_bad");
  auto message = [](const TrainOptions& o) {
    auto r = train_byte_lm(o, nullptr);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  TrainOptions o = tiny(dir, ::testing::TempDir() + "ct_train_bad.pt");
  TrainOptions none = o;
  none.max_steps = 0;
  EXPECT_EQ(message(none), "--steps 0 --minutes 0.000000: give a positive step count or time limit");
  TrainOptions resume = o;
  resume.out = ::testing::TempDir() + "ct_train_missing.pt";
  resume.resume = true;
  EXPECT_EQ(message(resume), "--resume: " + resume.out + ": no such file");
  TrainOptions empty = o;
  empty.code_roots = {dir + "/doc/p10"};
  EXPECT_EQ(message(empty), "code corpus: no readable text file under " + dir + "/doc/p10");
  TrainOptions heads = o;
  heads.model.heads = 3;
  EXPECT_EQ(message(heads), "heads 3 must divide d_model 32");
  // A checkpoint of another shape cannot be resumed.
  o.max_steps = 2;
  ASSERT_EQ(message(o), "ok");
  TrainOptions wider = o;
  wider.model.d_model = 64;
  wider.resume = true;
  EXPECT_NE(message(wider).find("is not the one asked for"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::real::igsp
