// Training the ByteLm on the four domains: the loss falls, a run stopped and
// resumed ends bitwise where an uninterrupted one does, the checkpoint
// carries the manifest, relocating its corpus into packs keeps the text and
// the weights, and bad options are one line.

#include "real/igsp/train.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "real/igsp/corpus_manifest.h"
#include "real/igsp/evaluate.h"
#include "tests/common/tar_writer.h"
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
  auto c = models::nets::load_byte_lm(path);
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
  auto c = models::nets::load_byte_lm(a);
  ASSERT_TRUE(c.is_ok());
  const auto manifest = nlohmann::json::parse(c->meta_json);
  EXPECT_EQ(manifest.at("step"), 60);
  EXPECT_EQ(manifest.at("seed"), 4);
  ASSERT_EQ(manifest.at("corpus").size(), 4u);
  EXPECT_EQ(manifest.at("corpus")[0].at("domain"), "general");
  EXPECT_EQ(manifest.at("corpus")[0].at("files")[0].at("path"), dir + "/doc/p10/README");
  EXPECT_EQ(manifest.at("corpus")[2].at("generated_from_seed"), 4);
}

TEST(TrainTest, RelocatingTheCorpusIntoPacksKeepsTheTextAndTheWeights) {
  const std::string dir = root("ct_relocate_root");
  const std::string model = ::testing::TempDir() + "ct_relocate.pt";
  TrainOptions o = tiny(dir, model);
  o.max_steps = 3;
  ASSERT_TRUE(train_byte_lm(o, nullptr).is_ok());
  const auto before = params(model);

  // The tiny corpus as packs beside the checkpoint, the entries named below the folders trained on.
  const std::string packs = ::testing::TempDir() + "ct_relocate_corpus";
  std::filesystem::create_directories(packs);
  const std::string readme = *read_file(dir + "/doc/p10/README"), header = *read_file(dir + "/include/x.h");
  ASSERT_TRUE(write_file_atomically(packs + "/general.tar", clustertwin::testing::tar_file("p10/README", readme) +
                                                                clustertwin::testing::tar_end())
                  .is_ok());
  ASSERT_TRUE(write_file_atomically(packs + "/code.tar.gz",  // gzipped
                                    clustertwin::testing::tar_file("x.h", header) + clustertwin::testing::tar_end())
                  .is_ok());
  ASSERT_TRUE(write_file_atomically(packs + "/other.tar", clustertwin::testing::tar_file("p10/README", "Other.\n") +
                                                              clustertwin::testing::tar_end())
                  .is_ok());

  // Other text is refused, and the checkpoint left as it was.
  const Status other = relocate_corpus(model, {packs + "/other.tar"}, {});
  // 7 bytes and a newline; the README and a newline
  EXPECT_EQ(other.message(), model + ": the general text of " + packs +
                                 "/other.tar (8 + 0 bytes, 1 files) is not the " + "text its manifest names (" +
                                 std::to_string(readme.size() + 1) + " + 0 bytes, 1 files)");

  const Status moved = relocate_corpus(model, {packs + "/general.tar"}, {packs + "/code.tar.gz"});
  ASSERT_TRUE(moved.is_ok()) << moved.message();
  auto c = models::nets::load_byte_lm(model);
  ASSERT_TRUE(c.is_ok());
  const auto m = nlohmann::json::parse(c->meta_json);
  EXPECT_EQ(m.at("corpus")[0].at("pack"), "ct_relocate_corpus/general.tar");  // relative to the checkpoint's folder
  EXPECT_EQ(m.at("corpus")[0].at("files")[0].at("path"), "p10/README");
  EXPECT_EQ(m.at("corpus")[1].at("pack"), "ct_relocate_corpus/code.tar.gz");
  EXPECT_EQ(m.at("step"), 3);  // the rest of the manifest as it was
  const auto after = params(model);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_TRUE(at::equal(after[i], before[i])) << "parameter " << i;

  // The folders trained on can go: the packs hold the text.
  std::filesystem::remove_all(dir);
  auto corpus = corpus_for(c->meta_json, model);
  ASSERT_TRUE(corpus.is_ok()) << corpus.status().message();
  EXPECT_EQ((*corpus)[0].train, readme + "\n");

  // A changed entry is named with its pack.
  const std::string other_readme = "Another README, long enough for a window of the model.\n";
  ASSERT_TRUE(write_file_atomically(packs + "/general.tar", clustertwin::testing::tar_file("p10/README", other_readme) +
                                                                clustertwin::testing::tar_end())
                  .is_ok());
  const std::string changed = corpus_for(c->meta_json, model).status().message();
  const std::string named = model + ": corpus pack ct_relocate_corpus/general.tar: entry p10/README differs from the " +
                            "one trained on: " + std::to_string(other_readme.size()) + " bytes";
  EXPECT_EQ(changed.substr(0, named.size()), named) << changed;

  // A checkpoint copied without its packs says where it looked.
  const std::string copy_dir = ::testing::TempDir() + "ct_relocate_copy";
  std::filesystem::create_directories(copy_dir);
  std::filesystem::copy_file(model, copy_dir + "/model.pt", std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(corpus_for(c->meta_json, copy_dir + "/model.pt").status().message(),
            copy_dir + "/model.pt: corpus pack ct_relocate_corpus/general.tar: " + copy_dir +
                "/ct_relocate_corpus/general.tar: no such file (a checkpoint's packs go where its manifest says, "
                "relative to its folder)");
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
  EXPECT_EQ(message(none), "max_steps 0 max_minutes 0.000000: give a positive step count or time limit");
  TrainOptions resume = o;
  resume.out = ::testing::TempDir() + "ct_train_missing.pt";
  resume.resume = true;
  EXPECT_EQ(message(resume), "resume: " + resume.out + ": no such file");
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
