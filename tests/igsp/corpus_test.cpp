// The IGSP domains: generated text is deterministic and correct, held-out
// arithmetic never leaks into training text, commonsense items recall stated
// facts, and text from files is read in a fixed order with a checked
// manifest, from folders and packs alike.

#include "models/igsp/corpus.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "common/file_io.h"
#include "tests/common/tar_writer.h"

namespace clustertwin::models::igsp {
namespace {

TEST(CorpusTest, MathIsDeterministicAndRight) {
  const DomainText a = math_text(1, 200'000), b = math_text(1, 200'000), c = math_text(2, 200'000);
  EXPECT_EQ(a.train, b.train);
  EXPECT_NE(a.train, c.train);
  EXPECT_EQ(a.train.size(), 200'000u);
  EXPECT_EQ(a.heldout.size(), 20'000u);
  const std::regex line(R"(^(\d+) ([-+x]) (\d+) = (\d+)$)");
  std::istringstream in(a.train);
  int arithmetic = 0, problems = 0;
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) {
      const int x = std::stoi(m[1]), y = std::stoi(m[3]), z = std::stoi(m[4]);
      const char op = m[2].str()[0];
      EXPECT_EQ(z, op == '+' ? x + y : op == '-' ? x - y : x * y) << l;
      EXPECT_FALSE(heldout_pair(x, y, op)) << l;
      ++arithmetic;
    } else if (l.find("Answer: ") != std::string::npos) {
      ++problems;
    }
  }
  EXPECT_GT(arithmetic, 1000);
  EXPECT_GT(problems, 300);
}

TEST(CorpusTest, HeldOutArithmeticNeverAppearsInTraining) {
  const DomainText text = math_text(7, 400'000);
  const auto items = arithmetic_items(7, 200);
  ASSERT_EQ(items.size(), 200u);
  for (const ArithmeticItem& item : items) {
    EXPECT_EQ(text.train.find("\n" + item.prompt + " "), std::string::npos) << item.prompt;
    int x = 0, y = 0;
    char op = 0;
    std::istringstream(item.prompt) >> x >> op >> y;
    EXPECT_TRUE(heldout_pair(x, y, op));
    EXPECT_EQ(std::stoi(item.answer), op == '+' ? x + y : op == '-' ? x - y : x * y) << item.prompt;
  }
  EXPECT_EQ(arithmetic_items(7, 50)[3].prompt, items[3].prompt);
}

TEST(CorpusTest, CommonsenseItemsRecallStatedFacts) {
  const DomainText text = commonsense_text(3, 300'000);
  EXPECT_EQ(text.train, commonsense_text(3, 300'000).train);
  const auto items = commonsense_items(3, 100);
  ASSERT_EQ(items.size(), 100u);
  for (const ChoiceItem& item : items) {
    ASSERT_EQ(item.options.size(), 4u);
    ASSERT_GE(item.answer, 0);
    ASSERT_LT(item.answer, 4);
    for (size_t i = 0; i < 4; ++i) {
      for (size_t j = i + 1; j < 4; ++j)
        EXPECT_NE(item.options[i], item.options[j]);
      // The right statement is in the training text; the wrong ones are not.
      const bool stated = text.train.find(item.question + item.options[i] + ".") != std::string::npos;
      EXPECT_EQ(stated, static_cast<int>(i) == item.answer) << item.question << item.options[i];
    }
  }
}

std::string write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return text;
}

TEST(CorpusTest, SystemTextReadsSortedPrintableFilesWithAManifest) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "ct_corpus_root";
  std::filesystem::remove_all(root);
  write(root / "b" / "README", "Bee text.\n");
  write(root / "a" / "README", "Ay text.\n");
  write(root / "c" / "README", std::string("bin\0ary", 7));  // not text: skipped
  write(root / "c" / "notes.txt", "not a README");           // not a wanted name
  write(root / "d" / "x.h", "int x;\n");
  std::filesystem::create_directories(root / "e");
  ASSERT_TRUE(write_file_atomically((root / "e" / "README.gz").string(), "Gzipped text.\n").is_ok());  // gzipped
  auto general = system_text(Domain::kGeneral, {root.string()}, 1 << 20);
  ASSERT_TRUE(general.is_ok()) << general.status().message();
  ASSERT_GE(general->files.size(), 2u);
  EXPECT_EQ(general->files[0].path, (root / "a" / "README").string());
  EXPECT_EQ(general->files[1].path, (root / "b" / "README").string());
  EXPECT_EQ(general->train.substr(0, 19), "Ay text.\n\nBee text.");
  EXPECT_EQ(general->files[0].bytes, 9u);
  const std::string ay = "Ay text.\n";
  EXPECT_EQ(general->files[0].crc32, crc32(0L, reinterpret_cast<const Bytef*>(ay.data()), ay.size()));
  for (const CorpusFile& f : general->files)
    EXPECT_EQ(f.path.find("/c/"), std::string::npos) << f.path;
  ASSERT_EQ(general->files.size(), 3u);
  EXPECT_EQ(general->files[2].bytes, 14u);  // as read, after gunzip
  EXPECT_NE(general->train.find("Gzipped text.\n"), std::string::npos);
  auto code = system_text(Domain::kCode, {root.string()}, 1 << 20);
  ASSERT_TRUE(code.is_ok());
  ASSERT_EQ(code->files.size(), 1u);
  EXPECT_EQ(code->train, "int x;\n\n");
  auto none = system_text(Domain::kCode, {(root / "a").string()}, 1 << 20);
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
  EXPECT_FALSE(system_text(Domain::kMath, {root.string()}, 10).is_ok());
}

// Every 10th file is held out; the budget stops the reading.
TEST(CorpusTest, SystemTextHoldsOutEveryTenthFileWithinTheBudget) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "ct_corpus_many";
  std::filesystem::remove_all(root);
  for (int i = 0; i < 25; ++i)
    write(root / ("f" + std::to_string(10 + i)) / "README", "file " + std::to_string(10 + i) + "\n");
  auto t = system_text(Domain::kGeneral, {root.string()}, 1 << 20);
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->files.size(), 25u);
  EXPECT_EQ(t->heldout, "file 19\n\nfile 29\n\n");
  auto small = system_text(Domain::kGeneral, {root.string()}, 30);
  ASSERT_TRUE(small.is_ok());
  EXPECT_EQ(small->files.size(), 4u);  // 9 bytes each: stops once 30 are reached
}

// A pack reads as the folder it was made from: the same files in the same
// order (whatever the archive's order), named by their entry names.
TEST(CorpusTest, SystemTextReadsAPackAsTheFolderItWasMadeFrom) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "ct_corpus_pack";
  std::filesystem::remove_all(root);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"doc/b/README", "Bee text.\n"},       {"common-licenses/GPL", "Licence text.\n"},
      {"doc/a/README.md", "Ay text.\n"},     {"doc/a-b/README", "Dash text.\n"},  // "a" < "a-b" as paths
      {"doc/a/notes.txt", "not a README\n"}, {"include/x.h", "int x;\n"}};
  std::string archive;
  for (const auto& [name, text] : files) {
    write(root / "folder" / name, text);
    archive += testing::tar_file(name, text);
  }
  archive += testing::tar_end();
  const std::string pack = (root / "pack.tar").string();
  write(pack, archive);
  for (Domain d : {Domain::kGeneral, Domain::kCode}) {
    auto from_folder = system_text(d, {(root / "folder").string()}, 1 << 20);
    auto from_pack = system_text(d, {pack}, 1 << 20);
    ASSERT_TRUE(from_folder.is_ok()) << from_folder.status().message();
    ASSERT_TRUE(from_pack.is_ok()) << from_pack.status().message();
    EXPECT_EQ(from_pack->train, from_folder->train);
    EXPECT_EQ(from_pack->heldout, from_folder->heldout);
    ASSERT_EQ(from_pack->files.size(), from_folder->files.size());
    for (size_t i = 0; i < from_pack->files.size(); ++i) {
      EXPECT_EQ(from_pack->files[i].pack, pack);
      EXPECT_EQ(from_folder->files[i].pack, "");
      EXPECT_EQ((root / "folder" / from_pack->files[i].path).string(), from_folder->files[i].path);
      EXPECT_EQ(from_pack->files[i].crc32, from_folder->files[i].crc32);
    }
  }
  auto general = system_text(Domain::kGeneral, {pack}, 1 << 20);
  ASSERT_EQ(general->files.size(), 4u);
  EXPECT_EQ(general->files[0].path, "common-licenses/GPL");
  EXPECT_EQ(general->files[1].path, "doc/a/README.md");
  EXPECT_EQ(general->files[2].path, "doc/a-b/README");
  EXPECT_EQ(general->files[3].path, "doc/b/README");

  // A broken pack is an error naming it, not an empty domain.
  write(root / "broken.tar", archive.substr(0, 512 + 3));  // the first header and 3 of its 10 bytes
  auto broken = system_text(Domain::kGeneral, {(root / "broken.tar").string()}, 1 << 20);
  EXPECT_EQ(broken.status().message(), (root / "broken.tar").string() +
                                           ": entry 1 (doc/b/README): its 10 bytes of data run past the end"
                                           " (3 left): truncated");
}

// Roots are read one after another in the order given, each in sorted order.
TEST(CorpusTest, SystemTextTakesRootsInTheOrderGiven) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "ct_corpus_roots";
  std::filesystem::remove_all(root);
  write(root / "one" / "z" / "README", "one z\n");
  write(root / "two" / "a" / "README", "two a\n");
  auto t = system_text(Domain::kGeneral, {(root / "two").string(), (root / "one").string()}, 1 << 20);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t->train, "two a\n\none z\n\n");
}

}  // namespace
}  // namespace clustertwin::models::igsp
